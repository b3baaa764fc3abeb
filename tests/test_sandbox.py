"""The code reward and its sandbox: test formats, output comparison, verdicts for correct, wrong,
crashing and slow programs, and hostile programs contained with the right reason while the
evaluator keeps running. Limits are small (1 s per test) so that the file runs in seconds."""

from __future__ import annotations

import ast
import base64
import dataclasses
import json
import os
import pickle
import socket
import struct
import sys
import tempfile
import time
import tracemalloc
import zlib
from pathlib import Path

import pytest

from fade.verifiers import rewards, testcases
from fade.verifiers.code_exec import CodeVerifier, canonical_program, extract_program
from fade.verifiers.judges import JUDGES, lcb_wrap
from fade.verifiers.run_options import CAPTURED, CHECK, IO_MODES, RunOptions
from fade.verifiers.sandbox import HARNESS, MAX_SLOTS, UID_BASE, Limits, SandboxRun
from fade.verifiers.testcases import outputs_match, parse_tests, values_match

#: The supervisor's files: the script and the modules it loads beside it.
SUPERVISOR_FILES = ("harness", "confinement", "run_options", "wire", "runner")
LIMITS = Limits(time_seconds=1.0, memory_mb=256, processes=16, output_bytes=64 << 10, disk_mb=16)
SUM_TESTS = {"input_output": json.dumps({"inputs": ["1 2\n", "10 -3\n"], "outputs": ["3\n", "7\n"]})}
ECHO_TESTS = {"tests": [{"input": "", "output": "SAFE"}]}


@pytest.fixture(scope="module")
def verifier() -> CodeVerifier:
    return CodeVerifier(limits=LIMITS, workers=2)


def _sandbox_processes() -> list[int]:
    """Processes of any sandbox uid this test process may have used (root only)."""
    first = UID_BASE + (os.getpid() % (1 << 22)) * MAX_SLOTS
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                uid = os.stat(f"/proc/{entry}").st_uid
            except OSError:
                continue
            if first <= uid < first + MAX_SLOTS:
                found.append(int(entry))
    return found


def _assert_evaluator_fine(verifier: CodeVerifier) -> None:
    # Still alive, still able to judge, nothing left behind.
    assert verifier.score("a, b = map(int, input().split())\nprint(a + b)", SUM_TESTS).reason == "correct"
    if os.geteuid() == 0:
        deadline = time.monotonic() + 3
        while _sandbox_processes() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _sandbox_processes() == []


# -- formats and comparison ------------------------------------------------------------------------


def test_livecodebench_format_with_compressed_private_tests():
    private = [{"input": "5\n", "output": "25\n", "testtype": "stdin"}]
    packed = base64.b64encode(zlib.compress(pickle.dumps(json.dumps(private)))).decode()
    row = {"public_test_cases": json.dumps([{"input": "2\n", "output": "4\n", "testtype": "stdin"}]),
           "private_test_cases": packed, "metadata": "{}"}
    suite = parse_tests(row)
    assert suite.call is None
    assert [(c.stdin, c.output) for c in suite.cases] == [("2\n", "4\n"), ("5\n", "25\n")]


def test_compressed_tests_never_unpickle_objects():
    class Boom:
        def __reduce__(self):
            return (os.system, ("echo pwned",))

    packed = base64.b64encode(zlib.compress(pickle.dumps(Boom()))).decode()
    with pytest.raises(ValueError, match="compressed"):
        parse_tests({"private_test_cases": packed})


