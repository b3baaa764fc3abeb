"""The numbers of ``fade eval``'s report: ``report.json`` (pass@k per requested k, how many problems
each k averages, solve rates, distinct correct solutions, reasons, the pass@k curve) and the rows of
``problems.jsonl``, from the scores of every sample; and the check of an earlier run's report that
``--compare`` reads.

pass@k is the unbiased estimator (:func:`fade.pass_at_k`) averaged over problems. A problem with
fewer than k samples has no unbiased pass@k: it is left out of that k, and the report gives, per
k, how many problems were averaged (``problems_at_k``); a k that no problem reaches is null.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from fade.passk import pass_at_k

from ..math_answer import math_backend
from .config import EvalConfig
from .inputs import Sample
from .store import REPORT

__all__ = ["K_POLICY", "curve_ks", "load_report", "summarize"]

K_POLICY = (
    "pass@k is the unbiased estimator 1 - C(n-c, k)/C(n, k) averaged over the problems with at least k "
    "samples; problems with fewer samples are left out of that k (problems_at_k counts those averaged) "
    "and a k that no problem reaches is null"
)


def curve_ks(max_n: int) -> list[int]:
    """The k at which the pass@k curve is drawn: every k to 16, then about 12 per decade, up to max_n."""
    ks = set(range(1, min(max_n, 16) + 1))
    if max_n > 16:
        ks.update(int(round(x)) for x in np.geomspace(16, max_n, num=max(2, int(12 * math.log10(max_n / 16)) + 1)))
    return sorted(k for k in ks if 1 <= k <= max_n)


def _mean_pass_at_k(n: np.ndarray, c: np.ndarray, k: int) -> tuple[float | None, int]:
    keep = n >= k
    if not keep.any():
        return None, 0
    return float(np.mean(pass_at_k(n[keep], c[keep], k))), int(keep.sum())


def summarize(samples: list[Sample], done: dict[tuple[str, int], dict], order: list[str], ks: Sequence[int],
              config: EvalConfig) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The report and the per-problem rows, from the scores of every sample."""
    per_problem: dict[str, list[dict]] = {key: [] for key in order}
    ids: dict[str, Any] = {}
    for s in samples:
        per_problem[s.problem].append(done[(s.problem, s.index)])
        ids[s.problem] = s.problem_id
    rows = []
    for key in order:
        recs = per_problem[key]
        correct = [r for r in recs if r["score"] > 0]
        distinct = len({r.get("canonical") or "" for r in correct})
        rows.append({"problem_id": ids[key], "n": len(recs), "correct": len(correct),
                     "solve_rate": len(correct) / len(recs), "distinct_correct": distinct,
                     "reasons": dict(sorted(Counter(r["reason"] for r in recs).items()))})
    n = np.array([r["n"] for r in rows])
    c = np.array([r["correct"] for r in rows])
    for row in rows:
        for k in ks:
            if row["n"] >= k:
                row[f"pass@{k}"] = pass_at_k(row["n"], row["correct"], k)
    pass_k, at_k = {}, {}
    for k in ks:
        pass_k[f"pass@{k}"], at_k[str(k)] = _mean_pass_at_k(n, c, k)
    # The curve stops at the fewest samples any problem has, so every point averages the same problems.
    curve = [(k, _mean_pass_at_k(n, c, k)[0]) for k in curve_ks(int(n.min()))]
    reasons = Counter(r["reason"] for recs in per_problem.values() for r in recs)
    report: dict[str, Any] = {
        "label": config.label or Path(config.out).name,
        "verifier": config.verifier,
        "samples_file": str(config.samples),
        "problems_file": config.problems,
        "settings": config.settings(),
        "num_problems": len(rows),
        "num_samples": len(samples),
        "samples_per_problem": {"min": int(n.min()), "max": int(n.max())},
        "k": list(ks),
        "pass@k": pass_k,
        "problems_at_k": at_k,
        "k_policy": K_POLICY,
        "mean_solve_rate": float(np.mean(c / n)),
        "problems_solved": int((c > 0).sum()),
        "mean_distinct_correct": float(np.mean([r["distinct_correct"] for r in rows])),
        "total_distinct_correct": int(sum(r["distinct_correct"] for r in rows)),
        "reasons": dict(sorted(reasons.items())),
        "curve": {"k": [k for k, _ in curve], "pass@k": [v for _, v in curve]},
    }
    if config.verifier == "math":
        # What read the answers (the verdicts are the same under every supported ANTLR runtime).
        report["math_backend"] = math_backend()
    if config.verifier == "code":
        modes = Counter(r["details"].get("sandbox") for recs in per_problem.values() for r in recs
                        if isinstance(r.get("details"), dict) and r["details"].get("sandbox"))
        nets = Counter(r["details"].get("network_isolated") for recs in per_problem.values() for r in recs
                       if isinstance(r.get("details"), dict) and "network_isolated" in r["details"])
        report["sandbox"] = {
            "modes": dict(modes),
            "network_isolated": dict((str(k).lower(), v) for k, v in nets.items()),
        }
        judges = Counter(r["details"].get("judge") for recs in per_problem.values() for r in recs
                         if isinstance(r.get("details"), dict) and r["details"].get("judge"))
        report["judges"] = dict(sorted(judges.items()))
    return report, rows


def load_report(directory: str | Path) -> dict[str, Any]:
    """The report.json of an earlier ``fade eval`` output folder."""
    path = Path(directory) / REPORT
    if not path.is_file():
        raise ValueError(
            f"--compare {directory}: no {REPORT} there (expected the --out folder of a finished fade eval)"
        )
    try:
        report = json.loads(path.read_text(encoding="utf-8"))
        defect = _report_defect(report)
    except (ValueError, RecursionError) as exc:
        defect = f"not JSON: {exc}"
    if defect is not None:
        raise ValueError(f"{path} is not a fade eval report ({defect}): --compare takes finished fade eval folders")
    return report


def _report_defect(report: Any) -> str | None:
    """What is missing or malformed in ``report`` for drawing its curve
    (:func:`fade.plots.draw_eval_passk`), or None."""
    def number(v: Any) -> bool:
        return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)

    curve = report.get("curve") if isinstance(report, dict) else None
    if not isinstance(curve, dict) or not isinstance(curve.get("k"), list) or not isinstance(curve.get("pass@k"), list):
        return "expected the keys curve.k and curve.pass@k, lists"
    if len(curve["k"]) != len(curve["pass@k"]) or not all(number(k) and k >= 1 for k in curve["k"]) \
            or not all(v is None or number(v) for v in curve["pass@k"]):
        return "curve.k must be numbers >= 1 and curve.pass@k as many numbers or nulls"
    passk = report.get("pass@k")
    if not isinstance(passk, dict) or not all(
        isinstance(k, str)
        and k.startswith("pass@")
        and k[5:].isascii()
        and k[5:].isdigit()
        and (v is None or number(v))
        for k, v in passk.items()
    ):
        return "expected pass@k, an object of pass@K keys and numbers or nulls"
    if not isinstance(report.get("label", ""), str):
        return "its label is not text"
    return None
