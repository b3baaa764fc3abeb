"""Atomic checkpoints and append-only metric logs that a resumed run continues exactly.

A checkpoint is written to a temporary file in the same folder, flushed to disk and renamed
over the old one, so a kill at any moment leaves either the previous checkpoint or the new one,
never a torn file. Metric logs are JSON lines appended as a run goes; on resume, records past
the checkpoint's step are dropped (atomically) so the resumed run writes them again exactly
as an uninterrupted run would have.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import torch

from fade.atomic import atomic_write as _atomic_write

__all__ = ["JsonlLog", "load_checkpoint", "save_checkpoint"]


def save_checkpoint(path: str | Path, state: dict[str, Any]) -> None:
    """Write ``state`` (tensors, dicts, numbers, strings) to ``path`` atomically."""
    _atomic_write(Path(path), lambda f: torch.save(state, f))


def load_checkpoint(path: str | Path, map_location: str | torch.device = "cpu") -> dict[str, Any]:
    """Read a checkpoint written by :func:`save_checkpoint` (tensors and plain data only)."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"no checkpoint at {path}: expected a file written by a fade run")
    try:
        return torch.load(path, map_location=map_location, weights_only=True)
    except Exception as exc:  # a foreign or damaged file: say which, not a pickle traceback
        raise ValueError(f"{path} is not a readable fade checkpoint: {exc}") from None


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
        with self.path.open("a", encoding="utf-8") as f:
            f.write(line + "\n")
            f.flush()

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
