"""fade's verl plugin against verl 0.9.1 itself (needs the fade-rl[verl] extra).

Every fade name registered in verl's advantage registry is called through verl's own
``compute_advantage`` on a ``DataProto`` and compared with fade's direct computation; fade's
re-implementations of verl's estimators are compared with verl's own, through the same call. The
plugin is loaded in fresh interpreters through its ``verl.plugins`` entry point and through
``VERL_USE_EXTERNAL_MODULES``. The trainer (``trainer.v1.trainer_mode=fade``) is built by verl's
real constructor from verl's packaged Hydra config with the example's overrides; its advantage
step runs verl's real ``_compute_advantage`` against an in-memory stand-in for the TransferQueue
client, the only piece that needs a Ray cluster.
"""

from __future__ import annotations

import copy
import json
import logging
import os
import re
import shutil
import stat
import subprocess
import sys
import uuid
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch

pytest.importorskip("verl")

from omegaconf import OmegaConf  # noqa: E402
from verl import DataProto  # noqa: E402
from verl.trainer.config import AlgoConfig  # noqa: E402
from verl.trainer.ppo import core_algos  # noqa: E402
from verl.trainer.ppo.ray_trainer import compute_advantage  # noqa: E402

import fade  # noqa: E402
import fade.integrations.verl as fv  # noqa: E402
from fade.integrations.state import STATE_FILE, load_estimator_state, save_estimator_state  # noqa: E402
from fade.mass import DIAGNOSTICS  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "verl" / "run_fade_qwen2_5_7b_math.sh"

# verl warns on every trainer built without a critic; these runs have none on purpose.
pytestmark = pytest.mark.filterwarnings("ignore:Disabled critic:UserWarning")

needs_trainer = pytest.mark.skipif(fv._TRAINER_MISSING is not None, reason=str(fv._TRAINER_MISSING))

#: Parameters per verl name: required ones, and non-defaults that prove algorithm.fade reaches fade.
PARAMS: dict[str, dict] = {
    "fade": {"h_star": 0.9, "ema": 0.5},
    "fade_decay": {"total_steps": 50},
    "fade_fixed": {"path": "shift"},
    "fade_entropy_only": {"h_star_ratio": 0.6, "ema": 0.5},
    "fade_grpo": {"eps": 1e-4},
    "fade_passk": {"k": 3},
    "fade_power": {"alpha": 3.0},
    "fade_w_reinforce": {"lam": 0.3},
}


@pytest.fixture(autouse=True)
def fresh_estimators():
    fv.reset_estimators()
    yield
    fv.reset_estimators()


def verl_batch(seed: int, *, dtype=torch.float32, min_size: int = 4) -> tuple[DataProto, dict]:
    """A DataProto as verl's trainer builds it: ragged shuffled groups with uuid uids, binary
    outcome rewards on each response's last token, an int64 response mask, greedy baselines."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(min_size, 10, size=rng.integers(2, 7))
    uids = np.repeat(np.array([str(uuid.UUID(int=int(rng.integers(1 << 62)))) for _ in sizes], dtype=object), sizes)
    n = uids.size
    perm = rng.permutation(n)
    uids = uids[perm]
    rewards = rng.integers(0, 2, size=n).astype(np.float64)
    lengths = rng.integers(1, 12, size=n)
    width, prompt_len = int(lengths.max()) + 3, 5
    mask = (torch.arange(width).unsqueeze(0) < torch.as_tensor(lengths).unsqueeze(1)).to(torch.int64)
    tok = torch.zeros(n, width, dtype=dtype)
    tok[torch.arange(n), torch.as_tensor(lengths) - 1] = torch.as_tensor(rewards, dtype=dtype)
    baselines = torch.as_tensor(rng.integers(0, 2, size=n), dtype=dtype)
    data = DataProto.from_dict(
        tensors={
            "token_level_rewards": tok,
            "token_level_scores": tok.clone(),
            "response_mask": mask,
            "responses": torch.as_tensor(rng.integers(0, 1000, size=(n, width))),
            "attention_mask": torch.cat([torch.ones(n, prompt_len, dtype=torch.int64), mask], dim=1),
            "reward_baselines": baselines,
        },
        non_tensors={"uid": uids},
    )
    raw = {
        "rewards": torch.as_tensor(rewards, dtype=dtype), "uids": uids, "lengths": lengths, "baselines": baselines,
        "mask": mask,
    }
    return data, raw


def algorithm_config(name: str, params: dict | None = None):
    """verl's algorithm section as its trainers pass it: an OmegaConf DictConfig."""
    cfg = {"adv_estimator": name, "gamma": 1.0, "lam": 1.0, "norm_adv_by_std_in_grpo": True, "use_kl_in_reward": False}
    if params is not None:
        cfg["fade"] = params
    return OmegaConf.create(cfg)


def direct(est: fade.Estimator, raw: dict) -> torch.Tensor:
    """fade's own computation on the per-rollout values, broadcast over each response's tokens."""
    inputs = {}
    if {"lengths"} & {*est.spec.needs, *est.spec.uses}:
        inputs["lengths"] = raw["lengths"]
    if {"baseline_rewards"} & {*est.spec.needs, *est.spec.uses}:
        inputs["baseline_rewards"] = raw["baselines"]
    adv = est(raw["rewards"], raw["uids"], **inputs)
    return adv.unsqueeze(-1) * raw["mask"].to(adv.dtype)


# -- the registry ------------------------------------------------------------------------------


