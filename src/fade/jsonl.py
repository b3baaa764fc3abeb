"""JSON lines, read and written in one place: every JSON-lines file fade reads (run logs, rollout
dumps, fade eval's inputs and scores, training data, metrics side files) and writes goes through here
(``tests/test_layers.py`` lists the few readers that do not yet, and why).

Reading. A file is read once, to the size it had when it was opened, so a file a live writer
appends to meanwhile is read as it was at that moment. A name ending in ``.gz`` is gzip data, one
member or several in a row (a writer appends one member per session, :class:`Appender`). Lines
end at ``\\n`` alone (a JSON text holds no raw newline, while ``str.splitlines`` would also break a
line at a raw U+2028 inside a string); they are numbered from 1, blank ones skipped, and each is
one JSON value in UTF-8, an object where records are read. Every error is one line,
``path:line: what was wrong: expected ...``: text that is not UTF-8, not JSON, an integer of more
digits than Python converts, JSON nested deeper than Python's parser goes, a value that is not an
object, damaged gzip data.

A **torn** line is a last line without its newline that is no whole JSON value: what a writer
killed mid-record, or still writing, leaves (a record is written with its newline in one write,
so a line cut short never ends in one). What happens to it is the caller's choice,
:data:`TornLine`:

- ``"error"``: an error naming it (a file that must be complete: fade eval's inputs, training data);
- ``"skip-with-warning"``: dropped with a ``RuntimeWarning`` naming it (a log a run may still be
  writing or was killed writing: the run logs, a dump's newest file);
- ``"skip-silently"``: dropped (a log about to be continued, whose torn line is expected after a kill).

Any other line that cannot be read is an error under every policy: a damaged line before the
last is damage, not a kill. Under ``"error"`` a gzip file whose last member is unfinished (no
trailer) is cut off, and an error; the other policies read what it holds.

Writing. :func:`write` writes a whole file atomically (:mod:`fade.atomic`); :class:`Appender`
appends records one by one, each flushed, a ``.gz`` file as one gzip member per appender (each
record sync-flushed, so the file decompresses to every record appended at every moment). A
gzip member's header carries no time and no name: the same records give the same bytes.
:func:`json_safe` turns values into what strict JSON holds (NaN and infinities become null).
"""

from __future__ import annotations

import json
import math
import os
import re
import warnings
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Literal

import numpy as np

from fade.atomic import atomic_write

__all__ = [
    "COMPRESSED",
    "TORN_LINE",
    "Appender",
    "JsonlError",
    "Lines",
    "NestedTooDeep",
    "TornLine",
    "encode",
    "json_safe",
    "line_ends",
    "loads",
    "numbered",
    "read",
    "read_bytes",
    "records",
    "write",
    "write_lines",
]

#: The suffix of a gzip-compressed JSON-lines file.
COMPRESSED = ".gz"
#: What a reader does with a torn last line (see the module's docstring).
TornLine = Literal["error", "skip-with-warning", "skip-silently"]
TORN_LINE: tuple[TornLine, ...] = ("error", "skip-with-warning", "skip-silently")
#: What a line of a records file is expected to be, unless the caller says more.
OBJECT_PER_LINE = "one JSON object per line"

_CHUNK = 1 << 20  # bytes read at a time
_TEXT = re.compile(rb"\S")


class JsonlError(ValueError):
    """A JSON-lines file (or one JSON value) that cannot be read as it is; the message is one line
    naming the file and line and what was expected."""


class NestedTooDeep(JsonlError):
    """JSON nested deeper than Python's parser goes (its recursion limit)."""


# -- one value -----------------------------------------------------------------------------------


