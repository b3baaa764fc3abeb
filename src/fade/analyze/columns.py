"""Columnar reading of JSON-lines and parquet files: only the fields asked for, with pyarrow.

A JSON-lines file's bytes, lines and torn last line are :mod:`fade.jsonl`'s: each file is read
once, to the size it had when it was opened, so a file a live run is still appending to is read as
it was at that moment: the bytes read are the bytes every later check and the error's line number
see. A torn last line (no newline, no whole JSON value) is a file still being written: in the
newest file of a run it is dropped with a warning, elsewhere it is an error. Those bytes are parsed
by pyarrow's multithreaded reader against an explicit schema of the fields needed (its blocks
sized to the file's longest line); every other field is skipped without being built. The per-line
path (:meth:`fade.jsonl.Lines.records`) runs only to name the line of an error, and for a key
column that mixes text and integers; without pyarrow it reads every line.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from fade import jsonl
from fade.extras import install_line, installed

from .records import DumpError, dense_ids, dump_errors

__all__ = ["Field", "arrow", "encode_keys", "parquet_schema", "read_jsonl", "read_lines", "read_parquet", "shown",
           "unreadable_parquet"]

#: A field's kind: "float" (a finite number), "int" (within int64), "str" (text) or "key" (text or an integer).
Field = str

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1

#: pyarrow's JSON reader reads a file in blocks of this many bytes (its default), and a line must
#: fit in one block; a file with a longer line is read in blocks of that line's length.
BLOCK_SIZE = 1 << 20
#: The largest block pyarrow takes (its block size is an int32).
MAX_BLOCK_SIZE = 2**31 - 1


def arrow():
    """pyarrow, or a one-line error saying how to install it."""
    try:
        import pyarrow
        import pyarrow.json  # noqa: F401
        import pyarrow.parquet  # noqa: F401
    except ImportError:
        how = install_line("analyze")
        raise DumpError(f"fade analyze reads dumps with pyarrow, which is not installed: {how}") from None
    return pyarrow


def shown(value: Any, limit: int = 80) -> str:
    """``value`` as an error message shows it: its repr, an integer of hundreds of digits by its
    first digits and length, anything longer than ``limit`` cut short."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**30:
        digits = str(abs(value))
        return f"{'-' if value < 0 else ''}{digits[:6]}... (an integer of {len(digits)} digits)"
    if isinstance(value, (float, np.floating)):
        return repr(float(value))
    try:
        text = repr(value)
    except RecursionError:
        return f"a {type(value).__name__} nested too deep to show"
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


def read_lines(path: str | Path, *, newest: bool, what: str | None = None, stacklevel: int = 2) -> jsonl.Lines:
    """The JSON-lines file ``path`` read once (:func:`fade.jsonl.read`), up to the size it had when
    opened, ending at a whole line: a torn last line is a line still being written, dropped with a
    ``RuntimeWarning`` naming it in the ``newest`` file of a run and an error elsewhere (only the
    newest file of a run is still being written). ``what`` names the records the file must hold one
    of (a file with none, or only a torn line, is an error); ``stacklevel`` counts from this function.
    """
    with dump_errors():
        return jsonl.read(path, torn="skip-with-warning" if newest else "error", at_least_one=what,
                          stacklevel=stacklevel)


def _lines_fit(data: bytes, size: int) -> bool:
    """Whether every line of ``data`` is shorter than ``size`` bytes: from each line's start the
    next ``size`` bytes hold a newline (found from their end, a jump of about ``size`` at a time)."""
    at = 0
    while len(data) - at > size:
        last = data.rfind(b"\n", at, at + size)
        if last < 0:
            return False
        at = last + 1
    return True


def _block_size(path: Path, data: bytes) -> int:
    """A pyarrow block that holds the longest line of ``data``."""
    if _lines_fit(data, BLOCK_SIZE):
        return BLOCK_SIZE
    ends = jsonl.line_ends(data)
    lengths = np.diff(np.r_[0, ends])
    longest = int(lengths.max())
    if longest + 1 > MAX_BLOCK_SIZE:
        line = int(np.argmax(lengths)) + 1
        raise DumpError(f"{path}:{line}: a line of {longest} bytes: expected lines shorter than 2 GiB, the longest "
                        "pyarrow's JSON reader reads")
    return max(BLOCK_SIZE, longest + 1)


def _types(pa, fields: Mapping[str, Field], key_type=None):
    kinds = {"float": pa.float64(), "int": pa.int64(), "str": pa.string(), "key": key_type}
    return pa.schema([(name, kinds[kind]) for name, kind in fields.items() if kinds[kind] is not None])


