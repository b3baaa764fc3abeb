"""AReaL's trajectory dump (``InferenceEngineConfig.dump_to_file``): ``<log_path>/rollout/<version>/<task_id>.jsonl``.

AReaL writes each finished trajectory of a rollout task into one file named by the task id, in the
folder of the trajectory's newest policy version (the highest weight version that generated any of
its tokens), one line per sample: ``task_id, sample_idx, seqlen, prompt_len, head_version,
tail_version, reward, prompt, completion``. A task is one prompt run ``n_samples`` times and
concatenated (``GroupedRolloutWorkflow``), so a group is a task file's rows. The step is the
version folder: the policy version the rollouts came from, not the training step that consumed
them (an off-policy run trains on a version's rollouts later). Every finished trajectory is
written, those the run's ``should_accept_fn`` rejected included, so the statistics are of what was
generated, before any dynamic filtering. Evaluation goes to ``eval-rollout/`` and is not read.
AReaL's main branch at 4aef98d writes no ``version_rle`` (an open pull request, #1350, adds it, and
makes ``tail_version`` per sample, at most the folder's); it is not read.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from fade import jsonl

from ..columns import INT64_MAX, INT64_MIN, shown
from ..records import DumpError, RunRecords, StepBatch, dense_ids, dump_errors
from .base import Format, ReadOptions, finite_number, first_object, name_step, not_unicode, one_per_step, step_files

__all__ = ["FORMAT"]

_VERSION_DIR = re.compile(r"^(-?\d+)$")
_TASK_FILE = re.compile(r"^(\d+)\.jsonl$")
_FIELDS = "task_id, sample_idx, head_version, tail_version, reward, prompt"
#: What each line of a task file is.
_RECORD = f"AReaL's record ({_FIELDS}), one JSON object per line"
_INTS = ("task_id", "sample_idx", "head_version", "tail_version")


def _versions(where: Path) -> list[tuple[int, Path]]:
    """The version folders of ``where`` that hold task files, by version (two names of one version refused)."""
    found = [(int(m.group(1)), d) for d in where.iterdir()
             if d.is_dir() and (m := _VERSION_DIR.match(d.name)) and any(_TASK_FILE.match(p.name) for p in d.iterdir())]
    return one_per_step(sorted(found), where)


def _task_files(folder: Path) -> list[tuple[int, Path]]:
    found = sorted((name_step(m.group(1), p, "task"), p) for p in folder.iterdir()
                   if p.is_file() and (m := _TASK_FILE.match(p.name)))
    for (a, first), (b, second) in zip(found, found[1:]):
        if a == b:
            raise DumpError(f"{folder}: {first.name} and {second.name} are both task {a}: expected one file per task")
    return found


def _field_problem(name: str, value: object) -> str | None:
    if name in _INTS:
        if isinstance(value, bool) or not isinstance(value, int):
            return "an integer"
        if not INT64_MIN <= value <= INT64_MAX or (name == "sample_idx" and value < 0):
            return "a non-negative integer within int64" if name == "sample_idx" else "an integer within int64"
    elif name == "reward":
        if not finite_number(value):
            return "a finite number"
    elif not isinstance(value, str):
        return "text"
    elif problem := not_unicode(value):
        return f"Unicode text (it holds {problem})"
    return None



def _records(path: Path, data: bytes) -> Iterator[tuple[int, dict]]:
    """(line number, object) for each non-blank line of ``data``, read as it goes: a line that is no
    JSON object, or names a key twice, is refused naming it (:mod:`fade.jsonl`)."""
    with dump_errors():
        yield from jsonl.Lines(path, data).records(_RECORD, unique_keys=True)


def _read_task(path: Path, data: bytes, task: int, version: int) -> tuple[list[float], str] | None:
    """A task file's rewards and prompt text from its ``data`` (read once, each line ending in its
    newline), or None for a file AReaL wrote no row into (every sample had an empty completion)."""
    if not data:
        return None
    rewards: list[float] = []
    prompt = ""
    seen: dict[int, int] = {}
    for lineno, record in _records(path, data):
        for name in ("task_id", "sample_idx", "head_version", "tail_version", "reward", "prompt"):
            if name not in record:
                raise DumpError(f"{path}:{lineno}: no {name!r}: expected AReaL's record ({_FIELDS})")
            problem = _field_problem(name, record[name])
            if problem:
                raise DumpError(f"{path}:{lineno}: {name} is {shown(record[name])}: expected {problem}")
        if record["task_id"] != task:
            raise DumpError(f"{path}:{lineno}: task_id {record['task_id']}: expected {task}, as the file name says")
        if record["tail_version"] > version:
            raise DumpError(f"{path}:{lineno}: tail_version {record['tail_version']}: expected at most {version}, the "
                            "version folder AReaL files the trajectory under (its newest version)")
        if record["head_version"] > record["tail_version"]:
            raise DumpError(f"{path}:{lineno}: head_version {record['head_version']} is above tail_version "
                            f"{record['tail_version']}: expected head <= tail")
        sample = record["sample_idx"]
        if sample in seen:
            raise DumpError(f"{path}:{lineno}: sample_idx {sample} again (also line {seen[sample]}): expected each "
                            "sample of a task once (a run restarted into the same log folder appends to its files)")
        seen[sample] = lineno
        if not rewards:
            prompt = record["prompt"]
        rewards.append(float(record["reward"]))
    if not rewards:
        raise DumpError(f"{path}: no records (blank lines only): expected one JSON object per line")
    return rewards, prompt


def _read_version(version: int, folder: Path, tasks: list[tuple[int, Path]], newest: bool,
                  counts: dict[str, list[str]]) -> StepBatch | None:
    rewards: list[float] = []
    owners: list[int] = []
    prompts: list[str] = []
    for task, path in tasks:
        # read once, to the size it had when opened: the records AReaL appends meanwhile wait for the
        # next analysis, and the check for a last line still being written sees these bytes
        data = jsonl.read_bytes(path)
        if data and not data.endswith(b"\n"):
            if not newest:
                lineno = data.count(b"\n") + 1
                raise DumpError(f"{path}:{lineno}: the last line does not end the file: expected a task file AReaL "
                                "wrote to the end (only the newest version folder of a live run may hold one)")
            counts["unfinished"].append(str(path))
            continue
        read = _read_task(path, data, task, version)
        if read is None:
            counts["empty"].append(str(path))
            continue
        group, prompt = read
        rewards += group
        owners += [task] * len(group)
        prompts.append(prompt)
    if not rewards:
        return None
    groups, _ = dense_ids(np.asarray(owners, dtype=np.int64))
    return StepBatch(version, np.asarray(rewards, dtype=np.float64), groups, prompt_keys=prompts, source=str(folder))


def _read_areal(where: Path, options: ReadOptions, progress) -> RunRecords:
    counts: dict[str, list[str]] = {"unfinished": [], "empty": []}
    if where.is_file():
        version = _file_version(where)
        numbered = [(version, where.parent)]
        tasks = {where.parent: [(_task_id(where), where)]}
    else:
        numbered = _versions(where)
        if not numbered:
            raise DumpError(f"{where}: no <version>/<task_id>.jsonl: expected AReaL's rollout folder")
        tasks = {folder: _task_files(folder) for _, folder in numbered}
    steps = step_files(numbered, lambda n, folder, newest: _read_version(n, folder, tasks[folder], newest, counts),
                       progress)
    if counts["unfinished"] and not steps:
        raise DumpError(f"{counts['unfinished'][0]}: the last line does not end the file (a task still being "
                        "written), and no other task file holds a record: expected at least one complete step to "
                        "read")
    if counts["unfinished"]:
        files = counts["unfinished"]
        warnings.warn(f"{files[0]}: skipped {len(files)} task file(s) still being written in the newest version "
                      f"folder (the last line does not end the file): {', '.join(Path(f).name for f in files[:5])}",
                      RuntimeWarning, stacklevel=2)
    run = RunRecords("areal", str(where), steps)
    run.notes.append("AReaL: a step is a policy version folder (rollout/<version>/, the newest weight version that "
                     "generated a trajectory), not the training step that consumed it; the dump holds every finished "
                     "trajectory, those the run's should_accept_fn rejected included")
    if counts["empty"]:
        run.notes.append(f"{len(counts['empty'])} task file(s) hold no rows (AReaL writes none for a sample with an "
                         f"empty completion): {', '.join(counts['empty'][:3])}")
    evaluation = where.parent / "eval-rollout" if where.is_dir() else None
    if evaluation is not None and evaluation.is_dir():
        run.notes.append(f"the evaluation rollouts in {evaluation} are left out")
    return run


def _task_id(path: Path) -> int:
    m = _TASK_FILE.match(path.name)
    if not m:
        raise DumpError(f"{path}: not named <task_id>.jsonl: expected one of AReaL's task files")
    return name_step(m.group(1), path, "task")


def _file_version(path: Path) -> int:
    """The version of a single task file: its folder's name, as AReaL files it (evaluation refused)."""
    folder = path.parent
    if folder.parent.name == "eval-rollout":
        raise DumpError(f"{path}: an evaluation's task file (under eval-rollout/): expected a training one (rollout/)")
    m = _VERSION_DIR.match(folder.name)
    if not m:
        raise DumpError(f"{path}: in a folder named {folder.name!r}: expected AReaL's "
                        "rollout/<version>/<task_id>.jsonl (the version folder is the step)")
    return _version(folder, int(m.group(1)))


