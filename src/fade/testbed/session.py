"""A testbed run's pieces and its state on disk, for :mod:`fade.testbed.trainer`.

:func:`prepare` builds what every step reads (:class:`Setup`) and checks everything that can be
refused before the run's folder is created or touched; on resume it restores the model,
optimizer, estimator, entropy term and RNG states from the checkpoint, and applies the resume
rule (:func:`resume_changes`: only :data:`~fade.testbed.config.RESUME_MAY_CHANGE` may differ).
:func:`open_logs` makes the folder and its logs, and :func:`save_state` writes the state the
next step depends on, atomically. The per-step randomness comes from :func:`generator`, seeded
by (seed, stream).
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import json
import random
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

import fade
from fade import losses
from fade.atomic import remove_orphaned_temp_files, write_json_atomic
from fade.mass import carries_signal

from .checkpoint import JsonlLog, load_checkpoint, save_checkpoint
from .config import LOSS_AGG_ALIASES, POOL_SEED, PREDATES, RESUME_MAY_CHANGE, TrainConfig
from .policy import load_policy, resolve_device
from .runlog import COMPRESSED, CONFIG_FILE, EVAL_FILE, METRICS_FILE
from .tasks import Problem, Task, get_task, select_difficulties

__all__ = [
    "CHECKPOINT",
    "CODE_MODULES",
    "RESUMES_FILE",
    "RUN_FILE",
    "Logs",
    "Setup",
    "base_model_dir",
    "code_version",
    "generator",
    "load_task",
    "open_logs",
    "output_head",
    "prepare",
    "resume_changes",
    "save_state",
    "seed_for",
    "training_pool",
]

CHECKPOINT = "checkpoint.pt"
RUN_FILE, RESUMES_FILE = CONFIG_FILE, "resumes.jsonl"


#: The modules whose code decides which tokens a seed draws and how the policy moves on them: the
#: testbed's sampling, policy pass, update and step loop, and the advantage and loss code they call.
CODE_MODULES: tuple[str, ...] = (
    "fade.testbed.sampling", "fade.testbed.policy", "fade.testbed.update", "fade.testbed.trainer",
    "fade.testbed.session", "fade.estimators", "fade.adaptive", "fade.losses",
)


def code_version() -> str:
    """A short hash of the training code (:data:`CODE_MODULES`) and torch's version: equal for two
    checkouts whose runs draw and update alike. Each module is hashed as its syntax tree without
    docstrings, so an edit to comments, docstrings or layout keeps the version and any code edit
    changes it."""
    import ast
    import importlib

    digest = hashlib.sha256(torch.__version__.encode())
    for name in CODE_MODULES:
        source = Path(importlib.import_module(name).__file__).read_text(encoding="utf-8")
        tree = ast.parse(source)
        for node in ast.walk(tree):
            body = getattr(node, "body", None)
            if (isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and body
                    and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
                    and isinstance(body[0].value.value, str)):
                node.body = body[1:] or [ast.Pass()]
        digest.update(name.encode() + b"\0" + ast.dump(tree).encode() + b"\0")
    return digest.hexdigest()[:16]


def base_model_dir(task: str) -> Path:
    """The base policy shipped for a built-in task (written by ``fade pretrain``)."""
    return Path(__file__).parent / "base" / task


def _as_json(value: Any) -> Any:
    return json.loads(json.dumps(value))  # tuples become lists, as in run.json


def _show(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def resume_changes(
    saved: dict[str, Any], config: TrainConfig, step: int, where: str | Path
) -> dict[str, tuple[Any, Any]]:
    """The settings ``config`` changes from a checkpoint's ``saved`` config, as {key: (old, new)}.

    Raises ValueError naming every change outside :data:`RESUME_MAY_CHANGE`, and a ``steps``
    below the checkpoint's ``step``. A setting the checkpoint predates reads as what runs did before
    it existed (:data:`~fade.testbed.config.PREDATES`), else as its default.
    """
    now = _as_json(dataclasses.asdict(config))
    fields = {f.name: f for f in dataclasses.fields(TrainConfig)}
    defaults = {
        name: f.default if f.default is not dataclasses.MISSING else f.default_factory()  # type: ignore[misc]
        for name, f in fields.items()
        if f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
    }
    before = _as_json({k: saved.get(k, PREDATES.get(k, defaults.get(k))) for k in now})
    for values in (before, now):  # an old name of a loss aggregation is the same setting as the new
        values["loss_agg"] = LOSS_AGG_ALIASES.get(values["loss_agg"], values["loss_agg"])
    changed = {k: (before[k], now[k]) for k in now if before[k] != now[k]}
    refused = [k for k in changed if k not in RESUME_MAY_CHANGE]
    if refused:
        shown = ", ".join(f"{k}: {_show(changed[k][0])} -> {_show(changed[k][1])}" for k in refused)
        raise ValueError(
            f"--resume: {where} was trained with other settings ({shown}); resuming would splice two different "
            f"runs: rerun with the checkpoint's values or choose another --out (only {', '.join(RESUME_MAY_CHANGE)} "
            "may change on resume)"
        )
    if config.steps < step:
        raise ValueError(f"--resume: --steps {config.steps} is below the checkpoint's step {step} in {where}: "
                         f"pass --steps {step} or more")
    return changed


def _check_finite(state: dict[str, Any], where: Path) -> None:
    bad = [name for name, t in state["model"].items() if t.is_floating_point() and not bool(torch.isfinite(t).all())]
    if bad:
        more = f" and {len(bad) - 3} more" if len(bad) > 3 else ""
        raise ValueError(
            f"{where}: the model saved at step {state['step']} holds NaN or inf (in {', '.join(bad[:3])}{more}): the "
            "run diverged before this checkpoint and cannot be resumed from it; start a new run (a lower --lr)"
        )


def _remove_orphans(out: Path) -> None:
    """Delete what a kill mid-write left in the run's folder: the atomic writer's temporary files
    of the run's own files, and save_policy's staging folders (``.policy.tmp-*``)."""
    logs = (METRICS_FILE, EVAL_FILE)  # the plain names too: a resume converting a run from before writes them
    remove_orphaned_temp_files(out, (CHECKPOINT, RUN_FILE, *logs, *(name + COMPRESSED for name in logs)))
    for entry in out.glob(".policy.tmp-*"):
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)


def _check_learns(est: fade.Estimator, config: TrainConfig) -> None:
    """Refuse a setting under which every advantage of every batch is 0, so the run would learn nothing."""
    spec = fade.format_spec(est.name, config.estimator_args)
    if carries_signal(est, config.group_size):  # an estimator that cannot take groups this size raises here
        return
    if config.group_size == 1:
        raise ValueError(
            f"--group-size 1 gives every rollout of {spec} an advantage of 0 (one completion per prompt has no other "
            "to compare with): the run would train nothing; use --group-size 2 or more"
        )
    raise ValueError(
        f"{spec} gives every rollout an advantage of 0 at --group-size {config.group_size}, whatever the rewards: the "
        "run would train nothing; use a larger --group-size or other estimator parameters"
    )


def seed_for(seed: int, stream: int | str) -> int:
    """A 63-bit seed for one random stream of a run (a step, a draw, the evaluation), from sha256."""
    digest = hashlib.sha256(f"{seed}:{stream}".encode()).digest()
    return int.from_bytes(digest[:8], "little") & ((1 << 63) - 1)


def generator(device: torch.device, seed: int, stream: int | str) -> torch.Generator:
    """A generator on ``device`` seeded with :func:`seed_for` (seed, stream)."""
    return torch.Generator(device=device).manual_seed(seed_for(seed, stream))


def load_task(config: TrainConfig) -> Task:
    """The run's task: a built-in one by name, or a problem file (``--data``) with its verifier."""
    if config.data is not None:
        from .datasets import FileTask  # local: only --data runs need it

        return FileTask(config.data, verifier=config.verifier)
    return get_task(config.task)


