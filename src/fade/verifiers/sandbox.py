"""Run an untrusted Python program against test inputs, isolated from the machine that runs it.

A :class:`SandboxRun` starts the supervisor script :mod:`fade.verifiers.harness` (standard
library only, ``python -S -s``, a cleaned environment, a new session) and feeds it one job: the
program, the test inputs, the limits. The supervisor isolates itself as far as the kernel lets it
and reports the isolation it obtained before running anything; then it runs the program once
per test and streams back, per test, what the program printed (or returned, for call-based
tests) and how it ended. The caller compares outputs and stops at the first failure; closing the
run kills the supervisor's whole process group, which takes everything in the sandbox with it.

Isolation, strongest first (``SandboxRun.isolation["mode"]`` says which one a run had):

- "namespaces" (running as root): new mount, pid, network, IPC and UTS namespaces. The program
  sees a private root: system directories and the interpreter's standard library read-only, a
  few device nodes, its own /proc, and a fresh size-limited tmpfs at /tmp that is its working
  directory and the only writable place. It runs as an unprivileged uid of its own (one per
  concurrent sandbox, from :data:`UID_BASE`), with no capabilities and no_new_privs; the network
  namespace has only a loopback interface that is down, so every connection fails.
- "user-namespaces" (not root, where unprivileged user namespaces are enabled): the same
  namespaces and private root inside a new user namespace; the program keeps the caller's uid
  but no capabilities.
- "none" (neither is possible, or ``namespaces=False``): a fresh host temporary directory as
  working directory, resource limits, a cleaned environment and a process-group kill only. The
  network, the host filesystem and (unless root, which still drops to a uid of its own) the
  caller's own processes are NOT isolated. A warning is logged once per process.

Limits, in every mode: per-test wall time (enforced by the supervisor) and CPU time
(RLIMIT_CPU), address space (RLIMIT_AS), file size (RLIMIT_FSIZE), processes (RLIMIT_NPROC),
open files, no core dumps, and a cap on captured output. Memory that the address-space limit
does not count (memfds, SysV shared memory) is refused by a seccomp filter where the kernel
takes one; ``isolation["memory"]`` says "seccomp" or "rlimits".

Nothing the program writes decides whether the sandbox itself failed: setup errors come over a
pipe closed before the program runs, and the program's own report (its exception, a call's
return value) is believed only as one well-formed line (see :mod:`fade.verifiers.harness`).
"""

from __future__ import annotations

import json
import logging
import math
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from .run_options import RunOptions
from .wire import harness_input

__all__ = ["HARNESS", "MAX_LIMIT_MB", "MAX_TIME_SECONDS", "UID_BASE", "Limits", "SandboxRun", "isolation_report",
           "worst_case_seconds"]

#: The supervisor script run inside the sandbox.
HARNESS = Path(__file__).with_name("harness.py")
# The supervisor is started from this line rather than by its path, and learns its work folder
# from the environment, so that its command line (/proc/1/cmdline, where a program can read it)
# names no host path; its code is compiled under a neutral name and no variable keeps the path
# (the harness reads it from the environment once, to load its siblings), so that neither do its
# frames and functions, which a program can reach.
_HARNESS_CODE = "compile(open(os.environ['FADE_SANDBOX_HARNESS'],'rb').read(),'<sandbox>/supervisor.py','exec')"
_BOOTSTRAP = f"import os;exec({_HARNESS_CODE},{{'__name__':'__main__','__file__':'<sandbox>/supervisor.py'}})"
_ZYGOTE_BOOTSTRAP = (
    f"import os;g={{'__name__':'fade_sandbox','__file__':'<sandbox>/supervisor.py'}};exec({_HARNESS_CODE},g);"
    "g['serve_forks'](int(os.environ.pop('FADE_SANDBOX_CONTROL')))"
)
#: Seconds a run may take beyond its tests' time limits (starting the supervisor, building the
#: private root) before it is stopped; with :data:`PER_TEST_SLACK` this bounds how long one
#: sample can hold a worker: START_SLACK + tests x (time_seconds + PER_TEST_SLACK).
START_SLACK = 10.0
PER_TEST_SLACK = 0.25
# The longest single wait for the supervisor (a run's deadline can be further than select takes).
_LONGEST_WAIT = 3600.0
# How many bytes of supervisor output one byte of the program's output can become: a control
# character or an undecodable byte is escaped as \uXXXX in the JSON line.
_ESCAPE_FACTOR = 6
# Supervisors are forked by a zygote (a warm interpreter) where the kernel has pidfds: a run then
# starts in a few milliseconds instead of an interpreter's start and imports.
_USE_ZYGOTE = os.environ.get("FADE_SANDBOX_ZYGOTE", "1") != "0"