def test_every_fade_estimator_is_registered_under_a_fade_name():
    names = fv.registered_names()
    assert set(names.values()) == set(fade.available())
    for vname, name in names.items():
        assert vname.startswith("fade")
        assert core_algos.get_adv_estimator_fn(vname).fade_name == name
        if vname not in fv.COUNTERPARTS:
            assert vname == (name if name.startswith("fade") else f"fade_{name}")
    # every counterpart of a verl estimator is registered, under fade_<name> or its own verl-like name
    for vname, cp in fv.COUNTERPARTS.items():
        assert names[vname] == cp.estimator and cp.verl in core_algos.ADV_ESTIMATOR_REGISTRY
    assert {"fade_rloo_vectorized", "fade_grpo_vectorized"} <= set(names) - {f"fade_{n}" for n in fade.available()}
    assert {"fade", "fade_grpo", "fade_maxrl", "fade_passk", "fade_dr_grpo"} <= set(names)
    # verl's own names are untouched
    assert core_algos.get_adv_estimator_fn("grpo") is core_algos.compute_grpo_outcome_advantage


def test_register_is_idempotent_and_refuses_a_foreign_function(monkeypatch):
    before = {k: core_algos.ADV_ESTIMATOR_REGISTRY[k] for k in fv.registered_names()}
    assert fv.register() == list(fv.registered_names())
    assert all(core_algos.ADV_ESTIMATOR_REGISTRY[k].fade_name == f.fade_name for k, f in before.items())
    monkeypatch.setitem(core_algos.ADV_ESTIMATOR_REGISTRY, "fade_grpo", core_algos.compute_grpo_outcome_advantage)
    with pytest.raises(ValueError, match="fade_grpo.*not fade's"):
        fv.register()


@pytest.mark.parametrize("vname", sorted(fv.registered_names()))
def test_verl_compute_advantage_matches_fade(vname):
    """verl's compute_advantage(DataProto, adv_estimator=name) equals fade's direct computation,
    over two calls, so that a stateful estimator's state is seen to carry over. (REINFORCE++ and
    ReMax give per-token returns: tests/test_verl_contract.py compares them with verl's.)"""
    name = fv.registered_names()[vname]
    params = PARAMS.get(vname, {})
    ref = fade.estimator(name, **fv.resolve_params(vname, algorithm_config(vname, params)))
    per_token = fv.COUNTERPARTS.get(vname) is not None and fv.COUNTERPARTS[vname].tokens is not None
    for call, (seed, entropy) in enumerate([(len(vname), 1.0), (len(vname) + 100, 0.2)], start=1):
        data, raw = verl_batch(seed)
        if ref.stateful:  # what FadeTrainer does before verl's advantage step
            fv.estimator_for(vname, params).observe(entropy=entropy, step=call)
            ref.observe(entropy=entropy, step=call)
        out = compute_advantage(data, adv_estimator=vname, config=algorithm_config(vname, params))
        adv, ret = out.batch["advantages"], out.batch["returns"]
        expected = direct(ref, raw)
        assert adv.shape == raw["mask"].shape and adv.dtype == torch.float32
        exact = {"rtol": 1e-6, "atol": 1e-6} if vname.startswith("fade_reinforce_pp") else {"rtol": 0, "atol": 0}
        torch.testing.assert_close(adv, expected, **exact)
        if not per_token:
            torch.testing.assert_close(ret, expected, rtol=0, atol=0)
        assert not adv[raw["mask"] == 0].any()
    assert fv.estimator_for(vname, params).state_dict() == ref.state_dict()
    if vname == "fade":
        assert ref.last["delta"] == pytest.approx(0.7)  # h_hat 0.6 = 0.5 (1.0 + 0.2), H* 0.9


def test_dtype_follows_the_rewards_and_the_mask_may_be_bool():
    data, raw = verl_batch(3, dtype=torch.float64)
    data.batch["response_mask"] = data.batch["response_mask"].bool()
    out = compute_advantage(data, adv_estimator="fade_maxrl", config=algorithm_config("fade_maxrl"))
    assert out.batch["advantages"].dtype == torch.float64
    torch.testing.assert_close(out.batch["advantages"], direct(fade.estimator("maxrl"), raw), rtol=0, atol=0)


@pytest.mark.parametrize("form", ["none", "dict", "dictconfig", "algoconfig", "namespace"])
def test_parameters_come_from_every_form_of_verl_algorithm_config(form):
    params = {"k": 2}
    config = {
        "none": None,
        "dict": {"adv_estimator": "fade_passk", "fade": params},
        "dictconfig": OmegaConf.create({"adv_estimator": "fade_passk", "fade": params}),
        "algoconfig": AlgoConfig(adv_estimator="fade_passk"),
        "namespace": SimpleNamespace(adv_estimator="fade_passk", fade=SimpleNamespace(**params)),
    }[form]
    if form == "algoconfig":
        config.fade = params  # AlgoConfig has no fade field; a new attribute is how one adds it
    expected = {} if form == "none" else params
    assert fv.params_from_config(config) == expected
    data, raw = verl_batch(5)
    out = compute_advantage(data, adv_estimator="fade_passk", config=config)
    expected_adv = direct(fade.estimator("passk", **expected), raw)
    torch.testing.assert_close(out.batch["advantages"], expected_adv, rtol=0, atol=0)


