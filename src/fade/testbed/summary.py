"""A finished run read into numbers: one definition of every metric a run is summarised by.

:func:`summarise` reads a run (:func:`fade.testbed.runlog.load_run`) into a :class:`RunSummary`:
the per-step curves the figures draw, the evaluations, and ``scalars``, the run's numbers by name
(listed on :class:`RunSummary`). Every reader that puts a number on a run takes it from here:
``fade compare`` and ``fade demo`` (:mod:`fade.testbed.tables`), and the sweep's claims, figures
and report (:mod:`fade.experiments.runs`), so a metric cannot mean one thing in a table and
another in a verdict. The functions behind the scalars (the final window, the share of steps
below a bound, the smoothed peak, the entropy formula's blocks) are public for the same reason.
Like :mod:`~fade.testbed.runlog`, this module imports neither matplotlib nor rich.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from fade.series import finite_mean, moving_average

from .runlog import (
    DIAGNOSTICS,
    ENTROPY_FORMULA_KEYS,
    METRICS_FILE,
    SCHEDULE,
    Run,
    bucket_key,
    logged_buckets,
    logged_ks,
    metric_column,
    pass_key,
    peak_eval_index,
)

__all__ = [
    "CURVES",
    "ENTROPY_BLOCK",
    "FINAL_SHARE",
    "FIRST_STEPS",
    "FORMULA_TERMS",
    "MASS_RTOL",
    "PEAK_WINDOW",
    "RISE_SHARE",
    "SIGN_CLASSES",
    "THRESHOLD_SHARE",
    "RunSummary",
    "block_spans",
    "drive_blocks",
    "early_steps",
    "entropy_blocks",
    "final_mean",
    "final_window",
    "first_finite",
    "formula_terms",
    "last_finite",
    "mass_imbalance",
    "ols_slope",
    "pass1_area",
    "pearson",
    "peak",
    "share_below",
    "sign_class",
    "smoothed_peak",
    "summarise",
    "term_key",
    "threshold",
    "threshold_step",
]

#: The share of a run's last steps whose mean is its "final" value of a training signal (one step
#: is noisy): the last ceil(FINAL_SHARE * n) of the n logged steps (:func:`final_window`).
FINAL_SHARE = 0.1
#: The steps whose mean is a run's first entropy (``entropy_first``).
FIRST_STEPS = 5
#: Steps per block in the entropy formula's checks: long enough to average the batch-to-batch
#: noise of the entropy, short enough to leave many blocks per run.
ENTROPY_BLOCK = 10
#: Imbalances below this fraction of the batch's total mass are rounding, not weighting: the logged
#: masses are float32 sums, so a centred estimator's m_S - m_F is ~1e-9, not 0.
MASS_RTOL = 1e-5
#: The smoothed peak reads pass@1 averaged over this many consecutive evaluations: from one
#: evaluation to the next pass@1 moves by more than its evaluation noise (the policy changes under
#: small batches), so a single evaluation's maximum is a poor peak (docs/results/paper/PILOT.md).
PEAK_WINDOW = 3
#: ``rise_step`` is the first step where the smoothed pass@1 has made this share of its gain: on a
#: flat, wandering plateau the peak can fall anywhere, while this step says when the gain stopped.
RISE_SHARE = 0.9
#: Time to threshold: a run has reached the gain a good static run makes once its smoothed pass@1 is at
#: least its base pass@1 plus this share of the best static arm's seed-mean smoothed gain
#: (:func:`threshold_step`). Fixed before the confirmation preset's runs: 75% asks for most of the
#: gain while staying below the plateau, where a run's smoothed pass@1 wanders by its evaluation noise.
THRESHOLD_SHARE = 0.75
#: The per-step metrics a summary keeps as curves. Runs logged before a key existed read it as NaN
#: throughout, and the readers that need it skip them.
CURVES = ("entropy", "rank1_share", *DIAGNOSTICS, *ENTROPY_FORMULA_KEYS, "reward_mean", *SCHEDULE, "step_seconds",
          "clip_fraction", "entropy_coef", "filtered_share")
#: A run's side of the sign axis, by the sign of its mean mass imbalance m_S - m_F (:func:`sign_class`).
SIGN_CLASSES = ("success-heavy", "failure-heavy", "centred")
#: The entropy formula's terms in words, keyed as :func:`formula_terms` returns them.
FORMULA_TERMS = {"drive": "drive", "mass": "-(m_S - m_F) H", "cov": "-Cov(A, log pi)"}


# -- numbers over steps ---------------------------------------------------------------------------


def first_finite(values: np.ndarray | None) -> float:
    """The first finite value (nan when there is none): a signal's value at its first logged step."""
    finite = np.flatnonzero(np.isfinite(values)) if values is not None else []
    return float(values[finite[0]]) if len(finite) else math.nan