def training_pool(task: Task, config: TrainConfig) -> list[Problem] | None:
    """The fixed pool of ``train_pool`` problems the run trains on, or None (the whole train split).

    The pool is drawn once from the train split, within ``difficulties``, as any draw is
    (stratified over the buckets) but with the fixed seed :data:`~fade.testbed.config.POOL_SEED`,
    so that every run seed trains on the same problems. A pool the split cannot fill with distinct
    problems is refused.
    """
    n = config.train_pool
    if n is None:
        return None
    pool = task.problems("train", n=n, seed=POOL_SEED, difficulties=config.difficulties)
    if len({p.id for p in pool}) != n:
        within = "" if config.difficulties is None else f" within difficulties {config.difficulties}"
        raise ValueError(
            f"--train-pool {n}: the train split of {task.name!r}{within} cannot give {n} distinct problems (a "
            "difficulty bucket holds fewer than its share of the stratified draw); use a smaller pool"
        )
    return pool


def output_head(model: torch.nn.Module) -> torch.Tensor:
    """The policy's output embedding matrix (whose drift from the start gives the rank-1 share)."""
    return model.get_output_embeddings().weight


def _optimizer(model: torch.nn.Module, config: TrainConfig) -> torch.optim.Optimizer:
    if config.optimizer == "sgd":
        # A plain step, theta -= lr * grad (plus lr * weight_decay * theta when asked).
        return torch.optim.SGD(model.parameters(), lr=config.lr, momentum=0.0, dampening=0.0,
                               weight_decay=config.weight_decay, nesterov=False)
    return torch.optim.AdamW(
        model.parameters(), lr=config.lr, weight_decay=config.weight_decay,
        betas=(config.adam_beta1, config.adam_beta2), eps=config.adam_eps,
    )


