"""benchmarks/gpu_check.py, the prepared GPU check, run on CPU with ``--device cpu --smoke``: the
same code paths as ``make gpu-check`` (every estimator and loss against CPU, the testbed's update
with its tensors' devices, FadeGRPOTrainer, the timing of both trainers), so the script cannot rot
before a GPU is lent to run it."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("trl")

import fade  # noqa: E402
from fade import losses  # noqa: E402

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "gpu_check.py"
PARTS = ["estimators", "losses", "testbed", "trl", "timing"]


def _finite_numbers(x) -> bool:
    if isinstance(x, float):
        return math.isfinite(x)
    if isinstance(x, dict):
        return all(_finite_numbers(v) for v in x.values())
    if isinstance(x, list):
        return all(_finite_numbers(v) for v in x)
    return True


@pytest.fixture(scope="module")
def smoke(tmp_path_factory) -> tuple[dict, Path]:
    out = tmp_path_factory.mktemp("gpu")
    done = subprocess.run([sys.executable, str(SCRIPT), "--device", "cpu", "--smoke", "--out", str(out)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    return json.loads((out / "gpu_check.json").read_text()), out


def test_every_part_runs_and_passes(smoke):
    report, out = smoke
    assert list(report["parts"]) == PARTS
    for name, part in report["parts"].items():
        assert part["status"] == "ok", (name, part)
    assert _finite_numbers(report)
    assert report["device"] == "cpu" and report["smoke"] is True
    table = (out / "gpu_check.md").read_text()
    assert all(f"| {name} | ok |" in table for name in PARTS)


def test_it_covers_every_estimator_and_loss_and_the_updates_tensors(smoke):
    parts = smoke[0]["parts"]
    assert sorted(parts["estimators"]["estimators"]) == sorted(fade.available())
    assert sorted(parts["losses"]["losses"]) == sorted(
        [f"policy:{n}" for n in losses.available("policy")] + [f"entropy:{n}" for n in losses.available("entropy")])
    devices = parts["testbed"]["devices"]
    assert sorted(devices) == ["gradients", "loss inputs", "optimizer state", "parameters"]
    assert all(v == ["cpu"] for v in devices.values())
    assert parts["trl"]["steps"] == 2
    row = parts["timing"]["sizes"]["1M"]
    assert row["fade train"]["steps_per_s"] > 0 and row["TRL GRPOTrainer"]["steps_per_s"] > 0


def test_a_budget_too_small_skips_parts_and_still_writes_the_json(tmp_path):
    done = subprocess.run([sys.executable, str(SCRIPT), "--device", "cpu", "--smoke", "--out", str(tmp_path),
                           "--budget-s", "0.1", "--parts", "estimators,timing"], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads((tmp_path / "gpu_check.json").read_text())
    assert {p["status"] for p in report["parts"].values()} == {"skipped: time budget"}


def test_cuda_asked_for_where_there_is_none_is_one_line(tmp_path):
    import torch

    if torch.cuda.is_available():
        pytest.skip("CUDA is available here")
    done = subprocess.run([sys.executable, str(SCRIPT), "--device", "cuda", "--out", str(tmp_path)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode != 0 and "CUDA is not available" in done.stderr
