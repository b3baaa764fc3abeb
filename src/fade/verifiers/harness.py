"""The supervisor that runs inside the code sandbox: it isolates itself, then runs a program
once per test case and reports what each run printed or returned.

This file is executed as a script (``python -S -s harness.py``) by :mod:`fade.verifiers.sandbox`,
never imported by fade: it uses the standard library only, so that it runs with no site-packages,
and it talks to the evaluator through JSON. It reads one job object from stdin (the program, the
test inputs, the limits, the judging profile's :class:`RunOptions`), writes one ``{"ready": ...}``
line describing the isolation it obtained, then one line per test; it never sees the expected
outputs, so nothing the program can read in memory tells it the answers. Four modules beside it
are part of it, loaded from their paths (the sandbox's ``sys.path`` holds the standard library
only): :mod:`fade.verifiers.confinement` (namespaces, the private root, a test's limits and
identity), :mod:`fade.verifiers.run_options` (the options record), :mod:`fade.verifiers.wire`
(the values' codec) and :mod:`fade.verifiers.runner` (how a benchmark's harness runs the program).

Process layout, when the kernel allows namespaces::

    evaluator -- P0 (this script: new session; unshares the namespaces, waits)
                  `-- P1 (pid 1 of a new pid namespace: builds the filesystem, runs the tests)
                        `-- one child per test (own process group, limits, unprivileged)

P1 stays privileged inside its namespaces but never runs the program: each test runs in a fork of
P1 that sets its resource limits, drops to an unprivileged uid (as root) or drops every
capability (in a user namespace), then executes the program in-process, with the test input on
fd 0 and its output captured from fd 1. When P1 exits the kernel kills every process left in
the pid namespace, so nothing a test started outlives the sandbox.

Channels from a test child to P1, and whom each may be believed about:

- the exit status and signal: from the kernel (wait4), never from the program;
- fd 4, setup errors: written only by the harness before the program's first instruction, then
  closed, so the program can never reach it (P1 holds the only other end, for reading);
- fd 3, the program's report (how it ended, a call's return value): written from inside the
  program's own process, so the program can write it too. P1 accepts exactly one well-formed
  line of the keys the test's kind allows; anything else is reported as ``report_error`` (a
  sandbox violation), so a forged line next to the real one can never choose the verdict. The
  harness's closing report (the program's code returned; a call's value) carries the test's
  nonce, which the child sends P1 on fd 4 before the program runs and holds out of the
  program's reach while it runs (``runner._sealed``); a closing report or a return value
  without it is not believed.

Nothing of the host stays reachable from the program's frames or objects: the supervisor's files
are compiled under the names ``<sandbox>/NAME.py``, and before the program runs the test
child empties the job and isolation records that every supervisor frame shares (the host work
folder, the evaluator's and the zygote's pids).
"""

import ctypes
import dataclasses
import fcntl
import json
import math
import os
import select
import signal
import sys
import time
import types

# The fd on which a test child reports how it ended (and a call's return value): the program can
# write to it, so P1 believes one well-formed line of it only (see the module docstring).
STATUS_FD = 3
# The fd on which a test child reports a failed setup; closed before the program runs.
SETUP_FD = 4
# The keys a report may hold; the result keys only for call-based tests.
REPORT_KEYS = frozenset({"exc", "phase", "errno", "module", "exit_code", "done"})
RESULT_KEYS = frozenset({"result", "result_repr"})
# What the program's run needs of the job; the rest (the host folder, pids, every test) is cleared.
TASK_KEYS = ("source", "call", "options", "sys_path")
# The name the supervisor's files are compiled under inside the sandbox (no host path).
SANDBOX_FILES = "<sandbox>"
# The neutral name of the package the supervisor's siblings are loaded as (_siblings).
SIBLINGS = "fade_sandbox_files"
# Imported before the program runs when it runs as another uid on the host filesystem, where
# the interpreter's standard library may not be readable by that uid (a pyenv under /root).
COMMON_MODULES = (
    "array", "bisect", "cmath", "collections", "copy", "dataclasses", "datetime", "decimal", "enum", "fractions",
    "functools", "heapq", "itertools", "math", "numbers", "operator", "queue", "random", "re", "statistics",
    "shutil", "string", "subprocess", "typing",
)


