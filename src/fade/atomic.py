"""Atomic file writes: a kill at any moment leaves the previous file or the new one, never a
torn one. The new content goes to a temporary file in the same folder, is flushed to disk and
renamed over the target (a rename within one file system is atomic on POSIX and Windows).
Checkpoints, estimator states saved beside an engine's checkpoints, resumable logs and
figures (:func:`write_figure_atomic`) all write through here. A symbolic link at the target is
replaced by the new file, never written through: the file it points to is left as it was. A
kill between creating the temporary file and the rename leaves it behind
(``.NAME.XXXXXXXX.tmp``); :func:`remove_orphaned_temp_files` clears those of named targets when
the owner of the folder starts again.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import IO, Any

__all__ = ["atomic_write", "remove_orphaned_temp_files", "write_figure_atomic", "write_json_atomic"]

_TEMP_SUFFIX = ".tmp"


def _temp_prefix(name: str) -> str:
    return f".{name}."


def atomic_write(path: str | Path, write: Callable[[IO[bytes]], Any]) -> None:
    """Call ``write(f)`` on a binary file that replaces ``path`` only once it is complete.

    An OSError (a full disk, say) leaves ``path`` as it was, removes the temporary file and
    propagates with ``path`` as its filename, so the message says which file could not be written.
    The file gets the permissions a plain ``open(path, "w")`` would give it (0666 less the umask),
    not the temporary file's owner-only ones.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=_temp_prefix(path.name), suffix=_TEMP_SUFFIX, dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException as exc:
        if os.path.exists(tmp):
            os.unlink(tmp)
        if isinstance(exc, OSError) and exc.filename is None:
            exc.filename = str(path)
        raise


def _umask() -> int:
    """The process's umask (read by setting it and putting it back)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def remove_orphaned_temp_files(folder: str | Path, names: Iterable[str]) -> list[Path]:
    """Delete the temporary files :func:`atomic_write` left in ``folder`` for targets ``names``.

    Only files directly in ``folder`` whose name is ``.NAME.<random>.tmp`` for one of ``names``
    are touched. Call it only where no other process is writing those targets. Returns the
    removed paths.
    """
    folder = Path(folder)
    if not folder.is_dir():
        return []
    patterns = [re.compile(re.escape(_temp_prefix(n)) + r"[A-Za-z0-9_]+" + re.escape(_TEMP_SUFFIX)) for n in names]
    removed = []
    for entry in folder.iterdir():
        if any(p.fullmatch(entry.name) for p in patterns) and entry.is_file() and not entry.is_symlink():
            entry.unlink(missing_ok=True)
            removed.append(entry)
    return removed


def write_json_atomic(path: str | Path, payload: Any) -> None:
    """Write ``payload`` as indented JSON to ``path`` atomically."""
    data = (json.dumps(payload, indent=2, allow_nan=False) + "\n").encode("utf-8")
    atomic_write(path, lambda f: f.write(data))


def write_figure_atomic(path: str | Path, figure: Any, **savefig: Any) -> None:
    """Save the matplotlib ``figure`` to ``path`` atomically, in the format its suffix names
    (``.png``); ``savefig`` are ``Figure.savefig``'s keyword arguments (``dpi``). The temporary
    file's own name ends in ``.tmp``, so the format is passed rather than guessed from it."""
    fmt = Path(path).suffix.lstrip(".").lower()
    if not fmt:
        raise ValueError(f"{path}: a figure needs a file name with a format suffix (.png, .svg, .pdf)")
    atomic_write(path, lambda f: figure.savefig(f, format=fmt, **savefig))
