"""prime-rl's rollouts, in the two layouts its file monitor has written: the trace stream, and
the per-step folders before it. ``--format prime-rl`` reads either.

**The trace stream** (prime-rl from PRs #3444 and #3465, Sep 2026). Under the run's output folder,
``monitors/file/traces/`` holds ``stream/NNNNN.jsonl``, every episode once in arrival order, train
and eval alike; a chunk past ``chunk_bytes`` is sealed as ``NNNNN.jsonl.zst`` (zstd) and a finished
run seals its last one too; beside it ``stream.index.jsonl``, a row per episode with the chunk and
byte offset of its record; and ``annotations/<producer>/`` with ``annotations/<producer>.index.jsonl``,
what was learnt about a trace later (the orchestrator's ship stamp carries its scalar advantage).
A record is verifiers' ``Episode.to_record()``. Its kind is its traces' ``info.kind``, else
``run.work.type``; its step ``run.work.step``, the step that opened its group, which every episode
of the group carries; its group ``group.id``; its reward the mean, over its traces with rewards, of
the sum of score x weight. Every train episode that arrived is read, shipped to the trainer or not:
the shipped cohort can lack what prime-rl leaves out of its batches (groups without a trainable
trace, groups the curriculum rejects or finds stale, traces whose advantages are all zero), the very
groups the zero-spread share counts. Where each rule was read (paths under ``src/prime_rl/``; the
stream's files as the public code index stores them, at the commit named, as no snapshot of
prime-rl after Aug 22 2026 could be fetched):

- the folders: ``monitors/file/traces/__init__.py:13-30`` (from the fork polyphilz/prime-rl, 18f8bfa:
  the upstream file is not in the index) under ``get_file_monitor_dir`` = ``<output_dir>/monitors/file``
  (``utils/pathing.py``, polyphilz/prime-rl 9895dbb);
- the chunks and the seal: ``monitors/file/traces/chunks.py:1-10, 28-29, 32-47, 62-72, 107-115`` (551bfc3);
- what goes in, and where: ``monitors/file/monitor.py:120-170`` (048a6e2): every episode once (the
  shipped cohort, ``subset == "effective"``, writes nothing: 134-135), its index row after it (143-146),
  a producer's updates to ``annotations/<producer>`` (161);
- the index row and the episode's kind and reward: ``monitors/file/traces/index.py:24-31, 77-83, 107-119,
  145-151`` (13e96a1); an update's index row and the fold, newest wins:
  ``monitors/file/traces/update.py:9-10, 21-25`` (65a1858);
- the stamps: ``orchestrator/annotations.py:20-30`` (kind, dispatch and arrival steps on arrival),
  ``33-49`` (the ship stamp: ``effective``, ``ship.step``, ``advantage``) (96e0cf4);
- what a batch leaves out: ``orchestrator/train_sink.py`` (polyphilz/prime-rl 35f4d4a): ``process_group``
  (no trainable survivor, rejected), ``_drop_stale``, ``_prune_zero_advantages`` in ``process_batch``;
- the step: verifiers ``verifiers/v1/episode.py:47-50`` (``TrainWorkInfo.step``, the dispatch step),
  ``149-155`` (``to_record``) (verifiers a60a606); prime-rl ``orchestrator/dispatcher.py:471, 485, 542,
  635, 644`` (a group opens at ``progress.step`` and every rollout of it carries that step) (559b447).

**The rollouts folder** (before): ``rollouts/step_N/train/{effective,all}/traces.jsonl``, a line per
episode: ``group.id`` is its group, ``task.key`` names the prompt across steps, ``run.work.step`` the
step, and the reward is the final trace's sum of score x weight over its reward functions.
"""

from __future__ import annotations

import io
import math
import re
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

import numpy as np

from fade import jsonl
from fade.extras import install_line

from ..columns import INT64_MAX, INT64_MIN, encode_keys, read_jsonl, shown
from ..records import DumpError, RunRecords, StepBatch, dense_ids, dump_errors
from .base import Format, ReadOptions, finite_number, name_step, one_per_step, step_files