def loads(text: bytes | str, where: str, expected: str = OBJECT_PER_LINE, *, unique_keys: bool = False) -> Any:
    """One JSON value of ``text`` (bytes are UTF-8), or :class:`JsonlError` naming ``where``
    (``path:line``) and what was ``expected``: text that is not UTF-8, not JSON, an integer of more
    digits than Python converts, or JSON nested deeper than Python's parser goes
    (:class:`NestedTooDeep`). With ``unique_keys``, an object that names a key twice is refused
    too (``json`` keeps the last value and drops the other without a word)."""
    if isinstance(text, (bytes, bytearray, memoryview)):
        raw = bytes(text)
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise JsonlError(f"{where}: not UTF-8 (byte {raw[exc.start]:#04x} at column {exc.start + 1}): expected "
                             f"{expected}, in UTF-8") from None
    try:
        return json.loads(text, object_pairs_hook=_once if unique_keys else None)
    except _Twice as exc:
        raise JsonlError(f"{where}: key {exc.args[0]!r} twice in one object: expected each key once") from None
    except RecursionError:
        raise NestedTooDeep(f"{where}: JSON nested deeper than Python's JSON parser reads (its recursion limit): "
                            f"expected {expected}") from None
    except json.JSONDecodeError as exc:
        at = f"column {exc.colno}" if exc.lineno == 1 else f"line {exc.lineno} column {exc.colno}"
        what = exc.msg.removesuffix(" at")  # "Unterminated string starting at" (a position)
        raise JsonlError(f"{where}: not valid JSON ({what} at {at}): expected {expected}") from None
    except ValueError as exc:  # an integer past Python's 4300-digit conversion limit
        raise JsonlError(f"{where}: a value JSON cannot be read into Python ({' '.join(str(exc).split())[:160]}): "
                         f"expected {expected}") from None


class _Twice(Exception):
    pass


def _once(pairs: list[tuple[str, Any]]) -> dict:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        raise _Twice(next(k for k, _ in pairs if k in seen or seen.add(k)))
    return obj


def _whole(tail: bytes) -> bool:
    """Whether a last line without its newline is a whole JSON value (not a line cut short)."""
    try:
        json.loads(tail.decode("utf-8"))
    except RecursionError:
        return True  # too deep to tell here: the reader judges it as any other line
    except (json.JSONDecodeError, UnicodeDecodeError):  # not JSON, or a line cut inside a character
        return False
    except ValueError:
        return True  # an integer past Python's digit limit stops the parser too: judged as any other line
    return True


# -- the bytes of a file -------------------------------------------------------------------------


class _Source:
    """The bytes of a file read once, to its size at opening (a stream without a file number, to its
    end), a ``.gz`` one decompressed, in chunks.
    ``cut_off`` says, once the chunks are exhausted, that the last gzip member had no end; a member
    that cannot be decompressed raises :class:`_Damaged`."""

    def __init__(self, path: Path, file: IO[bytes] | None) -> None:
        self.path, self.file, self.cut_off = path, file, False

    def __iter__(self) -> Iterator[bytes]:
        own = self.file is None
        f = open(self.path, "rb") if own else self.file
        try:
            try:
                left: int | None = os.fstat(f.fileno()).st_size
            except (OSError, AttributeError):  # a stream (a decompressor's): read to its end
                left = None
            raw = self._raw(f, left)
            yield from (self._gunzip(raw) if self.path.suffix == COMPRESSED else raw)
        finally:
            if own:
                f.close()

    @staticmethod
    def _raw(f: IO[bytes], left: int | None) -> Iterator[bytes]:
        while left is None or left > 0:
            chunk = f.read(_CHUNK if left is None else min(_CHUNK, left))
            if not chunk:
                return
            if left is not None:
                left -= len(chunk)
            yield chunk

    def _gunzip(self, raw: Iterator[bytes]) -> Iterator[bytes]:
        member, started, members = None, False, 0
        for data in raw:
            while data:
                if member is None:
                    if members:
                        data = data.lstrip(b"\x00")  # zeros may pad a file after a member, as gzip reads it
                        if not data:
                            break
                    member, started = zlib.decompressobj(wbits=31), False  # 31: a gzip header and trailer
                try:
                    out = member.decompress(data)
                except zlib.error as exc:
                    raise _Damaged(str(exc)) from None
                started = True
                if out:
                    yield out
                if not member.eof:
                    break
                data, member, members = member.unused_data, None, members + 1
        self.cut_off = member is not None and started


class _Damaged(Exception):
    pass


