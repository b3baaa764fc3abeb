"""``fade eval``'s output folder and its hardening: the names of its files, ``scores.jsonl`` (read
back on a rerun, a torn last line cut off, anything else that is not a score line refused),
``run.json`` (the settings the scores were made with), the ``.lock`` a writing run holds, and the
rule that fade eval writes only to files it made (a symbolic link, a hard link or anything but a
regular file is refused, never truncated, appended to or followed)."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from fade import jsonl
from fade.atomic import atomic_write

from .inputs import Sample

__all__ = [
    "LOCK",
    "PASSK_PNG",
    "PROBLEMS",
    "REPORT",
    "RUN",
    "SCORES",
    "append_scores",
    "atomic_write_text",
    "check_reused",
    "check_settings",
    "folder_lock",
    "load_scores",
    "own_file",
    "write_run",
]

SCORES, RUN, REPORT, PROBLEMS, PASSK_PNG = "scores.jsonl", "run.json", "report.json", "problems.jsonl", "passk.png"
LOCK = ".lock"

# Every line fade eval writes to scores.jsonl starts so; a torn last line is dropped only if it does.
_SCORE_LINE_START = b'{"problem_id": '
_NOT_OURS = "this is not fade eval's scores file or it is damaged: choose another --out"


def own_file(path: Path, what: str) -> bool:
    """Whether ``path`` exists; refuses anything but a regular file with one name (a symbolic link,
    a hard link to a file elsewhere, a folder, a pipe): fade eval writes only to files it made."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return False
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISREG(info.st_mode) or info.st_nlink != 1:
        kind = "a symbolic link" if stat.S_ISLNK(info.st_mode) else (
            "not a regular file" if not stat.S_ISREG(info.st_mode) else "a hard link to a file elsewhere")
        raise ValueError(f"{path} is {kind}, not the {what} fade eval writes: it is left alone; "
                         "choose another --out (or remove it)")
    return True


def _score_record_defect(rec: Any) -> str | None:
    """What is wrong with ``rec`` as a line of fade eval's scores.jsonl, or None."""
    if not isinstance(rec, dict):
        return f"a JSON {type(rec).__name__}, not an object"
    pid, sample, score = rec.get("problem_id"), rec.get("sample"), rec.get("score")
    if isinstance(pid, bool) or not isinstance(pid, (str, int)):
        return f"problem_id {pid!r} is not a string or an integer"
    if isinstance(sample, bool) or not isinstance(sample, int) or sample < 0:
        return f"sample {sample!r} is not an integer >= 0"
    if isinstance(score, bool) or not isinstance(score, (int, float)) or not 0 <= score <= 1:
        return f"score {score!r} is not a number in [0, 1]"
    if not isinstance(rec.get("reason"), str):
        return f"reason {rec.get('reason')!r} is not text"
    if not isinstance(rec.get("canonical"), (str, type(None))):
        return f"canonical {rec.get('canonical')!r} is not text or null"
    if not isinstance(rec.get("details", {}), dict):
        return f"details {rec.get('details')!r} is not an object"
    return None


def load_scores(path: Path) -> dict[tuple[str, int], dict]:
    """The scores already written, keyed by (problem, sample). A last line torn by a kill (no
    newline, the start of a score line) is cut off; any other line that is not a score line is an
    error naming it, and nothing is changed: the file is not fade eval's, or it was damaged."""
    if not own_file(path, "scores file"):
        return {}
    fd = os.open(path, os.O_RDWR | os.O_NOFOLLOW)
    with os.fdopen(fd, "r+b") as f:
        # every score line is appended with its newline, so a last line without one is torn, whole or not
        lines = jsonl.read(path, torn="skip-silently", file=f, newline_ends=True)
        scores: dict[tuple[str, int], dict] = {}
        for lineno, rec in lines.records(f"a fade eval score line ({_NOT_OURS})"):
            defect = _score_record_defect(rec)
            if defect is not None:
                raise ValueError(f"{path}:{lineno}: not a fade eval score line ({defect}); {_NOT_OURS}")
            scores[(json.dumps(rec["problem_id"]), rec["sample"])] = rec
        if lines.torn is not None:
            if not lines.rest.startswith(_SCORE_LINE_START):
                raise ValueError(f"{path}:{lines.torn}: not a fade eval score line (unterminated, and not the start of "
                                 f"one a kill tore); {_NOT_OURS}")
            f.truncate(len(lines.data))
    return scores


