"""fade analyze on a real TRL GRPOTrainer run's own dump (log_completions=True).

At every step, the zero-spread share fade reads from the parquet files equals TRL's own
frac_reward_zero_std, the run's advantages' mass equals fade.decompose on the advantages the
trainer held in memory, and grpo with TRL's constant reproduces the run's advantages. The columns
reward functions log beside their rewards (log_extra) leave the statistics as they are, and the
files an evaluation writes under a training step's name are left out. A run of fade's
FadeGRPOTrainer with FADE is replayed as it ran: the advantages it wrote and the schedule it logged.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("trl")
pytest.importorskip("pyarrow")

import torch  # noqa: E402
from trl import GRPOConfig, GRPOTrainer  # noqa: E402

import fade  # noqa: E402
from fade.analyze import ReadOptions, analyze_records, analyze_run, read_run, write_outputs  # noqa: E402
from fade.analyze.stats import Counterfactuals  # noqa: E402
from fade.cli import main  # noqa: E402
from fade.integrations.trl import FadeGRPOTrainer  # noqa: E402
from fade.testbed.policy import load_policy  # noqa: E402
from fade.testbed.tasks import get_task  # noqa: E402
from fade.testbed.trl_task import prompt_dataset  # noqa: E402
from fade.verifiers.rewards import math_reward  # noqa: E402

G = 4
STEPS = 4


def even_length(completions, **_):
    """A binary reward that varies within groups of an untrained policy: the completion's length is even."""
    return [float(len(c) % 2 == 0) for c in completions]


class Recording(GRPOTrainer):
    """Keeps the rewards and advantages of every training batch as the trainer holds them."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.batches: list[tuple[int, torch.Tensor]] = []

    def _generate_and_score_completions(self, inputs):
        out = super()._generate_and_score_completions(inputs)
        if self.model.training:
            self.batches.append((self.state.global_step, out["advantages"].clone()))
        return out


def even_length_logging(completions, log_extra=None, **_):
    """even_length, logging two columns of its own as a reward function may: a count (integers)
    and a share (floats), which TRL writes into the completions parquet beside the rewards."""
    if log_extra is not None:
        log_extra("num_chars", [len(c) for c in completions])
        log_extra("length_share", [len(c) / 6 for c in completions])
    return even_length(completions)


def grpo_config(out: Path, **changes) -> GRPOConfig:
    """A few CPU steps of G rollouts per prompt, logging every step's completions."""
    settings = dict(
        output_dir=str(out), per_device_train_batch_size=4 * G, num_generations=G, gradient_accumulation_steps=1,
        max_completion_length=6, max_steps=STEPS, logging_steps=1, learning_rate=1e-3, bf16=False, use_cpu=True,
        report_to="none", save_strategy="no", gradient_checkpointing=False, temperature=1.0, beta=0.0, seed=0,
        disable_tqdm=True, log_completions=True,
    )
    return GRPOConfig(**{**settings, **changes})


@pytest.fixture(scope="module")
def trl_run(tiny_model, tmp_path_factory) -> tuple[Path, Recording]:
    torch.manual_seed(0)
    out = tmp_path_factory.mktemp("trl_run")
    task = get_task("arithmetic")
    model, tokenizer = load_policy(tiny_model)
    problems = task.problems("train", n=32, seed=0)
    config = grpo_config(out)
    trainer = Recording(model=model, reward_funcs=[even_length], args=config,
                        train_dataset=prompt_dataset(problems, tokenizer.bos_token), processing_class=tokenizer)
    trainer.train()
    trainer.save_state()
    return out, trainer


