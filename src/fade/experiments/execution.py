"""One run of a sweep: its state on disk, the worker process that trains it, and the pools that
hand runs to workers (:mod:`fade.experiments.sweep` drives them).

:func:`inspect_run` sorts a run into ``done``, ``resume``, ``new`` or ``conflict`` (the states
the sweep's docstring describes) from its ``done.json``, ``run.json``, checkpoint and logs;
:func:`execute_run` trains, resumes or skips it and never raises. Workers are ``spawn``-ed
processes with one torch thread each, which end when the sweep that started them does;
with one worker the runs train in the sweep's own process.
"""

from __future__ import annotations

import dataclasses
import json
import os
import threading
import time
import traceback
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from pathlib import Path
from typing import Any

from fade import jsonl
from fade.atomic import write_json_atomic
from fade.testbed.runlog import EVAL_FILE, METRICS_FILE, log_path

from .design import RunSpec

__all__ = [
    "CONFLICT",
    "DONE",
    "DONE_FILE",
    "ERROR_FILE",
    "NEW",
    "InlinePool",
    "ProcessPool",
    "RESUME",
    "execute_run",
    "inspect_run",
    "log_lines",
    "planned_config",
    "read_json",
]

DONE_FILE, ERROR_FILE = "done.json", "error.txt"
DONE, RESUME, NEW, CONFLICT = "done", "resume", "new", "conflict"
_CHECKPOINT = "checkpoint.pt"  # the trainer's checkpoint file name
_NOT_COMPARED = ("out", "progress")  # where a run lives and whether it drew a bar do not change it


# -- one run's state ----------------------------------------------------------------------------


def planned_config(run: RunSpec, out: str | Path) -> dict[str, Any]:
    """The run's TrainConfig as the JSON its ``run.json`` would hold, less out and progress."""
    from fade.testbed.trainer import TrainConfig

    config = dataclasses.asdict(TrainConfig(**run.train_kwargs(out)))
    return json.loads(json.dumps({k: v for k, v in config.items() if k not in _NOT_COMPARED}))


def read_json(path: Path) -> dict[str, Any] | None:
    try:
        value = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def log_lines(directory: Path, name: str) -> list[bytes]:
    """The non-blank whole lines of the run's log ``name``, compressed or plain, a torn last line
    (a kill mid-write) left out ([] when it is missing or unreadable)."""
    path = log_path(directory, name)
    try:
        return [line for _, line in jsonl.read(path, torn="skip-silently").numbered()] if path is not None else []
    except (OSError, ValueError):
        return []


def _last_step(directory: Path, name: str) -> int | None:
    """The step of the last record of the run's log ``name`` (None if there is none, or it names none)."""
    lines = log_lines(directory, name)
    try:
        return int(jsonl.loads(lines[-1], name)["step"]) if lines else None
    except (ValueError, KeyError, TypeError):
        return None


def _complete(directory: Path, run: RunSpec) -> bool:
    if _last_step(directory, METRICS_FILE) != run.steps:
        return False
    return run.num_evals == 0 or _last_step(directory, EVAL_FILE) == run.steps


def _config_defaults() -> dict[str, Any]:
    from fade.testbed.trainer import TrainConfig

    return {f.name: f.default for f in dataclasses.fields(TrainConfig) if f.default is not dataclasses.MISSING}


def _differences(saved: dict[str, Any], planned: dict[str, Any]) -> dict[str, tuple[Any, Any]]:
    # A setting added to the trainer after a run was recorded reads as its default there, so
    # finished runs stay finished when the trainer gains an option.
    defaults = _config_defaults()
    keys = (set(saved) | set(planned)) - set(_NOT_COMPARED)
    pairs = {k: (saved.get(k, defaults.get(k)), planned.get(k, defaults.get(k))) for k in sorted(keys)}
    return {k: (a, b) for k, (a, b) in pairs.items() if a != b}


def inspect_run(run: RunSpec, out: str | Path) -> tuple[str, str]:
    """(state, why) of ``run`` in the sweep folder ``out``; see the module docstring for states."""
    directory = run.directory(out)
    planned = planned_config(run, out)
    done = read_json(directory / DONE_FILE)
    if done is not None and not _differences(done.get("config") or {}, planned) and _complete(directory, run):
        return DONE, "finished"
    saved = read_json(directory / "run.json")
    if (directory / _CHECKPOINT).is_file():
        if saved is None:
            return CONFLICT, f"{directory} has a checkpoint but no readable run.json: remove the folder to retrain it"
        diff = _differences(saved, planned)
        if not diff:
            return RESUME, "interrupted: resuming from its checkpoint"
        if set(diff) == {"steps"} and isinstance(saved.get("steps"), int) and saved["steps"] < run.steps:
            return RESUME, f"extending from {saved['steps']} to {run.steps} steps"
        return CONFLICT, _conflict_message(directory, diff)
    if done is not None and _differences(done.get("config") or {}, planned):
        return CONFLICT, _conflict_message(directory, _differences(done.get("config") or {}, planned))
    return NEW, "not started" if saved is None else "no checkpoint to resume from: starting over"


def _conflict_message(directory: Path, diff: dict[str, tuple[Any, Any]]) -> str:
    shown = ", ".join(f"{k} {a!r} there, {b!r} planned" for k, (a, b) in list(diff.items())[:4])
    hint = ""
    if set(diff) == {"steps"} and not (directory / _CHECKPOINT).is_file():
        hint = " (a finished run keeps no checkpoint to extend from unless the sweep ran with --keep-checkpoints)"
    return f"{directory} holds a different run ({shown}){hint}: remove that folder or choose another --out"


# -- the worker ---------------------------------------------------------------------------------


def _quiet_transformers() -> None:
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # per-file load/save bars from many workers are noise
    hf_logging.set_verbosity_error()


