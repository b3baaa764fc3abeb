"""The gradient-mass atlas: where estimators put their weight, drawn so a person can see it.

:func:`atlas_profiles` turns (label, estimator spec) pairs into their mass profiles, and
:func:`draw_atlas` draws them: one panel per estimator with its positive mass m_S(p) and negative
mass m_F(p) over the solve rates p = k/G of a group, above the sign/difficulty plane with every
estimator placed on it (:func:`fade.plots.plane.draw_plane`). ``fade atlas`` and the sweep's
``atlas.png`` both build theirs so; FADE, whose profile moves as it trains, is drawn at the two
ends of its schedule (:data:`FADE_ENDS`). The figure has a fixed size at
:data:`fade.plots.axes.DPI`, so a PNG's pixel size depends only on how many estimators it shows
(:func:`atlas_pixel_size`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from fade.atomic import write_figure_atomic
from fade.mass import MassProfile, mass_profile
from fade.registry import spec as registry_spec
from fade.specs import format_value, parse_spec

from .axes import DPI, NEGATIVE_COLOUR, POSITIVE_COLOUR, headless_pyplot
from .plane import draw_plane

__all__ = ["ATLAS_COLUMNS", "FADE_ENDS", "atlas_pixel_size", "atlas_profiles", "draw_atlas", "profile_summary"]

ATLAS_COLUMNS = 4
_PANEL_W_IN, _PANEL_H_IN, _PLANE_H_IN = 3.0, 2.5, 4.5


def _fade_ends() -> tuple[tuple[str, str], ...]:
    defaults = registry_spec("fade").defaults
    high, low = defaults["alpha_max"], defaults["delta_min"]
    return (
        (f"fade early: alpha={high:g}, delta=1", f"fade:alpha={format_value(high)}:delta=1"),
        (f"fade late: alpha=1, delta={low:g}", f"fade:alpha=1:delta={format_value(low)}"),
    )


#: FADE's schedule runs between two ends (docs/method.md, section 3), from its defaults: hard focus
#: with a balanced sign while the solve rate is low and the entropy above its target (alpha at
#: alpha_max, delta 1), medium focus with a failure-biased sign once the solve rate has risen and
#: the entropy fallen (alpha 1, delta at delta_min). (label, estimator spec) each: an atlas draws
#: FADE there.
FADE_ENDS: tuple[tuple[str, str], ...] = _fade_ends()


def atlas_profiles(
    estimators: Sequence[tuple[str, str]],
    group_size: int,
    *,
    lengths: float = 1.0,
    baseline_reward: float | None = None,
) -> list[tuple[str, dict, MassProfile]]:
    """The mass profile at G = ``group_size`` of each (label, estimator spec) of ``estimators``:
    (label, the parameters the spec gives, profile) each, in order. Every rollout has length
    ``lengths`` and baseline reward ``baseline_reward`` (for estimators that need one: remax). A
    spec the estimator refuses is a ValueError starting with the spec."""
    entries = []
    for label, text in estimators:
        name, params = parse_spec(text)
        try:
            profile = mass_profile(name, group_size, lengths=lengths, baseline_rewards=baseline_reward, **params)
        except ValueError as exc:
            raise ValueError(f"{text.strip()}: {exc}") from None
        entries.append((label, params, profile))
    return entries


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
        round(ATLAS_COLUMNS * _PANEL_W_IN * DPI),
        round((rows * _PANEL_H_IN + _PLANE_H_IN) * DPI),
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
    plt = headless_pyplot()
    from matplotlib.lines import Line2D

    n = len(profiles)
    rows = math.ceil(n / ATLAS_COLUMNS)
    width_px, height_px = atlas_pixel_size(n)
    group_sizes = sorted({prof.group_size for _, prof in profiles})
    fig = plt.figure(figsize=(width_px / DPI, height_px / DPI), dpi=DPI, layout="constrained")
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
        draw_plane(plane, points=[(label, prof.difficulty, prof.sign_balance) for label, prof in profiles], fontsize=9)
        plane.set_title("sign/difficulty plane (0.5 dashed = sign-balanced; one group per p = k/G)", fontsize=10)

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
        write_figure_atomic(out, fig, dpi=DPI)
    finally:
        plt.close(fig)
    return out