def test_unknown_parameters_raise_fades_error_naming_them():
    data, _ = verl_batch(1)
    with pytest.raises(ValueError, match=r"unknown parameter\(s\) \['h_star_ration'\].*algorithm\.fade"):
        compute_advantage(data, adv_estimator="fade", config=algorithm_config("fade", {"h_star_ration": 0.5}))
    with pytest.raises(ValueError, match="algorithm.fade must map"):
        fv.params_from_config({"fade": 0.5})
    with pytest.raises(ValueError, match="must be a mapping, DictConfig, AlgoConfig or namespace, got int"):
        fv.params_from_config(3)


def test_bad_inputs_raise_errors_that_name_the_estimator():
    data, raw = verl_batch(2)
    data.batch["token_level_rewards"][0] = 0.0
    data.batch["token_level_rewards"][0, 0] = 0.5  # a score that is not 0 or 1
    with pytest.raises(ValueError, match=r"fade_passk \(fade's 'passk'\).*binary"):
        compute_advantage(data, adv_estimator="fade_passk", config=algorithm_config("fade_passk"))
    fn = core_algos.get_adv_estimator_fn("fade_grpo")
    with pytest.raises(ValueError, match="no group ids"):
        fn(token_level_rewards=raw["mask"].float(), response_mask=raw["mask"], config=None)
    del data.batch["reward_baselines"]
    with pytest.raises(ValueError, match="fade_remax needs verl's reward_baselines"):
        compute_advantage(data, adv_estimator="fade_remax", config=algorithm_config("fade_remax"))


def test_fade_without_entropy_warns_once(caplog):
    caplog.set_level(logging.WARNING, logger=fv.__name__)
    for seed in range(2):
        data, _ = verl_batch(seed)
        compute_advantage(data, adv_estimator="fade", config=algorithm_config("fade"))
    warnings = [r for r in caplog.records if "given no entropy" in r.getMessage()]
    assert len(warnings) == 1 and "trainer.v1.trainer_mode=fade" in warnings[0].getMessage()


def test_fade_metrics_for_stateless_and_stateful_estimators():
    data, raw = verl_batch(4)
    assert fv.fade_metrics("fade_rloo") == {}
    compute_advantage(data, adv_estimator="fade_rloo", config=algorithm_config("fade_rloo"))
    rep = fade.decompose(fade.advantages("rloo", raw["rewards"], raw["uids"]), raw["rewards"], raw["uids"])
    got = fv.fade_metrics("fade_rloo")
    assert got == pytest.approx({f"fade/{k}": getattr(rep, k) for k in DIAGNOSTICS})
    fv.estimator_for("fade").observe(entropy=1.0)
    compute_advantage(data, adv_estimator="fade", config=algorithm_config("fade"))
    keys = {f"fade/{k}" for k in ("alpha", "delta", "p_hat", "h_hat", "h_star", *DIAGNOSTICS)}
    assert set(fv.fade_metrics("fade")) == keys


# -- loading the plugin in a fresh interpreter -------------------------------------------------

_PROBE = """
import json, sys
import verl
from verl.trainer.ppo.core_algos import ADV_ESTIMATOR_REGISTRY
loaded = "fade.integrations.verl" in sys.modules
report = {"loaded": loaded, "names": sorted(k for k in ADV_ESTIMATOR_REGISTRY if k.startswith("fade"))}
if loaded:
    import importlib
    import fade.integrations.verl as fv
    from verl.trainer.ppo.v1 import get_trainer_cls
    report["trainer"] = get_trainer_cls("fade").__qualname__
    importlib.import_module("fade.integrations.verl")  # a second import
    fv = importlib.reload(fv)                          # and a re-execution of the module
    fv.register()
    report["after_reload"] = get_trainer_cls("fade") is fv.FadeTrainer
print(json.dumps(report))
"""


