"""What every format module shares: the :class:`Format` it declares, the :class:`ReadOptions`
its reader takes, and the helpers for files numbered by step, groups as runs of one prompt, and
integer columns."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from fade import jsonl

from ..columns import INT64_MAX, INT64_MIN, arrow, encode_keys, parquet_schema, shown
from ..records import DumpError, RunRecords, StepBatch, dump_errors

__all__ = ["Format", "Progress", "ReadOptions", "blocks", "finite_number", "first_object", "int_column", "name_step",
           "not_int64", "not_unicode", "number_column", "numbered_files", "one_per_step", "probe", "prompt_runs",
           "split_runs", "step_files"]

#: ``progress(done, total)``, called after each file is read.
Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class Format:
    """One engine's dump, as its module declares it (``FORMAT``).

    Attributes:
        name: the value ``--format`` takes.
        engine: the engine and version whose writer the rules were read from.
        writer: where in that engine's code each rule was read (``path:line``), for docs/analyze.md.
        layout: what PATH holds, as the error for an unrecognised folder lists it.
        keys: what a single file of this format holds first (its keys or columns), as the error for
            an unrecognised file lists it; empty where the format is only a folder.
        find: ``find(folder)``: the file or folder of ``folder`` this format reads, or None.
        claims: ``claims(path, keys)``: whether the single file ``path``, whose first record has
            ``keys`` (:func:`probe`), is this format's.
        read: ``read(where, options, progress)``: the run at what ``find`` or ``claims`` took.
    """

    name: str
    engine: str
    writer: tuple[str, ...]
    layout: str
    keys: str
    find: Callable[[Path], Path | None]
    claims: Callable[[Path, frozenset[str]], bool]
    read: Callable[[Path, ReadOptions, Progress], RunRecords]


def probe(path: Path) -> frozenset[str]:
    """The keys of a single file's first record: a JSON-lines file's first object, a parquet file's
    columns, a CSV file's header; none for another kind of file."""
    suffix = path.suffix.lower()
    if suffix in (".jsonl", ".json"):
        return frozenset(first_object(path))
    if suffix == ".parquet":
        return frozenset(parquet_schema(path).names)
    return frozenset()


class ReadOptions:
    """What a reader needs beyond the files: ``group_size`` (TRL, NeMo-RL, ROLL: rows per group
    when it cannot be inferred), ``reward_column`` (TRL: the reward columns, comma-separated names) and
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
        if group_size is not None and not 1 <= group_size <= INT64_MAX:
            raise ValueError(f"--group-size {shown(group_size)}: expected a number of rows from 1 to 2**63 - 1")
        self.group_size = group_size
        self.reward_column = reward_column
        self.reward_weights = reward_weights
        self.metrics = None if metrics is None else Path(metrics)
        self.success_threshold = success_threshold
        self.prime_split = prime_split


def numbered_files(folder: Path, pattern: re.Pattern) -> list[tuple[int, Path]]:
    found = [(name_step(m.group(1), p), p) for p in folder.iterdir() if p.is_file() and (m := pattern.match(p.name))]
    return one_per_step(sorted(found), folder)


def name_step(digits: str, path: Path, what: str = "step") -> int:
    """The step (or ``what``) a file's or a folder's name gives in ``digits``, an integer within int64."""
    significant = digits.lstrip("0")
    if len(significant) > 19 or int(significant or "0") > INT64_MAX:
        raise DumpError(f"{path}: {what} {shown(digits)} in its name: expected an integer within int64")
    return int(significant or "0")


def one_per_step(numbered: list[tuple[int, Path]], where: Path) -> list[tuple[int, Path]]:
    """``numbered`` (sorted by step), refused where two files name one step (``2.jsonl`` and
    ``02.jsonl``): each would be read as the step, and the step counted twice."""
    for (a, first), (b, second) in zip(numbered, numbered[1:]):
        if a == b:
            raise DumpError(f"{where}: {first.relative_to(where)} and {second.relative_to(where)} are both step {a}: "
                            "expected one file per step")
    return numbered


def first_object(path: Path) -> dict:
    """The first record of a JSON-lines file, read as far as it ends (:func:`fade.jsonl.records`)."""
    with dump_errors():
        for _, obj in jsonl.records(path, torn="error"):
            return obj
    raise DumpError(f"{path}: no records: expected one JSON object per line")


def finite_number(value: Any) -> bool:
    """Whether ``value`` is a JSON number with a finite float value: not a bool, not a string, not an
    integer past the float range (which a parser hands over as a Python int no float holds)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