def _damaged(path: Path, lineno: int, reason: str) -> JsonlError:
    return JsonlError(f"{path}:{lineno}: the gzip data is cut off or damaged ({reason}): expected a complete gzip "
                      "file")


def _read_all(path: Path, file: IO[bytes] | None) -> tuple[bytes, bool]:
    """The bytes of ``path`` (:class:`_Source`), and whether its last gzip member had no end."""
    source = _Source(path, file)
    parts: list[bytes] = []
    try:
        for chunk in source:
            parts.append(chunk)
    except _Damaged as exc:
        raise _damaged(path, sum(p.count(b"\n") for p in parts) + 1, str(exc)) from None
    return b"".join(parts), source.cut_off


def read_bytes(path: str | Path, *, file: IO[bytes] | None = None) -> bytes:
    """Every byte of ``path`` (a ``.gz`` one decompressed; an unfinished last member read as far as
    it goes), read once to the size it had when opened; ``file``, where given, is ``path`` opened by
    the caller (its own way: ``O_NOFOLLOW``). Damaged gzip data raises :class:`JsonlError`."""
    return _read_all(Path(path), file)[0]


# -- lines ---------------------------------------------------------------------------------------


def numbered(data: bytes) -> Iterator[tuple[int, bytes]]:
    """(number from 1, line) for each non-blank line of ``data``, split at ``\\n`` alone."""
    for lineno, line in enumerate(data.split(b"\n"), start=1):
        if line.strip():
            yield lineno, line


def line_ends(data: bytes | memoryview) -> np.ndarray:
    """The offset just past each line of ``data`` (its newline, or the end of the data for a last
    line without one), as int64; what a reader of whole blocks of lines splits ``data`` at."""
    arr = np.frombuffer(data, dtype=np.uint8)
    step = 1 << 26  # in slices, so the comparison's temporary stays small for a large file
    ends = [np.flatnonzero(arr[lo:lo + step] == 10) + (lo + 1) for lo in range(0, arr.size, step)]
    out = np.concatenate(ends) if ends else np.empty(0, dtype=np.int64)
    if not out.size or out[-1] != arr.size:
        out = np.r_[out, arr.size]
    return out.astype(np.int64)


def _record(line: bytes, where: str, expected: str, deep: Callable[[bytes], Any] | None, unique_keys: bool) -> dict:
    try:
        value = loads(line, where, expected, unique_keys=unique_keys)
    except NestedTooDeep:
        value = deep(line) if deep is not None else None
        if value is None:
            raise
    if not isinstance(value, dict):
        kind = "null" if value is None else type(value).__name__
        raise JsonlError(f"{where}: a JSON {kind}: expected {expected}")
    return value


def _checked(torn: TornLine, path: str | Path) -> str | Path:
    if torn not in TORN_LINE:
        raise ValueError(f"torn={torn!r}: expected one of {', '.join(TORN_LINE)}")
    return path


def _torn(path: Path, lineno: int, torn: TornLine, stacklevel: int) -> None:
    """Apply the policy ``torn`` to the torn line ``lineno`` of ``path``."""
    if torn == "error":
        raise JsonlError(f"{path}:{lineno}: the last line is cut short (no newline, and not whole JSON): expected a "
                         "complete JSON object ending in a newline")
    if torn == "skip-with-warning":
        warnings.warn(f"{path}:{lineno}: skipped the unfinished last line of a file still being written",
                      RuntimeWarning, stacklevel=stacklevel + 1)


@dataclass(frozen=True)
class Lines:
    """A JSON-lines file as :func:`read` read it: ``data``, its lines up to the torn one (the last
    line is whole JSON where it lacks its newline); ``torn``, the number of the torn last line
    dropped (None where there was none), and ``rest``, its bytes. ``Lines(path, data)`` reads the
    lines of bytes a caller read itself (:func:`read_bytes`) and judged whole its own way."""

    path: Path
    data: bytes = field(repr=False)
    torn: int | None = None
    rest: bytes = field(default=b"", repr=False)

    def numbered(self) -> Iterator[tuple[int, bytes]]:
        """(number, line) for each non-blank line."""
        return numbered(self.data)

    def records(self, expected: str = OBJECT_PER_LINE, *, deep: Callable[[bytes], Any] | None = None,
                unique_keys: bool = False) -> Iterator[tuple[int, dict]]:
        """(line number, object) for each non-blank line, in file order; :class:`JsonlError` at the
        first line that is not a JSON object (with ``unique_keys``, or names a key twice). ``deep``
        reads a line nested deeper than Python's parser goes, where the caller has a parser that
        does (None: the error stands)."""
        for lineno, line in numbered(self.data):
            yield lineno, _record(line, f"{self.path}:{lineno}", expected, deep, unique_keys)