def _siblings(*names):
    """The modules ``names`` beside this file, run from their paths, in order, as the modules of a
    package with a neutral name, so that one may import another loaded before it (``from .wire
    import ...``). They are in ``sys.modules`` only while they load: the program finds none of
    them there. The sandbox passes this file's path in the environment (read here, once, and
    removed)."""
    folder = os.path.dirname(os.environ.pop("FADE_SANDBOX_HARNESS", "") or os.path.abspath(__file__))
    package = types.ModuleType(SIBLINGS)
    package.__path__ = []
    loading = {SIBLINGS: package}
    sys.modules.update(loading)
    try:
        for name in names:
            module = types.ModuleType(f"{SIBLINGS}.{name}")
            loading[module.__name__] = sys.modules[module.__name__] = module
            module.__file__ = f"{SANDBOX_FILES}/{name}.py"
            module.__package__ = SIBLINGS
            with open(os.path.join(folder, name + ".py"), "rb") as f:
                exec(compile(f.read(), module.__file__, "exec"), module.__dict__)
    finally:
        for key in loading:
            sys.modules.pop(key, None)
    return [loading[f"{SIBLINGS}.{name}"] for name in names]


# wire is loaded for runner, which imports it; the supervisor itself encodes no values.
confinement, run_options, _, runner = _siblings("confinement", "run_options", "wire", "runner")


def _emit(obj):
    # ensure_ascii=False: a line costs about the bytes the program wrote, not six per non-ASCII
    # character (the evaluator bounds each line by the output cap on that basis).
    runner.write_all(1, (json.dumps(obj, ensure_ascii=False) + "\n").encode("utf-8", errors="surrogatepass"))


# -- test children ----------------------------------------------------------------------------------


