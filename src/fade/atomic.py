"""Atomic file writes: a kill at any moment leaves the previous file or the new one, never a
torn one. The new content goes to a temporary file in the same folder, is flushed to disk and
renamed over the target (a rename within one file system is atomic on POSIX and Windows).
Checkpoints, estimator states saved beside an engine's checkpoints, and resumable logs all
write through here.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

__all__ = ["atomic_write", "write_json_atomic"]


def atomic_write(path: str | Path, write: Callable[[IO[bytes]], Any]) -> None:
    """Call ``write(f)`` on a binary file that replaces ``path`` only once it is complete."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def write_json_atomic(path: str | Path, payload: Any) -> None:
    """Write ``payload`` as indented JSON to ``path`` atomically."""
    data = (json.dumps(payload, indent=2, allow_nan=False) + "\n").encode("utf-8")
    atomic_write(path, lambda f: f.write(data))
