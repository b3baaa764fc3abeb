"""Scoring ``fade eval``'s missing samples: a pool of worker threads over the math or code
verifier, a bounded window of samples in flight, and each score appended to ``scores.jsonl`` and
flushed as it finishes, so an interrupt loses at most the samples in flight."""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from pathlib import Path
from typing import Any

from fade.progress import step_bar

from ..code_exec import CodeVerifier
from ..result import VerifierResult
from .config import EvalConfig
from .inputs import Sample
from .store import append_scores

__all__ = ["score_missing"]


def _scorer(config: EvalConfig) -> tuple[Callable[[str, Any], VerifierResult], Callable[[], None], int]:
    workers = config.workers or (os.cpu_count() or 1)
    if config.verifier == "math":
        v = config.math_verifier(workers)
        return v.score, v.close, workers
    c = CodeVerifier(limits=config.limits, workers=workers, float_tolerance=config.float_tolerance, judge=config.judge)
    return c.score, lambda: None, workers


def score_missing(todo: list[Sample], refs: dict[str, Any], config: EvalConfig, scores_path: Path,
                  done: dict[tuple[str, int], dict], total: int) -> int:
    """Score ``todo`` in parallel, appending each result to scores.jsonl (and to ``done``) as it
    finishes; returns how many were scored."""
    score, close, workers = _scorer(config)
    correct = sum(rec["score"] > 0 for rec in done.values())
    finished = len(done)
    scored = 0
    try:
        with append_scores(scores_path) as log, \
                step_bar("scoring", total, finished, config.progress, unit="samples") as advance, \
                ThreadPoolExecutor(max_workers=workers) as pool:
            pending = iter(todo)
            running: dict[Any, Sample] = {}

            def submit_next() -> None:
                sample = next(pending, None)
                if sample is not None:
                    running[pool.submit(score, sample.completion, refs[sample.problem])] = sample

            # A bounded window of work in flight: an interrupt loses at most that much.
            for _ in range(2 * workers):
                submit_next()
            while running:
                ready, _ = wait(running, return_when=FIRST_COMPLETED)
                for future in ready:
                    sample = running.pop(future)
                    result = future.result()
                    rec = {"problem_id": sample.problem_id, "sample": sample.index, "completion_sha": sample.sha,
                           "reference_sha": sample.reference_sha, **result.to_dict()}
                    log.append(rec)
                    done[(sample.problem, sample.index)] = rec
                    scored += 1
                    finished += 1
                    correct += result.score > 0
                    advance(f"correct {correct}/{finished}")
                    submit_next()
    finally:
        close()
    return scored
