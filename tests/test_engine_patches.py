"""fade's ledger of what it touches inside verl and TRL, against the installed engines.

Every entry of verl's ``PATCHES`` and ``OVERRIDES`` (``fade.integrations.verl.patches``) and of
TRL's ``PRIVATE`` (``fade.integrations.trl``) is found in the installed engine with the parameters
fade relies on; the ledger is complete (every wrapper fade installs, every method its trainers
override, is in it; no other module rebinds an engine's global); and a target the engine no
longer has fails in one line naming the engine's version, the module and the attribute.
"""

from __future__ import annotations

import ast
import inspect
from collections import deque
from pathlib import Path

import pytest

pytest.importorskip("verl")
pytest.importorskip("trl")

import torch  # noqa: E402
from trl import GRPOConfig, GRPOTrainer  # noqa: E402

import fade.integrations.trl as fade_trl  # noqa: E402
import fade.integrations.verl as fv  # noqa: E402
from fade.integrations import ledger  # noqa: E402
from fade.integrations.verl import patches, trainer  # noqa: E402
from fade.integrations.verl_cpu.config import cpu_auto_set_device  # noqa: E402
from fade.integrations.verl_cpu.platform import gloo_process_group  # noqa: E402

INTEGRATIONS = Path(fv.__file__).resolve().parents[1]
VERL_ENTRIES = patches.PATCHES + patches.OVERRIDES


def _params(fn) -> tuple[str, ...]:
    return tuple(p for p in inspect.signature(fn).parameters if p != "self")


# -- every entry against the installed engines ---------------------------------------------------------


@pytest.mark.parametrize("touch", VERL_ENTRIES, ids=lambda t: t.where)
def test_every_verl_entry_is_in_the_installed_verl_with_its_parameters(touch):
    assert touch.engine == "verl" and touch.checked == patches.VERL_CHECKED
    target = ledger.resolve(touch)
    if touch.params is not None:
        assert _params(target) == touch.params


@pytest.mark.parametrize("touch", fade_trl.PRIVATE, ids=lambda t: t.where)
def test_every_trl_entry_is_in_the_installed_trl_with_its_parameters(touch):
    assert touch.engine == "trl" and touch.checked == fade_trl.TRL_CHECKED
    target = ledger.resolve(touch)
    if touch.kind == "override":
        assert _params(target) == touch.params
    elif touch.kind == "call":
        assert set(touch.params) <= set(_params(target))


# -- the ledger is complete ------------------------------------------------------------------------------

#: The function that makes fade's replacement from verl's, for every ``wrap`` entry.
WRAPPERS = {
    "verl.models.transformers.monkey_patch.is_trl_available": patches._value_head_checked,
    "verl.trainer.ppo.v1.trainer_base.compute_advantage_for_multi_trajectories": trainer.session_advantages,
    "verl.utils.distributed.initialize_global_process_group_ray": gloo_process_group,
    "verl.utils.device.auto_set_device": cpu_auto_set_device,
}


def test_every_wrapper_takes_exactly_the_parameters_of_verls_function():
    wraps = {t.where: t for t in patches.PATCHES if t.kind == "wrap"}
    assert set(wraps) == set(WRAPPERS)
    for where, make in WRAPPERS.items():
        touch = wraps[where]
        verl_fn = patches.verl_original(touch.module, touch.attribute)
        assert verl_fn.__module__.startswith("verl."), where
        assert _params(make(verl_fn)) == touch.params == _params(verl_fn), where


def test_the_plug_in_installed_fades_wrappers_over_verls_own_functions():
    from verl.models.transformers import monkey_patch
    from verl.trainer.ppo.v1 import trainer_base
    from verl.utils import import_utils

    assert monkey_patch.is_trl_available.__module__ == patches.__name__
    assert patches.verl_original("verl.models.transformers.monkey_patch", "is_trl_available") is (
        import_utils.is_trl_available
    )
    assert trainer_base.compute_advantage_for_multi_trajectories.__module__ == trainer.__name__


def test_patching_again_wraps_verls_function_not_fades(monkeypatch):
    from verl.models.transformers import monkey_patch
    from verl.utils import import_utils

    monkeypatch.setattr(monkey_patch, "is_trl_available", monkey_patch.is_trl_available)
    patches.guard_value_head()
    patches.guard_value_head()
    assert patches.verl_original("verl.models.transformers.monkey_patch", "is_trl_available") is (
        import_utils.is_trl_available
    )
    assert monkey_patch.is_trl_available() == (import_utils.is_trl_available() and patches.trl_has_value_head())