@dataclass
class Setup:
    """The pieces of a run that every step reads, built once by :func:`prepare`."""

    config: TrainConfig
    out: Path
    device: torch.device
    task: Task
    model: torch.nn.Module
    tokenizer: Any
    eos_id: int
    pad_id: int
    max_new: int
    est: fade.Estimator
    #: The fixed pool of training problems each step draws from (``train_pool``); None: the split.
    pool: list[Problem] | None
    loss: losses.PolicyLoss
    entropy: losses.EntropyTerm | None
    optimizer: torch.optim.Optimizer
    ref_model: torch.nn.Module | None
    head0: torch.Tensor


def prepare(config: TrainConfig, resume: bool) -> tuple[Setup, int, dict[str, tuple[Any, Any]]]:
    """The run's pieces, restored from the checkpoint on resume; the step to start after; the
    settings the resume changes. Everything that can be refused is checked before the run's
    folder is created or touched."""
    config.validate()
    out = Path(config.out)
    ckpt_path = out / CHECKPOINT
    if ckpt_path.exists() and not resume:
        raise ValueError(
            f"{out} already holds a run (found {CHECKPOINT}): pass --resume to continue it or choose another --out"
        )
    if resume and not ckpt_path.exists():
        raise ValueError(f"--resume: no {CHECKPOINT} in {out} to resume from")
    est = fade.estimator(config.estimator, **config.estimator_args)
    _check_learns(est, config)
    device = resolve_device(config.device)
    task = load_task(config)
    if config.data is not None:  # a built-in task's buckets were checked by config.validate()
        select_difficulties(task.name, task.difficulties, config.difficulties)
    pool = training_pool(task, config)
    model_dir = Path(config.model) if config.model else base_model_dir(task.base or config.task)
    if config.model is None and not (model_dir / "config.json").is_file():
        raise ValueError(
            f"no base policy is shipped for task {config.task!r}: write one with "
            f"`fade pretrain --task {config.task} --out DIR` and pass --model DIR"
        )
    state, start, changes = None, 0, {}
    if resume:
        state = load_checkpoint(ckpt_path, map_location=device)
        start = int(state["step"])
        changes = resume_changes(state.get("config") or {}, config, start, out)
        _check_finite(state, ckpt_path)
    model, tokenizer = load_policy(model_dir, device=device)
    if tokenizer is None:
        raise ValueError(f"{model_dir} holds no tokenizer: the trainer needs one to encode prompts and decode answers")
    eos_id = tokenizer.eos_token_id
    if config.max_new_tokens is not None:
        max_new = config.max_new_tokens
    else:
        max_new = task.max_answer_chars + 1 if config.model is None else max(task.max_answer_chars * 4, 16)
    setup = Setup(
        config=config, out=out, device=device, task=task, model=model, tokenizer=tokenizer, eos_id=eos_id,
        pad_id=tokenizer.pad_token_id if tokenizer.pad_token_id is not None else eos_id, max_new=max_new, est=est,
        pool=pool, loss=config.build_policy_loss(), entropy=config.build_entropy_term(),
        optimizer=_optimizer(model, config),
        ref_model=copy.deepcopy(model).eval().requires_grad_(False) if config.kl_coef > 0 else None,
        head0=output_head(model).detach().clone(),
    )
    if state is not None:
        model.load_state_dict(state["model"])
        setup.optimizer.load_state_dict(state["optimizer"])
        est.load_state_dict(state["estimator"])
        if setup.entropy is not None and state.get("entropy"):  # a checkpoint from before the term: its initial state
            setup.entropy.load_state_dict(state["entropy"])
        setup.head0 = state["head0"].to(device)
        _set_rng_states(state["rng"])
    return setup, start, changes


