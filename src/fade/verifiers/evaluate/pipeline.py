"""One ``fade eval`` run from start to end: check every setting, read the inputs, hold the output
folder's lock, reuse the scores already written, score what is missing and, once every sample is
scored, write the report. Drawing the pass@k figure is the caller's (the verifiers draw nothing):
``fade eval`` draws it with :func:`fade.plots.draw_eval_passk` from the outcome."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fade import jsonl

from .config import EvalConfig, EvalOutcome, check_config
from .inputs import Sample, read_samples
from .report import load_report, summarize
from .scoring import score_missing
from .store import (
    PROBLEMS,
    REPORT,
    SCORES,
    atomic_write_text,
    check_reused,
    check_settings,
    folder_lock,
    load_scores,
    write_run,
)

__all__ = ["evaluate"]


def evaluate(config: EvalConfig) -> EvalOutcome:
    """Score what is missing in ``config.out`` and, once every sample is scored, write the report."""
    ks = check_config(config)
    compared = [load_report(d) for d in config.compare]
    out = Path(config.out)
    check_settings(out, config.settings())
    samples, refs, order = read_samples(config.samples, config.verifier, config.problems, config.judge)
    out.mkdir(parents=True, exist_ok=True)
    with folder_lock(out):
        check_settings(out, config.settings())  # again, now that no other run can write it
        return _evaluate_locked(config, out, samples, refs, order, ks, compared)


def _evaluate_locked(config: EvalConfig, out: Path, samples: list[Sample], refs: dict[str, Any], order: list[str],
                     ks: tuple[int, ...], compared: list[dict[str, Any]]) -> EvalOutcome:
    write_run(out, config.settings(), str(config.samples), config.problems)
    scores_path = out / SCORES
    done = load_scores(scores_path)
    check_reused(done, samples, scores_path, config.samples)
    todo = [s for s in samples if (s.problem, s.index) not in done]
    if config.limit is not None:
        todo = todo[: config.limit]
    scored = score_missing(todo, refs, config, scores_path, done, len(samples)) if todo else 0
    remaining = sum((s.problem, s.index) not in done for s in samples)
    if remaining:
        stale = out / REPORT
        if stale.exists():
            stale.unlink()  # a report of fewer samples than the file now holds would mislead
        return EvalOutcome(False, scored, len(samples), remaining, None, [], compared)
    report, rows = summarize(samples, done, order, ks, config)
    jsonl.write(out / PROBLEMS, rows)
    atomic_write_text(out / REPORT, json.dumps(report, indent=2) + "\n")
    return EvalOutcome(True, scored, len(samples), 0, report, [out / REPORT, out / PROBLEMS], compared)
