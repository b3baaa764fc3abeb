"""A training run's logs: the keys the trainer writes, and the one reader of a run directory.

A run directory holds ``metrics.jsonl`` (one object per training step), ``eval.jsonl`` (one
object per evaluation, step 0 = the base model) and optionally ``run.json`` (its configuration),
as the README's testbed section lists them. The trainer writes the two logs gzip-compressed
(``metrics.jsonl.gz``, ``eval.jsonl.gz``: see :class:`fade.testbed.checkpoint.JsonlLog`); runs
written before hold them plain, and every reader takes either (:func:`log_path` finds the one
there). The key tuples below are the schema of those records, shared by the trainer that writes
them and every reader. A log is read by :mod:`fade.jsonl` (:func:`read_log`): a torn last line (a
run killed mid-write) is skipped with a warning, any other bad line raises naming the file and
line. :func:`load_run` reads a whole directory, keeping the last record of a step a resumed run
repeated; :func:`metric_column` turns one key into a float array with NaN for gaps. Plotting and
tables live in :mod:`fade.testbed.report`; this module imports neither matplotlib nor rich, so the
experiments read runs without them.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from numbers import Real
from pathlib import Path
from typing import Any

import numpy as np

from fade import jsonl
from fade.adaptive import SCHEDULE
from fade.jsonl import COMPRESSED
from fade.mass import DIAGNOSTICS

__all__ = [
    "COMPRESSED",
    "CONFIG_FILE",
    "DIAGNOSTICS",
    "ENTROPY_FORMULA_KEYS",
    "ENTROPY_TERM_KEYS",
    "EVAL_FILE",
    "EVAL_KEYS",
    "METRICS_FILE",
    "LOSS_KEYS",
    "METRIC_KEYS",
    "PER_BUCKET_KEYS",
    "POLICY_KEYS",
    "REWARD_KEYS",
    "SAMPLING_KEYS",
    "SCHEDULE",
    "STEP",
    "TIMING_KEYS",
    "UPDATE_KEYS",
    "Run",
    "bucket_key",
    "load_run",
    "log_path",
    "logged_buckets",
    "logged_ks",
    "metric_column",
    "metric_columns",
    "metric_value",
    "pass_key",
    "peak_eval_index",
    "read_json_object",
    "read_log",
]

METRICS_FILE, EVAL_FILE, CONFIG_FILE = "metrics.jsonl", "eval.jsonl", "run.json"
# The suffix of a compressed log (fade.jsonl.COMPRESSED): the trainer writes ``METRICS_FILE + COMPRESSED``
# and ``EVAL_FILE + COMPRESSED``; a run written before holds the plain files, which readers still read.

# -- the schema ---------------------------------------------------------------------------------

#: The key every record of both logs is indexed by.
STEP = "step"
#: The batch's rewards: mean reward and the fraction of rollouts that succeed as the estimator reads
#: the rewards (a reward of 1, or at or above its ``success_threshold``).
REWARD_KEYS = ("reward_mean", "solve_rate")
#: Logged again per difficulty bucket b of the step's prompts, as ``bucket_key(key, b)``.
PER_BUCKET_KEYS = REWARD_KEYS
#: The policy after the update: mean token entropy (of the batch, before the update), the norms
#: (``grad_norm`` the mean over the step's optimizer steps of the gradient norm before clipping,
#: ``grad_norm_last`` the last one's), and the rank-1 share of the output head's change since step 0.
POLICY_KEYS = ("entropy", "param_norm", "grad_norm", "grad_norm_last", "rank1_share")
#: The first-order entropy formula's terms (docs/method.md, section 4), measured on the
#: update batch before the update: dH ~ -eta [(m_S - m_F) H + Cov(A, log pi)].
#: ``cov_adv_logp`` = mean_t(A_t lp_t) - mean_t(A_t) mean_t(lp_t), over every completion token t
#: of the batch, A_t the advantage of t's rollout and lp_t the sampled token's log-prob under the
#: pre-update policy at the sampling temperature (float64; :func:`fade.testbed.trainer.token_covariance`).
#: ``mass_entropy_term`` = (positive_mass - negative_mass) * entropy, the step's logged values
#: (the masses are rollout means, the entropy a token mean).
#: ``entropy_drive`` = -(mass_entropy_term + cov_adv_logp), the bracket the predicted entropy
#: change dH / eta equals: positive predicts entropy rising, negative falling.
ENTROPY_FORMULA_KEYS = ("cov_adv_logp", "mass_entropy_term", "entropy_drive")
#: The metrics the policy losses of :mod:`fade.losses` report (every registered loss's
#: ``spec.metrics`` is among them; docs/losses.md says what each measures): ``clip_fraction`` the
#: share of tokens where the ratio clip binds, ``clip_fraction_lower`` where the dual clip binds,
#: ``cov_clip_fraction`` the share Clip-Cov cuts, ``ppo_kl`` the mean of old minus new log-prob,
#: ``ppo_kl_abs`` its absolute value's mean. Each is a token mean over the tokens each optimizer
#: step's loss saw, weighted by them over the step's optimizer steps (``ppo_clip`` leaves rows
#: whose advantages are all 0 out, as they add nothing to it); null where the loss does not report it.
LOSS_KEYS = ("clip_fraction", "clip_fraction_lower", "cov_clip_fraction", "ppo_kl", "ppo_kl_abs")
#: The entropy term (null without one): ``entropy_coef`` the coefficient it applied and
#: ``update_entropy`` the token-mean entropy of the policy being updated that it observed, each
#: weighted as LOSS_KEYS over the optimizer steps.
ENTROPY_TERM_KEYS = ("entropy_coef", "update_entropy")
#: The update: LOSS_KEYS, KL to the base policy (null without a KL term), ENTROPY_TERM_KEYS,
#: completion tokens of the batch trained on, learning rate.
UPDATE_KEYS = (*LOSS_KEYS, "kl", *ENTROPY_TERM_KEYS, "completion_tokens", "lr")
#: Dynamic sampling (null without ``filter_zero_variance``): ``filtered_share``, the share of the
#: first draw's groups whose raw rewards all agree (dropped); ``sample_draws``, the draws of
#: prompts the step made; ``groups_kept``, the groups it trained on (fewer than prompts_per_step
#: when the draws ran out, 0 when the step skipped its update). The reward keys are the first
#: draw's, the rest the batch trained on.
SAMPLING_KEYS = ("filtered_share", "sample_draws", "groups_kept")
#: Seconds spent sampling, on the policy pass (the old log-probs and entropy: taken from sampling, or
#: recomputed), computing advantages, updating, and on the whole step; the rest of a step is the
#: verification and the step's bookkeeping. Logs written before ``policy_seconds`` lack it.
TIMING_KEYS = ("sample_seconds", "policy_seconds", "advantage_seconds", "update_seconds", "step_seconds")
#: Every key of a ``metrics.jsonl`` record besides the per-bucket ones, in the order the trainer
#: writes them; SCHEDULE (FADE's alpha, delta, p_hat, h_hat, h_star) only when the estimator
#: reports it, DIAGNOSTICS (the batch's gradient mass, :func:`fade.decompose`) and
#: ENTROPY_FORMULA_KEYS always (null, with the update's keys, in a step whose filter kept nothing).
METRIC_KEYS = (
    STEP, *REWARD_KEYS, *POLICY_KEYS, *DIAGNOSTICS, *ENTROPY_FORMULA_KEYS, *UPDATE_KEYS, *SCHEDULE, *SAMPLING_KEYS,
    *TIMING_KEYS,
)
#: The keys of an ``eval.jsonl`` record besides ``pass_key(k)`` for each k and the per-bucket
#: ``bucket_key(pass_key(k), b)`` and ``bucket_key("distinct_correct", b)``.
EVAL_KEYS = (STEP, "distinct_correct", "greedy", "entropy", "n_prompts", "n_samples")


def bucket_key(key: str, bucket: int) -> str:
    """The key of ``key`` restricted to difficulty bucket ``bucket``: ``solve_rate/d3``."""
    return f"{key}/d{bucket}"


def pass_key(k: int) -> str:
    """The key of pass@k in an evaluation record: ``pass@16``."""
    return f"pass@{k}"


_PASS_KEY = re.compile(r"^pass@(\d+)$")


def logged_ks(keys: Iterable[str]) -> list[int]:
    """The k of every ``pass@k`` among ``keys``, ascending."""
    return sorted(int(m.group(1)) for m in map(_PASS_KEY.match, keys) if m)


def logged_buckets(keys: Iterable[str], key: str) -> list[int]:
    """The buckets b of every ``bucket_key(key, b)`` among ``keys``, ascending."""
    pattern = re.compile(rf"^{re.escape(key)}/d(\d+)$")
    return sorted(int(m.group(1)) for m in map(pattern.match, keys) if m)


# -- reading ------------------------------------------------------------------------------------


def log_path(directory: str | Path, name: str) -> Path | None:
    """The file that holds the log ``name`` (``METRICS_FILE``, ``EVAL_FILE``) in ``directory``: the
    compressed one the trainer writes, else the plain one of a run written before; None when
    neither is there. Where both are (a resume that converted a plain log was killed before it
    removed it), the compressed one is the log."""
    directory = Path(directory)
    for candidate in (directory / (name + COMPRESSED), directory / name):
        if candidate.is_file():
            return candidate
    return None


def _numbered_records(path: str | Path, stacklevel: int = 3) -> list[tuple[int, dict]]:
    """(1-based line number, object) for each non-blank line of a log, compressed or plain; a torn
    last line (a run killed mid-write) is skipped with a RuntimeWarning, any other line that is not
    a JSON object raises ValueError naming the file and the line."""
    return list(jsonl.read(path, torn="skip-with-warning", stacklevel=stacklevel).records())


def read_log(path: str | Path) -> list[dict]:
    """The records of the log file ``path`` (``metrics.jsonl``, ``eval.jsonl``; gzip-compressed when
    its name ends in ``.gz``), one per non-blank line, in file order: :func:`_numbered_records`."""
    return [record for _, record in _numbered_records(path)]


def read_json_object(path: str | Path) -> dict[str, Any]:
    """The JSON object in the file ``path`` (``run.json``, ``done.json``); ValueError naming the
    file when it is not valid JSON or holds something other than an object."""
    path = Path(path)
    try:
        value = json.loads(path.read_text())
    except ValueError as err:
        raise ValueError(f"{path} is not valid JSON ({err})") from None
    if not isinstance(value, dict):
        raise ValueError(f"{path} holds a JSON {type(value).__name__}, expected an object")
    return value


def _last_per_step(path: Path) -> list[dict]:
    """Records keyed by ``step``, the last one kept for a repeated step, in step order.

    A run resumed from a checkpoint repeats the steps after that checkpoint; the later records
    are the ones the surviving run actually took.
    """
    by_step: dict[int, dict] = {}
    for lineno, record in _numbered_records(path):
        step = record.get(STEP)
        if isinstance(step, float) and step.is_integer():
            step = int(step)
        if not isinstance(step, int) or isinstance(step, bool):
            raise ValueError(f"{path}: line {lineno} has step={step!r}, expected an integer")
        by_step[step] = record
    return [by_step[s] for s in sorted(by_step)]


@dataclass
class Run:
    """One training run read back: its configuration and its per-step and per-eval records,
    each list in step order with one record per step."""

    directory: Path
    config: dict[str, Any] = field(default_factory=dict)
    metrics: list[dict] = field(default_factory=list)
    evals: list[dict] = field(default_factory=list)


def load_run(directory: str | Path) -> Run:
    """Read the run in ``directory``: ``metrics.jsonl`` (required), ``eval.jsonl`` and
    ``run.json`` (optional; an absent one gives no evals and an empty config); each log
    compressed or plain (:func:`log_path`)."""
    directory = Path(directory)
    metrics_path = log_path(directory, METRICS_FILE)
    if metrics_path is None:
        raise ValueError(
            f"{directory} is not a run directory: it has no {METRICS_FILE} (nor {METRICS_FILE}{COMPRESSED})"
        )
    config_path = directory / CONFIG_FILE
    config = read_json_object(config_path) if config_path.is_file() else {}
    eval_path = log_path(directory, EVAL_FILE)
    evals = _last_per_step(eval_path) if eval_path is not None else []
    return Run(directory=directory, config=config, metrics=_last_per_step(metrics_path), evals=evals)


# -- columns ------------------------------------------------------------------------------------


def metric_value(value: Any) -> float:
    """A logged value as a float: numbers as they are; null, absent or non-numbers as NaN (a gap)."""
    if isinstance(value, Real) and not isinstance(value, bool):
        return float(value)
    return math.nan


def metric_column(records: Sequence[dict], key: str) -> np.ndarray:
    """One logged metric over ``records`` as floats, NaN where a record lacks it or holds a non-number."""
    values = [r.get(key) for r in records]
    try:
        # numpy reads None as NaN; this is the path every well-formed log takes, and it is an
        # order of magnitude faster than converting value by value on a long run. Strings
        # ("1.5" would parse) and booleans are not logged numbers, so they take the slow path.
        column = np.array(values, dtype=float)
    except (TypeError, ValueError):
        column = None
    if column is None or column.shape != (len(records),) or any(isinstance(v, (bool, str)) for v in values):
        column = np.fromiter(map(metric_value, values), dtype=float, count=len(values))
    return column


def metric_columns(records: Sequence[dict]) -> dict[str, np.ndarray]:
    """Each key with at least one finite value, as a float array aligned with the records."""
    keys: dict[str, None] = {}
    for record in records:
        keys.update(dict.fromkeys(record))
    columns = {}
    for key in keys:
        values = metric_column(records, key)
        if np.isfinite(values).any():
            columns[key] = values
    return columns


def peak_eval_index(pass1: np.ndarray) -> int | None:
    """Index of the first evaluation at peak pass@1 (None when no pass@1 is finite)."""
    # The earliest step reaching the peak: where a checkpoint would be selected.
    if not np.isfinite(pass1).any():
        return None
    return int(np.nanargmax(pass1))
