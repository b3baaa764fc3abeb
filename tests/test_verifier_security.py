"""Hostile programs against the verdict itself: nothing a program writes to any file descriptor it
holds can make a verdict "correct" or make the reward raise, and memory outside the address space
(memfd, SysV shared memory) is refused rather than left unbounded. Every probe here ran as written
against the sandbox before these defences and got "correct", an exception, or 600 MB of host
memory."""

from __future__ import annotations

import json
import threading

import pytest

from fade.verifiers import rewards
from fade.verifiers.code_exec import CodeVerifier
from fade.verifiers.sandbox import Limits, SandboxRun

LIMITS = Limits(time_seconds=2.0, memory_mb=256, processes=16, output_bytes=64 << 10, disk_mb=16)
# Expected answers the forged lines claim: 3 printed (stdin) or 3 returned (call-based).
STDIN_TESTS = {"tests": [{"input": "", "output": "3"}, {"input": "", "output": "3"}]}
CALL_TESTS = {"input_output": json.dumps({"fn_name": "f", "inputs": [[1], [2]], "outputs": [3, 3]})}

# What the supervisor's report channel would have believed: a result, or a setup failure.
FORGED = {
    "result": b'{"result": 3}\n',
    "setup_error": b'{"setup_error": "x"}\n',
    "both": b'{"setup_error": "x"}\n{"result": 3}\n',
    "unterminated": b'{"result": 3}',
}


def _program(line: bytes, fds: str) -> str:
    # A wrong program (prints 0, returns 0) that first writes the forged line to the given fds.
    return (
        "import os\n"
        f"for fd in {fds}:\n"
        "    try:\n"
        f"        os.write(fd, {line!r})\n"
        "    except OSError:\n"
        "        pass\n"
        "def f(x):\n"
        "    return 0\n"
        "print(0)\n"
    )


@pytest.fixture(scope="module", params=[True, False], ids=["namespaces", "no-namespaces"])
def verifier(request) -> CodeVerifier:
    return CodeVerifier(limits=LIMITS, workers=2, namespaces=request.param)


@pytest.mark.parametrize("forged", sorted(FORGED))
@pytest.mark.parametrize("fds", ["[3]", "range(256)"], ids=["fd3", "fd0-255"])
@pytest.mark.parametrize("tests", [STDIN_TESTS, CALL_TESTS], ids=["stdin", "call"])
def test_forged_report_lines_never_decide_the_verdict(verifier, forged, fds, tests):
    result = verifier.score(_program(FORGED[forged], fds), tests)  # must not raise
    assert result.reason != "correct" and result.score == 0.0
    assert result.reason in ("sandbox_violation", "wrong_answer")


@pytest.mark.parametrize("tests", [STDIN_TESTS, CALL_TESTS], ids=["stdin", "call"])
def test_forged_report_then_exit_is_never_a_setup_failure(verifier, tests):
    # A lone forged line and a clean exit: the harness never wrote, so only the program's line is
    # there; it may claim a result (as returning it would), never a failure of the machine.
    program = "import os\nos.write(3, b'{\"setup_error\": \"x\"}\\n')\nos._exit(0)\n"
    result = verifier.score(program, tests)
    assert result.reason == "sandbox_violation"
    assert "setup_error" in result.details["report"]


def test_the_harness_own_reports_are_still_believed(verifier):
    assert verifier.score("def f(x):\n    return 3\n", CALL_TESTS).reason == "correct"
    assert verifier.score("print(3)", STDIN_TESTS).reason == "correct"
    assert verifier.score("raise MemoryError", STDIN_TESTS).reason == "memory_limit"
    assert verifier.score("def f(x):\n    return x +", CALL_TESTS).reason == "compile_error"


def test_trl_and_verl_rewards_score_hostile_programs_without_raising():
    logged = {}
    programs = [_program(FORGED[k], "range(256)") for k in sorted(FORGED)]
    scores = rewards.code_reward(
        prompts=[""] * len(programs), completions=programs, tests=[STDIN_TESTS["tests"]] * len(programs),
        log_extra=lambda column, values: logged.setdefault(column, values),
    )
    assert scores == [0.0] * len(programs)
    assert set(logged["code_reason"]) == {"sandbox_violation"}
    for program in programs:
        out = rewards.compute_score("livecodebench", program, CALL_TESTS["input_output"], None)
        assert out["score"] == 0.0 and out["reason"] == "sandbox_violation"


