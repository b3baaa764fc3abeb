"""The sweep presets ``fade sweep --preset`` knows, each one module of data built from
:mod:`fade.experiments.design`'s records: ``quick``, ``full``, ``paper``, ``entropy``,
``confirm`` and ``shift``.
"""

from __future__ import annotations

from fade.experiments.design import Preset
from fade.experiments.presets.confirm import CONFIRM
from fade.experiments.presets.entropy import ENTROPY
from fade.experiments.presets.full import FULL
from fade.experiments.presets.paper import PAPER
from fade.experiments.presets.quick import QUICK
from fade.experiments.presets.shift import SHIFT

__all__ = ["PRESETS", "get_preset"]

#: The presets ``fade sweep --preset`` knows, by name.
PRESETS: dict[str, Preset] = {p.name: p for p in (QUICK, FULL, PAPER, ENTROPY, CONFIRM, SHIFT)}


def get_preset(name: str) -> Preset:
    """The preset called ``name``; an unknown name raises ValueError listing the known ones."""
    if name not in PRESETS:
        raise ValueError(f"unknown preset {name!r}; known presets: {', '.join(PRESETS)}")
    return PRESETS[name]
