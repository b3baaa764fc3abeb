"""The engines' rollout dumps, read into :class:`~fade.analyze.records.RunRecords`.

Each reader follows what its engine writes (docs/analyze.md, "Formats"):

- verl (``trainer.rollout_data_dir``, ``validation_data_dir``): one ``{step}.jsonl`` per step with
  ``input, output, gts, score, step``. The v1 trainer adds ``uid`` = ``{prompt}_{session}_{index}``:
  a group is the uid's prompt part, and a session's final output (highest index) is its rollout,
  as verl's own GRPO takes it. The legacy trainer writes no uid and reorders rows (batch
  balancing): a group is the prompt text.
- TRL (``log_completions=True``): ``completions/completions_NNNNN.parquet`` with ``step, prompt,
  completion``, a column per reward function, the reward functions' ``log_extra`` columns and
  ``advantage``; the reward columns are those the run's trainer_state.json names, else the float
  ones (:func:`_trl_reward_columns`). A group is a consecutive block of
  ``num_generations`` rows with one prompt; the total reward is the weighted sum of the reward
  columns with NaN (a function that returned None) left out, as TRL sums them. A file that repeats
  the previous one's batch is counted once.
- NeMo-RL ``train_data_step{N}.jsonl`` (``content``, ``rewards``, ``advantages`` per token):
  groups are consecutive blocks of one prompt; prime-rl ``rollouts/step_N/train/{effective,all}/
  traces.jsonl`` (``group.id``, ``task.key``, ``run.work.step``, the traces' weighted rewards).
- fade eval's ``scores.jsonl`` (one step: every problem a group, success = score > 0).
- generic JSON-lines, CSV or parquet with ``step``, ``reward`` and ``group_id`` or ``prompt_id``,
  optionally ``advantage``: any other engine is one small export away.
"""

from __future__ import annotations

import json
import math
import re
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from .columns import INT64_MAX, INT64_MIN, arrow, encode_keys, read_jsonl, read_parquet
from .records import DumpError, RunRecords, StepBatch, dense_ids

__all__ = ["FORMATS", "GENERIC_GROUP_KEYS", "ReadOptions", "detect", "read_run"]

#: The formats :func:`read_run` knows, by the name ``--format`` takes.
FORMATS = ("verl", "trl", "nemo-rl", "prime-rl", "fade-eval", "generic")

#: The group keys of the generic format, in the order they are looked for.
GENERIC_GROUP_KEYS = ("group_id", "prompt_id")

_VERL_FILE = re.compile(r"^(\d+)\.jsonl$")
_TRL_FILE = re.compile(r"^completions_(\d+)\.parquet$")
_NEMO_FILE = re.compile(r"^train_data_step(\d+)\.jsonl$")
_PRIME_DIR = re.compile(r"^step_(\d+)$")
_VERL_KEYS = {"input", "output", "score", "step"}
_TRL_FIXED = ("step", "prompt", "completion", "advantage")

#: Columns fade's own TRL reward functions log with ``log_extra`` (fade.verifiers.rewards): never rewards.
KNOWN_EXTRA_COLUMNS = ("math_reason", "code_reason")


class ReadOptions:
    """What a reader needs beyond the files: ``group_size`` (TRL, NeMo-RL: rows per group when it
    cannot be inferred), ``reward_column`` (TRL: the reward columns, comma-separated names) and
    ``reward_weights`` (TRL), ``metrics`` (a side file of per-step scalars), ``success_threshold``
    (reward >= t is a success).

    Values that mean nothing are refused here, before any file is read: a weight or a threshold
    that is NaN or infinite (a NaN weight would drop its column from TRL's NaN-skipping sum)."""

    def __init__(self, *, group_size: int | None = None, reward_column: str | None = None,
                 reward_weights: list[float] | None = None, metrics: str | Path | None = None,
                 success_threshold: float | None = None, prime_split: str = "effective") -> None:
        if reward_weights is not None:
            bad = next((i for i, w in enumerate(reward_weights) if not math.isfinite(w)), None)
            if bad is not None:
                raise ValueError(f"--reward-weights {','.join(f'{w:g}' for w in reward_weights)}: weight {bad + 1} "
                                 f"is {reward_weights[bad]:g}: expected finite numbers, one per reward column")
        if success_threshold is not None and not math.isfinite(success_threshold):
            raise ValueError(f"--success-threshold {success_threshold:g}: expected a finite number "
                             "(a rollout with reward >= T is a success)")
        self.group_size = group_size
        self.reward_column = reward_column
        self.reward_weights = reward_weights
        self.metrics = None if metrics is None else Path(metrics)
        self.success_threshold = success_threshold
        self.prime_split = prime_split


# -- detection -------------------------------------------------------------------------------------


def _numbered(folder: Path, pattern: re.Pattern) -> list[tuple[int, Path]]:
    found = [(int(m.group(1)), p) for p in folder.iterdir() if p.is_file() and (m := pattern.match(p.name))]
    return _one_per_step(sorted(found), folder)


def _one_per_step(numbered: list[tuple[int, Path]], where: Path) -> list[tuple[int, Path]]:
    """``numbered`` (sorted by step), refused where two files name one step (``2.jsonl`` and
    ``02.jsonl``): each would be read as the step, and the step counted twice."""
    for (a, first), (b, second) in zip(numbered, numbered[1:]):
        if a == b:
            raise DumpError(f"{where}: {first.relative_to(where)} and {second.relative_to(where)} are both step {a}: "
                            "expected one file per step")
    return numbered


def _first_object(path: Path) -> dict:
    with open(path, "rb") as f:
        for lineno, line in enumerate(f, start=1):
            if line.strip():
                try:
                    obj = json.loads(line)
                except ValueError:
                    raise DumpError(f"{path}:{lineno}: not valid JSON: expected one JSON object per line") from None
                if not isinstance(obj, dict):
                    raise DumpError(f"{path}:{lineno}: a JSON {type(obj).__name__}, expected an object")
                return obj
    raise DumpError(f"{path}: no records: expected one JSON object per line")


