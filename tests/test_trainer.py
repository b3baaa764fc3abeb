"""The testbed trainer end to end, small: every estimator runs, resume is exact, files follow the contract."""

from __future__ import annotations

import gzip
import json
import math
import os
import zlib

import numpy as np
import pytest
import torch

import fade
from fade import jsonl
from fade.testbed import checkpoint as ckpt_module
from fade.testbed import session
from fade.testbed.checkpoint import JsonlLog, compress_log, compress_logs, load_checkpoint, save_checkpoint
from fade.testbed.datasets import VERIFIERS
from fade.testbed.runlog import load_run, log_path, logged_buckets, read_log
from fade.testbed.tasks import ArithmeticTask, Verdict, get_task
from fade.testbed.trainer import OPTIMIZERS, TrainConfig, token_covariance, train

# The metrics.jsonl keys the README's testbed section promises for every step.
CONTRACT = (
    "step", "reward_mean", "entropy", "param_norm", "grad_norm", "rank1_share", "positive_mass",
    "negative_mass", "sign_balance", "difficulty", "effective_sample_fraction", "step_seconds",
)


def _config(out, model, **kw) -> TrainConfig:
    base = dict(out=str(out), model=model, steps=2, prompts_per_step=4, group_size=4, eval_every=0, eval_prompts=0,
                checkpoint_every=1, progress=False)
    base.update(kw)
    return TrainConfig(**base)


def _records(path, drop_timing=True):
    """The records of the log ``path`` names (``metrics.jsonl``), read in whichever form the run holds it."""
    rows = read_log(log_path(path.parent, path.name))
    if drop_timing:
        rows = [{k: v for k, v in r.items() if not k.endswith("_seconds")} for r in rows]
    return rows


# remax needs the greedy answer's reward, opo the lengths: the trainer provides both.
@pytest.mark.parametrize("name", fade.available())
def test_every_estimator_runs_end_to_end(name, tiny_model, tmp_path):
    args = {"total_steps": 2} if name == "fade_decay" else {"path": "shift"} if name == "fade_fixed" else {}
    if name in ("passk", "pkpo"):
        args = {"k": 2}
    out = train(_config(tmp_path / name, tiny_model, estimator=name, estimator_args=args))
    rows = _records(out / "metrics.jsonl", drop_timing=False)
    assert [r["step"] for r in rows] == [1, 2]
    for r in rows:
        for key in CONTRACT:
            assert key in r, key
        assert all(v is None or isinstance(v, (int, float)) for v in r.values())
        assert 0.0 <= r["rank1_share"] <= 1.0
        assert r["entropy"] > 0
    assert (out / "checkpoint.pt").is_file() and (out / "policy" / "config.json").is_file()
    assert json.loads((out / "run.json").read_text())["estimator"] == name


def test_fade_schedule_is_logged(tiny_model, tmp_path):
    out = train(_config(tmp_path / "f", tiny_model, estimator="fade"))
    rows = _records(out / "metrics.jsonl")
    for key in ("alpha", "delta", "p_hat", "h_hat", "h_star"):
        assert key in rows[-1], key
    # H* is half the first observed entropy (the default h_star_ratio)
    assert rows[0]["h_star"] == pytest.approx(0.5 * rows[0]["entropy"])


@pytest.mark.parametrize("filtered", [False, True], ids=["plain", "filtered-tempered"])
def test_the_sampled_old_logprobs_equal_a_full_forward_on_every_batch(filtered, tiny_model, tmp_path, monkeypatch,
                                                                     request):
    """What the update and FADE read by default (``old_logprobs="sampler"``): the log-probs and
    entropies sampling recorded, equal to a full forward's on the same rows within 1e-5, on the
    trainer's own batches (the filter's joined draws included), after the policy has moved."""
    from fade.testbed import trainer as trainer_module
    from fade.testbed.sampling import sequence_logprobs

    original, checked = trainer_module._policy_pass, []

    def checking(setup, batch):
        got = original(setup, batch)
        r = batch.rollouts
        with torch.no_grad():
            lp, h = sequence_logprobs(setup.model, r.prompt_ids, r.prompt_mask, r.completion_ids, r.completion_mask,
                                      temperature=setup.config.temperature, with_entropy=True)
        torch.testing.assert_close(got.old_logprobs, lp, atol=1e-5, rtol=0)
        tokens = int(r.completion_mask.sum())
        assert got.entropy == pytest.approx(float(h.sum()) / tokens, abs=1e-5)
        assert got.old_logprobs is r.logprobs  # taken from sampling, not recomputed
        checked.append(tokens)
        return got

    monkeypatch.setattr(trainer_module, "_policy_pass", checking)
    # Filtered: rewards by parity, so groups differ and the filter joins several draws' rows.
    settings = dict(request.getfixturevalue("parity_data"), filter_zero_variance=True, group_size=2,
                    temperature=0.7) if filtered else {}
    train(_config(tmp_path / "run", tiny_model, steps=3, lr=0.01, estimator="fade", **settings))
    assert len(checked) == 3 and all(checked)