@dataclass
class Logs:
    """The run's per-step logs (compressed) and its record of resumes."""

    metrics: JsonlLog
    evals: JsonlLog
    resumes: JsonlLog


def open_logs(setup: Setup, start: int, resume: bool, changes: dict[str, tuple[Any, Any]]) -> Logs:
    """Make the run's folder and its logs: on resume the records past the checkpoint's step are
    dropped (the resumed run writes them again) and the resume is recorded; a new run starts
    them empty."""
    out = setup.out
    out.mkdir(parents=True, exist_ok=True)
    _remove_orphans(out)
    logs = Logs(JsonlLog(out / (METRICS_FILE + COMPRESSED)), JsonlLog(out / (EVAL_FILE + COMPRESSED)),
                JsonlLog(out / RESUMES_FILE))
    if resume:
        logs.metrics.truncate_after(start)
        logs.evals.truncate_after(start)
        logs.resumes.append({"step": start, "changed": {k: list(v) for k, v in changes.items() if k != "progress"}})
    else:
        for log in (logs.metrics, logs.evals, logs.resumes):
            log.remove()
    write_json_atomic(out / RUN_FILE, dataclasses.asdict(setup.config))
    return logs


def save_state(setup: Setup, step: int) -> None:
    """Save everything the next step depends on, atomically (see the module docstring)."""
    save_checkpoint(setup.out / CHECKPOINT, {
        "step": step,
        "model": setup.model.state_dict(),
        "optimizer": setup.optimizer.state_dict(),
        "estimator": setup.est.state_dict(),
        "entropy": setup.entropy.state_dict() if setup.entropy is not None else {},
        "head0": setup.head0,
        "rng": _rng_states(),
        "config": dataclasses.asdict(setup.config),
    })


def _rng_states() -> dict[str, Any]:
    """The global generators' states. Training draws from generators seeded by (seed, step), so
    these only matter to code outside the loop that uses the globals; they are kept anyway."""
    name, key, pos, has_gauss, cached = np.random.get_state()
    state = {
        "torch": torch.get_rng_state(),
        "python": random.getstate(),
        "numpy": [name, torch.from_numpy(key.astype(np.int64)), int(pos), int(has_gauss), float(cached)],
    }
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def _set_rng_states(state: dict[str, Any]) -> None:
    torch.set_rng_state(state["torch"])
    random.setstate(state["python"])
    name, key, pos, has_gauss, cached = state["numpy"]
    np.random.set_state((name, key.numpy().astype(np.uint32), pos, has_gauss, cached))
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])