def _jsonl_format(path: Path) -> str:
    keys = set(_first_object(path))
    if _VERL_KEYS <= keys:
        return "verl"
    if {"group", "task", "traces"} <= keys:
        return "prime-rl"
    if {"content", "rewards"} <= keys:
        return "nemo-rl"
    if {"problem_id", "sample", "score"} <= keys:
        return "fade-eval"
    if "step" in keys and "reward" in keys and keys & set(GENERIC_GROUP_KEYS):
        return "generic"
    raise DumpError(
        f"{path}:1: an unknown layout (keys {', '.join(sorted(keys)) or 'none'}): expected verl's "
        "input/output/score/step, prime-rl's group/task/traces, NeMo-RL's content/rewards, fade eval's "
        f"problem_id/sample/score, or step, reward and one of {', '.join(GENERIC_GROUP_KEYS)} (docs/analyze.md)"
    )


def _folder_kinds(folder: Path) -> dict[str, Path]:
    kinds: dict[str, Path] = {}
    if _numbered(folder, _VERL_FILE):
        kinds["verl"] = folder
    trl = folder / "completions" if (folder / "completions").is_dir() else folder
    if _numbered(trl, _TRL_FILE):
        kinds["trl"] = trl
    if _numbered(folder, _NEMO_FILE):
        kinds["nemo-rl"] = folder
    prime = folder / "rollouts" if (folder / "rollouts").is_dir() else folder
    if any(p.is_dir() and _PRIME_DIR.match(p.name) for p in prime.iterdir()):
        kinds["prime-rl"] = prime
    if (folder / "scores.jsonl").is_file():
        kinds["fade-eval"] = folder / "scores.jsonl"
    return kinds


def detect(path: str | Path) -> tuple[str, Path]:
    """The format of the dump at ``path`` and the file or folder its reader takes."""
    path = Path(path)
    if not path.exists():
        raise DumpError(f"{path}: no such file or folder: expected a run's rollout dump")
    if path.is_file():
        suffix = path.suffix.lower()
        if suffix == ".parquet":
            names = set(arrow().parquet.read_schema(path).names)
            return ("trl", path) if {"step", "prompt", "completion", "advantage"} <= names else ("generic", path)
        if suffix == ".csv":
            return "generic", path
        if suffix in (".jsonl", ".json"):
            return _jsonl_format(path), path
        raise DumpError(f"{path}: an unknown file type {suffix or '(none)'}: expected .jsonl, .csv or .parquet")
    if not path.is_dir():
        raise DumpError(f"{path}: neither a regular file nor a folder: expected a run's rollout dump")
    kinds = _folder_kinds(path)
    if not kinds:
        raise DumpError(
            f"{path}: no rollout dump found: expected verl's N.jsonl, TRL's completions/completions_N.parquet, "
            "NeMo-RL's train_data_stepN.jsonl, prime-rl's rollouts/step_N/ or fade eval's scores.jsonl"
        )
    if len(kinds) > 1:
        raise DumpError(f"{path}: a folder mixing {' and '.join(sorted(kinds))} dumps: expected one run's files")
    (kind, where), = kinds.items()
    return kind, where


def read_run(path: str | Path, options: ReadOptions | None = None, *, fmt: str | None = None,
             progress: Callable[[int, int], None] | None = None) -> RunRecords:
    """Read the run at ``path`` (format detected unless ``fmt`` names one of :data:`FORMATS`).

    ``progress(done, total)`` is called after each file is read.
    """
    options = options or ReadOptions()
    if options.metrics is not None:
        _check_metrics_file(options.metrics)
    kind, where = detect(path)
    if fmt is not None:
        if fmt not in FORMATS:
            raise DumpError(f"format {fmt!r} is unknown: expected one of {', '.join(FORMATS)}")
        if fmt != kind:
            raise DumpError(f"{path}: reads as a {kind} dump, not {fmt}: expected --format {kind} (or leave it out)")
    reader = {"verl": _read_verl, "trl": _read_trl, "nemo-rl": _read_nemo, "prime-rl": _read_prime,
              "fade-eval": _read_eval, "generic": _read_generic}[kind]
    run = reader(where, options, progress or (lambda done, total: None))
    if not run.steps:
        raise DumpError(f"{path}: no steps read: expected at least one step of rollouts")
    run.steps.sort(key=lambda b: b.step)  # a stateful estimator is replayed in this order
    for a, b in zip(run.steps, run.steps[1:]):
        if a.step == b.step:
            raise DumpError(f"{b.source}: step {b.step} again (also in {a.source}): expected each step once")
    _set_success(run, options)
    if options.metrics is not None and kind != "verl":
        _read_metrics(run, options.metrics)
    return run


# -- shared helpers --------------------------------------------------------------------------------