__all__ = ["FORMAT"]

_PRIME_DIR = re.compile(r"^step_(\d+)$")
#: A chunk's name, ``f"{number:05d}.jsonl"``, and its sealed twin's (chunks.py:28-29, 64).
_CHUNK = re.compile(r"^(\d+)\.jsonl(\.zst)?$")
_INDEX = "stream.index.jsonl"  # get_index_path(traces/stream) (traces/__init__.py:27-30)


# -- the trace stream ------------------------------------------------------------------------------


def _traces_dir(folder: Path) -> Path | None:
    """The folder holding ``stream/`` and its index: the run's ``monitors/file/traces``, the
    monitor's ``traces/`` or ``folder`` itself, where it holds either (a folder of another name only
    where it holds the index: ``stream/`` alone says little)."""
    for where in (folder / "monitors" / "file" / "traces", folder / "traces", folder):
        if (where / _INDEX).is_file() or (where.name == "traces" and (where / "stream").is_dir()):
            return where
    return None


def _chunks(stream: Path) -> list[tuple[int, Path, bool]]:
    """The stream's chunks in order: (number, file, sealed), numbered from 0 (chunks.py:32-38, 84-88).
    A plain file is read where both it and its sealed twin are there (a seal still finishing removes
    the plain one last, chunks.py:5-9, 41-47, 62-72); a ``.zst.tmp`` is a seal in progress, not a chunk."""
    found: dict[int, tuple[Path, bool]] = {}
    for path in stream.iterdir():
        m = _CHUNK.match(path.name)
        number = name_step(m.group(1), path, "chunk") if m else None
        if m and path.is_file() and (number not in found or not m.group(2)):
            found[number] = (path, bool(m.group(2)))
    if not found:
        raise DumpError(f"{stream}: no chunks: expected prime-rl's stream/NNNNN.jsonl (or .jsonl.zst)")
    numbers = sorted(found)
    # the first number not there, found without range(last + 1): a chunk may be named 10**18
    missing = [i for i, n in enumerate(numbers) if n != i][:1]
    if missing:
        shown = ", ".join(f"{n:05d}" for n in numbers[:6]) + (", ..." if len(numbers) > 6 else "")
        raise DumpError(f"{stream}: chunk {missing[0]:05d} is missing (chunks {shown}): expected every chunk from "
                        "00000 on, as the stream numbers them")
    return [(n, *found[n]) for n in numbers]


def _zstandard(path: Path):
    try:
        import zstandard
    except ImportError:
        raise DumpError(f"{path}: a sealed (zstd-compressed) chunk, and zstandard is not installed: "
                        f"pip install zstandard (or {install_line('analyze')})") from None
    return zstandard


def _open_chunk(path: Path, sealed: bool) -> tuple[BinaryIO, tuple[type[Exception], ...]]:
    """The chunk as lines of plain bytes, and the errors reading it can raise. A sealed chunk is
    zstd frames (seekable format: a seek table in a skippable frame ends it), read across frames."""
    if not sealed:
        return open(path, "rb"), (OSError,)
    zstandard = _zstandard(path)
    reader = zstandard.ZstdDecompressor().stream_reader(open(path, "rb"), read_across_frames=True)
    return io.BufferedReader(reader), (OSError, zstandard.ZstdError)


def _records(path: Path, sealed: bool, newest: bool) -> Iterator[tuple[int, int, dict]]:
    """(line number, byte offset, record) of every line of a chunk, read once (:mod:`fade.jsonl`),
    an object naming a key twice refused. The last line of the live chunk (the newest, still plain)
    may be cut short by a run still writing it: it is skipped with a warning; anywhere else a line
    cut short is refused (prime-rl's own reader ends the stream at the first line it cannot parse,
    chunks.py:50-59, which would drop every later episode unsaid)."""
    f, errors = _open_chunk(path, sealed)
    try:
        with f, dump_errors():
            lines = jsonl.read(path, torn="skip-with-warning" if newest and not sealed else "error", file=f,
                               stacklevel=2)
    except errors as exc:
        raise DumpError(f"{path}: not readable ({exc}): expected a {'zstd-sealed' if sealed else 'plain'} "
                        "chunk of JSON lines") from None
    starts = np.r_[0, jsonl.line_ends(lines.data)]  # where each line starts, the index's offsets
    with dump_errors():
        for lineno, record in lines.records("one episode record (a JSON object) per line", unique_keys=True):
            yield lineno, int(starts[lineno - 1]), record


