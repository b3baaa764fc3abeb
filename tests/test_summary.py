"""A run's summary, the one definition of every number a run is summarised by: the final window,
the share of steps below a bound, the smoothed peak, the entropy formula's blocks and the float32
reading of a centred imbalance, each against its closed form; and the tables of ``fade compare``
and the sweep's claims reading the same numbers off the same run (tests/test_report.py)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from fade.series import moving_average
from fade.testbed.runlog import load_run
from fade.testbed.summary import (
    ENTROPY_BLOCK,
    FINAL_SHARE,
    PEAK_WINDOW,
    THRESHOLD_SHARE,
    drive_blocks,
    final_mean,
    final_window,
    mass_imbalance,
    pass1_area,
    share_below,
    smoothed_peak,
    summarise,
    threshold,
    threshold_step,
)


def test_the_final_window_is_the_last_tenth_of_the_steps_rounded_up():
    """ceil(n / 10) steps, at least one: never less than a tenth of the run, never a whole step more."""
    for n in range(1, 401):
        k = final_window(n)
        assert k >= 1 and k >= FINAL_SHARE * n - 1e-9 and k < FINAL_SHARE * n + 1
    assert [final_window(n) for n in (1, 9, 10, 11, 19, 20, 21, 120, 200, 250)] == [1, 1, 1, 2, 2, 2, 3, 12, 20, 25]
    values = np.arange(19, dtype=float)
    assert final_mean(values) == pytest.approx((17 + 18) / 2)  # 19 steps: the last two
    assert final_mean(np.array([*np.zeros(18), 2.0, np.nan])) == 2.0  # a gap inside the window is dropped
    assert math.isnan(final_mean(np.array([]))) and math.isnan(final_mean(None))


def test_share_below_counts_finite_values_only():
    delta = np.array([1.0, 0.6, np.nan, 0.3, 1.0, np.inf])
    assert share_below(delta, 1.0) == pytest.approx(2 / 4)
    assert math.isnan(share_below(np.full(3, np.nan), 1.0))


@pytest.mark.parametrize("name, centred", [("grpo", True), ("rloo", True), ("maxrl", True), ("psr", False),
                                           ("w_reinforce", False)])
def test_mass_imbalance_is_zero_exactly_for_centred_estimators_in_float32(name, centred):
    """The trainer logs masses of float32 advantages: a centred estimator's m_S - m_F is rounding
    (~1e-9), and the check must read it as 0; a sign-biased one keeps its imbalance."""
    import torch

    import fade

    gen = torch.Generator().manual_seed(0)
    imbalances = []
    for _ in range(50):
        rewards = (torch.rand(32 * 8, generator=gen) < torch.rand(32, generator=gen).repeat_interleave(8)).float()
        report = fade.decompose(fade.advantages(name, rewards, 8), rewards, 8)
        imbalances.append(float(mass_imbalance(report.positive_mass, report.negative_mass)))
    assert all(x == 0.0 for x in imbalances) == centred, imbalances

def test_drive_blocks_recover_the_formula_on_a_closed_form():
    """H_{t+1} = H_t + eta d_t with d constant on long stretches: the observed change per step of each
    block pair is eta times the mean drive between the blocks' centres."""
    eta, block = 0.01, ENTROPY_BLOCK
    drive = np.repeat([1.0, -2.0, 0.5, 3.0], 3 * block)
    entropy = 1.0 + eta * np.concatenate([[0.0], np.cumsum(drive)[:-1]])
    predicted, observed = drive_blocks(entropy, drive)
    assert len(predicted) == len(drive) // block - 1
    mean_of_neighbours = [(entropy[(j + 1) * block:(j + 2) * block].mean() - entropy[j * block:(j + 1) * block].mean())
                          / block for j in range(len(predicted))]
    np.testing.assert_allclose(observed, mean_of_neighbours)
    steady = np.isin(predicted, drive)  # spans inside one stretch: exactly eta * drive
    assert steady.sum() >= 4
    np.testing.assert_allclose(observed[steady], eta * predicted[steady])
    assert drive_blocks(entropy, np.full_like(drive, np.nan))[0].size == 0  # not logged: no pairs

