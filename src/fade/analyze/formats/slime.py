"""slime's rollout dump (``--save-debug-rollout-data``, or ``--dump-details DIR``: ``DIR/rollout_data/{id}.pt``).

One file per rollout (slime's training step), written by ``torch.save`` as ``{"rollout_id",
"samples": [Sample.to_dict(), ...]}``; an evaluation writes ``eval_{id}.pt`` beside them, which is not
read. A sample's ``group_index`` is its prompt's group (slime's data source numbers each prompt's
``n_samples_per_prompt`` copies alike), its ``reward`` the number slime trains on, or a dict of
rewards from which slime takes ``reward[--reward-key]`` (``--reward-column KEY`` names it here).
Samples of one rollout split into several (slime's agent trajectories set one ``rollout_id`` on
every part, each with the rollout's reward) are one rollout here.

The files are loaded with ``torch.load(weights_only=True)`` only, never unpickled otherwise: a file
holding an object that loader refuses (a class instance, an enum, a numpy value, a PIL image) is
refused in one line. ``Sample.to_dict`` stores ``status`` as its text value and the rest as plain
numbers, text, lists, dicts and tensors, which it loads; a multimodal run's ``multimodal_inputs``
(PIL images), or a ``metadata`` or ``reward`` holding numpy values or other objects, cannot be read.
A reward that is a 0-d tensor is the number it holds: slime keeps ``Sample.reward`` as it is
(``get_reward_value``) and builds its rewards with ``torch.tensor(raw_rewards)``
(slime/ray/rollout.py:612-618), which reads a 0-d tensor so; any other tensor is refused.
"""

from __future__ import annotations

import io
import json
import math
import os
import pickletools
import re
import warnings
import zipfile
from pathlib import Path

import numpy as np

from ..columns import INT64_MAX, INT64_MIN, shown
from ..records import DumpError, RunRecords, StepBatch, dense_ids
from .base import Format, ReadOptions, name_step, not_unicode, one_per_step, step_files

__all__ = ["FORMAT"]

#: ``{prefix}{rollout_id}.pt``, an evaluation's ``{prefix}eval_{rollout_id}.pt`` (slime formats one template with both).
_PT_FILE = re.compile(r"^(?P<prefix>.*?)(?P<eval>eval_)?(?P<id>\d+)\.pt$")
#: ``Sample.Status`` values (slime/utils/types.py), which ``to_dict`` writes as text.
STATUSES = ("pending", "completed", "truncated", "aborted", "failed")
_FIELDS = "group_index, index, prompt, reward, status"
_UNSUPPORTED = re.compile(r"Unsupported global: GLOBAL (\S+)")
_OPERAND = re.compile(r"Unsupported operand (\d+)")
#: What a pickle opcode torch's weights-only loader refuses stands for, where a hand could write it.
_OPCODES = {"LONG4": "an integer of more than 255 bytes"}
_EXPECTED = "expected slime's torch.save of {rollout_id, samples}"


def _pt_files(where: Path) -> tuple[list[tuple[int, Path]], list[Path]]:
    """The training files of a folder by rollout id, and its evaluation files; files of two templates refused."""
    named = [(m, p) for p in sorted(where.iterdir()) if p.is_file() and (m := _PT_FILE.match(p.name))]
    prefixes = {m.group("prefix"): p for m, p in named}
    if len(prefixes) > 1:
        (a, first), (b, second) = list(prefixes.items())[:2]
        raise DumpError(f"{where}: {first.name} and {second.name} are files of two templates ({a!r}, {b!r}): expected "
                        "one run's {prefix}{rollout_id}.pt files")
    train = sorted((name_step(m.group("id"), p, "rollout_id"), p) for m, p in named if not m.group("eval"))
    return one_per_step(train, where), [p for m, p in named if m.group("eval")]


def _load(path: Path) -> object:
    """``path`` as torch's weights-only loader reads it: plain values and tensors, nothing else unpickled.

    The file is read once, to the size it had when opened, and every check and the loader see those
    bytes. torch.save writes a zip archive front to back, its directory last: an empty file, or a
    zip's start without its directory, is a file still being written (:class:`_Unfinished`); a file
    that does not start as a zip is no torch file, however new."""
    import torch

    with open(path, "rb") as f:
        data = f.read(os.fstat(f.fileno()).st_size)
    if not data:
        raise _Unfinished("empty")
    if not data.startswith(b"PK\x03\x04"):
        what = ("a Python pickle (pickle.dump's, or torch.save's before its zip format)" if data[:1] == b"\x80"
                else f"it starts with {data[:8]!r}")
        raise DumpError(f"{path}: not a torch file ({what}; torch.save writes a zip archive): {_EXPECTED}")
    if not zipfile.is_zipfile(io.BytesIO(data)) and b"PK\x05\x06" not in data:  # no end-of-directory record
        raise _Unfinished("not a complete torch file (no zip directory at its end: cut short)")
    try:
        return torch.load(io.BytesIO(data), weights_only=True, map_location="cpu")
    except Exception as exc:  # the loader's errors are of many types; each becomes one line naming the file
        text = " ".join(str(exc).split())
        if "Weights only load failed" in text:
            raise DumpError(f"{path}: holds {_refused(text)}, which torch's weights-only loader refuses: not "
                            "unpickled; expected slime's rollout dump of plain values (numbers, text, lists, dicts, "
                            "tensors)") from None
        raise DumpError(f"{path}: not a readable torch file ({type(exc).__name__}: {text[:120]}): "
                        f"{_EXPECTED}") from None