def _index_rows(path: Path) -> dict[tuple[int, int], tuple[int, str, str]]:
    """The stream's index: (chunk, offset) -> (line, episode id, kind) (index.py:107-110, 145-151)."""
    cols = read_jsonl(path, {"chunk": "int", "offset": "int", "id": "str", "kind": "str"},
                      required=("chunk", "offset", "id", "kind"), newest=True, lines=True, what="index rows")
    rows: dict[tuple[int, int], tuple[int, str, str]] = {}
    ids, kinds = (v if isinstance(v, list) else v.to_pylist() for v in (cols["id"], cols["kind"]))
    for chunk, offset, eid, kind, line in zip(cols["chunk"].tolist(), cols["offset"].tolist(), ids, kinds,
                                              cols["__line__"].tolist()):
        if (chunk, offset) in rows:
            raise DumpError(f"{path}:{line}: chunk {chunk} offset {offset} again (also line {rows[chunk, offset][0]}): "
                            "expected one row per episode")
        rows[chunk, offset] = (line, eid, kind)
    return rows


def _advantages(paths: list[Path], progress) -> dict[str, float]:
    """Each trace's scalar advantage from the producers' annotation indexes: within one producer's
    stream the newest row wins (update.py:9-10); two producers giving one trace two values are
    refused, as nothing orders one producer's rows against another's."""
    found: dict[str, tuple[float, str]] = {}
    for path in paths:
        cols = read_jsonl(path, {"trace_id": "str"}, required=("trace_id",), newest=True, raw_keys=("info",),
                          lines=True, what="index rows")
        mine: dict[str, tuple[float, str]] = {}
        for tid, info, line in zip(cols["trace_id"], cols["info"], cols["__line__"].tolist()):
            if info is None:
                continue
            if not isinstance(info, dict):
                raise DumpError(f"{path}:{line}: info {shown(info)}: expected an object (update.py:21-25)")
            if "advantage" in info:
                value = info["advantage"]
                if not finite_number(value):
                    raise DumpError(f"{path}:{line}: trace {tid!r}: advantage {shown(value)}: expected a finite number "
                                    "(a NaN is written as null)")
                mine[tid] = (float(value), f"{path}:{line}")
        for tid, (value, where) in mine.items():
            if tid in found and found[tid][0] != value:
                raise DumpError(f"{where}: trace {tid!r} has advantage {shown(value)}, but {found[tid][1]} gives "
                                f"{found[tid][0]!r}: expected one advantage per trace")
            found[tid] = (value, where)
        progress()
    return {tid: value for tid, (value, _) in found.items()}



def _kind(record: dict, traces: list[dict], where: str) -> str:
    """The episode's kind: a trace's ``info.kind`` (stamped on arrival), else ``run.work.type``,
    else ``run.type``, else eval (index.py:24-31)."""
    for trace in traces:
        info = trace.get("info")
        if isinstance(info, dict) and info.get("kind") in ("train", "eval"):
            return info["kind"]
    run = record.get("run")
    run = run if isinstance(run, dict) else {}
    work = run.get("work") if isinstance(run.get("work"), dict) else {}
    kind = work.get("type") or run.get("type") or "eval"
    if kind not in ("train", "eval"):
        raise DumpError(f"{where}: kind {kind!r}: expected train or eval (run.work.type)")
    return kind


