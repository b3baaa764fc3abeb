"""FadeGRPOTrainer: a real TRL GRPOTrainer on CPU with the shipped arithmetic policy.

The specification: the advantages that reach TRL's loss are exactly fade's computation on the
rewards TRL gathered (replayed with a fresh estimator fed the same signals); FADE is fed the
entropy the docs promise; fade's diagnostics reach TRL's logs; several processes agree; the
estimator's state survives a checkpoint; bad settings fail before a model is touched.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

pytest.importorskip("trl")

import torch  # noqa: E402
from trl import GRPOConfig  # noqa: E402

import fade  # noqa: E402
from fade.integrations.trl import STATE_FILE, FadeGRPOTrainer  # noqa: E402
from fade.testbed.policy import load_policy  # noqa: E402
from fade.testbed.tasks import get_task  # noqa: E402
from fade.testbed.trainer import base_model_dir  # noqa: E402
from fade.testbed.trl_task import prompt_dataset, reward_function  # noqa: E402

G = 4


class Recording(FadeGRPOTrainer):
    """Keeps, per training generation, what was fed, computed, and seen by the loss."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.records: list[dict] = []
        self.fed: list[dict] = []
        observe = self.fade_estimator.observe

        def recording_observe(**signals):
            self.fed.append(dict(signals))
            observe(**signals)

        self.fade_estimator.observe = recording_observe

    def _generate_and_score_completions(self, inputs):
        fed_before = len(self.fed)
        out = super()._generate_and_score_completions(inputs)
        if self.model.training:
            self.records.append({
                "fed": self.fed[fed_before:],
                "rewards": self.fade_last["rewards"].clone(),
                "scorable": self.fade_last["scorable"].clone(),
                "advantages": out["advantages"].clone(),
                "loss": [],
            })
        return out

    def _compute_loss(self, model, inputs):
        if self.model.training:
            self.records[-1]["loss"].extend(inputs["advantages"].tolist())
        return super()._compute_loss(model, inputs)


def make_trainer(tmp_path: Path, *, cls=Recording, reward=None, steps: int = 3, accumulation: int = 2, **kwargs):
    torch.manual_seed(0)
    task = get_task("arithmetic")
    model, tokenizer = load_policy(base_model_dir("arithmetic"))
    problems = task.problems("train", n=64, seed=0)
    config = dict(
        output_dir=str(tmp_path / "trl"), per_device_train_batch_size=8, num_generations=G,
        gradient_accumulation_steps=accumulation, max_completion_length=task.max_answer_chars + 1, max_steps=steps,
        logging_steps=1, learning_rate=1e-4, bf16=False, use_cpu=True, report_to="none", save_strategy="no",
        gradient_checkpointing=False, temperature=1.0, beta=0.0, seed=0, disable_tqdm=True,
    )
    config.update(kwargs.pop("config", {}))
    return cls(
        model=model, reward_funcs=[reward or reward_function(task, problems)], args=GRPOConfig(**config),
        train_dataset=prompt_dataset(problems, tokenizer.bos_token), processing_class=tokenizer, **kwargs,
    )


def replay(name: str, params: dict, records: list[dict]) -> list[torch.Tensor]:
    """The advantages a fresh estimator gives the recorded rewards, fed the recorded signals."""
    est = fade.estimator(name, **params)
    out = []
    for rec in records:
        for signals in rec["fed"]:
            est.observe(**signals)
        r, ok = rec["rewards"], rec["scorable"]
        groups = torch.arange(r.numel()) // G
        adv = torch.zeros_like(r)
        adv[ok] = est(r[ok], groups[ok])
        out.append(adv)
    return out


@pytest.mark.parametrize(("name", "params"), [("grpo", {}), ("fade", {}), ("passk", {"k": 2}), ("maxrl", {})])
def test_advantages_reaching_the_loss_are_fades(tmp_path, name, params):
    trainer = make_trainer(tmp_path, advantage=name, advantage_kwargs=params)
    trainer.train()
    assert len(trainer.records) == 3
    for rec, expected in zip(trainer.records, replay(name, params, trainer.records)):
        assert torch.equal(rec["advantages"], expected.to(rec["advantages"].dtype))
        # Shuffled and split into micro-batches, every row reaches the loss once with its advantage.
        assert Counter(rec["loss"]) == Counter(rec["advantages"].tolist())
    assert any(bool((rec["advantages"] != 0).any()) for rec in trainer.records)
    logged = {key for row in trainer.state.log_history for key in row}
    assert {"fade/sign_balance", "fade/positive_mass", "fade/negative_mass", "fade/difficulty",
            "fade/effective_sample_fraction"} <= logged
    if name == "fade":
        assert {"fade/alpha", "fade/delta", "fade/p_hat", "fade/h_hat", "fade/h_star"} <= logged
    # TRL's completion table logs the advantages that were used.
    assert list(trainer._logs["advantages"])[-8 * 2:] == trainer.records[-1]["advantages"].tolist()