def _refused(text: str) -> str:
    """What the weights-only loader's message ``text`` says it refused: a global, or a pickle opcode."""
    if m := _UNSUPPORTED.search(text):
        return m.group(1)
    if m := _OPERAND.search(text):
        op = pickletools.code2op.get(chr(int(m.group(1))))
        if op is None:
            return f"byte {m.group(1)}, no pickle opcode (a damaged file)"
        return f"pickle opcode {op.name}" + (f" ({_OPCODES[op.name]})" if op.name in _OPCODES else "")
    return text.split("WeightsUnpickler error:", 1)[-1].strip()[:120]


class _Unfinished(DumpError):
    """A file whose end is missing (its message says how): a live run's newest file may be one."""


def _int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and INT64_MIN <= value <= INT64_MAX


def _number(value: object) -> float | None:
    """``value``'s finite float value: an integer, a float, or a 0-d tensor of either (as slime's
    ``torch.tensor(raw_rewards)`` reads it); None for anything else."""
    import torch

    if isinstance(value, torch.Tensor):
        if value.dim() != 0 or value.dtype == torch.bool or value.is_complex():
            return None
        try:
            value = value.item()
        except RuntimeError:  # a tensor without data (the meta device)
            return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None


def _reward(where: str, value: object, key: str | None) -> float:
    """The reward slime trains on: ``reward``, or ``reward[key]`` (its ``get_reward_value``)."""
    if isinstance(value, dict):
        if key is None:
            raise DumpError(f"{where}: reward is a dict (keys {', '.join(map(shown, list(value)[:5]))}): expected a "
                            "number; slime trains on reward[--reward-key]: give it as --reward-column KEY")
        if key not in value:
            raise DumpError(f"{where}: reward has no {key!r} (keys {', '.join(map(shown, list(value)[:5]))}): expected "
                            "the --reward-column key in every sample's reward")
        number = _number(value[key])
        if number is None:
            raise DumpError(f"{where}: reward[{key!r}] is {shown(value[key])}: expected a finite number")
        return number
    if key is not None:
        raise DumpError(f"{where}: reward is {shown(value)}, not a dict: expected a dict holding --reward-column "
                        f"{key!r} (slime indexes the reward only with --reward-key)")
    number = _number(value)
    if number is None:
        raise DumpError(f"{where}: reward is {shown(value)}: expected a finite number")
    return number


def _prompt_key(where: str, value: object) -> str:
    """A sample's prompt as a key: its text, or its messages as JSON."""
    if isinstance(value, str):
        if problem := not_unicode(value):
            raise DumpError(f"{where}: prompt holds {problem}: expected Unicode text")
        return value
    if isinstance(value, list):
        try:
            return json.dumps(value, sort_keys=True, default=repr)
        except RecursionError:
            raise DumpError(f"{where}: prompt is a list nested too deep to read: expected text or a list of "
                            "messages") from None
        except (TypeError, ValueError):  # keys of two types, which sort_keys cannot order; a list holding itself
            pass
    raise DumpError(f"{where}: prompt is {shown(value)}: expected text or a list of messages")