def _step(record: dict, where: str) -> int:
    """``run.work.step``: the step that opened the episode's group (episode.py:47-50; dispatcher.py:485, 542, 644)."""
    run = record.get("run")
    work = run.get("work") if isinstance(run, dict) else None
    step = work.get("step") if isinstance(work, dict) else None
    if isinstance(step, bool) or not isinstance(step, int) or not INT64_MIN <= step <= INT64_MAX:
        raise DumpError(f"{where}: run.work.step {shown(step)}: expected an integer within int64, the step that "
                        "dispatched the episode's group")
    return step


def _group(record: dict, where: str) -> str:
    group = record.get("group")
    if not isinstance(group, dict) or not isinstance(group.get("id"), str):
        raise DumpError(f"{where}: group {shown(group)}: expected {{\"id\": text}}, the episode's group "
                        "(episode.py:24-27)")
    return group["id"]


def _reward(traces: list[dict], where: str) -> float | None:
    """The mean, over the traces with rewards, of the sum of score x weight (weight 1 where absent),
    as prime-rl's index computes it (index.py:77-83, 118); None where no trace has a reward (an
    errored rollout). A reward that is null (a reward function that scored nothing) adds nothing,
    as there; a score or weight that is not a finite number is refused, where the index would count
    a NaN written as null as 0."""
    sums = []
    for trace in traces:
        rewards = trace.get("rewards")
        if not rewards:
            continue
        if not isinstance(rewards, dict):
            raise DumpError(f"{where}: rewards {shown(rewards)}: expected an object of {{score, weight}} by reward "
                            "name")
        total = 0.0
        for name, r in rewards.items():
            if r is None:
                continue
            if not isinstance(r, dict):
                raise DumpError(f"{where}: reward {name!r} is {shown(r)}: expected {{score, weight}}")
            score, weight = r.get("score"), 1.0 if r.get("weight") is None else r.get("weight")
            for what, value in (("score", score), ("weight", weight)):
                if not finite_number(value):
                    raise DumpError(f"{where}: reward {name!r} {what} {shown(value)}: expected a finite number "
                                    "(a NaN is written as null)")
            total += float(score) * float(weight)
        sums.append(total)
    if not sums:
        return None
    reward = sum(sums) / len(sums)
    if not math.isfinite(reward):
        raise DumpError(f"{where}: reward {reward!r}: expected a finite number")
    return reward


def _read_stream(traces: Path, progress) -> RunRecords:
    stream, index = traces / "stream", traces / _INDEX
    if not stream.is_dir():
        raise DumpError(f"{traces}: no stream/ folder: expected prime-rl's trace stream (stream/NNNNN.jsonl)")
    if not index.is_file():
        raise DumpError(f"{traces}: no {_INDEX} beside stream/: expected the file monitor's index of the stream")
    chunks = _chunks(stream)
    annotations = sorted((traces / "annotations").glob("*.index.jsonl")) if (traces / "annotations").is_dir() else []
    total, done = len(chunks) + 1 + len(annotations), [0]

    def tick() -> None:
        done[0] += 1
        progress(done[0], total)

    rows = _index_rows(index)
    tick()
    seen: dict[tuple[str, str], str] = {}  # ("episode" or "trace", id) -> where first seen
    train: list[tuple[int, str, float | None, list[str], str, str]] = []
    record_advantages: dict[str, float] = {}
    evals = 0
    unindexed: str | None = None
    for i, (number, path, sealed) in enumerate(chunks):
        for lineno, offset, record in _records(path, sealed, newest=i == len(chunks) - 1):
            where = f"{path}:{lineno}"
            eid = record.get("id")
            if not isinstance(eid, str):
                raise DumpError(f"{where}: episode id {eid!r}: expected text (verifiers' Episode.id)")
            seats = record.get("traces", [])
            if not isinstance(seats, list) or not all(isinstance(t, dict) for t in seats):
                raise DumpError(f"{where}: traces {shown(seats)}: expected a list of trace records")
            ids = [eid] + [t.get("id") for t in seats]
            for n, tid in enumerate(ids):
                what = "episode" if n == 0 else "trace"
                if not isinstance(tid, str):
                    raise DumpError(f"{where}: a trace without an id ({tid!r}): expected each trace's id (text)")
                if (what, tid) in seen:
                    # the file monitor serialises each episode once, as it arrives (monitor.py:128-146)
                    raise DumpError(f"{where}: {what} {tid!r} again (also {seen[what, tid]}): expected each "
                                    f"{what} once in the stream")
                seen[what, tid] = where
            kind = _kind(record, seats, where)
            row = rows.pop((number, offset), None)
            if row is None:
                unindexed = unindexed or where
            elif unindexed is not None:
                raise DumpError(f"{unindexed}: no row in {_INDEX}, but a later episode has one ({where}): expected a "
                                "row per episode (the index follows the stream, monitor.py:120-126, 143-146)")
            elif row[1:] != (eid, kind):
                raise DumpError(f"{index}:{row[0]}: episode {row[1]!r} ({row[2]}) at chunk {number} offset {offset}, "
                                f"but {where} is episode {eid!r} ({kind}): expected the index to describe the stream")
            if kind != "train":
                evals += 1
                continue
            for trace in seats:
                value = trace["info"].get("advantage") if isinstance(trace.get("info"), dict) else None
                if finite_number(value):
                    record_advantages[trace["id"]] = float(value)
            task = record.get("task")
            key = task.get("key") if isinstance(task, dict) else None
            group = _group(record, where)
            train.append((_step(record, where), group, _reward(seats, where), ids[1:],
                          key if isinstance(key, str) else group, where))
        tick()
    if rows:
        (chunk, offset), (line, eid, _) = min(rows.items(), key=lambda item: item[1][0])
        raise DumpError(f"{index}:{line}: episode {eid!r} at chunk {chunk} offset {offset}: no record starts there in "
                        "stream/: expected every row to point at the start of its episode's record")
    advantages = {**record_advantages, **_advantages(annotations, tick)}
    return _stream_steps(traces, train, advantages, evals)


