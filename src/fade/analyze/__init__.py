"""``fade analyze``: the gradient-mass decomposition of any run's rollouts, from the files the
engines already write (docs/analyze.md).

Layers: :mod:`~fade.analyze.columns` reads the fields a format needs (pyarrow);
:mod:`~fade.analyze.formats` turns each engine's dump into :class:`RunRecords` (a module per engine);
:mod:`~fade.analyze.stats` computes every step's statistics and the counterfactual estimators;
:mod:`~fade.analyze.report` and :mod:`~fade.analyze.figures` write them.
"""

from .analysis import Analysis, analyze_records, analyze_run
from .formats import FORMATS, ReadOptions, detect, read_run
from .records import DumpError, RunRecords, StepBatch
from .report import check_output_folder, write_outputs

__all__ = [
    "FORMATS", "Analysis", "DumpError", "ReadOptions", "RunRecords", "StepBatch", "analyze_records", "analyze_run",
    "check_output_folder", "detect", "read_run", "write_outputs",
]
