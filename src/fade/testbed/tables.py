"""Tables of runs, and the names they go by: :func:`summary_table` for one run (``fade report``),
:func:`compare_table` for several side by side (``fade compare``, ``fade demo``).

Every number in them that summarises a run (final entropy, mean sign_balance, the share of steps
with delta < 1, the peak pass@1) is :mod:`fade.testbed.summary`'s, the definition the sweep's
claims read too. The labels here (:func:`run_label`, :func:`compare_labels`) also name the runs in
:mod:`fade.testbed.report`'s figures.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.table import Table

from .runlog import (
    CONFIG_FILE,
    SCHEDULE,
    Run,
    load_run,
    logged_buckets,
    logged_ks,
    metric_column,
    metric_columns,
    metric_value,
    peak_eval_index,
)
from .summary import FINAL_SHARE, first_finite, last_finite, peak, summarise

__all__ = [
    "AT_PEAK",
    "compare_labels",
    "compare_table",
    "config_value",
    "run_label",
    "run_title",
    "shared_base",
    "summary_table",
]


# -- labels -------------------------------------------------------------------------------------


def config_value(config: dict, key: str) -> Any:
    """``key`` of a run's configuration, dotted keys reaching into nested dicts (e.g.
    ``estimator_args.h_star_ratio``); None where it is absent."""
    value: Any = config
    for part in key.split("."):
        if not isinstance(value, dict) or part not in value:
            return None
        value = value[part]
    return value


def run_label(run: Run) -> str:
    """The run's estimator with its arguments, ``fade(h_star_ratio=0.7)``; its folder's name without one."""
    config = run.config
    name = config.get("estimator")
    if name is None:
        return run.directory.name
    args = config.get("estimator_args") or {}
    label = str(name)
    if isinstance(args, dict) and args:
        label += "(" + ", ".join(f"{k}={v}" for k, v in args.items()) + ")"
    return label


def run_title(run: Run) -> str:
    """One line naming the run: label, task, seed, steps logged, folder."""
    config = run.config
    parts = [run_label(run)]
    if config.get("task") is not None:
        parts.append(f"task {config['task']}")
    if config.get("seed") is not None:
        parts.append(f"seed {config['seed']}")
    if run.metrics:
        parts.append(f"{len(run.metrics)} steps logged")
    if config.get("estimator") is not None:
        parts.append(run.directory.name)
    return "  |  ".join(parts)


def compare_labels(runs: Sequence[Run], label_key: str | None) -> list[str]:
    """A distinct label per run: by ``label_key`` read from ``run.json`` (else :func:`run_label`), with
    the folder's name added where two labels would be the same."""
    if label_key is None:
        labels = [run_label(run) for run in runs]
    else:
        values = [config_value(run.config, label_key) for run in runs]
        if all(v is None for v in values):
            known = sorted({k for run in runs for k in run.config})
            raise ValueError(f"label_key {label_key!r} is in no run's {CONFIG_FILE}; keys there: {known}")
        labels = [f"{label_key}={v}" if v is not None else run.directory.name for run, v in zip(runs, values)]
    # Runs that differ only in what the label leaves out (seeds, say) would be indistinguishable.
    if len(set(labels)) < len(labels):
        labels = [f"{label} [{run.directory.name}]" for label, run in zip(labels, runs)]
    return labels


# -- summary_table ------------------------------------------------------------------------------


def _fmt(value: float, signed: bool = False) -> str:
    if not math.isfinite(value):
        return "—"
    return f"{value:+.3f}" if signed else f"{value:.3f}"


#: The summary's third column: every row of it reads the one evaluation with the highest pass@1.
AT_PEAK = "at peak pass@1"


def summary_table(run: Run) -> Table:
    """The run's results as a rich Table with columns base, final, at peak pass@1, final - base.

    Evaluation rows compare the first evaluation (the base model), the last, and the one with the
    highest pass@1 (earliest on ties; every row of that column reads that one evaluation, not the
    best value of each row): pass@k for each logged k, greedy, distinct_correct, per-bucket pass@1
    and eval entropy when logged. Training rows give the first and the last logged value of
    entropy, reward_mean, rank1_share, sign_balance, difficulty and the estimator's schedule
    (alpha, delta, p_hat, h_hat, h_star) where logged. Values print with three decimals; a value
    not logged prints as a dash.
    """
    title = run_title(run)
    table = Table(title=title, title_justify="left")
    table.add_column("metric", style="bold")
    for name in ("base", "final", AT_PEAK, "final - base"):
        table.add_column(name, justify="right")

    if run.evals:
        cols = metric_columns(run.evals)
        steps = metric_column(run.evals, "step")
        pass1 = cols.get("pass@1")
        best = peak_eval_index(pass1) if pass1 is not None else None
        picks = [0, len(run.evals) - 1, best]
        table.add_row(
            "[dim]eval at step[/]",
            *(f"[dim]{int(steps[i])}[/]" if i is not None else "—" for i in picks),
            "",
        )
        keys = [f"pass@{k}" for k in logged_ks(cols)]
        keys += [k for k in ("greedy", "distinct_correct") if k in cols]
        keys += [f"pass@1/d{b}" for b in logged_buckets(cols, "pass@1")]
        keys += [k for k in ("entropy",) if k in cols]
        for key in keys:
            values = [cols[key][i] if i is not None else math.nan for i in picks]
            label = f"eval {key}" if key == "entropy" else key
            table.add_row(label, *(_fmt(v) for v in values), _fmt(values[1] - values[0], signed=True))
        sizes = {k: metric_value(run.evals[-1].get(k)) for k in ("n_prompts", "n_samples")}
        sample_info = [f"{k} {int(v)}" for k, v in sizes.items() if math.isfinite(v)]
        table.caption = (
            f"{AT_PEAK}: the evaluation with the highest pass@1 (earliest on ties), every row read there; "
            "train rows: first and last step" + ("; final eval: " + ", ".join(sample_info) if sample_info else "")
        )
        table.add_section()
    else:
        table.add_row("[dim]no eval.jsonl[/]", "", "", "", "")
        table.add_section()

    if run.metrics:
        cols = metric_columns(run.metrics)
        steps = metric_column(run.metrics, "step")
        table.add_row("[dim]train at step[/]", f"[dim]{int(steps[0])}[/]", f"[dim]{int(steps[-1])}[/]", "", "")
        train_keys = ("entropy", "reward_mean", "rank1_share", "sign_balance", "difficulty") + SCHEDULE
        for key in train_keys:
            if key not in cols:
                continue
            first, last = first_finite(cols[key]), last_finite(cols[key])
            table.add_row(f"train {key}", _fmt(first), _fmt(last), "", _fmt(last - first, signed=True))
    return table


