"""Atomic checkpoints and append-only metric logs that a resumed run continues exactly.

A checkpoint is written to a temporary file in the same folder, flushed to disk and renamed
over the old one, so a kill at any moment leaves either the previous checkpoint or the new one,
never a torn file. Metric logs are JSON lines appended as a run goes; on resume, records past
the checkpoint's step are dropped (atomically) so the resumed run writes them again exactly
as an uninterrupted run would have.

A checkpoint file is one header line, ``FADE-CHECKPOINT sha256=<hex digest of the rest>``, then
the ``torch.save`` payload; loading verifies the digest, so a truncated or bit-flipped file is
refused by name instead of being half-read. Files without the header (written before it
existed) load unverified.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
from pathlib import Path
from typing import Any

import torch

from fade.atomic import atomic_write as _atomic_write

__all__ = ["JsonlLog", "load_checkpoint", "save_checkpoint"]

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


def _jsonable(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None  # JSON has no NaN; readers treat null as missing
    return value


class JsonlLog:
    """An append-only JSON-lines file of records keyed by ``step``."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    def append(self, record: dict[str, Any]) -> None:
        line = json.dumps({k: _jsonable(v) for k, v in record.items()}, sort_keys=False)
        try:
            with self.path.open("a", encoding="utf-8") as f:
                f.write(line + "\n")
                f.flush()
        except OSError as exc:  # a full disk: say which file (a torn line is dropped on resume)
            if exc.filename is None:
                exc.filename = str(self.path)
            raise

    def records(self) -> list[dict[str, Any]]:
        if not self.path.exists():
            return []
        out = []
        for line in self.path.read_text(encoding="utf-8").splitlines():
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                break  # a line torn by a kill mid-write: nothing after it is trusted
        return out

    def truncate_after(self, step: int) -> None:
        """Keep the records with ``step`` <= ``step`` (one per step, first kept), atomically."""
        kept, seen = [], set()
        for rec in self.records():
            s = rec.get("step")
            if isinstance(s, int) and s <= step and s not in seen:
                kept.append(rec)
                seen.add(s)
        text = "".join(json.dumps(r) + "\n" for r in kept).encode("utf-8")
        _atomic_write(self.path, lambda f: f.write(text))