def _check_metrics_file(path: Path) -> None:
    """Refuse a --metrics that is not a regular file before it is opened: reading a FIFO would wait
    for a writer forever, and a folder or a device is no file of metrics."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        raise DumpError(f"--metrics {path}: no such file: expected a file of per-step metrics") from None
    if not stat.S_ISREG(mode):
        kind = "a folder" if stat.S_ISDIR(mode) else "a FIFO" if stat.S_ISFIFO(mode) else "not a regular file"
        raise DumpError(f"--metrics {path} is {kind}: expected a regular file of per-step metrics")


def _files(numbered: list[tuple[int, Path]], read: Callable[[int, Path, bool], StepBatch | None],
           progress: Callable[[int, int], None]) -> list[StepBatch]:
    steps = []
    for i, (n, p) in enumerate(numbered):
        batch = read(n, p, i == len(numbered) - 1)
        if batch is not None:
            steps.append(batch)
        progress(i + 1, len(numbered))
    return steps


def _set_success(run: RunRecords, options: ReadOptions) -> None:
    binary = all(np.isin(b.rewards, (0.0, 1.0)).all() for b in run.steps)
    if options.success_threshold is not None:
        t = float(options.success_threshold)
        if binary and not 0.0 < t <= 1.0:
            raise ValueError(f"--success-threshold {t:g}: the rewards of {run.path} are all 0 or 1, so it makes "
                             f"{'no' if t > 1.0 else 'every'} rollout a success: expected a threshold in (0, 1]")
        highest = max(float(b.rewards.max()) for b in run.steps)
        lowest = min(float(b.rewards.min()) for b in run.steps)
        if t > highest or t <= lowest:
            run.notes.append(f"--success-threshold {t:g} makes {'no' if t > highest else 'every'} rollout a success "
                             f"(rewards from {lowest:g} to {highest:g})")
        run.success = (">=", t)
        return
    if run.success is not None:
        return
    if binary:
        run.success = (">=", 1.0)
    else:
        run.notes.append("rewards are not all 0 or 1 and no --success-threshold was given: no solve rates or pass@k")


def _runs(keys: list) -> tuple[np.ndarray, np.ndarray]:
    """The runs of equal consecutive keys: their first rows and lengths."""
    ids, _ = encode_keys(keys)
    starts = np.r_[0, np.flatnonzero(np.diff(ids)) + 1].astype(np.int64)
    return starts, np.diff(np.r_[starts, len(keys)])


def _split_runs(starts: np.ndarray, lengths: np.ndarray, size: int, where: str, how: str) -> np.ndarray:
    """Group ids of runs of one prompt cut into groups of ``size`` rows; a run that is not a whole
    number of groups is refused (``how`` says where ``size`` came from)."""
    bad = np.flatnonzero(lengths % size)
    if bad.size:
        a, n = int(starts[bad[0]]), int(lengths[bad[0]])
        hint = "" if how == "--group-size" else "; give --group-size if it was inferred wrongly"
        raise DumpError(f"{where}: rows {a + 1}-{a + n} are {n} rows of one prompt, not a multiple of the group size "
                        f"{size} ({how}): expected groups of one size (ragged or missing groups{hint})")
    return np.repeat(np.arange(int(lengths.sum()) // size, dtype=np.int64), size)


def _blocks(keys: list[str], where: str, group_size: int | None) -> tuple[np.ndarray, int]:
    """Groups as consecutive blocks of one prompt: the block length is ``group_size`` or, left out,
    the shortest run of equal prompts (every run must then be a whole number of blocks)."""
    starts, lengths = _runs(keys)
    size = group_size or int(lengths.min())
    how = "--group-size" if group_size else "the shortest run of one prompt"
    return _split_runs(starts, lengths, size, where, how), size


# -- verl ------------------------------------------------------------------------------------------


def _read_verl(where: Path, options: ReadOptions, progress) -> RunRecords:
    numbered = [(-1, where)] if where.is_file() else _numbered(where, _VERL_FILE)
    layouts: dict[str, Path] = {}

    def read(n: int, p: Path, newest: bool) -> StepBatch:
        cols = read_jsonl(p, {"score": "float", "step": "int", "uid": "str", "input": "str"},
                          required=("score", "step", "input"), newest=newest)
        steps = np.unique(cols["step"])
        if steps.size != 1 or (n >= 0 and int(steps[0]) != n):
            raise DumpError(f"{p}: holds step(s) {', '.join(map(str, steps[:5]))}: expected only step {n}, "
                            "as verl names the file")
        uid = cols["uid"]
        layout = "v1" if uid.null_count == 0 else "legacy" if uid.null_count == len(uid) else "mixed"
        if layout == "mixed":
            raise DumpError(f"{p}: some lines have a uid and some not: expected one verl trainer's dump")
        layouts.setdefault(layout, p)
        if len(layouts) > 1:
            raise DumpError(f"{where}: a folder mixing v1 ({layouts['v1'].name}) and legacy ({layouts['legacy'].name}) "
                            "verl dumps: expected one run's files")
        rewards = cols["score"]
        if layout == "v1":
            rewards, groups, keys = _verl_v1_groups(p, uid, rewards, cols["input"])
        else:
            groups, keys = encode_keys(cols["input"])  # the legacy trainer reorders rows: group by prompt text
        return StepBatch(int(steps[0]), rewards, groups, prompt_keys=keys, source=str(p))

    steps = _files(numbered, read, progress)
    run = RunRecords("verl" if "legacy" not in layouts else "verl-legacy", str(where), steps)
    if "legacy" in layouts:
        run.notes.append("legacy verl dump (no uid): groups are the rollouts of one prompt text")
    if options.metrics is not None:
        _read_metrics(run, options.metrics)
    return run


def _verl_v1_groups(p: Path, uids, rewards: np.ndarray, inputs):
    """verl v1: the uid's prompt part is the group; of a session's rows the highest index is its
    rollout (columnwise: the uid is split by pyarrow, and rows are dropped only where a session
    wrote several).

    verl writes each output once, under ``{uid}_{session_id}_{index}`` (verl 0.9,
    trainer/ppo/v1/agent_loop_tq.py, _agent_loop_postprocess), so a uid written twice is refused:
    kept or dropped, it would count by the rows beside it. The n sessions of a uid are spawned from
    one prompt (_run_prompt), so their first outputs (index 0) carry one prompt text; a later
    output carries its own ``prompt_ids`` (a multi-output agent loop's context), so only index 0
    is held to it.
    """
    pa = arrow()
    import pyarrow.compute as pc

    parts = pc.extract_regex(uids, r"^(?P<prompt>.+)_(?P<session>[^_]+)_(?P<index>[0-9]+)$")
    if parts.null_count:
        row = int(np.flatnonzero(parts.is_null().to_numpy(zero_copy_only=False))[0])
        raise DumpError(
            f"{p}: row {row + 1}: uid {uids[row].as_py()!r}: expected verl's {{prompt}}_{{session}}_{{index}}"
        )
    prompt, prompt_names = encode_keys(pc.struct_field(parts, "prompt"))
    session, _ = encode_keys(pc.struct_field(parts, "session"))
    try:
        index = pc.cast(pc.struct_field(parts, "index"), pa.int64()).to_numpy(zero_copy_only=False)
    except pa.ArrowInvalid:
        big = next(i for i, u in enumerate(uids.to_pylist()) if int(u.rsplit("_", 1)[1]) >= 2**63)
        raise DumpError(f"{p}: row {big + 1}: uid {uids[big].as_py()!r}: expected an index within int64") from None
    order = np.lexsort((np.arange(len(prompt)), index, session, prompt))  # a uid's rows together, in file order
    same = (np.diff(prompt[order]) == 0) & (np.diff(session[order]) == 0) & (np.diff(index[order]) == 0)
    if same.any():
        first, again = (int(i) for i in order[np.flatnonzero(same)[0]:][:2])
        raise DumpError(f"{p}: rows {first + 1} and {again + 1}: uid {uids[again].as_py()!r} twice: expected each "
                        "{prompt}_{session}_{index} once, as verl writes each output")
    text, _ = encode_keys(inputs)
    head = np.flatnonzero(index == 0)
    _, at = np.unique(prompt[head], return_index=True)
    owner = np.full(len(prompt_names), -1)
    owner[prompt[head[at]]] = head[at]
    other = head[text[head] != text[owner[prompt[head]]]]
    if other.size:
        row, first = int(other[0]), int(owner[prompt[other[0]]])
        raise DumpError(f"{p}: row {row + 1}: uid {uids[row].as_py()!r} has another input than row {first + 1} of "
                        f"prompt {prompt_names[prompt[row]]!r}: expected one prompt text per uid prompt (the "
                        "sessions of one prompt)")
    rows = np.arange(len(rewards))
    if index.any():
        key = prompt * (int(session.max()) + 1) + session
        order = np.lexsort((index, key))  # by session, then index: the last of each session is its final output
        last = np.r_[key[order][1:] != key[order][:-1], True]
        rows = np.sort(order[last])
    groups, _ = dense_ids(prompt[rows])
    _, first = np.unique(groups, return_index=True)
    keys = inputs.take(pa.array(rows[first])).to_pylist()
    return rewards[rows], groups, keys


def _read_metrics(run: RunRecords, path: Path) -> None:
    """Per-step scalars: verl's file logger ({"step", "data": {...}}), TRL's trainer_state.json
    (its log_history) or prime-rl's metrics.jsonl ({step, ...})."""
    rows: list[tuple[int, dict]] = []
    if path.suffix == ".json":
        try:
            history = json.loads(path.read_text(encoding="utf-8")).get("log_history")
        except (ValueError, AttributeError):
            history = None
        if not isinstance(history, list):
            raise DumpError(f"{path}: no log_history list: expected TRL's trainer_state.json")
        rows = [(int(h["step"]), h) for h in history if isinstance(h, dict) and "step" in h]
    else:
        with open(path, encoding="utf-8") as f:
            for lineno, line in enumerate(f, start=1):
                if not line.strip():
                    continue
                try:
                    obj = json.loads(line)
                except ValueError:
                    raise DumpError(f"{path}:{lineno}: not valid JSON: expected one metrics object per line") from None
                if not isinstance(obj, dict) or not isinstance(obj.get("step"), int):
                    raise DumpError(f"{path}:{lineno}: expected an object with an integer 'step'")
                rows.append((obj["step"], obj["data"] if isinstance(obj.get("data"), dict) else obj))
    for step, data in rows:
        for key in ("actor/entropy", "entropy"):
            if isinstance(data.get(key), (int, float)) and math.isfinite(data[key]):
                run.entropy[step] = float(data[key])
                break
        for key in ("frac_reward_zero_std", "reward_std"):
            if isinstance(data.get(key), (int, float)):
                run.engine_metrics.setdefault(step, {})[key] = float(data[key])
        evicted = [k for k, v in data.items() if "filter_groups" in k and isinstance(v, (int, float)) and v > 0]
        if evicted and run.filtered is None:
            run.filtered = (f"the run filtered groups ({evicted[0]} > 0 at step {step}): the groups it dropped are "
                            "not in the dump, so the zero-spread share is a lower bound")


# -- TRL -------------------------------------------------------------------------------------------


class TrlRecord:
    """What a TRL run's own ``trainer_state.json`` says about its completions files.

    ``reward_functions``: the names in its ``log_history`` keys ``rewards/NAME/mean`` (and
    ``eval_rewards/...``), which TRL logs for every reward function under the name it gives the
    function's parquet column (TRL 1.16, trl/trainer/grpo_trainer.py:2821-2825 and 2835-2836, both
    over ``self.reward_func_names``); ``evaluated``: the steps with an evaluation's entry (its keys
    start with ``eval_``); ``last_step``: its ``global_step``.
    """

    _REWARD_KEY = re.compile(r"^(?:eval_)?rewards/(.+)/(?:mean|std)$")

    def __init__(self, path: Path) -> None:
        try:
            state = json.loads(path.read_text(encoding="utf-8"))
            history = state.get("log_history")
        except (ValueError, AttributeError):
            history = None
        if not isinstance(history, list):
            raise DumpError(f"{path}: no log_history list: expected TRL's trainer_state.json")
        self.path = path
        self.reward_functions: list[str] = []
        self.evaluated: set[int] = set()
        for entry in history:
            for key in entry if isinstance(entry, dict) else ():
                m = self._REWARD_KEY.match(key)
                if m and m.group(1) not in self.reward_functions:
                    self.reward_functions.append(m.group(1))
                if key.startswith("eval_") and isinstance(entry.get("step"), int):
                    self.evaluated.add(entry["step"])
        step = state.get("global_step")
        self.last_step = step if isinstance(step, int) else None


def _trl_record(where: Path, options: ReadOptions) -> TrlRecord | None:
    """The run's trainer_state.json: --metrics where it names one, else the one beside the dump."""
    path = options.metrics if options.metrics is not None and options.metrics.suffix == ".json" else _trl_state(where)
    return None if path is None else TrlRecord(path)


def _names(text: str) -> list[str]:
    return [n.strip() for n in text.split(",") if n.strip()]


def _trl_reward_columns(schema, options: ReadOptions, record: TrlRecord | None,
                        where: Path) -> tuple[list[str], str]:
    """The reward columns of one completions file, and how they were chosen (for the run's note).

    TRL 1.16 writes ``step, prompt, completion``, a column per reward function (named as
    ``self.reward_func_names``: the function's ``__name__`` or the reward model's name), then
    every column a reward function logged with ``log_extra``, then ``advantage``
    (trl/trainer/grpo_trainer.py:3341-3348); a reward column holds ``rewards_per_func[:, i].tolist()``
    of a float32 tensor (1581, 2836), so it is always floats, NaN where the function returned None.
    A ``log_extra`` column holds whatever the function logged: text, integers, or floats. So the
    reward columns are, in this order of precedence: ``--reward-column``; the reward functions the
    run's trainer_state.json names; else the float columns (not TRL's own, not a ``log_extra``
    column of fade's own rewards), with a note naming them, since a float ``log_extra`` column
    cannot be told from a reward there.
    """
    pa = arrow()
    types = {f.name: f.type for f in schema}
    candidates = [n for n in types if n not in _TRL_FIXED]
    numeric = [n for n in candidates if pa.types.is_floating(types[n]) or pa.types.is_integer(types[n])
               or pa.types.is_boolean(types[n])]
    if options.reward_column is not None:
        columns = _names(options.reward_column)
        if not columns or len(set(columns)) != len(columns):
            raise ValueError(f"--reward-column {options.reward_column!r}: expected distinct column names, "
                             "comma-separated")
        for name in columns:
            if name not in types or name in _TRL_FIXED:
                raise DumpError(f"{where}: no reward column {name!r}: expected one of {', '.join(candidates)}")
            if name not in numeric:
                raise DumpError(f"{where}: column {name!r} is {types[name]}, given as --reward-column: expected "
                                f"a numeric reward column ({', '.join(numeric) or 'none here'})")
        how = "--reward-column"
    elif record is not None and record.reward_functions:
        missing = [n for n in record.reward_functions if n not in types]
        if missing:
            raise DumpError(f"{where}: no column {missing[0]!r} for the reward function {record.path} names: "
                            f"expected a column per reward function ({', '.join(record.reward_functions)}; "
                            "give --reward-column NAME,... to choose)")
        columns = [n for n in candidates if n in record.reward_functions]  # the file's order is TRL's weights' order
        how = f"the reward functions the run's {record.path.name} names"
    else:
        columns = [n for n in candidates if n not in KNOWN_EXTRA_COLUMNS and pa.types.is_floating(types[n])]
        if not columns:
            raise DumpError(f"{where}: no reward column: expected a float column per reward function beside "
                            f"{', '.join(_TRL_FIXED)} (found {', '.join(candidates) or 'none'})")
        how = ("the float columns, as no trainer_state.json names the run's reward functions: TRL writes rewards "
               "as floats, so a text or integer column is a log_extra column, but a float log_extra column cannot "
               "be told from a reward: if one of these is one, name the reward columns with --reward-column NAME,...")
    return columns, how


def _read_trl(where: Path, options: ReadOptions, progress) -> RunRecords:
    numbered = [(-1, where)] if where.is_file() else _numbered(where, _TRL_FILE)
    notes: list[str] = []
    state: dict[str, Any] = {"previous": None, "evaluation": False, "columns": None}
    record = _trl_record(where, options)
    evaluated = set() if record is None else record.evaluated
    evaluation: list[str] = []

    def read(n: int, p: Path, newest: bool) -> StepBatch | None:
        schema = arrow().parquet.read_schema(p)
        missing = [c for c in ("step", "prompt", "advantage") if c not in schema.names]
        if missing:
            raise DumpError(f"{p}: no column {missing[0]!r}: expected TRL's completions parquet")
        columns, how = _trl_reward_columns(schema, options, record, p)
        if state["columns"] is None:
            state["columns"] = columns
            weights = options.reward_weights or [1.0] * len(columns)
            if len(weights) != len(columns):
                raise DumpError(f"--reward-weights has {len(weights)} weights for {len(columns)} reward columns "
                                f"({', '.join(columns)}): expected one per column")
            state["weights"] = np.asarray(weights, dtype=np.float64)
            note = f"reward columns: {', '.join(columns)} ({how})"
            if options.reward_weights:
                note += f"; total reward = {' + '.join(f'{w:g} x {c}' for w, c in zip(weights, columns))}"
            elif len(columns) > 1:
                note += "; total reward = their sum (TRL's default reward_weights)"
            left = [n for n in schema.names if n not in columns and n not in _TRL_FIXED]
            notes.append(note + (f"; left out: {', '.join(left)}" if left else ""))
        elif columns != state["columns"]:
            raise DumpError(f"{p}: reward columns {columns}, not {state['columns']} as in the earlier files: "
                            "expected one run's files")
        table = read_parquet(p, ["step", "prompt", "advantage", *columns])
        steps = np.unique(_int_column(table, "step", p))
        if steps.size != 1:
            raise DumpError(f"{p}: holds steps {', '.join(map(str, steps[:5]))}: expected one step per file")
        step = int(steps[0])
        if n >= 0 and step != n:  # TRL writes the step column and the name from one global_step
            raise DumpError(f"{p}: holds step {step}: expected step {n}, as TRL names the file "
                            "(completions_{global_step:05d}.parquet)")
        parts = np.stack([table.column(c).to_numpy(zero_copy_only=False).astype(np.float64) for c in columns], 1)
        with np.errstate(over="ignore", invalid="ignore"):
            rewards = np.nansum(parts * state["weights"], axis=1)  # a None-returning function is left out, as TRL does
        if not np.isfinite(rewards).all():
            row = int(np.flatnonzero(~np.isfinite(rewards))[0])
            raise DumpError(f"{p}: row {row + 1}: total reward {rewards[row]!r} (from {parts[row].tolist()}): "
                            "expected a finite number")
        adv = table.column("advantage").to_numpy(zero_copy_only=False).astype(np.float64)
        prompt = table.column("prompt")
        keys = prompt.to_pylist() if arrow().types.is_string(prompt.type) else [
            json.dumps(v, sort_keys=True) for v in prompt.to_pylist()]
        fingerprint = (step, rewards.tobytes(), adv.tobytes(), tuple(keys))
        repeats = state["previous"] is not None and fingerprint[1:] == state["previous"][1:]
        # TRL 1.16 logs an evaluation's completions with the training ones: one table (_logs, bounded
        # by the generation batch; trl/trainer/grpo_trainer.py:1088-1095, extended in evaluation too,
        # 2833-2837), written by log() in either mode (3302-3303) as completions_{global_step}
        # (3341-3357). An evaluation at step s (logged after the training log, transformers'
        # _maybe_log_save_evaluate) so replaces completions_s with its rows, or the tail of the
        # training batch and its rows; a later step that generates nothing new writes them again.
        # Nothing in the file says so (same columns, same row count); the run's log_history does.
        if step in evaluated or (repeats and state["evaluation"]):
            evaluation.append(p.name)
            state["previous"], state["evaluation"] = fingerprint, True
            return None
        if not np.isfinite(adv).all():
            row = int(np.flatnonzero(~np.isfinite(adv))[0])
            raise DumpError(f"{p}: row {row + 1}: advantage {adv[row]!r}: expected a finite number")
        if repeats:
            notes.append(f"{p.name} repeats the batch of step {state['previous'][0]}: counted once")
            return None
        state["previous"], state["evaluation"] = fingerprint, False
        starts, lengths = _runs(keys)
        batch = StepBatch(step, rewards, np.empty(0, dtype=np.int64), advantages=adv, source=str(p))
        runs.append((batch, [keys[i] for i in starts], starts, lengths))
        return batch

    runs: list[tuple[StepBatch, list, np.ndarray, np.ndarray]] = []
    steps = _files(numbered, read, progress)
    how = _trl_groups(runs, options.group_size)
    if how is not None:
        notes.append(how)
    if evaluation:
        notes.append(f"{', '.join(evaluation)} left out: the rows of an evaluation, not a training batch (the "
                     f"run's {record.path.name} logs an evaluation at their step, or they repeat such a file): TRL "
                     "writes an evaluation's completions under the training step's file name")
    if record is None:
        notes.append("no trainer_state.json beside the dump: a file in which TRL wrote an evaluation's rows under a "
                     "training step's name (where the run evaluated during training) cannot be told from a batch")
    elif record.last_step is not None and numbered and max(n for n, _ in numbered) > record.last_step:
        notes.append(f"{record.path} records steps up to {record.last_step}: a later file in which TRL wrote an "
                     "evaluation's rows cannot be told from a batch")
    run = RunRecords("trl", str(where), steps, estimator="grpo:eps=0.0001", notes=notes)
    run.notes.append("the run's estimator is taken as TRL's default advantage (scale_rewards='group')")
    state_file = _trl_state(where)
    if state_file is not None and options.metrics is None:
        _read_metrics(run, state_file)
    return run


def _trl_groups(runs: list[tuple[StepBatch, list, np.ndarray, np.ndarray]], group_size: int | None) -> str | None:
    """Cut each TRL batch's runs of one prompt into groups; returns a note on how the size was found.

    TRL (1.16) writes a group as ``num_generations`` consecutive rows of one prompt: its sampler
    repeats each prompt ``mini_repeat_count=num_generations`` times in a row
    (trl/trainer/grpo_trainer.py:1309-1316) and the rewards are grouped by position,
    ``rewards.view(-1, num_generations)`` (2765), one ``num_generations`` for every training step
    (2754). A prompt may fill two consecutive groups (a dataset that holds it twice), so a run of
    one prompt is a whole number of groups, not one. Neither the files nor trainer_state.json
    state ``num_generations`` (training_args.bin is a pickle, and is not read), so without
    ``--group-size`` the group size is the shortest run of one prompt over all the run's training
    files, every run a whole number of it. TRL centres each group's advantages on the group's mean
    (2785; ``normalize_then_sum`` centres each reward function per group, 2794, then the batch),
    an unscorable row's advantage set to 0 (2810), so the advantages of every group, given or
    inferred, sum to 0: a partial group, or a size that splits the real groups, is refused rather
    than read as smaller groups.
    """
    if not runs:
        return None
    if group_size is None:
        batch, _, starts, lengths = min(runs, key=lambda r: int(r[3].min()))
        at = int(np.argmin(lengths))
        size = int(lengths[at])
        shortest = f"{Path(batch.source).name} rows {starts[at] + 1}-{starts[at] + size}"
        how = f"the shortest run of one prompt in the run's files, {shortest}"
    else:
        size, how = group_size, "--group-size"
    for batch, keys, starts, lengths in runs:
        batch.groups = _split_runs(starts, lengths, size, batch.source, how)
        batch.prompt_keys = [k for k, n in zip(keys, (lengths // size).tolist()) for _ in range(n)]
        adv = batch.advantages.reshape(-1, size)
        total = adv.sum(axis=1)
        off = np.flatnonzero(np.abs(total) > 1e-3 * np.abs(adv).sum(axis=1) + 1e-6)
        if off.size:
            g = int(off[0])
            hint = "" if group_size else ": give --group-size"
            raise DumpError(f"{batch.source}: rows {g * size + 1}-{(g + 1) * size}: advantages sum to "
                            f"{total[g]:.3g}, not 0: expected groups of {size} rows ({how}), each centred on its "
                            f"mean as TRL centres a group (a partial group, or the group size is not {size}{hint})")
    if group_size is not None:
        return None
    return (f"group size {size}: {how}; every group's advantages sum to 0, as TRL centres them "
            "(--group-size states it)")


def _trl_state(where: Path) -> Path | None:
    """trainer_state.json of the run's output folder (or of its newest checkpoint)."""
    out = where.parent.parent if where.is_file() else where.parent
    if (out / "trainer_state.json").is_file():
        return out / "trainer_state.json"
    checkpoints = sorted(
        out.glob("checkpoint-*/trainer_state.json"),
        key=lambda p: int(p.parent.name.split("-")[-1]) if p.parent.name.split("-")[-1].isdigit() else -1,
    )
    return checkpoints[-1] if checkpoints else None


# -- NeMo-RL and prime-rl --------------------------------------------------------------------------


def _read_nemo(where: Path, options: ReadOptions, progress) -> RunRecords:
    numbered = [(-1, where)] if where.is_file() else _numbered(where, _NEMO_FILE)

    def read(n: int, p: Path, newest: bool) -> StepBatch:
        cols = read_jsonl(p, {"rewards": "float"}, required=("rewards",), newest=newest,
                          raw_keys=("content", "advantages", "token_loss_mask"))
        keys = [json.dumps(c[:-1] if isinstance(c, list) else c, sort_keys=True) for c in cols["content"]]
        groups, size = _blocks(keys, str(p), options.group_size)
        adv = _token_advantages(p, cols["advantages"], cols["token_loss_mask"])
        return StepBatch(n, cols["rewards"], groups, advantages=adv,
                         prompt_keys=[keys[i] for i in range(0, len(keys), size)], source=str(p))

    run = RunRecords("nemo-rl", str(where), _files(numbered, read, progress))
    run.notes.append("NeMo-RL groups are consecutive rows of one prompt (all messages but the last)")
    return run


def _token_advantages(p: Path, advantages: list, masks: list) -> np.ndarray | None:
    """A sequence's advantage from its per-token ones: their mean over the loss mask."""
    if all(a is None for a in advantages):
        return None
    out = np.empty(len(advantages))
    for i, (a, m) in enumerate(zip(advantages, masks)):
        a = np.asarray(a if isinstance(a, list) else [a], dtype=np.float64).ravel()
        m = np.ones_like(a) if m is None else np.asarray(m, dtype=np.float64).ravel()[: a.size]
        if a.size == 0 or m.sum() == 0:
            raise DumpError(f"{p}: row {i + 1}: no advantage under the loss mask: expected per-token advantages")
        out[i] = float((a * m).sum() / m.sum())
    return out


def _read_prime(where: Path, options: ReadOptions, progress) -> RunRecords:
    split = options.prime_split
    numbered = _one_per_step(sorted(
        (int(m.group(1)), d / "train" / split / "traces.jsonl")
        for d in where.iterdir() if d.is_dir() and (m := _PRIME_DIR.match(d.name))
        and (d / "train" / split / "traces.jsonl").is_file()
    ), where)

    def read(n: int, p: Path, newest: bool) -> StepBatch:
        cols = read_jsonl(p, {}, newest=newest, raw_keys=("group", "task", "traces", "run"))
        rewards, gkeys, tkeys = [], [], []
        for row, (group, task, traces, run) in enumerate(zip(cols["group"], cols["task"], cols["traces"], cols["run"])):
            where_row = f"{p}: row {row + 1}"
            if not isinstance(group, dict) or "id" not in group:
                raise DumpError(f"{where_row}: no group.id: expected prime-rl's episode record")
            step = ((run or {}).get("work") or {}).get("step")
            if step is not None and (isinstance(step, bool) or not isinstance(step, int) or step != n):
                raise DumpError(f"{where_row}: run.work.step {step}: expected {n}, as the folder step_{n} names it")
            if not traces:
                raise DumpError(f"{where_row}: no traces: expected at least one trace with rewards")
            total = 0.0
            for name, r in (traces[-1].get("rewards") or {}).items():
                if not isinstance(r, dict) or not isinstance(r.get("score"), (int, float)):
                    raise DumpError(f"{where_row}: reward {name!r} is {r!r}: expected {{score, weight}}")
                total += float(r["score"]) * float(r.get("weight", 1.0))
            if not math.isfinite(total):
                raise DumpError(f"{where_row}: reward {total!r}: expected a finite number")
            rewards.append(total)
            gkeys.append(str(group["id"]))
            tkeys.append(str((task or {}).get("key", group["id"])))
        groups, _ = encode_keys(gkeys)
        first: dict[int, str] = {}
        for g, t in zip(groups.tolist(), tkeys):
            first.setdefault(g, t)
        return StepBatch(n, np.asarray(rewards, dtype=np.float64), groups,
                         prompt_keys=[first[g] for g in range(len(first))], source=str(p))

    if not numbered:
        raise DumpError(f"{where}: no step_N/train/{split}/traces.jsonl: expected prime-rl's rollouts folder")
    return RunRecords("prime-rl", str(where), _files(numbered, read, progress))


# -- fade eval and generic -------------------------------------------------------------------------


def _read_eval(where: Path, options: ReadOptions, progress) -> RunRecords:
    cols = read_jsonl(where, {"problem_id": "key", "score": "float"}, required=("problem_id", "score"), newest=True)
    groups, keys = encode_keys(cols["problem_id"])
    progress(1, 1)
    run = RunRecords(
        "fade-eval", str(where), [StepBatch(0, cols["score"], groups, prompt_keys=keys, source=str(where))]
    )
    run.success = (">", 0.0)  # fade eval counts a sample with score > 0 as correct
    return run


def _read_generic(where: Path, options: ReadOptions, progress) -> RunRecords:
    suffix = where.suffix.lower()
    if suffix in (".jsonl", ".json"):
        first = _first_object(where)
        key = next((k for k in GENERIC_GROUP_KEYS if k in first), GENERIC_GROUP_KEYS[0])
        cols = read_jsonl(where, {"step": "int", "reward": "float", key: "key", "advantage": "float"},
                          required=("step", "reward", key), newest=True)
        keys = cols[key]
    else:
        pa = arrow()
        if suffix == ".csv":
            import pyarrow.csv as pcsv

            # text has no type in a CSV file: the step is parsed here (to name a row that is not an
            # integer) and a group key stays as written ("01" and "1" are two keys)
            text = {k: pa.string() for k in ("step", *GENERIC_GROUP_KEYS)}
            try:
                table = pcsv.read_csv(where, convert_options=pcsv.ConvertOptions(column_types=text))
            except pa.ArrowInvalid as exc:
                raise DumpError(f"{where}: not a readable CSV file ({exc})") from None
        else:
            table = read_parquet(where)
        names = table.schema.names
        key = next((k for k in GENERIC_GROUP_KEYS if k in names), None)
        for need in ("step", "reward"):
            if need not in names:
                raise DumpError(
                    f"{where}: no column {need!r}: expected step, reward and one of {', '.join(GENERIC_GROUP_KEYS)}"
                )
        if key is None:
            raise DumpError(f"{where}: no group column: expected one of {', '.join(GENERIC_GROUP_KEYS)}")
        cols = {
            "step": _int_column(table, "step", where),
            "reward": table.column("reward").to_numpy(zero_copy_only=False).astype(np.float64),
        }
        bad = np.flatnonzero(~np.isfinite(cols["reward"]))
        if bad.size:
            raise DumpError(f"{where}: row {bad[0] + 1}: reward {cols['reward'][bad[0]]!r}: expected a finite number")
        cols["advantage"] = (table.column("advantage").to_numpy(zero_copy_only=False).astype(np.float64)
                             if "advantage" in names else np.full(len(cols["step"]), np.nan))
        column = table.column(key)
        if pa.types.is_dictionary(column.type):
            column = column.cast(column.type.value_type)
        if not (pa.types.is_string(column.type) or pa.types.is_large_string(column.type)
                or pa.types.is_integer(column.type)):
            raise DumpError(f"{where}: column {key!r} is {column.type}: expected text or integers")
        keys = column.to_pylist()
        if column.null_count:
            raise DumpError(f"{where}: row {keys.index(None) + 1}: no {key!r}: expected every row to have it")
    steps, adv = cols["step"], cols["advantage"]
    has_adv = ~np.isnan(adv)
    if has_adv.any() and not has_adv.all():
        row = int(np.flatnonzero(~has_adv)[0])
        raise DumpError(
            f"{where}: record {row + 1}: no 'advantage' while others have one: expected it on every record or none"
        )
    out = []
    order = np.argsort(steps, kind="stable")
    bounds = np.flatnonzero(np.diff(steps[order])) + 1
    for idx in np.split(order, bounds):
        groups, names = encode_keys([keys[i] for i in idx])
        out.append(StepBatch(int(steps[idx[0]]), cols["reward"][idx], groups,
                             advantages=adv[idx] if has_adv.all() else None, prompt_keys=names, source=str(where)))
    progress(1, 1)
    return RunRecords("generic", str(where), out)


def _int_column(table, name: str, where: Path) -> np.ndarray:
    """A column of integers within int64 (as CSV text, or an integer or float parquet column), or
    an error naming the first row that is not one: a step of 2.5 is no step, and is not cut to 2."""
    pa = arrow()
    import pyarrow.compute as pc

    column = table.column(name)
    if column.null_count:
        row = int(np.flatnonzero(column.is_null().to_numpy(zero_copy_only=False))[0])
        raise DumpError(f"{where}: row {row + 1}: no {name!r}: expected every row to have it")
    kind = column.type
    if pa.types.is_integer(kind):
        if pa.types.is_unsigned_integer(kind) and column.length() and pc.max(column).as_py() > INT64_MAX:
            row = int(np.flatnonzero(column.to_numpy(zero_copy_only=False) > INT64_MAX)[0])
            raise DumpError(f"{where}: row {row + 1}: {name} {column[row].as_py()}: expected an integer within int64")
        return column.to_numpy(zero_copy_only=False).astype(np.int64)
    if pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_floating(kind):
        for row, value in enumerate(column.to_pylist()):
            problem = _not_int64(value)
            if problem:
                raise DumpError(f"{where}: row {row + 1}: {name} {value!r}: expected {problem}")
        if pa.types.is_floating(kind):
            raise DumpError(f"{where}: column {name!r} is {kind}: expected integers")
        return np.array([int(v) for v in column.to_pylist()], dtype=np.int64)
    raise DumpError(f"{where}: column {name!r} is {kind}: expected integers")


def _not_int64(value: Any) -> str | None:
    """What a step written as ``value`` (text or a float) fails to be, or None for an int64."""
    if isinstance(value, float):
        if not value.is_integer():
            return "an integer"
        return None
    if not re.fullmatch(r"[+-]?[0-9]+", value.strip()):
        return "an integer"
    if not INT64_MIN <= int(value) <= INT64_MAX:
        return "an integer within int64"
    return None
