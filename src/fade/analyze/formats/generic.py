"""The generic contract: one JSON-lines, CSV or parquet file of one record per rollout with
``step``, ``reward`` and ``group_id`` or ``prompt_id``, optionally ``advantage``. Any other
engine is one small export away (docs/analyze.md, "The generic contract").

Only those columns are read; a parquet or CSV file in batches of rows, each batch's numbers
written into one array per column and its keys turned into ids (each distinct key built as a
Python value once, never once per row). So a run of millions of rollouts takes a few numbers per
rollout and one value per distinct key.
"""

from __future__ import annotations

import csv
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from ..columns import arrow, encode_keys, parquet_schema, read_jsonl, shown, unreadable_parquet
from ..records import DumpError, RunRecords, StepBatch
from .base import Format, ReadOptions, first_object, int_column, number_column

__all__ = ["FORMAT", "GENERIC_GROUP_KEYS"]

#: The group keys of the generic format, in the order they are looked for.
GENERIC_GROUP_KEYS = ("group_id", "prompt_id")

#: Rows per batch of a parquet or CSV file.
BATCH_ROWS = 1 << 20


def _columns_of(where: Path, names: list[str]) -> tuple[str, list[str]]:
    """The group key column and the columns to read, of a file whose columns are ``names``."""
    for need in ("step", "reward"):
        if need not in names:
            raise DumpError(
                f"{where}: no column {need!r}: expected step, reward and one of {', '.join(GENERIC_GROUP_KEYS)}"
            )
    key = next((k for k in GENERIC_GROUP_KEYS if k in names), None)
    if key is None:
        raise DumpError(f"{where}: no group column: expected one of {', '.join(GENERIC_GROUP_KEYS)}")
    return key, ["step", "reward", key, *(["advantage"] if "advantage" in names else [])]


def _batches(where: Path, suffix: str) -> tuple[int, str, list[str], Iterator[tuple[int, object]]]:
    """The rows of a CSV or parquet file, its group key, the columns read, and its batches of
    rows (the number of rows before each, and a table of the columns read)."""
    pa = arrow()
    if suffix == ".csv":
        import pyarrow.csv as pcsv

        with open(where, newline="", encoding="utf-8", errors="replace") as f:
            header = next(csv.reader(f), [])
        key, wanted = _columns_of(where, header)
        # text has no type in a CSV file: the step is parsed here (to name a row that is not an
        # integer) and a group key stays as written ("01" and "1" are two keys)
        text = {"step": pa.string(), key: pa.dictionary(pa.int32(), pa.string())}
        try:
            table = pcsv.read_csv(where, convert_options=pcsv.ConvertOptions(column_types=text,
                                                                             include_columns=wanted))
        except pa.ArrowInvalid as exc:
            raise DumpError(f"{where}: not a readable CSV file ({' '.join(str(exc).split())})") from None

        def csv_batches():
            first = 0
            for batch in table.to_batches(max_chunksize=BATCH_ROWS):
                yield first, pa.Table.from_batches([batch])
                first += batch.num_rows

        return table.num_rows, key, wanted, csv_batches()
    key, wanted = _columns_of(where, parquet_schema(where).names)
    try:
        file = pa.parquet.ParquetFile(where, read_dictionary=[key])  # a text key is not built once per row
        rows = file.metadata.num_rows
    except (pa.ArrowException, OSError) as exc:
        raise unreadable_parquet(where, exc) from None

    def parquet_batches():
        first = 0
        batches = file.iter_batches(batch_size=BATCH_ROWS, columns=wanted)
        while True:
            try:
                batch = next(batches, None)
            except (pa.ArrowException, OSError) as exc:  # a damaged page, found where it is read
                raise unreadable_parquet(where, exc) from None
            if batch is None:
                return
            yield first, pa.Table.from_batches([batch])
            first += batch.num_rows

    return rows, key, wanted, parquet_batches()


class _KeyIds:
    """Ids for the keys of a column read in batches: the same key gets the same id in every batch,
    and each distinct key is built as a Python value once per batch's dictionary, not per row."""

    def __init__(self, where: Path, name: str) -> None:
        self.where, self.name, self.ids = where, name, {}
        self._last = None  # the previous batch's dictionary and its ids: batches of a row group share one

    def __call__(self, column, first_row: int = 0) -> np.ndarray:
        pa = arrow()
        if isinstance(column, pa.ChunkedArray):
            column = column.combine_chunks()
        kind = column.type.value_type if pa.types.is_dictionary(column.type) else column.type
        if not (pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_integer(kind)):
            raise DumpError(f"{self.where}: column {self.name!r} is {kind}: expected text or integers")
        if column.null_count:
            row = int(np.flatnonzero(column.is_null().to_numpy(zero_copy_only=False))[0])
            raise DumpError(f"{self.where}: row {first_row + row + 1}: no {self.name!r}: expected every row to have it")
        if not pa.types.is_dictionary(column.type):
            column = column.dictionary_encode()
        dictionary = column.dictionary
        if self._last is not None and self._last[0].equals(dictionary):
            mapping = self._last[1]
        else:
            values = dictionary.to_pylist()
            mapping = np.fromiter((self.ids.setdefault(v, len(self.ids)) for v in values), np.int64, len(values))
            self._last = (dictionary, mapping)
        return mapping[column.indices.to_numpy(zero_copy_only=False)]

    def names(self) -> list:
        return list(self.ids)


