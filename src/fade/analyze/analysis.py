"""One analysis of a run: read its dump, compute every step's statistics, then write them.

Everything is read and computed before the first file is written, so a dump with a defect stops
with its one-line error and leaves the output folder as it was.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fade.series import finite_mean

from .formats import ReadOptions, read_run
from .prompts import PromptView, prompt_view
from .records import RunRecords
from .stats import Counterfactuals, default_estimators, run_diagnostics, step_stats

__all__ = ["Analysis", "analyze_records", "analyze_run"]


def _mean_or_none(values: list[float | None]) -> float | None:
    """:func:`fade.series.finite_mean` as ``report.json`` writes it: None (null) where no value is finite."""
    mean = finite_mean(values)
    return None if math.isnan(mean) else mean


@dataclass
class Analysis:
    """A run, its per-step statistics (the lines of ``steps.jsonl``) and its per-prompt view, or
    the line that says why it has none (:mod:`~fade.analyze.prompts`)."""

    run: RunRecords
    estimators: list[str]
    steps: list[dict[str, Any]]
    skipped: dict[str, str] = field(default_factory=dict)
    prompts: PromptView | None = None
    prompts_note: str | None = None

    def summary(self) -> dict[str, Any]:
        """The run-level numbers of ``report.json``: the run, then per-step means."""
        def mean(key: str) -> float | None:
            return _mean_or_none([s.get(key) for s in self.steps])

        out: dict[str, Any] = {**self.run.to_dict(), "estimators": self.estimators,
                               "skipped_estimators": dict(self.skipped)}
        out["num_rollouts"] = sum(s["num_rollouts"] for s in self.steps)
        out["group_sizes"] = sorted({n for s in self.steps for n in s["group_sizes"]})
        out["mean_zero_spread_share"] = mean("zero_spread_share")
        out["mean_reward"] = mean("mean_reward")
        out["mean_solve_rate"] = mean("solve_rate")
        for who in ("run", *self.estimators):
            rows = [s["run"] if who == "run" else s["estimators"].get(who) for s in self.steps]
            rows = [r for r in rows if r]
            if rows:
                out.setdefault("mean_diagnostics", {})[who] = {
                    k: _mean_or_none([r[k] for r in rows]) for k in rows[0] if k != "max_abs_diff_to_run"}
        out["prompts"] = self.prompts.summary() if self.prompts is not None else {"note": self.prompts_note}
        return out


def analyze_records(run: RunRecords, estimators: list[str] | None = None,
                    progress: Callable[[int, int], None] | None = None) -> Analysis:
    """The statistics of every step of ``run`` (``estimators``: specs; None: the defaults, of
    which those that refuse the run's rewards are skipped with a note)."""
    specs = default_estimators(run) if estimators is None else list(estimators)
    cf = Counterfactuals(specs, run, strict=estimators is not None)
    steps = []
    for i, batch in enumerate(run.steps):
        row = step_stats(batch, run.success)
        row["entropy"] = run.entropy.get(batch.step)
        row["run"] = run_diagnostics(batch)
        row["estimators"] = cf.step(batch)
        if run.engine_metrics.get(batch.step):
            row["engine"] = run.engine_metrics[batch.step]
        steps.append(row)
        if progress is not None:
            progress(i + 1, len(run.steps))
    kept = [s for s in specs if s not in cf.skipped]
    view = prompt_view(run)
    return Analysis(run, kept, steps, skipped=dict(cf.skipped), prompts=None if isinstance(view, str) else view,
                    prompts_note=view if isinstance(view, str) else None)


def analyze_run(path: str | Path, options: ReadOptions | None = None, *, estimators: list[str] | None = None,
                fmt: str | None = None, progress: Callable[[str, int, int], None] | None = None) -> Analysis:
    """Read the dump at ``path`` and analyse it. ``progress(stage, done, total)`` reports reading
    ("read", per file) and computing ("steps", per step)."""
    run = read_run(path, options, fmt=fmt, progress=None if progress is None else (lambda d, t: progress("read", d, t)))
    return analyze_records(run, estimators, None if progress is None else (lambda d, t: progress("steps", d, t)))
