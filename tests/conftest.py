"""Fixtures shared by the test files: a tiny policy, and the recorder of the engine contract's differences."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory) -> str:
    """A randomly initialised tiny Llama with the arithmetic tokenizer (untrained: rewards ~0)."""
    from fade.testbed.policy import build_policy, save_policy, tiny_llama_config
    from fade.testbed.tasks import get_task
    from fade.testbed.tokenizer import task_tokenizer

    tok = task_tokenizer(get_task("arithmetic"))
    config = tiny_llama_config(
        len(tok), hidden_size=32, num_layers=2, num_heads=2, intermediate_size=64, max_positions=32
    )
    directory = tmp_path_factory.mktemp("tiny") / "policy"
    save_policy(build_policy(config, seed=0), tok, directory)
    return str(directory)


# -- the engine contract's measured differences ----------------------------------------------------

#: Every side-by-side comparison of fade with an engine's own estimator in this session: engine,
#: the engine's estimator, fade's counterpart, the setting, and the largest absolute difference.
PARITY: list[dict] = []

#: The engines' own test tolerance (verl's tests/trainer/ppo/test_core_algos_on_cpu.py).
RTOL, ATOL = 1e-5, 1e-6


class Parity:
    """``parity(engine, theirs_name, ours_name, setting, ours, theirs)`` asserts that fade's values
    equal the engine's within the engine's tolerance (rtol 1e-5, atol 1e-6), records the largest
    absolute difference for docs/engines/parity.md (``FADE_PARITY_JSON=path`` writes the records)
    and returns it. ``exception="why"`` records a documented difference instead, which the calling
    test checks; :meth:`refused` records an input that is refused (by both, or by fade where the
    engine ignores a setting)."""

    def __call__(self, engine: str, theirs_name: str, ours_name: str, setting: str, ours, theirs,
                 exception: str | None = None) -> float:
        import torch

        ours, theirs = torch.as_tensor(ours), torch.as_tensor(theirs).to(torch.as_tensor(ours).dtype)
        assert ours.shape == theirs.shape, (ours.shape, theirs.shape)
        diff = float((ours.double() - theirs.double()).abs().max()) if ours.numel() else 0.0
        row = {"engine": engine, "theirs": theirs_name, "ours": ours_name, "setting": setting, "max_abs_diff": diff}
        PARITY.append(row if exception is None else {**row, "exception": exception})
        if exception is None:
            torch.testing.assert_close(ours, theirs, rtol=RTOL, atol=ATOL)
        return diff

    def refused(self, engine: str, theirs_name: str, ours_name: str, setting: str, how: str) -> None:
        PARITY.append({"engine": engine, "theirs": theirs_name, "ours": ours_name, "setting": setting, "refused": how})


@pytest.fixture(scope="session")
def parity() -> Parity:
    return Parity()


def pytest_sessionfinish(session, exitstatus):
    out = os.environ.get("FADE_PARITY_JSON")
    if out and PARITY:
        worker = os.environ.get("PYTEST_XDIST_WORKER")  # under -n each worker writes its own share
        Path(f"{out}.{worker}" if worker else out).write_text(json.dumps(PARITY, indent=1) + "\n")


@pytest.fixture(scope="session")
def isolation() -> dict:
    """What the code sandbox gets on this machine (probed once)."""
    from fade.verifiers.sandbox import isolation_report

    return isolation_report()


@pytest.fixture
def namespaces(isolation: dict) -> dict:
    """For tests of what namespaces isolate: skipped where the machine gives the sandbox none."""
    if isolation["mode"] == "none":
        pytest.skip(f"no namespaces on this machine ({isolation['notes']}): the weaker isolation is documented")
    return isolation