def test_previous_entropy_feeds_the_loss_pass_mean_and_the_first_step_measures_the_batch(tmp_path):
    trainer = make_trainer(tmp_path, advantage="fade", accumulation=1)
    trainer.train()
    logged = [row["entropy"] for row in trainer.state.log_history if "entropy" in row]
    fed = [rec["fed"] for rec in trainer.records]
    # Step 1: one extra pass on the generation batch, before any update; the loss pass of that
    # same batch (one micro-batch, policy unchanged) logs the same masked mean entropy.
    assert len(fed[0]) == 1 and fed[0][0]["entropy"] == pytest.approx(logged[0], rel=1e-5)
    assert trainer.fade_estimator.state_dict()["h_first"] == pytest.approx(logged[0], rel=1e-5)
    # Later steps: the previous generation's loss-pass entropy, and the global step.
    for t in (1, 2):
        assert fed[t] == [{"entropy": pytest.approx(logged[t - 1], rel=1e-6), "step": t}]


def test_current_entropy_is_measured_every_generation(tmp_path):
    trainer = make_trainer(tmp_path, advantage="fade", accumulation=1, entropy="current")
    trainer.train()
    logged = [row["entropy"] for row in trainer.state.log_history if "entropy" in row]
    # Each generation's batch is scored before the update that uses it: the loss pass agrees.
    for rec, value in zip(trainer.records, logged):
        assert len(rec["fed"]) == 1 and rec["fed"][0]["entropy"] == pytest.approx(value, rel=1e-5)


def test_unscorable_completions_get_zero_and_leave_the_baseline(tmp_path):
    task = get_task("arithmetic")
    problems = task.problems("train", n=64, seed=0)
    score = reward_function(task, problems)

    def sometimes_none(prompts, completions, problem_id, **kw):
        # Completions of odd length are unscorable: every group keeps a ragged scorable part.
        return [None if len(c) % 2 else s for c, s in zip(completions, score(prompts, completions, problem_id))]

    trainer = make_trainer(tmp_path, advantage="dr_grpo", reward=sometimes_none)
    trainer.train()
    assert any(not bool(rec["scorable"].all()) for rec in trainer.records)
    for rec, expected in zip(trainer.records, replay("dr_grpo", {}, trainer.records)):
        assert torch.equal(rec["advantages"], expected)
        assert bool((rec["advantages"][~rec["scorable"]] == 0).all())


def test_fade_state_is_saved_with_the_checkpoint_and_restored(tmp_path):
    trainer = make_trainer(tmp_path, advantage="fade", steps=2, config={"save_strategy": "steps", "save_steps": 2})
    trainer.train()
    checkpoint = tmp_path / "trl" / "checkpoint-2"
    saved = json.loads((checkpoint / STATE_FILE).read_text())
    assert saved["estimator"] == "fade" and saved["state"] == trainer.fade_estimator.state_dict()
    assert saved["state"]["step"] == 2

    class Resumed(Recording):
        def _load_optimizer_and_scheduler(self, checkpoint):
            super()._load_optimizer_and_scheduler(checkpoint)
            self.loaded = self.fade_estimator.state_dict()

    resumed = make_trainer(tmp_path, cls=Resumed, advantage="fade", steps=3)
    assert resumed.fade_estimator.state_dict() != saved["state"]
    resumed.train(resume_from_checkpoint=str(checkpoint))
    assert resumed.loaded == saved["state"]
    # The loss-pass entropy pending at the checkpoint feeds the first generation after it.
    pending = saved["pending_entropy"]
    assert resumed.fed[0] == {"entropy": pytest.approx(sum(pending) / len(pending)), "step": 2}

    other = make_trainer(tmp_path, advantage="fade_alpha", steps=2)
    with pytest.raises(ValueError, match="holds the state of estimator 'fade'"):
        other.train(resume_from_checkpoint=str(checkpoint))


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"advantage": "nope"}, "unknown estimator 'nope'; available: "),
        ({"advantage": "passk", "advantage_kwargs": {"kk": 2}}, r"unknown parameter\(s\) \['kk'\]"),
        ({"advantage": "fade", "entropy": "later"}, "entropy must be one of"),
        ({"advantage": "remax"}, "needs a baseline response per prompt"),
    ],
)
def test_bad_settings_fail_before_the_model_is_touched(kwargs, message):
    with pytest.raises(ValueError, match=message):
        FadeGRPOTrainer(model=None, **kwargs)