#: Sandboxes started as root run their programs as uid UID_BASE + (pid mod 2**22) * 64 + slot:
#: a uid no account uses, distinct for each of up to 64 concurrent sandboxes of each process, so
#: that RLIMIT_NPROC counts one sandbox's processes only and no sandbox can signal another's.
UID_BASE = 2_000_000_000
MAX_SLOTS = 64

# The environment a sandbox starts with; nothing of the caller's is passed on.
CLEAN_ENV = {
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "LANG": "C.UTF-8",
    "LC_ALL": "C.UTF-8",
    "PYTHONHASHSEED": "0",  # set iteration order, hence outputs, are the same on every run
    "PYTHONDONTWRITEBYTECODE": "1",
    "PYTHONIOENCODING": "utf-8",
}

_log = logging.getLogger(__name__)


#: The longest time limit a verifier takes, in seconds (a day): per test for a program, per
#: sample for a math answer. Longer waits overflow the timers a run is bounded by.
MAX_TIME_SECONDS = 86_400
#: The largest memory or disk limit, in MB: setrlimit takes at most 2**63 - 1 bytes.
MAX_LIMIT_MB = ((1 << 63) - 1) >> 20
# What a test's process is given through setrlimit, which no process may raise above its hard
# limit: (field, resource name, bytes per unit).
_RLIMITED = (("time_seconds", "RLIMIT_CPU", 1), ("memory_mb", "RLIMIT_AS", 1 << 20),
             ("disk_mb", "RLIMIT_FSIZE", 1 << 20), ("processes", "RLIMIT_NPROC", 1))


def _hard_limit(name: str) -> int | None:
    """This process's hard limit ``resource.<name>``, which a sandbox it starts cannot exceed; None
    when unlimited."""
    import resource

    hard = resource.getrlimit(getattr(resource, name))[1]
    return None if hard == resource.RLIM_INFINITY else hard


