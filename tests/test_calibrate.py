"""Calibration of the experiments' regime: the base policy's solve rates and the requirements on them."""

from __future__ import annotations

import pytest

from fade.experiments.calibrate import MID_RANGE, Calibration, calibrate, regime_checks


def _cal(pass1, rates, solutions=3.0) -> Calibration:
    return Calibration(task="t", samples=64, pass1_by_bucket=pass1, train_solve_rates=rates,
                       train_buckets=[1] * len(rates), mean_solutions=solutions)


def test_regime_checks_state_each_requirement_with_its_value():
    good = _cal({1: 0.4, 4: 0.07}, [0.0, 0.05, 0.1, 0.4, 0.9])
    assert good.mid_fraction == pytest.approx(3 / 5)
    assert all(c.ok for c in regime_checks(good))
    too_hard = _cal({1: 0.4, 4: 0.0}, [0.0, 0.0, 0.0, 0.2], solutions=1.0)
    checks = regime_checks(too_hard)
    assert [c.ok for c in checks] == [False, False, False]
    assert checks[0].value == "0.000" and checks[1].value == "25.0%" and checks[2].value == "1.00"
    assert len(regime_checks(_cal({1: 0.1}, [0.1], solutions=None))) == 2  # a task that cannot count answers


def test_histogram_covers_every_prompt_once():
    rates = [0.0, 0.01, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 0.99, 1.0]
    hist = dict(_cal({1: 0.1}, rates).histogram())
    assert sum(hist.values()) == pytest.approx(1.0)
    assert hist["0"] == hist["1"] == hist["(0, 0.05)"] == pytest.approx(0.1)
    assert MID_RANGE == (0.05, 0.4)


def test_calibrate_samples_the_shipped_base_of_a_subset_task():
    cal = calibrate("countdown_multi", train_prompts=8, test_prompts=8, samples=4, seed=0, device="cpu")
    assert cal.task == "countdown_multi" and cal.samples == 4
    assert sorted(cal.pass1_by_bucket) == [1, 2, 3, 4]
    assert len(cal.train_solve_rates) == 8 and all(0 <= r <= 1 for r in cal.train_solve_rates)
    assert cal.mean_solutions >= 2
    again = calibrate("countdown_multi", train_prompts=8, test_prompts=8, samples=4, seed=0, device="cpu")
    assert again == cal  # seeded


@pytest.mark.parametrize("kwargs, match", [
    ({"samples": 0}, "samples"), ({"train_prompts": True}, "train_prompts"), ({"test_prompts": -1}, "test_prompts"),
])
def test_bad_arguments_are_refused(kwargs, match):
    with pytest.raises(ValueError, match=match):
        calibrate("countdown_multi", **kwargs)
    with pytest.raises(ValueError, match="unknown task"):
        calibrate("sudoku")


def test_fade_calibrate_writes_json_and_png(tmp_path, capsys):
    import json

    import matplotlib.image

    from fade.cli import main

    out = tmp_path / "cal"
    assert main(["calibrate", "--task", "countdown_multi", "--train-prompts", "8", "--test-prompts", "4",
                 "--samples", "4", "--device", "cpu", "--out", str(out)]) == 0
    doc = json.loads((out / "calibration.json").read_text())
    assert len(doc["train_solve_rates"]) == 8 and len(doc["checks"]) == 3
    assert {"requirement", "value", "ok"} <= set(doc["checks"][0])
    assert matplotlib.image.imread(out / "calibration.png").shape[0] > 100
    assert "hardest bucket" in capsys.readouterr().out
    assert main(["calibrate", "--task", "countdown_multi", "--samples", "0", "--out", str(tmp_path / "x")]) == 2


def test_calibrate_reports_its_prompts_as_it_goes(monkeypatch):
    """Sampling 512 prompts x 64 takes minutes: the bar counts every prompt, test and training."""
    import contextlib

    import fade.progress

    calls: list[tuple[str, int]] = []

    @contextlib.contextmanager
    def recording(description, total, completed=0, enabled=True, **kwargs):
        calls.append((f"open {description} {total} {enabled}", -1))
        yield lambda stats, units=1: calls.append((stats, units))

    monkeypatch.setattr(fade.progress, "step_bar", recording)
    calibrate("countdown_multi", train_prompts=6, test_prompts=5, samples=2, seed=0, device="cpu", progress=True)
    assert calls[0] == ("open calibrate 11 True", -1)
    assert sum(units for _, units in calls[1:]) == 11
    assert calls[-1] == ("countdown_multi: training prompts 6/6, 2 samples each", 6)
    assert any(stats == "countdown_multi: test prompts 5/5, 2 samples each" for stats, _ in calls)