def _probe(**env: str) -> subprocess.Popen:
    base = {k: v for k, v in os.environ.items() if k not in ("VERL_USE_EXTERNAL_MODULES", "VERL_USE_EXTERNAL_PLUGINS")}
    return subprocess.Popen(
        [sys.executable, "-c", _PROBE], env={**base, **env}, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def _report(proc: subprocess.Popen) -> dict:
    out, err = proc.communicate(timeout=180)
    assert proc.returncode == 0, err[-3000:]
    return json.loads(out.strip().splitlines()[-1])


def test_plugin_loads_in_a_fresh_process_through_entry_point_and_env_var():
    """Three fresh interpreters, run side by side: (1) plain ``import verl`` loads fade through the
    ``verl.plugins`` entry point; (2) with entry points off (``VERL_USE_EXTERNAL_PLUGINS=none``,
    verl's own switch) ``VERL_USE_EXTERNAL_MODULES`` alone loads it; (3) with entry points off and
    no variable nothing loads, which shows that (2) is the variable's doing."""
    from importlib.metadata import entry_points

    assert any(ep.value == "fade.integrations.verl" for ep in entry_points(group="verl.plugins")), (
        "the verl.plugins entry point is not installed: reinstall fade-rl (pip install -e .)"
    )
    procs = {
        "entry_point": _probe(),
        "env_var": _probe(VERL_USE_EXTERNAL_PLUGINS="none", VERL_USE_EXTERNAL_MODULES="fade.integrations.verl"),
        "neither": _probe(VERL_USE_EXTERNAL_PLUGINS="none"),
    }
    reports = {k: _report(p) for k, p in procs.items()}
    expected = sorted(fv.registered_names())
    for key in ("entry_point", "env_var"):
        r = reports[key]
        assert r["loaded"] and r["names"] == expected, (key, r)
        assert r["trainer"] == "FadeTrainer" and r["after_reload"], (key, r)
    assert reports["neither"] == {"loaded": False, "names": []}


# -- the example and the trainer ---------------------------------------------------------------


def interpreter_calls(tmp: Path, script: Path, *args: str) -> list[tuple[list[str], str | None]]:
    """Run a bash script with a stand-in interpreter (``PYTHON``) that records each call: its
    arguments and the ``FADE_VERL_CPU`` it saw (None when unset), in order."""
    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("bash is needed to run the example scripts")
    calls = tmp / "calls"
    calls.mkdir()
    stub = tmp / "python"
    stub.write_text('#!/bin/sh\nn=$(ls "$CALLS" | grep -c "^[0-9]*$")\n'
                    'for a in "$@"; do printf \'%s\\0\' "$a"; done > "$CALLS/$n"\n'
                    'if [ -n "${FADE_VERL_CPU+x}" ]; then printf \'%s\' "$FADE_VERL_CPU" > "$CALLS/env$n"; fi\n')
    stub.chmod(stub.stat().st_mode | stat.S_IEXEC)
    env = {k: v for k, v in os.environ.items() if k not in ("FADE_VERL_CPU", "RESUME")}
    env.update(PYTHON=str(stub), CALLS=str(calls), HOME=str(tmp))
    subprocess.run([bash, str(script), *args], env=env, check=True, capture_output=True, timeout=60)
    out = []
    for i in range(len([p for p in calls.iterdir() if p.name.isdigit()])):
        env_file = calls / f"env{i}"
        out.append(((calls / str(i)).read_text().split("\0")[:-1], env_file.read_text() if env_file.exists() else None))
    return out


@pytest.fixture(scope="module")
def example_overrides(tmp_path_factory) -> list[str]:
    """The Hydra overrides the example script passes, captured by running the script itself with
    a stand-in interpreter that records its arguments."""
    [(argv, cpu)] = interpreter_calls(tmp_path_factory.mktemp("example"), EXAMPLE)
    assert argv[:2] == ["-m", "verl.trainer.main_ppo"] and cpu is None
    return argv[2:]


def _compose(overrides: list[str]):
    from hydra import compose, initialize_config_module

    with initialize_config_module(config_module="verl.trainer.config", version_base=None):
        return compose(config_name="ppo_trainer", overrides=overrides)


@pytest.fixture(scope="module")
def example_config(example_overrides):
    """verl's packaged ppo_trainer config with the example's overrides (Hydra's strict compose)."""
    return _compose(example_overrides)


def _has_key(cfg, dotted: str) -> bool:
    parent, _, leaf = dotted.rpartition(".")
    node = OmegaConf.select(cfg, parent) if parent else cfg
    return OmegaConf.is_dict(node) and leaf in node.keys()  # keys(): "in" is False for a ??? (required) value


def test_example_overrides_name_keys_of_verls_config(example_overrides, example_config):
    base = _compose([])
    for override in example_overrides:
        key, _, _ = override.partition("=")
        if key.startswith("+"):
            assert not _has_key(base, key[1:]), f"{key} adds a key verl's config already has"
        else:
            assert _has_key(base, key), f"{key} is not in verl's config"
    assert example_config.algorithm.adv_estimator == "fade"
    assert example_config.trainer.use_v1 and example_config.trainer.v1.trainer_mode == "fade"
    assert example_config.actor_rollout_ref.rollout.name == "vllm"
    assert example_config.actor_rollout_ref.rollout.n in (8, 16)
    env_vars = example_config.ray_kwargs.ray_init.runtime_env.env_vars
    assert env_vars.VERL_USE_EXTERNAL_MODULES == "fade.integrations.verl"


@needs_trainer
def test_example_config_resolves_in_verl_and_passes_its_validation(example_config):
    from verl.trainer.ppo.utils import need_critic, need_reference_policy
    from verl.trainer.ppo.v1 import get_trainer_cls
    from verl.utils.config import validate_config

    cfg = example_config
    assert core_algos.get_adv_estimator_fn(cfg.algorithm.adv_estimator).fade_name == "fade"
    assert get_trainer_cls(cfg.trainer.v1.trainer_mode) is fv.FadeTrainer
    params = fv.params_from_config(cfg.algorithm)
    assert params == {"h_star_ratio": 0.5}
    assert isinstance(fade.estimator("fade", **params), fade.FadeEstimator)
    with pytest.warns(UserWarning, match="Disabled critic"):
        validate_config(config=cfg, use_reference_policy=need_reference_policy(cfg), use_critic=need_critic(cfg))


def test_gpu_recipe_passes_fades_preflight_check_and_a_typo_does_not(example_overrides, example_config):
    """fade's pre-flight check (what FadeTrainer runs before any worker starts) on the recipe as
    verl composes it; the same recipe with a misspelt FADE parameter fails here, not on a cluster."""
    fv.check_run(example_config)
    typo = [o.replace("h_star_ratio", "h_star_rato") for o in example_overrides]
    with pytest.raises(ValueError, match="h_star_rato"):
        fv.check_run(_compose(typo))


#: What the CPU smoke may change in the GPU recipe: the model, the data (and the reward function that
#: scores it), sizes, the loggers and the checkpoint and test schedule.
CPU_SMOKE_CHANGES = {
    "model": {"actor_rollout_ref.model.path"},
    "data": {
        "data.train_files",
        "data.val_files",
        "reward.custom_reward_function.path",
        "reward.custom_reward_function.name",
    },
    "sizes": {
        "data.train_batch_size",
        "data.max_prompt_length",
        "data.max_response_length",
        "data.dataloader_num_workers",
        "actor_rollout_ref.actor.ppo_mini_batch_size",
        "actor_rollout_ref.actor.ppo_max_token_len_per_gpu",
        "actor_rollout_ref.rollout.n",
        "actor_rollout_ref.rollout.tensor_model_parallel_size",
        "actor_rollout_ref.rollout.log_prob_max_token_len_per_gpu",
        "actor_rollout_ref.rollout.agent.num_workers",
        "reward.num_workers",
        "transfer_queue.backend.SimpleStorage.num_data_storage_units",
        "trainer.n_gpus_per_node",
    },
    "run": {
        "trainer.logger",
        "trainer.experiment_name",
        "trainer.default_local_dir",
        "trainer.val_before_train",
        "trainer.test_freq",
        "trainer.save_freq",
        "trainer.total_training_steps",
    },
}


def _settings(overrides: list[str]) -> dict[str, str]:
    return dict(o.lstrip("+").split("=", 1) for o in overrides)  # Hydra: the last value of a key wins


def test_cpu_smoke_is_the_gpu_recipe_with_the_cpu_switch(tmp_path, example_overrides):
    """examples/verl/cpu_smoke.sh and run_fade_qwen2_5_7b_math.sh differ only in model, data, sizes
    and the CPU switch: the smoke runs the recipe script itself, with FADE_VERL_CPU=1."""
    calls = interpreter_calls(tmp_path, REPO / "examples" / "verl" / "cpu_smoke.sh", str(tmp_path / "out"))
    runs = [(argv[2:], cpu) for argv, cpu in calls if argv[:2] == ["-m", "verl.trainer.main_ppo"]]
    assert len(runs) == 2 and all(cpu == "1" for _, cpu in runs)
    (full, _), (resumed, _) = runs
    gpu, cpu = _settings(example_overrides), _settings(full)
    assert set(gpu) <= set(cpu)
    changed = {k for k in cpu if gpu.get(k) != cpu[k]}
    allowed = set().union(*CPU_SMOKE_CHANGES.values())
    assert changed <= allowed, sorted(changed - allowed)
    for key in ("algorithm.adv_estimator", "algorithm.fade.h_star_ratio", "trainer.v1.trainer_mode",
                "actor_rollout_ref.rollout.name", "actor_rollout_ref.actor.optim.lr"):
        assert cpu[key] == gpu[key], key  # FADE and the training itself are the recipe's
    again = _settings(resumed)
    assert {k: v for k, v in again.items() if cpu.get(k) != v} == {
        "trainer.default_local_dir": again["trainer.default_local_dir"], "trainer.resume_mode": "resume_path",
        "trainer.resume_from_path": cpu["trainer.default_local_dir"] + "/global_step_2"}
    assert again["trainer.default_local_dir"].endswith("/resumed") and cpu["trainer.default_local_dir"].endswith(
        "/full"
    )
    # the CPU config composes in verl, passes the CPU check and verl's validation
    from verl.trainer.ppo.utils import need_critic, need_reference_policy
    from verl.utils.config import validate_config

    from fade.integrations import verl_cpu

    cfg = _compose(full)
    fv.check_run(cfg)
    assert verl_cpu.adapt_config(cfg) and cfg.actor_rollout_ref.rollout.name == "hf"
    with pytest.warns(UserWarning, match="Disabled critic"):
        validate_config(config=cfg, use_reference_policy=need_reference_policy(cfg), use_critic=need_critic(cfg))


class FakeTransferQueue:
    """The two TransferQueue client calls ``PPOTrainer._compute_advantage`` makes, in memory.

    Rows are stored per key as verl's agent loop writes them (uid, 1-D response mask, 1-D reward
    scores); reads come back as verl's ``list_of_dict_to_tensordict`` builds them (nested tensors,
    a non-tensor stack of uids), with the fields a row does not have left out.
    """

    def __init__(self, rows: dict[str, dict]):
        self.rows = rows

    def kv_batch_get(self, keys, partition_id, select_fields=None):
        from verl.utils.tensordict_utils import list_of_dict_to_tensordict

        fields = [f for f in select_fields if f in self.rows[keys[0]]]
        return list_of_dict_to_tensordict([{f: self.rows[k][f] for f in fields} for k in keys])

    def kv_batch_put(self, keys, partition_id, fields=None, tags=None):
        from transfer_queue import KVBatchMeta

        for field in fields.keys():
            for key, value in zip(keys, fields[field].unbind(), strict=True):
                self.rows[key][field] = value
        return KVBatchMeta(keys=list(keys), tags=[{} for _ in keys], partition_id=partition_id)


def fake_rollouts(seed: int, group: int, outputs: int = 1) -> tuple[dict[str, dict], dict]:
    """Rows for 4 prompts x ``group`` sessions x up to ``outputs`` outputs per session, keyed
    ``{uid}_{session}_{index}`` as verl's agent loop does."""
    rng = np.random.default_rng(seed)
    rows, uids, rewards, lengths = {}, [], [], []
    for _ in range(4):
        uid = uuid.UUID(int=int(rng.integers(1 << 62))).hex
        solve = rng.random()
        for s in range(group):
            for i in range(int(rng.integers(1, outputs + 1))):
                length, r = int(rng.integers(1, 9)), float(rng.random() < solve)
                scores = torch.zeros(length)
                scores[-1] = r
                mask = torch.ones(length, dtype=torch.int64)
                rows[f"{uid}_{s}_{i}"] = {"uid": uid, "response_mask": mask, "rm_scores": scores}
                uids.append(uid)
                rewards.append(r)
                lengths.append(length)
    return rows, {"uids": np.array(uids, dtype=object), "rewards": torch.tensor(rewards), "lengths": lengths}


@pytest.fixture
def trainer_base(monkeypatch):
    if fv._TRAINER_MISSING is not None:
        pytest.skip(fv._TRAINER_MISSING)
    return sys.modules["verl.trainer.ppo.v1.trainer_base"]


def build_trainer(config, **updates):
    cfg = copy.deepcopy(config)
    for key, value in updates.items():
        OmegaConf.update(cfg, key, value, merge=False, force_add=True)
    return fv.FadeTrainer(cfg)  # verl's real constructor: no Ray needed until init()


def run_advantage_step(trainer, trainer_base, monkeypatch, seed: int, step: int, metrics: dict, outputs: int = 1):
    from transfer_queue import KVBatchMeta

    rows, raw = fake_rollouts(seed, trainer.config.actor_rollout_ref.rollout.n, outputs)
    monkeypatch.setattr(trainer_base, "tq", FakeTransferQueue(rows))
    trainer.global_steps = step
    keys = list(rows)
    trainer._compute_advantage(KVBatchMeta(keys=keys, tags=[{} for _ in keys], partition_id="train"), metrics)
    per_seq = torch.stack([rows[k]["advantages"][0] for k in keys])
    for k in keys:  # one value over each response's tokens
        assert torch.all(rows[k]["advantages"] == rows[k]["advantages"][0])
    return per_seq, raw


def test_trainer_is_verls_sync_trainer_under_another_name(trainer_base, example_config):
    from verl.trainer.ppo.v1 import PPOTrainerSync
    from verl.trainer.ppo.v1.replay_buffer import ReplayBuffer

    trainer = build_trainer(example_config)
    assert isinstance(trainer, PPOTrainerSync)
    assert trainer.config.trainer.v1.trainer_mode == "fade"
    assert trainer.trainer_mode == "sync" and type(trainer.replay_buffer) is ReplayBuffer
    assert trainer.parameter_sync_step == 1


def test_trainer_feeds_fade_verls_entropy_and_step(trainer_base, example_config, monkeypatch):
    trainer = build_trainer(example_config, **{"algorithm.fade.ema": 1.0})
    params = {"h_star_ratio": 0.5, "ema": 1.0}
    ref = fade.estimator("fade", **params)

    metrics = {fv.ENTROPY_METRIC: 1.25}
    got, raw = run_advantage_step(trainer, trainer_base, monkeypatch, seed=0, step=1, metrics=metrics)
    est = fv.estimator_for("fade", params)
    assert (est.h_first, est.h_hat, est.h_star) == (1.25, 1.25, 0.625)
    assert est.last["step"] == 0.0 and est.last["delta"] == 1.0  # verl's first update is FADE's step 0
    ref.observe(entropy=1.25, step=0)
    torch.testing.assert_close(got, ref(raw["rewards"], raw["uids"]), rtol=0, atol=0)
    expected_keys = {f"fade/{k}" for k in ("alpha", "delta", "p_hat", "h_hat", "h_star", *DIAGNOSTICS)}
    assert expected_keys <= set(metrics)
    assert metrics["fade/h_hat"] == 1.25 and metrics["fade/p_hat"] == pytest.approx(float(raw["rewards"].mean()))

    # entropy falls below H*: delta = 1 + H_hat - H* = 1 + 0.4 - 0.625 amplifies negative mass
    metrics = {fv.ENTROPY_METRIC: 0.4}
    got, raw = run_advantage_step(trainer, trainer_base, monkeypatch, seed=1, step=2, metrics=metrics)
    ref.observe(entropy=0.4, step=1)
    torch.testing.assert_close(got, ref(raw["rewards"], raw["uids"]), rtol=0, atol=0)
    assert metrics["fade/delta"] == pytest.approx(0.775) and est.last["step"] == 1.0
    assert est.state_dict() == ref.state_dict()


def test_trainer_without_entropy_raises_for_fade_but_not_for_fixed_delta(trainer_base, example_config, monkeypatch):
    trainer = build_trainer(example_config)
    with pytest.raises(ValueError, match="bypass_mode"):
        run_advantage_step(trainer, trainer_base, monkeypatch, seed=0, step=1, metrics={})
    trainer = build_trainer(example_config, **{"algorithm.adv_estimator": "fade_alpha"})
    metrics: dict = {}
    run_advantage_step(trainer, trainer_base, monkeypatch, seed=0, step=1, metrics=metrics)
    assert metrics["fade/delta"] == 1.0 and "fade/h_hat" not in metrics


def test_trainer_leaves_verls_own_estimators_alone(trainer_base, example_config, monkeypatch):
    trainer = build_trainer(example_config, **{"algorithm.adv_estimator": "grpo"})
    metrics = {fv.ENTROPY_METRIC: 1.0}
    got, raw = run_advantage_step(trainer, trainer_base, monkeypatch, seed=2, step=1, metrics=metrics)
    assert not any(k.startswith("fade/") for k in metrics) and fv.current_estimators() == {}
    torch.testing.assert_close(got, fade.advantages("grpo", raw["rewards"], raw["uids"]), rtol=1e-5, atol=1e-5)


def test_trainer_gives_fade_grpo_verls_final_session_rule(trainer_base, example_config, monkeypatch):
    """Agent loops with several outputs per session: verl's trainer scores each session by its final
    output for grpo; fade_grpo, through the same real _compute_advantage, gives the same numbers."""
    got = {}
    for name in ("grpo", "fade_grpo"):
        trainer = build_trainer(example_config, **{"algorithm.adv_estimator": name, "algorithm.fade": None})
        got[name], raw = run_advantage_step(trainer, trainer_base, monkeypatch, seed=3, step=1, metrics={}, outputs=3)
    assert len(raw["uids"]) > 4 * example_config.actor_rollout_ref.rollout.n  # sessions with several outputs
    torch.testing.assert_close(got["fade_grpo"], got["grpo"], rtol=1e-5, atol=1e-6)
    # one rollout per row would give other numbers
    per_row = fade.advantages("grpo", raw["rewards"], raw["uids"])
    assert (per_row - got["grpo"]).abs().max() > 0.1


@pytest.mark.parametrize(
    ("updates", "message"),
    [
        ({"algorithm.use_kl_in_reward": True},
         r"^fade: fade's 'fade' reads each score as a success in \[0, 1\], but algorithm.use_kl_in_reward=True .*"
         r"\+algorithm.fade.success_threshold=T"),
        ({"reward.reward_model.enable": True}, r"reward.reward_model.enable=True scores responses with a reward model"),
        ({"algorithm.adv_estimator": "fade_grpo", "algorithm.norm_adv_by_std_in_grpo": False,
          "algorithm.fade": {"scale": "group"}}, r"^fade_grpo: norm_adv_by_std_in_grpo=False means scale='none'"),
        ({"algorithm.adv_estimator": "fade_remax", "algorithm.fade": None},
         r"^fade_remax: needs verl's reward_baselines .* only verl's legacy trainer computes"),
        ({"algorithm.adv_estimator": "fade_grpo_vectorized", "algorithm.norm_adv_by_std_in_grpo": False,
          "algorithm.fade": None},
         r"^fade_grpo_vectorized: algorithm.norm_adv_by_std_in_grpo=False is not read by verl's grpo_vectorized"),
    ],
)
def test_trainer_refuses_a_setting_it_cannot_honour_before_the_first_step(example_config, updates, message):
    with pytest.raises(ValueError, match=message) as caught:
        build_trainer(example_config, **updates)
    assert "\n" not in str(caught.value)


def test_trainer_takes_a_reward_model_with_a_success_option(trainer_base, example_config):
    trainer = build_trainer(example_config, **{"reward.reward_model.enable": True, "algorithm.use_kl_in_reward": True,
                                               "algorithm.fade.success_threshold": 0.5})
    assert (
        fv.estimator_for("fade", fv.resolve_params("fade", trainer.config.algorithm)).params["success_threshold"] == 0.5
    )


def test_trainer_saves_state_before_verl_marks_the_checkpoint_and_restores_it(
    trainer_base, example_config, monkeypatch, tmp_path
):
    ckpt = tmp_path / "ckpt"
    trainer = build_trainer(example_config, **{"trainer.default_local_dir": str(ckpt)})
    params = fv.params_from_config(trainer.config.algorithm)
    est = fv.estimator_for("fade", params)
    est.observe(entropy=1.3, step=7)
    est(torch.tensor([1.0, 0.0, 0.0, 0.0]), 4)
    saved_state = est.state_dict()
    state_file = ckpt / "global_step_7" / fv.STATE_FILE
    seen = {}

    def verl_save(self):  # stands in for PPOTrainer._save_checkpoint (worker groups, dataloader, tracker)
        seen["state_file_existed"] = state_file.exists()
        (ckpt / "latest_checkpointed_iteration.txt").write_text(str(self.global_steps))

    monkeypatch.setattr(trainer_base.PPOTrainer, "_save_checkpoint", verl_save)
    trainer.global_steps = 7
    trainer._save_checkpoint()
    assert seen == {"state_file_existed": True}
    saved = json.loads(state_file.read_text())
    assert saved["estimator"] == "fade" and saved["state"] == saved_state and saved["global_step"] == 7

    def verl_load(self):  # stands in for PPOTrainer._load_checkpoint: it sets the resumed step
        self.global_steps = 7

    monkeypatch.setattr(trainer_base.PPOTrainer, "_load_checkpoint", verl_load)
    for mode in ({}, {"trainer.resume_mode": "resume_path", "trainer.resume_from_path": str(ckpt / "global_step_7")}):
        fv.reset_estimators()
        resumed = build_trainer(example_config, **{"trainer.default_local_dir": str(ckpt), **mode})
        resumed._load_checkpoint()
        assert fv.estimator_for("fade", params).state_dict() == saved_state

    # a checkpoint written by plain verl (switching a run to FADE): a warning, fresh state
    fv.reset_estimators()
    state_file.unlink()
    resumed = build_trainer(example_config, **{"trainer.default_local_dir": str(ckpt)})
    resumed._load_checkpoint()
    assert fv.estimator_for("fade", params).h_hat is None

    # a state saved by another estimator is refused
    state_file.write_text(json.dumps({**saved, "estimator": "fade_decay"}))
    with pytest.raises(ValueError, match="fade_decay"):
        resumed._load_checkpoint()
    # a file torn outside fade's atomic write is refused by name, not as a JSON traceback
    state_file.write_text(json.dumps(saved)[:40])
    with pytest.raises(ValueError, match=f"{re.escape(str(state_file))} is not a readable fade estimator state"):
        resumed._load_checkpoint()


# -- the estimator state both engines save beside their checkpoints --------------------------------


def test_estimator_state_round_trips_with_the_engine_extras(tmp_path):
    est = fade.estimator("fade")
    est.observe(entropy=1.3, step=0)
    est(torch.tensor([1.0, 0.0, 0.0, 1.0]), 2)
    path = save_estimator_state(est, tmp_path / "global_step_1", global_step=1)
    assert path == tmp_path / "global_step_1" / STATE_FILE
    fresh = fade.estimator("fade")
    saved = load_estimator_state(fresh, path.parent)
    assert fresh.state_dict() == est.state_dict()
    assert saved == {"estimator": "fade", "params": est.params, "state": est.state_dict(), "global_step": 1}
    assert load_estimator_state(fresh, tmp_path / "no_such_checkpoint") is None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"estimator": "fade", "state": {"p_h', "is not a readable fade estimator state"),
        ("[1, 2]", "holds a JSON list, expected an object with"),
        ('{"estimator": "fade"}', r"holds an object with keys \['estimator'\], expected"),
        ('{"estimator": "grpo", "state": {}}', "holds the state of estimator 'grpo', but this run uses 'fade'"),
        ('{"estimator": "fade", "state": {"p_hat": 0.5}}', "FADE state must have keys"),
        ('{"estimator": "fade", "state": [0.5]}', "'state' is a JSON list, expected an object"),
    ],
)
def test_a_corrupt_estimator_state_is_refused_by_file_name(tmp_path, text, message):
    (tmp_path / STATE_FILE).write_text(text)
    est = fade.estimator("fade")
    before = est.state_dict()
    with pytest.raises(ValueError, match=message) as caught:
        load_estimator_state(est, tmp_path)
    assert str(tmp_path / STATE_FILE) in str(caught.value)
    assert est.state_dict() == before