def not_unicode(text: str) -> str | None:
    """What makes ``text`` no Unicode text (a lone surrogate, which JSON's ``"\\udcff"`` or a pickled
    str can hold and no UTF-8 encodes: a prompt key holding one could not be written in the report),
    or None."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return f"a lone surrogate ({text[exc.start]!r}, character {exc.start + 1})"
    return None


def step_files(numbered: list[tuple[int, Path]], read: Callable[[int, Path, bool], StepBatch | None],
           progress: Callable[[int, int], None]) -> list[StepBatch]:
    steps = []
    for i, (n, p) in enumerate(numbered):
        batch = read(n, p, i == len(numbered) - 1)
        if batch is not None:
            steps.append(batch)
        progress(i + 1, len(numbered))
    return steps


def prompt_runs(keys: list) -> tuple[np.ndarray, np.ndarray]:
    """The runs of equal consecutive keys: their first rows and lengths."""
    ids, _ = encode_keys(keys)
    starts = np.r_[0, np.flatnonzero(np.diff(ids)) + 1].astype(np.int64)
    return starts, np.diff(np.r_[starts, len(keys)])


def split_runs(starts: np.ndarray, lengths: np.ndarray, size: int, where: str, how: str) -> np.ndarray:
    """Group ids of runs of one prompt cut into groups of ``size`` rows; a run that is not a whole
    number of groups is refused (``how`` says where ``size`` came from)."""
    bad = np.flatnonzero(lengths % size)
    if bad.size:
        a, n = int(starts[bad[0]]), int(lengths[bad[0]])
        hint = "" if how == "--group-size" else "; give --group-size if it was inferred wrongly"
        raise DumpError(f"{where}: rows {a + 1}-{a + n} are {n} rows of one prompt, not a multiple of the group size "
                        f"{size} ({how}): expected groups of one size (ragged or missing groups{hint})")
    return np.repeat(np.arange(int(lengths.sum()) // size, dtype=np.int64), size)


def blocks(keys: list[str], where: str, group_size: int | None) -> tuple[np.ndarray, int]:
    """Groups as consecutive blocks of one prompt: the block length is ``group_size`` or, left out,
    the shortest run of equal prompts (every run must then be a whole number of blocks)."""
    starts, lengths = prompt_runs(keys)
    size = group_size or int(lengths.min())
    how = "--group-size" if group_size else "the shortest run of one prompt"
    return split_runs(starts, lengths, size, where, how), size


def int_column(table, name: str, where: Path, first_row: int = 0) -> np.ndarray:
    """A column of integers within int64 (as CSV text, or an integer or float parquet column), or
    an error naming the first row that is not one: a step of 2.5 is no step, and is not cut to 2.
    Checked columnwise: a text or float column is turned into Python values only on an error.
    ``first_row``: how many of the file's rows come before the table's first (a file read in
    batches)."""
    pa = arrow()
    import pyarrow.compute as pc

    def refuse(row: int, what: str) -> DumpError:
        return DumpError(f"{where}: row {first_row + int(row) + 1}: {what}")

    column = table.column(name)
    if pa.types.is_dictionary(column.type):
        column = column.cast(column.type.value_type)
    if column.null_count:
        row = np.flatnonzero(column.is_null().to_numpy(zero_copy_only=False))[0]
        raise refuse(row, f"no {name!r}: expected every row to have it")
    kind = column.type
    if pa.types.is_integer(kind):
        if pa.types.is_unsigned_integer(kind) and column.length() and pc.max(column).as_py() > INT64_MAX:
            row = int(np.flatnonzero(column.to_numpy(zero_copy_only=False) > INT64_MAX)[0])
            raise refuse(row, f"{name} {column[row].as_py()}: expected an integer within int64")
        return _writable(column.to_numpy(zero_copy_only=False).astype(np.int64, copy=False))
    if pa.types.is_floating(kind):
        values = column.to_numpy(zero_copy_only=False).astype(np.float64)
        with np.errstate(invalid="ignore"):
            bad = np.flatnonzero(~np.isfinite(values) | (values != np.floor(values)))
        if bad.size:
            raise refuse(bad[0], f"{name} {float(values[bad[0]])!r}: expected an integer")
        raise DumpError(f"{where}: column {name!r} is {kind}: expected integers")
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        text = pc.utf8_trim_whitespace(column)
        bad = np.flatnonzero(~pc.match_substring_regex(text, r"^[+-]?[0-9]+$").to_numpy(zero_copy_only=False))
        if bad.size:
            raise refuse(bad[0], f"{name} {shown(column[int(bad[0])].as_py())}: expected an integer")
        try:
            return pc.cast(pc.replace_substring_regex(text, r"^\+", ""), pa.int64()).to_numpy(
                zero_copy_only=False).astype(np.int64, copy=False)
        except pa.ArrowInvalid:  # past int64: name the first such row
            for row, value in enumerate(column.to_pylist()):
                problem = not_int64(value)
                if problem:
                    raise refuse(row, f"{name} {shown(value)}: expected {problem}") from None
            raise
    raise DumpError(f"{where}: column {name!r} is {kind}: expected integers")


def number_column(table, name: str, where: Path, first_row: int = 0) -> np.ndarray:
    """A numeric column (integers, floats or decimals) as float64, a missing value NaN; a column of
    another type is refused, naming the first row of a text column that is not a number (a CSV
    column is text where one cell is not a number). ``first_row`` as for :func:`int_column`."""
    pa = arrow()
    import pyarrow.compute as pc

    column = table.column(name)
    kind = column.type
    if pa.types.is_dictionary(kind):
        column, kind = column.cast(kind.value_type), kind.value_type
    if pa.types.is_integer(kind) or pa.types.is_floating(kind) or pa.types.is_decimal(kind):
        try:
            values = pc.cast(column, pa.float64(), safe=False).to_numpy(zero_copy_only=False)  # 2**53 + 1 too
            return _writable(values.astype(np.float64, copy=False))
        except pa.ArrowInvalid as exc:
            raise DumpError(f"{where}: column {name!r} ({kind}) does not convert to floats ({exc}): expected "
                            "numbers") from None
    if pa.types.is_null(kind):
        return np.full(len(column), np.nan)
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        for row, value in enumerate(column.to_pylist()):
            if value is not None and not _number_text(value):
                raise DumpError(f"{where}: row {first_row + row + 1}: {name} {shown(value)}: expected a finite number")
    raise DumpError(f"{where}: column {name!r} is {kind}: expected numbers")


def _writable(values: np.ndarray) -> np.ndarray:
    """``values``, copied where they are arrow's read-only memory (torch warns on such an array)."""
    return values if values.flags.writeable else values.copy()


def _number_text(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def not_int64(value: Any) -> str | None:
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