def _stream_steps(traces: Path, train: list, advantages: dict[str, float], evals: int) -> RunRecords:
    """The train episodes as steps: by dispatch step, a group per ``group.id``, in arrival order."""
    opened: dict[str, tuple[int, str]] = {}
    by_step: dict[int, list[int]] = {}
    unrewarded = 0
    for i, (step, group, reward, _, _, where) in enumerate(train):
        at = opened.setdefault(group, (step, where))
        if at[0] != step:
            raise DumpError(f"{where}: group {shown(group)} at step {step}, but {at[1]} has it at step {at[0]}: "
                            "expected one step per group, the step that opened it (dispatcher.py:542)")
        if reward is None:
            unrewarded += 1
        else:
            by_step.setdefault(step, []).append(i)
    steps, with_advantage, episodes = [], 0, 0
    for step in sorted(by_step):
        rows = [train[i] for i in by_step[step]]
        groups, _ = dense_ids([r[1] for r in rows])
        _, first = np.unique(groups, return_index=True)
        mean = [float(np.mean(a)) if (a := [advantages[t] for t in r[3] if t in advantages]) else None for r in rows]
        with_advantage += sum(a is not None for a in mean)
        episodes += len(rows)
        steps.append(StepBatch(step, np.array([r[2] for r in rows], dtype=np.float64), groups,
                               advantages=None if None in mean else np.array(mean, dtype=np.float64),
                               prompt_keys=[rows[j][4] for j in first], source=str(traces / "stream")))
    run = RunRecords("prime-rl-stream", str(traces), steps)
    run.notes.append("prime-rl trace stream: every train episode that arrived, shipped to the trainer or not; a "
                     "step is the step that dispatched the group (run.work.step)")
    if evals:
        run.notes.append(f"{evals} eval episodes left out")
    if unrewarded:
        run.notes.append(f"{unrewarded} train episodes without a rewarded trace (errored rollouts) left out of "
                         "their groups")
    if 0 < with_advantage < episodes:
        for batch in steps:
            batch.advantages = None
        run.notes.append(f"the run's advantages are not read: {with_advantage} of {episodes} train episodes carry "
                         "one (prime-rl annotates the episodes it ships)")
    return run


# -- the rollouts folder ---------------------------------------------------------------------------


