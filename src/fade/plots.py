"""Figures of gradient mass: where estimators put their weight, drawn so a person can see it; and
``fade eval``'s pass@k curves (:func:`draw_eval_passk`), drawn from its reports.

matplotlib is imported here only (with the non-interactive Agg backend), never by the core, so
``import fade`` stays torch-only. Figures have a fixed size and dpi, so a PNG's pixel size
depends only on what it shows (see :func:`atlas_pixel_size`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .atomic import write_figure_atomic
from .mass import BALANCED_SIGN, MassProfile

__all__ = [
    "ATLAS_DPI",
    "NEGATIVE_COLOUR",
    "PASSK_DPI",
    "PASSK_SIZE_IN",
    "POSITIVE_COLOUR",
    "atlas_pixel_size",
    "draw_atlas",
    "draw_eval_passk",
    "plane_guides",
    "profile_summary",
]

ATLAS_DPI = 100
ATLAS_COLUMNS = 4
_PANEL_W_IN, _PANEL_H_IN, _PLANE_H_IN = 3.0, 2.5, 4.5
#: ``fade eval``'s passk.png: a fixed size and dpi.
PASSK_DPI = 100
PASSK_SIZE_IN = (7.0, 4.5)

POSITIVE_COLOUR = "#2a9d3f"  # m_S, successes
NEGATIVE_COLOUR = "#d62828"  # m_F, failures


def atlas_pixel_size(num_estimators: int) -> tuple[int, int]:
    """(width, height) in pixels of the PNG :func:`draw_atlas` writes for ``num_estimators``.

    The figure is ATLAS_COLUMNS = 4 panels of 3.0 x 2.5 inches per row, ceil(n / 4) rows, above
    a 4.5-inch-high sign/difficulty plane, at 100 dpi:
    width = 1200, height = 250 * ceil(n / 4) + 450.
    """
    if num_estimators < 1:
        raise ValueError(f"an atlas needs at least one estimator, got {num_estimators}")
    rows = math.ceil(num_estimators / ATLAS_COLUMNS)
    return (
        round(ATLAS_COLUMNS * _PANEL_W_IN * ATLAS_DPI),
        round((rows * _PANEL_H_IN + _PLANE_H_IN) * ATLAS_DPI),
    )


def profile_summary(prof: MassProfile) -> dict[str, float]:
    """Where a profile's total mass m_S + m_F peaks over p, and its value at p = 0.5.

    ``peak_p`` is the smallest p with the largest total mass; ``mass_at_half`` interpolates
    linearly between the two neighbouring solve rates when G is odd.
    """
    p = prof.p.numpy()
    total = (prof.positive + prof.negative).numpy()
    return {"peak_p": float(p[int(np.argmax(total))]), "mass_at_half": float(np.interp(0.5, p, total))}


def draw_atlas(profiles: Sequence[tuple[str, MassProfile]], path: str | Path) -> Path:
    """Draw the gradient-mass atlas of ``(label, profile)`` pairs into the PNG ``path``.

    Top: one panel per estimator with m_S(p) (green) and m_F(p) (red) over p = k/G. Bottom: the
    sign/difficulty plane, x = difficulty (mass-weighted mean solve rate; low = hard focus),
    y = sign_balance (0.5 = balanced), one labelled point per estimator; estimators that land on
    the same point share one label. Pixel size: :func:`atlas_pixel_size`.
    """
    if not profiles:
        raise ValueError("draw_atlas needs at least one (label, profile) pair")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    n = len(profiles)
    rows = math.ceil(n / ATLAS_COLUMNS)
    width_px, height_px = atlas_pixel_size(n)
    group_sizes = sorted({prof.group_size for _, prof in profiles})
    fig = plt.figure(figsize=(width_px / ATLAS_DPI, height_px / ATLAS_DPI), dpi=ATLAS_DPI, layout="constrained")
    try:
        grid = fig.add_gridspec(rows + 1, ATLAS_COLUMNS, height_ratios=[_PANEL_H_IN] * rows + [_PLANE_H_IN])
        for i, (label, prof) in enumerate(profiles):
            ax = fig.add_subplot(grid[i // ATLAS_COLUMNS, i % ATLAS_COLUMNS])
            p = prof.p.numpy()
            ax.plot(p, prof.positive.numpy(), "o-", color=POSITIVE_COLOUR, ms=2.5, lw=1.4)
            ax.plot(p, prof.negative.numpy(), "s--", color=NEGATIVE_COLOUR, ms=2.5, lw=1.4)
            ax.set_title(label, fontsize=9)
            ax.set_xlim(-0.02, 1.02)
            ax.set_ylim(bottom=min(0.0, ax.get_ylim()[0]))
            ax.tick_params(labelsize=7)
            ax.grid(alpha=0.25)
            if i % ATLAS_COLUMNS == 0:
                ax.set_ylabel("mass", fontsize=8)
            ax.set_xlabel("p = k/G", fontsize=7, labelpad=1)

        plane = fig.add_subplot(grid[rows, :])
        _draw_plane(plane, profiles)

        handles = [
            Line2D([], [], color=POSITIVE_COLOUR, marker="o", ms=4, label="m_S(p) = p a+  (positive mass, successes)"),
            Line2D(
                [],
                [],
                color=NEGATIVE_COLOUR,
                marker="s",
                ls="--",
                ms=4,
                label="m_F(p) = q |a-|  (negative mass, failures)",
            ),
        ]
        g_text = ", ".join(str(g) for g in group_sizes)
        # The title is the legend's title, so constrained layout stacks the two without overlap.
        fig.legend(
            handles=handles,
            loc="outside upper center",
            ncol=2,
            fontsize=9,
            frameon=False,
            title=f"Gradient-mass atlas, G = {g_text} rollouts per group",
            title_fontsize=12,
        )
        out = Path(path)
        write_figure_atomic(out, fig, dpi=ATLAS_DPI)
    finally:
        plt.close(fig)
    return out


def plane_guides(ax, *, fontsize: float = 8, labels: bool = True, lw: float = 1.0) -> None:
    """The sign/difficulty plane's axes and reading, the same wherever the plane is drawn.

    Dashed: the balanced sign (m_S = m_F); dotted: a medium difficulty focus. Above the dashed
    line success-heavy weights collapse entropy; below it failure-heavy ones funnel the output
    head's update toward rank 1 (FADE paper, sign axis).
    """
    ax.axhline(BALANCED_SIGN, color="0.4", ls="--", lw=lw)
    ax.axvline(0.5, color="0.75", ls=":", lw=lw)
    ax.set_xlim(0, 1)
    ax.set_ylim(-0.06, 1.06)
    if labels:
        ax.text(0.005, 1.03, "success-heavy: entropy collapse", fontsize=fontsize - 0.5, color="0.45", va="top")
        ax.text(0.005, -0.03, "failure-heavy: rank-1 funnel", fontsize=fontsize - 0.5, color="0.45", va="bottom")
        ax.set_xlabel(
            "difficulty: mass-weighted mean solve rate  (low = hard focus, high = easy focus)", fontsize=fontsize
        )
        ax.set_ylabel("sign_balance = m_S / (m_S + m_F)", fontsize=fontsize)
    ax.tick_params(labelsize=fontsize - 1)
    ax.grid(alpha=0.2)


def _draw_plane(ax, profiles: Sequence[tuple[str, MassProfile]]) -> None:
    plane_guides(ax, fontsize=9)
    # Estimators with the same scalars (dr_grpo, grpo, rloo, ...) share one point and one label.
    points: dict[tuple[float, float], list[str]] = {}
    for label, prof in profiles:
        x, y = prof.difficulty, prof.sign_balance
        if not (math.isfinite(x) and math.isfinite(y)):
            continue
        points.setdefault((round(x, 3), round(y, 3)), []).append(label)
    # Points on one horizontal line (many centred estimators sit at sign_balance 0.5) get slanted
    # labels, alternately above and below the line, so that close neighbours do not collide; the
    # rightmost point of a line, and a point alone at its height, get a level label beside it.
    def row(xy: tuple[float, float]) -> int:
        return round(xy[1] * 20)

    rank: dict[tuple[float, float], int] = {}
    for key in sorted(points, key=lambda xy: (row(xy), xy[0])):
        rank[key] = sum(1 for other in rank if row(other) == row(key))
    row_size = {r: sum(1 for key in points if row(key) == r) for r in map(row, points)}
    for key, labels in points.items():
        x, y = key
        ax.plot([x], [y], "o", ms=7, mec="black", mew=0.6, zorder=3)
        right = x <= 0.8
        ha = "left" if right else "right"
        dx = 6 if right else -6
        if rank[key] == row_size[row(key)] - 1:
            xytext, va, angle = (dx, 0), "center", 0
        else:
            up = rank[key] % 2 == 0
            xytext, va = (dx, 5 if up else -5), "bottom" if up else "top"
            angle = (25 if up else -25) * (1 if right else -1)
        ax.annotate(
            ", ".join(labels),
            key,
            xytext=xytext,
            textcoords="offset points",
            fontsize=8,
            ha=ha,
            va=va,
            rotation=angle,
            rotation_mode="anchor",
            color="0.1",
        )
    ax.set_title("sign/difficulty plane (0.5 dashed = sign-balanced; one group per p = k/G)", fontsize=10)


def draw_eval_passk(reports: Sequence[dict[str, Any]], path: str | Path) -> Path:
    """Draw the pass@k curves of one or more ``fade eval`` reports on one plot (log-scaled k) into
    ``path``; a report of another run is checked first by :func:`fade.verifiers.evaluate.load_report`.

    Higher and flatter-rising curves trade pass@1 against pass@k differently: a run whose curve
    starts lower but ends higher kept more diverse correct solutions.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    out = Path(path)
    fig, ax = plt.subplots(figsize=PASSK_SIZE_IN, dpi=PASSK_DPI, layout="constrained")
    try:
        max_k = 1
        for report in reports:
            ks = np.array(report["curve"]["k"], dtype=float)
            vals = np.array([np.nan if v is None else v for v in report["curve"]["pass@k"]], dtype=float)
            keep = np.isfinite(vals)
            if not keep.any():
                continue
            top = int(ks[keep].max())
            max_k = max(max_k, top)
            p1 = report["pass@k"].get("pass@1")
            label = report.get("label", "run") + (f" (pass@1 {p1:.3f})" if isinstance(p1, (int, float)) else "")
            (line,) = ax.plot(ks[keep], vals[keep], lw=1.6, label=label)
            # The requested k, marked where they lie on the curve (same problems averaged).
            marks = [
                (int(k[5:]), v)
                for k, v in report["pass@k"].items()
                if isinstance(v, (int, float)) and int(k[5:]) <= top
            ]
            if marks:
                ax.plot([m[0] for m in marks], [m[1] for m in marks], "o", color=line.get_color(), ms=5)
        ax.set_xscale("log", base=2 if max_k <= 64 else 10)
        ax.set_xlim(0.9, max(2, max_k) * 1.1)
        ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda x, _: f"{x:g}"))
        ax.set_ylim(0, 1.02)
        ax.set_xlabel("k (samples drawn)")
        ax.set_ylabel("pass@k (unbiased)")
        title = "pass@k" if len(reports) == 1 else "pass@k: accuracy (k = 1) against diversity (large k)"
        ax.set_title(title, fontsize=10)
        ax.grid(alpha=0.25, which="both")
        ax.legend(fontsize=8, frameon=False, loc="lower right")
        out.parent.mkdir(parents=True, exist_ok=True)
        write_figure_atomic(out, fig, dpi=PASSK_DPI)
    finally:
        plt.close(fig)
    return out