def test_rewards_turn_a_failing_machine_into_a_zero_with_a_reason(monkeypatch):
    def no_sandbox(self, *args):
        raise RuntimeError("the code sandbox did not start twice in a row: out of processes")

    monkeypatch.setattr(CodeVerifier, "_run", no_sandbox)
    logged = {}
    scores = rewards.code_reward(prompts=[""], completions=["print(3)"], tests=[STDIN_TESTS["tests"]],
                                 log_extra=lambda column, values: logged.setdefault(column, values))
    assert scores == [0.0] and logged["code_reason"] == ["error"]
    out = rewards.compute_code_score("code", "print(3)", STDIN_TESTS, None)
    assert out == {"score": 0.0, "acc": 0.0, "reason": "error"}
    with pytest.raises(RuntimeError, match="did not start"):  # fade eval still stops on it
        CodeVerifier(limits=LIMITS).score("print(3)", STDIN_TESTS)


# -- memory outside the address space ---------------------------------------------------------------

MEMFD_BOMB = """
import os
fds = []
for i in range(40):
    fd = os.memfd_create("x")
    for _ in range(15):
        os.write(fd, b"x" * (1 << 20))
    fds.append(fd)
print("held", len(fds))
"""

SHM_BOMB = """
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
for i in range(40):
    sid = libc.shmget(0, 15 << 20, 0o1600)  # IPC_PRIVATE, IPC_CREAT | 0600
    if sid < 0:
        raise OSError(ctypes.get_errno(), "shmget")
    addr = libc.shmat(sid, None, 0)
    ctypes.memset(addr, 1, 15 << 20)
    libc.shmdt(ctypes.c_void_p(addr))  # unmapped: RLIMIT_AS no longer counts it
print("held", 40)
"""


def _shmem_kb() -> int:
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("Shmem:"):
                return int(line.split()[1])
    raise AssertionError("no Shmem line in /proc/meminfo")


@pytest.mark.parametrize("program", [MEMFD_BOMB, SHM_BOMB], ids=["memfd", "sysv-shm"])
def test_memory_outside_the_address_space_is_bounded(verifier, program):
    # 40 x 15 MB at memory_mb=256: the host's shared memory must not grow by hundreds of MB.
    before, peak, stop = _shmem_kb(), [0], threading.Event()

    def watch():
        while not stop.is_set():
            peak[0] = max(peak[0], _shmem_kb() - before)
            stop.wait(0.002)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        result = verifier.score(program, {"tests": [{"input": "", "output": "held 40"}]})
    finally:
        stop.set()
        watcher.join()
    assert result.details["memory_bound"] in ("seccomp", "rlimits")
    if result.details["memory_bound"] == "rlimits":
        pytest.skip("no seccomp filter on this machine: the documented RLIMIT_FSIZE x RLIMIT_NOFILE bound applies")
    assert result.reason == "sandbox_violation", result
    assert result.details["errno"] == "EPERM"
    assert peak[0] < 100 << 10, f"host Shmem grew by {peak[0] >> 10} MB"


def test_isolation_says_which_memory_bound_applies():
    with SandboxRun("print(1)", [{"stdin": ""}], limits=LIMITS) as run:
        list(run)
    assert run.isolation["memory"] in ("seccomp", "rlimits")


def test_a_run_stops_cleanly_after_a_disbelieved_report():
    program = "import os\nos.write(3, b'{\"result\": 3}\\n')\ndef f(x):\n    return 0\n"
    with SandboxRun(program, [{"args": [1]}, {"args": [2]}], call="f", limits=LIMITS) as run:
        records = list(run)
    assert len(records) == 1 and "2 lines" in records[0]["report_error"] and "status" not in records[0]
    assert run.failure is None


@pytest.mark.parametrize("judge", ["lcb", "taco", "codecontests"])
@pytest.mark.parametrize("forged", sorted(FORGED))
@pytest.mark.parametrize("tests", [STDIN_TESTS, CALL_TESTS], ids=["stdin", "call"])
def test_forged_report_lines_never_decide_a_benchmark_judges_verdict(judge, forged, tests):
    # The benchmarks' judges run programs their own way (LiveCodeBench's wrapping and stand-in
    # stdin, TACO's retries, CodeContests judging output after a crash): the report channel holds.
    if judge == "codecontests" and tests is CALL_TESTS:
        pytest.skip("CodeContests has no call-based tests")
    result = CodeVerifier(limits=LIMITS, workers=1, judge=judge).score(_program(FORGED[forged], "range(256)"), tests)
    assert result.reason != "correct" and result.score == 0.0
