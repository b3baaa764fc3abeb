"""Columnar reading of JSON-lines and parquet files: only the fields asked for, with pyarrow.

A JSON-lines file is parsed by pyarrow's multithreaded reader against an explicit schema of the
fields needed; every other field is skipped without being built. The slow per-line path runs only
to name the line of an error. A last line without its newline is a file still being written: in
the newest file of a run it is dropped with a warning, elsewhere it is an error.
"""

from __future__ import annotations

import json
import math
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from .records import DumpError, dense_ids

__all__ = ["Field", "arrow", "encode_keys", "read_jsonl", "read_parquet"]

#: A field's kind: "float" (a finite number), "int" (within int64), "str" (text) or "key" (text or an integer).
Field = str

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def arrow():
    """pyarrow, or a one-line error saying how to install it."""
    try:
        import pyarrow
        import pyarrow.json  # noqa: F401
        import pyarrow.parquet  # noqa: F401
    except ImportError:
        raise DumpError("fade analyze reads dumps with pyarrow, which is not installed: "
                        "pip install 'fade-rl[analyze]'") from None
    return pyarrow


def _types(pa, fields: Mapping[str, Field]):
    kinds = {"float": pa.float64(), "int": pa.int64(), "str": pa.string(), "key": pa.string()}
    return pa.schema([(name, kinds[kind]) for name, kind in fields.items() if kind != "key"])


def _line_error(path: Path, data: bytes, fields: Mapping[str, Field], required: tuple[str, ...]) -> DumpError:
    """The first line of ``data`` that breaks the contract, as an error naming path:line (the
    per-line reader finds it)."""
    try:
        _read_slow(path, data, fields, required, ())
    except DumpError as exc:
        return exc
    return DumpError(f"{path}: pyarrow could not read it, and no line breaks the contract: expected JSON lines")


def _kind_problem(value: Any, kind: Field) -> str | None:
    if kind == "float":
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            return "a finite number"
    elif kind == "int":
        if isinstance(value, bool) or not isinstance(value, int):
            return "an integer"
        if not INT64_MIN <= value <= INT64_MAX:
            return "an integer within int64 (-2**63 to 2**63 - 1)"
    elif kind == "str":
        if not isinstance(value, str):
            return "text"
    elif kind == "key":
        if isinstance(value, bool) or not isinstance(value, (str, int)):
            return "text or an integer"
    return None


def _has_arrow() -> bool:
    from importlib.util import find_spec

    return find_spec("pyarrow") is not None


def _key_texts(values: list) -> list[str]:
    """Each key as text, one to one: an all-text column as it is, an all-integer one in decimal;
    a column of both tags every key with its kind, so no text ever spells an integer's key."""
    kinds = {type(v) for v in values}
    if kinds <= {str}:
        return values
    if kinds <= {int}:
        return [str(v) for v in values]
    return [f"i{v}" if isinstance(v, int) else f"s{v}" for v in values]


def encode_keys(values) -> tuple[np.ndarray, list]:
    """Dense ids 0..G-1 in first-appearance order for a key column, and the distinct keys in that
    order. ``values`` is a pyarrow text array or a list of text and integers (None-free); the
    integer 1 and the text "1" are different keys, whatever else the column holds."""
    if not _has_arrow():  # then every column is a list (the per-line reader's)
        values = list(values)
        return _distinct(dense_ids(_key_texts(values))[0], values)
    pa = arrow()
    if isinstance(values, (pa.Array, pa.ChunkedArray)):
        arr = values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values
        enc = arr.dictionary_encode()
        return enc.indices.to_numpy(zero_copy_only=False).astype(np.int64), enc.dictionary.to_pylist()
    values = list(values)
    enc = pa.array(_key_texts(values), type=pa.string()).dictionary_encode()
    return _distinct(enc.indices.to_numpy(zero_copy_only=False).astype(np.int64), values)


def _distinct(ids: np.ndarray, values: list) -> tuple[np.ndarray, list]:
    """``ids`` (dense, in first-appearance order) and the value each first appears as."""
    _, first = np.unique(ids, return_index=True)
    return ids, [values[i] for i in first]


def _line_numbers(data: bytes) -> np.ndarray:
    return np.array([i for i, line in enumerate(data.split(b"\n"), start=1) if line.strip()], dtype=np.int64)


