"""Verdicts a hostile or unlucky program must not be able to bend: numbers compared by the
expected value's kind, one sample's bounded hold on a worker, nothing carried from one test to
the next, output counted in bytes, a standard library without site-packages, the supervisor
hidden from the program, exit statuses as the program chose them, and eval scores reused only
for the reference they were made against."""

from __future__ import annotations

import json
import sys
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fade.verifiers import code_exec, sandbox
from fade.verifiers.code_exec import CodeVerifier
from fade.verifiers.judges import JUDGES
from fade.verifiers.sandbox import (
    CLEAN_ENV,
    PER_TEST_SLACK,
    START_SLACK,
    Limits,
    SandboxRun,
    worst_case_seconds,
)
from fade.verifiers.testcases import TestCase as Case
from fade.verifiers.testcases import TestSuite as Suite
from fade.verifiers.testcases import outputs_match, parse_tests, values_match
from fade.verifiers.wire import decode_value, encode_value

LIMITS = Limits(time_seconds=1.0, memory_mb=256, processes=16, output_bytes=64 << 10, disk_mb=16)


@pytest.fixture(scope="module")
def verifier() -> CodeVerifier:
    return CodeVerifier(limits=LIMITS, workers=2)


def _stdin_tests(*pairs: tuple[str, str]) -> dict:
    return {"tests": [{"input": i, "output": o} for i, o in pairs]}


# -- 1. numbers: an integer expected value is matched by an integer only ---------------------------


@pytest.mark.parametrize("got, expected", [
    ("1000000000000000000", "999999999999999999"),  # integers compare exactly
    ("1.0000000000000001e18", "1000000000000000000"),  # a float token within 1e-6 of a large integer
    ("1e9", "999999999"),
    ("1000000000.0", "1000000000"),  # an integer value written as a float
    ("1414213563.0", "1414213562"),
    ("٣", "3"),  # Arabic-Indic digit
    ("３", "3"),  # full-width digit
    ("1_000", "1000"),
    ("1e400", "inf"),
    ("inf", "1e400"),
    ("0.5000001", "0.5000001e400"),
    ("nan", "nan0"),
])
def test_an_integer_or_ascii_number_is_never_matched_by_another_kind_of_token(got, expected):
    assert not outputs_match(got, expected, 1e-6)


@pytest.mark.parametrize("got, expected", [
    ("007", "7"), ("+7", "7"), ("-0", "0"), ("1" + "0" * 5000, "+1" + "0" * 5000),  # past int()'s 4,300 digits
    ("0.3333333", "0.33333333333"), ("0.5", "0.50"), ("2", "2.0"), (".5", "0.5"), ("1e-9", "0.000000001"),
    ("inf", "inf"),  # the same text is always the same token
])
def test_numbers_of_the_expected_kind_still_match(got, expected):
    assert outputs_match(got, expected, 1e-6)


def test_call_based_integers_need_integers():
    assert not values_match(1000000007.0, 1000000007)
    assert not values_match(3.0, 3)
    assert not values_match([1.0, 2], [1, 2])
    assert not values_match({"a": 2.0}, {"a": 2})
    assert values_match(3, 3) and values_match(3, 3.0) and values_match(0.1 + 0.2, 0.3)
    assert values_match(3, [3]) and not values_match(3.0, [3])
    assert not values_match(float("inf"), 1e308) and values_match(float("inf"), float("inf"))
    assert not values_match("3", 3) and not values_match(None, 0)


