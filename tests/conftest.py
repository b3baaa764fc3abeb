"""Fixtures shared by the testbed's test files."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory) -> str:
    """A randomly initialised tiny Llama with the arithmetic tokenizer (untrained: rewards ~0)."""
    from fade.testbed.policy import build_policy, save_policy, tiny_llama_config
    from fade.testbed.tasks import get_task
    from fade.testbed.tokenizer import task_tokenizer

    tok = task_tokenizer(get_task("arithmetic"))
    config = tiny_llama_config(len(tok), hidden_size=32, num_layers=2, num_heads=2, intermediate_size=64, max_positions=32)
    directory = tmp_path_factory.mktemp("tiny") / "policy"
    save_policy(build_policy(config, seed=0), tok, directory)
    return str(directory)