def test_normalize_then_sum_is_refused(tmp_path):
    with pytest.raises(ValueError, match="multi_objective_aggregation must be 'sum_then_normalize'"):
        make_trainer(tmp_path, advantage="grpo", config={"multi_objective_aggregation": "normalize_then_sum"})


def test_two_processes_compute_the_same_advantages_and_keep_their_own_slice(tmp_path):
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
           str(Path(__file__).with_name("trl_ranks.py")), str(tmp_path)]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    ranks = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in (0, 1)]
    assert all(r["world"] == 2 for r in ranks)
    assert len(ranks[0]["records"]) == len(ranks[1]["records"]) == 3
    for a, b in zip(ranks[0]["records"], ranks[1]["records"]):
        assert a["rewards"] == b["rewards"] and a["advantages"] == b["advantages"] and a["state"] == b["state"]
        half = len(a["advantages"]) // 2
        assert a["local"] == a["advantages"][:half] and b["local"] == b["advantages"][half:]
        # The shared advantages are FADE's formula at the schedule both ranks logged.
        rewards = torch.tensor(a["rewards"])
        expected = fade.estimator("fade", alpha=a["alpha"], delta=a["delta"])(rewards, G)
        assert torch.equal(torch.tensor(a["advantages"]), expected)


def _example():
    import importlib.util

    path = Path(__file__).parents[1] / "examples" / "trl" / "fade_grpo_math.py"
    spec = importlib.util.spec_from_file_location("fade_grpo_math", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_example_settings_validate_against_trl_and_fade():
    example = _example()
    checked = example.dry_run(example.parse_args([]))
    assert checked["fade"] == {"advantage": "fade", "advantage_kwargs": {"h_star_ratio": 0.5}, "entropy": "previous"}
    assert checked["grpo_config"]["num_generations"] == 8
    checked = example.dry_run(example.parse_args(["--advantage", "passk", "--advantage-args", "k=4"]))
    assert checked["fade"]["advantage_kwargs"] == {"k": 4}
    with pytest.raises(ValueError, match="unknown estimator 'nope'"):
        example.dry_run(example.parse_args(["--advantage", "nope"]))
    with pytest.raises(ValueError, match="unknown parameter"):
        example.dry_run(example.parse_args(["--advantage-args", "h_star_rate=0.5"]))


def test_example_prepares_gsm8k_rows_that_the_math_reward_scores():
    from datasets import Dataset

    example = _example()
    args = example.parse_args([])
    raw = Dataset.from_list([
        {"question": "Tom has 3 apples and buys 4 more. How many?", "answer": "3 + 4 = 7\n#### 7"},
        {"question": "Half of 1,000?", "answer": "1000 / 2 = 500\n#### 500"},
    ])
    rows = example.prepare(raw, args)
    assert rows[0]["answer"] == "7" and rows[1]["answer"] == "500"
    assert rows[0]["prompt"][-1] == {"role": "user", "content": "Tom has 3 apples and buys 4 more. How many?"}
    completions = [[{"role": "assistant", "content": "3 + 4 = 7, so \\boxed{7}"}],
                   [{"role": "assistant", "content": "The answer is \\boxed{250}"}]]
    scores = example.math_reward(prompts=rows["prompt"], completions=completions, answer=rows["answer"])
    assert scores == [1.0, 0.0]


def test_resuming_from_a_checkpoint_without_fade_state_starts_fresh(tmp_path, caplog):
    trainer = make_trainer(tmp_path, advantage="grpo", steps=2, config={"save_strategy": "steps", "save_steps": 2})
    trainer.train()
    checkpoint = tmp_path / "trl" / "checkpoint-2"
    (checkpoint / STATE_FILE).unlink()
    switched = make_trainer(tmp_path, advantage="fade", steps=2)
    with caplog.at_level("WARNING", logger="fade.integrations.trl"):
        switched.train(resume_from_checkpoint=str(checkpoint))
    assert "starts from its initial state" in caplog.text
