"""ROLL's RLVR rollout dump (``rollout_dump_dir``): ``rollout_dump_data.step_{N}.jsonl``.

Each file is one training step's generated batch, written once (mode ``w``) as a single line: one
JSON object of columns, each a list with a value per response (``global_step``, ``scores``,
``responses``, ``sampling_params`` and the dataset's own ``id``, ``source``, ``difficulty``,
``prompt``, ``messages``, ``ground_truth``, ``tag``, ``domain``... where the dataset has them). A
response's reward is its ``scores`` value: the reward worker's score, before ROLL's reward
normalisation, clipping and KL term; most workers train on that score as it is (math, code, LLM
judge), some add penalties to the training reward that ``scores`` leaves out (ifeval's repetition
penalty). There is no group id: a prompt's ``num_return_sequences`` responses come back together,
and ROLL's GRPO groups rewards as consecutive blocks of ``num_return_sequences`` rows of one domain,
so a group is a consecutive block of one prompt (its ``id``, ``messages`` and ``prompt``, those the
dump has) in one domain, the block length ``--group-size`` or the most common such run.

Where each rule was read (alibaba/ROLL 8eb27cc, Aug 2026):

- the writer: ``roll/pipeline/rlvr/utils.py:19-35`` (the columns kept), ``37-45`` (the file: its name
  from the first row's ``global_step``, opened ``w``, one ``json.dumps`` line), ``47-52`` (only a path
  starting with ``/`` is written), ``55-72`` (the columns: ``scores`` from the batch, ``sampling_params``
  the batch's meta info as JSON text, written by a daemon process);
- the call: ``roll/pipeline/rlvr/rlvr_pipeline.py:483`` (``global_step`` from 0), ``542-556`` (each
  domain's batch, concatenated, dumped before any reward processing), ``680-681, 694-696`` (the
  rewards grouped by domain); ``rollout_dump_dir``: ``roll/configs/base_config.py:122-124``;
- the groups: ``roll/utils/functionals.py:564-569, 651-664`` (GRPO's group is
  ``reshape(-1, num_return_sequences)``), ``roll/distributed/scheduler/generate_scheduler.py:394-396,
  703-721`` (a prompt's responses stay together, domain by domain), ``849-852`` (a prompt returns
  ``num_return_sequences`` responses unless ``is_use_additional_prompts``);
- the score: ``roll/pipeline/rlvr/rewards/math_rule_reward_worker.py:312-313`` (score = training reward),
  ``ifeval_rule_reward_worker.py:652-654`` (training reward = score + repetition penalty).
"""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from fade import jsonl

from ..columns import INT64_MAX, INT64_MIN, shown
from ..records import DumpError, RunRecords, StepBatch, dump_errors
from .base import (
    Format,
    ReadOptions,
    finite_number,
    name_step,
    not_unicode,
    numbered_files,
    prompt_runs,
    split_runs,
    step_files,
)

__all__ = ["FORMAT"]

_ROLL_FILE = re.compile(r"^rollout_dump_data\.step_(\d+)\.jsonl$")
#: What a step's file holds.
_ONE_OBJECT = "ROLL's one JSON object of columns"
#: The columns that name a prompt, where the dump has them: the dataset's id and the text the prompt was built from.
_PROMPT_COLUMNS = ("id", "messages", "prompt")


def _dump(p: Path, newest: bool, only: bool) -> dict | None:
    """The file's one object, or None where it is the newest file and still being written (ROLL
    writes it from a daemon process, utils.py:71, so a run stopped mid-write leaves it cut short:
    a last line without its newline that is no whole JSON, :mod:`fade.jsonl`'s torn line).
    The run's ``only`` file, unfinished, leaves no step to read: it is refused in one line."""
    with dump_errors():
        lines = jsonl.read(p, torn="skip-silently")
        found = [lineno for lineno, _ in lines.numbered()] + ([] if lines.torn is None else [lines.torn])
        if len(found) > 1:
            raise DumpError(f"{p}:{found[1]}: a second JSON object: expected one per file, as ROLL writes a step's "
                            "columns once")
        for _, obj in lines.records(_ONE_OBJECT, unique_keys=True):
            return obj
    what = "cut short" if found else "empty"
    if only:
        raise DumpError(f"{p}: {what} (a step still being written), the run's only step: expected at least one "
                        "complete step to read")
    if newest:
        warnings.warn(f"{p}: skipped the unfinished dump of a step still being written", RuntimeWarning, stacklevel=2)
        return None
    if not found:
        raise DumpError(f"{p}: empty: expected {_ONE_OBJECT}")
    raise DumpError(f"{p}:1: cut short: expected a complete JSON object (only the newest file of a run still being "
                    "written may end so)")



