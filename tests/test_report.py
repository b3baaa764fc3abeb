"""Reading run directories back and drawing them: what a killed or resumed run leaves is tolerated,
what is corrupt is named, the trainer writes the keys the schema lists, reading needs no plotting
library, the PNGs have their documented sizes, the table shows the right numbers."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import matplotlib.image
import numpy as np
import pytest
from rich.console import Console

import fade
from fade import weighing
from fade.plots import headless_pyplot, legend_in_headroom
from fade.series import moving_average
from fade.testbed import report, runlog
from fade.testbed.report import (
    COMPARE_PIXEL_SIZE,
    PLANE_PIXEL_SIZE,
    compare_runs,
    compare_table,
    passk_pixel_size,
    plot_run,
    summary_table,
    training_panels,
    training_pixel_size,
)
from fade.testbed.runlog import (
    DIAGNOSTICS,
    ENTROPY_FORMULA_KEYS,
    EVAL_KEYS,
    METRIC_KEYS,
    PER_BUCKET_KEYS,
    SCHEDULE,
    bucket_key,
    load_run,
    logged_buckets,
    logged_ks,
    metric_column,
    pass_key,
    read_json_object,
    read_log,
)
from fade.testbed.tables import compare_labels

KS = (1, 2, 4, 8, 16, 32, 64)
BUCKETS = (1, 2, 3)


def _write_jsonl(path: Path, rows: list[dict], tail: str = "") -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows) + tail)
    return path


def _metrics(steps: range, *, fade: bool, seed: int = 0, kl: bool = True) -> list[dict]:
    """Plausible per-step records: solve rate rising, entropy falling, FADE's schedule following."""
    rng = np.random.default_rng(seed)
    step = np.arange(steps.start, steps.stop)
    t = step / max(steps.stop - 1, 1)
    solve = np.clip(0.2 + 0.5 * t + 0.03 * rng.standard_normal(len(t)), 0, 1)
    entropy = 1.5 * np.exp(-2 * t) + 0.02 * rng.standard_normal(len(t))
    columns = {
        "step": step,
        "reward_mean": solve,
        "solve_rate": solve,
        "entropy": entropy,
        "param_norm": 900 + 5 * t,
        "grad_norm": 1 + 0.1 * rng.standard_normal(len(t)),
        "rank1_share": 0.1 + 0.3 * t,
        "positive_mass": np.full(len(t), 0.2),
        "negative_mass": 0.2 + 0.05 * t,
        "sign_balance": 0.5 - 0.05 * t,
        "difficulty": 0.3 + 0.4 * t,
        "effective_sample_fraction": np.full(len(t), 0.6),
        "cov_adv_logp": 0.05 * rng.standard_normal(len(t)),
        "step_seconds": np.full(len(t), 1.0),
        "sample_seconds": np.full(len(t), 0.7),
        "policy_seconds": np.full(len(t), 0.001),
        "advantage_seconds": np.full(len(t), 0.01),
        "update_seconds": np.full(len(t), 0.29),
        "clip_fraction": np.full(len(t), 0.02),
        "completion_tokens": np.full(len(t), 96),
        "lr": np.full(len(t), 1e-5),
    }
    if kl:
        columns["kl"] = 0.001 * step
    columns["mass_entropy_term"] = (columns["positive_mass"] - columns["negative_mass"]) * entropy
    columns["entropy_drive"] = -(columns["mass_entropy_term"] + columns["cov_adv_logp"])
    for b in BUCKETS:
        columns[f"solve_rate/d{b}"] = columns[f"reward_mean/d{b}"] = np.clip(solve + 0.2 * (2 - b), 0, 1)
    if fade:
        p_hat = 0.3 + 0.4 * t
        columns.update(
            alpha=np.clip(3 * (1 - p_hat) / (2 * p_hat), 1, 3),
            delta=np.clip(1 + entropy - 0.75, 0.3, 1),
            p_hat=p_hat,
            h_hat=entropy,
            h_star=np.full(len(t), 0.75),
        )
    lists = {key: values.tolist() for key, values in columns.items()}
    # What a run without them logs as null: the other loss metrics, an entropy term, the filter.
    nulls = dict.fromkeys(("grad_norm_last", "clip_fraction_lower", "cov_clip_fraction", "ppo_kl", "ppo_kl_abs",
                           "entropy_coef", "update_entropy", "filtered_share", "sample_draws", "groups_kept"))
    return [{**dict(zip(lists, row)), **nulls} for row in zip(*lists.values())]


