"""Experiments on the testbed: the paper's claims tested at small scale by one resumable sweep.

:mod:`.design` holds the design's records (arms, run specs, presets, and the roles several
claims share), :mod:`.presets` the presets themselves as data, one module each, and :mod:`.costs`
the cost model; :mod:`.sweep` runs a preset's grid in parallel worker processes and skips what is
finished; :mod:`.runs` reads the finished runs (each summarised by :mod:`fade.testbed.summary`);
:mod:`.claims` holds the claims, one module per claim with what it reads, measures (with the
statistics of :mod:`.stats`), its verdict, its words and its figures; :mod:`.figures` draws, and
:mod:`.report_numbers` and :mod:`.results_report` write the report (``README.md``, PNGs,
``results.json``). ``fade sweep`` is the command line over all of it. The
package sits above the testbed and imports it, never the reverse; it needs the testbed extra.
"""

from .design import Preset, RunSpec, TaskPlan, Tuning
from .presets import PRESETS, get_preset
from .sweep import SweepOutcome, run_sweep

__all__ = ["PRESETS", "Preset", "RunSpec", "SweepOutcome", "TaskPlan", "Tuning", "get_preset", "run_sweep"]