def read(path: str | Path, *, torn: TornLine, file: IO[bytes] | None = None, newline_ends: bool = False,
         at_least_one: str | None = None, stacklevel: int = 1) -> Lines:
    """The JSON-lines file ``path`` read once (:func:`read_bytes`), its torn last line handled as
    ``torn`` says.

    ``newline_ends``: every line ends in a newline, so a last line without one is torn even where
    it is whole JSON (a file appended to again: the next record would run into it). ``at_least_one``
    names what the file must hold one of: a file with no non-blank line, or only a torn one, is
    then an error. ``stacklevel``: where a warning points, counted from the caller of ``read``.
    """
    path = Path(_checked(torn, path))
    data, cut_off = _read_all(path, file)
    cut = data.rfind(b"\n") + 1
    lineno = data.count(b"\n", 0, cut) + 1
    if cut_off and torn == "error":
        raise _damaged(path, lineno, "it ends inside a gzip member, before its trailer")
    tail = data[cut:]
    lines = Lines(path, data)
    if tail.strip() and (newline_ends or not _whole(tail)):
        if at_least_one is not None and torn != "error" and not _has_text(data, cut):
            raise JsonlError(f"{path}:{lineno}: the only line is cut short (a file still being written): expected at "
                             "least one complete JSON object")
        _torn(path, lineno, torn, stacklevel + 1)
        lines = Lines(path, data[:cut], lineno, tail)
    if at_least_one is not None and not _has_text(lines.data, len(lines.data)):
        raise JsonlError(f"{path}: no {at_least_one} (the file has no non-blank lines): expected {OBJECT_PER_LINE}")
    return lines


def _has_text(data: bytes, end: int) -> bool:
    """Whether ``data[:end]`` holds a byte that is not whitespace (without copying it)."""
    return _TEXT.search(data, 0, end) is not None


def records(path: str | Path, *, torn: TornLine, expected: str = OBJECT_PER_LINE,
            file: IO[bytes] | None = None) -> Iterator[tuple[int, dict]]:
    """(line number, object) for each non-blank line of ``path``, read as it goes (a file larger
    than memory is read line by line), to the size it had when opened; the torn last line handled
    as ``torn`` says, any other line that is not a JSON object an error naming it."""
    path = Path(_checked(torn, path))
    source = _Source(path, file)
    lineno, pending = 0, []
    try:
        for chunk in source:
            start = 0
            end = chunk.find(b"\n")
            while end >= 0:
                lineno += 1
                line = b"".join([*pending, chunk[start:end]]) if pending else chunk[start:end]
                pending = []
                if line.strip():
                    yield lineno, _record(line, f"{path}:{lineno}", expected, None, False)
                start = end + 1
                end = chunk.find(b"\n", start)
            if start < len(chunk):
                pending.append(chunk[start:])
    except _Damaged as exc:
        raise _damaged(path, lineno + 1, str(exc)) from None
    lineno += 1
    if source.cut_off and torn == "error":
        raise _damaged(path, lineno, "it ends inside a gzip member, before its trailer")
    tail = b"".join(pending)
    if tail.strip():
        if _whole(tail):
            yield lineno, _record(tail, f"{path}:{lineno}", expected, None, False)
        else:
            _torn(path, lineno, torn, 2)


# -- writing -------------------------------------------------------------------------------------


def json_safe(value: Any, convert: Callable[[Any], Any] | None = None) -> Any:
    """``value`` as strict JSON holds it: NaN and infinities become null (JSON has neither), tuples
    lists, through dicts and lists at any depth. ``convert``, where given, is applied to every value
    first: the caller's own types as plain values (a report's statistics as their numbers)."""
    if convert is not None:
        value = convert(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: json_safe(v, convert) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v, convert) for v in value]
    return value


