"""The axes kit of fade's figures: the house style every figure shares (the atlas, ``fade eval``'s
pass@k, the run figures of :mod:`fade.testbed.report`, the sweep's of :mod:`fade.experiments.figures`
and ``fade analyze``'s of :mod:`fade.analyze.figures`).

Every figure is drawn at :data:`DPI`, and panels placed with fixed margins in inches
(:func:`panel_grid`), so a PNG's pixel size depends only on what it shows; a series is drawn
smoothed over its faint raw values (:func:`trace`, :func:`smoothing_window`), and legends sit in
headroom above the curves (:func:`legend_in_headroom`). matplotlib is imported inside the
functions, on the Agg backend (:func:`headless_pyplot`), so importing this module loads none of it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from fade.series import moving_average

__all__ = [
    "DPI",
    "NEGATIVE_COLOUR",
    "POSITIVE_COLOUR",
    "bucket_colours",
    "finish_axes",
    "headless_pyplot",
    "legend_in_headroom",
    "panel_grid",
    "smoothing_window",
    "trace",
]

#: The dots per inch of every figure fade draws.
DPI = 100

POSITIVE_COLOUR = "#2a9d3f"  # m_S, successes
NEGATIVE_COLOUR = "#d62828"  # m_F, failures

# The auto smoothing window is about steps / 50: enough to read a trend through the noise of
# small batches without hiding a collapse that takes a few percent of the run.
_AUTO_SMOOTH_DIVISOR = 50
#: Legend entries per row, and the share of a panel's height one legend row takes, in the headroom
#: above the curves where training.png's legends sit.
_LEGEND_COLUMNS, _LEGEND_ROW_SHARE = 3, 0.1


def smoothing_window(smooth: int | None, num_steps: int) -> int:
    """The moving-average window for ``smooth`` (None: a fixed fraction of the run's steps)."""
    if smooth is None:
        return max(1, num_steps // _AUTO_SMOOTH_DIVISOR)
    if isinstance(smooth, bool) or not isinstance(smooth, int) or smooth < 1:
        raise ValueError(f"smooth must be a window of >= 1 steps (1 = raw) or None for auto, got {smooth!r}")
    return smooth


def headless_pyplot():
    """matplotlib's pyplot on the Agg backend, which draws without a display."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def trace(
    ax,
    steps: np.ndarray,
    values: np.ndarray | None,
    window: int,
    *,
    label: str | None = None,
    color: Any = None,
    lw: float = 1.4,
    ls: str = "-",
    raw: bool = True,
) -> bool:
    """Plot one series against step, gaps (None, NaN, inf) dropped, smoothed when window > 1
    with the raw values faint underneath. Returns whether anything was drawn."""
    if values is None:
        return False
    keep = np.isfinite(values)
    if not keep.any():
        return False
    x, y = steps[keep], values[keep]
    marker = "o" if len(x) == 1 else None
    if window > 1 and len(x) > 2:
        if raw:
            (line,) = ax.plot(x, y, color=color, lw=0.6, alpha=0.25, ls=ls)
            color = line.get_color()
        y = moving_average(y, window)
    ax.plot(x, y, color=color, lw=lw, ls=ls, label=label, marker=marker, ms=4)
    return True


def panel_grid(fig, rows: int, cols: int, *, top: float, bottom: float = 0.45, left: float = 0.55,
                right: float = 0.5, wspace: float = 0.85, hspace: float = 0.7, **gridspec_kw) -> np.ndarray:
    """A rows x cols array of axes placed with margins and gaps given in inches.

    Fixed margins instead of constrained layout: on a dozen panels the layout solver costs more
    than drawing ten thousand steps, and the panels' decorations are known well enough to size
    the gaps for them (tick labels, a title above, "step" below, a twin axis on the right).
    """
    width, height = fig.get_size_inches()
    axis_w = (width - left - right - (cols - 1) * wspace) / cols
    axis_h = (height - top - bottom - (rows - 1) * hspace) / rows
    return fig.subplots(
        rows,
        cols,
        squeeze=False,
        gridspec_kw=dict(
            left=left / width,
            right=1 - right / width,
            top=1 - top / height,
            bottom=bottom / height,
            wspace=wspace / axis_w,
            hspace=hspace / axis_h,
            **gridspec_kw,
        ),
    )


def bucket_colours(buckets: Sequence[int]) -> dict[int, Any]:
    from matplotlib import colormaps

    cmap = colormaps["plasma"]
    # Easiest bucket at the bright end, hardest at the dark end, leaving out plasma's pale yellow.
    span = max(len(buckets) - 1, 1)
    return {b: cmap(0.8 * (1 - i / span)) for i, b in enumerate(buckets)}


def finish_axes(ax, title: str, *, legend: bool = False) -> None:
    """The house style of a panel: small title and ticks, a light grid, and a legend when asked."""
    ax.set_title(title, fontsize=9)
    ax.tick_params(labelsize=7)
    ax.grid(alpha=0.25)
    if legend and ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=6.5, frameon=False, loc="best")


def legend_in_headroom(ax, *, columns: int = _LEGEND_COLUMNS, fontsize: float = 6.5) -> None:
    """Put the panel's legend in rows above its curves: the y-axis grows upward by the legend's
    height, so no entry covers a line, wherever the lines run."""
    handles, labels = ax.get_legend_handles_labels()
    if not handles:
        return
    ncol = min(len(handles), columns)
    share = min(0.6, _LEGEND_ROW_SHARE * math.ceil(len(handles) / ncol) + 0.03)
    lo, hi = ax.get_ylim()
    ax.set_ylim(lo, hi + (hi - lo) * share / (1 - share))
    ax.legend(handles, labels, fontsize=fontsize, frameon=False, loc="upper center", ncol=ncol, borderaxespad=0.2,
              handlelength=1.4, columnspacing=0.9, handletextpad=0.4, labelspacing=0.25)