def test_analyze_reads_trls_dump_as_the_trainer_held_it(trl_run):
    out, trainer = trl_run
    analysis = analyze_run(out / "completions")
    assert analysis.run.format == "trl"
    assert [s["step"] for s in analysis.steps] == list(range(1, STEPS + 1))
    logged = {h["step"]: h for h in json.loads((out / "trainer_state.json").read_text())["log_history"]
              if "frac_reward_zero_std" in h}
    assert len(trainer.batches) == STEPS
    for row, (step_before, adv) in zip(analysis.steps, trainer.batches):
        assert row["step"] == step_before + 1  # TRL logs a batch after its update
        assert row["num_rollouts"] == 4 * G and row["group_sizes"] == [G]
        assert row["zero_spread_share"] == pytest.approx(logged[row["step"]]["frac_reward_zero_std"], abs=1e-6)
        assert row["engine"]["frac_reward_zero_std"] == logged[row["step"]]["frac_reward_zero_std"]
        batch = analysis.run.steps[row["step"] - 1]
        expected = fade.decompose(adv, batch.rewards, batch.groups).diagnostics()
        assert row["run"] == pytest.approx(expected, nan_ok=True)
        assert row["estimators"]["grpo:eps=0.0001"]["max_abs_diff_to_run"] < 1e-5
        assert row["estimators"]["grpo:eps=0.0001"] == pytest.approx(
            {**row["run"], "max_abs_diff_to_run": row["estimators"]["grpo:eps=0.0001"]["max_abs_diff_to_run"]},
            rel=1e-5, abs=1e-6, nan_ok=True)
    # some steps must have signal, or the mass comparison above tests nothing
    assert any(r["zero_spread_share"] < 1 for r in analysis.steps)
    assert analysis.run.entropy  # TRL logs an entropy: FADE is replayed
    assert "fade" in analysis.estimators


def test_fade_analyze_command_writes_the_report_and_figures(trl_run, tmp_path, capsys):
    out, _ = trl_run
    assert main(["analyze", str(out), "--out", str(tmp_path / "a"), "--quiet"]) == 0
    names = sorted(p.name for p in (tmp_path / "a").iterdir())
    assert names == sorted(["steps.jsonl", "report.json", "summary.md", "plane.png", "zero_spread.png",
                            "solve_rate.png", "pass_at_k.png"])
    report = json.loads((tmp_path / "a" / "report.json").read_text())
    assert report["format"] == "trl" and report["num_steps"] == STEPS
    lines = (tmp_path / "a" / "steps.jsonl").read_text().splitlines()
    assert len(lines) == STEPS
    assert "trl run: 4 steps" in capsys.readouterr().out


def test_a_file_repeating_the_previous_batch_is_counted_once(trl_run, tmp_path):
    out, _ = trl_run
    import shutil

    copy = tmp_path / "completions"
    shutil.copytree(out / "completions", copy)
    last = sorted(copy.iterdir())[-1]
    import pyarrow.parquet as pq

    table = pq.read_table(last)
    table = table.set_column(0, "step", __import__("pyarrow").array(np.full(table.num_rows, STEPS + 1)))
    pq.write_table(table, copy / f"completions_{STEPS + 1:05d}.parquet")
    analysis = analyze_run(copy)
    assert len(analysis.steps) == STEPS
    assert any("counted once" in n for n in analysis.run.notes)
    write_outputs(analysis, tmp_path / "o", figures=False)


@pytest.fixture(scope="module")
def trl_extras_run(tiny_model, tmp_path_factory) -> Path:
    """A run whose reward functions log columns of their own: fade's math_reward (the text column
    math_reason) and even_length_logging (an integer and a float column)."""
    torch.manual_seed(0)
    out = tmp_path_factory.mktemp("trl_extras")
    model, tokenizer = load_policy(tiny_model)
    problems = get_task("arithmetic").problems("train", n=16, seed=0)
    dataset = prompt_dataset(problems, tokenizer.bos_token).add_column("answer", [p.answer for p in problems])
    trainer = GRPOTrainer(model=model, reward_funcs=[even_length_logging, math_reward],
                          args=grpo_config(out, per_device_train_batch_size=2 * G, max_steps=3),
                          train_dataset=dataset, processing_class=tokenizer)
    trainer.train()
    trainer.save_state()
    return out


