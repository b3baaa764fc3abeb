"""The sign/difficulty plane: x = difficulty (the mass-weighted mean solve rate; low = hard focus),
y = sign_balance (m_S / (m_S + m_F); 0.5 = balanced), drawn the same way wherever it is drawn.

:func:`draw_plane` is the one drawing of it: its guides (:func:`plane_guides`), then paths over it
(:class:`PlanePath`: a run's smoothed path, a series of steps) and labelled points (estimators, as
the atlas places them). The atlas's plane (:mod:`fade.plots.atlas`), ``fade analyze``'s
``plane.png``, a run's ``plane.png`` and ``fade compare``'s plane panel
(:mod:`fade.testbed.report`) and the sweep's ``<task>-plane.png`` (:mod:`fade.experiments.figures`)
all call it, each with its own marks.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from fade.mass import BALANCED_SIGN

__all__ = ["Mark", "PlanePath", "draw_plane", "plane_guides"]


@dataclass(frozen=True)
class Mark:
    """How a path's first or last point is marked: matplotlib's ``marker`` of ``size`` points with an
    edge ``edge`` points wide. A ``hollow`` mark is white, edged in the path's colour; a solid one is
    filled with ``colour`` (None: the path's) and edged in black. ``label``: its legend entry."""

    marker: str
    size: float
    edge: float
    hollow: bool = False
    colour: Any = None
    label: str | None = None


@dataclass(frozen=True)
class PlanePath:
    """One series on the plane in step order: ``x`` the difficulty and ``y`` the sign balance of
    each point (NaN: a step without mass, a gap in the line).

    The line is drawn ``lw`` wide in ``colour`` (``alpha``: its opacity, None: opaque); with
    ``dots``, a dot of that size marks every point too. ``label`` is the legend entry of the line,
    or of the dots where there are dots. ``start`` and ``end`` mark the first and last points
    drawn. With ``step_colours`` (a matplotlib ``Normalize`` over ``steps``, each point's step),
    the line takes the viridis colour of its steps instead, over ``raw``, the unsmoothed points
    drawn faint in the same colours."""

    x: np.ndarray
    y: np.ndarray
    colour: Any = None
    label: str | None = None
    lw: float = 1.3
    alpha: float | None = None
    dots: float | None = None
    start: Mark | None = None
    end: Mark | None = None
    steps: np.ndarray | None = None
    step_colours: Any = None
    raw: tuple[np.ndarray, np.ndarray] | None = None


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


def draw_plane(ax, paths: Sequence[PlanePath] = (), *, points: Sequence[tuple[str, float, float]] = (),
               fontsize: float = 8, labels: bool = True, lw: float = 1.0) -> None:
    """The sign/difficulty plane on ``ax``: its guides (:func:`plane_guides` with ``fontsize``,
    ``labels`` and ``lw``), each of ``paths`` in order, then ``points``, (label, difficulty,
    sign_balance) each, as labelled dots (points that round to the same place share one dot and
    one label; a point off the plane's finite range is left out). A path without a finite point
    is left out."""
    plane_guides(ax, fontsize=fontsize, labels=labels, lw=lw)
    for path in paths:
        _draw_path(ax, path)
    if points:
        _draw_points(ax, points)


def _draw_path(ax, path: PlanePath) -> None:
    x, y = np.asarray(path.x, dtype=float), np.asarray(path.y, dtype=float)
    drawn = np.flatnonzero(np.isfinite(x) & np.isfinite(y))
    if not drawn.size:
        return
    if path.step_colours is not None:
        from matplotlib.collections import LineCollection

        if path.raw is not None:
            ax.scatter(*path.raw, c=path.steps, cmap="viridis", norm=path.step_colours, s=4, alpha=0.15, lw=0)
        points = np.column_stack([x, y])
        lines = LineCollection(np.stack([points[:-1], points[1:]], axis=1), cmap="viridis", norm=path.step_colours,
                               lw=path.lw)
        lines.set_array(path.steps[1:])
        ax.add_collection(lines)
    else:
        line: dict[str, Any] = {"color": path.colour, "lw": path.lw}
        if path.alpha is not None:
            line["alpha"] = path.alpha
        if path.label is not None and path.dots is None:
            line["label"] = path.label
        ax.plot(x, y, **line)
    if path.dots is not None:
        ax.plot(x, y, "o", color=path.colour, ms=path.dots, label=path.label)
    for mark, i in ((path.start, drawn[0]), (path.end, drawn[-1])):
        if mark is None:
            continue
        style: dict[str, Any] = {"ms": mark.size, "mew": mark.edge}
        if mark.hollow:  # no colour of its own: the mark is its white face and its edge
            style.update(mfc="white", mec=path.colour)
        else:
            style.update(color=path.colour if mark.colour is None else mark.colour, mec="black")
        if mark.label is not None:
            style["label"] = mark.label
        ax.plot([x[i]], [y[i]], mark.marker, **style)


def _draw_points(ax, points: Sequence[tuple[str, float, float]]) -> None:
    # Points with the same scalars (dr_grpo, grpo, rloo, ...) share one dot and one label.
    places: dict[tuple[float, float], list[str]] = {}
    for label, x, y in points:
        if not (math.isfinite(x) and math.isfinite(y)):
            continue
        places.setdefault((round(x, 3), round(y, 3)), []).append(label)

    # Points on one horizontal line (many centred estimators sit at sign_balance 0.5) get slanted
    # labels, alternately above and below the line, so that close neighbours do not collide; the
    # rightmost point of a line, and a point alone at its height, get a level label beside it.
    def row(xy: tuple[float, float]) -> int:
        return round(xy[1] * 20)

    rank: dict[tuple[float, float], int] = {}
    for key in sorted(places, key=lambda xy: (row(xy), xy[0])):
        rank[key] = sum(1 for other in rank if row(other) == row(key))
    row_size = {r: sum(1 for key in places if row(key) == r) for r in map(row, places)}
    for key, labels in places.items():
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