def _column(obj: dict, name: str, p: Path, rows: int | None) -> list | None:
    value = obj.get(name)
    if value is None:
        return None
    if not isinstance(value, list):
        raise DumpError(f"{p}:1: column {name!r} is a {type(value).__name__}: expected a list, a value per response")
    if rows is not None and len(value) != rows:
        raise DumpError(f"{p}:1: column {name!r} has {len(value)} values and 'scores' {rows}: expected a value per "
                        "response in every column")
    return value


def _prompt_key(value: Any, name: str, p: Path, row: int) -> str | int:
    """A row's prompt: the id as ROLL dumped it (text or an integer), or the prompt's text."""
    if name == "id":
        if isinstance(value, bool) or not isinstance(value, (str, int)):
            raise DumpError(f"{p}:1: row {row + 1}: id {shown(value)}: expected text or an integer, the dataset's id")
        key = value
    elif name == "messages" and isinstance(value, list):
        try:
            key = json.dumps(value, sort_keys=True, ensure_ascii=False)
        except RecursionError:
            raise DumpError(f"{p}:1: row {row + 1}: messages nested too deeply to read: expected a list of "
                            "messages") from None
    elif not isinstance(value, str):
        raise DumpError(f"{p}:1: row {row + 1}: {name} {shown(value)}: expected text (or, for messages, a list)")
    else:
        key = value
    problem = isinstance(key, str) and not_unicode(key)
    if problem:
        raise DumpError(f"{p}:1: row {row + 1}: {name} holds {problem}: expected Unicode text")
    return key


def _groups(keys: list[str], p: Path, group_size: int | None) -> tuple[np.ndarray, int]:
    """Group ids for rows whose runs of one prompt are whole groups of ``group_size`` rows or, left
    out, of the most common run length (the smallest of the most common where two tie): a prompt
    that came back short (a response filtered away) is then refused as a ragged run, where the
    shortest run would make every group that short."""
    starts, lengths = prompt_runs(keys)
    if group_size is None:
        values, counts = np.unique(lengths, return_counts=True)
        size = int(values[counts == counts.max()].min())
        if size == 1:
            raise DumpError(f"{p}: most prompts have one response: expected num_return_sequences > 1 consecutive "
                            "responses of each prompt (give --group-size 1 if the run sampled one)")
        how = "the most common run of one prompt"
    else:
        size, how = group_size, "--group-size"
    return split_runs(starts, lengths, size, str(p), how), size