@dataclass(frozen=True)
class Limits:
    """What one program may use. ``time_seconds`` is per test, wall clock and CPU (the CPU limit
    is rounded up to whole seconds, the kernel's unit); the others hold for every process.

    Each is refused at construction unless the sandbox can set it: at most
    :data:`MAX_TIME_SECONDS` and :data:`MAX_LIMIT_MB`, and at most this process's own hard limits
    (CPU time, address space, file size, processes), which no sandbox it starts may raise."""

    time_seconds: float = 6.0  # LiveCodeBench's per-test timeout
    memory_mb: int = 1024
    processes: int = 16
    output_bytes: int = 4 << 20
    disk_mb: int = 64

    def __post_init__(self) -> None:
        for key, low in (
            ("time_seconds", 0.0),
            ("memory_mb", 32),
            ("processes", 1),
            ("output_bytes", 1),
            ("disk_mb", 1),
        ):
            value = getattr(self, key)
            if (
                isinstance(value, bool)
                or not isinstance(value, (int, float))
                or not math.isfinite(value)
                or value < low
            ):
                raise ValueError(f"limit {key} must be a number >= {low}, got {value!r}")
        if self.time_seconds <= 0:
            raise ValueError(f"limit time_seconds must be > 0, got {self.time_seconds!r}")
        for key, top in (("time_seconds", MAX_TIME_SECONDS), ("memory_mb", MAX_LIMIT_MB), ("disk_mb", MAX_LIMIT_MB)):
            if getattr(self, key) > top:
                raise ValueError(
                    f"limit {key} must be at most {top}, the most a sandbox can set, got {getattr(self, key)!r}"
                )
        for key, name, unit in _RLIMITED:
            hard = _hard_limit(name)
            # The CPU limit is set to ceil(time_seconds) soft and one second more hard.
            need = math.ceil(self.time_seconds) + 1 if key == "time_seconds" else getattr(self, key) * unit
            if hard is not None and need > hard:
                raise ValueError(
                    f"limit {key} must be at most {(hard - 1 if key == 'time_seconds' else hard // unit)}: "
                    f"this process's hard {name} is {hard}, which a sandbox cannot raise; "
                    f"got {getattr(self, key)!r}"
                )

    def for_harness(self) -> dict[str, Any]:
        return {
            "time_seconds": float(self.time_seconds),
            "memory_bytes": int(self.memory_mb) << 20,
            "processes": int(self.processes),
            "output_bytes": int(self.output_bytes),
            "disk_bytes": int(self.disk_mb) << 20,
        }

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class _Slots:
    """Up to MAX_SLOTS concurrent sandboxes per process, each with its own uid."""

    def __init__(self) -> None:
        self._free = list(range(MAX_SLOTS))
        self._cond = threading.Condition()

    def acquire(self) -> int:
        with self._cond:
            while not self._free:
                self._cond.wait()
            return self._free.pop(0)

    def release(self, slot: int) -> None:
        with self._cond:
            self._free.append(slot)
            self._cond.notify()


_SLOTS = _Slots()


class _Spawned:
    """A supervisor forked by the zygote: not this process's child, so it is signalled and
    awaited through a pidfd (which names that process and no other, even after it exits)."""

    def __init__(self, pid: int, stdin: int, stdout: int, stderr: int) -> None:
        self.pid = pid
        self.pidfd = os.pidfd_open(pid)
        self.stdin = os.fdopen(stdin, "wb")
        self.stdout = os.fdopen(stdout, "rb", buffering=0)
        self.stderr = os.fdopen(stderr, "rb", buffering=0)

    def poll(self) -> int | None:
        return None  # the zygote reaps it; the exit status is not known here

    def kill(self) -> None:
        try:
            signal.pidfd_send_signal(self.pidfd, signal.SIGKILL)
        except OSError:
            pass  # already gone

    def wait(self) -> None:
        select.select([self.pidfd], [], [], 10.0)  # readable once the process has exited
        os.close(self.pidfd)


class _Zygote:
    """The process that forks supervisors (``harness.serve_forks``): one per evaluator process,
    started on first use with the sandbox's clean environment, restarted if it dies."""

    def __init__(self) -> None:
        import socket

        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        env = dict(CLEAN_ENV, FADE_SANDBOX_HARNESS=str(HARNESS), FADE_SANDBOX_CONTROL=str(theirs.fileno()))
        self.proc = subprocess.Popen(
            [sys.executable, "-S", "-s", "-B", "-c", _ZYGOTE_BOOTSTRAP], stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, cwd="/", start_new_session=True,
            pass_fds=(theirs.fileno(),),
        )
        theirs.close()
        self.sock = ours
        self.lock = threading.Lock()

    def alive(self) -> bool:
        return self.proc.poll() is None

    def spawn(self, root: str) -> _Spawned:
        import socket

        in_r, in_w = os.pipe()
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        try:
            with self.lock:
                socket.send_fds(self.sock, [root.encode()], [in_r, out_w, err_w])
                answer = b""
                while not answer.endswith(b"\n"):
                    chunk = self.sock.recv(64)
                    if not chunk:
                        raise OSError("the sandbox zygote closed its socket")
                    answer += chunk
            pid = int(answer)
            if pid <= 0:
                raise OSError("the sandbox zygote refused the request")
            return _Spawned(pid, in_w, out_r, err_r)
        except BaseException:
            for fd in (in_w, out_r, err_r):
                os.close(fd)
            raise
        finally:
            for fd in (in_r, out_w, err_w):
                os.close(fd)