def _read_file(path: Path, step: int | None, key: str | None, merged: list[int]) -> StepBatch:
    data = _load(path)
    if not isinstance(data, dict) or "samples" not in data or "rollout_id" not in data:
        keys = ", ".join(map(shown, list(data)[:5])) if isinstance(data, dict) else type(data).__name__
        raise DumpError(f"{path}: holds {keys}: expected slime's rollout dump, a dict of rollout_id and samples")
    rollout_id, samples = data["rollout_id"], data["samples"]
    if not _int(rollout_id):
        raise DumpError(f"{path}: rollout_id is {shown(rollout_id)}: expected an integer within int64")
    if step is not None and rollout_id != step:
        raise DumpError(f"{path}: rollout_id {rollout_id}: expected {step}, as the file name says")
    if not isinstance(samples, list) or not samples:
        raise DumpError(f"{path}: samples is {shown(samples)}: expected a non-empty list of Sample.to_dict()")
    rewards: list[float] = []
    owners: list[int] = []
    prompts: dict[int, str] = {}
    rollouts: dict[int, tuple[int, int, float]] = {}  # rollout_id -> (sample number, group_index, reward)
    indices: dict[int, int] = {}  # index of a sample without rollout_id -> its sample number
    for n, sample in enumerate(samples, start=1):
        where = f"{path}: sample {n}"
        if not isinstance(sample, dict):
            raise DumpError(f"{where} is a {type(sample).__name__}: expected slime's Sample.to_dict() ({_FIELDS})")
        for name in ("group_index", "index", "prompt", "reward", "status"):
            if name not in sample:
                raise DumpError(f"{where}: no {name!r}: expected slime's Sample.to_dict() ({_FIELDS})")
        group, index, rid = sample["group_index"], sample["index"], sample.get("rollout_id")
        for name, value in (("group_index", group), ("index", index)):
            if not _int(value):
                raise DumpError(f"{where}: {name} is {shown(value)}: expected an integer within int64 (slime's data "
                                "source numbers every sample and group)")
        if rid is not None and not _int(rid):
            raise DumpError(f"{where}: rollout_id is {shown(rid)}: expected an integer within int64, or None")
        if not isinstance(sample["status"], str) or sample["status"] not in STATUSES:
            raise DumpError(f"{where}: status is {shown(sample['status'])}: expected one of {', '.join(STATUSES)} "
                            "(Sample.Status's values, as to_dict writes them)")
        prompt = _prompt_key(where, sample["prompt"])
        reward = _reward(where, sample["reward"], key)
        if rid is not None:
            if rid in rollouts:
                first, first_group, first_reward = rollouts[rid]
                if (first_group, first_reward) != (group, reward):
                    raise DumpError(f"{where}: rollout_id {rid} with group_index {group} and reward {reward:g}, and "
                                    f"sample {first} with group_index {first_group} and reward {first_reward:g}: "
                                    "expected the parts of one rollout in one group with one reward")
                merged[0] += 1
                continue
            rollouts[rid] = (n, group, reward)
        else:
            if index in indices:
                raise DumpError(f"{where}: index {index} again (also sample {indices[index]}): expected each sample "
                                "once")
            indices[index] = n
        rewards.append(reward)
        owners.append(group)
        prompts.setdefault(group, prompt)
    groups, order = dense_ids(np.asarray(owners, dtype=np.int64))
    return StepBatch(rollout_id, np.asarray(rewards, dtype=np.float64), groups,
                     prompt_keys=[prompts[int(g)] for g in order], source=str(path))


def _read_slime(where: Path, options: ReadOptions, progress) -> RunRecords:
    key = options.reward_column
    if key is not None and ("," in key or not key.strip()):
        raise ValueError(f"--reward-column {key!r}: expected one key of slime's reward dict (its --reward-key)")
    if where.is_file():
        m = _PT_FILE.match(where.name)
        if m and m.group("eval"):
            raise DumpError(f"{where}: an evaluation's file (slime writes eval_{{rollout_id}}): expected a training "
                            "rollout file")
        numbered, evaluation = [(name_step(m.group("id"), where, "rollout_id") if m else None, where)], []
    else:
        numbered, evaluation = _pt_files(where)
        if not numbered:
            raise DumpError(f"{where}: only evaluation files ({evaluation[0].name}): expected slime's training "
                            "{rollout_id}.pt files" if evaluation else f"{where}: no {{rollout_id}}.pt files")
    merged = [0]

    def read(n: int | None, path: Path, newest: bool) -> StepBatch | None:
        try:
            return _read_file(path, n, key, merged)
        except _Unfinished as exc:
            if len(numbered) == 1:
                raise DumpError(f"{path}: {exc} (a file still being written), the run's only rollout: expected at "
                                "least one complete step to read") from None
            if not newest:
                raise DumpError(f"{path}: {exc}: {_EXPECTED} (only the newest file of a live run may be cut "
                                "short)") from None
            warnings.warn(f"{path}: skipped the newest file, not complete (a file still being written)",
                          RuntimeWarning, stacklevel=2)
            return None

    run = RunRecords("slime", str(where), step_files(numbered, read, progress))
    if evaluation:
        run.notes.append(f"{len(evaluation)} evaluation file(s) (eval_{{rollout_id}}.pt) left out: "
                         f"{', '.join(p.name for p in evaluation[:3])}")
    if merged[0]:
        run.notes.append(f"{merged[0]} sample(s) were further parts of a rollout (one rollout_id, one reward): each "
                         "rollout is counted once")
    return run


def _find(folder: Path) -> Path | None:
    where = folder / "rollout_data" if (folder / "rollout_data").is_dir() else folder
    return where if any(p.is_file() and _PT_FILE.match(p.name) for p in where.iterdir()) else None


FORMAT = Format(
    name="slime",
    engine="slime 624b824",
    writer=("slime/observability/rollout_data_utils.py:140-153 (save_debug_rollout_data: the file, eval_)",
            "slime/utils/arguments.py:1890-1892 (--dump-details: rollout_data/{rollout_id}.pt)",
            "slime/utils/types.py:93-227 (Sample and to_dict: status as its value)",
            "slime/rollout/data_source.py:107-118 (group_index, index)",
            "slime/ray/rollout.py:492-505, 583-606 (the flattened samples of a training rollout)",
            "slime/utils/types.py:246-247 (get_reward_value: reward, or reward[--reward-key])",
            "slime/agent/trajectory.py:248-261, 339-340 (the parts of one rollout: one rollout_id, one reward)"),
    layout="slime's rollout_data/{rollout_id}.pt",
    keys="slime's {rollout_id, samples} .pt",
    find=_find,
    claims=lambda path, keys: path.suffix.lower() == ".pt",
    read=_read_slime,
)
