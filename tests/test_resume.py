"""Resuming a testbed run is safe: other settings are refused or recorded, a damaged or diverged
checkpoint is refused, a full disk is one line of error, and a kill's temporary files are cleared."""

from __future__ import annotations

import dataclasses
import errno
import json
import os
import re
import shutil
import tempfile

import pytest
import torch

from fade import atomic
from fade.cli import main
from fade.testbed import checkpoint
from fade.testbed.checkpoint import load_checkpoint, save_checkpoint
from fade.testbed.datasets import VERIFIERS
from fade.testbed.runlog import load_run
from fade.testbed.tasks import Verdict
from fade.testbed.trainer import RESUME_MAY_CHANGE, TrainConfig, train


def _config(out, model, **kw) -> TrainConfig:
    base = dict(out=str(out), model=model, steps=2, prompts_per_step=2, group_size=2, eval_every=0, eval_prompts=0,
                checkpoint_every=1, progress=False, estimator="grpo")
    base.update(kw)
    return TrainConfig(**base)


@pytest.fixture(scope="module")
def two_step_run(tiny_model, tmp_path_factory):
    """A finished 2-step run, copied fresh for each test that resumes it."""
    out = tmp_path_factory.mktemp("run") / "r"
    train(_config(out, tiny_model))
    return out


@pytest.fixture
def run(two_step_run, tmp_path):
    return shutil.copytree(two_step_run, tmp_path / "r")


def _cli(model, out, *extra) -> list[str]:
    return [
        "train",
        "--model",
        model,
        "--out",
        str(out),
        "--steps",
        "2",
        "--prompts-per-step",
        "2",
        "--group-size",
        "2",
        "--estimator",
        "grpo",
        "--eval-every",
        "0",
        "--eval-prompts",
        "0",
        "--checkpoint-every",
        "1",
        "--no-progress",
        *extra,
    ]


def _one_error_line(capsys) -> str:
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("fade: error: ") and "Traceback" not in err, err
    return lines[0]


# -- a changed configuration -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "change, shown",
    [
        ({"lr": 3e-4}, "lr: 0.0001 -> 0.0003"),
        ({"seed": 1}, "seed: 0 -> 1"),
        ({"group_size": 4}, "group_size: 2 -> 4"),
        ({"prompts_per_step": 1}, "prompts_per_step: 2 -> 1"),
        ({"estimator": "rloo"}, "estimator: grpo -> rloo"),
        ({"estimator_args": {"eps": 0.01}}, 'estimator_args: {} -> {"eps": 0.01}'),
        ({"task": "countdown"}, "task: arithmetic -> countdown"),
        ({"adam_beta2": 0.999}, "adam_beta2: 0.99 -> 0.999"),
        ({"max_new_tokens": 3}, "max_new_tokens: null -> 3"),
        ({"eval_prompts": 4}, "eval_prompts: 0 -> 4"),
        ({"optimizer": "sgd"}, "optimizer: adamw -> sgd"),
        ({"train_pool": 4}, "train_pool: null -> 4"),
        ({"difficulties": [2, 3]}, "difficulties: null -> [2, 3]"),
        ({"old_logprobs": "recompute"}, "old_logprobs: sampler -> recompute"),
    ],
)
def test_resume_refuses_a_setting_that_changes_the_run(change, shown, run, tiny_model):
    before = (run / "run.json").read_text()
    with pytest.raises(ValueError, match="other settings") as info:
        train(_config(run, tiny_model, steps=3, **change), resume=True)
    assert shown in str(info.value)
    assert (run / "run.json").read_text() == before  # nothing was overwritten
    assert load_checkpoint(run / "checkpoint.pt")["step"] == 2


def test_resume_names_every_changed_setting_on_one_line(run, tiny_model, capsys):
    assert main(_cli(tiny_model, run, "--resume", "--lr", "0.0003", "--seed", "5", "--group-size", "4")) == 2
    line = _one_error_line(capsys)
    for shown in ("lr: 0.0001 -> 0.0003", "seed: 0 -> 5", "group_size: 2 -> 4"):
        assert shown in line, line


def _metrics(out) -> list[dict]:
    rows = load_run(out).metrics
    return [{k: v for k, v in r.items() if not k.endswith("_seconds")} for r in rows]