def _key_types(pa, data: bytes, keyed: list[str]) -> tuple:
    """The types a key column is tried as, the first line's kind first (a file of integer keys is
    then parsed once)."""
    start = re.search(rb"\S", data)
    end = data.find(b"\n", start.start()) if start else -1
    first = data[start.start():end if end >= 0 else len(data)] if start else b""
    try:
        value = jsonl.loads(first, "the first line").get(keyed[0])
    except (jsonl.JsonlError, AttributeError):
        value = None
    integer = isinstance(value, int) and not isinstance(value, bool)
    return (pa.int64(), pa.string()) if integer else (pa.string(), pa.int64())


def _parser(pa, schema, block_size: int) -> Callable[[Any], Any]:
    options = pa.json.ReadOptions(block_size=block_size)
    parse = pa.json.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore")
    return lambda data: pa.json.read_json(pa.BufferReader(pa.py_buffer(data)), read_options=options,
                                          parse_options=parse)


def _first_refused_line(data: bytes, parse: Callable[[Any], Any]) -> tuple[int, str] | None:
    """The first line pyarrow refuses, and its message: the shortest prefix of whole lines it
    refuses ends there (found by bisection: a refused line is refused in every longer prefix)."""
    pa = arrow()
    ends = jsonl.line_ends(data)
    view = memoryview(data)
    lo, hi, message = 0, len(ends) - 1, None
    try:
        parse(view)
        return None
    except pa.ArrowException as exc:
        message = str(exc)
    while lo < hi:  # the prefix ending at line hi is refused; find the first such line
        mid = (lo + hi) // 2
        try:
            parse(view[:ends[mid]])
            lo = mid + 1
        except pa.ArrowException as exc:
            hi, message = mid, str(exc)
    return hi + 1, re.sub(r"\s*in row \d+$", "", " ".join(message.split()))


def _line_error(path: Path, data: bytes, fields: Mapping[str, Field], required: tuple[str, ...],
                parse: Callable[[Any], Any] | None = None) -> DumpError:
    """The first line of ``data`` that breaks the contract, as an error naming path:line: the one
    the per-line reader finds, else the one pyarrow refuses (a field written twice on one line)."""
    try:
        _read_slow(path, data, fields, required, (), parse)
    except DumpError as exc:
        return exc
    found = None if parse is None else _first_refused_line(data, parse)
    if found is not None:
        line, message = found
        return DumpError(f"{path}:{line}: pyarrow's JSON reader refuses this line ({message}): expected one JSON "
                         "object per line, each field once")
    return DumpError(f"{path}: pyarrow could not read it, and no line breaks the contract: expected JSON lines")