def _read_roll(where: Path, options: ReadOptions, progress) -> RunRecords:
    if where.is_file():
        m = _ROLL_FILE.match(where.name)
        numbered = [(name_step(m.group(1), where) if m else -1, where)]
    else:
        numbered = numbered_files(where, _ROLL_FILE)
    sizes: dict[int, int] = {}
    named: set[str] = set()

    def read(n: int, p: Path, newest: bool) -> StepBatch | None:
        obj = _dump(p, newest, len(numbered) == 1)
        if obj is None:
            return None
        scores = _column(obj, "scores", p, None)
        if scores == []:
            raise DumpError(f"{p}:1: 'scores' is empty: expected a score per response of the step")
        if scores is None:
            raise DumpError(f"{p}:1: no 'scores' column (keys {', '.join(sorted(obj)[:12])}): expected ROLL's RLVR "
                            "dump, a list of scores (the agentic pipeline writes this file name with other columns)")
        rows = len(scores)
        for i, s in enumerate(scores):
            if not finite_number(s):
                raise DumpError(f"{p}:1: row {i + 1}: score {shown(s)}: expected a finite number")
        steps = _column(obj, "global_step", p, rows)
        if steps is None:
            raise DumpError(f"{p}:1: no 'global_step' column: expected ROLL's RLVR dump, the step of every response")
        for i, s in enumerate(steps):
            if isinstance(s, bool) or not isinstance(s, int) or not INT64_MIN <= s <= INT64_MAX:
                raise DumpError(f"{p}:1: row {i + 1}: global_step {shown(s)}: expected an integer within int64")
            if s != (steps[0] if n < 0 else n):
                raise DumpError(f"{p}:1: row {i + 1}: global_step {s}: expected {steps[0] if n < 0 else n}, "
                                f"{'as row 1 has it' if n < 0 else 'as ROLL names the file'}")
        names = [c for c in _PROMPT_COLUMNS if obj.get(c) is not None]
        if not names:
            raise DumpError(f"{p}:1: no {', '.join(map(repr, _PROMPT_COLUMNS))} column: expected the prompt of every "
                            "response, to group them")
        named.update(names)
        # every column naming the prompt is part of its key: a dataset whose id is shared by several
        # prompts (a source name) still tells them apart by their text
        parts = [[_prompt_key(v, c, p, i) for i, v in enumerate(_column(obj, c, p, rows))] for c in names]
        domains = _column(obj, "domain", p, rows) or [None] * rows
        for i, d in enumerate(domains):
            if d is not None and not isinstance(d, str):
                raise DumpError(f"{p}:1: row {i + 1}: domain {shown(d)}: expected text")
            problem = d is not None and not_unicode(d)
            if problem:
                raise DumpError(f"{p}:1: row {i + 1}: domain holds {problem}: expected Unicode text")
        # json.dumps keeps the integer 1 and the text "1" apart, and a domain apart from a prompt
        keys = [json.dumps([d, *k], ensure_ascii=False) for d, *k in zip(domains, *parts)]
        groups, size = _groups(keys, p, options.group_size)
        sizes[steps[0]] = size
        return StepBatch(steps[0], np.asarray(scores, dtype=np.float64), groups,
                         prompt_keys=parts[0][::size], source=str(p))

    steps = step_files(numbered, read, progress)
    if len(set(sizes.values())) > 1 and options.group_size is None:
        ordered = sorted(sizes.items(), key=lambda item: item[1])
        (a, m), (b, k) = ordered[0], ordered[-1]
        raise DumpError(f"{where}: step {a} reads as groups of {m} and step {b} as groups of {k} (the most common run "
                        "of one prompt): expected one num_return_sequences for the run; give --group-size")
    run = RunRecords("roll", str(where), steps)
    size = next(iter(sizes.values()), None)
    how = "--group-size" if options.group_size else "the most common run of one prompt"
    named_by = ", ".join(c for c in _PROMPT_COLUMNS if c in named)
    run.notes.append(f"ROLL groups are consecutive rows of one prompt ({named_by}) in one domain, {size} at a time "
                     f"({how}); rewards are ROLL's scores, before its reward normalisation")
    return run


FORMAT = Format(
    name="roll",
    engine="ROLL 8eb27cc (v0.3.0+, Aug 2026)",
    writer=("roll/pipeline/rlvr/utils.py:19-72 (write_to_json_process, dump_rollout_to_specific_path)",
            "roll/pipeline/rlvr/rlvr_pipeline.py:483, 542-556 (the call), 680-696 (rewards by domain)",
            "roll/utils/functionals.py:564-569, 651-664 (GRPO's groups: num_return_sequences rows)",
            "roll/distributed/scheduler/generate_scheduler.py:394-396, 703-721, 849-852 (a prompt's responses "
            "together)"),
    layout="ROLL's rollout_dump_data.step_N.jsonl",
    keys="ROLL's global_step/scores columns",
    find=lambda folder: folder if numbered_files(folder, _ROLL_FILE) else None,
    claims=lambda path, keys: path.suffix.lower() in (".jsonl", ".json") and {"global_step", "scores"} <= keys,
    read=_read_roll,
)