def _rollouts_dir(folder: Path) -> Path | None:
    where = folder / "rollouts" if (folder / "rollouts").is_dir() else folder
    return where if any(p.is_dir() and _PRIME_DIR.match(p.name) for p in where.iterdir()) else None


def _rollouts_step(n: int, p: Path, newest: bool) -> StepBatch:
    cols = read_jsonl(p, {}, newest=newest, raw_keys=("group", "task", "traces", "run"), lines=True)
    rewards, gkeys, tkeys = [], [], []
    rows = zip(cols["__line__"].tolist(), cols["group"], cols["task"], cols["traces"], cols["run"])
    for line, group, task, traces, run in rows:
        at = f"{p}:{line}"
        if not isinstance(group, dict) or "id" not in group:
            raise DumpError(f"{at}: no group.id: expected prime-rl's episode record")
        if not _key(group["id"]):
            raise DumpError(f"{at}: group.id is {shown(group['id'])}: expected text or an integer")
        step = _field(at, run, "run", "work", "step")
        if step is not None and (isinstance(step, bool) or not isinstance(step, int) or step != n):
            raise DumpError(f"{at}: run.work.step {shown(step)}: expected {n}, as the folder step_{n} names it")
        key = _field(at, task, "task", "key")
        if key is not None and not _key(key):
            raise DumpError(f"{at}: task.key is {shown(key)}: expected text or an integer")
        if not isinstance(traces, list) or not traces:
            raise DumpError(f"{at}: {'no traces' if not traces else f'traces is {shown(traces)}'}: expected a "
                            "list of traces, the last with the episode's rewards")
        rewards.append(_final_reward(at, traces[-1]))
        gkeys.append(str(group["id"]))
        tkeys.append(str(group["id"] if key is None else key))
    groups, _ = encode_keys(gkeys)
    first: dict[int, str] = {}
    for g, t in zip(groups.tolist(), tkeys):
        first.setdefault(g, t)
    return StepBatch(n, np.asarray(rewards, dtype=np.float64), groups,
                     prompt_keys=[first[g] for g in range(len(first))], source=str(p))


def _key(value) -> bool:
    return isinstance(value, (str, int)) and not isinstance(value, bool)


def _field(at: str, obj, *path: str):
    """``obj[path[1]][path[2]]...`` (None where a level is missing), refusing a level that is no object."""
    for depth, name in enumerate(path[1:], start=1):
        if obj is None:
            return None
        if not isinstance(obj, dict):
            raise DumpError(f"{at}: {'.'.join(path[:depth])} is {shown(obj)}: expected an object")
        obj = obj.get(name)
    return obj


def _final_reward(at: str, trace) -> float:
    """The episode's reward in the rollouts folder: the final trace's sum of score x weight over its
    reward functions (verifiers' weight defaults to 1)."""
    if not isinstance(trace, dict):
        raise DumpError(f"{at}: the last trace is {shown(trace)}: expected an object with the episode's rewards")
    named = trace.get("rewards") or {}
    if not isinstance(named, dict):
        raise DumpError(f"{at}: the last trace's rewards is {shown(named)}: expected an object of {{score, weight}}")
    total = 0.0
    for name, r in named.items():
        score = r.get("score") if isinstance(r, dict) else None
        weight = r.get("weight", 1.0) if isinstance(r, dict) else None
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (score, weight)):
            raise DumpError(f"{at}: reward {name!r} is {shown(r)}: expected {{score, weight}}, both numbers")
        try:
            total += float(score) * float(weight)
        except OverflowError:  # an integer past the largest float
            total = math.inf
    if not math.isfinite(total):
        raise DumpError(f"{at}: reward {shown(total)}: expected a finite number")
    return total


def _read_rollouts(where: Path, options: ReadOptions, progress) -> RunRecords:
    split = options.prime_split
    numbered = one_per_step(sorted(
        (name_step(m.group(1), d), d / "train" / split / "traces.jsonl")
        for d in where.iterdir() if d.is_dir() and (m := _PRIME_DIR.match(d.name))
        and (d / "train" / split / "traces.jsonl").is_file()
    ), where)
    if not numbered:
        raise DumpError(f"{where}: no step_N/train/{split}/traces.jsonl: expected prime-rl's rollouts folder")
    return RunRecords("prime-rl", str(where), step_files(numbered, _rollouts_step, progress))


