"""The paper's claims measured on a sweep's runs: per-run numbers, mean and spread over seeds, and
a verdict computed from them by one stated rule.

:func:`summarise` reads one finished run (``metrics.jsonl``, ``eval.jsonl``, ``done.json``) into a
:class:`RunSummary` of the numbers the claims use: the entropy drop rate over the first third of
the run, the final entropy and rank-1 share of the output head's update, the mean effective
sample fraction, the peak pass@1 and its step, the final pass@k for every k, pass@1 gains per
difficulty bucket, the per-block terms of the first-order entropy check, and (where the trainer
logged them) the entropy formula's drive and FADE's schedule. :func:`evaluate` groups runs by task
and estimator identity, takes mean and standard deviation over seeds (:class:`Stat`, which keeps
the seed of each value), and answers each claim with tables and verdict lines.
:func:`design_checks` answers what must hold before the claims can be read at all: that the
balanced baselines peak before the end of the run (the regime is calibrated), and that FADE's
sign knob acts (delta < 1 on a real share of the steps).

Every comparison goes through :func:`compare`, which picks the rule by the number of seeds the two
sides share. With at least :data:`MIN_PAIRED_SEEDS` (5) shared seeds, the *paired rule*: runs of
one seed share the base policy and the prompt stream, so the claim that X exceeds Y is judged on
the per-seed differences X_s - Y_s, by the bootstrap 95% interval of their mean
(:mod:`fade.experiments.stats`): *supported* when the interval lies above 0, *contradicted* when
it lies below 0, *unresolved* otherwise (with the interval's half-width printed). Against a
constant the same rule runs on X_s - c. With fewer shared seeds, the *spread rule* of the 3-seed
sweeps: *supported* when X's seed mean is above Y's and the intervals mean +- std over seeds do
not overlap; *not supported* when the opposite ordering holds with non-overlapping intervals;
*inconclusive (spread overlaps)* otherwise; fewer than :data:`MIN_SEEDS` seeds on either side
gives *inconclusive (fewer than 3 seeds)*. A claim made of several comparisons is supported when
all are, contradicted (not supported) when any comparison contradicts it, and unresolved
(inconclusive) otherwise.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from fade.specs import format_spec, parse_spec
from fade.testbed.runlog import (
    DIAGNOSTICS,
    ENTROPY_FORMULA_KEYS,
    METRICS_FILE,
    SCHEDULE,
    bucket_key,
    load_run,
    logged_buckets,
    logged_ks,
    metric_column,
    moving_average,
    pass_key,
    peak_eval_index,
    read_json_object,
)

from .presets import (
    ABLATIONS,
    BALANCED,
    FADE,
    FAILURE_BIASED,
    H_STAR_LEVELS,
    POWER_LEVELS,
    STATIC_BASELINES,
    SUCCESS_BIASED,
    Preset,
    RunSpec,
    Tuning,
    canonical_spec,
    identity,
)
from .stats import CONTRADICTED, MIN_PAIRED_SEEDS, SUPPORTED, UNRESOLVED, PairedVerdict, paired_verdict

__all__ = [
    "CONTRADICTED",
    "FEW_SEEDS",
    "MASS_RTOL",
    "MIN_PAIRED_SEEDS",
    "MIN_SEEDS",
    "NOT_MEASURED",
    "NOT_SUPPORTED",
    "OVERLAP",
    "SUPPORTED",
    "UNRESOLVED",
    "CURVES",
    "ENGAGED_FADE",
    "REGIME_CALIBRATED",
    "REGIME_NOT_CALIBRATED",
    "REGIME_PEAK_FRACTION",
    "REGIME_RISE",
    "REGIME_SMOOTHING",
    "REQUIREMENT_MET",
    "REQUIREMENT_NOT_MET",
    "SIGN_CLASSES",
    "SIGN_KNOB_SHARE",
    "ClaimSection",
    "RunSummary",
    "Stat",
    "Verdict",
    "choose_tuned",
    "combine",
    "compare",
    "design_checks",
    "drive_blocks",
    "early_steps",
    "entropy_blocks",
    "evaluate",
    "formula_terms",
    "mass_imbalance",
    "sign_class",
    "summarise",
]

DONE_FILE = "done.json"

# The spread rule's words (fewer than MIN_PAIRED_SEEDS shared seeds); the paired rule's are
# SUPPORTED, CONTRADICTED and UNRESOLVED from .stats.
NOT_SUPPORTED = "not supported"
OVERLAP = "inconclusive (spread overlaps)"
FEW_SEEDS = "inconclusive (fewer than 3 seeds)"
NOT_MEASURED = "not measured"
#: Seeds needed on each side of a comparison before the spread rule gives a verdict.
MIN_SEEDS = 3
#: Steps per block in the first-order entropy check: long enough to average the batch-to-batch
#: noise of the entropy, short enough to leave many blocks per run.
ENTROPY_BLOCK = 10

#: The per-step metrics a summary keeps as curves: the figures draw them, the claims average them.
#: Runs logged before a key existed read it as NaN throughout, and the claims that need it skip them.
CURVES = ("entropy", "rank1_share", *DIAGNOSTICS, *ENTROPY_FORMULA_KEYS, "reward_mean", *SCHEDULE, "step_seconds")

#: The regime check: a balanced baseline (grpo, dr_grpo) whose pass@1 peaks later than this fraction
#: of its run is still climbing, and a regime where it does has no decline for FADE to prevent.
REGIME_PEAK_FRACTION = 0.8
#: The regime check reads the peak of pass@1 averaged over this many consecutive evaluations: from
#: one evaluation to the next pass@1 moves by more than its evaluation noise (the policy changes
#: under small batches), so a single evaluation's maximum is a poor peak (docs/results/paper/PILOT.md).
REGIME_SMOOTHING = 3
#: The regime table also shows when a baseline had made this share of its smoothed gain: on a flat,
#: wandering plateau the peak can fall anywhere, while this step says when the gain stopped.
REGIME_RISE = 0.9
REGIME_CALIBRATED, REGIME_NOT_CALIBRATED = "regime calibrated", "regime not calibrated"
#: FADE's sign knob engages when delta < 1; the paper sweep needs an arm where it does on more than
#: this share of the steps (project issue 12), or the sign half of FADE was never tested.
SIGN_KNOB_SHARE = 0.3
REQUIREMENT_MET, REQUIREMENT_NOT_MET = "requirement met", "requirement not met"
#: The collapse check: a run whose last evaluation's pass@1 is below this fraction of its base
#: evaluation's collapsed (a diverged step size, or an estimator that destroys the policy); the
#: claims still count it, and the check names it so that no verdict is read without knowing.
COLLAPSE_FRACTION = 0.5
#: The FADE arm whose sign knob acts from the start (H* at the first entropy): the reference the
#: ablations without a target of their own are measured against.
ENGAGED_FADE = "fade:h_star_ratio=1.0"
#: A run's side of the sign axis, by the sign of its mean mass imbalance m_S - m_F.
SIGN_CLASSES = ("success-heavy", "failure-heavy", "centred")


def early_steps(steps: int) -> int:
    """The window of the entropy drop rate: the first third of the run (at least 2 steps)."""
    return max(2, math.ceil(steps / 3))


# -- one run ------------------------------------------------------------------------------------


@dataclass
class RunSummary:
    """The numbers of one finished run that the claims use, with the curves the figures draw."""

    run: RunSpec
    identity: tuple
    directory: Path
    steps: np.ndarray
    curves: dict[str, np.ndarray]
    eval_steps: np.ndarray
    pass1: np.ndarray
    base: dict[str, float]
    final: dict[str, float]
    scalars: dict[str, float]
    timing: dict[str, float]

    @property
    def seed(self) -> int:
        return self.run.seed

    @property
    def task(self) -> str:
        return self.run.task

    def passk(self, record: dict[str, float]) -> dict[int, float]:
        values = {k: record[pass_key(k)] for k in logged_ks(record)}
        return {k: v for k, v in values.items() if math.isfinite(v)}

    def buckets(self) -> list[int]:
        return logged_buckets(self.final, "pass@1")


def _finite_mean(values: np.ndarray) -> float:
    values = values[np.isfinite(values)]
    return float(values.mean()) if values.size else math.nan


def ols_slope(x: np.ndarray, y: np.ndarray) -> float:
    """Least-squares slope of y on x over the finite pairs (nan with fewer than 2)."""
    keep = np.isfinite(x) & np.isfinite(y)
    x, y = x[keep], y[keep]
    if x.size < 2 or np.ptp(x) == 0:
        return math.nan
    xc = x - x.mean()
    return float((xc * (y - y.mean())).sum() / (xc * xc).sum())


#: Imbalances below this fraction of the batch's total mass are rounding, not weighting: the logged
#: masses are float32 sums, so a centred estimator's m_S - m_F is ~1e-9, not 0.
MASS_RTOL = 1e-5


def mass_imbalance(m_s: np.ndarray, m_f: np.ndarray) -> np.ndarray:
    """m_S - m_F per step, with differences inside float32 rounding of the masses set to exactly 0.

    Without this, a run of a centred estimator (grpo, rloo, maxrl, ...) carries an imbalance of
    ~1e-9 whose sign is noise, and correlations over such runs measure that noise.
    """
    m_s, m_f = np.asarray(m_s, float), np.asarray(m_f, float)
    diff = m_s - m_f
    return np.where(np.abs(diff) <= MASS_RTOL * (np.abs(m_s) + np.abs(m_f)), 0.0, diff)


def entropy_blocks(steps: np.ndarray, entropy: np.ndarray, m_s: np.ndarray, m_f: np.ndarray, block: int = ENTROPY_BLOCK):
    """(predicted, observed) entropy changes between consecutive blocks of ``block`` steps.

    First order, the update at step t moves the entropy by eta [(m_S - m_F) H - Cov(A, log pi)]
    (the formula as first written here; docs/method.md, section 4, corrects its sign). Observed:
    the mean entropy of block j + 1 minus that of block j, which spans the updates from the
    centre of block j to the centre of block j + 1. Predicted: the
    sum of (m_S - m_F) H over those same updates; the covariance term is not logged, so it is
    left out, and eta (Adam's effective step is not the learning rate) is left to the fit.
    """
    g = mass_imbalance(m_s, m_f) * entropy
    predicted, observed = [], []
    for this, nxt, span in _block_spans(len(steps), block):
        obs = _finite_mean(entropy[nxt]) - _finite_mean(entropy[this])
        pred = float(np.nansum(g[span]))
        if math.isfinite(obs) and math.isfinite(pred):
            predicted.append(pred)
            observed.append(obs)
    return np.array(predicted), np.array(observed)


def _block_spans(n: int, block: int) -> Iterator[tuple[slice, slice, slice]]:
    """(block j, block j + 1, the updates from the centre of j to the centre of j + 1) for each pair
    of consecutive whole blocks of ``block`` steps among ``n``."""
    for j in range(n // block - 1):
        yield (slice(j * block, (j + 1) * block), slice((j + 1) * block, (j + 2) * block),
               slice(j * block + block // 2, (j + 1) * block + block // 2))


def drive_blocks(entropy: np.ndarray, drive: np.ndarray, block: int = ENTROPY_BLOCK) -> tuple[np.ndarray, np.ndarray]:
    """(predicted, observed) per-step entropy change between consecutive blocks of ``block`` steps.

    The corrected first-order formula (docs/method.md, section 4) is dH ~ eta * drive with
    drive = -[(m_S - m_F) H + Cov(A, log pi)], logged per step as ``entropy_drive``. Observed: the
    mean entropy of block j + 1 minus that of block j, per update between their centres.
    Predicted: the mean drive over those same updates (its finite values). ``drive`` may be either
    term alone (-(m_S - m_F) H, -Cov(A, log pi)) to ask how much each explains. A span without a
    finite drive (a key the run did not log) gives no pair.
    """
    predicted, observed = [], []
    for this, nxt, span in _block_spans(len(entropy), block):
        obs = (_finite_mean(entropy[nxt]) - _finite_mean(entropy[this])) / block
        pred = _finite_mean(drive[span])
        if math.isfinite(obs) and math.isfinite(pred):
            predicted.append(pred)
            observed.append(obs)
    return np.array(predicted), np.array(observed)


def formula_terms(curves: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The entropy formula's drive and its two terms per step, each signed so that a positive value
    predicts rising entropy: ``drive`` (as logged), ``mass`` = -(m_S - m_F) H with float32
    rounding of a centred imbalance read as 0 (:func:`mass_imbalance`), ``cov`` = -Cov(A, log pi).
    NaN where the run did not log the formula."""
    logged = np.isfinite(curves["mass_entropy_term"])
    mass = -mass_imbalance(curves["positive_mass"], curves["negative_mass"]) * curves["entropy"]
    return {"drive": curves["entropy_drive"], "mass": np.where(logged, mass, math.nan), "cov": -curves["cov_adv_logp"]}


#: The formula's terms in the report's words, keyed as :func:`formula_terms` returns them.
FORMULA_TERMS = {"drive": "drive", "mass": "-(m_S - m_F) H", "cov": "-Cov(A, log pi)"}


def _term_key(name: str) -> str:
    return "drive" if name == "drive" else f"drive_{name}"


def sign_class(summary: RunSummary) -> str:
    """The run's side of the sign axis (:data:`SIGN_CLASSES`): ``centred`` when m_S = m_F in every
    batch up to float rounding, else by the sign of the mean imbalance m_S - m_F over the run."""
    mean = summary.scalars.get("mass_imbalance_mean", math.nan)
    if not math.isfinite(mean) or mean == 0:
        return "centred"
    return "success-heavy" if mean > 0 else "failure-heavy"


def _smoothed_peak(eval_steps: np.ndarray, pass1: np.ndarray,
                   window: int = REGIME_SMOOTHING) -> tuple[float, float, float]:
    """(step, value) of the first peak of pass@1's centred moving average over ``window`` evaluations,
    read only where the window is full, and the first step where that average has made
    :data:`REGIME_RISE` of its gain over the first evaluation (nan when it never rises above it);
    all nan without a finite pass@1.

    A window shrunk at either end averages fewer evaluations, so it is noisier, and on a flat but
    noisy plateau it would win the maximum more often than its share: the last evaluation would look
    like a late peak by chance. With fewer evaluations than ``window``, every point counts."""
    keep = np.isfinite(pass1)
    if not keep.any():
        return math.nan, math.nan, math.nan
    values, steps = pass1[keep], eval_steps[keep]
    smooth = moving_average(values, window)
    lo, hi = window // 2, len(values) - (window - 1) // 2
    if hi <= lo:
        lo, hi = 0, len(values)
    best = lo + peak_eval_index(smooth[lo:hi])
    gain = smooth[best] - values[0]
    rise = math.nan
    if gain > 0:
        rise = float(steps[lo + int(np.argmax(smooth[lo:hi] - values[0] >= REGIME_RISE * gain))])
    return float(steps[best]), float(smooth[best]), rise


def _numbers(record: dict[str, Any]) -> dict[str, float]:
    return {k: float(v) for k, v in record.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}


def summarise(run: RunSpec, out: str | Path) -> RunSummary:
    """Read the finished run ``run`` of the sweep in ``out`` into a :class:`RunSummary`."""
    directory = run.directory(out)
    loaded = load_run(directory)
    metrics = loaded.metrics
    if not metrics:
        raise ValueError(f"{directory}: {METRICS_FILE} has no complete record")
    steps = metric_column(metrics, "step")
    curves = {k: metric_column(metrics, k) for k in CURVES}
    evals = loaded.evals
    eval_steps = metric_column(evals, "step") if evals else np.array([])
    pass1 = metric_column(evals, "pass@1") if evals else np.array([])
    base = _numbers(evals[0]) if evals else {}
    final = _numbers(evals[-1]) if evals else {}

    n = len(steps)
    early = steps <= early_steps(run.steps)
    entropy = curves["entropy"]
    scalars: dict[str, float] = {
        "entropy_first": _finite_mean(entropy[: min(5, n)]),
        "entropy_final": _finite_mean(entropy[-max(1, n // 10):]),
        "entropy_drop_rate": -ols_slope(steps[early], entropy[early]),
        "rank1_final": _finite_mean(curves["rank1_share"][-1:]),
        "esf_mean": _finite_mean(curves["effective_sample_fraction"]),
        "difficulty_mean": _finite_mean(curves["difficulty"]),
        "sign_balance_mean": _finite_mean(curves["sign_balance"]),
        "alpha_mean": _finite_mean(curves["alpha"]),
        "delta_mean": _finite_mean(curves["delta"]),
    }
    best = peak_eval_index(pass1) if pass1.size else None
    scalars["peak_pass1"] = float(pass1[best]) if best is not None else math.nan
    scalars["peak_step"] = float(eval_steps[best]) if best is not None else math.nan
    scalars["base_pass1"] = base.get("pass@1", math.nan)
    scalars["final_pass1"] = final.get("pass@1", math.nan)
    ks = logged_ks(final)
    for k in ks:
        scalars[pass_key(k)] = final[pass_key(k)]
    scalars["passk_mean"] = float(np.mean([final[pass_key(k)] for k in ks])) if ks else math.nan
    for b in logged_buckets(final, "pass@1"):
        key = bucket_key("pass@1", b)
        scalars[f"gain/d{b}"] = final[key] - base.get(key, math.nan)
    imbalance = mass_imbalance(curves["positive_mass"], curves["negative_mass"])
    scalars["mass_imbalance_mean"] = _finite_mean(imbalance)
    scalars["peak_fraction"] = scalars["peak_step"] / run.steps if run.steps else math.nan
    scalars["smoothed_peak_step"], scalars["smoothed_peak_pass1"], scalars["rise_step"] = _smoothed_peak(eval_steps, pass1)
    scalars["smoothed_peak_fraction"] = scalars["smoothed_peak_step"] / run.steps if run.steps else math.nan
    delta = curves["delta"][np.isfinite(curves["delta"])]
    scalars["delta_below1"] = float((delta < 1).mean()) if delta.size else math.nan
    # The entropy formula with both terms: the early change per step against the early mean drive
    # (compared across runs), and the per-block change against the block-mean drive (within a run).
    scalars["entropy_change_early"] = -scalars["entropy_drop_rate"]
    for name, term in formula_terms(curves).items():
        scalars[f"{_term_key(name)}_early"] = _finite_mean(term[early])
        scalars[f"{_term_key(name)}_r_blocks"] = pearson(*drive_blocks(entropy, term))
    early_g = imbalance * entropy
    scalars["entropy_predicted_early"] = float(np.nansum(early_g[early][:-1])) if early.sum() > 1 else math.nan
    span = float(steps[early][-1] - steps[early][0]) if early.any() else math.nan
    scalars["entropy_observed_early"] = -scalars["entropy_drop_rate"] * span

    timing: dict[str, float] = {"train_seconds": float(np.nansum(curves["step_seconds"]))}
    done_path = directory / DONE_FILE
    if done_path.is_file():
        done = read_json_object(done_path)
        for key in ("cpu_seconds", "wall_seconds"):
            if isinstance(done.get(key), (int, float)):
                timing[key] = float(done[key])
        timing["resumed"] = float(bool(done.get("resumed")))
    return RunSummary(
        run=run, identity=identity(run.estimator), directory=directory, steps=steps, curves=curves,
        eval_steps=eval_steps, pass1=pass1, base=base, final=final, scalars=scalars, timing=timing,
    )


# -- statistics and verdicts --------------------------------------------------------------------


@dataclass(frozen=True)
class Stat:
    """Mean and sample standard deviation over seeds of the finite values given; ``seeds`` (when
    known) names the seed of each value, which lets :func:`compare` pair two estimators by seed."""

    values: tuple[float, ...]
    seeds: tuple[int, ...] = ()

    @classmethod
    def of(cls, values: Iterable[float]) -> Stat:
        return cls(tuple(float(v) for v in values if v is not None and math.isfinite(float(v))))

    @classmethod
    def by_seed(cls, pairs: Iterable[tuple[int, float]]) -> Stat:
        """The finite values of (seed, value) pairs, each kept with its seed."""
        kept = [(int(seed), float(v)) for seed, v in pairs if v is not None and math.isfinite(float(v))]
        return cls(tuple(v for _, v in kept), tuple(seed for seed, _ in kept))

    @property
    def n(self) -> int:
        return len(self.values)

    @property
    def mean(self) -> float:
        return float(np.mean(self.values)) if self.values else math.nan

    @property
    def std(self) -> float:
        return float(np.std(self.values, ddof=1)) if self.n >= 2 else math.nan

    def per_seed(self) -> dict[int, float] | None:
        """{seed: value}, or None where the seeds are unknown or one seed holds two values."""
        if len(self.seeds) != self.n or len(set(self.seeds)) != self.n:
            return None
        return dict(zip(self.seeds, self.values))

    def text(self, digits: int = 3, scale: float = 1.0) -> str:
        if not self.values:
            return "—"
        mean = self.mean * scale
        if self.n < 2:
            return f"{mean:.{digits}f}"
        return f"{mean:.{digits}f} ± {self.std * scale:.{digits}f}"


@dataclass(frozen=True)
class Verdict:
    """One comparison's outcome (one of the module's verdict strings), the numbers behind it, and,
    under the paired rule, the interval of the mean paired difference it was read from."""

    outcome: str
    detail: str
    interval: PairedVerdict | None = None


def _band(x: Stat | float) -> tuple[float, float]:
    if isinstance(x, Stat):
        spread = x.std if x.n >= 2 else 0.0
        return x.mean - spread, x.mean + spread
    return float(x), float(x)


def _describe(x: Stat | float, digits: int) -> str:
    return x.text(digits) + f" (n={x.n})" if isinstance(x, Stat) else f"{x:.{digits}g}"


def paired_seeds(a: Stat, b: Stat | float) -> tuple[dict[int, float], dict[int, float]] | None:
    """The two sides as {seed: value} over the seeds they share, or None where they cannot be
    paired (a side's seeds unknown). Against a constant every value of ``a`` pairs with it."""
    if not isinstance(b, Stat):
        a_values = a.per_seed() or dict(enumerate(a.values))
        return a_values, dict.fromkeys(a_values, float(b))
    a_values, b_values = a.per_seed(), b.per_seed()
    if a_values is None or b_values is None:
        return None
    shared = sorted(set(a_values) & set(b_values))
    return {s: a_values[s] for s in shared}, {s: b_values[s] for s in shared}


def compare(a: Stat, b: Stat | float, *, greater: bool, digits: int = 3) -> Verdict:
    """Verdict on "a > b" (``greater``) or "a < b"; ``b`` may be a constant. The rule is picked by
    the seeds the sides share (module docstring): the paired bootstrap interval from
    :data:`MIN_PAIRED_SEEDS` shared seeds on, the mean +- std spread rule below."""
    detail = f"{_describe(a, digits)} vs {_describe(b, digits)}"
    n_b = b.n if isinstance(b, Stat) else a.n
    if a.n == 0 or n_b == 0:
        return Verdict(NOT_MEASURED, detail)
    pairs = paired_seeds(a, b)
    if pairs is not None and len(pairs[0]) >= MIN_PAIRED_SEEDS:
        interval = paired_verdict(*pairs, greater=greater)
        label = "paired difference" if isinstance(b, Stat) else "difference"
        return Verdict(interval.verdict, f"{detail}; {label} {interval.text(digits)}", interval)
    if min(a.n, n_b) < MIN_SEEDS:
        return Verdict(FEW_SEEDS, detail)
    (lo_a, hi_a), (lo_b, hi_b) = _band(a), _band(b)
    holds, opposite = (lo_a > hi_b, hi_a < lo_b) if greater else (hi_a < lo_b, lo_a > hi_b)
    if holds:
        return Verdict(SUPPORTED, detail)
    if opposite:
        return Verdict(NOT_SUPPORTED, detail)
    return Verdict(OVERLAP, detail)


def combine(verdicts: Sequence[Verdict]) -> str:
    """The outcome of a claim made of several comparisons (see the module docstring), in either
    rule's words: a contradiction under the paired rule outranks one under the spread rule, and
    an undecided part keeps the spread rule's words when any part used them."""
    outcomes = [v.outcome for v in verdicts if v.outcome != NOT_MEASURED]
    if not outcomes:
        return NOT_MEASURED
    for against in (CONTRADICTED, NOT_SUPPORTED):
        if against in outcomes:
            return against
    if all(o == SUPPORTED for o in outcomes):
        return SUPPORTED
    for undecided in (FEW_SEEDS, OVERLAP):
        if undecided in outcomes:
            return undecided
    return UNRESOLVED


def pearson(x: np.ndarray, y: np.ndarray) -> float:
    """Pearson correlation of the finite pairs (nan with fewer than 3 or a constant side)."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    keep = np.isfinite(x) & np.isfinite(y)
    x, y = x[keep], y[keep]
    if x.size < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return math.nan
    return float(np.corrcoef(x, y)[0, 1])


# -- report structures --------------------------------------------------------------------------


@dataclass
class Table:
    """A markdown table: a header row and rows of cells (already formatted)."""

    header: list[str]
    rows: list[list[str]] = field(default_factory=list)
    caption: str = ""


@dataclass
class VerdictLine:
    statement: str
    outcome: str
    detail: str
    parts: list[tuple[str, Verdict]] = field(default_factory=list)


@dataclass
class ClaimSection:
    """One claim on one task: tables, verdict lines, notes, and the figures that illustrate it."""

    key: str
    title: str
    task: str
    tables: list[Table] = field(default_factory=list)
    verdicts: list[VerdictLine] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    data: dict[str, Any] = field(default_factory=dict)


def _line(statement: str, parts: Sequence[tuple[str, Verdict]]) -> VerdictLine:
    outcome = combine([v for _, v in parts])
    if len(parts) == 1:
        return VerdictLine(statement, outcome, parts[0][1].detail, list(parts))
    detail = "; ".join(f"{name}: {v.outcome}, {v.detail}" for name, v in parts)
    return VerdictLine(statement, outcome, detail, list(parts))


# -- grouping -----------------------------------------------------------------------------------


class Runs:
    """The summaries of one task's runs, found by estimator spec (by identity) and seed."""

    def __init__(self, summaries: Sequence[RunSummary]):
        self.by_identity: dict[tuple, list[RunSummary]] = defaultdict(list)
        self.spec_of: dict[tuple, str] = {}
        for s in summaries:
            self.by_identity[s.identity].append(s)
            self.spec_of.setdefault(s.identity, s.run.estimator)

    def of(self, spec: str) -> list[RunSummary]:
        return sorted(self.by_identity.get(identity(spec), []), key=lambda s: s.seed)

    def has(self, spec: str) -> bool:
        return bool(self.of(spec))

    def stat(self, spec: str, key: str) -> Stat:
        return Stat.by_seed((s.seed, s.scalars.get(key, math.nan)) for s in self.of(spec))

    def by_seed(self, spec: str) -> dict[int, RunSummary]:
        return {s.seed: s for s in self.of(spec)}

    def present(self, specs: Iterable[str]) -> list[str]:
        return [spec for spec in specs if self.has(spec)]


def fade_spec(preset: Preset | None, task: str, choice: str | None) -> str:
    """The FADE configuration that represents FADE on ``task``: the tuned choice where there is
    one (on the tuning task and on tasks that take it without retuning), else the defaults."""
    if preset is not None and preset.tuning is not None and choice is not None:
        tuned_tasks = {preset.tuning.task} | {plan.task for plan in preset.plans if plan.tuned}
        if task in tuned_tasks:
            return choice
    return FADE


def choose_tuned(tuning: Tuning, summaries: Sequence[RunSummary]) -> tuple[str | None, list[dict[str, Any]]]:
    """The candidate with the highest seed-mean score on the tuning task, and every candidate's row.

    Candidates without a finished run are listed with n = 0 and cannot be chosen. A tie goes to
    the candidate with the fewest parameters set (the estimator's defaults): when a knob changes
    nothing in these runs (an entropy target the entropy never reaches gives bit-identical runs),
    the defaults are kept rather than reported as tuned.
    """
    runs = Runs([s for s in summaries if s.task == tuning.task])
    rows = []
    best, best_key = None, (-math.inf, -math.inf)
    for candidate in tuning.candidates:
        score = runs.stat(candidate, tuning.score)
        rows.append({"candidate": canonical_spec(candidate), "score": score, "peak_pass1": runs.stat(candidate, "peak_pass1")})
        key = (score.mean, -len(parse_spec(candidate)[1]))
        if score.n and key > best_key:
            best, best_key = canonical_spec(candidate), key
    return best, rows


# -- the claims ---------------------------------------------------------------------------------


def _fmt(x: float, digits: int = 3) -> str:
    return "—" if not math.isfinite(x) else f"{x:.{digits}f}"


def _sign_axis(task: str, runs: Runs, steps: int) -> ClaimSection | None:
    success, balanced, failure = runs.present(SUCCESS_BIASED), runs.present(BALANCED), runs.present(FAILURE_BIASED)
    if not balanced or not (success or failure):
        return None
    n_early = early_steps(steps)
    section = ClaimSection("sign", "Sign axis: entropy collapse and the rank-1 funnel", task)
    table = Table(
        ["estimator", "role", "sign_balance", f"entropy drop / step, first {n_early} steps (x1e-3)",
         "entropy first → final", "final rank1_share", "peak pass@1"],
        caption="mean ± std over seeds; sign_balance and the rates are per-run means over steps",
    )
    for role, specs in (("success-biased", success), ("balanced", balanced), ("failure-biased", failure)):
        for spec in specs:
            table.rows.append([
                spec, role, runs.stat(spec, "sign_balance_mean").text(),
                runs.stat(spec, "entropy_drop_rate").text(2, scale=1e3),
                f"{runs.stat(spec, 'entropy_first').text(2)} → {runs.stat(spec, 'entropy_final').text(2)}",
                runs.stat(spec, "rank1_final").text(), runs.stat(spec, "peak_pass1").text(),
            ])
    section.tables.append(table)
    drop = lambda s: runs.stat(s, "entropy_drop_rate")  # noqa: E731
    if success:
        parts = [(f"{s} vs {b}", compare(drop(s), drop(b), greater=True, digits=4)) for s in success for b in balanced]
        section.verdicts.append(_line(
            f"Success-biased weights ({', '.join(success)}) collapse entropy faster than balanced ones "
            f"({', '.join(balanced)}): larger entropy drop per step over the first {n_early} steps", parts))
    if failure:
        parts = [(f"{f} vs {b}", compare(drop(f), drop(b), greater=False, digits=4)) for f in failure for b in balanced]
        section.verdicts.append(_line(
            f"Failure-biased weights ({', '.join(failure)}) hold entropy: smaller entropy drop per step than "
            f"balanced ones over the first {n_early} steps", parts))
        rank = lambda s: runs.stat(s, "rank1_final")  # noqa: E731
        parts = [(f"{f} vs {b}", compare(rank(f), rank(b), greater=True)) for f in failure for b in balanced]
        section.verdicts.append(_line(
            "Failure-biased weights drive the head update's rank-1 share up: higher final rank1_share than balanced ones",
            parts))
    return section


def _is_centred(summary: RunSummary) -> bool:
    imbalance = mass_imbalance(summary.curves["positive_mass"], summary.curves["negative_mass"])
    return bool(np.all(imbalance[np.isfinite(imbalance)] == 0))


def _logs_formula(summary: RunSummary) -> bool:
    """Whether the run logged the entropy formula's terms (runs from before the trainer did not)."""
    return bool(np.isfinite(summary.curves["entropy_drive"]).any())


def _entropy_check(task: str, summaries: Sequence[RunSummary], steps: int) -> ClaimSection | None:
    # Runs that logged both terms are checked by _entropy_formula; this mass-only check is for the rest.
    usable = [s for s in summaries if np.isfinite(s.curves["entropy"]).sum() >= 2 * ENTROPY_BLOCK and not _logs_formula(s)]
    if len(usable) < 2:
        return None
    section = ClaimSection("entropy_check", "First-order entropy formula: dH ~ eta [(m_S - m_F) H - Cov(A, log pi)]", task)
    by_seed: dict[int, list[RunSummary]] = defaultdict(list)
    for s in usable:
        by_seed[s.seed].append(s)
    block_r, run_r, points = [], [], []
    for seed, group in sorted(by_seed.items()):
        pred, obs = [], []
        for s in group:
            p, o = entropy_blocks(s.steps, s.curves["entropy"], s.curves["positive_mass"], s.curves["negative_mass"])
            pred.extend(p)
            obs.extend(o)
            points.extend((s.run.estimator, seed, a, b) for a, b in zip(p, o))
        block_r.append(pearson(np.array(pred), np.array(obs)))
        run_r.append(pearson(
            np.array([s.scalars["entropy_predicted_early"] for s in group]),
            np.array([s.scalars["entropy_observed_early"] for s in group]),
        ))
    pred_all = np.array([p[2] for p in points])
    obs_all = np.array([p[3] for p in points])
    eta = float((pred_all * obs_all).sum() / (pred_all**2).sum()) if points and (pred_all**2).sum() > 0 else math.nan
    section.data["points"] = points
    section.data["eta"] = eta
    section.data["block_r"] = Stat.of(block_r)
    table = Table(["level", "pairs per seed", "Pearson r per seed", "r: mean ± std over seeds"])
    table.rows.append([
        f"blocks of {ENTROPY_BLOCK} steps, all runs of a seed pooled",
        f"{len(points) / max(len(by_seed), 1):.0f}", ", ".join(_fmt(r, 2) for r in block_r), Stat.of(block_r).text(2)])
    table.rows.append([
        f"runs: first {early_steps(steps)} steps, one pair per run",
        f"{len(usable) / max(len(by_seed), 1):.0f}", ", ".join(_fmt(r, 2) for r in run_r), Stat.of(run_r).text(2)])
    section.tables.append(table)
    section.notes.append(
        "What the check uses: per step, the logged positive_mass (m_S) and negative_mass (m_F) of the batch's "
        "advantages and the policy's mean token entropy H before the update. Predicted change over a span: the sum "
        "of (m_S - m_F) H over its updates. Observed: the change of the block-mean entropy. Cov(A, log pi) is not "
        "logged by the trainer, so the second term is left out, and eta is fitted (Adam's step is not the "
        f"learning rate): least-squares eta through the origin = {eta:.3g}. The correlation is scale-free."
    )
    centred = [s for s in usable if _is_centred(s)]
    if centred:
        rates = Stat.of(s.scalars["entropy_drop_rate"] for s in centred)
        section.notes.append(
            f"Centred estimators give m_S = m_F in every batch, so the first term predicts no change for them; their "
            f"entropy still falls by {rates.text(2, scale=1e3)} x1e-3 per step over the first {early_steps(steps)} "
            f"steps ({len(centred)} runs): that is what the omitted covariance term does on its own."
        )
    if len(centred) == len(usable):
        section.notes.append(
            "Every run here is of a centred estimator (m_S = m_F in every batch, up to float rounding), so the "
            "first term predicts no change anywhere and there is nothing to correlate: the check needs sign-biased "
            "runs (psr, nsr, asym_grpo, w_reinforce, FADE once delta < 1).")
        return section
    if not Stat.of(block_r).n and not Stat.of(run_r).n:
        section.notes.append(f"Too few steps or runs for a correlation (blocks of {ENTROPY_BLOCK} steps, >= 3 pairs per seed).")
        return section
    blocks = compare(Stat.of(block_r), 0.0, greater=True, digits=2)
    section.verdicts.append(_line(
        "The first-order term (m_S - m_F) H predicts the observed entropy change (positive correlation, block level)",
        [("blocks", blocks)]))
    section.verdicts.append(_line(
        "The first-order term predicts which runs lose entropy early (positive correlation across runs)",
        [("runs", compare(Stat.of(run_r), 0.0, greater=True, digits=2))]))
    negative = compare(Stat.of(block_r), 0.0, greater=False)
    if negative.outcome == SUPPORTED:
        margin = "with its 95% interval over seeds below 0" if negative.interval else "beyond the spread over seeds"
        section.notes.append(
            f"The observed change correlates *negatively* with (m_S - m_F) H {margin}: the "
            "mass-imbalance term acts with the sign of the prose claim (more success mass, lower entropy), the "
            "opposite of the formula as first written here (docs/method.md, section 4, corrects its sign)."
        )
    return section


def _formula_points(summary: RunSummary, group: str) -> list[tuple[str, str, float, float, float, float]]:
    """(sign group, spec, block-mean drive, its mass term, its covariance term, observed change per
    step) for each block pair of the run with a finite drive (:func:`drive_blocks`' pairing)."""
    terms = formula_terms(summary.curves)
    entropy = summary.curves["entropy"]
    points = []
    for this, nxt, span in _block_spans(len(entropy), ENTROPY_BLOCK):
        obs = (_finite_mean(entropy[nxt]) - _finite_mean(entropy[this])) / ENTROPY_BLOCK
        drive, mass, cov = (_finite_mean(terms[name][span]) for name in ("drive", "mass", "cov"))
        if math.isfinite(obs) and math.isfinite(drive):
            points.append((group, summary.run.estimator, drive, mass, cov, obs))
    return points


def _across_runs(runs: Sequence[RunSummary], key: str) -> Stat:
    """Per seed, the correlation over that seed's runs of the early entropy change with ``key``."""
    by_seed: dict[int, list[RunSummary]] = defaultdict(list)
    for s in runs:
        by_seed[s.seed].append(s)
    return Stat.by_seed(
        (seed, pearson(np.array([s.scalars[key] for s in group]), np.array([s.scalars["entropy_change_early"] for s in group])))
        for seed, group in sorted(by_seed.items()))


def _entropy_formula(task: str, summaries: Sequence[RunSummary], steps: int) -> ClaimSection | None:
    usable = [s for s in summaries if _logs_formula(s) and np.isfinite(s.curves["entropy"]).sum() >= 2 * ENTROPY_BLOCK]
    if not usable:
        return None
    n_early = early_steps(steps)
    section = ClaimSection(
        "entropy_formula", "Entropy formula with both terms: dH ~ -eta [(m_S - m_F) H + Cov(A, log pi)]", task)
    classes = {s.run.key: sign_class(s) for s in usable}
    groups = [("all runs", usable), *((c, [s for s in usable if classes[s.run.key] == c]) for c in SIGN_CLASSES)]
    groups = [(name, runs) for name, runs in groups if runs]
    points = [p for s in usable for p in _formula_points(s, classes[s.run.key])]
    table = Table(
        ["runs", "n", "(a) across runs: r per seed", "(b) within a run: r over blocks", "(b) with -(m_S - m_F) H alone",
         "(b) with -Cov(A, log pi) alone", "(a) with -(m_S - m_F) H alone", "(a) with -Cov(A, log pi) alone",
         "eta fitted (observed / drive)"],
        caption=(f"(a): per seed, Pearson r over its runs of the entropy change per step over the first {n_early} steps "
                 "(least-squares slope) with the mean drive there; mean ± std over seeds. (b): per run, Pearson r over "
                 f"consecutive blocks of {ENTROPY_BLOCK} steps of the block-to-block entropy change per step with the mean "
                 "drive over the same updates; mean ± std over runs. Runs are grouped by the sign of their mean m_S - m_F; "
                 "eta: least squares through the origin over every block of the group."),
    )
    across: dict[str, Stat] = {}
    within: dict[str, Stat] = {}
    for name, runs in groups:
        across[name] = _across_runs(runs, "drive_early")
        within[name] = Stat.of(s.scalars["drive_r_blocks"] for s in runs)
        member = {s.run.estimator for s in runs}
        group_points = [pt for pt in points if (name == "all runs" or pt[0] == name) and pt[1] in member]
        x = np.array([pt[2] for pt in group_points])
        y = np.array([pt[5] for pt in group_points])
        eta = float((x * y).sum() / (x * x).sum()) if x.size and (x * x).sum() > 0 else math.nan
        table.rows.append([
            name, str(len(runs)), across[name].text(2), within[name].text(2),
            Stat.of(s.scalars["drive_mass_r_blocks"] for s in runs).text(2),
            Stat.of(s.scalars["drive_cov_r_blocks"] for s in runs).text(2),
            _across_runs(runs, "drive_mass_early").text(2), _across_runs(runs, "drive_cov_early").text(2),
            f"{eta:.3g}" if math.isfinite(eta) else "—",
        ])
    section.tables.append(table)
    section.data.update(points=points, across=across, within=within, classes=classes)
    section.verdicts.append(_line(
        f"The drive predicts which runs lose entropy early: positive correlation across runs of the entropy change "
        f"over the first {n_early} steps with the mean drive -[(m_S - m_F) H + Cov(A, log pi)] there",
        [(name, compare(across[name], 0.0, greater=True, digits=2)) for name, _ in groups]))
    section.verdicts.append(_line(
        f"The drive predicts the entropy change within a run: positive correlation over blocks of {ENTROPY_BLOCK} steps "
        "of the observed change with the block-mean drive",
        [(name, compare(within[name], 0.0, greater=True, digits=2)) for name, _ in groups]))
    section.notes.append(
        "What the check uses: per step, the logged entropy_drive = -[(m_S - m_F) H + Cov(A, log pi)] (the bracket of "
        "the corrected formula, docs/method.md section 4), its two terms, and the mean token entropy H before the update. "
        "The correlations are scale-free, so eta (Adam's effective step is not the learning rate) does not enter them. "
        "A sign group of one run per seed has no across-run correlation (not measured); centred runs have no mass term, "
        "so their drive is the covariance term alone.")
    if compare(within["all runs"], 0.0, greater=False).outcome == SUPPORTED:
        section.notes.append(
            "The observed change correlates *negatively* with the drive within runs, beyond the rule's margin: the "
            "formula's sign, or its first-order reading at these step sizes, does not hold here.")
    return section


def _difficulty_axis(task: str, runs: Runs) -> ClaimSection | None:
    levels = [(alpha, spec) for alpha, spec in POWER_LEVELS if runs.has(spec)]
    if len(levels) < 2:
        return None
    section = ClaimSection("difficulty", "Difficulty axis: Power(alpha), effective sample size and where the gains land", task)
    buckets = sorted({b for _, spec in levels for s in runs.of(spec) for b in s.buckets()})
    table = Table(
        ["alpha", "runs of", "effective_sample_fraction", "difficulty (mass-weighted solve rate)", "peak pass@1",
         *[f"pass@1 gain d{b}" for b in buckets]],
        caption="gains: final minus base pass@1 per difficulty bucket (d1 easiest); alpha = 1 is dr_grpo exactly",
    )
    for alpha, spec in levels:
        table.rows.append([
            str(alpha), spec, runs.stat(spec, "esf_mean").text(), runs.stat(spec, "difficulty_mean").text(),
            runs.stat(spec, "peak_pass1").text(), *[runs.stat(spec, f"gain/d{b}").text() for b in buckets],
        ])
    section.tables.append(table)
    esf = lambda s: runs.stat(s, "esf_mean")  # noqa: E731
    parts = [(f"alpha={a2} vs alpha={a1}", compare(esf(s2), esf(s1), greater=False))
             for (a1, s1), (a2, s2) in zip(levels, levels[1:])]
    section.verdicts.append(_line("The effective sample fraction falls as alpha grows", parts))
    if buckets:
        hard = buckets[-1]
        (a_lo, s_lo), (a_hi, s_hi) = levels[0], levels[-1]
        section.verdicts.append(_line(
            f"Harder focus moves the gains to hard prompts: the hardest bucket (d{hard}) gains more under "
            f"alpha={a_hi} than under alpha={a_lo}",
            [(f"d{hard}", compare(runs.stat(s_hi, f"gain/d{hard}"), runs.stat(s_lo, f"gain/d{hard}"), greater=True))]))
        for alpha, spec in levels:
            gains = {b: runs.stat(spec, f"gain/d{b}").mean for b in buckets}
            finite = {b: g for b, g in gains.items() if math.isfinite(g)}
            if finite:
                top = max(finite, key=finite.get)
                section.notes.append(f"alpha={alpha}: the largest mean gain is in d{top} ({finite[top]:+.3f}).")
    return section


def _fade_vs_baselines(task: str, runs: Runs, fade: str, tuned_here: bool = False) -> ClaimSection | None:
    baselines = runs.present(STATIC_BASELINES)
    if not baselines or not runs.has(fade):
        return None
    section = ClaimSection("fade_vs_baselines", f"FADE ({fade}) against the static baselines", task)
    peak = {spec: runs.stat(spec, "peak_pass1") for spec in [*baselines, fade]}
    best = max(baselines, key=lambda spec: peak[spec].mean if peak[spec].n else -math.inf)
    best_runs = runs.by_seed(best)

    def reach(spec: str) -> tuple[dict[int, float], dict[int, float]]:
        """Per seed: the first eval step at which ``spec`` reaches the best baseline's peak, and
        that step over the step of the best baseline's own peak (inf where never reached)."""
        steps_to, ratios = {}, {}
        for seed, s in runs.by_seed(spec).items():
            if seed not in best_runs:
                continue
            target = best_runs[seed].scalars["peak_pass1"]
            hit = np.flatnonzero(s.pass1 >= target - 1e-12)
            step = float(s.eval_steps[hit[0]]) if hit.size else math.inf
            steps_to[seed] = step
            own = best_runs[seed].scalars["peak_step"]
            ratios[seed] = step / own if own > 0 else math.nan
        return steps_to, ratios

    ks = sorted({k for spec in [*baselines, fade] for s in runs.of(spec) for k in s.passk(s.final)})
    table = Table(
        ["estimator", "peak pass@1", "step of peak", f"step to reach {best}'s peak (reached)", "ratio to " + best,
         "final pass@1", "pass@k mean (k=1..64)", "final entropy"],
        caption=(f"best static baseline by seed-mean peak pass@1: {best}. The target on each seed is {best}'s peak "
                 "pass@1 on that seed; ratio = step to reach it / step of that peak."),
    )
    for spec in [fade, *baselines]:
        steps_to, ratios = reach(spec)
        reached = [v for v in steps_to.values() if math.isfinite(v)]
        table.rows.append([
            f"**{spec}**" if spec == fade else spec, peak[spec].text(), runs.stat(spec, "peak_step").text(0),
            f"{Stat.of(reached).text(0)} ({len(reached)}/{len(steps_to)})",
            Stat.of([r for r in ratios.values() if math.isfinite(r)]).text(2),
            runs.stat(spec, "final_pass1").text(), runs.stat(spec, "passk_mean").text(), runs.stat(spec, "entropy_final").text(2),
        ])
    section.tables.append(table)
    passk = Table(["estimator", *[f"pass@{k}" for k in ks]], caption="final evaluation, mean ± std over seeds")
    for spec in [fade, *baselines]:
        passk.rows.append([f"**{spec}**" if spec == fade else spec, *[runs.stat(spec, f"pass@{k}").text() for k in ks]])
    section.tables.append(passk)
    section.data.update(best=best, fade=fade, baselines=baselines)
    if tuned_here:
        section.notes.append(
            f"FADE's configuration ({fade}) was chosen on these same {task} runs, which favours it here; the task "
            "that takes the choice without retuning is the unbiased check.")

    section.verdicts.append(_line(
        f"FADE's peak pass@1 is higher than the best static baseline's ({best})",
        [("peak", compare(peak[fade], peak[best], greater=True))]))
    steps_to, ratios = reach(fade)
    n = len(ratios)
    unreached = sum(1 for v in steps_to.values() if not math.isfinite(v))
    ratio_stat = Stat.by_seed(ratios.items())
    # The words of the rule in force at this many paired seeds (module docstring).
    against, undecided = (CONTRADICTED, UNRESOLVED) if n >= MIN_PAIRED_SEEDS else (NOT_SUPPORTED, OVERLAP)
    if n == 0:
        earlier = Verdict(NOT_MEASURED, "no seed with both runs")
    elif unreached * 2 > n:
        earlier = Verdict(against, f"FADE never reached {best}'s peak in {unreached} of {n} seeds")
    elif n < MIN_SEEDS:
        earlier = Verdict(FEW_SEEDS, f"ratio {ratio_stat.text(2)} (n={n}), unreached in {unreached} of {n} seeds")
    elif unreached:
        earlier = Verdict(undecided, f"ratio {ratio_stat.text(2)} where reached; unreached in {unreached} of {n} seeds")
    elif ratio_stat.n < n:
        earlier = Verdict(undecided, f"{best} peaked at the base model (step 0) on some seed: no ratio there")
    else:
        earlier = compare(ratio_stat, 1.0, greater=False, digits=2)
    section.verdicts.append(_line(
        "FADE reaches the best static baseline's peak pass@1 earlier (step ratio < 1)", [("ratio", earlier)]))
    parts = []
    for k in ks:
        key = f"pass@{k}"
        best_k = max(baselines, key=lambda spec: runs.stat(spec, key).mean if runs.stat(spec, key).n else -math.inf)
        parts.append((f"k={k} vs {best_k}", compare(runs.stat(fade, key), runs.stat(best_k, key), greater=True)))
    if parts:
        section.verdicts.append(_line(
            "FADE has the best accuracy-diversity trade-off: the highest final pass@k at every k (against the best "
            "static baseline at each k)", parts))
    return section


def _ablations(task: str, runs: Runs) -> ClaimSection | None:
    variants = runs.present(ABLATIONS)
    levels = [(h, spec) for h, spec in H_STAR_LEVELS if runs.has(spec)]
    if not runs.has(FADE) or not (variants or len(levels) > 1):
        return None
    section = ClaimSection("ablations", "Ablations of FADE and H* sensitivity", task)
    columns = ("peak_pass1", "pass@16", "pass@64", "passk_mean", "entropy_final", "rank1_final", "alpha_mean", "delta_mean")
    header = ["variant", "peak pass@1", "final pass@16", "final pass@64", "pass@k mean", "final entropy",
              "final rank1_share", "mean alpha", "mean delta"]
    table = Table(header, caption="fade: both knobs adaptive; fade_alpha: delta fixed at 1; fade_delta: alpha fixed at 1; "
                  "fade_entropy_only: both from entropy; fade_decay: fixed log-decay schedule")
    for spec in [FADE, *variants]:
        table.rows.append([spec, *[runs.stat(spec, c).text(2 if c in ("alpha_mean", "delta_mean") else 3) for c in columns]])
    section.tables.append(table)
    stat = runs.stat
    if "fade_alpha" in variants:
        section.verdicts.append(_line(
            "Without delta (fade_alpha) entropy collapses: lower final entropy than FADE",
            [("entropy", compare(stat("fade_alpha", "entropy_final"), stat(FADE, "entropy_final"), greater=False))]))
    if "fade_delta" in variants:
        section.verdicts.append(_line(
            "Without alpha (fade_delta) pass@k at large k drops: lower final pass@16 and pass@64 than FADE",
            [(key, compare(stat("fade_delta", key), stat(FADE, key), greater=False)) for key in ("pass@16", "pass@64")]))
    for variant in ("fade_entropy_only", "fade_decay"):
        if variant in variants:
            section.verdicts.extend(_worse_than(variant, FADE, stat))
    if len(levels) > 1:
        hs = Table(["h_star_ratio", "spec", "peak pass@1", "pass@k mean", "final entropy", "final rank1_share", "mean delta"])
        for h, spec in levels:
            keys = ("peak_pass1", "passk_mean", "entropy_final", "rank1_final", "delta_mean")
            hs.rows.append([f"{h:g}", spec, *[stat(spec, c).text() for c in keys]])
        section.tables.append(hs)
        middle = [spec for h, spec in levels if h == 0.5]
        if middle:
            parts = [(f"0.5 vs {h:g}", compare(stat(middle[0], "passk_mean"), stat(spec, "passk_mean"), greater=True))
                     for h, spec in levels if spec != middle[0]]
            section.verdicts.append(_line("H* = half the initial entropy works best (highest pass@k mean)", parts))
    return section


def _delta_share(runs: Runs, spec: str) -> str:
    share = runs.stat(spec, "delta_below1")
    return share.text(2) if share.n else "—"


def _fade_arms(task: str, runs: Runs) -> ClaimSection | None:
    """Every FADE arm (H* settings, the EMA reading) against the balanced baselines, paired by seed."""
    arms = sorted((spec for spec in runs.spec_of.values() if parse_spec(spec)[0] == FADE), key=lambda spec: spec != FADE)
    balanced = runs.present(BALANCED)
    if len(arms) < 2 or not balanced:
        return None
    section = ClaimSection("fade_arms", "FADE's arms (H* sensitivity) against the balanced baselines", task)
    stat = runs.stat
    table = Table(["estimator", "peak pass@1", "step of peak", "pass@k mean", "final entropy", "mean delta",
                   "steps with delta < 1"],
                  caption="mean ± std over seeds; pass@k mean: the final pass@k averaged over the logged k")
    for spec in [*arms, *balanced]:
        table.rows.append([
            f"**{spec}**" if spec in arms else spec, stat(spec, "peak_pass1").text(), stat(spec, "peak_step").text(0),
            stat(spec, "passk_mean").text(), stat(spec, "entropy_final").text(2), stat(spec, "delta_mean").text(2),
            _delta_share(runs, spec),
        ])
    section.tables.append(table)
    against = ", ".join(balanced)
    # Accuracy, diversity and entropy are separate claims: one verdict for all would hide an answer
    # on one axis behind an open question on another.
    axes = (("raises accuracy over", "peak pass@1", "peak_pass1", "peak"),
            ("raises diversity over", "final pass@k mean", "passk_mean", "pass@k mean"),
            ("keeps more entropy than", "final entropy", "entropy_final", "entropy"))
    for arm in arms:
        for claim, label, key, short in axes:
            section.verdicts.append(_line(
                f"{arm} {claim} the balanced baselines: higher {label} than {against}",
                [(f"{short} vs {b}", compare(stat(arm, key), stat(b, key), greater=True)) for b in balanced]))
    scored = [arm for arm in arms if stat(arm, "passk_mean").n]
    if scored:
        best = max(scored, key=lambda arm: stat(arm, "passk_mean").mean)
        section.notes.append(f"The arm with the highest seed-mean pass@k mean: {best} ({stat(best, 'passk_mean').text()}).")
    section.data.update(arms=arms, baselines=balanced)
    return section


def _ablation_reference(spec: str) -> str:
    """The FADE arm an ablation is measured against: FADE with the ablation's own entropy target and
    EMA where it sets them (fade_delta:h_star_ratio=1.0 against fade:h_star_ratio=1.0), else the arm
    whose sign knob acts from the start (:data:`ENGAGED_FADE`)."""
    own = {k: v for k, v in parse_spec(spec)[1].items() if k in ("h_star", "h_star_ratio", "ema")}
    return format_spec(FADE, own) if own else ENGAGED_FADE


def _ablations_engaged(task: str, runs: Runs) -> ClaimSection | None:
    """The ablations against a FADE whose sign knob acts; without such an arm :func:`_ablations`
    (against FADE's defaults) is all there is."""
    names = {parse_spec(a)[0] for a in ABLATIONS}
    pairs = [(spec, _ablation_reference(spec)) for spec in runs.spec_of.values() if parse_spec(spec)[0] in names]
    pairs = [(spec, ref) for spec, ref in pairs if runs.has(ref)]
    if not pairs:
        return None
    section = ClaimSection("ablations_engaged", "Ablations of FADE with its sign knob engaged", task)
    stat = runs.stat
    specs = [*dict.fromkeys(ref for _, ref in pairs), *(spec for spec, _ in pairs)]
    ks = sorted({k for spec in specs for s in runs.of(spec) for k in s.passk(s.final)})[-2:]
    table = Table(["variant", "measured against", "peak pass@1", "pass@k mean", *[f"final pass@{k}" for k in ks],
                   "final entropy", "mean delta", "steps with delta < 1"],
                  caption="fade_alpha: delta fixed at 1; fade_delta: alpha fixed at 1; fade_entropy_only: both knobs from "
                          "the entropy; fade_decay: a fixed log-decay schedule. Each is measured against FADE with its "
                          f"own entropy target, or against {ENGAGED_FADE} (delta < 1 from the start) when it sets none")
    reference_of = dict(pairs)
    for spec in specs:
        table.rows.append([
            spec, reference_of.get(spec, "(reference)"), stat(spec, "peak_pass1").text(), stat(spec, "passk_mean").text(),
            *[stat(spec, f"pass@{k}").text() for k in ks], stat(spec, "entropy_final").text(2),
            stat(spec, "delta_mean").text(2), _delta_share(runs, spec),
        ])
    section.tables.append(table)
    for spec, ref in pairs:
        name = parse_spec(spec)[0]
        if name == "fade_alpha":
            section.verdicts.append(_line(
                f"Without delta ({spec}) entropy collapses: lower final entropy than {ref}, whose sign knob acts",
                [("entropy", compare(stat(spec, "entropy_final"), stat(ref, "entropy_final"), greater=False))]))
        elif name == "fade_delta":
            keys = ["passk_mean", *(f"pass@{k}" for k in ks)]
            section.verdicts.append(_line(
                f"Without alpha ({spec}) pass@k drops: lower final pass@k mean"
                + "".join(f", pass@{k}" for k in ks) + f" than {ref}",
                [(key.replace("passk_mean", "pass@k mean"), compare(stat(spec, key), stat(ref, key), greater=False))
                 for key in keys]))
        else:
            section.verdicts.extend(_worse_than(spec, ref, stat))
    return section


def _worse_than(variant: str, reference: str, stat) -> list[VerdictLine]:
    """A fixed or entropy-only schedule against the adaptive controller: accuracy and diversity as two claims."""
    return [_line(f"{variant} loses {what} to the adaptive controller: lower {label} than {reference}",
                  [(label, compare(stat(variant, key), stat(reference, key), greater=False))])
            for what, key, label in (("accuracy", "peak_pass1", "peak pass@1"), ("diversity", "passk_mean", "pass@k mean"))]


# -- design checks: what must hold before the claims can be read ---------------------------------


def _regime_check(task: str, runs: Runs) -> ClaimSection | None:
    present = [spec for spec in BALANCED if any(s.pass1.size for s in runs.of(spec))]
    if not present:
        return None
    limit = REGIME_PEAK_FRACTION
    section = ClaimSection("regime", "Regime check: the balanced baselines peak before the end", task)
    table = Table(["estimator", "step of the smoothed peak per seed (fraction of the run)",
                   f"step with {REGIME_RISE:.0%} of the smoothed gain per seed",
                   "step of the single-evaluation peak per seed", f"seeds peaking at or before {limit:.0%}"],
                  caption=f"smoothed peak: the first evaluation at the highest {REGIME_SMOOTHING}-evaluation centred moving "
                          "average of pass@1 among those whose window is full, which the verdict reads (from one "
                          "evaluation to the next pass@1 moves by more than its evaluation noise, so one evaluation's "
                          "maximum is a noisy peak, and a window shrunk at an end is noisier still); single-evaluation "
                          f"peak: the first evaluation at the highest pass@1, as the claims' peak pass@1 uses it; "
                          f"{REGIME_RISE:.0%} of the gain: the first full-window evaluation whose moving average has "
                          f"made {REGIME_RISE:.0%} of its rise from the base evaluation to the smoothed peak (on a "
                          "wandering plateau the peak can fall anywhere; this step says when the gain stopped)")
    late, stalled, measured = [], [], 0
    for spec in present:
        cells, rises, raw, early = [], [], [], 0
        for s in runs.of(spec):
            fraction = s.scalars["smoothed_peak_fraction"]
            if not math.isfinite(fraction):
                continue
            measured += 1
            # A smoothed peak no higher than the base evaluation is no peak (and has no step with 90%
            # of a gain): the run never rose above where it started (it diverged or learnt nothing),
            # which says nothing about a later decline.
            rise = s.scalars["rise_step"]
            gained = math.isfinite(rise)
            on_time = gained and fraction <= limit + 1e-12
            early += on_time
            if not gained:
                stalled.append(f"{spec} seed {s.seed}")
            elif not on_time:
                late.append(f"{spec} seed {s.seed} ({fraction:.0%})")
            cells.append(f"seed {s.seed}: **no gain**" if not gained else
                         f"seed {s.seed}: {s.scalars['smoothed_peak_step']:.0f} ({fraction:.0%})"
                         + ("" if on_time else " **late**"))
            rises.append(f"{rise:.0f} ({rise / s.run.steps:.0%})" if gained and s.run.steps else "—")
            raw.append(f"{s.scalars['peak_step']:.0f} ({s.scalars['peak_fraction']:.0%})")
        table.rows.append([spec, ", ".join(cells) or "—", ", ".join(rises) or "—", ", ".join(raw) or "—",
                           f"{early} of {len(cells)}"])
    section.tables.append(table)
    missing = [spec for spec in BALANCED if spec not in present]
    statement = (f"Every seed of the balanced baselines ({', '.join(present)}) peaks in pass@1 ({REGIME_SMOOTHING}-evaluation "
                 f"moving average) at or before {limit:.0%} of the run, so the runs are long enough for the decline FADE "
                 "claims to prevent")
    if late or stalled:
        reasons = ([f"peaking later: {', '.join(late)}"] if late else []) + (
            [f"never above the base evaluation (diverged or no gain): {', '.join(stalled)}"] if stalled else [])
        outcome, detail = REGIME_NOT_CALIBRATED, "; ".join(reasons)
    elif not measured:
        outcome, detail = NOT_MEASURED, "no finite pass@1"
    else:
        outcome, detail = REGIME_CALIBRATED, f"{measured} runs, all at or before {limit:.0%}"
    if missing:
        detail += f"; not trained on this plan: {', '.join(missing)}"
    section.data["check"] = VerdictLine(statement, outcome, detail)
    section.data["late"], section.data["stalled"] = late, stalled
    mean_curves = [line for spec in present if (line := _seed_mean_peak(spec, runs.of(spec)))]
    if mean_curves:
        section.notes.append(
            "The seed-mean curve (pass@1 averaged over the seeds at each evaluation, then smoothed the same way), "
            "which the verdict does not read: " + "; ".join(mean_curves) + ". One seed's late peak on a wandering "
            "plateau is a draw; the mean over n seeds wanders about sqrt(n) times less.")
    return section


def _seed_mean_peak(spec: str, runs: Sequence[RunSummary]) -> str | None:
    """Where ``spec``'s seed-mean pass@1 curve peaks and makes :data:`REGIME_RISE` of its gain, in
    words; None unless at least two seeds share their evaluation steps."""
    curves = [s for s in runs if s.pass1.size and np.isfinite(s.pass1).all()]
    if len(curves) < 2 or any(not np.array_equal(s.eval_steps, curves[0].eval_steps) for s in curves):
        return None
    steps, total = curves[0].eval_steps, curves[0].run.steps
    peak, _, rise = _smoothed_peak(steps, np.mean([s.pass1 for s in curves], axis=0))
    if not math.isfinite(rise):
        return f"{spec} ({len(curves)} seeds) never rises above its base"
    return (f"{spec} ({len(curves)} seeds) peaks at {peak:.0f} ({peak / total:.0%}) with {REGIME_RISE:.0%} of its gain "
            f"by {rise:.0f} ({rise / total:.0%})")


def _sign_knob(task: str, summaries: Sequence[RunSummary]) -> ClaimSection | None:
    arms: dict[str, list[RunSummary]] = defaultdict(list)
    for s in sorted(summaries, key=lambda s: s.seed):
        if s.run.name.startswith(FADE) and np.isfinite(s.curves["delta"]).any():
            arms[s.run.estimator].append(s)
    if not arms:
        return None
    section = ClaimSection("sign_knob", "FADE's sign knob: how often delta < 1", task)
    share = {spec: Stat.by_seed((s.seed, s.scalars["delta_below1"]) for s in runs) for spec, runs in arms.items()}
    table = Table(["FADE arm", "seeds", "steps with delta < 1: mean (per seed)", "mean delta", "lowest delta"],
                  caption="delta = clip(1 + H_hat - H*, 0.3, 1) as logged per step; delta < 1 amplifies the failures' "
                          "weight (docs/method.md, section 3)")
    for spec, runs in arms.items():
        lowest = min(float(np.nanmin(s.curves["delta"])) for s in runs)
        table.rows.append([
            spec, str(len(runs)), f"{share[spec].mean:.2f} ({', '.join(f'{v:.2f}' for v in share[spec].values)})",
            Stat.by_seed((s.seed, s.scalars["delta_mean"]) for s in runs).text(3), f"{lowest:.3f}",
        ])
    section.tables.append(table)
    best = max(arms, key=lambda spec: share[spec].mean)
    above = [spec for spec in arms if share[spec].mean > SIGN_KNOB_SHARE]
    outcome = REQUIREMENT_MET if above else REQUIREMENT_NOT_MET
    statement = (f"At least one FADE arm has delta < 1 on more than {SIGN_KNOB_SHARE:.0%} of its steps (seed mean), "
                 "so the sign half of FADE is exercised")
    detail = (f"arms above {SIGN_KNOB_SHARE:.0%}: {', '.join(above) or 'none'}; the most: {best} at {share[best].mean:.2f}")
    section.data["check"] = VerdictLine(statement, outcome, detail)
    section.data["share"] = share
    return section


def _collapse_check(task: str, summaries: Sequence[RunSummary]) -> ClaimSection | None:
    measured = [s for s in sorted(summaries, key=lambda s: (s.run.estimator, s.seed))
                if math.isfinite(s.scalars["base_pass1"]) and math.isfinite(s.scalars["final_pass1"])]
    if not measured:
        return None
    section = ClaimSection("collapse", "Collapse check: no run ends far below its base", task)
    collapsed: dict[str, list[RunSummary]] = defaultdict(list)
    for s in measured:
        if s.scalars["final_pass1"] < COLLAPSE_FRACTION * s.scalars["base_pass1"]:
            collapsed[s.run.estimator].append(s)
    if collapsed:
        table = Table(["estimator", "collapsed seeds", "pass@1 base -> last evaluation per collapsed seed"],
                      caption=f"collapsed: the last evaluation's pass@1 below {COLLAPSE_FRACTION:g} x the base evaluation's")
        for spec, runs in collapsed.items():
            total = sum(1 for s in measured if s.run.estimator == spec)
            table.rows.append([spec, f"{len(runs)} of {total}", ", ".join(
                f"seed {s.seed}: {s.scalars['base_pass1']:.3f} -> {s.scalars['final_pass1']:.3f}" for s in runs)])
        section.tables.append(table)
    statement = (f"Every run ends with pass@1 at least {COLLAPSE_FRACTION:g} x its base evaluation's, so no claim "
                 "compares a collapsed run")
    if collapsed:
        names = "; ".join(f"{spec} seeds {', '.join(str(s.seed) for s in runs)}" for spec, runs in collapsed.items())
        outcome = REQUIREMENT_NOT_MET
        detail = (f"{sum(map(len, collapsed.values()))} of {len(measured)} runs collapsed ({names}); claims that "
                  "involve them measure the collapse, not the estimator")
    else:
        outcome, detail = REQUIREMENT_MET, f"{len(measured)} runs, none collapsed"
    section.data["check"] = VerdictLine(statement, outcome, detail)
    section.data["collapsed"] = {spec: [s.seed for s in runs] for spec, runs in collapsed.items()}
    return section


def design_checks(summaries: Sequence[RunSummary]) -> list[ClaimSection]:
    """What must hold before the claims can be read, per task: the regime check on every task first,
    then FADE's sign knob, then the collapse check. Each section's ``data["check"]`` is a
    :class:`VerdictLine` whose outcome is one of :data:`REGIME_CALIBRATED`, :data:`REGIME_NOT_CALIBRATED`,
    :data:`REQUIREMENT_MET`, :data:`REQUIREMENT_NOT_MET` or :data:`NOT_MEASURED`; a section is absent
    where nothing it needs ran."""
    tasks = list(dict.fromkeys(s.task for s in summaries))
    by_task = {t: [s for s in summaries if s.task == t] for t in tasks}
    regime = [_regime_check(t, Runs(by_task[t])) for t in tasks]
    knob = [_sign_knob(t, by_task[t]) for t in tasks]
    collapse = [_collapse_check(t, by_task[t]) for t in tasks]
    return [section for section in (*regime, *knob, *collapse) if section is not None]


def _defaults(preset: Preset | None, summaries: Sequence[RunSummary], by_task: dict[str, Runs]) -> list[ClaimSection]:
    if preset is None or preset.tuning is None:
        return []
    tuning = preset.tuning
    chosen, rows = choose_tuned(tuning, summaries)
    section = ClaimSection("defaults", f"FADE's defaults: chosen on {tuning.task}, confirmed without retuning", tuning.task)
    table = Table(["candidate", f"{tuning.score} (selection score)", "peak pass@1", "chosen"],
                  caption=f"rule: the highest seed-mean {tuning.score} on {tuning.task}; ties to the earlier candidate")
    for row in rows:
        chosen_mark = "**yes**" if row["candidate"] == chosen else ""
        table.rows.append([row["candidate"], row["score"].text(), row["peak_pass1"].text(), chosen_mark])
    section.tables.append(table)
    section.data["choice"] = chosen
    sections = [section]
    if chosen is None:
        section.notes.append("No candidate finished: nothing was chosen.")
        return sections
    for plan in preset.plans:
        if not plan.tuned or plan.task not in by_task:
            continue
        runs = by_task[plan.task]
        confirm = ClaimSection("confirm", f"FADE with the {tuning.task} defaults ({chosen}) on {plan.task}", plan.task)
        specs = runs.present([*STATIC_BASELINES, chosen])
        if not runs.has(chosen) or len(specs) < 2:
            confirm.notes.append(f"No finished run of {chosen} with baselines on {plan.task}.")
            sections.append(confirm)
            continue
        rank = Table(["by", "FADE's rank", "first", "FADE", "first's value"])
        for key, label in (("peak_pass1", "peak pass@1"), ("passk_mean", "pass@k mean")):
            order = sorted(specs, key=lambda s: -runs.stat(s, key).mean if runs.stat(s, key).n else math.inf)
            rank.rows.append([label, f"{order.index(chosen) + 1} of {len(order)}", order[0],
                              runs.stat(chosen, key).text(), runs.stat(order[0], key).text()])
        confirm.tables.append(rank)
        baselines = runs.present(STATIC_BASELINES)
        best = max(baselines, key=lambda s: runs.stat(s, "passk_mean").mean if runs.stat(s, "passk_mean").n else -math.inf)
        confirm.verdicts.append(_line(
            f"The defaults chosen on {tuning.task} carry over: FADE's pass@k mean on {plan.task} beats the best static "
            f"baseline's ({best})",
            [("pass@k mean", compare(runs.stat(chosen, "passk_mean"), runs.stat(best, "passk_mean"), greater=True))]))
        sections.append(confirm)
    return sections


def evaluate(summaries: Sequence[RunSummary], preset: Preset | None = None, choice: str | None = None) -> list[ClaimSection]:
    """Every claim the runs can answer, per task, in the report's order (the design checks that
    come before them: :func:`design_checks`)."""
    tasks = list(dict.fromkeys(s.task for s in summaries))
    by_task = {t: Runs([s for s in summaries if s.task == t]) for t in tasks}
    steps_of = {t: max(s.run.steps for s in summaries if s.task == t) for t in tasks}
    builders: list[Callable[[str], ClaimSection | None]] = [
        lambda t: _sign_axis(t, by_task[t], steps_of[t]),
        lambda t: _entropy_check(t, [s for s in summaries if s.task == t], steps_of[t]),
        lambda t: _entropy_formula(t, [s for s in summaries if s.task == t], steps_of[t]),
        lambda t: _difficulty_axis(t, by_task[t]),
        lambda t: _fade_vs_baselines(t, by_task[t], fade_spec(preset, t, choice),
                                     tuned_here=bool(preset and preset.tuning and preset.tuning.task == t and choice)),
        lambda t: _fade_arms(t, by_task[t]),
        lambda t: _ablations(t, by_task[t]),
        lambda t: _ablations_engaged(t, by_task[t]),
    ]
    sections = [section for build in builders for t in tasks if (section := build(t)) is not None]
    sections.extend(_defaults(preset, summaries, by_task))
    return sections