def test_resume_may_extend_steps_and_records_it(run, tiny_model, tmp_path):
    train(_config(run, tiny_model, steps=3, checkpoint_every=3, progress=True), resume=True)
    assert json.loads((run / "run.json").read_text())["steps"] == 3
    (record,) = [json.loads(line) for line in (run / "resumes.jsonl").read_text().splitlines()]
    assert record["changed"].pop("out")[1] == str(run)  # the fixture's run was copied here: recorded too
    assert record == {"step": 2, "changed": {"steps": [2, 3], "checkpoint_every": [1, 3]}}
    assert load_checkpoint(run / "checkpoint.pt")["config"]["steps"] == 3
    # extending is exact: the same steps as a run planned for 3 from the start
    assert _metrics(run) == _metrics(train(_config(tmp_path / "three", tiny_model, steps=3)))


def test_resume_accepts_settings_that_leave_the_run_unchanged(run, tiny_model):
    train(_config(run, tiny_model, eval_every=5, device="cpu", checkpoint_every=2, progress=True), resume=True)
    (record,) = [json.loads(line) for line in (run / "resumes.jsonl").read_text().splitlines()]
    record["changed"].pop("out")
    assert record == {
        "step": 2,
        "changed": {"device": ["auto", "cpu"], "eval_every": [0, 5], "checkpoint_every": [1, 2]},
    }
    assert set(RESUME_MAY_CHANGE) == {"out", "progress", "checkpoint_every", "eval_every", "device", "steps"}


def test_a_checkpoint_from_before_the_optimizer_setting_reads_as_adamw(run, tiny_model):
    state = load_checkpoint(run / "checkpoint.pt")
    del state["config"]["optimizer"]
    save_checkpoint(run / "checkpoint.pt", state)
    with pytest.raises(ValueError, match="optimizer: adamw -> sgd"):
        train(_config(run, tiny_model, steps=3, optimizer="sgd"), resume=True)
    train(_config(run, tiny_model, steps=3), resume=True)
    (record,) = [json.loads(line) for line in (run / "resumes.jsonl").read_text().splitlines()]
    record["changed"].pop("out")
    assert record == {"step": 2, "changed": {"steps": [2, 3]}}  # the default is no change


def test_a_checkpoint_from_before_the_pool_and_the_buckets_resumes_with_neither(run, tiny_model):
    state = load_checkpoint(run / "checkpoint.pt")
    for key in ("train_pool", "difficulties"):
        del state["config"][key]
    save_checkpoint(run / "checkpoint.pt", state)
    with pytest.raises(ValueError, match=r"difficulties: null -> \[1\], train_pool: null -> 4"):
        train(_config(run, tiny_model, steps=3, train_pool=4, difficulties=[1]), resume=True)
    train(_config(run, tiny_model, steps=3), resume=True)
    (record,) = [json.loads(line) for line in (run / "resumes.jsonl").read_text().splitlines()]
    record["changed"].pop("out")
    assert record == {"step": 2, "changed": {"steps": [2, 3]}}  # the defaults are no change


def test_a_run_with_a_pool_and_buckets_resumes_exactly_and_refuses_another_pool(tiny_model, tmp_path):
    kw = dict(estimator="fade", estimator_args={"p_start": "debiased"}, train_pool=4, difficulties=[2, 3])
    train(_config(tmp_path / "whole", tiny_model, steps=3, **kw))
    train(_config(tmp_path / "split", tiny_model, steps=2, **kw))
    for change, shown in (({"train_pool": 6}, "train_pool: 4 -> 6"),
                          ({"difficulties": [2]}, "difficulties: [2, 3] -> [2]"),
                          ({"estimator_args": {}}, 'estimator_args: {"p_start": "debiased"} -> {}')):
        with pytest.raises(ValueError, match=re.escape(shown)):
            train(_config(tmp_path / "split", tiny_model, steps=3, **{**kw, **change}), resume=True)
    train(_config(tmp_path / "split", tiny_model, steps=3, **kw), resume=True)
    assert _metrics(tmp_path / "whole") == _metrics(tmp_path / "split")
    whole, split = (load_checkpoint(tmp_path / name / "checkpoint.pt") for name in ("whole", "split"))
    assert whole["estimator"] == split["estimator"] and whole["estimator"]["p_weight"] > 0


