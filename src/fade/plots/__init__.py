"""The plotting layer: every figure fade draws, in one house style, and the helpers they share.

- :mod:`~fade.plots.axes`: the axes kit (:data:`DPI`, :func:`headless_pyplot`, :func:`panel_grid`,
  :func:`finish_axes`, :func:`smoothing_window`, :func:`trace`, the mass colours);
- :mod:`~fade.plots.plane`: the sign/difficulty plane, drawn by :func:`draw_plane` wherever it
  appears;
- :mod:`~fade.plots.atlas`: the gradient-mass atlas (:func:`atlas_profiles` builds it,
  :func:`draw_atlas` draws it);
- :mod:`~fade.plots.passk`: ``fade eval``'s pass@k figure (:func:`draw_eval_passk`).

It imports the core and, inside its functions, matplotlib (on the Agg backend), never the other
way round, so ``import fade`` stays torch-only. The run figures (:mod:`fade.testbed.report`), the
sweep's (:mod:`fade.experiments.figures`) and ``fade analyze``'s (:mod:`fade.analyze.figures`)
draw with these.
"""

from __future__ import annotations

from .atlas import ATLAS_COLUMNS, FADE_ENDS, atlas_pixel_size, atlas_profiles, draw_atlas, profile_summary
from .axes import (
    DPI,
    NEGATIVE_COLOUR,
    POSITIVE_COLOUR,
    bucket_colours,
    finish_axes,
    headless_pyplot,
    legend_in_headroom,
    panel_grid,
    smoothing_window,
    trace,
)
from .passk import PASSK_SIZE_IN, draw_eval_passk
from .plane import Mark, PlanePath, draw_plane, plane_guides

__all__ = [
    "ATLAS_COLUMNS",
    "DPI",
    "FADE_ENDS",
    "Mark",
    "NEGATIVE_COLOUR",
    "PASSK_SIZE_IN",
    "POSITIVE_COLOUR",
    "PlanePath",
    "atlas_pixel_size",
    "atlas_profiles",
    "bucket_colours",
    "draw_atlas",
    "draw_eval_passk",
    "draw_plane",
    "finish_axes",
    "headless_pyplot",
    "legend_in_headroom",
    "panel_grid",
    "plane_guides",
    "profile_summary",
    "smoothing_window",
    "trace",
]