def test_log_extra_columns_leave_the_statistics_as_they_are(trl_extras_run, tmp_path, capsys):
    import shutil

    import pyarrow.parquet as pq

    out = trl_extras_run
    extras = ["math_reason", "num_chars", "length_share"]
    files = sorted((out / "completions").iterdir())
    assert set(extras) <= set(pq.read_schema(files[0]).names)  # TRL wrote them beside the rewards
    bare = tmp_path / "bare"
    (bare / "completions").mkdir(parents=True)
    for p in files:
        pq.write_table(pq.read_table(p).drop_columns(extras), bare / "completions" / p.name)
    shutil.copy(out / "trainer_state.json", bare / "trainer_state.json")
    assert main(["analyze", str(out), "--out", str(tmp_path / "a"), "--quiet", "--no-figures"]) == 0
    assert main(["analyze", str(bare), "--out", str(tmp_path / "b"), "--quiet", "--no-figures"]) == 0
    steps = [json.loads(line) for line in (tmp_path / "a" / "steps.jsonl").read_text().splitlines()]
    assert steps == [json.loads(line) for line in (tmp_path / "b" / "steps.jsonl").read_text().splitlines()]
    assert [s["step"] for s in steps] == [1, 2, 3]
    history = json.loads((out / "trainer_state.json").read_text())["log_history"]
    logged = {h["step"]: h["reward"] for h in history if "reward" in h}
    for row in steps:  # the total is the one TRL trained on: its two reward functions, weights 1
        assert row["mean_reward"] == pytest.approx(logged[row["step"]], rel=1e-5, abs=1e-6)
    notes = json.loads((tmp_path / "a" / "report.json").read_text())["notes"]
    (note,) = [n for n in notes if "reward column" in n]
    assert "even_length_logging, math_reward" in note and all(e in note for e in extras)
    assert "note: " in capsys.readouterr().out


@pytest.fixture(scope="module")
def trl_eval_run(tiny_model, tmp_path_factory) -> Path:
    """A run that evaluates every second step: TRL logs the evaluation's completions under the step's own name."""
    torch.manual_seed(0)
    out = tmp_path_factory.mktemp("trl_eval")
    model, tokenizer = load_policy(tiny_model)
    task = get_task("arithmetic")
    trainer = GRPOTrainer(
        model=model, reward_funcs=[even_length],
        args=grpo_config(out, per_device_train_batch_size=2 * G, eval_strategy="steps", eval_steps=2,
                         per_device_eval_batch_size=G),
        train_dataset=prompt_dataset(task.problems("train", n=16, seed=0), tokenizer.bos_token),
        eval_dataset=prompt_dataset(task.problems("test", n=1, seed=0), tokenizer.bos_token),
        processing_class=tokenizer)
    trainer.train()
    trainer.save_state()
    return out


def test_files_an_evaluation_wrote_under_a_training_steps_name_are_left_out(trl_eval_run, tmp_path):
    out = trl_eval_run
    history = json.loads((out / "trainer_state.json").read_text())["log_history"]
    assert {h["step"] for h in history if "eval_loss" in h} == {2, 4}
    assert sorted(p.name for p in (out / "completions").iterdir()) == [
        f"completions_{s:05d}.parquet" for s in range(1, STEPS + 1)]
    assert main(["analyze", str(out), "--out", str(tmp_path / "a"), "--quiet", "--no-figures"]) == 0
    steps = [json.loads(line) for line in (tmp_path / "a" / "steps.jsonl").read_text().splitlines()]
    assert [s["step"] for s in steps] == [1, 3]
    logged = {h["step"]: h for h in history if "frac_reward_zero_std" in h}
    for row in steps:  # what is left is the training batches TRL logged
        assert row["zero_spread_share"] == pytest.approx(logged[row["step"]]["frac_reward_zero_std"], abs=1e-6)
        assert row["mean_reward"] == pytest.approx(logged[row["step"]]["reward"], rel=1e-5, abs=1e-6)
    notes = json.loads((tmp_path / "a" / "report.json").read_text())["notes"]
    (note,) = [n for n in notes if "evaluation" in n]
    assert "completions_00002.parquet" in note and "completions_00004.parquet" in note