# -- settings that would fail only once the run is under way: refused before it starts -------------


def test_bad_reward_kwargs_of_fades_reward_are_refused_before_the_run_starts(example_overrides):
    # Before: accepted here, then every call of compute_score raised in verl's reward workers.
    reward = ["reward.custom_reward_function.path=pkg://fade.verifiers.rewards",
              "reward.custom_reward_function.name=compute_score"]
    fv.check_run(_compose([*example_overrides, *reward, "+reward.custom_reward_function.reward_kwargs.timeout=2"]))
    bad = _compose([*example_overrides, *reward, "+reward.custom_reward_function.reward_kwargs.timeout=0"])
    line = (
        r"^the run's reward settings are invalid \(verl: reward.custom_reward_function.reward_kwargs\): timeout must be"
    )
    with pytest.raises(ValueError, match=line) as caught:
        fv.check_run(bad)
    assert "\n" not in str(caught.value)
    # verl's own loading of the function, called as verl calls it: the same line at the first reward
    from verl.trainer.ppo.reward import get_custom_reward_fn

    with pytest.raises(ValueError, match=line):
        get_custom_reward_fn(bad)(data_source="math", solution_str="\\boxed{1}", ground_truth="1", extra_info={})
    with pytest.raises(ValueError, match=r"^the run's reward settings are invalid .*judge must be auto or one of"):
        fv.check_run(_compose([*example_overrides, *reward, "+reward.custom_reward_function.reward_kwargs.judge=x"]))
    # another reward function's kwargs are its own business
    fv.check_run(_compose([*example_overrides, "reward.custom_reward_function.path=my_reward.py",
                           "reward.custom_reward_function.name=compute_score",
                           "+reward.custom_reward_function.reward_kwargs.timeout=0"]))