# -- either ----------------------------------------------------------------------------------------


def _find(folder: Path) -> Path | None:
    stream, rollouts = _traces_dir(folder), _rollouts_dir(folder)
    return folder if stream and rollouts else stream or rollouts


def _read_prime(where: Path, options: ReadOptions, progress) -> RunRecords:
    if where.is_file():
        return _read_file(where, options, progress)
    stream, rollouts = _traces_dir(where), _rollouts_dir(where)
    if stream is not None and rollouts is not None:
        raise DumpError(f"{where}: holds both prime-rl layouts ({rollouts} and {stream}): expected one run's dump; "
                        "give the folder of the one to read")
    if stream is not None:
        return _read_stream(stream, progress)
    return _read_rollouts(rollouts or where, options, progress)


def _read_file(path: Path, options: ReadOptions, progress) -> RunRecords:
    """A single file of either layout: the stream's index or a chunk reads its whole traces folder;
    a step folder's traces.jsonl reads as that step."""
    if path.name == _INDEX or (path.parent.name == "stream" and (path.parent.parent / _INDEX).is_file()):
        return _read_stream(path.parent if path.name == _INDEX else path.parent.parent, progress)
    m = _PRIME_DIR.match(path.parents[2].name) if len(path.parents) > 2 and path.parent.parent.name == "train" else None
    if m is None:
        raise DumpError(f"{path}: a prime-rl episode file outside its run's folders: expected "
                        "rollouts/step_N/train/SPLIT/traces.jsonl or monitors/file/traces/")
    batch = _rollouts_step(name_step(m.group(1), path.parents[2]), path, True)
    progress(1, 1)
    return RunRecords("prime-rl", str(path), [batch])


def _claims(path: Path, keys: frozenset[str]) -> bool:
    return path.suffix.lower() in (".jsonl", ".json") and (
        {"group", "task", "traces"} <= keys or {"chunk", "offset", "trace_ids"} <= keys)


FORMAT = Format(
    name="prime-rl",
    engine="prime-rl 559b447 (rollouts/); the trace stream of PRs #3444, #3465 (551bfc3, 048a6e2, 13e96a1, 65a1858, "
           "96e0cf4); verifiers a60a606",
    writer=("src/prime_rl/monitors/file.py:43-57 at 559b447 (rollouts/: the files)",
            "src/prime_rl/monitors/file/traces/__init__.py:13-30 at polyphilz/prime-rl 18f8bfa (the stream's folders)",
            "src/prime_rl/monitors/file/traces/chunks.py:1-10, 28-47, 62-72, 107-115 at 551bfc3 (chunks, the seal)",
            "src/prime_rl/monitors/file/monitor.py:120-170 at 048a6e2 (the stream, its index, the annotations)",
            "src/prime_rl/monitors/file/traces/index.py:24-31, 77-83, 107-119, 145-151 at 13e96a1 (kind, reward, "
            "the index row)",
            "src/prime_rl/monitors/file/traces/update.py:9-10, 21-25 at 65a1858 (annotation rows, newest wins)",
            "src/prime_rl/orchestrator/annotations.py:20-49 at 96e0cf4 (arrival and ship stamps)",
            "src/prime_rl/orchestrator/dispatcher.py:471, 485, 542, 635, 644 at 559b447 (a group's step)",
            "verifiers/v1/episode.py:24-27, 47-50, 85-155 (Episode.to_record: the line)",
            "verifiers/v1/trace.py:135-141, 413 (the reward: score x weight)"),
    layout="prime-rl's rollouts/step_N/ or monitors/file/traces/",
    keys="prime-rl's group/task/traces or its stream index's chunk/offset/trace_ids",
    find=_find,
    claims=_claims,
    read=_read_prime,
)