def _read_generic(where: Path, options: ReadOptions, progress) -> RunRecords:
    suffix = where.suffix.lower()
    if suffix in (".jsonl", ".json"):
        first = first_object(where)
        key = next((k for k in GENERIC_GROUP_KEYS if k in first), GENERIC_GROUP_KEYS[0])
        cols = read_jsonl(where, {"step": "int", "reward": "float", key: "key", "advantage": "float"},
                          required=("step", "reward", key), newest=True)
        steps, rewards, adv, what = cols["step"], cols["reward"], cols["advantage"], "record"
        keys = cols.pop(key)
        if isinstance(keys, list):  # text and integers mixed: the per-line reader's list
            ids, names = encode_keys(keys)
        else:
            encode = _KeyIds(where, key)
            ids, names = encode(keys), encode.names()
        del keys
    else:
        rows, key, wanted, batches = _batches(where, suffix)
        if rows == 0:
            raise DumpError(f"{where}: no rows: expected one row per rollout")
        steps, rewards = np.empty(rows, dtype=np.int64), np.empty(rows)
        ids = np.empty(rows, dtype=np.int32 if rows < 2**31 else np.int64)
        adv = np.empty(rows) if "advantage" in wanted else None
        encode = _KeyIds(where, key)
        for at, table in batches:
            end = at + table.num_rows
            steps[at:end] = int_column(table, "step", where, at)
            rewards[at:end] = number_column(table, "reward", where, at)
            if adv is not None:
                adv[at:end] = number_column(table, "advantage", where, at)
            ids[at:end] = encode(table.column(key), at)
        names, what = encode.names(), "row"
        del encode, batches
        arrow().default_memory_pool().release_unused()  # the batches' buffers: its allocator keeps them
        bad = np.flatnonzero(~np.isfinite(rewards))
        if bad.size:
            raise DumpError(f"{where}: row {bad[0] + 1}: reward {shown(rewards[bad[0]])}: expected a finite number")
    if adv is not None:
        has_adv = ~np.isnan(adv)
        if not has_adv.any():
            adv = None
        elif not has_adv.all():
            row = int(np.flatnonzero(~has_adv)[0])
            raise DumpError(f"{where}: {what} {row + 1}: no 'advantage' while others have one: expected it on every "
                            f"{what} or none")
        elif not np.isfinite(adv).all():
            row = int(np.flatnonzero(~np.isfinite(adv))[0])
            raise DumpError(f"{where}: {what} {row + 1}: advantage {shown(adv[row])}: expected a finite number")
    out = []
    for idx in _step_rows(steps):
        uniq, first, inverse = np.unique(ids[idx], return_index=True, return_inverse=True)
        order = np.argsort(first, kind="stable")  # the groups in the order they first appear
        rank = np.empty(order.size, dtype=np.int64)
        rank[order] = np.arange(order.size)
        out.append(StepBatch(int(steps[idx][0]), rewards[idx], rank[inverse.reshape(-1)],
                             advantages=None if adv is None else adv[idx],
                             prompt_keys=[names[i] for i in uniq[order]], source=str(where)))
    progress(1, 1)
    return RunRecords("generic", str(where), out)


def _step_rows(steps: np.ndarray) -> list:
    """The rows of each step, in step order: slices where the file is sorted by step (no copy),
    else the rows' indices (a step's rows may lie anywhere in the file)."""
    if steps.size and (steps[1:] >= steps[:-1]).all():
        bounds = np.r_[0, np.flatnonzero(np.diff(steps)) + 1, steps.size]
        return [slice(int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:])]
    order = np.argsort(steps, kind="stable")
    return np.split(order, np.flatnonzero(np.diff(steps[order])) + 1)


def _claims(path: Path, keys: frozenset[str]) -> bool:
    if path.suffix.lower() in (".csv", ".parquet"):
        return True  # the reader names a missing column
    return "step" in keys and "reward" in keys and bool(keys & set(GENERIC_GROUP_KEYS))


FORMAT = Format(
    name="generic",
    engine="any (docs/analyze.md, the generic contract)",
    writer=(),
    layout="",
    keys=f"step, reward and one of {', '.join(GENERIC_GROUP_KEYS)}",
    find=lambda folder: None,
    claims=_claims,
    read=_read_generic,
)