def test_a_zlib_bomb_in_compressed_tests_is_refused_with_bounded_memory(monkeypatch):
    # 300 MB of a pickled string in a 1.4 MB line; the evaluator must not inflate it all.
    size, chunk = 300 << 20, b" " * (4 << 20)
    deflate = zlib.compressobj(1)
    parts = [deflate.compress(b"\x80\x03X" + struct.pack("<I", size))]
    parts += [deflate.compress(chunk) for _ in range(size // len(chunk))]
    bomb = base64.b64encode(b"".join(parts) + deflate.compress(b".") + deflate.flush()).decode()
    monkeypatch.setattr(testcases, "MAX_DECOMPRESSED_BYTES", 16 << 20)
    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match=r"private_test_cases decompresses to more than 16 MB.*zlib bomb"):
            parse_tests({"private_test_cases": bomb, "metadata": "{}"})
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 64 << 20, f"parsing the bomb allocated {peak >> 20} MB"


def test_livecodebench_functional_format():
    row = {"public_test_cases": [{"input": "[2, 7, 11, 15]\n9", "output": "[0, 1]", "testtype": "functional"}],
           "metadata": json.dumps({"func_name": "twoSum"})}
    suite = parse_tests(row)
    assert suite.call == "twoSum"
    assert suite.cases[0].args == ([2, 7, 11, 15], 9) and suite.cases[0].expected == [0, 1]


def test_codecontests_and_taco_formats():
    cc = parse_tests(
        {
            "public_tests": {"input": ["1\n"], "output": ["2\n"]},
            "private_tests": {"input": [], "output": []},
            "generated_tests": {"input": ["5\n"], "output": ["6\n"]},
        }
    )
    assert [c.stdin for c in cc.cases] == ["1\n", "5\n"]
    taco = parse_tests(json.dumps({"input_output": json.dumps({"fn_name": "f", "inputs": [[1, 2]], "outputs": [[3]]})}))
    assert taco.call == "f" and taco.cases[0].args == (1, 2)
    verl_truth = parse_tests(json.dumps({"inputs": ["x\n"], "outputs": ["y\n"]}))
    assert verl_truth.cases[0].output == "y\n"


@pytest.mark.parametrize("bad, match", [
    ({"input_output": json.dumps({"inputs": ["1"], "outputs": []})}, "as many"),
    ({"tests": []}, "no test cases"),
    ({"public_test_cases": [{"input": "1", "output": "1", "testtype": "functional"}]}, "function name"),
    ({"public_test_cases": [{"input": "1"}]}, "'input' and 'output'"),
    ("not json at all", "neither JSON"),
])
def test_malformed_tests_name_the_problem(bad, match):
    with pytest.raises(ValueError, match=match):
        parse_tests(bad)


def test_output_comparison():
    assert outputs_match("3\n", "3")
    assert outputs_match("1 2\n3  \n", "1 2 3")
    assert outputs_match("007", "7")
    assert outputs_match("0.3333333", "0.33333333333", 1e-6)
    assert not outputs_match("0.34", "0.33", 1e-6)
    assert not outputs_match("1000001", "1000000", 1e-6)  # integers compare exactly
    assert not outputs_match("1 2", "1 2 3")
    assert not outputs_match("YES", "yes")
    assert values_match([0, 1], [0, 1]) and values_match(3, [3]) and values_match(0.1 + 0.2, 0.3)
    assert not values_match([1, 0], [0, 1]) and not values_match(True, 1)


def test_program_extraction():
    text = "Try this:\n```python\nprint(1)\n```\nor better:\n```py\nprint(2)\n```\nDone."
    assert extract_program(text) == "print(2)"
    assert extract_program("```cpp\nint main(){}\n```\n```\nprint(3)\n```") == "print(3)"
    assert extract_program("```python\nprint(4)\n").strip() == "print(4)"  # cut off by the length limit
    assert extract_program("print(5)") == "print(5)"
    assert canonical_program("x=1 # one\nprint( x )") == canonical_program("x = 1\n\nprint(x)")


# -- ordinary programs ---------------------------------------------------------------------------------


@pytest.mark.parametrize("program, reason", [
    ("a, b = map(int, input().split())\nprint(a + b)", "correct"),
    ("import sys\nprint(sum(map(int, sys.stdin.buffer.read().split())))", "correct"),
    ("print(sum(map(int, open(0).read().split())))\nexit()", "correct"),
    ("a, b = map(int, input().split())\nprint(a - b)", "wrong_answer"),
    ("print(1 // 0)", "runtime_error"),
    ("import sys\nsys.exit(3)", "runtime_error"),
    ("import time\ntime.sleep(10)", "time_limit"),
    ("def f(:\n  pass", "compile_error"),
    ("", "no_code"),
])
def test_ordinary_programs(verifier, program, reason):
    result = verifier.score(f"```python\n{program}\n```" if program else "", SUM_TESTS)
    assert result.reason == reason, result.details
    assert result.score == (1.0 if reason == "correct" else 0.0)
    assert (result.canonical is not None) == (reason == "correct")


def test_wrong_answer_says_which_test(verifier):
    result = verifier.score("a, b = map(int, input().split())\nprint(3)", SUM_TESTS)
    assert result.reason == "wrong_answer"
    assert result.details["passed"] == 1 and result.details["failed_test"] == 1
    assert result.details["expected"] == "7\n" and result.details["got"] == "3\n"


def test_runtime_error_names_the_exception(verifier):
    result = verifier.score("print([][1])", SUM_TESTS)
    assert result.reason == "runtime_error" and result.details["exception"] == "IndexError"
    assert "harness" not in result.details["stderr"]


def test_call_based_programs(verifier):
    tests = {"input_output": json.dumps({"fn_name": "add", "inputs": [[1, 2], [0.5, 0.25]], "outputs": [[3], [0.75]]})}
    assert verifier.score("def add(a, b):\n    return a + b", tests).reason == "correct"
    assert verifier.score("class Solution:\n    def add(self, a, b):\n        return a + b", tests).reason == "correct"
    assert verifier.score("def add(a, b):\n    return a * b", tests).reason == "wrong_answer"
    assert verifier.score("def plus(a, b):\n    return a + b", tests).reason == "runtime_error"
    assert verifier.score("def add(a, b):\n    return {1, 2}", tests).reason == "wrong_answer"


def test_results_do_not_depend_on_the_number_of_workers():
    programs = [
        "print(sum(map(int, input().split())))",
        "print(0)",
        "print(1/0)",
        "while True: pass",
        "x = (",
        "print(3)",
    ]
    one = CodeVerifier(limits=LIMITS, workers=1).score_many(programs, [SUM_TESTS] * len(programs))
    many = CodeVerifier(limits=LIMITS, workers=4).score_many(programs, [SUM_TESTS] * len(programs))
    assert [(r.reason, r.canonical) for r in one] == [(r.reason, r.canonical) for r in many]
    assert [r.reason for r in one] == [
        "correct",
        "wrong_answer",
        "runtime_error",
        "time_limit",
        "compile_error",
        "wrong_answer",
    ]


def test_isolation_reported_in_every_result(verifier, isolation):
    result = verifier.score("print(3)\nprint(7)", SUM_TESTS)
    assert result.details["sandbox"] == isolation["mode"]
    assert result.details["network_isolated"] == isolation["network"]
    if os.geteuid() == 0 and isolation["mode"] == "namespaces":
        assert isolation["filesystem"] == "private" and isolation["uid"] == "dropped"


# -- hostile programs ----------------------------------------------------------------------------------


def test_infinite_loop(verifier):
    start = time.monotonic()
    result = verifier.score("while True:\n    pass", SUM_TESTS)
    assert result.reason == "time_limit"
    assert time.monotonic() - start < LIMITS.time_seconds + 3
    _assert_evaluator_fine(verifier)


def test_fork_bomb(verifier):
    result = verifier.score("import os\nwhile True:\n    os.fork()", SUM_TESTS)
    assert result.reason in ("sandbox_violation", "time_limit"), result.details
    _assert_evaluator_fine(verifier)


def test_fork_bomb_that_swallows_errors(verifier):
    program = "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass"
    assert verifier.score(program, SUM_TESTS).reason == "time_limit"
    _assert_evaluator_fine(verifier)


def test_memory_bomb(verifier):
    # Filling 200 MB of pages takes 0.1 s on an idle machine and can pass 1 s on a busy one: a
    # generous time limit here keeps the test about memory, whatever else the machine runs.
    patient = CodeVerifier(limits=dataclasses.replace(LIMITS, time_seconds=30.0), workers=1)
    result = patient.score("a = []\nwhile True:\n    a.append(bytearray(10 ** 8))", SUM_TESTS)
    assert result.reason == "memory_limit", result.details
    assert result.details["exception"] == "MemoryError"
    assert verifier.score("x = bytearray(10 ** 10)", SUM_TESTS).reason == "memory_limit"
    _assert_evaluator_fine(verifier)


def test_huge_output(verifier):
    start = time.monotonic()
    result = verifier.score("while True:\n    print('x' * 10000)", SUM_TESTS)
    assert result.reason == "output_limit"
    assert result.details["output_bytes"] > LIMITS.output_bytes
    assert time.monotonic() - start < LIMITS.time_seconds + 3
    _assert_evaluator_fine(verifier)


def test_writing_outside_the_working_directory(verifier, namespaces, tmp_path):
    outside = [
        str(tmp_path / "escape"),
        str(Path(__file__).with_name("escape-marker")),
        "/etc/fade-escape",
        "/usr/fade-escape",
    ]
    # The sandbox's /tmp is its own working directory (a fresh tmpfs): writing there is allowed
    # and must not reach the host's /tmp.
    host_tmp = Path(tempfile.gettempdir()) / f"fade-escape-{os.getpid()}"
    program = (
        f"open({str(host_tmp)!r}, 'w').write('contained')\n"
        "results = []\n"
        f"for path in {outside!r}:\n"
        "    try:\n        open(path, 'w').write('x')\n        results.append('WROTE ' + path)\n"
        "    except OSError:\n        results.append('denied')\n"
        "open('inside.txt', 'w').write('fine')\n"
        "print('SAFE' if all(r == 'denied' for r in results) else results)"
    )
    result = verifier.score(program, ECHO_TESTS)
    assert result.reason == "correct", result.details
    for target in [*outside, str(host_tmp)]:
        assert not os.path.exists(target), target
    # An uncaught attempt is reported as a violation.
    result = verifier.score("open('/etc/fade-escape', 'w')", SUM_TESTS)
    assert result.reason == "sandbox_violation" and result.details["errno"] in ("EROFS", "EACCES")
    # The working directory is fresh for every run.
    assert (
        verifier.score("import os\nprint('SAFE' if not os.path.exists('inside.txt') else 'SEEN')", ECHO_TESTS).reason
        == "correct"
    )
    _assert_evaluator_fine(verifier)


def test_reading_the_parents_environment(verifier, monkeypatch):
    secret = "fade-secret-7f3a9"
    monkeypatch.setenv("FADE_TEST_SECRET", secret)
    program = (
        "import os\nfound = [k for k, v in os.environ.items() if 'fade-secret' in v]\n"
        f"for pid in [e for e in os.listdir('/proc') if e.isdigit()] + ['{os.getpid()}', 'self', '1']:\n"
        "    try:\n        data = open('/proc/%s/environ' % pid, 'rb').read()\n    except OSError:\n        continue\n"
        "    if b'fade-secret' in data:\n        found.append(pid)\n"
        "print('SAFE' if not found else 'LEAK %s' % found)"
    )
    result = verifier.score(program, ECHO_TESTS)
    assert result.reason == "correct", result.details
    assert secret not in json.dumps(result.to_dict())
    assert os.environ["FADE_TEST_SECRET"] == secret


def test_opening_a_network_connection(verifier, namespaces):
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        server.settimeout(0.2)
        port = server.getsockname()[1]
        result = verifier.score(f"import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=1)", SUM_TESTS)
        assert result.reason == "sandbox_violation", result.details
        assert result.details["network_isolated"] is True
        with pytest.raises(socket.timeout):
            server.accept()  # nothing reached the evaluator's side
    # No route leaves the sandbox: its namespace has no interface but a loopback that is down.
    # (Checked from inside rather than by dialling an outside address: tests send nothing
    # beyond this machine even if isolation were broken.)
    program = (
        "import fcntl, socket, struct\n"
        "names = sorted(name for _, name in socket.if_nameindex())\n"
        "s = socket.socket()\n"
        "flags = struct.unpack('H', fcntl.ioctl(s.fileno(), 0x8913, struct.pack('256s', b'lo'))[16:18])[0]\n"
        "print('SAFE' if names == ['lo'] and not flags & 1 else 'OPEN %s %s' % (names, flags))"
    )
    result = verifier.score(program, ECHO_TESTS)
    assert result.reason == "correct", result.details
    _assert_evaluator_fine(verifier)


@pytest.mark.parametrize("attack", [
    "os.kill(os.getppid(), signal.SIGKILL)",
    "os.kill({evaluator}, signal.SIGKILL)",
    "os.killpg(os.getpgid({evaluator}), signal.SIGKILL)",
    "os.kill(-1, signal.SIGKILL)",
])
def test_killing_its_parent(verifier, attack):
    program = "import os, signal\n" + attack.format(evaluator=os.getpid()) + "\nprint('still here')"
    result = verifier.score(program, SUM_TESTS)
    assert result.reason in ("sandbox_violation", "runtime_error"), result.details
    _assert_evaluator_fine(verifier)


def test_closing_a_run_kills_what_it_started():
    program = "import os, time\nif os.fork() == 0:\n    os.setsid()\n    time.sleep(60)\nprint(1)"
    run = SandboxRun(program, [{"stdin": ""}], limits=LIMITS)
    with run:
        records = list(run)
    assert records and records[0]["exit"] == 0
    assert not os.path.exists(run._root)
    if os.geteuid() == 0:
        deadline = time.monotonic() + 3
        while _sandbox_processes() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _sandbox_processes() == []


def test_weakest_mode_still_judges(isolation):
    weak = CodeVerifier(limits=LIMITS, workers=1, namespaces=False)
    result = weak.score("a, b = map(int, input().split())\nprint(a + b)", SUM_TESTS)
    assert result.reason == "correct" and result.details["sandbox"] == "none"
    assert result.details["network_isolated"] is False
    assert weak.score("while True: pass", SUM_TESTS).reason == "time_limit"


# -- adapters --------------------------------------------------------------------------------------


def test_trl_code_reward():
    logged = {}
    completions = [[{"role": "assistant", "content": "```python\nprint(sum(map(int, input().split())))\n```"}],
                   [{"role": "assistant", "content": "print(0)"}], "print(1)"]
    tests = [SUM_TESTS["input_output"], SUM_TESTS["input_output"], None]
    reward = rewards.make_code_reward(CodeVerifier(limits=LIMITS, workers=2))
    scores = reward(prompts=["p"] * 3, completions=completions, input_output=tests,
                    log_extra=lambda column, values: logged.setdefault(column, values))
    assert scores == [1.0, 0.0, None]
    assert logged["code_reason"] == ["correct", "wrong_answer", "not_applicable"]


def test_verl_compute_score_runs_code(monkeypatch):
    monkeypatch.setattr(rewards, "default_code_verifier", lambda: CodeVerifier(limits=LIMITS, workers=1))
    truth = json.dumps({"inputs": ["1 2\n"], "outputs": ["3\n"]})
    good = rewards.compute_score("codecontests", "print(sum(map(int, input().split())))", truth)
    assert good == {"score": 1.0, "acc": 1.0, "reason": "correct"}
    assert rewards.compute_score("my_set", "print(0)", truth)["reason"] == "wrong_answer"  # detected from the tests
    assert rewards.compute_code_score("x", "print(3)", truth, extra_info={})["score"] == 1.0


# -- limits the sandbox can set --------------------------------------------------------------------


def _hard(name: str) -> int | None:
    import resource

    hard = resource.getrlimit(getattr(resource, name))[1]
    return None if hard == resource.RLIM_INFINITY else hard


@pytest.mark.parametrize("fields, match", [
    ({"time_seconds": 1e12}, r"limit time_seconds must be at most 86400, .* got 1000000000000.0"),
    ({"memory_mb": 2 ** 60}, r"limit memory_mb must be at most \d+, .* got 1152921504606846976"),
    ({"disk_mb": 2 ** 60}, r"limit disk_mb must be at most \d+, .* got 1152921504606846976"),
    pytest.param({"processes": 10 ** 9}, r"limit processes must be at most \d+: this process's hard RLIMIT_NPROC",
                 marks=pytest.mark.skipif(_hard("RLIMIT_NPROC") is None or _hard("RLIMIT_NPROC") >= 10 ** 9,
                                          reason="no hard process limit below 10**9 here")),
])
def test_limits_the_sandbox_cannot_set_are_refused_at_construction(fields, match):
    # Accepted before, then a crash inside the sandbox (leaving its folder) or "the code sandbox did
    # not start twice", blaming the machine.
    with pytest.raises(ValueError, match=match):
        Limits(**fields)
    with pytest.raises(ValueError, match=match):
        CodeVerifier(limits=fields)


def test_the_largest_limits_accepted_are_honoured():
    hard = _hard("RLIMIT_NPROC")
    limits = Limits(time_seconds=86_400, memory_mb=1 << 20, processes=min(hard or 4096, 4096), disk_mb=1 << 20)
    with SandboxRun("print(1)", [{"stdin": ""}], limits=limits) as run:
        records = list(run)
    assert run.failure is None and records[0]["stdout"] == "1\n" and "setup_error" not in records[0]


def test_a_run_that_fails_to_start_leaves_no_folder(monkeypatch):
    from fade.verifiers import sandbox

    roots = []

    def broken(root):
        roots.append(root)
        raise RuntimeError("no supervisor today")

    monkeypatch.setattr(sandbox, "_USE_ZYGOTE", True)
    monkeypatch.setattr(sandbox, "_spawn_supervisor", broken)
    with pytest.raises(RuntimeError, match="no supervisor today"):
        with SandboxRun("print(1)", [{"stdin": ""}], limits=LIMITS):
            pass
    assert len(roots) == 1 and Path(roots[0]).name.startswith("fade-sandbox-") and not os.path.exists(roots[0])


# -- the supervisor's options and files ----------------------------------------------------------


def test_run_options_are_checked_where_they_are_made_and_survive_json():
    for judge in JUDGES.values():
        for suite in (parse_tests({"tests": [{"input": "1", "output": "1"}]}),
                      parse_tests({"input_output": json.dumps({"fn_name": "f", "inputs": [[1]], "outputs": [1]})})):
            options = judge.run_options(suite)
            assert options.io in IO_MODES and RunOptions.from_json(json.loads(json.dumps(options.to_json()))) == options
    for bad, match in [({"io": "lcb"}, "io must be one of"), ({"guard": "taco"}, "guard must be a bool"),
                       ({"int_max_str_digits": True}, "must be a int"), ({"module_name": "a b"}, "module name"),
                       ({"paths": (1,)}, "paths")]:
        with pytest.raises(ValueError, match=match):
            RunOptions(**bad)
    with pytest.raises(ValueError, match=r"unknown run options \['judge'\]"):
        RunOptions.from_json({"judge": "taco"})


def test_each_io_mode_runs_the_program_its_way():
    program = "import sys\nprint(sys.stdin.read().upper(), __name__)"
    outputs = {}
    for options in (RunOptions(), RunOptions(io=CAPTURED, module_name="tmp_sol"), RunOptions(io=CHECK)):
        source = lcb_wrap(program) if options.io == CAPTURED else program
        with SandboxRun(source, [{"stdin": "ab"}], limits=LIMITS, options=options) as run:
            (record,) = list(run)
        outputs[options.io] = (record["exit"], record["stdout"])
    # A script reads fd 0 as __main__; LiveCodeBench's wrapped body reads the stand-in; a check's
    # input raises (so its exit is 1) and its output is discarded.
    assert outputs == {"script": (0, "AB __main__\n"), "captured": (0, "AB tmp_sol\n"), "check": (1, "")}


def _loaded_siblings() -> list[str]:
    """The modules the supervisor loads beside it, in its order (its ``_siblings(...)`` call)."""
    calls = [node for node in ast.walk(ast.parse(HARNESS.read_text()))
             if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "_siblings"]
    assert len(calls) == 1
    return [arg.value for arg in calls[0].args]


def test_the_supervisor_is_standard_library_only():
    # It runs as python -S -s with nothing but the standard library on sys.path: its files import
    # nothing else, and nothing of fade; a sibling imports only siblings loaded before it (they
    # are loaded by path, in order, as one package).
    siblings = _loaded_siblings()
    assert ("harness", *siblings) == SUPERVISOR_FILES
    for name in SUPERVISOR_FILES:
        tree = ast.parse(HARNESS.with_name(f"{name}.py").read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level:
                before = siblings[: siblings.index(name)] if name in siblings else []
                assert node.level == 1 and node.module in before, (name, node.module)
            elif isinstance(node, ast.ImportFrom):
                assert node.module.split(".")[0] in sys.stdlib_module_names, (name, node.module)
            elif isinstance(node, ast.Import):
                assert all(a.name.split(".")[0] in sys.stdlib_module_names for a in node.names), name


def test_the_supervisors_siblings_leave_nothing_in_sys_modules():
    # The program finds none of the supervisor's modules in sys.modules (they are there only while
    # they load), and the runner reads the codec and the options its siblings define.
    program = ("import sys\nprint(sorted(m for m in sys.modules if 'fade' in m or m in ('wire', 'runner', "
               "'run_options', 'confinement')))")
    with SandboxRun(program, [{"stdin": ""}], limits=LIMITS) as run:
        (record,) = list(run)
    assert (record["exit"], record["stdout"]) == (0, "[]\n"), record


def test_a_traceback_names_none_of_the_supervisors_files():
    program = "def f():\n    raise ValueError('x')\nf()"
    for options, source in [
        (RunOptions(), program),
        (RunOptions(io=CAPTURED, module_name="tmp_sol"), lcb_wrap(program)),
        (RunOptions(file_retry=True), program),
    ]:
        with SandboxRun(source, [{"stdin": ""}], limits=LIMITS, options=options) as run:
            (record,) = list(run)
        tail = record["stderr_tail"]
        assert "<solution>" in tail and not any(name in tail for name in SUPERVISOR_FILES), tail


@pytest.mark.parametrize("processes, offset", [(8, 0), (7, 1), (8, 1), (8, 400)])
def test_the_none_mode_process_offset_is_clamped_to_the_hard_limit_without_root(processes, offset):
    # none mode without root adds the caller's process count to `processes`; a sum past the hard
    # RLIMIT_NPROC made setrlimit fail in every test's setup. Checked in a forked child that sets
    # a hard limit of 8 and, where it runs as root, gives root up first.
    import resource

    from fade.verifiers import confinement

    hard = 8
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.close(read)
            resource.setrlimit(resource.RLIMIT_NPROC, (hard, hard))
            if os.geteuid() == 0:
                os.setgid(65534)
                os.setuid(65534)
            keep = {name: resource.getrlimit(getattr(resource, name))[1] for name in ("RLIMIT_AS", "RLIMIT_FSIZE")}
            confinement.set_limits({"processes": processes, "processes_offset": offset,
                                    "memory_bytes": keep["RLIMIT_AS"], "disk_bytes": keep["RLIMIT_FSIZE"]}, 5)
            os.write(write, json.dumps(resource.getrlimit(resource.RLIMIT_NPROC)).encode())
            code = 0
        except BaseException as exc:
            os.write(write, json.dumps(f"{type(exc).__name__}: {exc}").encode())
        os._exit(code)
    os.close(write)
    with os.fdopen(read) as f:
        got = json.loads(f.read())
    os.waitpid(pid, 0)
    assert got == [min(processes + offset, hard)] * 2