def _kind_problem(value: Any, kind: Field) -> str | None:
    if kind == "float":
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return "a finite number"
        try:
            if not math.isfinite(value):
                return "a finite number"
        except OverflowError:  # an integer past the largest float
            return "a finite number (within the float range, about 1.8e308)"
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
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:  # JSON's "\udcff": no UTF-8 file, the report included, can hold it
            return "Unicode text (no lone surrogate such as \\udcff)"
    return None


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
    order. ``values`` is a pyarrow text or integer array (a dictionary one too) or a list of text
    and integers (None-free); the integer 1 and the text "1" are different keys, whatever else the
    column holds."""
    if not installed("pyarrow"):  # then every column is a list (the per-line reader's)
        values = list(values)
        return _distinct(dense_ids(_key_texts(values))[0], values)
    pa = arrow()
    if isinstance(values, (pa.Array, pa.ChunkedArray)):
        arr = values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values
        if pa.types.is_dictionary(arr.type):
            arr = arr.dictionary_decode()
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
    return np.array([n for n, _ in jsonl.numbered(data)], dtype=np.int64)


def read_jsonl(path: str | Path, fields: Mapping[str, Field], *, required: tuple[str, ...] = (),
               newest: bool = False, raw_keys: tuple[str, ...] = (), what: str = "records",
               lines: bool = False) -> dict[str, Any]:
    """The ``fields`` of every line of the JSON-lines file ``path`` as columns.

    Columns are numpy arrays for "float"/"int" fields (NaN / a mask where a line lacks an optional
    one), pyarrow arrays for "str" ones and for "key" ones that are all text or all integers, and
    Python lists for a "key" field that mixes both (None where absent). ``required`` fields must be
    on every line; "float" values must be finite. ``raw_keys`` fields are returned as parsed Python
    values (objects, lists) through the per-line path: use it only for small nested fields. With
    ``lines``, ``"__line__"`` holds each record's line number. Without pyarrow every line is parsed
    with the json module (slower, the same columns, lists for text). The file is read once
    (:func:`read_lines`).
    """
    path = Path(path)
    data = read_lines(path, newest=newest, what=what, stacklevel=3).data
    if raw_keys or not installed("pyarrow"):
        out = _read_slow(path, data, fields, required, raw_keys)
    else:
        out = _read_arrow(path, data, fields, required)
    if lines:
        out["__line__"] = _line_numbers(data)
    return out


def _read_arrow(path: Path, data: bytes, fields: Mapping[str, Field], required: tuple[str, ...]) -> dict[str, Any]:
    pa = arrow()
    block = _block_size(path, data)
    keyed = [n for n, k in fields.items() if k == "key"]
    table = None
    # a key column is all text or all integers in nearly every dump: pyarrow reads it as either; one
    # that mixes both (or breaks the contract) takes the per-line path, which reads or names it
    for key_type in _key_types(pa, data, keyed) if keyed else (None,):
        parse = _parser(pa, _types(pa, fields, key_type), block)
        try:
            table = parse(data)
            break
        except pa.ArrowException:
            continue
    if table is None:
        if keyed:
            return _read_slow(path, data, fields, required, ())
        raise _line_error(path, data, fields, required, parse)
    out: dict[str, Any] = {}
    for name, kind in fields.items():
        col = table.column(name)
        if name in required and col.null_count:
            raise _line_error(path, data, fields, required, parse)
        if kind == "float":
            arr = col.to_numpy(zero_copy_only=False).astype(np.float64)
            if not np.isfinite(arr[~np.isnan(arr)] if name not in required else arr).all() or (
                    name in required and np.isnan(arr).any()):
                raise _line_error(path, data, fields, required, parse)
            out[name] = arr
        elif kind == "int":
            if col.null_count:
                raise _line_error(path, data, {name: kind}, (name,), parse)
            out[name] = col.to_numpy().astype(np.int64)
        else:
            if pa.types.is_string(col.type):
                try:
                    col.validate(full=True)  # pyarrow keeps bytes that are not UTF-8; the per-line path names them
                except pa.ArrowInvalid:
                    raise _line_error(path, data, fields, required, parse) from None
            out[name] = col
    return out


def _read_slow(path: Path, data: bytes, fields: Mapping[str, Field], required: tuple[str, ...],
               raw_keys: tuple[str, ...], parse: Callable[[Any], Any] | None = None) -> dict[str, Any]:
    """The per-line reader. With ``parse`` (pyarrow's, for ``fields``), a line nested deeper than
    Python's parser goes is read by pyarrow, so that the error named is the line that breaks the
    contract, not a deep line pyarrow reads."""
    cols: dict[str, list] = {name: [] for name in (*fields, *raw_keys)}
    with dump_errors():
        for lineno, obj in jsonl.Lines(path, data).records(deep=_deep_reader(parse)):
            for name, kind in fields.items():
                value = obj.get(name)
                if value is None:
                    if name in required:
                        raise DumpError(f"{path}:{lineno}: no {name!r}: expected every line to have it")
                else:
                    problem = _kind_problem(value, kind)
                    if problem:
                        raise DumpError(f"{path}:{lineno}: {name!r} is {shown(value)}: expected {problem}")
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


def _deep_reader(parse: Callable[[Any], Any] | None) -> Callable[[bytes], dict | None] | None:
    """The fields of one line as pyarrow reads them, for a line Python's parser cannot read (None
    where pyarrow cannot either); None where there is no pyarrow parser."""
    if parse is None:
        return None

    def read(line: bytes) -> dict | None:
        try:
            rows = parse(line).to_pylist()
        except arrow().ArrowException:
            return None
        return rows[0] if len(rows) == 1 else None

    return read


def unreadable_parquet(path: Path, exc: Exception) -> DumpError:
    """A file that is no parquet file, named with what it looks like (its first bytes): it is never
    read as anything else (a pickle is never unpickled)."""
    try:
        with open(path, "rb") as f:
            head = f.read(4)
    except OSError:
        head = b""
    kind = ("a zip archive" if head.startswith(b"PK") else "a Python pickle" if head[:1] == b"\x80"
            else "a gzip file" if head.startswith(b"\x1f\x8b") else "an empty file" if not head else None)
    reason = " ".join(str(exc).split())
    what = f"it is {kind}, not a parquet file" if kind else f"not a readable parquet file ({reason})"
    return DumpError(f"{path}: {what}: expected a parquet file (it starts and ends with PAR1)")


def parquet_schema(path: str | Path):
    """The schema of a parquet file, or an error naming it."""
    pa = arrow()
    try:
        return pa.parquet.read_schema(path)
    except (pa.ArrowException, OSError) as exc:
        raise unreadable_parquet(Path(path), exc) from None


def read_parquet(path: str | Path, columns: list[str] | None = None, *, dictionary: tuple[str, ...] = ()):
    """The ``columns`` of a parquet file as a pyarrow table (all columns when None); the
    ``dictionary`` columns are read dictionary-encoded (a text key is not built once per row)."""
    pa = arrow()
    try:
        return pa.parquet.read_table(path, columns=columns, read_dictionary=list(dictionary) or None)
    except (pa.ArrowException, OSError) as exc:
        raise unreadable_parquet(Path(path), exc) from None