def encode(record: Any, *, ensure_ascii: bool = True, allow_nan: bool = True) -> bytes:
    """One record as its line: ``json.dumps`` (its defaults but for the two flags), a newline, UTF-8."""
    return (json.dumps(record, ensure_ascii=ensure_ascii, allow_nan=allow_nan) + "\n").encode("utf-8")


def _gzip(level: int = 9):
    """A deflate stream in a gzip wrapper; its header carries no time and no name, so the same
    records always give the same bytes."""
    return zlib.compressobj(level, zlib.DEFLATED, 31)


def write_lines(path: str | Path, data: bytes) -> None:
    """Replace ``path`` atomically by the encoded lines ``data``: as they are, or as one finished
    gzip member where the name ends in ``.gz``."""
    path = Path(path)
    if path.suffix == COMPRESSED:
        member = _gzip()
        data = member.compress(data) + member.flush()
    atomic_write(path, lambda f: f.write(data))


def write(path: str | Path, records: Iterable[Any], *, ensure_ascii: bool = True, allow_nan: bool = True) -> None:
    """Replace ``path`` atomically by a line per record (:func:`encode`); gzip-compressed where the
    name ends in ``.gz``."""
    write_lines(path, b"".join(encode(r, ensure_ascii=ensure_ascii, allow_nan=allow_nan) for r in records))


class Appender:
    """Appends records to the JSON-lines file ``path``, one line each, flushed as it is written.

    ``path`` is opened for each record (so a file replaced meanwhile, :func:`write`, is appended to
    as it now is), or ``file`` is written to where the caller opened it its own way (``O_NOFOLLOW``);
    :meth:`close` closes it. A ``.gz`` file gets one gzip member per appender: each record is
    compressed into it and sync-flushed, so the file decompresses to every record appended, and a
    kill mid-write leaves at most one torn last record, as a plain file would; :meth:`close` ends
    the member with gzip's trailer. An appender to a ``.gz`` file whose last member a kill left
    unfinished first rewrites the file as one finished member of its whole lines (the torn one
    dropped), so members always follow one another whole.
    """

    def __init__(self, path: str | Path, *, file: IO[bytes] | None = None) -> None:
        self.path = Path(path)
        self.file = file
        self.compressed = self.path.suffix == COMPRESSED
        self._member = None  # the compressor of this appender's gzip member, once it has begun

    def append(self, record: Any) -> None:
        """Write ``record`` (``json.dumps``'s defaults: pass :func:`json_safe` values for strict JSON)."""
        data = encode(record)
        if self.compressed:
            if self._member is None:
                self._end_unfinished_member()
                self._member = _gzip()
            data = self._member.compress(data) + self._member.flush(zlib.Z_SYNC_FLUSH)
        self._write(data)

    def close(self) -> None:
        """End this appender's gzip member (a plain file needs nothing), and close ``file``."""
        if self._member is not None:
            member, self._member = self._member, None
            self._write(member.flush())
        if self.file is not None:
            self.file.close()

    def forget(self) -> None:
        """Drop this appender's gzip member unended (its file was removed or replaced)."""
        self._member = None

    def __enter__(self) -> Appender:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _write(self, data: bytes) -> None:
        if self.file is not None:
            self.file.write(data)
            self.file.flush()
            return
        try:
            with self.path.open("ab") as f:
                f.write(data)
                f.flush()
        except OSError as exc:  # a full disk: say which file (a torn line is dropped when it is read)
            if exc.filename is None:
                exc.filename = str(self.path)
            raise

    def _end_unfinished_member(self) -> None:
        if self.file is not None or not self.path.exists():
            return
        data, cut_off = _read_all(self.path, None)
        if cut_off:
            cut = data.rfind(b"\n") + 1
            if not _whole(data[cut:]):
                data = data[:cut]  # the torn last line
            elif not data.endswith(b"\n"):
                data += b"\n"  # a whole record whose newline the kill cut off
            write_lines(self.path, data)
