"""Verdicts a hostile or unlucky program must not be able to bend: numbers compared by the
expected value's kind, one sample's bounded hold on a worker, nothing carried from one test to
the next, output counted in bytes, a standard library without site-packages, the supervisor
hidden from the program, exit statuses as the program chose them, and eval scores reused only
for the reference they were made against."""

from __future__ import annotations

import json
import time

import pytest

from fade.verifiers.code_exec import CodeVerifier
from fade.verifiers.sandbox import (
    CLEAN_ENV,
    PER_TEST_SLACK,
    START_SLACK,
    Limits,
    SandboxRun,
    worst_case_seconds,
)
from fade.verifiers.testcases import outputs_match, parse_tests, values_match

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
        ("def g(n):\n    return 1 // n", {"input_output": json.dumps({"fn_name": "g", "inputs": [[0]], "outputs": [0]})}),
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
        "run = sandbox.SandboxRun('import time\\ntime.sleep(60)', [{'stdin': ''}], limits=sandbox.Limits(time_seconds=30))\n"
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
