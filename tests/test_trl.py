"""FadeGRPOTrainer: a real TRL GRPOTrainer on CPU with the shipped arithmetic policy.

The specification: the advantages that reach TRL's loss are exactly fade's computation on the
rewards TRL gathered (replayed with a fresh estimator fed the same signals); FADE is fed the
entropy the docs promise; fade's diagnostics reach TRL's logs; several processes agree; the
estimator's state survives a checkpoint; bad settings fail before a model is touched.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

pytest.importorskip("trl")

import torch  # noqa: E402
from trl import GRPOConfig, GRPOTrainer  # noqa: E402

import fade  # noqa: E402
from fade.integrations.trl import STATE_FILE, FadeGRPOTrainer  # noqa: E402
from fade.testbed.policy import load_policy  # noqa: E402
from fade.testbed.runlog import load_run  # noqa: E402
from fade.testbed.tasks import get_task  # noqa: E402
from fade.testbed.trainer import base_model_dir  # noqa: E402
from fade.testbed.trl_task import prompt_dataset, reward_function  # noqa: E402

G = 4


@pytest.fixture(autouse=True)
def one_thread():
    """These models are tiny: a second intra-op thread buys nothing, and where the cores are shared
    (``pytest -n 2`` on two cores) its spinning makes each matrix product a hundred times slower."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


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
        # TRL's std scale is GRPO's; fade's other estimators set their own and need "none"
        scale_rewards="group" if kwargs.get("advantage") in ("grpo", "grpo_passk") else "none",
    )
    config.update(kwargs.pop("config", {}))
    return cls(
        model=model, reward_funcs=[reward or reward_function(task, problems)], args=GRPOConfig(**config),
        train_dataset=prompt_dataset(problems, tokenizer.bos_token), processing_class=tokenizer, **kwargs,
    )


def replay(name: str, params: dict, records: list[dict]) -> list[torch.Tensor]:
    """The advantages a fresh estimator gives the recorded rewards, fed the recorded signals
    (``params`` as the trainer resolved them: ``trainer.fade_estimator.params``)."""
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
    assert trainer.fade_estimator.params == {**fade.estimator(name, **params).params, **(
        {"eps": 1e-4, "scale": "group"} if name == "grpo" else {})}
    for rec, expected in zip(trainer.records, replay(name, trainer.fade_estimator.params, trainer.records)):
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
    for rec, expected in zip(trainer.records, replay("dr_grpo", trainer.fade_estimator.params, trainer.records)):
        assert torch.equal(rec["advantages"], expected)
        assert bool((rec["advantages"][~rec["scorable"]] == 0).all())


def test_a_generation_whose_every_completion_is_declined_still_feeds_the_schedule(tmp_path):
    task = get_task("arithmetic")
    problems = task.problems("train", n=64, seed=0)
    score = reward_function(task, problems)
    calls = []

    def declined_once(prompts, completions, problem_id, **kw):
        calls.append(len(prompts))
        scores = score(prompts, completions, problem_id)
        return [None] * len(scores) if len(calls) == 2 else scores

    trainer = make_trainer(tmp_path, advantage="fade", reward=declined_once, accumulation=1)
    trainer.train()
    declined = trainer.records[1]
    assert not bool(declined["scorable"].any()) and bool((declined["advantages"] == 0).all())
    # The step is heard all the same (fade.weighing.observe, the rule of fade.weigh): the schedule moves on.
    assert [[sorted(f) for f in rec["fed"]] for rec in trainer.records] == [[["entropy", "step"]]] * 3
    assert [rec["fed"][0]["step"] for rec in trainer.records] == [0, 1, 2]
    # Nothing was weighed: the step logs nothing under fade/ (not the previous batch's schedule and mass).
    rows = [row for row in trainer.state.log_history if "loss" in row]
    assert [any(key.startswith("fade/") for key in row) for row in rows] == [True, False, True]


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
    assert checked["grpo_config"]["scale_rewards"] == "none"
    checked = example.dry_run(example.parse_args(["--advantage", "passk", "--advantage-args", "k=4"]))
    assert checked["fade"]["advantage_kwargs"] == {"k": 4}
    assert example.dry_run(example.parse_args(["--advantage", "grpo", "--advantage-args", ""]))["grpo_config"][
        "scale_rewards"] == "group"
    with pytest.raises(
        ValueError,
        match=r"scale_rewards=.group. means scale=.group. for estimator .grpo., but advantage_kwargs has scale=.batch.",
    ):
        example.dry_run(example.parse_args(["--advantage", "grpo", "--advantage-args", "scale=batch"]))
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


