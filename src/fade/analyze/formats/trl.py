"""TRL's completions files (``GRPOTrainer`` with ``log_completions=True``).

``completions/completions_NNNNN.parquet`` with ``step, prompt, completion``, a column per reward
function, the reward functions' ``log_extra`` columns and ``advantage``; the reward columns are
those the run's trainer_state.json names, else the float ones (:func:`_trl_reward_columns`). A
group is a consecutive block of ``num_generations`` rows with one prompt; the total reward is the
weighted sum of the reward columns with NaN (a function that returned None) left out, as TRL sums
them. A file that repeats the previous one's batch is counted once.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np

from ..columns import arrow, parquet_schema, read_parquet, shown
from ..metrics import history_step, read_metrics, trainer_state
from ..records import DumpError, RunRecords, StepBatch
from .base import Format, ReadOptions, int_column, number_column, numbered_files, prompt_runs, split_runs, step_files

__all__ = ["FORMAT", "KNOWN_EXTRA_COLUMNS", "TrlRecord"]

_TRL_FILE = re.compile(r"^completions_(\d+)\.parquet$")
_TRL_FIXED = ("step", "prompt", "completion", "advantage")

#: Columns fade's own TRL reward functions log with ``log_extra`` (fade.verifiers.rewards): never rewards.
KNOWN_EXTRA_COLUMNS = ("math_reason", "code_reason")


class TrlRecord:
    """What a TRL run's own ``trainer_state.json`` says about its completions files.

    ``reward_functions``: the names in its ``log_history`` keys ``rewards/NAME/mean`` (and
    ``eval_rewards/...``), which TRL logs for every reward function under the name it gives the
    function's parquet column (TRL 1.16, trl/trainer/grpo_trainer.py:2821-2825 and 2835-2836, both
    over ``self.reward_func_names``); ``evaluated``: the steps with an evaluation's entry (its keys
    start with ``eval_``); ``last_step``: its ``global_step``; ``fade_trainer``: whether fade's
    ``FadeGRPOTrainer`` ran it (it logs ``fade/...`` at every step: ``fade.Weighing.metrics``, which
    fade.integrations.trl appends to TRL's), whose advantages are its estimator's, not TRL's.
    """

    _REWARD_KEY = re.compile(r"^(?:eval_)?rewards/(.+)/(?:mean|std)$")

    def __init__(self, path: Path) -> None:
        state = trainer_state(path)
        self.path = path
        self.reward_functions: list[str] = []
        self.evaluated: set[int] = set()
        self.fade_trainer = False
        for i, entry in enumerate(state["log_history"]):
            for key in entry if isinstance(entry, dict) else ():
                self.fade_trainer |= key.startswith("fade/")
                m = self._REWARD_KEY.match(key)
                if m and m.group(1) not in self.reward_functions:
                    self.reward_functions.append(m.group(1))
                if key.startswith("eval_") and "step" in entry:
                    self.evaluated.add(history_step(f"{path}: log_history[{i}]", entry["step"]))
        step = state.get("global_step")
        self.last_step = step if isinstance(step, int) and not isinstance(step, bool) else None


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
               or pa.types.is_boolean(types[n]) or pa.types.is_decimal(types[n])]
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
        other = next((n for n in columns if n not in numeric), None)
        if other is not None:
            raise DumpError(f"{where}: column {other!r} is {types[other]}, a reward function {record.path} names: "
                            "expected a numeric reward column, as TRL writes one (give --reward-column NAME,... "
                            "to choose)")
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
    numbered = [(-1, where)] if where.is_file() else numbered_files(where, _TRL_FILE)
    notes: list[str] = []
    state: dict[str, Any] = {"previous": None, "evaluation": False, "columns": None}
    record = _trl_record(where, options)
    evaluated = set() if record is None else record.evaluated
    evaluation: list[str] = []

    def read(n: int, p: Path, newest: bool) -> StepBatch | None:
        schema = parquet_schema(p)
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
        if table.num_rows == 0:
            raise DumpError(f"{p}: no rows: expected TRL's completions of one step")
        steps = np.unique(int_column(table, "step", p))
        if steps.size != 1:
            raise DumpError(f"{p}: holds steps {', '.join(map(str, steps[:5]))}: expected one step per file")
        step = int(steps[0])
        if n >= 0 and step != n:  # TRL writes the step column and the name from one global_step
            raise DumpError(f"{p}: holds step {step}: expected step {n}, as TRL names the file "
                            "(completions_{global_step:05d}.parquet)")
        parts = np.stack([_floats(table, c, p) for c in columns], 1)
        with np.errstate(over="ignore", invalid="ignore"):
            rewards = np.nansum(parts * state["weights"], axis=1)  # a None-returning function is left out, as TRL does
        if not np.isfinite(rewards).all():
            row = int(np.flatnonzero(~np.isfinite(rewards))[0])
            raise DumpError(f"{p}: row {row + 1}: total reward {shown(rewards[row])} (from {parts[row].tolist()}): "
                            "expected a finite number")
        adv = number_column(table, "advantage", p)
        keys = _prompt_keys(table.column("prompt"), p)
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
            raise DumpError(f"{p}: row {row + 1}: advantage {shown(adv[row])}: expected a finite number")
        if repeats:
            notes.append(f"{p.name} repeats the batch of step {state['previous'][0]}: counted once")
            return None
        state["previous"], state["evaluation"] = fingerprint, False
        starts, lengths = prompt_runs(keys)
        batch = StepBatch(step, rewards, np.empty(0, dtype=np.int64), advantages=adv, source=str(p))
        runs.append((batch, [keys[i] for i in starts], starts, lengths))
        return batch

    runs: list[tuple[StepBatch, list, np.ndarray, np.ndarray]] = []
    steps = step_files(numbered, read, progress)
    fade_trainer = record is not None and record.fade_trainer
    how = _trl_groups(runs, options.group_size, centred=not fade_trainer)
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
    # fade's TRL trainer feeds FADE, by default (entropy="previous"), the entropy of the previous batch's
    # loss pass, which TRL logs under the previous step (fade.integrations.trl, FadeGRPOTrainer._fade_entropy)
    run = RunRecords("trl", str(where), steps, estimator=None if fade_trainer else "grpo:eps=0.0001", notes=notes,
                     entropy_feed="previous-step")
    run.notes.append(f"fade's FadeGRPOTrainer ran this run ({record.path.name} logs fade/...): its advantages are "
                     "its estimator's, which the files do not name (--estimators replays it)" if fade_trainer else
                     "the run's estimator is taken as TRL's default advantage (scale_rewards='group')")
    state_file = _trl_state(where)
    if state_file is not None and options.metrics is None:
        read_metrics(run, state_file)
    return run


def _floats(table, name: str, where: Path) -> np.ndarray:
    """A reward column as floats: TRL writes floats; a column named as a reward may be integers,
    decimals or booleans (1 for True)."""
    pa = arrow()
    column = table.column(name)
    if pa.types.is_boolean(column.type):
        return column.cast(pa.float64()).to_numpy(zero_copy_only=False)
    return number_column(table, name, where)


def _prompt_keys(prompt, where: Path) -> list[str]:
    """Each row's prompt as a key: its text, or a conversation (TRL's list of messages) as JSON."""
    pa = arrow()
    kind = prompt.type
    text = pa.types.is_string(kind) or pa.types.is_large_string(kind)
    if not (text or pa.types.is_list(kind) or pa.types.is_large_list(kind)):
        raise DumpError(f"{where}: column 'prompt' is {kind}: expected text or a list of messages, as TRL writes "
                        "the prompt")
    values = prompt.to_pylist()
    if prompt.null_count:
        raise DumpError(f"{where}: row {values.index(None) + 1}: no prompt: expected every row to have one")
    if text:
        return values
    keys = []
    for row, value in enumerate(values):
        try:
            keys.append(json.dumps(value, sort_keys=True))
        except (TypeError, ValueError, RecursionError) as exc:
            raise DumpError(f"{where}: row {row + 1}: a prompt that is no JSON value ({exc}): expected text or a "
                            "list of messages") from None
    return keys


def _trl_groups(runs: list[tuple[StepBatch, list, np.ndarray, np.ndarray]], group_size: int | None,
                centred: bool = True) -> str | None:
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
    than read as smaller groups. Not so in a run of fade's FadeGRPOTrainer (``centred=False``): its
    estimator's advantages need not sum to 0 (FADE divides the failures' by delta), so there the
    groups are cut without that check.
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
        batch.groups = split_runs(starts, lengths, size, batch.source, how)
        batch.prompt_keys = [k for k, n in zip(keys, (lengths // size).tolist()) for _ in range(n)]
        if not centred:
            continue
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
    if not centred:
        return (f"group size {size}: {how}, not checked against the advantages (fade's trainer wrote its "
                "estimator's, which need not sum to 0 over a group; --group-size states it)")
    return (f"group size {size}: {how}; every group's advantages sum to 0, as TRL centres them "
            "(--group-size states it)")


def _trl_state(where: Path) -> Path | None:
    """trainer_state.json of the run's output folder (or of its newest checkpoint)."""
    out = where.parent.parent if where.is_file() else where.parent
    if (out / "trainer_state.json").is_file():
        return out / "trainer_state.json"
    def number(p: Path) -> tuple[int, str]:  # compared as digits, never int(): "²" is a digit int() refuses
        digits = p.parent.name.split("-")[-1]
        return (len(digits.lstrip("0")), digits.lstrip("0")) if re.fullmatch(r"[0-9]+", digits) else (-1, "")

    checkpoints = sorted(out.glob("checkpoint-*/trainer_state.json"), key=number)
    return checkpoints[-1] if checkpoints else None




def _find(folder: Path) -> Path | None:
    where = folder / "completions" if (folder / "completions").is_dir() else folder
    return where if numbered_files(where, _TRL_FILE) else None


FORMAT = Format(
    name="trl",
    engine="TRL 1.16.0",
    writer=("trl/trainer/grpo_trainer.py:3340-3357 (GRPOTrainer.log: the completions parquet)",
            "trl/trainer/grpo_trainer.py:2821-2836 (rewards/NAME/mean, the reward columns)",
            "trl/trainer/grpo_trainer.py:1309-1316, 2754-2810 (groups, centred advantages)"),
    layout="TRL's completions/completions_N.parquet",
    keys="TRL's step/prompt/completion/advantage",
    find=_find,
    claims=lambda path, keys: path.suffix.lower() == ".parquet" and set(_TRL_FIXED) <= keys,
    read=_read_trl,
)