def test_recomputed_and_sampled_old_logprobs_give_the_same_run_within_float_error(tiny_model, tmp_path):
    runs = {how: _records(train(_config(tmp_path / how, tiny_model, steps=3, lr=0.01, estimator="fade",
                                        old_logprobs=how)) / "metrics.jsonl")
            for how in ("sampler", "recompute")}
    for a, b in zip(runs["sampler"], runs["recompute"], strict=True):
        assert a["reward_mean"] == b["reward_mean"]  # the same tokens were drawn
        for key in ("entropy", "p_hat", "alpha", "delta", "param_norm"):
            assert a[key] == pytest.approx(b[key], abs=1e-5), key


def test_resume_equals_uninterrupted_run(tiny_model, tmp_path):
    kw = dict(
        steps=4,
        eval_every=2,
        eval_prompts=4,
        eval_samples=4,
        epochs=2,
        minibatches=2,
        checkpoint_every=2,
        estimator="fade",
    )
    train(_config(tmp_path / "a", tiny_model, **kw))
    train(_config(tmp_path / "b", tiny_model, **{**kw, "steps": 2}))
    train(_config(tmp_path / "b", tiny_model, **kw), resume=True)
    for name in ("metrics.jsonl", "eval.jsonl"):
        assert _records(tmp_path / "a" / name) == _records(tmp_path / "b" / name), name
    wa = load_checkpoint(tmp_path / "a" / "checkpoint.pt")
    wb = load_checkpoint(tmp_path / "b" / "checkpoint.pt")
    assert wa["step"] == wb["step"] == 4
    assert wa["estimator"] == wb["estimator"]
    for key, value in wa["model"].items():
        assert torch.equal(value, wb["model"][key]), key


def test_resume_after_a_kill_drops_records_past_the_checkpoint(tiny_model, tmp_path):
    """A run killed after logging step 3 but before its checkpoint resumes from step 2 and logs 3 once."""
    kw = dict(steps=3, checkpoint_every=2)
    train(_config(tmp_path / "a", tiny_model, **kw))
    train(_config(tmp_path / "b", tiny_model, **kw))
    # b's state as if killed while writing step 3's record: its step-2 checkpoint (c's, the same
    # seeded computation), steps 1-3 logged and a torn fourth line.
    b = tmp_path / "b"
    train(_config(tmp_path / "c", tiny_model, steps=2, checkpoint_every=2))
    os.replace(tmp_path / "c" / "checkpoint.pt", b / "checkpoint.pt")
    _killed_while_writing(b / "metrics.jsonl.gz", '{"step": 3, "reward_mean": 0.5')
    train(_config(b, tiny_model, **kw), resume=True)
    assert _records(tmp_path / "a" / "metrics.jsonl") == _records(b / "metrics.jsonl")