def _private_overrides(cls, base) -> set[str]:
    return {name for name, value in vars(cls).items()
            if inspect.isfunction(value) and name.startswith("_") and not name.startswith("__") and hasattr(base, name)}


@pytest.mark.skipif(fv._TRAINER_MISSING is not None, reason=str(fv._TRAINER_MISSING))
def test_fade_trainer_overrides_exactly_the_methods_in_the_ledger():
    from verl.trainer.ppo.v1 import PPOTrainerSync

    listed = {t.attribute.split(".", 1)[1] for t in patches.OVERRIDES if t.kind == "override"}
    assert _private_overrides(fv.FadeTrainer, PPOTrainerSync) == listed - {"__init__"}
    assert "__init__" in vars(fv.FadeTrainer)


def test_fade_grpo_trainer_overrides_exactly_the_methods_in_the_ledger():
    listed = {t.attribute.split(".", 1)[1] for t in fade_trl.PRIVATE if t.kind == "override"}
    assert _private_overrides(fade_trl.FadeGRPOTrainer, GRPOTrainer) == listed


def _engine_names(tree: ast.Module) -> set[str]:
    """Names a module binds to something imported from verl or TRL."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names if a.name.split(".")[0] in ("verl", "trl")}
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in ("verl", "trl"):
            names |= {a.asname or a.name for a in node.names}
    return names


def _base(node: ast.expr) -> ast.expr:
    while isinstance(node, ast.Attribute | ast.Subscript):
        node = node.value
    return node


def test_no_module_but_the_ledgers_rebinds_or_writes_an_engines_global():
    """Assignments to an attribute or an item of something imported from verl or TRL, a registry's
    item, a module found in ``sys.modules``, or a ``setattr`` on any of them: patches.py only."""
    offenders = []
    for path in sorted(INTEGRATIONS.rglob("*.py")):
        if path.relative_to(INTEGRATIONS).as_posix() in ("verl/patches.py", "ledger.py"):
            continue
        tree = ast.parse(path.read_text())
        engine = _engine_names(tree)
        for node in ast.walk(tree):
            targets = []
            if isinstance(node, ast.Assign):
                targets = node.targets
            elif isinstance(node, ast.AugAssign | ast.AnnAssign):
                targets = [node.target]
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "setattr":
                targets = [ast.Attribute(value=node.args[0], attr="?")]
            for target in targets:
                if not isinstance(target, ast.Attribute | ast.Subscript):
                    continue
                base, text = _base(target), ast.unparse(target)
                if (isinstance(base, ast.Name) and base.id in engine) or "REGISTRY" in text or "sys.modules" in text:
                    offenders.append(f"{path.relative_to(INTEGRATIONS)}:{node.lineno}: {text}")
    assert offenders == []


def test_trls_completion_log_is_rewritten_only_through_the_adapter():
    tree = ast.parse(Path(fade_trl.__file__).read_text())
    uses = []
    for fn in ast.walk(tree):
        if isinstance(fn, ast.FunctionDef):
            uses += [fn.name for node in ast.walk(fn) if (isinstance(node, ast.Attribute) and node.attr == "_logs")
                     or getattr(node, "value", None) == "_logs"]
    assert uses and set(uses) == {"replace_logged_advantages"}


# -- one line when verl changed ----------------------------------------------------------------------------


def test_patch_on_a_missing_attribute_names_verls_version_the_module_and_the_attribute(monkeypatch):
    from verl.utils import distributed

    monkeypatch.setattr(patches, "_ORIGINALS", {})
    monkeypatch.delattr(distributed, "initialize_global_process_group_ray")
    with pytest.raises(ledger.EngineMismatch) as info:
        patches.patch("verl.utils.distributed", "initialize_global_process_group_ray", gloo_process_group)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(f"verl {ledger.installed_version('verl')}: verl.utils.distributed."
                              "initialize_global_process_group_ray is missing")
    assert f"checked against verl {patches.VERL_CHECKED}" in message


def test_patch_on_a_changed_signature_says_what_verl_takes_now(monkeypatch):
    from verl.utils import device

    def auto_set_device(config, strict):
        return None

    monkeypatch.setattr(patches, "_ORIGINALS", {})
    monkeypatch.setattr(device, "auto_set_device", auto_set_device)
    with pytest.raises(ledger.EngineMismatch, match=r"^verl \S+: verl\.utils\.device\.auto_set_device takes "
                                                    r"\(config, strict\), not \(config\);"):
        patches.patch("verl.utils.device", "auto_set_device", cpu_auto_set_device)
    assert device.auto_set_device is auto_set_device  # nothing was changed


def test_a_missing_module_and_a_missing_method_are_one_line_too():
    gone = ledger.Touch("verl", "verl.no_such_module", "f", "wrap", "x", "y", (), "0.9.1")
    with pytest.raises(ledger.EngineMismatch, match=r"^verl \S+: verl\.no_such_module\.f cannot be imported"):
        ledger.resolve(gone)
    method = ledger.Touch("verl", "verl.trainer.ppo.v1", "PPOTrainerSync._no_such_step", "override", "x", "y", ())
    with pytest.raises(ledger.EngineMismatch, match=r"PPOTrainerSync\._no_such_step is missing"):
        ledger.resolve(method)
    attribute = ledger.Touch("verl", patches._TRAINER_BASE, "PPOTrainer.no_such_field", "attribute", "x", "y")
    with pytest.raises(ledger.EngineMismatch, match=r"never sets self\.no_such_field"):
        ledger.resolve(attribute)


def test_patch_refuses_a_target_outside_the_ledger_and_a_registry_write_without_its_key():
    with pytest.raises(ValueError, match=r"^verl\.utils\.device\.get_device_name is not in fade's ledger"):
        patches.patch("verl.utils.device", "get_device_name", lambda: "cpu")
    with pytest.raises(ValueError, match=r"ADV_ESTIMATOR_REGISTRY is a registry: patch\(\) needs the key"):
        patches.patch("verl.trainer.ppo.core_algos", "ADV_ESTIMATOR_REGISTRY", print)


def test_a_ledger_entry_of_an_unknown_kind_is_refused():
    with pytest.raises(ValueError, match=r"kind must be one of wrap, value, .*got 'rebind'"):
        ledger.Touch("verl", "verl.utils.device", "auto_set_device", "rebind", "x", "y")


# -- TRL's completion table ---------------------------------------------------------------------------------


def test_trls_grpo_trainer_keeps_its_logged_advantages_in_a_deque_of_the_generation_batch(tiny_model, tmp_path):
    from fade.testbed.policy import load_policy
    from fade.testbed.tasks import get_task
    from fade.testbed.trl_task import prompt_dataset

    torch.manual_seed(0)
    model, tokenizer = load_policy(tiny_model)
    problems = get_task("arithmetic").problems("train", n=8, seed=0)
    args = GRPOConfig(output_dir=str(tmp_path), per_device_train_batch_size=8, num_generations=4,
                      max_completion_length=4, max_steps=1, use_cpu=True, bf16=False, report_to="none",
                      save_strategy="no", disable_tqdm=True)
    stock = GRPOTrainer(model=model, reward_funcs=[lambda completions, **_: [0.0] * len(completions)], args=args,
                        train_dataset=prompt_dataset(problems, tokenizer.bos_token), processing_class=tokenizer)
    logged = stock._logs["advantages"]
    assert isinstance(logged, deque) and logged.maxlen == args.generation_batch_size
    logged.extend([9.0, 1.0, 2.0, 3.0])  # an earlier batch's last entry, then TRL's three
    fade_trl.replace_logged_advantages(stock, 3, [0.5, -0.5, 0.0])
    assert list(stock._logs["advantages"]) == [9.0, 0.5, -0.5, 0.0]


def test_the_adapter_names_trls_version_when_the_log_is_gone():
    class NoLogs:
        _logs: dict = {}

    with pytest.raises(ledger.EngineMismatch, match=r"^trl \S+: trl\.GRPOTrainer\._logs has no \['advantages'\]"):
        fade_trl.replace_logged_advantages(NoLogs(), 1, [0.0])


def test_verl_cpu_never_imports_the_plug_in():
    """One direction: the plug-in imports verl_cpu's modules to put them in verl, never the reverse."""
    imported = set()
    for path in (INTEGRATIONS / "verl_cpu").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                imported.add(node.module)
            elif isinstance(node, ast.Import):
                imported |= {a.name for a in node.names}
    assert "fade.integrations.verl_cpu.platform" in imported
    assert not {m for m in imported if m == "fade.integrations.verl" or m.startswith("fade.integrations.verl.")}