def last_finite(values: np.ndarray | None) -> float:
    """The last finite value (nan when there is none)."""
    finite = np.flatnonzero(np.isfinite(values)) if values is not None else []
    return float(values[finite[-1]]) if len(finite) else math.nan


def final_window(n: int) -> int:
    """How many of a run's last ``n`` steps its final value averages: ceil(FINAL_SHARE * n), at least 1.

    The ceiling, not the floor, so the window never covers less than a tenth of the run: with the
    floor a 19-step run's "final" value would be its last step alone, while a 20-step run's averages
    two, and a short run's final value would be read off less of the run than its name says.
    ``fade compare`` always used the ceiling; the sweep's claims used the floor until the two were
    made one (they agree whenever n is a multiple of 10, as in every shipped report).
    """
    return max(1, math.ceil(FINAL_SHARE * n))


def final_mean(values: np.ndarray | None) -> float:
    """The mean of the finite values over the last :func:`final_window` steps."""
    if values is None or not len(values):
        return math.nan
    return finite_mean(values[-final_window(len(values)):])


def share_below(values: np.ndarray | None, bound: float) -> float:
    """The share of the finite values below ``bound`` (nan when there is none): with ``delta`` and 1,
    the share of steps on which FADE's sign knob acts."""
    if values is None:
        return math.nan
    finite = np.asarray(values, float)
    finite = finite[np.isfinite(finite)]
    return float((finite < bound).mean()) if finite.size else math.nan


def early_steps(steps: int) -> int:
    """The window of the entropy drop rate: the first third of the run (at least 2 steps)."""
    return max(2, math.ceil(steps / 3))


def ols_slope(x: np.ndarray, y: np.ndarray) -> float:
    """Least-squares slope of y on x over the finite pairs (nan with fewer than 2)."""
    keep = np.isfinite(x) & np.isfinite(y)
    x, y = x[keep], y[keep]
    if x.size < 2 or np.ptp(x) == 0:
        return math.nan
    xc = x - x.mean()
    return float((xc * (y - y.mean())).sum() / (xc * xc).sum())


def pearson(x: np.ndarray, y: np.ndarray) -> float:
    """Pearson correlation of the finite pairs (nan with fewer than 3 or a constant side).

    Defined here because a run's summary needs it (``drive_r_blocks``); the experiments' statistics
    (:mod:`fade.experiments.stats`) export this same function for the correlations across runs.
    """
    x, y = np.asarray(x, float), np.asarray(y, float)
    keep = np.isfinite(x) & np.isfinite(y)
    x, y = x[keep], y[keep]
    if x.size < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return math.nan
    return float(np.corrcoef(x, y)[0, 1])


# -- the entropy formula --------------------------------------------------------------------------


def mass_imbalance(m_s: np.ndarray, m_f: np.ndarray) -> np.ndarray:
    """m_S - m_F per step, with differences inside float32 rounding of the masses set to exactly 0.

    Without this, a run of a centred estimator (grpo, rloo, maxrl, ...) carries an imbalance of
    ~1e-9 whose sign is noise, and correlations over such runs measure that noise.
    """
    m_s, m_f = np.asarray(m_s, float), np.asarray(m_f, float)
    diff = m_s - m_f
    return np.where(np.abs(diff) <= MASS_RTOL * (np.abs(m_s) + np.abs(m_f)), 0.0, diff)