def _eval(step: int, pass1: float, *, buckets: bool = True) -> dict:
    row = {f"pass@{k}": min(1.0, 1 - (1 - pass1) ** k) for k in KS}
    row.update(step=step, distinct_correct=1 + 2 * pass1, greedy=pass1 + 0.05, n_prompts=200, n_samples=64)
    if buckets:
        for b in BUCKETS:
            row[f"pass@1/d{b}"] = min(1.0, pass1 + 0.1 * (2 - b))
            row[f"distinct_correct/d{b}"] = 1.0
    return row


def _write_run(
    directory: Path,
    *,
    steps: int = 60,
    estimator: str = "fade",
    evals: list[dict] | None = None,
    config: bool = True,
    kl: bool = True,
) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    fade = estimator == "fade"
    _write_jsonl(directory / "metrics.jsonl", _metrics(range(1, steps + 1), fade=fade, kl=kl))
    if evals is None:
        evals = [_eval(0, 0.125), _eval(steps // 2, 0.625), _eval(steps, 0.5)]
    if evals:
        _write_jsonl(directory / "eval.jsonl", evals)
    if config:
        args = {"h_star_ratio": 0.5} if fade else {}
        cfg = {"task": "countdown", "estimator": estimator, "estimator_args": args, "steps": steps, "seed": 3}
        (directory / "run.json").write_text(json.dumps(cfg))
    return directory


def _image(path: Path) -> np.ndarray:
    assert path.is_file() and path.stat().st_size > 0
    return matplotlib.image.imread(path)


def _render(table) -> str:
    console = Console(record=True, width=200)
    console.print(table)
    return console.export_text()


def _row(text: str, name: str) -> list[str]:
    """The cells of the table row whose first cell is ``name``."""
    for line in text.splitlines():
        cells = [c.strip() for c in line.replace("┃", "│").split("│")]
        cells = [c for c in cells if c]
        if cells and cells[0] == name:
            return cells[1:]
    raise AssertionError(f"no row {name!r} in\n{text}")


# -- reading ------------------------------------------------------------------------------------


def test_read_log_skips_blank_lines_and_a_truncated_last_line(tmp_path):
    path = _write_jsonl(tmp_path / "m.jsonl", [{"step": 1}, {"step": 2}], tail='\n{"step": 3, "rew')
    with pytest.warns(RuntimeWarning, match=r"m\.jsonl:4: skipped the unfinished last line") as caught:
        assert read_log(path) == [{"step": 1}, {"step": 2}]
    assert len(caught) == 1


def test_read_log_tolerates_a_last_line_cut_inside_a_multibyte_character(tmp_path):
    path = tmp_path / "m.jsonl"
    path.write_bytes(b'{"step": 1}\n' + '{"note": "é'.encode()[:-1])
    with pytest.warns(RuntimeWarning):
        assert read_log(path) == [{"step": 1}]


def test_read_log_corrupt_middle_line_names_file_and_line(tmp_path):
    path = tmp_path / "m.jsonl"
    path.write_text('{"step": 1}\n{"step": 2,,}\n{"step": 3}\n')
    with pytest.raises(ValueError, match=r"m\.jsonl:2: not valid JSON \(.* at column 12\): expected"):
        read_log(path)


def test_read_log_rejects_a_line_that_is_not_an_object(tmp_path):
    path = tmp_path / "m.jsonl"
    path.write_text('{"step": 1}\n[1, 2]\n{"step": 3}\n')
    with pytest.raises(ValueError, match=r"m\.jsonl:2: a JSON list: expected one JSON object per line"):
        read_log(path)


def test_read_log_a_torn_line_before_the_last_is_an_error_not_skipped(tmp_path):
    path = tmp_path / "eval.jsonl"
    path.write_text('{"step": 0}\n{"step": 1, "pa\n{"step": 2}\n')
    with pytest.raises(ValueError, match=r"eval\.jsonl:2: not valid JSON"):
        read_log(path)


def test_read_json_object_names_the_file(tmp_path):
    good = tmp_path / "run.json"
    good.write_text('{"seed": 3}')
    assert read_json_object(good) == {"seed": 3}
    cut = tmp_path / "done.json"
    cut.write_text('{"seed": ')
    with pytest.raises(ValueError, match=r"done\.json is not valid JSON"):
        read_json_object(cut)


def test_load_run_without_metrics_raises(tmp_path):
    (tmp_path / "eval.jsonl").write_text(json.dumps(_eval(0, 0.1)) + "\n")
    with pytest.raises(ValueError, match="no metrics.jsonl"):
        load_run(tmp_path)


def test_load_run_rejects_a_record_without_an_integer_step(tmp_path):
    _write_jsonl(tmp_path / "metrics.jsonl", [{"step": 1}, {"step": "two"}])
    with pytest.raises(ValueError, match=r"line 2 has step='two', expected an integer"):
        load_run(tmp_path)


def test_load_run_keeps_the_last_record_of_a_resumed_step_in_step_order(tmp_path):
    first = [{"step": s, "reward_mean": 0.1 * s} for s in range(1, 6)]
    resumed = [{"step": s, "reward_mean": 1.0 + s} for s in range(4, 9)]
    _write_jsonl(tmp_path / "metrics.jsonl", first + resumed)
    _write_jsonl(tmp_path / "eval.jsonl", [_eval(4, 0.9), _eval(0, 0.1), _eval(4, 0.3)])
    run = load_run(tmp_path)
    assert [m["step"] for m in run.metrics] == list(range(1, 9))
    assert [m["reward_mean"] for m in run.metrics] == [0.1, 0.2, 0.30000000000000004, 5.0, 6.0, 7.0, 8.0, 9.0]
    assert [e["step"] for e in run.evals] == [0, 4]
    assert run.evals[1]["pass@1"] == pytest.approx(0.3)
    assert run.config == {}


def test_load_run_reads_config_and_rejects_a_bad_one(tmp_path):
    run = load_run(_write_run(tmp_path / "ok"))
    assert run.config["estimator"] == "fade" and run.config["estimator_args"] == {"h_star_ratio": 0.5}
    assert len(run.metrics) == 60 and len(run.evals) == 3
    bad = _write_run(tmp_path / "bad")
    (bad / "run.json").write_text("[1]")
    with pytest.raises(ValueError, match="run.json holds a JSON list"):
        load_run(bad)


# -- the schema ---------------------------------------------------------------------------------


def test_schema_keys_and_helpers():
    # one tuple each, in the core: what the trainer, the readers and the engines log
    assert DIAGNOSTICS is fade.mass.DIAGNOSTICS is weighing.DIAGNOSTICS
    assert SCHEDULE is fade.adaptive.SCHEDULE is weighing.SCHEDULE
    assert set(DIAGNOSTICS) <= {f.name for f in dataclasses.fields(fade.MassReport)}
    assert len(set(METRIC_KEYS)) == len(METRIC_KEYS)
    assert set(DIAGNOSTICS) | set(SCHEDULE) | set(ENTROPY_FORMULA_KEYS) <= set(METRIC_KEYS)
    assert METRIC_KEYS[0] == EVAL_KEYS[0] == "step"
    assert bucket_key("solve_rate", 3) == "solve_rate/d3" and pass_key(16) == "pass@16"
    keys = ["pass@16", "pass@1/d2", "pass@1", "pass@1/d10", "solve_rate/d1", "pass@x", "greedy"]
    assert logged_ks(keys) == [1, 16]
    assert logged_buckets(keys, "pass@1") == [2, 10] and logged_buckets(keys, "solve_rate") == [1]


def test_the_synthetic_records_here_follow_the_schema():
    record = _metrics(range(1, 3), fade=True)[0]
    buckets = {bucket_key(k, b) for k in PER_BUCKET_KEYS for b in BUCKETS}
    assert set(record) == set(METRIC_KEYS) | buckets
    row = _eval(0, 0.5)
    assert set(row) - set(EVAL_KEYS) == {pass_key(k) for k in KS} | {
        bucket_key(k, b) for k in ("pass@1", "distinct_correct") for b in BUCKETS
    }


def test_the_trainer_writes_the_schema(tmp_path):
    """One real step of the testbed trainer with FADE on a tiny random policy."""
    from fade.testbed.policy import build_policy, save_policy, tiny_llama_config
    from fade.testbed.tasks import get_task
    from fade.testbed.tokenizer import task_tokenizer
    from fade.testbed.trainer import TrainConfig, train

    tok = task_tokenizer(get_task("arithmetic"))
    config = tiny_llama_config(
        len(tok), hidden_size=16, num_layers=1, num_heads=2, intermediate_size=32, max_positions=32
    )
    save_policy(build_policy(config, seed=0), tok, tmp_path / "policy")
    out = train(
        TrainConfig(
            out=str(tmp_path / "run"),
            model=str(tmp_path / "policy"),
            steps=1,
            prompts_per_step=4,
            group_size=2,
            eval_every=1,
            eval_prompts=4,
            eval_samples=2,
            checkpoint_every=1,
            progress=False,
        )
    )
    run = load_run(out)
    (record,) = run.metrics
    buckets = {b for k in record for b in logged_buckets([k], "solve_rate")}
    assert buckets
    assert set(record) == set(METRIC_KEYS) | {bucket_key(k, b) for k in PER_BUCKET_KEYS for b in buckets}
    assert list(record)[: 3] == ["step", "reward_mean", "solve_rate"]
    assert [k for k in record if "/" not in k] == list(METRIC_KEYS)  # written in the schema's order
    assert all(isinstance(record[k], float) for k in ENTROPY_FORMULA_KEYS)
    for row in run.evals:
        ks = logged_ks(row)
        assert ks and set(EVAL_KEYS) <= set(row)
        per_bucket = set(row) - set(EVAL_KEYS) - {pass_key(k) for k in ks}
        assert all(logged_buckets([key], key.rsplit("/", 1)[0]) for key in per_bucket), per_bucket


def test_reading_a_run_imports_no_plotting_library():
    # The experiments read runs through runlog; matplotlib and rich's tables load only to draw.
    code = (
        "import sys\n"
        "import fade.testbed.runlog\n"
        "print(sorted(m for m in ('matplotlib', 'rich', 'fade.testbed.report') if m in sys.modules))\n"
        "import fade.experiments.claims\n"
        "print(sorted(m for m in ('matplotlib', 'fade.testbed.report') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["[]", "[]"], out


def test_report_reexports_what_the_cli_reads():
    assert report.load_run is runlog.load_run
    np.testing.assert_array_equal(
        metric_column([{"x": 1}, {"x": None}, {"x": "s"}, {}], "x"), [1, np.nan, np.nan, np.nan]
    )


# -- smoothing ----------------------------------------------------------------------------------


def test_moving_average_is_a_centred_window_shrinking_at_the_ends():
    values = np.array([1.0, 2.0, 3.0, 4.0, 10.0])
    np.testing.assert_allclose(moving_average(values, 3), [1.5, 2.0, 3.0, 17 / 3, 7.0])
    # Even windows lean one point into the past: point i averages values[i-2 : i+2].
    np.testing.assert_allclose(moving_average(values, 4), [1.5, 2.0, 2.5, 19 / 4, 17 / 3])
    # A constant stays exactly constant over a long run (no cumulative-sum rounding).
    assert (moving_average(np.full(10_000, 0.6), 200) == 0.6).all()
    np.testing.assert_array_equal(moving_average(values, 1), values)


# -- plot_run -----------------------------------------------------------------------------------

ALL_PANELS = [
    "reward_mean, solve rate per bucket (d1 easiest)",
    "mean token entropy",
    "gradient mass",
    "sign_balance (0.5 = balanced)",
    "entropy_drive = -[(m_S - m_F) H + Cov(A, log pi)]",
    "difficulty (low = hard focus)",
    "effective_sample_fraction",
    "rank1_share of the head's update",
    "grad_norm (left), param_norm (right)",
    "estimator schedule (1, 1 = dr_grpo)",
    "clip_fraction, kl",
    "seconds per step",
]


def test_documented_pixel_sizes():
    assert training_pixel_size(0) == training_pixel_size(1) == (1200, 310)
    assert training_pixel_size(10) == training_pixel_size(12) == (1200, 1090)
    assert training_pixel_size(9) == (1200, 830)
    assert passk_pixel_size(True) == (1200, 390) and passk_pixel_size(False) == (800, 390)


@pytest.fixture(scope="module")
def fade_pngs(tmp_path_factory) -> list[Path]:
    return plot_run(_write_run(tmp_path_factory.mktemp("runs") / "fade"))


def test_plot_run_fade_writes_three_pngs_of_documented_size(fade_pngs):
    assert [p.name for p in fade_pngs] == ["training.png", "passk.png", "plane.png"]
    assert len({p.parent for p in fade_pngs}) == 1 and fade_pngs[0].parent.name == "fade"
    training, passk, plane = (_image(p) for p in fade_pngs)
    assert training.shape[:2] == training_pixel_size(len(ALL_PANELS))[::-1] == (1090, 1200)
    assert passk.shape[:2] == (390, 1200)
    assert plane.shape[:2] == PLANE_PIXEL_SIZE[::-1] == (550, 650)
    for image in (training, passk, plane):
        assert image[..., :3].std() > 0.05  # something is drawn, not a blank canvas


def test_training_panels_follow_what_was_logged(tmp_path):
    assert training_panels(load_run(_write_run(tmp_path / "fade"))) == ALL_PANELS
    directory = _write_run(tmp_path / "grpo", estimator="grpo", kl=False)
    rows = _metrics(range(1, 31), fade=False, kl=False)
    for row in rows:
        row.update(kl=None, alpha=None)  # logged as null throughout: nothing to draw
    _write_jsonl(directory / "metrics.jsonl", rows)
    schedule = "estimator schedule (1, 1 = dr_grpo)"
    assert training_panels(load_run(directory)) == [t for t in ALL_PANELS if t != schedule]
    for row in rows:
        for key in ("clip_fraction", "step_seconds", "sample_seconds", "advantage_seconds", "update_seconds"):
            del row[key]
        for b in BUCKETS:
            del row[f"solve_rate/d{b}"]
    _write_jsonl(directory / "metrics.jsonl", rows)
    assert training_panels(load_run(directory)) == ["reward_mean"] + ALL_PANELS[1:9]
    for row in rows:
        for key in ENTROPY_FORMULA_KEYS:
            del row[key]  # a run from before the entropy formula was logged
    _write_jsonl(directory / "metrics.jsonl", rows)
    formula = "entropy_drive = -[(m_S - m_F) H + Cov(A, log pi)]"
    assert training_panels(load_run(directory)) == ["reward_mean"] + [t for t in ALL_PANELS[1:9] if t != formula]


def test_training_panels_show_the_loss_side_once_it_is_logged(tmp_path):
    """Off-policy clip metrics, an entropy term's coefficient and the filter's share and draws each
    bring their panel (before the timings) into a figure of the documented size."""
    directory = _write_run(tmp_path / "off", estimator="grpo", kl=False)
    rows = _metrics(range(1, 31), fade=False, kl=False)
    for i, row in enumerate(rows):
        row.update(kl=None, clip_fraction=0.0, ppo_kl=0.001 * i, cov_clip_fraction=0.01, entropy_coef=0.002 * i,
                   update_entropy=0.4, filtered_share=0.3, sample_draws=1 + i % 3, groups_kept=16)
    _write_jsonl(directory / "metrics.jsonl", rows)
    panels = training_panels(load_run(directory))
    new = ["clip_fraction, kl", "entropy term's coefficient", "filtered_share (left), sample_draws (right)"]
    assert panels == [t for t in ALL_PANELS if t not in ("estimator schedule (1, 1 = dr_grpo)", "clip_fraction, kl",
                                                         "seconds per step")] + new + ["seconds per step"]
    training = _image(plot_run(directory)[0])
    assert training.shape[:2] == training_pixel_size(len(panels))[::-1] == (1350, 1200)


def test_plot_run_without_evals_or_plane_signal_writes_training_and_plane(tmp_path):
    rows = [{"step": s, "reward_mean": 0.1 * s, "sign_balance": None, "difficulty": 0.5} for s in (1, 2, 3)]
    _write_jsonl(tmp_path / "metrics.jsonl", rows)
    (tmp_path / "passk.png").unlink(missing_ok=True)
    paths = plot_run(tmp_path)
    assert [p.name for p in paths] == ["training.png", "plane.png"]
    assert not (tmp_path / "passk.png").exists()
    # reward_mean and difficulty: two panels, one row.
    assert _image(paths[0]).shape[:2] == training_pixel_size(2)[::-1] == (310, 1200)
    assert _image(paths[1]).shape[:2] == PLANE_PIXEL_SIZE[::-1]


def test_plot_run_without_bucket_keys_draws_two_passk_panels(tmp_path):
    _write_jsonl(tmp_path / "metrics.jsonl", [{"step": s, "entropy": 1.0 / s} for s in range(1, 11)])
    _write_jsonl(tmp_path / "eval.jsonl", [_eval(0, 0.1, buckets=False), _eval(10, 0.2, buckets=False)])
    assert _image(plot_run(tmp_path)[1]).shape[:2] == (390, 800)


def test_plot_run_single_step_run(tmp_path):
    directory = _write_run(tmp_path / "one", steps=1, evals=[_eval(0, 0.1)])
    paths = plot_run(directory)
    assert [p.name for p in paths] == ["training.png", "passk.png", "plane.png"]
    assert _image(paths[0]).shape[:2] == (1090, 1200)


def test_plot_run_tolerates_none_nan_and_a_truncated_tail(tmp_path):
    directory = _write_run(tmp_path / "gaps", steps=40)
    rows = _metrics(range(1, 41), fade=True)
    for row in rows[::3]:
        row.update(entropy=None, sign_balance=float("nan"), difficulty=None, grad_norm=float("inf"))
    del rows[5]["reward_mean"]
    rows[7]["alpha"] = "n/a"  # not a number: a gap, not a crash
    evals = [_eval(0, 0.1), _eval(20, 0.3), _eval(40, 0.25)]
    evals[1]["pass@1"] = None
    evals[2]["pass@64"] = float("nan")
    _write_jsonl(directory / "metrics.jsonl", rows, tail='{"step": 41, "entropy": 0.')
    _write_jsonl(directory / "eval.jsonl", evals)
    with pytest.warns(RuntimeWarning, match=r"metrics\.jsonl:41: skipped the unfinished last line"):
        paths = plot_run(directory, smooth=5)
    assert [p.name for p in paths] == ["training.png", "passk.png", "plane.png"]
    assert _image(paths[0]).shape[:2] == (1090, 1200)


def test_plot_run_rejects_bad_smoothing_and_an_empty_run(tmp_path):
    directory = _write_run(tmp_path / "run", steps=5)
    for bad in (0, -3, 2.5):
        with pytest.raises(ValueError, match="smooth must be"):
            plot_run(directory, smooth=bad)
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "metrics.jsonl").write_text("")
    with pytest.raises(ValueError, match="no complete record"):
        plot_run(tmp_path / "empty")


def test_plot_run_draws_a_long_run(tmp_path):
    # A run of 10^4 steps draws the same three figures, each a small file: the moving average and
    # the fixed figure sizes keep the pictures (and their cost) independent of the run's length.
    # Speed itself is not asserted here: CPU time under a parallel test runner is too noisy.
    evals = [_eval(s, 0.1 + s / 40_000) for s in range(0, 10_001, 500)]
    directory = _write_run(tmp_path / "long", steps=10_000, evals=evals)
    paths = plot_run(directory)
    assert len(paths) == 3
    for path in paths:
        assert 0 < Path(path).stat().st_size < 400_000, path


# -- summary_table ------------------------------------------------------------------------------


def test_summary_table_compares_base_final_and_best(tmp_path):
    directory = _write_run(tmp_path / "fade", steps=60)
    text = _render(summary_table(load_run(directory)))
    # The third column is one evaluation, the one with the highest pass@1, and says so.
    assert "at peak pass@1" in text and "every row read there" in " ".join(text.split())
    assert "fade(h_star_ratio=0.5)" in text and "task countdown" in text and "seed 3" in text
    # Evals at steps 0, 30, 60 with pass@1 0.125, 0.625, 0.5: the best is step 30.
    assert _row(text, "eval at step") == ["0", "60", "30"]
    assert _row(text, "pass@1") == ["0.125", "0.500", "0.625", "+0.375"]
    # pass@4 = 1 - (1 - p)^4
    assert _row(text, "pass@4") == [
        f"{1 - 0.875**4:.3f}",
        "0.938",
        f"{1 - 0.375**4:.3f}",
        f"{0.9375 - (1 - 0.875**4):+.3f}",
    ]
    assert [_row(text, f"pass@{k}")[0] for k in KS] == [f"{min(1.0, 1 - 0.875**k):.3f}" for k in KS]
    assert _row(text, "greedy") == ["0.175", "0.550", "0.675", "+0.375"]
    assert _row(text, "distinct_correct") == ["1.250", "2.000", "2.250", "+0.750"]
    assert _row(text, "pass@1/d3") == ["0.025", "0.400", "0.525", "+0.375"]
    assert "n_prompts 200" in text and "n_samples 64" in text
    run = load_run(directory)
    last = run.metrics[-1]
    assert _row(text, "train at step") == ["1", "60"]
    assert _row(text, "train entropy")[1] == f"{last['entropy']:.3f}"
    assert _row(text, "train rank1_share")[1] == f"{last['rank1_share']:.3f}" == "0.400"
    assert _row(text, "train sign_balance")[1] == "0.450"
    assert _row(text, "train difficulty")[1] == "0.700"
    assert _row(text, "train alpha")[1] == f"{last['alpha']:.3f}"
    assert _row(text, "train delta")[1] == f"{last['delta']:.3f}"
    assert _row(text, "train h_star")[1] == "0.750"


def test_summary_table_grpo_without_evals_or_schedule(tmp_path):
    directory = _write_run(tmp_path / "grpo", estimator="grpo", evals=[])
    rows = _metrics(range(1, 61), fade=False)
    rows[-1]["entropy"] = None  # the last logged value is the one reported
    _write_jsonl(directory / "metrics.jsonl", rows)
    text = _render(summary_table(load_run(directory)))
    assert "no eval.jsonl" in text
    assert "│ pass@1" not in text and "train alpha" not in text and "train h_star" not in text
    assert _row(text, "train entropy")[1] == f"{rows[-2]['entropy']:.3f}"


def test_summary_table_shows_dashes_for_values_not_logged(tmp_path):
    evals = [_eval(0, 0.25), _eval(10, 0.5)]
    evals[0]["greedy"] = None
    directory = _write_run(tmp_path / "run", steps=10, evals=evals)
    assert _row(_render(summary_table(load_run(directory))), "greedy") == ["—", "0.550", "0.550", "—"]


# -- compare_runs -------------------------------------------------------------------------------


def test_compare_runs_two_runs_and_one_without_evals(tmp_path):
    fade_run = _write_run(tmp_path / "fade")
    grpo_run = _write_run(tmp_path / "grpo", estimator="grpo", steps=40, evals=[_eval(0, 0.125), _eval(40, 0.4)])
    out = compare_runs([fade_run, grpo_run], tmp_path / "figs" / "compare.png", label_key="estimator")
    assert out == tmp_path / "figs" / "compare.png"
    image = _image(out)
    assert image.shape[:2] == COMPARE_PIXEL_SIZE[::-1] == (950, 1100)
    assert image[..., :3].std() > 0.05
    no_evals = _write_run(tmp_path / "noeval", evals=[], config=False)
    out = compare_runs([fade_run, no_evals], tmp_path / "c.png", label_key="estimator_args.h_star_ratio")
    assert _image(out).shape[:2] == (950, 1100)


def test_compare_runs_labels_and_their_errors(tmp_path):
    a = _write_run(tmp_path / "a", steps=3)
    b = _write_run(tmp_path / "b", steps=3)
    c = _write_run(tmp_path / "c", steps=3, estimator="grpo", config=False)
    runs = [load_run(d) for d in (a, b, c)]
    # Same estimator in a and b: the directory tells them apart; c has no run.json.
    assert compare_labels(runs, None) == [
        "fade(h_star_ratio=0.5) [a]",
        "fade(h_star_ratio=0.5) [b]",
        "c [c]",
    ]
    assert compare_labels(runs, "seed") == ["seed=3 [a]", "seed=3 [b]", "c [c]"]
    assert compare_labels([runs[0], runs[2]], "estimator_args.h_star_ratio") == ["estimator_args.h_star_ratio=0.5", "c"]
    with pytest.raises(ValueError, match="label_key 'nope' is in no run's run.json"):
        compare_runs([a, b], tmp_path / "x.png", label_key="nope")
    with pytest.raises(ValueError, match="at least one run"):
        compare_runs([], tmp_path / "x.png")
    assert not (tmp_path / "x.png").exists()


# -- training.png: legends, the clip/kl panel, the sign_balance range ------------------------------


def _panel(cols: dict, title: str):
    from fade.testbed.report import _training_panels

    steps = cols["step"]
    draw = dict(_training_panels(cols, steps, 1))[title]
    plt = headless_pyplot()
    fig, ax = plt.subplots(figsize=(4, 2.6))
    draw(ax)
    return fig, ax


def test_a_legend_sits_above_every_curve_of_its_panel():
    plt = headless_pyplot()
    fig, ax = plt.subplots(figsize=(4, 2.6))
    x = np.arange(50)
    tops = []
    for i in range(7):  # the reward panel's seven entries, one curve reaching the top edge
        y = np.sin(x / 5 + i) * 0.5 + 0.5
        ax.plot(x, y, label=f"curve {i}")
        tops.append(y.max())
    legend_in_headroom(ax)
    fig.canvas.draw()
    box = ax.get_legend().get_window_extent().transformed(ax.transData.inverted())
    assert box.y0 > max(tops)  # the legend's lowest point is above the highest data point
    assert ax.get_ylim()[1] >= box.y1
    plt.close(fig)


def test_the_clip_kl_panel_waits_for_a_nonzero_value():
    rows = _metrics(range(1, 31), fade=False, kl=False)
    for row in rows:
        row.update(clip_fraction=0.0, kl=None)  # one pass per batch: nothing was clipped
    cols = {k: np.array([r[k] if r[k] is not None else np.nan for r in rows], dtype=float) for k in rows[0]}
    from fade.testbed.report import _training_panels

    titles = [t for t, _ in _training_panels(cols, cols["step"], 1)]
    assert "clip_fraction, kl" not in titles
    cols["clip_fraction"][5] = 0.01
    assert "clip_fraction, kl" in [t for t, _ in _training_panels(cols, cols["step"], 1)]


@pytest.mark.parametrize("values, at_least", [
    (0.5 + 1e-9 * np.sin(np.arange(40)), (0.4, 0.6)),  # a centred estimator: float noise around 0.5
    (np.linspace(0.5, 0.2, 40), (0.2, 0.6)),            # FADE's sign knob acting
])
def test_the_sign_balance_panel_shows_at_least_0_4_to_0_6(values, at_least):
    cols = {"step": np.arange(1, 41, dtype=float), "sign_balance": values}
    fig, ax = _panel(cols, "sign_balance (0.5 = balanced)")
    lo, hi = ax.get_ylim()
    assert 0.0 <= lo <= at_least[0] and at_least[1] <= hi <= 1.0
    import matplotlib.pyplot as plt

    plt.close(fig)


# -- compare_table ------------------------------------------------------------------------------


def test_compare_table_puts_the_shared_base_and_each_final_side_by_side(tmp_path):
    fade_run = _write_run(tmp_path / "fade", steps=40, evals=[_eval(0, 0.125), _eval(20, 0.5), _eval(40, 0.375)])
    grpo_run = _write_run(tmp_path / "grpo", estimator="grpo", steps=40, evals=[_eval(0, 0.125), _eval(40, 0.25)])
    text = _render(compare_table([grpo_run, fade_run], labels=["grpo", "fade"]))
    assert _row(text, "pass@1") == ["0.125", "0.250", "0.375", "+0.125"]
    assert _row(text, "pass@4") == [f"{1 - 0.875**4:.3f}", f"{1 - 0.75**4:.3f}", f"{1 - 0.625**4:.3f}",
                                     f"{(1 - 0.625**4) - (1 - 0.75**4):+.3f}"]
    assert _row(text, "peak pass@1") == ["—", "0.250", "0.500", "+0.250"]
    assert _row(text, "peak at step") == ["40", "20"]
    fade_entropy = [r["entropy"] for r in _metrics(range(1, 41), fade=True)]
    assert _row(text, "train entropy, final (last 10% of steps)")[2] == f"{np.mean(fade_entropy[-4:]):.3f}"
    # Only FADE logs a schedule: the other run's cells are dashes, and there is no difference.
    assert _row(text, "mean delta")[:2] == ["—", "—"]
    assert _row(text, "share of steps with delta < 1")[1] == "—"
    # Different step-0 evaluations: no base column values.
    other = _write_run(tmp_path / "other", estimator="grpo", steps=40, evals=[_eval(0, 0.2), _eval(40, 0.25)])
    assert _row(_render(compare_table([other, fade_run])), "pass@1")[0] == "—"
    with pytest.raises(ValueError, match="2 labels for 1 runs"):
        compare_table([fade_run], labels=["a", "b"])


def _write_short_fade_run(directory: Path, steps: int) -> None:
    """A FADE run of ``steps`` steps whose entropy falls and whose delta drops below 1 from step 14."""
    directory.mkdir(parents=True)
    rows = [
        {"step": s, "entropy": 2.0 - 0.05 * s, "delta": 1.0 if s < 14 else 0.5 + 0.01 * s} for s in range(1, steps + 1)
    ]
    _write_jsonl(directory / "metrics.jsonl", rows)
    _write_jsonl(directory / "eval.jsonl", [{"step": 0, "pass@1": 0.2}, {"step": steps, "pass@1": 0.4}])


def test_fade_compare_and_the_claims_read_one_final_entropy_and_one_delta_share(tmp_path):
    """19 steps, where a floor of 10% (the claims' old window: the last step alone) and a ceiling (the
    compare table's: the last two) disagree: both now read the mean of the last two steps, and the
    same share of steps with delta < 1."""
    from fade.experiments.design import TaskPlan
    from fade.experiments.runs import summarise

    run = TaskPlan(task="arithmetic", estimators=("fade",), steps=19, eval_every=19, eval_prompts=4,
                   eval_samples=2).run("fade", 0)
    _write_short_fade_run(run.directory(tmp_path), 19)
    sweep = summarise(run, tmp_path).scalars
    entropy = [2.0 - 0.05 * s for s in (18, 19)]
    assert sweep["entropy_final"] == pytest.approx(np.mean(entropy))
    assert sweep["delta_below1"] == pytest.approx(6 / 19)  # steps 14..19
    text = _render(compare_table([run.directory(tmp_path)], labels=["fade"]))  # columns: base (none here), the run
    assert _row(text, "train entropy, final (last 10% of steps)") == ["—", f"{sweep['entropy_final']:.3f}"]
    assert _row(text, "share of steps with delta < 1") == ["—", f"{sweep['delta_below1']:.3f}"]
    assert _row(text, "mean delta") == ["—", f"{sweep['delta_mean']:.3f}"]
    assert _row(text, "peak pass@1") == ["—", f"{sweep['peak_pass1']:.3f}"]
