"""How the code sandbox's supervisor confines itself and each test: new namespaces, a private
read-only root with a fresh /tmp per test, and, in each test's process, resource limits, an
unprivileged identity and a seccomp filter on memory the address-space limit does not count.

Part of the supervisor (:mod:`fade.verifiers.harness`, whose docstring gives the process layout):
standard library only, loaded by the supervisor from this file's path, never imported by fade.
"""

import ctypes
import errno
import os
import resource
import sys

CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC = 0x00020000, 0x04000000, 0x08000000
CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET = 0x10000000, 0x20000000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
MS_NOATIME, MS_NODIRATIME, MS_RELATIME = 1024, 2048, 1 << 21
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_CAPBSET_DROP, PR_SET_CHILD_SUBREAPER, PR_SET_NO_NEW_PRIVS = 1, 4, 24, 36, 38
MNT_DETACH = 2
# statvfs flag -> mount flag, for the flags a read-only remount must keep (the kernel refuses to
# clear "locked" flags inherited from a more privileged mount namespace).
_KEEP_FLAGS = (
    (2, MS_NOSUID),
    (4, MS_NODEV),
    (8, MS_NOEXEC),
    (1024, MS_NOATIME),
    (2048, MS_NODIRATIME),
    (4096, MS_RELATIME),
)

# Host directories the program may read (read-only); anything else on the host is invisible.
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc/alternatives")
DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom")
# Folders of third-party packages that can sit inside the read-only system and standard-library
# folders; each is covered by an empty read-only tmpfs, so the program has the standard library only.
PACKAGE_DIRS = ("site-packages", "dist-packages")
# Where packages a judging profile needs are bound in the private root.
PACKAGES = "/fade-packages"

libc = ctypes.CDLL(None, use_errno=True)


def check(rc, what):
    """Raise OSError with errno's message where a libc call returned non-zero."""
    if rc != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _mount(source, target, fstype, flags, data=None):
    enc = lambda s: None if s is None else s.encode()  # noqa: E731
    check(libc.mount(enc(source), enc(target), enc(fstype), ctypes.c_ulong(flags), enc(data)), f"mount {target}")


def prctl(option, value):
    return libc.prctl(option, ctypes.c_ulong(value), ctypes.c_ulong(0), ctypes.c_ulong(0), ctypes.c_ulong(0))


class Unrecoverable(Exception):
    """The namespaces exist and cannot be left: the supervisor stops rather than run half-isolated."""


# -- P0: namespaces ---------------------------------------------------------------------------------


def _unshare(want_user):
    flags = CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWPID
    if want_user:
        flags |= CLONE_NEWUSER
    if libc.unshare(ctypes.c_int(flags)) != 0:
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


def isolate(job):
    """Enter new namespaces if the kernel lets us; returns the isolation record."""
    iso = {
        "mode": "none",
        "network": False,
        "pid_namespace": False,
        "filesystem": "host",
        "uid": "unchanged",
        "notes": [],
    }
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
        raise Unrecoverable(f"the user namespace could not be mapped ({exc})") from None
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


def build_root(root, job, sandbox_uid):
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
        _mount(
            "tmpfs", root + path, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=4k,nr_inodes=1,mode=0555"
        )
    # Packages a profile's programs import (TACO's numpy), each bound read-only into a folder of its own.
    if job["options"].paths:
        for path in job["options"].paths:
            target = root + PACKAGES + "/" + os.path.basename(path.rstrip("/"))
            os.makedirs(target, exist_ok=True)
            _bind_ro(os.path.realpath(path), target)
        job["sys_path"] = [PACKAGES]
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


def fresh_workdir(job, iso, sandbox_uid):
    """An empty working directory for the next test, so that no file carries from one test to
    another: a new tmpfs at /tmp in the private root, the host work directory emptied otherwise."""
    if iso["filesystem"] == "private":
        os.chdir("/")
        check(libc.umount2(b"/tmp", ctypes.c_int(MNT_DETACH)), "umount /tmp")
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


# -- a test's process -------------------------------------------------------------------------------


def drop_capabilities():
    for cap in range(64):
        if prctl(PR_CAPBSET_DROP, cap) != 0:
            break

    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    class Data(ctypes.Structure):
        _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]

    header, data = Header(0x20080522, 0), (Data * 2)()
    check(libc.capset(ctypes.byref(header), ctypes.byref(data)), "capset")


def set_limits(limits, cpu_seconds):
    processes = limits["processes"] + limits.get("processes_offset", 0)
    hard = resource.getrlimit(resource.RLIMIT_NPROC)[1]
    if hard != resource.RLIM_INFINITY and processes > hard and os.geteuid() != 0:
        # The caller's own processes counted in (none mode without root) can take the sum past the
        # hard limit, which only root may raise: the program gets what is left below it instead.
        processes = hard
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


def deny_unbounded_memory():
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
    check(libc.prctl(PR_SET_SECCOMP, ctypes.c_ulong(SECCOMP_MODE_FILTER), ctypes.byref(prog),
                      ctypes.c_ulong(0), ctypes.c_ulong(0)), "seccomp filter")


def probe_memory_bound(iso):
    """Whether test children can get the seccomp filter, tried once in a throwaway child: sets
    ``iso["memory"]`` to "seccomp" or, where it fails, "rlimits" with a note on what that leaves."""
    pid = os.fork()
    if pid == 0:
        code = 2
        try:
            prctl(PR_SET_NO_NEW_PRIVS, 1)
            deny_unbounded_memory()
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


def own_processes():
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