def _child(job, test, fds, iso, sandbox_uid):
    """Runs in the forked child; never returns."""
    setup = fds[4]
    try:
        os.setpgid(0, 0)
        # Move every source above the targets first, so that no dup2 overwrites a source that is
        # still to be copied, then put them on 0 (stdin), 1, 2, STATUS_FD and SETUP_FD.
        high = [fcntl.fcntl(fd, fcntl.F_DUPFD, 100) for fd in fds]
        for target, fd in enumerate(high):
            os.dup2(fd, target)
        setup = SETUP_FD
        os.closerange(SETUP_FD + 1, 1 << 16)
        limits = job["limits"]
        confinement.set_limits(limits, max(1, math.ceil(limits["time_seconds"])))
        if sandbox_uid is not None:
            os.setgroups([])
            os.setgid(sandbox_uid)
            os.setuid(sandbox_uid)
        elif iso["mode"] == "user-namespaces":
            confinement.drop_capabilities()
        confinement.prctl(confinement.PR_SET_NO_NEW_PRIVS, 1)
        confinement.prctl(confinement.PR_SET_DUMPABLE, 0)
        if iso.get("memory") == "seccomp":
            confinement.deny_unbounded_memory()
        for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2):
            signal.signal(sig, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        task = {key: job[key] for key in TASK_KEYS if key in job}
        # The options as the program may see them: the folders of its packages as it sees them.
        task["options"] = dataclasses.replace(task["options"], paths=tuple(task.get("sys_path", ())))
    except BaseException as exc:  # the sandbox could not be set up: say so, run nothing
        os.write(setup, (json.dumps({"setup_error": f"{type(exc).__name__}: {exc}"}) + "\n").encode())
        os._exit(70)
    # Every supervisor frame below this one shares these two records: emptied, nothing of the host
    # (its folder, the evaluator's and the zygote's pids, the other tests) is left in them.
    job.clear()
    iso.clear()
    # threading keeps its main thread's native id from the process that imported it (the zygote
    # or P0, outside the sandbox's pid namespace): made this process's own.
    main_thread = getattr(sys.modules.get("threading"), "main_thread", None)
    if main_thread is not None and hasattr(main_thread(), "_set_native_id"):
        main_thread()._set_native_id()
    # The test's nonce: told to P1 on the setup pipe, then held only in this list, which the
    # program cannot read while it runs (runner._sealed).
    sealed = [os.urandom(16).hex()]
    os.write(SETUP_FD, (json.dumps({"nonce": sealed[0]}) + "\n").encode())
    # The last act before the program: from here on nothing in this process can report a setup error.
    os.close(SETUP_FD)
    try:
        runner.run_program(task, test, STATUS_FD, sealed)
    finally:
        os._exit(70)  # never unwind into the supervisor's code in this forked copy


def _kill_leftovers(iso, pgid, sandbox_uid):
    """Kill every process a test left behind."""
    if iso["pid_namespace"]:
        try:
            os.kill(-1, signal.SIGKILL)  # as pid 1: everything else in the namespace
        except OSError:
            pass
        return
    try:
        os.killpg(pgid, signal.SIGKILL)
    except OSError:
        pass
    if sandbox_uid is not None:
        # Processes that left the group: a helper with the sandbox uid kills every process of
        # that uid, which (one uid per concurrent sandbox) are exactly this sandbox's.
        pid = os.fork()
        if pid == 0:
            try:
                os.setgroups([])
                os.setgid(sandbox_uid)
                os.setuid(sandbox_uid)
                os.kill(-1, signal.SIGKILL)
            finally:
                os._exit(0)
        os.waitpid(pid, 0)


def _reap_leftovers(iso, pgid, sandbox_uid):
    """Kill what the test left behind and reap it: this process is their subreaper, and a zombie
    still counts against the next test's process limit. Where nothing can reach a process that
    left the test's group (no pid namespace, no uid of the sandbox's own), give up after a second."""
    deadline = time.monotonic() + 1.0
    while True:
        _kill_leftovers(iso, pgid, sandbox_uid)
        try:
            while os.waitpid(-1, os.WNOHANG)[0]:
                pass
        except ChildProcessError:
            return  # no child left
        if time.monotonic() > deadline:
            return
        time.sleep(0.002)


def _run_test(job, index, test, iso, sandbox_uid):
    limits = job["limits"]
    stdin_fd = os.memfd_create("stdin", 0)
    os.write(stdin_fd, test.get("stdin", "").encode())
    os.lseek(stdin_fd, 0, os.SEEK_SET)
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    status_r, status_w = os.pipe()
    setup_r, setup_w = os.pipe()
    start = time.monotonic()
    pid = os.fork()
    if pid == 0:
        for fd in (out_r, err_r, status_r, setup_r):
            os.close(fd)
        _child(job, test, (stdin_fd, out_w, err_w, status_w, setup_w), iso, sandbox_uid)
    for fd in (stdin_fd, out_w, err_w, status_w, setup_w):
        os.close(fd)
    cap = limits["output_bytes"]
    out, err, stat, setup = bytearray(), bytearray(), bytearray(), bytearray()
    sinks = {out_r: out, err_r: err, status_r: stat, setup_r: setup}
    ended, wait_status, rusage = None, None, None
    deadline = start + limits["time_seconds"]
    try:
        exit_fd = os.pidfd_open(pid)  # readable once the child exits: no polling
    except (AttributeError, OSError):
        exit_fd = None

    def read_ready(timeout):
        nonlocal ended
        watch = list(sinks) + ([exit_fd] if exit_fd is not None else [])
        ready, _, _ = select.select(watch, [], [], timeout)
        for fd in ready:
            if fd not in sinks:
                continue
            chunk = os.read(fd, 65536)
            if not chunk:
                os.close(fd)
                del sinks[fd]
                continue
            buf = sinks[fd]
            buf += chunk
            if fd == err_r and len(buf) > 8192:
                del buf[: len(buf) - 4096]
            if fd != err_r and len(buf) > cap and ended is None:
                ended = "output_limit"

    while ended is None:
        done, wait_status, rusage = os.wait4(pid, os.WNOHANG)
        if done:
            break
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            ended = "wall_time"
            break
        read_ready(remaining if exit_fd is not None else min(remaining, 0.01))
    if ended is not None:
        # The test's own process first: its group may be empty (it can move to another group,
        # even one its child made), and the wait below must never sit on a living process.
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
        _kill_leftovers(iso, pid, sandbox_uid)
        _, wait_status, rusage = os.wait4(pid, 0)
    if exit_fd is not None:
        os.close(exit_fd)
        exit_fd = None
    elapsed = time.monotonic() - start
    _reap_leftovers(iso, pid, sandbox_uid)
    # Every writer is dead now; read what is left in the pipes (bounded, in case one escaped).
    drain_until = time.monotonic() + 0.5
    while sinks and time.monotonic() < drain_until:
        read_ready(0.05)
    for fd in list(sinks):
        os.close(fd)
    record = {"test": index, "seconds": round(elapsed, 4), "cpu_seconds": round(rusage.ru_utime + rusage.ru_stime, 4)}
    if os.WIFSIGNALED(wait_status):
        record["signal"] = os.WTERMSIG(wait_status)
    else:
        record["exit"] = os.WEXITSTATUS(wait_status)
    if ended is not None:
        record["ended"] = ended
    # Past the cap the output is only evidence of the overflow: keep a glimpse, not megabytes.
    shown = 1024 if ended == "output_limit" else cap
    record["stdout"] = bytes(out[:shown]).decode("utf-8", errors="replace")
    record["stdout_bytes"] = len(out)
    record["stderr_tail"] = bytes(err[-2048:]).decode("utf-8", errors="replace")
    nonce, setup_error = _setup_report(bytes(setup[:4096]))
    if setup_error is not None:
        record["setup_error"] = setup_error
    elif stat and ended is None:
        status, defect = _read_report(bytes(stat), job["call"] is not None and not test.get("source"), nonce)
        if defect is not None:
            record["report_error"] = defect
        else:
            if status.pop("done", None) is not None:
                record["done"] = True  # the program's code returned to the harness
            if status:
                record["status"] = status
    failed = record.get("signal") or record.get("exit")
    if job["options"].runs_of(test) > 1 and failed and ended is None \
            and not record.get("setup_error") and not record.get("report_error"):
        retry = _run_test(job, index, {**test, "stdin": "", "files": test["stdin"]}, iso, sandbox_uid)
        retry["retried_from"] = {k: record.get(k) for k in ("exit", "signal", "status") if k in record}
        return retry
    return record


def _setup_report(raw):
    """What the test child said on the setup pipe, which only the harness holds: (the test's
    nonce, a setup error), each None when not said. Anything else there is a setup error."""
    nonce, error = None, None
    for line in raw.splitlines():
        try:
            obj = json.loads(line)
        except ValueError:
            obj = None
        if isinstance(obj, dict) and obj.keys() == {"nonce"} and isinstance(obj["nonce"], str) and nonce is None:
            nonce = obj["nonce"]
        elif isinstance(obj, dict) and "setup_error" in obj:
            error = str(obj["setup_error"])
        else:
            error = raw.decode("utf-8", errors="replace").strip()
    return nonce, error


def _read_report(raw, call, nonce):
    """The program's report, or why it is not believed: (report, None) or (None, defect). A
    closing report (``done``) must hold the test's nonce, and a return value must come in one."""
    lines = raw.count(b"\n")
    if lines != 1 or not raw.endswith(b"\n"):
        return None, f"{lines} lines on the report channel where the harness writes one: the program wrote to it"
    try:
        obj = json.loads(raw)
    except (ValueError, RecursionError):
        return None, "a malformed line on the report channel: the program wrote to it"
    allowed = REPORT_KEYS | RESULT_KEYS if call else REPORT_KEYS
    if not isinstance(obj, dict) or not obj.keys() <= allowed:
        keys = sorted(obj) if isinstance(obj, dict) else type(obj).__name__
        return None, f"a report with keys {keys}, expected some of {sorted(allowed)}: the program wrote it"
    if "done" in obj and (nonce is None or obj["done"] != nonce):
        return None, "a closing report without the test's nonce: the program wrote it"
    if obj.keys() & RESULT_KEYS and "done" not in obj:
        return None, "a return value outside the harness's closing report: the program wrote it"
    return obj, None  # the value's tokens are read, and a malformed one refused, by the judge


def _run_tests(job, iso, sandbox_uid):
    os.umask(0o077)
    stop_on_failure = job["options"].stop_on_failure
    for index, test in enumerate(job["tests"]):
        if index:
            confinement.fresh_workdir(job, iso, sandbox_uid)
        record = _run_test(job, index, test, iso, sandbox_uid)
        _emit(record)
        failed = any(record.get(key) for key in ("ended", "signal", "exit", "setup_error", "report_error"))
        if failed and (
            stop_on_failure or test.get("source") or record.get("setup_error") or record.get("report_error")
        ):
            break  # a later test cannot change the verdict


def _supervise(job, iso, sandbox_uid, alive_r):
    """P1: build the filesystem, then run the tests."""
    confinement.prctl(confinement.PR_SET_PDEATHSIG, signal.SIGKILL)
    confinement.prctl(confinement.PR_SET_CHILD_SUBREAPER, 1)  # orphans of a test come here to be reaped
    if select.select([alive_r], [], [], 0)[0]:
        os._exit(0)  # P0 died before the death signal was armed
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2):
        signal.signal(sig, signal.SIG_IGN)  # pid 1 with no handlers gets no signals from inside
    if iso["mode"] != "none":
        try:
            confinement.build_root(job["root"], job, sandbox_uid)
            iso["filesystem"] = "private"
        except OSError as exc:
            iso["notes"].append(f"private filesystem failed ({exc}); the host filesystem is visible")
            os.chdir(job["root"])
    else:
        os.chdir(job["root"])
        if sandbox_uid is not None:
            for name in COMMON_MODULES:
                __import__(name)
    # No local of this frame holds the options: a test's program can read its callers' frames,
    # and the options name the host's package folders.
    if job["options"].guard:
        import shutil  # noqa: F401 - for the guard in every test child, imported once
        import subprocess  # noqa: F401
    if job["options"].paths and "sys_path" not in job:
        # No private root to bind them into: their own folders, with whatever else is beside them,
        # imported here too where the program's uid may not read the interpreter's files.
        job["sys_path"] = sorted({os.path.dirname(os.path.realpath(p)) for p in job["options"].paths})
        if sandbox_uid is not None:
            sys.path.extend(job["sys_path"])
            for name in [os.path.basename(path.rstrip("/")) for path in job["options"].paths]:
                if name.isidentifier():
                    __import__(name)
    os.environ["HOME"] = os.environ["TMPDIR"] = os.getcwd()
    confinement.probe_memory_bound(iso)
    _emit({"ready": iso})
    _run_tests(job, iso, sandbox_uid)
    os._exit(0)