def _killed_while_writing(path, torn: str) -> None:
    """Leave the compressed log ``path`` as a run killed mid-record leaves it: its records in one
    member still being written (no gzip trailer), then part of the compressed bytes of ``torn``."""
    member = zlib.compressobj(9, zlib.DEFLATED, 31)
    data = b"".join(member.compress(line.encode() + b"\n") + member.flush(zlib.Z_SYNC_FLUSH)
                    for line in jsonl.read_bytes(path).decode().splitlines())
    tail = member.compress(torn.encode()) + member.flush(zlib.Z_SYNC_FLUSH)
    path.write_bytes(data + tail[: len(tail) // 2])
    with pytest.warns(RuntimeWarning, match="unfinished last line"):
        assert [r["step"] for r in read_log(path)] == [1, 2, 3]  # readable as it is


def test_a_run_with_plain_logs_from_before_resumes_into_compressed_ones(tiny_model, tmp_path):
    """A run written before the logs were compressed (plain metrics.jsonl with a torn last line,
    plain eval.jsonl) resumes exactly: its logs are converted, the plain files removed."""
    kw = dict(steps=3, checkpoint_every=2, eval_every=2, eval_prompts=4, eval_samples=2)
    train(_config(tmp_path / "a", tiny_model, **kw))
    b = tmp_path / "b"
    train(_config(b, tiny_model, **kw))
    train(_config(tmp_path / "c", tiny_model, **{**kw, "steps": 2}))
    os.replace(tmp_path / "c" / "checkpoint.pt", b / "checkpoint.pt")
    for name in ("metrics.jsonl", "eval.jsonl"):
        (b / name).write_bytes(jsonl.read_bytes(b / f"{name}.gz"))
        (b / f"{name}.gz").unlink()
    with open(b / "metrics.jsonl", "a") as f:
        f.write('{"step": 4, "reward_mean": 0.5')  # torn by the kill
    assert [r["step"] for r in read_log(b / "eval.jsonl")] == [0, 2, 3]
    train(_config(b, tiny_model, **kw), resume=True)
    assert sorted(p.name for p in b.glob("*.jsonl*")) == ["eval.jsonl.gz", "metrics.jsonl.gz", "resumes.jsonl"]
    for name in ("metrics.jsonl", "eval.jsonl"):
        assert _records(tmp_path / "a" / name) == _records(b / name), name


def test_refuses_to_overwrite_a_run_and_to_resume_nothing(tiny_model, tmp_path):
    train(_config(tmp_path / "r", tiny_model, steps=1))
    with pytest.raises(ValueError, match="--resume"):
        train(_config(tmp_path / "r", tiny_model, steps=1))
    with pytest.raises(ValueError, match="no checkpoint.pt"):
        train(_config(tmp_path / "empty", tiny_model), resume=True)


@pytest.mark.parametrize(
    "field, value, match",
    [
        ("steps", 0, "steps"),
        ("group_size", 1.5, "group_size"),
        ("lr", -1.0, "lr"),
        ("loss_agg", "sum", "loss_agg"),
        ("kl_coef", float("nan"), "kl_coef"),
        ("minibatches", 1000, "minibatches"),
        ("max_new_tokens", 0, "max_new_tokens"),
        ("adam_beta2", 1.0, "adam_beta2"),
        ("adam_eps", -1e-8, "adam_eps"),
        ("optimizer", "adam", "optimizer must be one of 'adamw', 'sgd', got 'adam'"),
        ("train_pool", 0, r"train_pool must be a positive integer \(or None for the whole train split\), got 0"),
        ("train_pool", True, r"train_pool must be a positive integer .* got True"),
        ("train_pool", 3, r"--train-pool 3 is smaller than --prompts-per-step 4: each step draws that many distinct "
                          r"problems from the pool; use a pool of at least 4"),
        ("difficulties", [5], r"difficulties must be buckets of task 'arithmetic' \(1, 2, 3, 4\), got \[5\]"),
        ("difficulties", [], r"difficulties must be a non-empty list of bucket numbers .* got \[\]"),
        ("difficulties", "2", r"difficulties must be a non-empty list of bucket numbers .* got '2'"),
        ("difficulties", [3, 2], r"difficulties must name each bucket once, in increasing order, got \[3, 2\]"),
        ("difficulties", [2, 2], r"difficulties must name each bucket once, in increasing order, got \[2, 2\]"),
    ],
)
def test_bad_config_is_a_clear_error(field, value, match, tiny_model, tmp_path):
    with pytest.raises(ValueError, match=match):
        train(_config(tmp_path / "x", tiny_model, **{field: value}))
    assert not (tmp_path / "x").exists()  # refused before the run's folder is made


def test_a_pool_the_split_cannot_fill_is_refused_before_the_run_starts(tiny_model, tmp_path):
    # One-digit sums: 73 of them are in the train split.
    with pytest.raises(ValueError, match=r"--train-pool 74: the train split of 'arithmetic' within difficulties \[1\] "
                                         r"cannot give 74 distinct problems"):
        train(_config(tmp_path / "x", tiny_model, difficulties=[1], train_pool=74))
    assert not (tmp_path / "x").exists()
    assert len(session.training_pool(get_task("arithmetic"), _config("-", tiny_model, difficulties=[1],
                                                                     train_pool=73))) == 73


def _drawn_problems(monkeypatch) -> list[list]:
    """Record the problems every verifier call of the arithmetic task scores (one call per training
    step, one per chunk of evaluation), as a list of problem lists."""
    seen: list[list] = []
    verify_many = ArithmeticTask.verify_many

    def recording(self, problems, completions):
        seen.append(list(problems))
        return verify_many(self, problems, completions)

    monkeypatch.setattr(ArithmeticTask, "verify_many", recording)
    return seen


def test_a_training_pool_is_one_fixed_set_every_step_and_every_seed_draws_from(tiny_model, tmp_path, monkeypatch):
    seen = _drawn_problems(monkeypatch)
    pools, steps = [], []
    for seed in (0, 1):
        config = _config(tmp_path / f"s{seed}", tiny_model, estimator="grpo", steps=3, seed=seed, group_size=2,
                         train_pool=6)
        pools.append({p.id for p in session.training_pool(get_task("arithmetic"), config)})
        seen.clear()
        train(config)
        steps.append([{p.id for p in step} for step in seen])
    assert pools[0] == pools[1] and len(pools[0]) == 6  # the pool does not depend on the run's seed
    for pool, run in zip(pools, steps):
        assert len(run) == 3 and all(len(step) == 4 and step <= pool for step in run)  # 4 distinct of the pool
    assert steps[0] != steps[1]  # each step's draw does
    # without the pool, the same steps draw from the whole split: other problems
    seen.clear()
    train(_config(tmp_path / "split", tiny_model, estimator="grpo", steps=3, group_size=2))
    assert not set().union(*({p.id for p in step} for step in seen)) <= pools[0]


def test_difficulties_restrict_the_training_draws_the_pool_and_the_evaluation(tiny_model, tmp_path, monkeypatch):
    seen = _drawn_problems(monkeypatch)
    out = train(_config(tmp_path / "d", tiny_model, estimator="grpo", steps=2, group_size=2, difficulties=[2, 3],
                        eval_every=2, eval_prompts=6, eval_samples=2))
    assert seen and all(p.difficulty in (2, 3) for call in seen for p in call)  # training and held-out draws
    assert {p.difficulty for call in seen for p in call} == {2, 3}
    assert all(logged_buckets(r, "reward_mean") == [2, 3] for r in _records(out / "metrics.jsonl"))
    evals = _records(out / "eval.jsonl")
    assert [r["step"] for r in evals] == [0, 2] and all(logged_buckets(r, "pass@1") == [2, 3] for r in evals)
    assert json.loads((out / "run.json").read_text())["difficulties"] == [2, 3]
    # with a pool, the pool is drawn from those buckets, stratified
    pool = session.training_pool(get_task("arithmetic"), _config("-", tiny_model, difficulties=[2, 3], train_pool=8))
    assert sorted(p.difficulty for p in pool) == [2, 2, 2, 2, 3, 3, 3, 3]
    seen.clear()
    train(_config(tmp_path / "p", tiny_model, estimator="grpo", steps=2, group_size=2, difficulties=[2, 3],
                  train_pool=8))
    assert len(seen) == 2 and all({p.id for p in step} <= {p.id for p in pool} for step in seen)


def test_a_data_file_takes_a_pool_and_difficulties_of_its_own_buckets(tiny_model, tmp_path):
    data = tmp_path / "sums.jsonl"
    data.write_text("".join(json.dumps({"prompt": f"{a}+{b}=", "answer": str(a + b), "difficulty": 1 + (a > 4)}) + "\n"
                            for a in range(10) for b in range(10)))
    config = _config(tmp_path / "d", tiny_model, data=str(data), verifier="numeric", train_pool=10, difficulties=[2])
    setup, _, _ = session.prepare(config, resume=False)
    assert len({p.id for p in setup.pool}) == 10 and {p.difficulty for p in setup.pool} == {2}
    assert {p.difficulty for p in setup.task.problems("test", 50, difficulties=[2])} == {2}
    with pytest.raises(ValueError, match=r"difficulties must be buckets of task 'sums' \(1, 2\), got \[3\]"):
        session.prepare(_config(tmp_path / "e", tiny_model, data=str(data), verifier="numeric", difficulties=[3]),
                        resume=False)
    with pytest.raises(ValueError, match=r"--train-pool 90: the train split of 'sums' cannot give 90 distinct"):
        session.prepare(_config(tmp_path / "f", tiny_model, data=str(data), verifier="numeric", train_pool=90),
                        resume=False)
    assert not any((tmp_path / name).exists() for name in "def")


def test_the_cli_reads_difficulties_and_a_pool(tmp_path, capsys):
    from fade import options
    from fade.cli import build_parser, main

    args = build_parser().parse_args(["train", "--out", "x", "--difficulties", "3,2", "--train-pool", "64"])
    config = options.from_args(TrainConfig, args)
    assert (config.difficulties, config.train_pool) == ([2, 3], 64)
    assert options.from_args(TrainConfig, build_parser().parse_args(["train", "--out", "x"])).difficulties is None
    assert main(["train", "--out", str(tmp_path / "x"), "--difficulties", "2,two"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("fade: error: --difficulties 2,two: expected bucket numbers separated by commas"), err
    assert not (tmp_path / "x").exists()


def test_unknown_estimator_and_bad_params(tiny_model, tmp_path):
    with pytest.raises(ValueError, match="unknown"):
        train(_config(tmp_path / "u", tiny_model, estimator="nope"))
    with pytest.raises(ValueError, match="alpha"):
        train(_config(tmp_path / "v", tiny_model, estimator="power", estimator_args={"alpha": -1}))


def test_optimizer_settings_come_from_the_config(tiny_model, tmp_path):
    out = train(
        _config(tmp_path / "o", tiny_model, steps=1, adam_beta1=0.8, adam_beta2=0.95, adam_eps=1e-6, weight_decay=0.01)
    )
    (group,) = load_checkpoint(out / "checkpoint.pt")["optimizer"]["param_groups"]
    assert (tuple(group["betas"]), group["eps"], group["weight_decay"]) == ((0.8, 0.95), 1e-6, 0.01)
    assert json.loads((out / "run.json").read_text())["adam_beta2"] == 0.95


def test_kl_seq_mean_and_minibatches(tiny_model, tmp_path):
    out = train(
        _config(tmp_path / "k", tiny_model, kl_coef=0.1, loss_agg="seq-mean", epochs=2, minibatches=4, estimator="grpo")
    )
    rows = _records(out / "metrics.jsonl")
    assert all(r["kl"] is not None and 0 <= r["kl"] < 0.1 for r in rows)


def test_data_file_with_named_verifier(tiny_model, tmp_path):
    data = tmp_path / "sums.jsonl"
    data.write_text("".join(json.dumps({"prompt": f"{a}+{b}=", "answer": str(a + b), "difficulty": 1 + (a > 4)}) + "\n"
                            for a in range(10) for b in range(10)))
    out = train(
        _config(
            tmp_path / "d", tiny_model, data=str(data), verifier="numeric", eval_every=2, eval_prompts=4, eval_samples=4
        )
    )
    assert [r["step"] for r in _records(out / "eval.jsonl")] == [0, 2]
    with pytest.raises(ValueError, match="verifier"):
        train(_config(tmp_path / "e", tiny_model, data=str(data), verifier="telepathy"))


def test_max_new_tokens_caps_every_completion(tiny_model, tmp_path):
    config = _config(tmp_path / "m", tiny_model, max_new_tokens=1)
    out = train(config)
    rows = config.prompts_per_step * config.group_size
    records = _records(out / "metrics.jsonl")
    assert records and all(0 < r["completion_tokens"] <= rows for r in records)


def test_checkpoint_write_is_atomic(tmp_path, monkeypatch):
    path = tmp_path / "c.pt"
    save_checkpoint(path, {"step": 1})

    def torn(obj, f):
        f.write(b"half a checkpoint")
        raise KeyboardInterrupt  # killed mid-write

    monkeypatch.setattr(ckpt_module.torch, "save", torn)
    with pytest.raises(KeyboardInterrupt):
        save_checkpoint(path, {"step": 2})
    monkeypatch.undo()
    assert load_checkpoint(path)["step"] == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.pt"]
    path.write_bytes(b"garbage")
    with pytest.raises(ValueError, match="not a readable fade checkpoint"):
        load_checkpoint(path)


def test_jsonl_log_truncation(tmp_path):
    log = JsonlLog(tmp_path / "m.jsonl")
    for s in (1, 2, 3):
        log.append({"step": s, "x": float("nan") if s == 2 else s})
    log.truncate_after(2)
    assert log.records() == [{"step": 1, "x": 1}, {"step": 2, "x": None}]


def test_a_compressed_log_reads_at_every_moment_and_across_sessions(tmp_path):
    path = tmp_path / "m.jsonl.gz"
    log = JsonlLog(path)
    log.append({"step": 1, "x": 1.5})
    log.append({"step": 2, "x": float("inf")})
    assert read_log(path) == [{"step": 1, "x": 1.5}, {"step": 2, "x": None}]  # mid-session: flushed, no trailer
    log.close()
    assert gzip.decompress(path.read_bytes()).decode().count("\n") == 2  # a complete gzip file once closed
    JsonlLog(path).append({"step": 3})  # a second session: a second member
    killed = JsonlLog(path)
    killed.append({"step": 4})  # ... and the process dies without closing it
    JsonlLog(path).append({"step": 5})  # the next session first ends the unfinished member
    assert [r["step"] for r in read_log(path)] == [1, 2, 3, 4, 5]
    log.truncate_after(3)
    assert [r["step"] for r in JsonlLog(path).records()] == [1, 2, 3]
    assert gzip.decompress(path.read_bytes()).decode().count("\n") == 3  # rewritten as one finished member
    again = JsonlLog(tmp_path / "n.jsonl.gz")
    for record in read_log(path):
        again.append(record)
    again.close()
    assert (tmp_path / "n.jsonl.gz").read_bytes() == JsonlLog(tmp_path / "n.jsonl.gz").path.read_bytes()
    data = bytearray(path.read_bytes())
    data[-6] ^= 1  # the trailer's checksum no longer matches the records
    path.write_bytes(bytes(data))
    with pytest.raises(ValueError, match=r"m\.jsonl\.gz:\d+: the gzip data is cut off or damaged \(.*data check"):
        read_log(path)


def test_a_compressed_log_takes_over_the_plain_file_of_a_run_from_before(tmp_path):
    (tmp_path / "m.jsonl").write_text("".join(json.dumps({"step": s}) + "\n" for s in (1, 2, 3)))
    log = JsonlLog(tmp_path / "m.jsonl.gz")
    assert [r["step"] for r in log.records()] == [1, 2, 3]
    log.truncate_after(2)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.jsonl.gz"]
    assert [r["step"] for r in read_log(tmp_path / "m.jsonl.gz")] == [1, 2]
    log.remove()
    assert not list(tmp_path.iterdir())


def test_compress_logs_converts_a_tree_of_runs_and_reads_back_the_same(tmp_path):
    runs = [tmp_path / "runs" / name / "seed0" for name in ("grpo", "fade")]
    for i, run in enumerate(runs):
        run.mkdir(parents=True)
        (run / "metrics.jsonl").write_text(
            "".join(json.dumps({"step": s, "entropy": s / 7 + i}) + "\n" for s in range(1, 30))
        )
        (run / "eval.jsonl").write_text(json.dumps({"step": 0, "pass@1": 0.25}) + "\n")
        (run / "resumes.jsonl").write_text("{}\n")
    before = [load_run(run) for run in runs]
    written = compress_logs(tmp_path)
    assert sorted(written) == sorted(run / name for run in runs for name in ("metrics.jsonl.gz", "eval.jsonl.gz"))
    assert [load_run(run) for run in runs] == before
    assert all(sorted(p.name for p in run.iterdir()) == ["eval.jsonl.gz", "metrics.jsonl.gz", "resumes.jsonl"]
               for run in runs)
    assert compress_logs(tmp_path) == []  # nothing left to convert
    (runs[0] / "eval.jsonl").write_text("{}\n")
    with pytest.raises(ValueError, match="eval.jsonl.gz already exists beside"):
        compress_log(runs[0] / "eval.jsonl")
    with pytest.raises(ValueError, match="is not a folder"):
        compress_logs(tmp_path / "nowhere")


def test_cli_train_writes_metrics_plots_and_resumes(tiny_model, tmp_path, capsys):
    from fade.cli import main

    out = tmp_path / "cli"
    argv = ["train", "--model", tiny_model, "--steps", "2", "--prompts-per-step", "4", "--group-size", "4",
            "--eval-every", "2", "--eval-prompts", "4", "--out", str(out), "--no-progress"]
    assert main(argv) == 0
    for name in ("metrics.jsonl.gz", "eval.jsonl.gz", "training.png", "passk.png", "plane.png", "checkpoint.pt"):
        assert (out / name).is_file(), name
    assert list((out / "tb").iterdir()), "TensorBoard events"
    assert "pass@1" in capsys.readouterr().out
    assert main(argv) == 2  # an existing run is not overwritten
    assert "--resume" in capsys.readouterr().err
    assert main([*argv[:-1], "--resume", "--no-progress"]) == 0
    assert main(["train", "--model", tiny_model, "--estimator", "nope", "--out", str(tmp_path / "n")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("fade: error:") and "nope" in err and len(err.strip().splitlines()) == 1


def test_cli_train_takes_an_estimator_spec_and_merges_estimator_args(tiny_model, tmp_path, capsys):
    from fade.cli import main

    base = ["train", "--model", tiny_model, "--steps", "1", "--prompts-per-step", "2", "--group-size", "4",
            "--eval-every", "0", "--no-progress"]
    out = tmp_path / "power"
    assert main([*base, "--estimator", "power:alpha=3", "--estimator-args", "alpha=3", "--out", str(out)]) == 0
    config = json.loads((out / "run.json").read_text())
    assert config["estimator"] == "power" and config["estimator_args"] == {"alpha": 3}
    out = tmp_path / "merged"
    assert main([*base, "--estimator", "grpo:eps=1e-4", "--estimator-args", "std=population", "--out", str(out)]) == 0
    assert json.loads((out / "run.json").read_text())["estimator_args"] == {"eps": 1e-4, "std": "population"}
    capsys.readouterr()
    out = tmp_path / "clash"
    assert main([*base, "--estimator", "power:alpha=3", "--estimator-args", "alpha=2", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "alpha=3 and alpha=2" in err and not out.exists()


def test_learning_sanity_reward_rises_on_easy_problems(tiny_model, tmp_path):
    """From a random policy, one-digit sums: reward climbs from chance (~1/200) within 60 steps."""
    data = tmp_path / "easy.jsonl"
    data.write_text("".join(json.dumps({"prompt": f"{a}+{b}=", "answer": str(a + b), "split": "train"}) + "\n"
                            for a in range(10) for b in range(10) if a + b < 10))
    out = train(_config(tmp_path / "easy", tiny_model, data=str(data), verifier="numeric", estimator="grpo",
                        steps=60, lr=5e-3, prompts_per_step=16, group_size=8, checkpoint_every=60, seed=0))
    reward = [r["reward_mean"] for r in _records(out / "metrics.jsonl")]
    first, last = sum(reward[:10]) / 10, sum(reward[-10:]) / 10
    assert last > 0.04 and last > 3 * first, (first, last)  # measured: first 0.002-0.012, last 0.08-0.16


# -- the first-order entropy formula's terms, and plain SGD ------------------------------------------


def _tokens(adv, logp, mask) -> tuple[np.ndarray, np.ndarray]:
    """Each completion token's (A_t, lp_t), A broadcast from its rollout: the definition, token by token."""
    a = np.broadcast_to(np.asarray(adv, dtype=np.float64)[:, None], np.shape(logp))
    m = np.asarray(mask, dtype=bool)
    return a[m], np.asarray(logp, dtype=np.float64)[m]


def test_token_covariance_by_hand():
    # tokens (A, lp): (1, -1), (1, -2), (-1, -3); mean A = 1/3, mean lp = -2, mean A lp = 0
    adv = torch.tensor([1.0, -1.0])
    logp = torch.tensor([[-1.0, -2.0, -math.inf], [-3.0, math.nan, 0.0]])  # padding never counts
    mask = torch.tensor([[True, True, False], [True, False, False]])
    assert token_covariance(adv, logp, mask) == pytest.approx(2 / 3, abs=1e-15)


def test_token_covariance_is_zero_for_a_constant_advantage():
    gen = torch.Generator().manual_seed(0)
    logp = -torch.rand(6, 9, generator=gen) * 5
    mask = torch.arange(9) < torch.tensor([1, 9, 4, 3, 7, 2])[:, None]
    for value in (0.0, 0.1, -3.7):
        assert token_covariance(torch.full((6,), value), logp, mask) == pytest.approx(0.0, abs=1e-15)


def test_token_covariance_equals_numpy_sample_covariance_and_ignores_rollout_order():
    rng = np.random.default_rng(1)
    for _ in range(20):
        rows, width = rng.integers(1, 12), rng.integers(1, 10)
        lengths = rng.integers(1, width + 1, size=rows)  # right-padded, at least one token each
        mask = np.arange(width) < lengths[:, None]
        adv = rng.standard_normal(rows).astype(np.float32)
        logp = (-rng.exponential(2.0, size=(rows, width))).astype(np.float32)
        a, lp = _tokens(adv, logp, mask)
        expected = np.cov(a, lp, bias=True)[0, 1] if a.size > 1 else 0.0
        got = token_covariance(torch.from_numpy(adv), torch.from_numpy(logp), torch.from_numpy(mask))
        assert got == pytest.approx(expected, rel=1e-12, abs=1e-14)
        order = torch.from_numpy(rng.permutation(rows))
        permuted = token_covariance(
            torch.from_numpy(adv)[order], torch.from_numpy(logp)[order], torch.from_numpy(mask)[order]
        )
        assert permuted == pytest.approx(got, rel=1e-12, abs=1e-14)


def test_token_covariance_is_float64_and_checks_shapes():
    # float32 inputs with a large common offset: a float32 sum would lose the covariance's digits.
    adv = torch.tensor([1000.0 + k / 8 for k in range(64)], dtype=torch.float32)
    logp = torch.tensor([[-k / 16, -(k % 5) / 4] for k in range(64)], dtype=torch.float32)
    mask = torch.ones(64, 2, dtype=torch.bool)
    a, lp = _tokens(adv.numpy(), logp.numpy(), mask.numpy())
    assert token_covariance(adv, logp, mask) == pytest.approx(np.cov(a, lp, bias=True)[0, 1], rel=1e-12)
    assert math.isnan(token_covariance(adv, logp, torch.zeros_like(mask)))
    with pytest.raises(ValueError, match=r"adv \(B,\), logp and mask \(B, T\), got \(3,\), \(64, 2\)"):
        token_covariance(adv[:3], logp, mask)


def _parity(answer: str, completion: str) -> Verdict:
    """Reward 1 for completions whose characters' codes sum to an even number: mixed rewards from a random policy."""
    return Verdict(float(sum(map(ord, completion)) % 2 == 0), "parity", None)


@pytest.fixture
def parity_data(tmp_path, monkeypatch) -> dict:
    """--data and --verifier settings under which a random policy gets mixed rewards."""
    monkeypatch.setitem(VERIFIERS, "parity", _parity)
    data = tmp_path / "sums.jsonl"
    data.write_text(
        "".join(json.dumps({"prompt": f"{a}+{b}=", "answer": str(a + b)}) + "\n" for a in range(10) for b in range(10))
    )
    return {"data": str(data), "verifier": "parity", "max_new_tokens": 4}


def test_sgd_run_logs_the_entropy_formula(tiny_model, tmp_path, parity_data):
    out = train(_config(tmp_path / "sgd", tiny_model, optimizer="sgd", estimator="grpo", lr=0.05, **parity_data))
    rows = _records(out / "metrics.jsonl")
    assert [r["step"] for r in rows] == [1, 2]
    for r in rows:
        for key in ("cov_adv_logp", "mass_entropy_term", "entropy_drive"):
            assert isinstance(r[key], float) and math.isfinite(r[key]), (key, r[key])
        assert r["mass_entropy_term"] == pytest.approx(
            (r["positive_mass"] - r["negative_mass"]) * r["entropy"], rel=1e-12
        )
        assert r["entropy_drive"] == pytest.approx(-(r["mass_entropy_term"] + r["cov_adv_logp"]), rel=1e-12)
    assert any(r["cov_adv_logp"] != 0 for r in rows)  # mixed rewards: the batch carries signal
    assert json.loads((out / "run.json").read_text())["optimizer"] == "sgd"
    optimizer = load_checkpoint(out / "checkpoint.pt")["optimizer"]
    (group,) = optimizer["param_groups"]
    assert "betas" not in group and (group["lr"], group["momentum"], group["dampening"], group["nesterov"]) == (
        0.05,
        0,
        0,
        False,
    )
    assert group["weight_decay"] == 0.0
    # plain SGD keeps no moments (no exp_avg, no momentum buffer)
    assert all(not any(v is not None for v in state.values()) for state in optimizer["state"].values())


def test_sgd_step_is_theta_minus_lr_times_the_clipped_gradient(tiny_model, tmp_path, monkeypatch, parity_data):
    """The update SGD applies is exactly -lr * grad, the plain gradient step."""
    seen = []
    step = torch.optim.SGD.step

    def recording_step(self, *args, **kwargs):
        params = [p for g in self.param_groups for p in g["params"] if p.grad is not None]
        before = [p.detach().clone() for p in params]
        grads = [p.grad.detach().clone() for p in params]
        result = step(self, *args, **kwargs)
        seen.extend((p.detach() - b, g) for p, b, g in zip(params, before, grads))
        return result

    monkeypatch.setattr(torch.optim.SGD, "step", recording_step)
    monkeypatch.setattr(torch.optim.AdamW, "step", lambda *a, **k: pytest.fail("AdamW stepped in an sgd run"))
    train(_config(tmp_path / "s", tiny_model, optimizer="sgd", estimator="grpo", steps=1, lr=0.5, **parity_data))
    assert seen
    for change, grad in seen:
        torch.testing.assert_close(change, -0.5 * grad, rtol=1e-5, atol=1e-7)


def test_the_cli_offers_exactly_the_trainers_optimizers(tmp_path, capsys):
    from fade.cli import build_parser, main

    parser = build_parser()
    for name in OPTIMIZERS:
        assert parser.parse_args(["train", "--out", "x", "--optimizer", name]).optimizer == name
    assert main(["train", "--out", str(tmp_path / "x"), "--optimizer", "adam"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("fade: error:") and "--optimizer" in err and "'adam'" in err, err
    assert all(repr(name) in err for name in OPTIMIZERS) and not (tmp_path / "x").exists()