def read_jsonl(path: str | Path, fields: Mapping[str, Field], *, required: tuple[str, ...] = (),
               newest: bool = False, raw_keys: tuple[str, ...] = (), what: str = "records",
               lines: bool = False) -> dict[str, Any]:
    """The ``fields`` of every line of the JSON-lines file ``path`` as columns.

    Columns are numpy arrays for "float"/"int" fields (NaN / a mask where a line lacks an optional
    one) and Python lists for "str"/"key" ones (None where absent). ``required`` fields must be on
    every line; "float" values must be finite. ``raw_keys`` fields are returned as parsed Python
    values (objects, lists) through the per-line path: use it only for small nested fields. With
    ``lines``, ``"__line__"`` holds each record's line number. Without pyarrow every line is parsed
    with the json module (slower, the same columns).
    """
    path = Path(path)
    size = path.stat().st_size
    with open(path, "rb") as f:
        f.seek(max(size - 1, 0))
        torn = size > 0 and f.read(1) != b"\n"
    data: bytes | None = None  # the bytes are loaded only where pyarrow cannot read the file itself
    if torn:
        data = path.read_bytes()
        cut = data.rfind(b"\n") + 1
        try:
            json.loads(data[cut:])
            data += b"\n"
        except ValueError:
            lineno = data.count(b"\n", 0, cut) + 1
            if not newest:
                raise DumpError(f"{path}:{lineno}: the last line is cut short: expected a complete JSON object "
                                "(only the newest file of a run still being written may end so)") from None
            warnings.warn(f"{path}:{lineno}: skipped the unfinished last line of a file still being written",
                          RuntimeWarning, stacklevel=2)
            data = data[:cut]

    def load() -> bytes:
        return data if data is not None else path.read_bytes()

    empty = DumpError(f"{path}: no {what} (the file has no non-blank lines): expected one JSON object per line")
    if size == 0 or (data is not None and not data.strip()):
        raise empty
    if raw_keys or not _has_arrow():
        data = load()
        if not data.strip():
            raise empty
        out = _read_slow(path, data, fields, required, raw_keys)
        if lines:
            out["__line__"] = _line_numbers(data)
        return out
    pa = arrow()
    keyed = [n for n, k in fields.items() if k == "key"]
    schema = _types(pa, fields)
    try:
        table = pa.json.read_json(
            pa.BufferReader(data) if data is not None else str(path),
            parse_options=pa.json.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore"),
        )
    except pa.ArrowInvalid:
        raise _line_error(path, load(), fields, required) from None
    if table.num_rows == 0:
        raise empty
    out: dict[str, Any] = {}
    for name, kind in fields.items():
        if kind == "key":
            continue
        col = table.column(name)
        if name in required and col.null_count:
            raise _line_error(path, load(), fields, required)
        if kind == "float":
            arr = col.to_numpy(zero_copy_only=False).astype(np.float64)
            if not np.isfinite(arr[~np.isnan(arr)] if name not in required else arr).all() or (
                    name in required and np.isnan(arr).any()):
                raise _line_error(path, load(), fields, required)
            out[name] = arr
        elif kind == "int":
            if col.null_count:
                raise _line_error(path, load(), {name: kind}, (name,))
            out[name] = col.to_numpy().astype(np.int64)
        else:
            out[name] = col
    if keyed:  # text-or-integer fields: pyarrow needs one type per column, so these take the per-line path
        slow = _read_slow(path, load(), {n: fields[n] for n in keyed}, tuple(n for n in required if n in keyed), ())
        out.update(slow)
    if lines:
        out["__line__"] = _line_numbers(load())
    return out


def _read_slow(path: Path, data: bytes, fields: Mapping[str, Field], required: tuple[str, ...],
               raw_keys: tuple[str, ...]) -> dict[str, Any]:
    cols: dict[str, list] = {name: [] for name in (*fields, *raw_keys)}
    for lineno, line in enumerate(data.split(b"\n"), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except ValueError as exc:
            raise DumpError(f"{path}:{lineno}: not valid JSON ({exc}): expected one JSON object per line") from None
        if not isinstance(obj, dict):
            raise DumpError(f"{path}:{lineno}: a JSON {type(obj).__name__}, expected an object")
        for name, kind in fields.items():
            value = obj.get(name)
            if value is None:
                if name in required:
                    raise DumpError(f"{path}:{lineno}: no {name!r}: expected every line to have it")
            else:
                problem = _kind_problem(value, kind)
                if problem:
                    raise DumpError(f"{path}:{lineno}: {name!r} is {value!r}: expected {problem}")
            cols[name].append(value)
        for name in raw_keys:
            cols[name].append(obj.get(name))
    out: dict[str, Any] = {}
    for name, kind in fields.items():
        values = cols[name]
        if kind == "float":
            out[name] = np.array([np.nan if v is None else v for v in values], dtype=np.float64)
        elif kind == "int":
            out[name] = np.array(values, dtype=np.int64)
        else:  # "str", and "key" kept as text and integers: encode_keys tells 1 from "1"
            out[name] = values
    for name in raw_keys:
        out[name] = cols[name]
    return out


def read_parquet(path: str | Path, columns: list[str] | None = None):
    """The ``columns`` of a parquet file as a pyarrow table (all columns when None)."""
    pa = arrow()
    try:
        return pa.parquet.read_table(path, columns=columns)
    except (pa.ArrowInvalid, OSError) as exc:
        raise DumpError(f"{path}: not a readable parquet file ({exc})") from None