# -- compare_table ------------------------------------------------------------------------------


def shared_base(runs: Sequence[Run]) -> dict[str, Any] | None:
    """The step-0 evaluation every run starts from, when all of them logged the same one."""
    firsts = [run.evals[0] if run.evals else None for run in runs]
    if any(f is None or f.get("step") != 0 for f in firsts):
        return None
    keys = [k for k in firsts[0] if k.startswith("pass@")]
    same = all(metric_value(f.get(k)) == metric_value(firsts[0].get(k)) for f in firsts for k in keys)
    return firsts[0] if same else None


def compare_table(directories: Sequence[str | Path], *, labels: Sequence[str] | None = None) -> Table:
    """Several runs side by side: the shared base evaluation, each run's final one, and the training
    signals that say how each got there; with two runs, a column of second minus first.

    Evaluation rows (final evaluation): pass@k for each k every run logged, distinct correct answers
    per problem, and the peak pass@1 with its step. Training rows: the first step's entropy and the
    final one, the mean sign_balance and difficulty over the run, and, where logged, the mean alpha
    and delta and the share of steps with delta < 1, each as :func:`fade.testbed.summary.summarise`
    defines it (the final entropy: the mean over the last FINAL_SHARE of the steps).
    The base column holds the step-0 evaluation when every run logged the same one.
    """
    if not directories:
        raise ValueError("compare_table needs at least one run directory")
    runs = [load_run(d) for d in directories]
    names = list(labels) if labels is not None else compare_labels(runs, None)
    if len(names) != len(runs):
        raise ValueError(f"got {len(names)} labels for {len(runs)} runs")
    base = shared_base(runs)
    diff = len(runs) == 2
    table = Table(title_justify="left", caption_justify="left")
    table.add_column("metric", style="bold")
    table.add_column("base (step 0)", justify="right")
    for name in names:
        table.add_column(name, justify="right")
    if diff:
        table.add_column("second - first", justify="right")

    def row(label: str, base_value: float, values: list[float], *, signed_diff: bool = True) -> None:
        cells = [_fmt(base_value), *(_fmt(v) for v in values)]
        if diff:
            cells.append(_fmt(values[1] - values[0], signed=True) if signed_diff else "")
        table.add_row(label, *cells)

    finals = [run.evals[-1] if run.evals else {} for run in runs]
    ks = sorted(set.intersection(*(set(logged_ks(f)) for f in finals))) if all(finals) else []
    steps = [str(int(f["step"])) if "step" in f else "—" for f in finals]
    table.add_row("[dim]final eval at step[/]", "[dim]0[/]" if base else "", *(f"[dim]{s}[/]" for s in steps),
                  *([""] if diff else []))
    for k in ks:
        key = f"pass@{k}"
        row(key, metric_value(base.get(key)) if base else math.nan, [metric_value(f.get(key)) for f in finals])
    if all("distinct_correct" in f for f in finals):
        row("distinct correct answers", metric_value(base.get("distinct_correct")) if base else math.nan,
            [metric_value(f.get("distinct_correct")) for f in finals])
    peaks = [
        peak(metric_column(run.evals, "step"), metric_column(run.evals, "pass@1"))
        if run.evals
        else (math.nan, math.nan)
        for run in runs
    ]
    row("peak pass@1", math.nan, [value for value, _ in peaks])
    table.add_row(
        "[dim]peak at step[/]",
        "",
        *(f"[dim]{step:.0f}[/]" if math.isfinite(step) else "—" for _, step in peaks),
        *([""] if diff else []),
    )
    table.add_section()

    summaries = [summarise(run).scalars if run.metrics else {} for run in runs]

    def training_row(label: str, key: str, *, signed_diff: bool = True) -> None:
        row(label, math.nan, [s.get(key, math.nan) for s in summaries], signed_diff=signed_diff)

    def logged(key: str) -> bool:
        return any(math.isfinite(s.get(key, math.nan)) for s in summaries)

    row("train entropy, first step", math.nan, [first_finite(metric_column(run.metrics, "entropy")) for run in runs])
    training_row(f"train entropy, final (last {FINAL_SHARE:.0%} of steps)", "entropy_final")
    training_row("mean sign_balance", "sign_balance_mean")
    training_row("mean difficulty", "difficulty_mean")
    for key in ("alpha", "delta"):
        if logged(f"{key}_mean"):
            training_row(f"mean {key}", f"{key}_mean", signed_diff=False)
    if logged("delta_below1"):
        training_row("share of steps with delta < 1", "delta_below1", signed_diff=False)
    table.caption = (
        "final eval: the last evaluation of each run; base: the step-0 evaluation all runs share"
        + ("" if base else " (the runs logged different ones, or none)")
    )
    return table