def test_the_smoothed_peak_reads_only_full_windows():
    """A rising run peaks at the last full window; on a flat, noisy plateau every full window is
    equally likely to win, while a window shrunk at the end (two evaluations, noisier) would win
    more than its share and make a plateau look like a late peak."""
    steps = np.arange(0, 220, 20, dtype=float)
    # Still rising: the peak and 90% of the gain both at the last full window.
    assert smoothed_peak(steps, np.linspace(0.1, 0.3, 11)) == (180.0, pytest.approx(0.28), 180.0)
    # Up by step 80, then a plateau whose last full window is higher by a hair: a late peak, an early rise.
    plateau = np.array([0.1, 0.15, 0.2, 0.25, 0.25, 0.24, 0.26, 0.25, 0.24, 0.25, 0.27])
    assert smoothed_peak(steps, plateau)[0::2] == (180.0, 80.0)
    assert smoothed_peak(steps[:2], np.array([0.1, 0.2])) == (0.0, pytest.approx(0.15), 0.0)  # too few: all count
    step, value, rise = smoothed_peak(steps, np.where(np.arange(11) == 4, np.nan, np.linspace(0.3, 0.1, 11)))
    assert step == 20.0 and value == pytest.approx((0.3 + 0.28 + 0.26) / 3)  # nan evaluations dropped first
    assert math.isnan(rise)  # never above the first evaluation: no gain to make

    rng = np.random.default_rng(0)
    draws = 3000
    full, shrunk = np.zeros(11), np.zeros(11)
    for _ in range(draws):
        pass1 = 0.2 + rng.normal(0, 0.02, 11)
        full[np.searchsorted(steps, smoothed_peak(steps, pass1)[0])] += 1
        shrunk[int(np.argmax(moving_average(pass1, PEAK_WINDOW)))] += 1
    assert full[0] == full[-1] == 0
    share = full[1:-1] / draws
    assert share.min() > 0.6 / 9 and share.max() < 1.6 / 9  # about 1/9 each
    assert shrunk[-1] / draws > 1.5 / 11  # the bias the full windows remove


def test_time_to_threshold_on_hand_made_curves():
    """The first evaluation whose 3-evaluation centred average reaches the threshold: a rising run
    crosses where its average does, a run that never gets there counts one evaluation past its end,
    and a run already there at its first evaluation crosses at that evaluation."""
    steps = np.arange(0, 110, 10, dtype=float)  # 100 steps, evaluated every 10
    rising = np.linspace(0.1, 0.3, 11)  # +0.02 an evaluation: the centred average is the value itself inside
    level = threshold(0.1, 0.2)  # base 0.1 plus 75% of a gain of 0.2
    assert THRESHOLD_SHARE == 0.75 and level == pytest.approx(0.25)
    # Crossing: the average passes 0.25 between the evaluations of steps 70 (0.24) and 80 (0.26).
    assert threshold_step(steps, rising, level, steps=100, eval_every=10) == (80.0, True)
    # The smoothing decides, not one lucky evaluation: a single spike to 0.4 at step 30 is averaged away.
    spiky = np.array([0.1, 0.1, 0.1, 0.4, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1])
    assert threshold_step(steps, spiky, level, steps=100, eval_every=10) == (110.0, False)
    assert threshold_step(steps, spiky, 0.2, steps=100, eval_every=10) == (20.0, True)  # (0.1 + 0.1 + 0.4) / 3
    # Never crossing: counted at the run's length plus one evaluation interval.
    assert threshold_step(steps, np.full(11, 0.2), level, steps=100, eval_every=10) == (110.0, False)
    # Crossing at the first evaluation: the window shrinks there (steps 0 and 10 averaged).
    assert threshold_step(steps, np.full(11, 0.3), level, steps=100, eval_every=10) == (0.0, True)
    assert threshold_step(steps, np.r_[0.3, 0.2, np.full(9, 0.0)], level, steps=100, eval_every=10) == (0.0, True)
    # Evaluations that failed (nan) are dropped before smoothing; none at all: no step.
    holes = np.where(np.arange(11) == 8, np.nan, rising)
    # Step 70 now averages 0.22, 0.24 and 0.28 (0.247 < 0.25); step 90 averages 0.24, 0.28 and 0.30.
    assert threshold_step(steps, holes, level, steps=100, eval_every=10) == (90.0, True)
    assert math.isnan(threshold_step(steps, np.full(11, np.nan), level, steps=100, eval_every=10)[0])
    for bad, needle in ((dict(steps=0, eval_every=10), "steps"), (dict(steps=100, eval_every=0), "eval_every")):
        with pytest.raises(ValueError, match=needle):
            threshold_step(steps, rising, level, **bad)
    with pytest.raises(ValueError, match="threshold"):
        threshold_step(steps, rising, math.nan, steps=100, eval_every=10)


