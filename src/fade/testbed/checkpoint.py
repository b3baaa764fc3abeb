"""Atomic checkpoints and append-only metric logs that a resumed run continues exactly.

A checkpoint is written to a temporary file in the same folder, flushed to disk and renamed
over the old one, so a kill at any moment leaves either the previous checkpoint or the new one,
never a torn file. Metric logs are JSON lines appended as a run goes; on resume, records past
the checkpoint's step are dropped (atomically) so the resumed run writes them again exactly
as an uninterrupted run would have. A log whose name ends in ``.gz`` is written gzip-compressed,
record by record (see :class:`JsonlLog`), so a run's logs stay small and are readable at every
moment, and after a kill, as the plain ones are. The lines are read and written by
:mod:`fade.jsonl`.

A checkpoint file is one header line, ``FADE-CHECKPOINT sha256=<hex digest of the rest>``, then
the ``torch.save`` payload; loading verifies the digest, so a truncated or bit-flipped file is
refused by name instead of being half-read. Files without the header (written before it
existed) load unverified.
"""

from __future__ import annotations

import hashlib
import io
from pathlib import Path
from typing import Any

import torch

from fade import jsonl
from fade.atomic import atomic_write as _atomic_write
from fade.jsonl import COMPRESSED

__all__ = ["JsonlLog", "compress_log", "compress_logs", "load_checkpoint", "save_checkpoint"]

_MAGIC = b"FADE-CHECKPOINT sha256="
_DIGEST_HEX = 64


def save_checkpoint(path: str | Path, state: dict[str, Any]) -> None:
    """Write ``state`` (tensors, dicts, numbers, strings) to ``path`` atomically, with its sha256."""
    buffer = io.BytesIO()
    torch.save(state, buffer)
    payload = buffer.getvalue()
    header = _MAGIC + hashlib.sha256(payload).hexdigest().encode("ascii") + b"\n"

    def write(f) -> None:
        f.write(header)
        f.write(payload)

    _atomic_write(Path(path), write)


def _payload(path: Path) -> bytes:
    """The torch payload of a checkpoint file, its digest checked."""
    data = path.read_bytes()
    if not data.startswith(_MAGIC):
        return data  # written before checkpoints carried a digest (or not a checkpoint: torch.load says)
    end = len(_MAGIC) + _DIGEST_HEX
    expected, payload = data[len(_MAGIC):end], data[end + 1:]
    if data[end:end + 1] != b"\n":
        raise ValueError(f"{path} is a damaged fade checkpoint: its header is cut short")
    actual = hashlib.sha256(payload).hexdigest().encode("ascii")
    if actual != expected:
        raise ValueError(
            f"{path} is a damaged fade checkpoint: sha256 of its {len(payload)} payload bytes is "
            f"{actual.decode()[:12]}..., the header says {expected.decode(errors='replace')[:12]}... "
            "(truncated or corrupted on disk)"
        )
    return payload


def load_checkpoint(path: str | Path, map_location: str | torch.device = "cpu") -> dict[str, Any]:
    """Read a checkpoint written by :func:`save_checkpoint` (tensors and plain data only), digest verified."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"no checkpoint at {path}: expected a file written by a fade run")
    payload = _payload(path)
    try:
        state = torch.load(io.BytesIO(payload), map_location=map_location, weights_only=True)
    except Exception as exc:  # a foreign or damaged file: say which, not a pickle traceback
        raise ValueError(f"{path} is not a readable fade checkpoint: {exc}") from None
    if not isinstance(state, dict):
        raise ValueError(f"{path} is not a fade checkpoint: it holds a {type(state).__name__}, expected a dict")
    return state


class JsonlLog:
    """An append-only JSON-lines file of records keyed by ``step``; gzip-compressed when its name
    ends in ``.gz`` (one gzip member per writing session, :class:`fade.jsonl.Appender`).

    :meth:`truncate_after` rewrites the file atomically (as one finished member, where
    compressed). A compressed log also reads, and on :meth:`truncate_after` converts, the plain
    file of its name without ``.gz`` that a run written before holds (:meth:`remove` deletes both).
    Reading it back (:meth:`records`, before a resumed run continues it), a torn last record (a run
    killed mid-write) is dropped silently; any other line that is not a record is an error naming
    it.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.compressed = self.path.suffix == COMPRESSED
        self._appender = jsonl.Appender(self.path)

    @property
    def plain(self) -> Path | None:
        """The plain file a compressed log replaces (None for a plain log)."""
        return self.path.with_suffix("") if self.compressed else None

    def append(self, record: dict[str, Any]) -> None:
        self._appender.append(jsonl.json_safe(record))  # JSON has no NaN; readers treat null as missing

    def close(self) -> None:
        """End this session's gzip member (a plain log needs nothing)."""
        self._appender.close()

    def records(self) -> list[dict[str, Any]]:
        path = self.path if self.path.exists() or self.plain is None else self.plain
        if not path.exists():
            return []
        return [record for _, record in jsonl.read(path, torn="skip-silently").records()]

    def truncate_after(self, step: int) -> None:
        """Keep the records with ``step`` <= ``step`` (one per step, first kept), atomically."""
        kept, seen = [], set()
        for rec in self.records():
            s = rec.get("step")
            if isinstance(s, int) and s <= step and s not in seen:
                kept.append(rec)
                seen.add(s)
        self.close()
        jsonl.write(self.path, kept)
        if self.plain is not None:
            self.plain.unlink(missing_ok=True)  # converted: the compressed file is the log now

    def remove(self) -> None:
        """Delete the log (and the plain file a compressed one replaces)."""
        self._appender.forget()
        self.path.unlink(missing_ok=True)
        if self.plain is not None:
            self.plain.unlink(missing_ok=True)


def compress_log(path: str | Path) -> Path:
    """Replace the plain JSON-lines log ``path`` by ``path.gz``, one finished gzip member holding the
    same bytes; the compressed file is written atomically and checked to read back exactly before
    the plain one is removed. Returns the compressed file. Refuses a ``path`` whose ``.gz``
    already exists (the two would be two versions of one log)."""
    path = Path(path)
    target = path.with_name(path.name + COMPRESSED)
    if target.exists():
        raise ValueError(f"{target} already exists beside {path}: remove the one that is not the log, then rerun")
    data = path.read_bytes()
    jsonl.write_lines(target, data)
    if jsonl.read_bytes(target) != data:  # never expected: but the plain file goes only once this holds
        target.unlink()
        raise ValueError(f"{target} does not read back as {path}: the plain log is kept")
    path.unlink()
    return target


def compress_logs(root: str | Path, names: tuple[str, ...] = ("metrics.jsonl", "eval.jsonl")) -> list[Path]:
    """:func:`compress_log` every file called one of ``names`` under the folder ``root``, recursively
    (the run logs of sweeps written before the trainer compressed them): the compressed files, in
    path order. Readers take either form, so this only makes a folder smaller.

        python -c "from fade.testbed.checkpoint import compress_logs; compress_logs('docs/results')"
    """
    root = Path(root)
    if not root.is_dir():
        raise ValueError(f"{root} is not a folder: expected one holding run logs")
    return [compress_log(p) for p in sorted(p for name in names for p in root.rglob(name) if p.is_file())]