def _saved_loader(folder, workers: int) -> None:
    from torchdata.stateful_dataloader import StatefulDataLoader

    loader = StatefulDataLoader(list(range(32)), batch_size=4, num_workers=workers)
    batches = iter(loader)
    next(batches)
    folder.mkdir(parents=True)
    torch.save(loader.state_dict(), folder / "data.pt")


@pytest.mark.parametrize("saved, now", [(0, 1), (1, 0), (1, 2)])
def test_a_resume_with_another_dataloader_worker_count_is_refused_in_one_line(tmp_path, example_overrides, saved, now):
    from torchdata.stateful_dataloader import StatefulDataLoader

    ckpt = tmp_path / "ckpt"
    _saved_loader(ckpt / "global_step_2", saved)
    (ckpt / "latest_checkpointed_iteration.txt").write_text("2")
    # verl's own behaviour, side by side: torchdata takes the saved state, then fails at the first batch
    loader = StatefulDataLoader(list(range(32)), batch_size=4, num_workers=now)
    loader.load_state_dict(torch.load(ckpt / "global_step_2" / "data.pt", weights_only=False))
    with pytest.raises(AssertionError):
        next(iter(loader))
    for mode in ([], ["trainer.resume_mode=resume_path", f"trainer.resume_from_path={ckpt}/global_step_2"]):
        run = [*example_overrides, f"trainer.default_local_dir={ckpt}", *mode]
        with pytest.raises(ValueError, match=rf"^data.dataloader_num_workers={now}, but the checkpoint .*global_step_2 "
                                             rf"saved its data loader with {saved}: .*dataloader_num_workers={saved}"):
            fv.check_run(_compose([*run, f"data.dataloader_num_workers={now}"]))
        fv.check_run(_compose([*run, f"data.dataloader_num_workers={saved}"]))
    fv.check_run(_compose([*example_overrides, f"trainer.default_local_dir={ckpt}", "trainer.resume_mode=disable",
                           f"data.dataloader_num_workers={now}"]))