def test_the_pass1_area_is_the_trapezoid_mean_over_training():
    steps = np.array([0.0, 10.0, 30.0])
    assert pass1_area(steps, np.array([0.1, 0.3, 0.3])) == pytest.approx((10 * 0.2 + 20 * 0.3) / 30)
    assert pass1_area(steps, np.full(3, 0.25)) == pytest.approx(0.25)  # a flat curve's mean is its level
    early, late = np.array([0.1, 0.3, 0.3]), np.array([0.1, 0.1, 0.3])
    assert pass1_area(steps, early) > pass1_area(steps, late)  # the same final gain, made earlier
    assert math.isnan(pass1_area(steps[:1], early[:1]))


def _write_run(directory: Path, steps: int) -> None:
    """A run of ``steps`` logged steps whose run.json plans 30."""
    directory.mkdir(parents=True)
    (directory / "metrics.jsonl").write_text(
        "".join(json.dumps({"step": s, "entropy": 1.0}) + "\n" for s in range(1, steps + 1))
    )
    evals = [{"step": 0, "pass@1": 0.2}, {"step": steps, "pass@1": 0.4}]
    (directory / "eval.jsonl").write_text("".join(json.dumps(r) + "\n" for r in evals))
    (directory / "run.json").write_text(json.dumps({"estimator": "fade", "steps": 30}))


def test_a_run_outside_a_sweep_reads_its_planned_steps_from_run_json(tmp_path):
    _write_run(tmp_path / "run", 19)
    summary = summarise(load_run(tmp_path / "run"))
    assert summary.planned_steps == 30  # run.json's steps, not the 19 logged
    assert summary.scalars["peak_fraction"] == pytest.approx(19 / 30)
    (tmp_path / "run" / "run.json").unlink()
    assert summarise(load_run(tmp_path / "run")).planned_steps == 19  # no run.json: the last logged step
    assert summarise(load_run(tmp_path / "run"), steps=40).planned_steps == 40
    (tmp_path / "run" / "metrics.jsonl").write_text("")
    with pytest.raises(ValueError, match="has no complete record"):
        summarise(load_run(tmp_path / "run"))


def test_distinct_correct_answers_are_the_last_evaluations(tmp_path):
    """distinct_correct_final: the last evaluation's distinct correct answers per problem, the base's
    and a mid-run peak's left aside; nan for a log from before evaluations counted them."""
    directory = tmp_path / "run"
    _write_run(directory, 10)
    evals = [{"step": 0, "pass@1": 0.2, "distinct_correct": 0.5}, {"step": 5, "pass@1": 0.5, "distinct_correct": 2.0},
             {"step": 10, "pass@1": 0.4, "distinct_correct": 1.25}]
    (directory / "eval.jsonl").write_text("".join(json.dumps(r) + "\n" for r in evals))
    assert summarise(load_run(directory)).scalars["distinct_correct_final"] == 1.25
    _write_run(tmp_path / "old", 10)
    assert math.isnan(summarise(load_run(tmp_path / "old")).scalars["distinct_correct_final"])


def test_summaries_claims_and_their_wording_import_no_plotting_library():
    # A claim's module holds its words and its figures; matplotlib and rich load only when one draws.
    import subprocess
    import sys

    code = ("import sys\nimport fade.testbed.summary, fade.experiments.claims\n"
            "print(sorted(m for m in ('matplotlib', 'rich', 'fade.testbed.report') if m in sys.modules))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["[]"], out