def check_reused(
    done: dict[tuple[str, int], dict], samples: list[Sample], scores_path: Path, samples_file: str
) -> None:
    """Refuse scores of ``scores_path`` that are not for the samples as they are now: a sample the
    file no longer has, another completion, or a completion scored against another reference."""
    wanted = {(s.problem, s.index): s for s in samples}
    for key, rec in done.items():
        sample = wanted.get(key)
        if sample is None:
            raise ValueError(
                f"{scores_path} scores problem {key[0]} sample {key[1]}, which {samples_file} does not have: "
                "the samples file changed; use another --out"
            )
        if rec.get("completion_sha") != sample.sha:
            raise ValueError(f"{scores_path} scores a different completion for problem {key[0]} sample {key[1]} "
                             f"(line {sample.where}): the samples file changed; use another --out")
        if rec.get("reference_sha") != sample.reference_sha:
            was = (
                "no reference hash (written by an earlier fade)" if "reference_sha" not in rec else "another reference"
            )
            raise ValueError(f"{scores_path} scored problem {key[0]} sample {key[1]} against {was}: its gold answer or "
                             f"tests (line {sample.where}, or --problems) changed since; use another --out")


def append_scores(path: Path) -> jsonl.Appender:
    """``scores.jsonl`` opened to append, never through a link (:func:`load_scores` has checked
    the file, or its absence, under the lock)."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o644)
    return jsonl.Appender(path, file=os.fdopen(fd, "ab"))


def atomic_write_text(path: Path, text: str) -> None:
    data = text.encode("utf-8")
    atomic_write(path, lambda f: f.write(data))


def write_run(out: Path, settings: dict[str, Any], samples_file: str, problems_file: str | None) -> None:
    """Write ``run.json``: the settings the folder's scores are made with, and the files read."""
    doc = {"settings": settings, "samples": samples_file, "problems": problems_file}
    atomic_write_text(out / RUN, json.dumps(doc, indent=2) + "\n")


def check_settings(out: Path, settings: dict[str, Any]) -> None:
    """Refuse to add scores made with other settings to a folder's scores, and to write into a
    folder whose run.json (the settings its scores were made with) is damaged or missing."""
    run = out / RUN
    if not own_file(run, "run file"):
        made = [name for name in (SCORES, REPORT, PROBLEMS) if os.path.lexists(out / name)]
        if made:  # fade eval writes run.json before anything else
            raise ValueError(f"{out} holds {', '.join(made)} but no {RUN}, which says what settings they were made "
                             "with: not a fade eval folder, or its run.json was deleted; choose another --out")
        return
    try:
        before = json.loads(run.read_text(encoding="utf-8"))["settings"]
    except (ValueError, KeyError, TypeError, RecursionError):
        raise ValueError(f"{run} is not a fade eval run file (expected JSON with its settings); it is left alone: "
                         "choose another --out") from None
    if before != settings:
        raise ValueError(
            f"{out} holds scores made with other settings ({json.dumps(before)}); rerun with those, "
            f"or choose another --out (now: {json.dumps(settings)})"
        )


@contextlib.contextmanager
def folder_lock(out: Path) -> Iterator[None]:
    """Hold ``out/.lock`` (an advisory lock the kernel drops when the process dies, so a killed
    run never leaves the folder locked); refuse when another run holds it."""
    path = out / LOCK
    own_file(path, "lock file")
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK, 0o644)
    except OSError as exc:  # a link made since the check above (ELOOP), or no permission
        raise ValueError(
            f"{path} cannot be opened as fade eval's lock file ({exc.strerror}); choose another --out"
        ) from None
    try:
        own_file(path, "lock file")
        held = os.pread(fd, 64, 0)
        if held.strip() and not held.strip().isdigit():
            raise ValueError(f"{path} holds {held[:32]!r}, not the process id fade eval writes there: it is not fade "
                             "eval's lock file; choose another --out (or remove it)")
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 64, 0).decode("ascii", errors="replace").strip() or "unknown"
            raise ValueError(f"{out} is being written by another fade eval (pid {holder}); wait for it to finish "
                             "or choose another --out") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        os.close(fd)
