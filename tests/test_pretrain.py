"""Pretraining of the testbed's base policy: a killed run continues from its checkpoint to the
weights an uninterrupted run writes, and what cannot be continued is refused by name."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from fade.cli import main
from fade.testbed import pretrain as pretrain_module
from fade.testbed.pretrain import CHECKPOINT, LOG, PretrainConfig, pretrain

# Small enough to run in seconds; the target is out of reach so every run trains all its steps.
SMALL = dict(
    task="arithmetic", max_steps=6, batch_size=8, eval_every=2, target_pass1=0.99, hidden_size=32, num_layers=1,
    num_heads=2, intermediate_size=64, max_positions=32, val_prompts=4, val_samples=2, test_prompts=4, test_samples=2,
    device="cpu", progress=False,
)


def _weights(directory: Path) -> dict[str, torch.Tensor]:
    return load_file(directory / "model.safetensors")


def _log(directory: Path) -> list[dict]:
    return [json.loads(line) for line in (directory / LOG).read_text().splitlines()]


def _kill_at_step(monkeypatch, step: int) -> None:
    """Make the pretraining loop die (as Ctrl-C would) when it builds the batch of ``step``."""
    calls = {"n": 0}
    real = pretrain_module._batch

    def dying(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == step:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(pretrain_module, "_batch", dying)


def test_a_killed_pretraining_resumes_to_the_uninterrupted_weights(tmp_path, monkeypatch):
    whole = tmp_path / "whole"
    summary = pretrain(PretrainConfig(out=str(whole), **SMALL))
    assert summary["steps"] == 6
    assert sorted(p.name for p in whole.iterdir()) == sorted(
        ["base_eval.json", "config.json", "generation_config.json", LOG, "model.safetensors", "tokenizer.json",
         "tokenizer_config.json"]
    )

    cut = tmp_path / "cut"
    with monkeypatch.context() as m:
        _kill_at_step(m, 5)
        with pytest.raises(KeyboardInterrupt):
            pretrain(PretrainConfig(out=str(cut), **SMALL))
    # The last validation check (step 4) left its checkpoint; nothing hidden sits beside the folder.
    assert (cut / CHECKPOINT).is_file()
    assert [r["step"] for r in _log(cut)] == [1, 2, 3, 4]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cut", "whole"]

    with pytest.raises(ValueError, match="--resume"):
        pretrain(PretrainConfig(out=str(cut), **SMALL))
    pretrain(PretrainConfig(out=str(cut), **SMALL), resume=True)
    assert not (cut / CHECKPOINT).exists()
    assert _log(cut) == _log(whole)
    a, b = _weights(whole), _weights(cut)
    assert a.keys() == b.keys()
    for name in a:
        assert torch.equal(a[name], b[name]), name
    assert json.loads((cut / "base_eval.json").read_text())["test"] == summary["test"]


def test_resume_is_refused_without_a_checkpoint_or_with_other_settings(tmp_path, monkeypatch):
    out = tmp_path / "p"
    with pytest.raises(ValueError, match="no pretrain-checkpoint.pt"):
        pretrain(PretrainConfig(out=str(out), **SMALL), resume=True)
    with monkeypatch.context() as m:
        _kill_at_step(m, 4)
        with pytest.raises(KeyboardInterrupt):
            pretrain(PretrainConfig(out=str(out), **SMALL))
    with pytest.raises(ValueError, match=r"batch_size: 8 -> 16"):
        pretrain(PretrainConfig(out=str(out), **{**SMALL, "batch_size": 16}), resume=True)


def test_cli_pretrain_interrupted_and_refused_resume(tmp_path, capsys, monkeypatch):
    out = tmp_path / "p"
    code = main(["pretrain", "--task", "arithmetic", "--out", str(out), "--resume", "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and err.startswith("fade: error: --resume: no pretrain-checkpoint.pt")

    def interrupted(config, resume=False):
        raise KeyboardInterrupt

    monkeypatch.setattr(pretrain_module, "pretrain", interrupted)
    assert main(["pretrain", "--task", "arithmetic", "--out", str(out), "--no-progress"]) == 130
    assert "run the same command again" in capsys.readouterr().err