def test_a_checkpoint_from_before_old_logprobs_reads_as_recompute(run, tiny_model):
    # Runs before the setting recomputed the old log-probs: resuming one with the sampler's would splice.
    state = load_checkpoint(run / "checkpoint.pt")
    del state["config"]["old_logprobs"]
    save_checkpoint(run / "checkpoint.pt", state)
    with pytest.raises(ValueError, match="old_logprobs: recompute -> sampler"):
        train(_config(run, tiny_model, steps=3), resume=True)
    train(_config(run, tiny_model, steps=3, old_logprobs="recompute"), resume=True)
    (record,) = [json.loads(line) for line in (run / "resumes.jsonl").read_text().splitlines()]
    record["changed"].pop("out")
    assert record == {"step": 2, "changed": {"steps": [2, 3]}}


@pytest.fixture
def parity_data(tmp_path, monkeypatch) -> dict:
    """--data settings under which a random policy gets mixed rewards (by the parity of the completion's
    characters), so it moves every step."""
    monkeypatch.setitem(
        VERIFIERS, "parity", lambda answer, text: Verdict(float(sum(map(ord, text)) % 2 == 0), "parity", None)
    )
    data = tmp_path / "sums.jsonl"
    data.write_text(
        "".join(json.dumps({"prompt": f"{a}+{b}=", "answer": str(a + b)}) + "\n" for a in range(10) for b in range(10))
    )
    return dict(data=str(data), verifier="parity", max_new_tokens=4, prompts_per_step=4, group_size=4)


#: Off policy: two minibatches, Clip-Cov, TRL's adaptive entropy coefficient (its target above the
#: entropy, so the bonus is on and its state matters) and the zero-variance filter's extra draws.
OFF_POLICY = dict(minibatches=2, lr=0.01, policy_loss="clip_cov", filter_zero_variance=True, group_size=2,
                  entropy="adaptive_entropy:target_ratio=1.5,coef=0.01,delta=0.01")


@pytest.mark.parametrize("settings", [dict(optimizer="sgd", lr=0.05), OFF_POLICY], ids=["sgd", "off-policy"])
def test_a_run_resumes_exactly(settings, tiny_model, tmp_path, parity_data):
    kw = {**parity_data, **settings}
    train(_config(tmp_path / "whole", tiny_model, steps=3, **kw))
    train(_config(tmp_path / "split", tiny_model, steps=2, **kw))
    train(_config(tmp_path / "split", tiny_model, steps=3, **kw), resume=True)
    whole_metrics = _metrics(tmp_path / "whole")
    assert whole_metrics == _metrics(tmp_path / "split")
    assert all(r["grad_norm"] > 0 and r["cov_adv_logp"] != 0 for r in whole_metrics)  # the policy moved every step
    whole, split = (load_checkpoint(tmp_path / name / "checkpoint.pt") for name in ("whole", "split"))
    assert whole["optimizer"]["param_groups"] == split["optimizer"]["param_groups"]
    for key, value in whole["model"].items():
        assert torch.equal(value, split["model"][key]), key
    assert whole["entropy"] == split["entropy"] and whole["estimator"] == split["estimator"]
    if "entropy" in settings:
        assert whole["entropy"]["coef"] > 0 and all(r["entropy_coef"] > 0 for r in whole_metrics[1:])
        assert any(r["sample_draws"] > 1 for r in whole_metrics)


def test_a_checkpoint_from_before_the_entropy_term_loads_it_as_the_initial_state(tiny_model, tmp_path, parity_data):
    from fade.testbed import session

    config = _config(tmp_path / "r", tiny_model, steps=2, **{**parity_data, **OFF_POLICY})
    train(config)
    state = load_checkpoint(tmp_path / "r" / "checkpoint.pt")
    assert state["entropy"]["target"] is not None
    del state["entropy"]
    save_checkpoint(tmp_path / "r" / "checkpoint.pt", state)
    setup, start, _ = session.prepare(dataclasses.replace(config, steps=3), resume=True)
    assert start == 2 and setup.entropy.state_dict() == config.build_entropy_term().state_dict()
    train(dataclasses.replace(config, steps=3), resume=True)
    assert [r["step"] for r in _metrics(tmp_path / "r")] == [1, 2, 3]