def _version(folder: Path, version: int) -> int:
    if not INT64_MIN <= version <= INT64_MAX:
        raise DumpError(f"{folder}: version {version}: expected an integer within int64")
    return version


def _is_task_folder(folder: Path) -> bool:
    """Whether ``folder``'s first non-empty task file opens with an AReaL record."""
    for path in sorted(folder.iterdir()):
        if _TASK_FILE.match(path.name) and path.is_file() and path.stat().st_size:
            try:
                return {"task_id", "sample_idx", "tail_version"} <= first_object(path).keys()
            except DumpError:
                return False
    return False


def _find(folder: Path) -> Path | None:
    if folder.name == "eval-rollout" and _versions(folder):
        raise DumpError(f"{folder}: AReaL's evaluation rollouts: expected the training ones, "
                        f"{folder.parent / 'rollout'} (or the log folder holding it)")
    if _VERSION_DIR.match(folder.name) and _is_task_folder(folder):  # verl's find would take its N.jsonl files
        raise DumpError(f"{folder}: one version folder of AReaL's dump: expected the folder holding it "
                        f"({folder.parent}) or the log folder")
    where = folder / "rollout" if (folder / "rollout").is_dir() else folder
    numbered = _versions(where)
    for version, d in numbered:
        _version(d, version)
    return where if numbered else None


FORMAT = Format(
    name="areal",
    engine="AReaL 4aef98d",
    writer=("areal/infra/workflow_executor.py:818-832 (_get_dump_dir: rollout/, eval-rollout/)",
            "areal/infra/workflow_executor.py:834-921 (_dump_trajectory: the version folder, the record)",
            "areal/infra/workflow_executor.py:1101-1109 (every finished trajectory, rejected ones included)",
            "areal/infra/remote_inf_engine.py:70-122 (GroupedRolloutWorkflow: a task is a group)",
            "areal/trainer/rl_trainer.py:573-580 (group_size=n_samples, should_accept_fn)"),
    layout="AReaL's rollout/<version>/<task_id>.jsonl",
    keys="AReaL's task_id/sample_idx/reward",
    find=_find,
    claims=lambda path, keys: path.suffix.lower() == ".jsonl" and {"task_id", "sample_idx", "tail_version"} <= keys,
    read=_read_areal,
)