#: FADE as the TRL runs below use it: ema=1 and a target above the first entropy, so that delta
#: follows each step's entropy from the first step on (the default h_star_ratio=0.5 holds it at 1
#: for a run's first steps), and which entropy a replay feeds shows at every step.
FADE_TRL = {"ema": 1.0, "h_star_ratio": 1.05}
FADE_SPEC = "fade:" + ",".join(f"{k}={v}" for k, v in FADE_TRL.items())


@pytest.fixture(scope="module", params=["previous", "current"])
def fade_trl_run(request, tiny_model, tmp_path_factory) -> tuple[Path, str]:
    """fade's FadeGRPOTrainer with FADE, fed the entropy each way it can be (entropy=), one micro-batch
    per step (the integration measures the first batch as TRL's loss pass does then)."""
    torch.manual_seed(0)
    out = tmp_path_factory.mktemp(f"fade_trl_{request.param}")
    model, tokenizer = load_policy(tiny_model)
    problems = get_task("arithmetic").problems("train", n=32, seed=0)
    trainer = FadeGRPOTrainer(model=model, reward_funcs=[even_length], args=grpo_config(out, scale_rewards="none"),
                              train_dataset=prompt_dataset(problems, tokenizer.bos_token), processing_class=tokenizer,
                              advantage="fade", advantage_kwargs=FADE_TRL, entropy=request.param)
    trainer.train()
    trainer.save_state()
    return out, request.param


def test_fade_analyze_replays_a_fade_run_as_trl_fed_it(fade_trl_run):
    """fade analyze on the run's completions and trainer_state.json, replaying the run's FADE spec:
    at every step the advantage column the run wrote and the alpha and delta it logged. The TRL
    format replays fade's default (entropy="previous": before step s the entropy TRL logged at step
    s - 1, before the first its own); a run with entropy="current" is replayed by setting the run's
    entropy_feed to "same-step", as a caller of fade.analyze may. Before, FADE was fed step s - 1's
    entropy and nothing before the first step: delta 1 there, where the run's was 0.87."""
    out, source = fade_trl_run
    run = read_run(out / "completions", ReadOptions())
    assert run.format == "trl" and run.entropy_feed == "previous-step"
    assert run.estimator is None  # fade's trainer wrote FADE's advantages, not TRL's
    if source == "current":
        run.entropy_feed = "same-step"
    history = json.loads((out / "trainer_state.json").read_text())["log_history"]
    logged = {h["step"]: h for h in history if "fade/delta" in h}
    assert [b.step for b in run.steps] == sorted(logged) == list(range(1, STEPS + 1))
    analysis = analyze_records(run, [FADE_SPEC])
    replay = Counterfactuals([FADE_SPEC], run)
    deltas = []
    for batch, row in zip(run.steps, analysis.steps):
        adv = replay.weigh(batch)[FADE_SPEC].advantages
        np.testing.assert_allclose(adv.double().numpy(), batch.advantages, rtol=1e-6, atol=1e-6,
                                   err_msg=f"step {batch.step}")
        last = replay.estimators[FADE_SPEC].last
        for knob in ("alpha", "delta"):
            assert last[knob] == pytest.approx(logged[batch.step][f"fade/{knob}"], rel=1e-6), (batch.step, knob)
        deltas.append(last["delta"])
        assert row["estimators"][FADE_SPEC] == pytest.approx(row["run"], rel=1e-5, abs=1e-6, nan_ok=True), batch.step
    assert max(deltas) < 1 and len(set(np.round(deltas, 6))) > 1  # every step's delta read an entropy