def test_a_run_recorded_with_the_old_name_of_its_loss_aggregation_resumes(run, tiny_model):
    state = load_checkpoint(run / "checkpoint.pt")
    state["config"]["loss_agg"] = "seq-mean"
    save_checkpoint(run / "checkpoint.pt", state)
    with pytest.raises(ValueError, match="loss_agg: seq-mean-token-mean -> token-mean"):
        train(_config(run, tiny_model, steps=3), resume=True)
    for name in ("seq-mean", "seq-mean-token-mean"):  # the old name and the new are one setting
        train(_config(run, tiny_model, steps=3 if name == "seq-mean" else 4, loss_agg=name), resume=True)
    assert [r["step"] for r in _metrics(run)] == [1, 2, 3, 4]


def test_resume_refuses_steps_below_the_checkpoint(run, tiny_model):
    with pytest.raises(ValueError, match="below the checkpoint's step 2"):
        train(_config(run, tiny_model, steps=1), resume=True)


# -- damaged or diverged checkpoints ----------------------------------------------------------------


def test_checkpoint_carries_a_checksum_that_load_verifies(tmp_path):
    path = tmp_path / "c.pt"
    save_checkpoint(path, {"step": 7, "w": torch.arange(100.0)})
    assert load_checkpoint(path)["step"] == 7
    data = path.read_bytes()
    flipped = bytearray(data)
    flipped[-200] ^= 0x01
    path.write_bytes(bytes(flipped))
    with pytest.raises(ValueError, match=r"c\.pt is a damaged fade checkpoint: sha256"):
        load_checkpoint(path)
    path.write_bytes(data[: len(data) // 2])  # truncated
    with pytest.raises(ValueError, match=r"c\.pt is a damaged fade checkpoint"):
        load_checkpoint(path)


def test_resume_from_a_corrupted_checkpoint_is_one_line_naming_the_file(run, tiny_model, capsys):
    path = run / "checkpoint.pt"
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    assert main(_cli(tiny_model, run, "--resume", "--steps", "3")) == 2
    line = _one_error_line(capsys)
    assert str(path) in line and "sha256" in line


def test_resume_refuses_a_model_with_non_finite_parameters(run, tiny_model):
    state = load_checkpoint(run / "checkpoint.pt")
    name = next(k for k, v in state["model"].items() if v.is_floating_point())
    state["model"][name][0] = float("nan")
    save_checkpoint(run / "checkpoint.pt", state)
    with pytest.raises(ValueError, match="model saved at step 2 holds NaN or inf") as info:
        train(_config(run, tiny_model, steps=3), resume=True)
    assert name in str(info.value) and str(run / "checkpoint.pt") in str(info.value)
    assert not (run / "resumes.jsonl").exists()


# -- a full disk ----------------------------------------------------------------------------------


def test_a_full_disk_is_one_line_and_keeps_the_last_checkpoint(run, tiny_model, capsys, monkeypatch):
    def full_disk(path, write):
        if path.name != "checkpoint.pt":
            return atomic.atomic_write(path, write)

        def partial(f):
            f.write(b"the first blocks fit")
            raise OSError(errno.ENOSPC, "No space left on device")

        atomic.atomic_write(path, partial)  # the real writer: its temporary file fills the disk

    monkeypatch.setattr(checkpoint, "_atomic_write", full_disk)
    before = (run / "checkpoint.pt").read_bytes()
    assert main(_cli(tiny_model, run, "--resume", "--steps", "3")) == 2
    line = _one_error_line(capsys)
    assert "no space left" in line and "checkpoint.pt" in line and "--resume" in line, line
    assert (run / "checkpoint.pt").read_bytes() == before
    assert load_checkpoint(run / "checkpoint.pt")["step"] == 2
    assert not [p.name for p in run.iterdir() if p.name.endswith(".tmp")]


def test_a_full_disk_under_a_library_is_one_line_too(run, tiny_model, capsys, monkeypatch):
    from fade.testbed import trainer

    def save_policy(*args, **kwargs):  # safetensors reports the OS error in its own exception type
        raise RuntimeError(
            'Error while serializing: IoError(Os { code: 28, kind: StorageFull, message: "No space left on device" })'
        )

    monkeypatch.setattr(trainer, "save_policy", save_policy)
    assert main(_cli(tiny_model, run, "--resume", "--steps", "3")) == 2
    line = _one_error_line(capsys)
    assert "no space left" in line and "is intact" in line, line
    assert load_checkpoint(run / "checkpoint.pt")["step"] == 3


def test_atomic_write_names_the_file_on_a_full_disk(tmp_path):
    path = tmp_path / "x.json"
    atomic.write_json_atomic(path, {"a": 1})

    def full(f):
        raise OSError(errno.ENOSPC, "No space left on device")

    with pytest.raises(OSError) as info:
        atomic.atomic_write(path, full)
    assert info.value.filename == str(path)
    assert json.loads(path.read_text()) == {"a": 1}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.json"]


def test_atomic_write_gives_the_permissions_a_plain_write_would(tmp_path):
    """0666 less the umask, as open() gives, not the temporary file's owner-only 0600."""
    import os
    import stat

    old = os.umask(0o027)
    try:
        atomic.write_json_atomic(tmp_path / "a.json", {"a": 1})
        with open(tmp_path / "plain.json", "w") as f:
            f.write("{}")
    finally:
        os.umask(old)
    mode = stat.S_IMODE((tmp_path / "a.json").stat().st_mode)
    assert mode == stat.S_IMODE((tmp_path / "plain.json").stat().st_mode) == 0o640


# -- orphaned temporary files ---------------------------------------------------------------------


def test_orphaned_temp_files_are_removed_at_the_next_start(run, tiny_model):
    orphans = [".checkpoint.pt.k3x_9qaz.tmp", ".metrics.jsonl.abcd1234.tmp", ".run.json.zz99yy88.tmp"]
    kept = [".notes.txt.abcd1234.tmp", "checkpoint.pt.tmp", "mine.tmp"]
    for name in orphans + kept:
        (run / name).write_bytes(b"torn")
    (run / ".policy.tmp-q1w2e3").mkdir()  # save_policy's staging folder
    (run / ".policy.tmp-q1w2e3" / "model.safetensors").write_bytes(b"torn")
    (run / "sub").mkdir()
    (run / "sub" / orphans[0]).write_bytes(b"not the run's own folder")
    train(_config(run, tiny_model, steps=3), resume=True)
    names = {p.name for p in run.iterdir()}
    assert not names & set(orphans) and ".policy.tmp-q1w2e3" not in names
    assert set(kept) <= names
    assert (run / "sub" / orphans[0]).exists()


def test_remove_orphaned_temp_files_matches_only_the_named_targets(tmp_path):
    made = []
    for target in ("a.pt", "b.json"):  # named as atomic_write names its temporary files
        fd, name = tempfile.mkstemp(prefix=f".{target}.", suffix=".tmp", dir=tmp_path)
        os.close(fd)
        made.append(os.path.basename(name))
    removed = atomic.remove_orphaned_temp_files(tmp_path, ["a.pt"])
    assert [p.name for p in removed] == [made[0]]
    assert [p.name for p in tmp_path.iterdir()] == [made[1]]


def test_the_resume_help_is_the_rule_resume_changes_enforces():
    """fade train --help names every flag exactly once, refused or allowed as RESUME_MAY_CHANGE says,
    so a setting added to TrainConfig is in the help's rule at once, on the side the code enforces."""
    import re

    from fade.options import flags
    from fade.testbed.config import resume_rule

    text = resume_rule()
    refused, allowed = text.split("differs from the checkpoint's: ", 1)[1].split(" may change", 1)[0].rsplit(". ", 1)
    named = flags(TrainConfig)
    assert refused.split(", ") == [f for k, f in named.items() if k not in RESUME_MAY_CHANGE]
    assert allowed.split(", ") == [named[k] for k in RESUME_MAY_CHANGE if k != "out"]
    for key, flag in named.items():  # --out is where the run lives, said once at the start
        found = re.findall(re.escape(flag) + r"(?![\w-])", refused + ". " + allowed)
        assert len(found) == (0 if key == "out" else 1), flag