def block_spans(n: int, block: int = ENTROPY_BLOCK) -> Iterator[tuple[slice, slice, slice]]:
    """(block j, block j + 1, the updates from the centre of j to the centre of j + 1) for each pair
    of consecutive whole blocks of ``block`` steps among ``n``."""
    for j in range(n // block - 1):
        yield (slice(j * block, (j + 1) * block), slice((j + 1) * block, (j + 2) * block),
               slice(j * block + block // 2, (j + 1) * block + block // 2))


def entropy_blocks(steps: np.ndarray, entropy: np.ndarray, m_s: np.ndarray, m_f: np.ndarray,
                   block: int = ENTROPY_BLOCK) -> tuple[np.ndarray, np.ndarray]:
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
    for this, nxt, span in block_spans(len(steps), block):
        obs = finite_mean(entropy[nxt]) - finite_mean(entropy[this])
        pred = float(np.nansum(g[span]))
        if math.isfinite(obs) and math.isfinite(pred):
            predicted.append(pred)
            observed.append(obs)
    return np.array(predicted), np.array(observed)


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
    for this, nxt, span in block_spans(len(entropy), block):
        obs = (finite_mean(entropy[nxt]) - finite_mean(entropy[this])) / block
        pred = finite_mean(drive[span])
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


def term_key(name: str) -> str:
    """The scalars' prefix of a formula term: ``drive``, ``drive_mass``, ``drive_cov``."""
    return "drive" if name == "drive" else f"drive_{name}"


# -- pass@1 over evaluations ----------------------------------------------------------------------


def peak(eval_steps: np.ndarray, pass1: np.ndarray) -> tuple[float, float]:
    """(pass@1, step) of the first evaluation at the highest pass@1, where a checkpoint would be
    selected; (nan, nan) without a finite pass@1."""
    best = peak_eval_index(pass1) if pass1.size else None
    if best is None:
        return math.nan, math.nan
    return float(pass1[best]), float(eval_steps[best])


def smoothed_peak(eval_steps: np.ndarray, pass1: np.ndarray, window: int = PEAK_WINDOW) -> tuple[float, float, float]:
    """(step, value) of the first peak of pass@1's centred moving average over ``window`` evaluations,
    read only where the window is full, and the first step where that average has made
    :data:`RISE_SHARE` of its gain over the first evaluation (nan when it never rises above it);
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
        rise = float(steps[lo + int(np.argmax(smooth[lo:hi] - values[0] >= RISE_SHARE * gain))])
    return float(steps[best]), float(smooth[best]), rise


def threshold(base_pass1: float, gain: float, share: float = THRESHOLD_SHARE) -> float:
    """The pass@1 a run must reach in :func:`threshold_step`: its own base pass@1 plus ``share`` of
    ``gain``, the best static arm's seed-mean smoothed gain (``smoothed_gain``)."""
    return float(base_pass1) + share * float(gain)


def threshold_step(eval_steps: np.ndarray, pass1: np.ndarray, threshold: float, *, steps: int,
                   eval_every: int, window: int = PEAK_WINDOW) -> tuple[float, bool]:
    """(step, crossed): the first evaluation step at which pass@1's centred moving average over
    ``window`` evaluations (the smoothing of :func:`smoothed_peak`, its window shrinking at the two
    ends so the first evaluation can count) is at least ``threshold``.

    A run that never gets there is counted at ``steps + eval_every``, one evaluation past its end:
    it did not cross within the run, and counting it at infinity would leave no mean to compare,
    while counting it at its last step would credit it with a crossing it never made; ``crossed``
    says which it was. A run without a finite pass@1 gives (nan, False).
    """
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
        raise ValueError(f"steps must be a positive integer, got {steps!r}")
    if isinstance(eval_every, bool) or not isinstance(eval_every, int) or eval_every < 1:
        raise ValueError(f"eval_every must be a positive integer, got {eval_every!r}")
    if not math.isfinite(threshold):
        raise ValueError(f"threshold must be a finite pass@1, got {threshold!r}")
    eval_steps, pass1 = np.asarray(eval_steps, float), np.asarray(pass1, float)
    if eval_steps.shape != pass1.shape:
        raise ValueError(f"eval_steps and pass1 differ in shape: {eval_steps.shape} and {pass1.shape}")
    keep = np.isfinite(pass1) & np.isfinite(eval_steps)
    if not keep.any():
        return math.nan, False
    smooth = moving_average(pass1[keep], window)
    hit = np.flatnonzero(smooth >= threshold)
    if hit.size:
        return float(eval_steps[keep][hit[0]]), True
    return float(steps + eval_every), False


def pass1_area(eval_steps: np.ndarray, pass1: np.ndarray) -> float:
    """The area under the pass@1 curve per training step: the trapezoid rule over the finite
    evaluations, divided by the steps they span, so it reads as the run's mean pass@1 over
    training (a run that gains early scores higher than one that gains as much late). nan with
    fewer than two evaluations."""
    eval_steps, pass1 = np.asarray(eval_steps, float), np.asarray(pass1, float)
    keep = np.isfinite(pass1) & np.isfinite(eval_steps)
    x, y = eval_steps[keep], pass1[keep]
    if x.size < 2 or x[-1] <= x[0]:
        return math.nan
    return float(np.sum((x[1:] - x[:-1]) * (y[1:] + y[:-1]) / 2) / (x[-1] - x[0]))


# -- one run --------------------------------------------------------------------------------------


@dataclass
class RunSummary:
    """The numbers of one run, with the curves the figures draw.

    ``scalars``, each defined once, in :func:`summarise`:

    - ``entropy_first``: mean entropy over the first :data:`FIRST_STEPS` steps; ``entropy_final``:
      :func:`final_mean` of the entropy; ``entropy_drop_rate``: minus the least-squares slope of the
      entropy over the first :func:`early_steps` steps; ``rank1_final``: the last step's rank1_share.
    - ``esf_mean``, ``difficulty_mean``, ``sign_balance_mean``, ``alpha_mean``, ``delta_mean``: the
      mean over the run's finite values; ``delta_below1``: :func:`share_below` (delta, 1).
    - ``peak_pass1``, ``peak_step``: the first evaluation at the highest pass@1; ``peak_fraction``:
      its step over the planned steps; ``smoothed_peak_step``, ``smoothed_peak_pass1``,
      ``rise_step``, ``smoothed_peak_fraction``: :func:`smoothed_peak`; ``base_pass1``,
      ``final_pass1``: the first and last evaluation's; ``smoothed_gain``: ``smoothed_peak_pass1``
      minus ``base_pass1``; ``pass1_area``: :func:`pass1_area`; ``pass@k`` for every k of the last
      evaluation, ``passk_mean`` their mean; ``gain/d<b>``: last minus first pass@1 of bucket b;
      ``distinct_correct_final``: the last evaluation's distinct correct answers per problem
      (``distinct_correct``: the mean over its problems of how many different correct answers its
      samples hold; nan where the log has none).
    - ``mass_imbalance_mean``: the mean of :func:`mass_imbalance`; ``entropy_change_early``: the
      early entropy slope; ``<term>_early`` and ``<term>_r_blocks`` for each of :func:`formula_terms`
      (prefixes by :func:`term_key`): its mean over the early steps, and the Pearson r of
      :func:`drive_blocks` with it; ``entropy_predicted_early`` and ``entropy_observed_early``: the
      mass term's sum and the observed change over the early steps (:func:`entropy_blocks`' reading).
    """

    directory: Path
    planned_steps: int
    steps: np.ndarray
    curves: dict[str, np.ndarray]
    eval_steps: np.ndarray
    pass1: np.ndarray
    base: dict[str, float]
    final: dict[str, float]
    scalars: dict[str, float]

    def passk(self, record: dict[str, float]) -> dict[int, float]:
        """{k: pass@k} of an evaluation record (``base`` or ``final``), its finite values only."""
        values = {k: record[pass_key(k)] for k in logged_ks(record)}
        return {k: v for k, v in values.items() if math.isfinite(v)}

    def buckets(self) -> list[int]:
        """The difficulty buckets of the last evaluation's pass@1."""
        return logged_buckets(self.final, "pass@1")


def sign_class(summary: RunSummary) -> str:
    """The run's side of the sign axis (:data:`SIGN_CLASSES`): ``centred`` when m_S = m_F in every
    batch up to float rounding, else by the sign of the mean imbalance m_S - m_F over the run."""
    mean = summary.scalars.get("mass_imbalance_mean", math.nan)
    if not math.isfinite(mean) or mean == 0:
        return "centred"
    return "success-heavy" if mean > 0 else "failure-heavy"


def _numbers(record: dict[str, Any]) -> dict[str, float]:
    return {k: float(v) for k, v in record.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}


def _planned_steps(run: Run, logged: np.ndarray) -> int:
    steps = run.config.get("steps")
    if isinstance(steps, int) and not isinstance(steps, bool) and steps > 0:
        return steps
    return int(np.nanmax(logged)) if logged.size else 0


def summarise(run: Run, steps: int | None = None) -> RunSummary:
    """Summarise ``run`` (a :class:`~fade.testbed.runlog.Run` from ``load_run``); ``steps``: the run's
    planned number of steps (default: ``run.json``'s, else the last logged step). ValueError when
    ``metrics.jsonl`` holds no complete record."""
    metrics = run.metrics
    if not metrics:
        raise ValueError(f"{run.directory}: {METRICS_FILE} has no complete record")
    logged = metric_column(metrics, "step")
    planned = _planned_steps(run, logged) if steps is None else steps
    curves = {k: metric_column(metrics, k) for k in CURVES}
    evals = run.evals
    eval_steps = metric_column(evals, "step") if evals else np.array([])
    pass1 = metric_column(evals, "pass@1") if evals else np.array([])
    base = _numbers(evals[0]) if evals else {}
    final = _numbers(evals[-1]) if evals else {}

    n = len(logged)
    early = logged <= early_steps(planned)
    entropy = curves["entropy"]
    scalars: dict[str, float] = {
        "entropy_first": finite_mean(entropy[: min(FIRST_STEPS, n)]),
        "entropy_final": final_mean(entropy),
        "entropy_drop_rate": -ols_slope(logged[early], entropy[early]),
        "rank1_final": finite_mean(curves["rank1_share"][-1:]),
        "esf_mean": finite_mean(curves["effective_sample_fraction"]),
        "difficulty_mean": finite_mean(curves["difficulty"]),
        "sign_balance_mean": finite_mean(curves["sign_balance"]),
        "alpha_mean": finite_mean(curves["alpha"]),
        "delta_mean": finite_mean(curves["delta"]),
    }
    scalars["peak_pass1"], scalars["peak_step"] = peak(eval_steps, pass1)
    scalars["base_pass1"] = base.get("pass@1", math.nan)
    scalars["final_pass1"] = final.get("pass@1", math.nan)
    ks = logged_ks(final)
    for k in ks:
        scalars[pass_key(k)] = final[pass_key(k)]
    scalars["passk_mean"] = float(np.mean([final[pass_key(k)] for k in ks])) if ks else math.nan
    scalars["distinct_correct_final"] = final.get("distinct_correct", math.nan)
    for b in logged_buckets(final, "pass@1"):
        key = bucket_key("pass@1", b)
        scalars[f"gain/d{b}"] = final[key] - base.get(key, math.nan)
    imbalance = mass_imbalance(curves["positive_mass"], curves["negative_mass"])
    scalars["mass_imbalance_mean"] = finite_mean(imbalance)
    scalars["peak_fraction"] = scalars["peak_step"] / planned if planned else math.nan
    scalars["smoothed_peak_step"], scalars["smoothed_peak_pass1"], scalars["rise_step"] = smoothed_peak(
        eval_steps, pass1
    )
    scalars["smoothed_peak_fraction"] = scalars["smoothed_peak_step"] / planned if planned else math.nan
    scalars["smoothed_gain"] = scalars["smoothed_peak_pass1"] - scalars["base_pass1"]
    scalars["pass1_area"] = pass1_area(eval_steps, pass1)
    scalars["delta_below1"] = share_below(curves["delta"], 1.0)
    # The entropy formula with both terms: the early change per step against the early mean drive
    # (compared across runs), and the per-block change against the block-mean drive (within a run).
    scalars["entropy_change_early"] = -scalars["entropy_drop_rate"]
    for name, term in formula_terms(curves).items():
        scalars[f"{term_key(name)}_early"] = finite_mean(term[early])
        scalars[f"{term_key(name)}_r_blocks"] = pearson(*drive_blocks(entropy, term))
    early_g = imbalance * entropy
    scalars["entropy_predicted_early"] = float(np.nansum(early_g[early][:-1])) if early.sum() > 1 else math.nan
    span = float(logged[early][-1] - logged[early][0]) if early.any() else math.nan
    scalars["entropy_observed_early"] = -scalars["entropy_drop_rate"] * span
    return RunSummary(directory=run.directory, planned_steps=planned, steps=logged, curves=curves,
                      eval_steps=eval_steps, pass1=pass1, base=base, final=final, scalars=scalars)