_zygote: _Zygote | None = None
_zygote_lock = threading.Lock()


def _spawn_supervisor(root: str) -> tuple[_Spawned, int] | None:
    """A supervisor forked by the zygote, and the zygote's pid (its parent); None where the
    kernel has no pidfds or the zygote cannot start (the caller starts an interpreter instead)."""
    global _zygote
    if not hasattr(os, "pidfd_open") or not hasattr(signal, "pidfd_send_signal"):
        return None
    try:
        with _zygote_lock:
            if _zygote is None or not _zygote.alive():
                _zygote = _Zygote()
            zygote = _zygote
        return zygote.spawn(root), zygote.proc.pid
    except OSError:
        return None
_warned_weak = False
_warn_lock = threading.Lock()


def _sandbox_uid(slot: int) -> int:
    return UID_BASE + (os.getpid() % (1 << 22)) * MAX_SLOTS + slot


class SandboxRun:
    """One program run against a list of test inputs; a context manager and an iterator.

    Each input is ``{"stdin": text}`` (the program reads it on fd 0 and its fd 1 is captured) or
    ``{"args": [...]}`` with ``call`` naming a function (top-level, or a method of a class
    ``Solution``) whose return value is captured; ``options`` (a judging profile's
    :class:`~fade.verifiers.run_options.RunOptions`) say how the program meets them (default: run
    as a script). The arguments travel as ``wire.encode_value`` makes them (ValueError
    here for arguments it cannot carry). Iterating yields one record per test, in order, as the
    supervisor reports it: ``test``, ``seconds``, ``cpu_seconds``,
    ``exit`` or ``signal``, ``ended`` ("wall_time", "output_limit") when the supervisor stopped
    it, ``stdout``, ``stdout_bytes``, ``stderr_tail``, ``done`` when the program's code returned to
    the harness (its closing report held the test's nonce), and ``status`` (how the program ended
    as it reported it: an exception's type, errno and phase, or the call's ``result`` as
    ``wire.encode_value`` tokens), or instead
    ``report_error`` when that report is not to be believed (the program wrote to its channel),
    or ``setup_error`` when the test could not be set up (before the program ran). The supervisor
    stops after a test that did not exit with status 0; the caller may stop earlier by leaving
    the iteration and closing the run. ``isolation`` describes what the run was isolated from;
    ``failure`` is set when the supervisor itself did not finish, and ``failure_kind`` says how:
    "start" (it never reported ready: the machine, not the program), "deadline" (the whole run
    outlasted its tests' time limits), "ended" (it died or stopped talking mid-run: something the
    program did), "protocol" (it sent more or other than it may).
    """

    def __init__(self, source: str, inputs: list[dict[str, Any]], *, call: str | None = None,
                 limits: Limits | None = None, namespaces: bool = True, options: RunOptions | None = None) -> None:
        self.limits = limits or Limits()
        self.options = options or RunOptions()
        self.isolation: dict[str, Any] = {}
        self.failure: str | None = None
        self.failure_kind: str | None = None
        self.records: list[dict[str, Any]] = []
        self._job = {
            "source": source,
            "tests": [harness_input(test, self.options) for test in inputs],
            "call": call,
            "limits": self.limits.for_harness(),
            "namespaces": bool(namespaces),
            "parent": os.getpid(),
            "options": self.options.to_json(),
        }
        self._expected = len(inputs)
        self._proc: subprocess.Popen | None = None
        self._slot: int | None = None
        self._root: str | None = None
        self._buffer = bytearray()
        self._stderr = bytearray()
        # Bound on one line from the supervisor: its output is capped inside (counted in bytes, and
        # each byte becomes at most _ESCAPE_FACTOR bytes of JSON), so more means a bug.
        self._max_line = _ESCAPE_FACTOR * (self.limits.output_bytes + 4096) + (1 << 16)
        self._deadline = math.inf
        self._closed = False

    # -- lifecycle -------------------------------------------------------------------------------

    def __enter__(self) -> SandboxRun:
        try:
            self.start()
        except BaseException:
            self.close()  # its folder and slot too: a failed start leaves nothing behind
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def start(self) -> None:
        if self._proc is not None:
            raise RuntimeError("a SandboxRun starts once")
        if not sys.executable:
            raise RuntimeError("no Python interpreter to run programs with (sys.executable is empty)")
        self._root = tempfile.mkdtemp(prefix="fade-sandbox-")
        if os.geteuid() == 0:
            self._slot = _SLOTS.acquire()
            self._job["uid"] = _sandbox_uid(self._slot)
        runs = sum(self.options.runs_of(test) for test in self._job["tests"])  # a retry runs a test twice
        self._deadline = time.monotonic() + worst_case_seconds(self.limits, runs)
        spawned = _spawn_supervisor(self._root) if _USE_ZYGOTE else None
        if spawned is not None:
            self._proc, self._job["parent"] = spawned
        else:
            env = dict(CLEAN_ENV, FADE_SANDBOX_HARNESS=str(HARNESS), FADE_SANDBOX_ROOT=self._root)
            self._proc = subprocess.Popen(
                [sys.executable, "-S", "-s", "-B", "-c", _BOOTSTRAP],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                env=env, cwd=self._root, start_new_session=True, close_fds=True,
            )
        payload = json.dumps(self._job).encode()
        try:
            self._proc.stdin.write(payload)
            self._proc.stdin.close()
        except OSError as exc:
            self._fail("start", f"the sandbox did not start: {exc}")
            return
        line = self._next_line()
        if line is not None and "ready" in line:
            self.isolation = line["ready"]
            self._warn_if_weak()
        else:
            self.failure = None
            self._fail("start", f"the sandbox did not start: {self._describe_end(line)}")

    def close(self) -> None:
        """Kill everything the run started and remove its directory; safe to call twice."""
        if self._closed:
            return
        self._closed = True
        if isinstance(self._proc, _Spawned):
            self._proc.kill()  # its supervisor (P1) dies with it (its death signal)
            self._proc.wait()
            for stream in (self._proc.stdin, self._proc.stdout, self._proc.stderr):
                try:
                    stream.close()
                except OSError:
                    pass
        elif self._proc is not None:
            try:
                os.killpg(self._proc.pid, signal.SIGKILL)
            except OSError:
                pass
            self._proc.wait()
            for stream in (self._proc.stdout, self._proc.stderr):
                stream.close()
        if self._slot is not None:
            _SLOTS.release(self._slot)
            self._slot = None
        if self._root is not None:
            shutil.rmtree(self._root, ignore_errors=True)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        if self._proc is None:
            raise RuntimeError("start the run (or use it in a with statement) before iterating")
        if self.failure is not None:
            return
        while len(self.records) < self._expected:
            line = self._next_line()
            if line is None or "test" not in line:
                if self.failure is None and not self._stopped_early():
                    self._fail("ended", f"the sandbox's supervisor ended early: {self._describe_end(line)}")
                return
            # Kept for how the run ended; the output itself goes to the caller only.
            self.records.append({k: v for k, v in line.items() if k != "stdout"})
            yield line

    # -- reading the supervisor --------------------------------------------------------------------

    def _stopped_early(self) -> bool:
        """Whether the supervisor stopped on purpose: after a test that failed to exit cleanly."""
        if not self.records:
            return False
        last = self.records[-1]
        return any(last.get(key) for key in ("ended", "signal", "exit", "setup_error", "report_error"))

    def _describe_end(self, line: dict | None) -> str:
        if line is not None and "harness_error" in line:
            return line["harness_error"]
        code = self._proc.poll() if self._proc is not None else None
        tail = bytes(self._stderr[-400:]).decode("utf-8", errors="replace").strip()
        what = f"exit status {code}" if code is not None else "no answer"
        return f"{what}{': ' + tail if tail else ''}"

    def _next_line(self) -> dict | None:
        """The next JSON line from the supervisor, or None at its end (setting ``failure`` on a
        deadline or an oversized or malformed stream)."""
        proc = self._proc
        assert proc is not None
        out_fd, err_fd = proc.stdout.fileno(), proc.stderr.fileno()
        open_fds = {out_fd, err_fd}
        while True:
            newline = self._buffer.find(b"\n")
            if newline >= 0:
                raw = bytes(self._buffer[:newline])
                del self._buffer[: newline + 1]
                try:
                    obj = json.loads(raw)
                except (ValueError, RecursionError):
                    self._fail("protocol", "the sandbox's supervisor sent a malformed line")
                    return None
                return obj if isinstance(obj, dict) else None
            if out_fd not in open_fds:
                return None
            remaining = self._deadline - time.monotonic()
            if remaining <= 0:
                self._fail("deadline", "the sandbox ran past its overall deadline")
                return None
            ready, _, _ = select.select(list(open_fds), [], [], min(remaining, _LONGEST_WAIT))
            for fd in ready:
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    open_fds.discard(fd)
                    if fd == out_fd:
                        # stdout closed: the supervisor is gone; keep what stderr says.
                        self._read_stderr_rest(err_fd)
                    continue
                if fd == err_fd:
                    self._stderr += chunk
                    del self._stderr[: max(0, len(self._stderr) - 4096)]
                    continue
                self._buffer += chunk
                if len(self._buffer) - (self._buffer.rfind(b"\n") + 1) > self._max_line:
                    self._fail("protocol", "the sandbox's supervisor sent a line longer than its output caps allow")
                    return None

    def _fail(self, kind: str, message: str) -> None:
        if self.failure is None:
            self.failure, self.failure_kind = message, kind

    def _read_stderr_rest(self, err_fd: int) -> None:
        end = time.monotonic() + 0.5
        while time.monotonic() < end and select.select([err_fd], [], [], 0.05)[0]:
            chunk = os.read(err_fd, 1 << 16)
            if not chunk:
                break
            self._stderr += chunk
            del self._stderr[: max(0, len(self._stderr) - 4096)]

    def _warn_if_weak(self) -> None:
        global _warned_weak
        if self.isolation.get("mode") == "none" and self._job["namespaces"]:
            with _warn_lock:
                if not _warned_weak:
                    _warned_weak = True
                    notes = "; ".join(self.isolation.get("notes", []))
                    _log.warning(
                        "code sandbox without namespaces (%s): programs are NOT isolated from the network "
                        "or the host filesystem; see docs/verifiers.md", notes or "not available",
                    )


def worst_case_seconds(limits: Limits, runs: int) -> float:
    """The longest one sandbox run that runs the program ``runs`` times can take, start to
    verdict: each run is stopped at its time limit, and the whole sandbox run at this deadline
    whatever the program does. A judging profile counts its runs (``Judge.worst_case_seconds``)."""
    return START_SLACK + runs * (limits.time_seconds + PER_TEST_SLACK)


_report: dict[str, Any] | None = None


def isolation_report() -> dict[str, Any]:
    """The isolation a sandbox gets on this machine (probed once per process with a trivial run)."""
    global _report
    if _report is None:
        with SandboxRun("print(1)", [{"stdin": ""}], limits=Limits(time_seconds=5)) as run:
            list(run)
            _report = dict(run.isolation, failure=run.failure)
    return dict(_report)