_supervisor = []  # P1's pid, once forked
_evaluator_left = []


def _evaluator_gone(signum, frame):
    _evaluator_left.append(signum)
    for pid in _supervisor:
        os.kill(pid, signal.SIGKILL)  # P1's death takes everything in its namespace with it


def _remove_root(root):
    import shutil

    confinement.libc.umount2(
        root.encode(), ctypes.c_int(confinement.MNT_DETACH)
    )  # the private root, where there is one
    shutil.rmtree(root, ignore_errors=True)


def main() -> None:
    # The interpreter puts the script's folder (or, for -c, the working directory) first on
    # sys.path; drop it so that the program imports the standard library only.
    if sys.path and (not sys.path[0] or os.path.abspath(sys.path[0]) == os.path.dirname(os.path.abspath(__file__))):
        del sys.path[0]
        # Its finder, made by the imports above, holds the working directory (the host folder).
        sys.path_importer_cache.clear()
    # The work directory, known before the job in case the job never comes; from the environment
    # (not the command line, which a program can read in /proc), and not passed on to the program.
    root = os.environ.pop("FADE_SANDBOX_ROOT")
    try:
        job = json.loads(sys.stdin.buffer.read())
    except ValueError:
        _remove_root(root)  # the evaluator died while sending it
        os._exit(70)
    job["root"] = root
    del root  # the job holds it, and a test child empties the job before its program runs
    try:
        job["options"] = run_options.RunOptions.from_json(job["options"])
    except (KeyError, TypeError, ValueError) as exc:  # fade sends them checked: a mismatch of versions
        _remove_root(job["root"])
        _emit({"harness_error": f"the job's run options: {exc}"})
        os._exit(70)
    # SIGTERM, not SIGKILL: if the evaluator dies, this process still removes the work directory.
    # The handler is in place before the death signal is armed, so no moment is left uncovered.
    signal.signal(signal.SIGTERM, _evaluator_gone)
    confinement.prctl(confinement.PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != job["parent"]:
        _remove_root(job["root"])  # the evaluator died before the death signal was armed
        os._exit(0)
    try:
        iso = confinement.isolate(job)  # while still dumpable: a non-dumpable process cannot write its uid_map
    except confinement.Unrecoverable as exc:
        _emit({"harness_error": str(exc)})
        os._exit(70)
    confinement.prctl(confinement.PR_SET_DUMPABLE, 0)
    # A uid of the sandbox's own exists only outside a user namespace (where just one uid is mapped).
    sandbox_uid = job.get("uid") if os.geteuid() == 0 and iso["mode"] != "user-namespaces" else None
    if iso["mode"] == "none" and sandbox_uid is None:
        job["limits"]["processes_offset"] = confinement.own_processes()
    if sandbox_uid is not None:
        iso["uid"] = "dropped"
        if iso["filesystem"] == "host" and iso["mode"] == "none":
            os.chown(job["root"], sandbox_uid, sandbox_uid)
    elif iso["mode"] == "user-namespaces":
        iso["uid"] = "capabilities dropped"
    sys.stdout.flush()
    alive_r, alive_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.close(alive_w)
        try:
            _supervise(job, iso, sandbox_uid, alive_r)
        except BaseException as exc:
            _emit({"harness_error": f"{type(exc).__name__}: {exc}"})
        os._exit(70)
    os.close(alive_r)
    _supervisor.append(pid)
    if _evaluator_left:
        os.kill(pid, signal.SIGKILL)
    while True:
        try:
            _, status = os.waitpid(pid, 0)
            break
        except InterruptedError:
            continue
    if os.getppid() != job["parent"]:
        _remove_root(job["root"])  # the evaluator cannot any more
    os._exit(os.waitstatus_to_exitcode(status) & 0xFF if os.WIFEXITED(status) else 70)


def serve_forks(control_fd):
    """A zygote: a supervisor interpreter with everything above imported, started once by the
    evaluator with the sandbox's clean environment, which forks a fresh supervisor (P0) for each
    run instead of the evaluator starting a new interpreter. A request on the control socket is
    the run's work folder and three file descriptors (the new supervisor's stdin, stdout and
    stderr); the answer is its pid. No program ever runs in this process. It exits when the
    evaluator closes its standard input (the evaluator died, or is done)."""
    import shutil  # noqa: F401 - imported once here for every supervisor: judges' guards use them
    import socket
    import subprocess  # noqa: F401

    sock = socket.socket(fileno=control_fd)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # supervisors are reaped by the kernel
    os.chdir("/")
    while True:
        ready, _, _ = select.select([sock, 0], [], [])
        if 0 in ready and not os.read(0, 1):
            os._exit(0)
        if sock not in ready:
            continue
        try:
            message, fds, _, _ = socket.recv_fds(sock, 4096, 3)
        except OSError:
            os._exit(0)
        if not message:
            os._exit(0)
        if len(fds) != 3:
            for fd in fds:
                os.close(fd)
            sock.sendall(b"0\n")
            continue
        pid = os.fork()
        if pid == 0:
            try:
                signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                os.setsid()
                for target, fd in enumerate(fds):
                    os.dup2(fd, target)
                for fd in fds:
                    if fd > 2:
                        os.close(fd)
                sock.close()
                os.environ["FADE_SANDBOX_ROOT"] = message.decode()
                del message  # main() takes the folder from the environment; no frame keeps it
                main()
            finally:
                os._exit(70)
        for fd in fds:
            os.close(fd)
        sock.sendall(f"{pid}\n".encode())


if __name__ == "__main__":
    main()