# -- the drop-in contract: FadeGRPOTrainer(advantage="grpo") is GRPOTrainer -------------------------

LOSS_TYPES = ["grpo", "bnpo", "dr_grpo", "dapo", "cispo", "sapo", "luspo", "vespo"]
NAN = float("nan")


def injected_rewards(self, inputs, prompts, completions, completion_ids_list):
    """Stands in for TRL's scoring in GRPOTrainer._calculate_rewards, so that stock and fade see the
    same rewards: two reward functions' real-valued scores, a None here and there (NaN), a completion
    both decline, a group in which function 1 scores one completion only, a group in which function 0
    gives every completion the same score."""
    n = len(prompts)
    gen = torch.Generator().manual_seed(1000 + self.state.global_step)
    r = torch.randint(-2, 5, (n, 2), generator=gen).float() / 2
    r[torch.rand(n, 2, generator=gen) < 0.15] = NAN
    r[1] = NAN
    r[G:2 * G - 1, 1] = NAN
    r[2 * G:3 * G, 0] = 0.5
    return r


def brevity(completions, **_):
    return [1.0 / (1 + len(c)) for c in completions]


class Capture:
    """Keeps the advantages each training generation hands to the loss, and the loss values."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.captured, self.losses = [], []

    def _generate_and_score_completions(self, inputs):
        out = super()._generate_and_score_completions(inputs)
        if self.model.training:
            self.captured.append(out["advantages"].clone())
        return out

    def _compute_loss(self, model, inputs):
        loss = super()._compute_loss(model, inputs)
        if self.model.training:
            self.losses.append(float(loss.detach()))
        return loss


class StockCapture(Capture, GRPOTrainer):
    pass


class FadeCapture(Capture, FadeGRPOTrainer):
    pass


def tiny_trainer(cls, tiny_model: str, tmp_path: Path, *, reward_funcs=None, steps: int = 1, **kwargs):
    """A trainer on the tiny randomly initialised policy: 16 completions per step, 4 prompts x G."""
    torch.manual_seed(0)
    task = get_task("arithmetic")
    model, tokenizer = load_policy(tiny_model)
    problems = task.problems("train", n=32, seed=0)
    config = dict(
        output_dir=str(tmp_path / cls.__name__), per_device_train_batch_size=4 * G, num_generations=G,
        gradient_accumulation_steps=1, max_completion_length=6, max_steps=steps, logging_steps=1,
        learning_rate=1e-3, bf16=False, use_cpu=True, report_to="none", save_strategy="no",
        gradient_checkpointing=False, temperature=1.0, beta=0.0, seed=0, disable_tqdm=True,
    )
    config.update(kwargs.pop("config", {}))
    return cls(
        model=model, reward_funcs=reward_funcs or [reward_function(task, problems), brevity],
        args=GRPOConfig(**config), train_dataset=prompt_dataset(problems, tokenizer.bos_token),
        processing_class=tokenizer, **kwargs,
    )


def stock_and_fade(monkeypatch, tiny_model, tmp_path, config: dict) -> tuple[Capture, Capture]:
    monkeypatch.setattr(GRPOTrainer, "_calculate_rewards", injected_rewards)
    stock = tiny_trainer(StockCapture, tiny_model, tmp_path, config=config)
    stock.train()
    ours = tiny_trainer(FadeCapture, tiny_model, tmp_path, config=config, advantage="grpo")
    ours.train()
    return stock, ours


@pytest.mark.parametrize("aggregation", ["sum_then_normalize", "normalize_then_sum"])
@pytest.mark.parametrize("scale_rewards", ["group", "batch", "none", True, False])
def test_fade_grpo_gives_grpotrainers_advantages_for_every_scale_and_aggregation(
    monkeypatch, tiny_model, tmp_path, parity, scale_rewards, aggregation
):
    """Stock GRPOTrainer and FadeGRPOTrainer(advantage="grpo") on the same rewards (weights, Nones, an
    unscorable completion): the same advantages reach the loss, and the loss is the same."""
    config = {"scale_rewards": scale_rewards, "multi_objective_aggregation": aggregation, "reward_weights": [0.7, -1.3]}
    stock, ours = stock_and_fade(monkeypatch, tiny_model, tmp_path, config)
    assert len(stock.captured) == len(ours.captured) == 1
    theirs, mine = stock.captured[0], ours.captured[0]
    assert bool((theirs != 0).any()) and theirs[1] == 0  # signal, and the unscorable completion gets 0
    parity("trl", "GRPOTrainer", 'FadeGRPOTrainer(advantage="grpo")',
           f"scale_rewards={scale_rewards!r}, {aggregation}", mine, theirs)
    assert ours.losses == pytest.approx(stock.losses, rel=1e-5, abs=1e-7)
    # TRL's completion table logs the advantages that were used
    assert list(ours._logs["advantages"]) == pytest.approx(list(stock._logs["advantages"]), rel=1e-5, abs=1e-6)


@pytest.mark.parametrize("loss_type", LOSS_TYPES)
def test_fade_grpo_gives_grpotrainers_advantages_and_loss_on_every_loss_type(
    monkeypatch, tiny_model, tmp_path, parity, loss_type
):
    config = {"loss_type": loss_type, "scale_rewards": "batch", "reward_weights": [1.0, 0.5]}
    if loss_type == "luspo":
        config["importance_sampling_level"] = "sequence"  # TRL requires it for luspo
    stock, ours = stock_and_fade(monkeypatch, tiny_model, tmp_path, config)
    parity("trl", "GRPOTrainer", 'FadeGRPOTrainer(advantage="grpo")', f"loss_type={loss_type!r}",
           ours.captured[0], stock.captured[0])
    assert ours.losses == pytest.approx(stock.losses, rel=1e-5, abs=1e-7)


def test_scale_rewards_has_no_effect_under_normalize_then_sum_and_fade_says_so(monkeypatch, tiny_model, tmp_path,
                                                                                caplog):
    with caplog.at_level("WARNING", logger="fade.integrations.trl"):
        tiny_trainer(FadeGRPOTrainer, tiny_model, tmp_path, advantage="grpo",
                     config={"scale_rewards": "none", "multi_objective_aggregation": "normalize_then_sum"})
    assert "scale_rewards='none' has no effect under multi_objective_aggregation='normalize_then_sum'" in caplog.text


@pytest.mark.parametrize(
    ("advantage", "kwargs", "config", "message"),
    [
        (
            "fade",
            {},
            {"scale_rewards": "group"},
            r"^FadeGRPOTrainer: scale_rewards='group' divides TRL's advantage by the reward std; estimator 'fade' sets "
            r"its own scale and cannot honour it: set scale_rewards='none' \(or False\)$",
        ),
        (
            "maxrl",
            {},
            {"scale_rewards": True},
            r"scale_rewards='group' .* estimator 'maxrl'",
        ),  # TRL reads True as 'group'
        (
            "fade",
            {},
            {"scale_rewards": "none", "multi_objective_aggregation": "normalize_then_sum"},
            r"^FadeGRPOTrainer: multi_objective_aggregation='normalize_then_sum' is TRL's GRPO recipe .* estimator "
            r"'fade' needs one reward per completion",
        ),
        (
            "grpo_passk",
            {},
            {"scale_rewards": "batch"},
            r"scale_rewards='batch' cannot be honoured by estimator "
            r"'grpo_passk'",
        ),
        (
            "grpo",
            {"scale": "none"},
            {"scale_rewards": "group"},
            r"^FadeGRPOTrainer: scale_rewards='group' means scale='group' for estimator 'grpo', "
            r"but advantage_kwargs has "
            r"scale='none'; set one of them$",
        ),
        (
            "grpo",
            {"scale": "batch"},
            {"multi_objective_aggregation": "normalize_then_sum"},
            r"multi_objective_aggregation='normalize_then_sum' means scale='group' for estimator 'grpo'",
        ),
    ],
)
def test_a_trl_setting_an_estimator_cannot_honour_is_refused_before_the_model_loads(advantage, kwargs, config,
                                                                                    message, tmp_path):
    args = GRPOConfig(output_dir=str(tmp_path), use_cpu=True, report_to="none", **config)
    with pytest.raises(ValueError, match=message) as caught:
        FadeGRPOTrainer(model=None, args=args, advantage=advantage, advantage_kwargs=kwargs)
    assert "\n" not in str(caught.value)


def test_weights_that_sum_rewards_beyond_one_need_a_success_option(tiny_model, tmp_path):
    with pytest.raises(ValueError, match=r"reward_weights \[1.0, 1.0\] sum rewards in \[0, 1\] to values in \[0, 2\]: "
                                         r"pass advantage_kwargs=\{'success_threshold': T\}"):
        tiny_trainer(FadeGRPOTrainer, tiny_model, tmp_path, advantage="fade", config={"scale_rewards": "none"})
    trainer = tiny_trainer(FadeGRPOTrainer, tiny_model, tmp_path, advantage="fade", config={"scale_rewards": "none"},
                           advantage_kwargs={"reward_min": 0.0, "reward_max": 2.0})
    assert trainer.fade_estimator.params["reward_max"] == 2.0


def test_rewards_outside_the_unit_interval_are_refused_on_the_first_batch(tiny_model, tmp_path):
    """A Python reward function gives no range up front: its first batch outside [0, 1] stops the run,
    before the first optimizer step, naming the option."""

    def partial_credit(completions, **_):
        return [-0.13 if i % 3 else 0.9 for i in range(len(completions))]

    trainer = tiny_trainer(FadeGRPOTrainer, tiny_model, tmp_path, reward_funcs=[partial_credit], advantage="fade",
                           config={"scale_rewards": "none"})
    with pytest.raises(
        ValueError, match=r"expects rewards in \[0, 1\], got values in \[-0.13, 0.9\]: .*success_threshold="
    ):
        trainer.train()
    assert trainer.state.global_step == 0


@pytest.fixture(scope="module")
def tiny_reward_model(tiny_model):
    """A randomly initialised tiny Llama with a scalar head: a reward model with real-valued scores."""
    from transformers import LlamaForSequenceClassification

    _, tokenizer = load_policy(tiny_model)
    config = copy.deepcopy(load_policy(tiny_model)[0].config)
    config.num_labels = 1
    config.pad_token_id = tokenizer.pad_token_id
    torch.manual_seed(1)
    return LlamaForSequenceClassification(config), tokenizer


def test_fade_trains_on_a_reward_models_scores_with_a_success_threshold(tiny_model, tiny_reward_model, tmp_path):
    model, tokenizer = tiny_reward_model
    with pytest.raises(ValueError, match=r"^FadeGRPOTrainer: estimator 'fade' reads each reward as a success in "
                                         r"\[0, 1\], but reward function '.*' is a reward model"):
        tiny_trainer(FadeGRPOTrainer, tiny_model, tmp_path, reward_funcs=[model], advantage="fade",
                     reward_processing_classes=[tokenizer], config={"scale_rewards": "none"})

    params = {"success_threshold": 0.0}
    trainer = tiny_trainer(Recording, tiny_model, tmp_path, reward_funcs=[model], advantage="fade", steps=2,
                           advantage_kwargs=params, reward_processing_classes=[tokenizer],
                           config={"scale_rewards": "none"})
    trainer.train()
    assert trainer.state.global_step == 2 and len(trainer.records) == 2
    scores = torch.cat([rec["rewards"] for rec in trainer.records])
    assert bool((scores >= 0).any()) and bool((scores < 0).any())  # a reward model's real-valued scores
    for rec, expected in zip(trainer.records, replay("fade", trainer.fade_estimator.params, trainer.records)):
        assert torch.equal(rec["advantages"], expected.to(rec["advantages"].dtype))
    solve = trainer.fade_estimator.last["batch_solve_rate"]
    assert solve == pytest.approx(float((trainer.records[-1]["rewards"] >= 0).float().mean()))
    assert trainer.fade_estimator.state_dict()["step"] == 2


@pytest.mark.parametrize(("name", "params"), [
    ("maxrl", {"success_threshold": 0.5}),
    ("fade", {"success_threshold": 0.5, "alpha": 2.0, "delta": 0.5}),
])
def test_the_testbed_verl_and_trl_log_one_batchs_diagnostics_alike(name, params, tiny_model, tmp_path, monkeypatch):
    """Partial credit under a success threshold: the testbed trainer, verl and TRL log the same
    diagnostics for one batch, measured on the successes the estimator reads, not the raw scores."""
    pytest.importorskip("verl")
    import numpy as np
    from omegaconf import OmegaConf
    from verl import DataProto
    from verl.trainer.ppo.ray_trainer import compute_advantage

    import fade.integrations.verl as fv
    from fade.mass import DIAGNOSTICS
    from fade.testbed.datasets import VERIFIERS
    from fade.testbed.tasks import Verdict
    from fade.testbed.trainer import TrainConfig, train

    # The testbed: one step of 4 prompts x G, judged by a verifier that gives partial credit.
    scores: list[float] = []

    def graded(answer: str, completion: str) -> Verdict:
        score = 1.0 if completion.strip() == answer else 0.6 if len(completion) % 2 == 0 else 0.2
        scores.append(score)
        return Verdict(score, "correct" if score == 1.0 else "wrong")

    monkeypatch.setitem(VERIFIERS, "graded", graded)
    data = tmp_path / "sums.jsonl"
    data.write_text("".join(json.dumps({"prompt": f"{a}+{b}=", "answer": str(a + b)}) + "\n"
                            for a in range(10) for b in range(10)))
    out = train(TrainConfig(out=str(tmp_path / "testbed"), model=tiny_model, data=str(data), verifier="graded",
                            estimator=name, estimator_args=params, steps=1, prompts_per_step=4, group_size=G,
                            eval_every=0, eval_prompts=0, checkpoint_every=1, progress=False))
    testbed = load_run(out).metrics[0]
    rewards, groups = torch.tensor(scores), torch.arange(4 * G) // G
    adv = fade.estimator(name, **params)(rewards, groups)
    expected = fade.decompose(adv, (rewards >= 0.5).float(), groups)
    assert expected.total_mass > 0 and expected.difficulty != pytest.approx(
        fade.decompose(adv, rewards, groups).difficulty
    )
    want = {f"fade/{key}": getattr(expected, key) for key in DIAGNOSTICS}
    assert {f"fade/{key}": testbed[key] for key in DIAGNOSTICS} == pytest.approx(want, rel=1e-6)

    # verl: the same scores on each response's last token, grouped by uid.
    vname = name if name == "fade" else f"fade_{name}"
    tlr = torch.zeros(4 * G, 3)
    tlr[:, -1] = rewards
    batch = DataProto.from_dict(
        tensors={"token_level_rewards": tlr, "response_mask": torch.ones(4 * G, 3, dtype=torch.int64)},
        non_tensors={"uid": np.array([f"prompt-{i}" for i in groups.tolist()], dtype=object)},
    )
    config = OmegaConf.create({"adv_estimator": vname, "gamma": 1.0, "lam": 1.0, "norm_adv_by_std_in_grpo": True,
                               "use_kl_in_reward": False, "fade": params})
    fv.reset_estimators()
    try:
        compute_advantage(batch, adv_estimator=vname, config=config)
        verl = fv.fade_metrics(vname, params)
    finally:
        fv.reset_estimators()
    assert {key: verl[key] for key in want} == pytest.approx(want, rel=1e-6)

    # TRL: one generation of 4 prompts x G whose reward function gives the same scores.
    def replayed(completions, **_):
        return rewards.tolist()

    trainer = tiny_trainer(FadeGRPOTrainer, tiny_model, tmp_path, reward_funcs=[replayed], advantage=name,
                           advantage_kwargs=params, config={"scale_rewards": "none"})
    trainer.train()
    logged = {key: value for row in trainer.state.log_history for key, value in row.items() if key.startswith("fade/")}
    assert {key: logged[key] for key in want} == pytest.approx(want, rel=1e-6)


def test_the_testbed_and_trl_feed_fade_decay_the_same_schedule_at_the_same_step(tiny_model, tmp_path):
    """FADE's step counts the updates before a batch (docs/method.md): 0 at a run's first update.
    fade_decay's logged schedule at training step s (1-based in both logs) is its closed form at
    t = s - 1 in a real testbed run and in a real TRL run; verl's is checked in the CPU smoke
    (tests/test_verl_cpu_e2e.py)."""
    from dataclasses import replace

    from fade.adaptive import schedule
    from fade.testbed.trainer import TrainConfig, train

    params = {"total_steps": 3}
    est = fade.estimator("fade_decay", **params)
    expected = {s: schedule(replace(est.state, step=s - 1), est.params, "decay") for s in (1, 2, 3)}
    assert expected[1] == (3.0, 1.0) and expected[2] != expected[1]  # the first update explores fully

    out = train(TrainConfig(out=str(tmp_path / "testbed"), model=tiny_model, task="arithmetic", estimator="fade_decay",
                            estimator_args=params, steps=3, prompts_per_step=4, group_size=G, eval_every=0,
                            eval_prompts=0, checkpoint_every=3, progress=False))
    testbed = {row["step"]: (row["alpha"], row["delta"]) for row in load_run(out).metrics}

    task = get_task("arithmetic")
    trainer = tiny_trainer(FadeGRPOTrainer, tiny_model, tmp_path, steps=3, advantage="fade_decay",
                           reward_funcs=[reward_function(task, task.problems("train", n=32, seed=0))],
                           advantage_kwargs=params, config={"scale_rewards": "none"})
    trainer.train()
    trl = {
        row["step"]: (row["fade/alpha"], row["fade/delta"]) for row in trainer.state.log_history if "fade/alpha" in row
    }
    assert sorted(testbed) == sorted(trl) == [1, 2, 3]
    for s in (1, 2, 3):
        assert testbed[s] == pytest.approx(expected[s], rel=1e-12) and trl[s] == pytest.approx(expected[s], rel=1e-6), s