def test_a_float_answer_to_an_integer_test_is_wrong_end_to_end(verifier):
    n = 1414213562
    expected = str(n * (n + 1) // 2 + 78_000_000)  # off by 78 million: still within 1e-6 relative
    stdout = verifier.score(f"n = {n}\nprint(n * (n + 1) / 2)", _stdin_tests(("", expected)))
    assert stdout.reason == "wrong_answer"
    exact = verifier.score(f"n = {n}\nprint(n * (n + 1) // 2)", _stdin_tests(("", str(n * (n + 1) // 2))))
    assert exact.reason == "correct"
    call = {"input_output": json.dumps({"fn_name": "f", "inputs": [[1000000007]], "outputs": [1000000007]})}
    assert verifier.score("def f(n):\n    return float(n)", call).reason == "wrong_answer"
    assert verifier.score("def f(n):\n    return n", call).reason == "correct"


# -- 1b. values of any depth and integers of any length --------------------------------------------

NEST = "def f(x):\n    v = {leaf}\n    for _ in range({depth}):\n        v = [v]\n    return v\n"


def _nested(depth: int, leaf: int = 7):
    value = leaf
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize("depth", [350, 3000])
@pytest.mark.parametrize("judge", ["fade", "lcb", "taco"])
def test_a_return_value_nested_deeply_is_compared_to_any_depth(judge, depth):
    # Python's recursion limit (1,000) is no limit on a value: 350 levels raised RecursionError in
    # fade's rules and were a wrong answer in LiveCodeBench's and TACO's.
    suite = Suite((Case(args=(1,), expected=_nested(depth)),), "f", frozenset({"tests"}))
    verifier = CodeVerifier(limits=LIMITS, workers=1, judge=judge)
    fence = "```" if judge == "lcb" else ""  # LiveCodeBench takes fenced code only
    assert verifier.score(f"{fence}\n{NEST.format(leaf=7, depth=depth)}{fence}", suite).reason == "correct"
    wrong = verifier.score(f"{fence}\n{NEST.format(leaf=8, depth=depth)}{fence}", suite)
    assert wrong.reason == "wrong_answer"
    assert ("nested too deeply" in wrong.details["got"]) == (depth > 1000)  # the details say so, not raise


def test_integers_past_pythons_digit_limit_are_read_and_compared():
    # 4,300 digits is Python's limit on int <-> str: LiveCodeBench's grader raises it to 50,000 for
    # its tests, and a returned integer has no limit in any profile.
    big = "1" * 5001
    lcb = {"public_test_cases": json.dumps([{"input": big, "output": big, "testtype": "functional"}]),
           "metadata": json.dumps({"func_name": "f"})}
    lcb_verifier = CodeVerifier(limits=LIMITS, workers=1)
    assert lcb_verifier.score("```python\ndef f(x):\n    return x\n```", lcb).reason == "correct"
    wrong = lcb_verifier.score("```python\ndef f(x):\n    return x + 1\n```", lcb)
    assert wrong.reason == "wrong_answer" and wrong.details["got"] == "<an integer of about 5001 digits>"
    too_long = {
        **lcb,
        "public_test_cases": json.dumps([{"input": "1", "output": "1" * 50_001, "testtype": "functional"}]),
    }
    assert "50,000" in lcb_verifier.score("```python\ndef f(x):\n    return x\n```", too_long).details["error"]
    suite = Suite((Case(args=(1,), expected=10 ** 5000 + 7),), "f", frozenset({"tests"}))
    assert verifier_for("fade").score("def f(x):\n    return 10 ** 5000 + 7", suite).reason == "correct"
    assert verifier_for("fade").score("def f(x):\n    return 10 ** 5000 + 8", suite).reason == "wrong_answer"
    assert verifier_for("taco").score("def f(x):\n    return -(10 ** 5000) + 7", suite).reason == "wrong_answer"


def verifier_for(judge: str) -> CodeVerifier:
    return CodeVerifier(limits=LIMITS, workers=1, judge=judge)


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.integers(min_value=10 ** 700) | st.floats() | st.text(max_size=4),
    lambda inner: st.lists(inner, max_size=4) | st.tuples(inner, inner) | st.dictionaries(
        st.text(max_size=3) | st.integers() | st.floats() | st.booleans() | st.none(), inner, max_size=3),
    max_leaves=15)
TYPED_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=10**700)
    | st.floats(allow_nan=False)
    | st.text(max_size=4),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.tuples(inner, inner)
        | st.frozensets(st.integers() | st.text(max_size=2), max_size=3)
        | st.sets(st.integers(), max_size=3)
        | st.dictionaries(st.integers() | st.text(max_size=2) | st.tuples(st.integers()), inner, max_size=3)
    ),
    max_leaves=15,
)


def _same(a, b) -> bool:
    # Equality with nan equal to itself (json's round trip keeps nan; nan != nan).
    return json.dumps(a, default=repr) == json.dumps(b, default=repr) and type(a) is type(b)


@settings(max_examples=300, deadline=None)
@given(value=JSON_VALUES)
def test_values_in_fades_rules_come_back_as_json_would_bring_them(value):
    # The json module, side by side: fade's rules read a returned value as json.dumps then
    # json.loads would (tuples become lists, a dict's keys strings, the last of equal keys kept),
    # with no digit limit on integers.
    sys.set_int_max_str_digits(0)
    try:
        through_json = json.loads(json.dumps(value))
    finally:
        sys.set_int_max_str_digits(4300)
    assert _same(decode_value(json.loads(json.dumps(encode_value(value, False)))), through_json)


@settings(max_examples=300, deadline=None)
@given(value=TYPED_VALUES)
def test_typed_values_come_back_as_they_were(value):
    back = decode_value(json.loads(json.dumps(encode_value(value, True))))
    assert back == value and type(back) is type(value)


def test_what_json_cannot_hold_is_refused_in_fades_rules_and_opaque_in_the_typed_reading():
    loop: list = []
    loop.append(loop)
    for bad in ({1, 2}, b"x", object(), {(1, 2): 3}, loop):
        with pytest.raises((TypeError, ValueError)):
            encode_value(bad, False)
    (opaque,) = [decode_value(encode_value(complex(1, 2), True))]
    assert repr(opaque) == "(1+2j)" and opaque != opaque
    with pytest.raises(ValueError, match="circular"):
        encode_value(loop, True)


# -- 2. one sample's hold on a worker is bounded -------------------------------------------------

# The test's process moves into a process group its child made: the group the supervisor kills on
# timeout is then empty, and a wait on the sleeping process would block until the run's deadline.
ESCAPE_GROUP = """
import os, time
g = os.fork()
if g == 0:
    os.setpgid(0, 0)
    time.sleep(1000)
time.sleep(0.2)
os.setpgid(0, g)
time.sleep(1000)
"""
# A daemon: double fork, new session, holding the output pipe open.
DAEMON = """
import os, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        time.sleep(1000)
    os._exit(0)
print(int(input()) * 2)
"""
# Passes each test, slowly.
SLOW_PASS = """
import time
time.sleep(0.6)
print(int(input()) * 2)
"""


@pytest.mark.parametrize("program, reason", [(ESCAPE_GROUP, "time_limit"), (DAEMON, "correct"), (SLOW_PASS, "correct")])
def test_a_sample_holds_a_worker_no_longer_than_its_tests_limits(verifier, program, reason):
    tests = _stdin_tests(("1\n", "2"), ("2\n", "4"), ("3\n", "6"))
    start = time.monotonic()
    result = verifier.score(program, tests)
    elapsed = time.monotonic() - start
    assert result.reason == reason
    assert "failure" not in result.details  # stopped by the per-test limit, not the run's deadline
    # The stated bound (docs/verifiers.md), and well within it: a few seconds past the tests' limits.
    assert elapsed < min(worst_case_seconds(LIMITS, 3), 3 * LIMITS.time_seconds + 4.0)


def test_the_worst_case_bound_is_the_run_deadline():
    limits = Limits(time_seconds=6.0)
    assert worst_case_seconds(limits, 100) == START_SLACK + 100 * (6.0 + PER_TEST_SLACK)
    run = SandboxRun("print(1)", [{"stdin": ""}] * 3, limits=limits)
    before = time.monotonic()
    with run:
        list(run)
        assert run._deadline - before <= worst_case_seconds(limits, 3) + 0.5


# Each profile and kind of test, with a program that makes every run the profile can make: it
# passes every test (a failing test ends the run), or, for TACO's standard input, it exits with
# status 1 on every test, which retries each with files and then reruns them all wrapped.
TWO = {
    "lcb-stdin": (
        "lcb",
        "```python\nprint(2 * int(input()))\n```",
        {
            "public_test_cases": json.dumps(
                [{"input": f"{i}\n", "output": f"{2 * i}\n", "testtype": "stdin"} for i in (1, 2)]
            )
        },
    ),
    "lcb-call": (
        "lcb",
        "```python\ndef f(x):\n    return 2 * x\n```",
        {
            "public_test_cases": json.dumps(
                [{"input": f"{i}", "output": f"{2 * i}", "testtype": "functional"} for i in (1, 2)]
            ),
            "metadata": json.dumps({"func_name": "f"}),
        },
    ),
    "taco-stdin": (
        "taco",
        "import sys\nsys.exit(1)",
        {"input_output": json.dumps({"inputs": ["1\n", "2\n"], "outputs": ["2\n", "4\n"]})},
    ),
    "taco-call": (
        "taco",
        "def f(x):\n    return 2 * x",
        {"input_output": json.dumps({"fn_name": "f", "inputs": [[1], [2]], "outputs": [2, 4]})},
    ),
    "codecontests": (
        "codecontests",
        "print(2 * int(input()))",
        {"public_tests": {"input": ["1\n", "2\n"], "output": ["2\n", "4\n"]}},
    ),
    "humaneval": (
        "humaneval",
        "    return 2 * x\n",
        {"task_id": "t", "prompt": "def f(x):\n", "entry_point": "f", "test": "def check(c):\n    assert c(1) == 2\n"},
    ),
    "mbpp": (
        "mbpp",
        "def f(x):\n    return 2 * x\n",
        {"task_id": 1, "text": "twice", "test_list": ["assert f(1) == 2"]},
    ),
    "fade-stdin": ("fade", "print(2 * int(input()))", _stdin_tests(("1\n", "2"), ("2\n", "4"))),
    "fade-call": (
        "fade",
        "def f(x):\n    return 2 * x",
        {"tests": {"fn_name": "f", "inputs": [[1], [2]], "outputs": [2, 4]}},
    ),
}


@pytest.mark.parametrize("case", sorted(TWO))
def test_every_profile_runs_a_program_no_more_often_than_its_bound_counts(monkeypatch, case):
    # No timing here: the bound counts the runs a profile can make, each sandbox run's deadline
    # covers exactly the runs it can make, and the program here makes them all.
    judge, program, problem = TWO[case]
    made = []

    class Counted(SandboxRun):
        def start(self):
            before = time.monotonic()
            super().start()
            can = sum(self.options.runs_of(test) for test in self._job["tests"])
            assert (
                worst_case_seconds(self.limits, can)
                <= self._deadline - before
                <= worst_case_seconds(self.limits, can) + 0.5
            )
            made.append((self, can))

    monkeypatch.setattr(code_exec, "SandboxRun", Counted)
    verifier = CodeVerifier(limits=LIMITS, workers=1, judge=judge)
    verifier.score(program, problem)
    suite = parse_tests(problem)
    bound = JUDGES[judge].runs(suite)
    assert [can for _, can in made] == list(bound)  # the deadlines cover what the profile counts
    assert [sum(2 if "retried_from" in r else 1 for r in run.records) for run, _ in made] == list(bound)
    assert verifier.worst_case_seconds(problem) == sum(worst_case_seconds(LIMITS, n) for n in bound)


def test_taco_s_four_runs_of_a_test_are_within_its_stated_worst_case():
    # The report of the bound: time.sleep(1.6); sys.exit(1) on 4 tests at 2 s held a worker 26.8 s
    # where the stated bound was 10 s + 4 x 2.25 s = 19 s. Each test runs four times there.
    problem = {"input_output": json.dumps({"inputs": ["1\n"] * 4, "outputs": ["2\n"] * 4})}
    verifier = CodeVerifier(limits=Limits(time_seconds=2.0), workers=1)
    assert JUDGES["taco"].runs(parse_tests(problem)) == (9, 8)
    assert verifier.worst_case_seconds(problem) == 2 * START_SLACK + 17 * (2.0 + PER_TEST_SLACK) > 26.8


def test_a_sandbox_run_is_stopped_at_the_deadline_it_computed(monkeypatch):
    # What enforces the bound: past its deadline a run is stopped, whatever its tests' limits.
    monkeypatch.setattr(sandbox, "worst_case_seconds", lambda limits, runs: 1.0)
    with SandboxRun("import time\ntime.sleep(30)", [{"stdin": ""}], limits=Limits(time_seconds=30.0)) as run:
        assert list(run) == []
    assert run.failure_kind == "deadline"


def test_taco_an_early_failure_decides_though_later_tests_pass():
    # Test 0 exits with status 1 (and again when retried with files), the others pass: the wrapped
    # rerun does not apply, and the first failing test's runtime error is the verdict.
    program = "x = int(input())\nif x == 1:\n    raise SystemExit(1)\nprint(2 * x)"
    problem = {"input_output": json.dumps({"inputs": ["1\n", "2\n", "3\n"], "outputs": ["2\n", "4\n", "6\n"]})}
    result = CodeVerifier(limits=LIMITS, workers=1).score(program, problem)
    assert (result.reason, result.details["failed_test"], result.details["exit"]) == ("runtime_error", 0, 1)
    assert "all_exit_1" not in result.details


# -- 4. nothing carries from one test to the next --------------------------------------------------

LEAVES_A_CHILD = """
import os, time
for _ in range({children}):
    if os.fork() == 0:
        time.sleep(1000)
print(int(input()) * 2)
"""


@pytest.mark.parametrize("children, processes, tests", [(1, 16, 20), (3, 4, 4)])
def test_processes_left_by_a_test_do_not_count_against_the_next(children, processes, tests):
    limits = Limits(time_seconds=2.0, memory_mb=256, processes=processes, output_bytes=64 << 10, disk_mb=16)
    v = CodeVerifier(limits=limits, workers=1)
    suite = _stdin_tests(*[(f"{i}\n", str(2 * i)) for i in range(tests)])
    result = v.score(LEAVES_A_CHILD.format(children=children), suite)
    assert result.reason == "correct", result.details
    assert result.details["passed"] == tests


def test_files_written_by_a_test_are_gone_in_the_next(verifier):
    program = """
import os, tempfile
seen = sorted(os.listdir(".")) + sorted(os.listdir(tempfile.gettempdir()))
open("mark", "w").write("x")
os.makedirs("sub/dir", exist_ok=True)
os.chmod("sub", 0)
print("fresh" if not seen else "stale:" + ",".join(seen))
"""
    result = verifier.score(program, _stdin_tests(("", "fresh"), ("", "fresh"), ("", "fresh")))
    assert result.reason == "correct", result.details


# -- 5. the output cap counts bytes ----------------------------------------------------------------


@pytest.mark.parametrize("char, count", [("\U0001F600", 1_000_000), ("\x01", 1_000_000), ("\u00e9", 2_000_000)])
def test_large_non_ascii_output_under_the_cap_is_judged(char, count):
    # 4.0 MB of emoji, 1 MB of control characters, 4 MB of accented letters: each under the 4 MiB cap.
    limits = Limits(time_seconds=10.0, memory_mb=512)
    assert len((char * count).encode()) < limits.output_bytes
    v = CodeVerifier(limits=limits, workers=1)
    text = char * count
    program = f"import sys\nsys.stdout.write({char!r} * {count})"
    result = v.score(program, _stdin_tests(("", text), ("", text), ("", text)))
    assert result.reason == "correct", result.details
    past_cap = limits.output_bytes // len(char.encode()) + 1
    over = v.score(f"import sys\nsys.stdout.write({char!r} * {past_cap})", _stdin_tests(("", text)))
    assert over.reason == "output_limit"


# -- 6. what the program can see ---------------------------------------------------------------------


def test_no_third_party_packages_in_the_sandbox(verifier, namespaces):
    program = """
import os, sys, sysconfig
found = []
for base in sys.path + ["/usr/lib/python3", "/usr/local/lib/python3.%d" % sys.version_info[1]]:
    for name in ("site-packages", "dist-packages"):
        folder = os.path.join(base, name)
        if os.path.isdir(folder) and os.listdir(folder):
            found.append(folder)
purelib = sysconfig.get_paths(vars={"base": sys.base_prefix, "platbase": sys.base_prefix})["purelib"]
if os.path.isdir(purelib) and os.listdir(purelib):
    found.append(purelib)
print(found or "none")
"""
    result = verifier.score(program, _stdin_tests(("", "none")))
    assert result.reason == "correct", result.details


def test_the_supervisor_command_line_names_no_host_path(verifier, namespaces):
    program = """
import os
seen = []
for pid in os.listdir("/proc"):
    if pid.isdigit():
        try:
            seen.append(open(f"/proc/{pid}/cmdline", "rb").read().decode(errors="replace"))
        except OSError:
            pass
print(len(seen), "|".join(seen))
"""
    with SandboxRun(program, [{"stdin": ""}], limits=LIMITS) as run:
        (record,) = list(run)
    shown = record["stdout"]
    assert "harness" not in shown and "fade-sandbox" not in shown and "/src/" not in shown
    if namespaces["uid"] == "dropped":
        assert shown.startswith("1 ")  # the program's own process only: the supervisor is hidden


# -- 8. exit statuses and tracebacks are the program's ---------------------------------------------


@pytest.mark.parametrize("program, status, stderr", [
    ("exit(3)", 3, ""), ("import sys\nsys.exit(300)", 300 & 0xFF, ""), ("quit('bye')", 1, "bye"),
    ("raise SystemExit(-1)", 255, ""), ("import sys\nsys.exit(True)", 1, ""),
])
def test_exit_statuses_are_the_programs(program, status, stderr):
    with SandboxRun(program, [{"stdin": ""}], limits=LIMITS) as run:
        (record,) = list(run)
    assert record["exit"] == status
    assert record["status"]["exit_code"] == status
    assert record["stderr_tail"].strip() == stderr  # no traceback, as the interpreter prints none


def test_a_traceback_shows_the_programs_frames_only():
    for program, tests in [
        ("def f():\n    raise ValueError('x')\nf()", _stdin_tests(("", ""))),
        (
            "def g(n):\n    return 1 // n",
            {"input_output": json.dumps({"fn_name": "g", "inputs": [[0]], "outputs": [0]})},
        ),
    ]:
        suite = parse_tests(tests)
        with SandboxRun(program, [t.harness_input() for t in suite.cases], call=suite.call, limits=LIMITS) as run:
            (record,) = list(run)
        tail = record["stderr_tail"]
        assert "Traceback" in tail and "<solution>" in tail
        assert "harness" not in tail, tail


# -- supervisors forked by the zygote ------------------------------------------------------------


def test_the_program_sees_none_of_the_evaluators_environment(monkeypatch):
    monkeypatch.setenv("FADE_TEST_SECRET", "hunter2")
    program = (
        "import os\n"
        "try:\n"
        "    seen = open('/proc/self/environ', 'rb').read().count(b'hunter2')\n"
        "except OSError:\n"
        "    seen = 'unreadable'\n"
        "print(seen, ','.join(sorted(os.environ)))\n"
    )
    with SandboxRun(program, [{"stdin": ""}], limits=LIMITS) as run:
        (record,) = list(run)
    seen, names = record["stdout"].split()
    assert seen in ("0", "unreadable"), record
    assert set(names.split(",")) <= set(CLEAN_ENV) | {"HOME", "TMPDIR"}, names


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/status") as f:
            return not any(line.startswith("State:") and "Z" in line.split()[1] for line in f)
    except OSError:
        return False


def test_a_killed_evaluator_leaves_no_zygote_supervisor_or_folder(tmp_path):
    import os
    import signal
    import subprocess
    import sys

    script = tmp_path / "evaluator.py"
    script.write_text(
        "import time\n"
        "from fade.verifiers import sandbox\n"
        "run = sandbox.SandboxRun('import time\\ntime.sleep(60)', [{'stdin': ''}], "
        "limits=sandbox.Limits(time_seconds=30))\n"
        "run.start()\n"
        "zygote = sandbox._zygote.proc.pid if sandbox._zygote else 0\n"
        "print(run._root, zygote, run._proc.pid, flush=True)\n"
        "time.sleep(60)\n"
    )
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    root, zygote, supervisor = proc.stdout.readline().split()
    zygote, supervisor = int(zygote), int(supervisor)
    time.sleep(0.3)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and (os.path.exists(root) or _alive(supervisor) or (zygote and _alive(zygote))):
        time.sleep(0.05)
    assert not os.path.exists(root)
    assert not _alive(supervisor)
    assert not zygote or not _alive(zygote)