#: How often a worker checks that the sweep that started it is still alive.
_PARENT_POLL_SECONDS = 1.0


def _exit_with_parent(parent: int) -> None:
    """End this worker once ``parent`` is gone. A sweep killed by a signal it cannot clean up
    after (SIGTERM, SIGKILL) would otherwise leave its workers training on, writing into run
    folders that the next sweep resumes; an ended run resumes from its last checkpoint."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(_PARENT_POLL_SECONDS)
        os._exit(1)

    threading.Thread(target=watch, name="exit-with-parent", daemon=True).start()


def _init_worker(sweep: int | None = None) -> None:
    """A worker process: one thread for torch and its math libraries, so N workers use N cores;
    it ends when the sweep (process ``sweep``, which may have died while this one started) does."""
    _exit_with_parent(os.getppid() if sweep is None else sweep)
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ[name] = "1"
    import torch

    torch.set_num_threads(1)
    try:
        torch.set_num_interop_threads(1)
    except RuntimeError:  # only settable before the first parallel work; the intra-op setting is what counts
        pass
    _quiet_transformers()


def execute_run(run: RunSpec, out: str, keep_checkpoints: bool = False) -> dict[str, Any]:
    """Train (or resume, or skip) one run; returns {"key", "status", ...}; never raises an Exception.

    status is "skipped" (already finished), "finished" (with cpu_seconds, wall_seconds, resumed)
    or "failed" (with error; the traceback is in the run's error.txt).
    """
    wall0, cpu0 = time.perf_counter(), time.process_time()
    directory = run.directory(out)
    try:
        state, why = inspect_run(run, out)
        if state == DONE:
            return {"key": run.key, "status": "skipped"}
        if state == CONFLICT:
            raise ValueError(why)
        from fade.testbed import report
        from fade.testbed.trainer import TrainConfig, train

        (directory / ERROR_FILE).unlink(missing_ok=True)
        train(TrainConfig(**run.train_kwargs(out)), resume=state == RESUME)
        try:
            report.plot_run(directory)  # the run's own figures, for looking into one run
        except (ValueError, RuntimeError):
            pass
        if not _complete(directory, run):
            raise RuntimeError(f"the trainer returned but {directory} does not reach step {run.steps} in its logs")
        record = {
            "key": run.key, "task": run.task, "estimator": run.estimator, "seed": run.seed, "steps": run.steps,
            "tuned_from": run.tuned_from, "config": planned_config(run, out), "resumed": state == RESUME,
            "cpu_seconds": round(time.process_time() - cpu0, 2), "wall_seconds": round(time.perf_counter() - wall0, 2),
            "torch_threads": _torch_threads(), "finished_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        }
        write_json_atomic(directory / DONE_FILE, record)
        if not keep_checkpoints:
            # The final policy stays in policy/; the optimizer state is only needed to go on training.
            (directory / _CHECKPOINT).unlink(missing_ok=True)
        return {**record, "status": "finished"}
    except Exception as exc:  # noqa: BLE001 - one run's failure must not take the sweep down
        try:
            directory.mkdir(parents=True, exist_ok=True)
            (directory / ERROR_FILE).write_text(traceback.format_exc())
        except OSError:
            pass
        return {"key": run.key, "status": "failed", "error": f"{type(exc).__name__}: {exc}"}


def _torch_threads() -> int:
    import torch

    return torch.get_num_threads()


# -- pools --------------------------------------------------------------------------------------


class ProcessPool:
    """Runs in spawned worker processes (spawn: no forked torch or thread state)."""

    def __init__(self, workers: int, out: str, keep_checkpoints: bool):
        import multiprocessing

        self._executor = ProcessPoolExecutor(
            workers, mp_context=multiprocessing.get_context("spawn"), initializer=_init_worker, initargs=(os.getpid(),),
        )
        self._futures: dict[Future, RunSpec] = {}
        self._out, self._keep = out, keep_checkpoints

    def submit(self, run: RunSpec) -> None:
        self._futures[self._executor.submit(execute_run, run, self._out, self._keep)] = run

    def pending(self) -> list[RunSpec]:
        return list(self._futures.values())

    def completed(self, timeout: float) -> list[tuple[RunSpec, dict[str, Any]]]:
        if not self._futures:
            return []
        done, _ = wait(self._futures, timeout=timeout, return_when=FIRST_COMPLETED)
        results = []
        for future in done:
            run = self._futures.pop(future)
            try:
                results.append((run, future.result()))
            except Exception as exc:  # noqa: BLE001 - a worker that died (killed, out of memory)
                error = f"worker process failed: {type(exc).__name__}: {exc}"
                results.append((run, {"key": run.key, "status": "failed", "error": error}))
        return results

    def close(self, cancel: bool = False) -> None:
        self._executor.shutdown(wait=True, cancel_futures=cancel)


class InlinePool:
    """Runs in this process, one at a time (one worker): no start-up cost, same results."""

    def __init__(self, out: str, keep_checkpoints: bool):
        import torch

        self._queue: list[RunSpec] = []
        self._out, self._keep = out, keep_checkpoints
        self._threads = torch.get_num_threads()
        torch.set_num_threads(1)  # as in a worker, so measured CPU times compare
        _quiet_transformers()

    def submit(self, run: RunSpec) -> None:
        self._queue.append(run)

    def pending(self) -> list[RunSpec]:
        return list(self._queue)

    def completed(self, timeout: float) -> list[tuple[RunSpec, dict[str, Any]]]:
        if not self._queue:
            return []
        run = self._queue.pop(0)
        return [(run, execute_run(run, self._out, self._keep))]

    def close(self, cancel: bool = False) -> None:
        import torch

        self._queue.clear()
        torch.set_num_threads(self._threads)
