"""``fade eval`` end to end on the shipped sample files: the report's numbers equal pass@k computed
by hand from the scores, an interrupted run resumes to the report an uninterrupted run writes,
the pass@k plot is drawn, and malformed input is a one-line error."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

import matplotlib.image
import pytest

from fade import pass_at_k
from fade.cli import main
from fade.plots import DPI, PASSK_SIZE_IN
from fade.verifiers.evaluate import curve_ks

SAMPLES = Path(__file__).resolve().parents[1] / "examples" / "samples"
MATH = SAMPLES / "math_aime.jsonl"
LCB = SAMPLES / "code_lcb.jsonl"
LCB_PROBLEMS = SAMPLES / "code_lcb_problems.jsonl"
TACO = SAMPLES / "code_taco.jsonl"
CODE_FLAGS = ["--time-limit", "1", "--memory-mb", "256"]


def _eval(capsys, *argv) -> tuple[int, str, str]:
    code = main(["eval", *map(str, argv), "--no-progress"])
    out, err = capsys.readouterr()
    return code, out, err


def _report(out: Path) -> dict:
    return json.loads((out / "report.json").read_text())


def _scores(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "scores.jsonl").read_text().splitlines()]


def _by_hand(scores: list[dict], ks) -> dict[str, float | None]:
    counts = defaultdict(lambda: [0, 0])
    for rec in scores:
        counts[json.dumps(rec["problem_id"])][0] += 1
        counts[json.dumps(rec["problem_id"])][1] += rec["score"] > 0
    out = {}
    for k in ks:
        vals = [pass_at_k(n, c, k) for n, c in counts.values() if n >= k]
        out[f"pass@{k}"] = sum(vals) / len(vals) if vals else None
    return out


def _comparable(report: dict) -> dict:
    return {k: v for k, v in report.items() if k not in ("label",)}


# -- math ----------------------------------------------------------------------------------------


def test_math_report_equals_pass_at_k_by_hand(capsys, tmp_path):
    out = tmp_path / "math"
    code, stdout, err = _eval(capsys, MATH, "--verifier", "math", "--k", "1,2,4,100", "--out", out, "--workers", "2")
    assert code == 0, err
    report = _report(out)
    scores = _scores(out)
    assert len(scores) == report["num_samples"] == 20 and report["num_problems"] == 5
    assert report["pass@k"] == pytest.approx(_by_hand(scores, (1, 2, 4)) | {"pass@100": None})
    assert report["pass@k"]["pass@100"] is None and report["problems_at_k"] == {"1": 5, "2": 5, "4": 5, "100": 0}
    # The sample file's design: 2, 2, 3, 2 and 0 of 4 samples right.
    rows = [json.loads(line) for line in (out / "problems.jsonl").read_text().splitlines()]
    assert [r["correct"] for r in rows] == [2, 2, 3, 2, 0]
    assert report["pass@k"]["pass@1"] == pytest.approx(9 / 20)
    assert [r["distinct_correct"] for r in rows] == [1, 1, 1, 1, 0]  # one value per problem, however written
    assert report["reasons"] == {"correct": 9, "empty": 1, "malformed": 1, "no_answer": 2, "wrong": 7}
    assert "pass@100 (0 problems)" in stdout and "n/a" in stdout
    image = matplotlib.image.imread(out / "passk.png")
    assert image.shape[:2] == (round(PASSK_SIZE_IN[1] * DPI), round(PASSK_SIZE_IN[0] * DPI))


def test_resume_after_a_limit_equals_an_uninterrupted_run(capsys, tmp_path):
    whole, parts = tmp_path / "whole", tmp_path / "parts"
    flags = ["--verifier", "math", "--k", "1,2,4", "--workers", "2", "--label", "run"]
    assert _eval(capsys, MATH, *flags, "--out", whole)[0] == 0
    code, stdout, _ = _eval(capsys, MATH, *flags, "--out", parts, "--limit", "7")
    assert code == 0 and "13 of 20 remain" in stdout
    assert len(_scores(parts)) == 7 and not (parts / "report.json").exists()
    assert _eval(capsys, MATH, *flags, "--out", parts, "--limit", "5")[0] == 0
    assert _eval(capsys, MATH, *flags, "--out", parts)[0] == 0
    scores = _scores(parts)
    assert len(scores) == 20 and len({(json.dumps(r["problem_id"]), r["sample"]) for r in scores}) == 20
    assert _report(parts) == _report(whole)
    assert (parts / "problems.jsonl").read_text() == (whole / "problems.jsonl").read_text()
    # A rerun of a finished folder scores nothing and rewrites the same report.
    before = (parts / "scores.jsonl").read_text()
    assert _eval(capsys, MATH, *flags, "--out", parts)[0] == 0
    assert (parts / "scores.jsonl").read_text() == before and _report(parts) == _report(whole)


# -- code ----------------------------------------------------------------------------------------


def test_livecodebench_samples_with_a_problems_file(capsys, tmp_path):
    out = tmp_path / "lcb"
    code, stdout, err = _eval(capsys, LCB, "--problems", LCB_PROBLEMS, "--verifier", "code", "--k", "1,2,4",
                              "--out", out, *CODE_FLAGS)
    assert code == 0, err
    report, scores = _report(out), _scores(out)
    assert report["pass@k"] == pytest.approx(_by_hand(scores, (1, 2, 4)))
    rows = {r["problem_id"]: r for r in map(json.loads, (out / "problems.jsonl").read_text().splitlines())}
    assert rows["lcb-sum"]["correct"] == 3 and rows["lcb-sum"]["distinct_correct"] == 2  # a reformatted copy is not new
    assert rows["lcb-two-sum"]["correct"] == 2 and rows["lcb-two-sum"]["distinct_correct"] == 2
    assert rows["lcb-sum"]["reasons"] == {"correct": 3, "time_limit": 1, "wrong_answer": 1}
    assert rows["lcb-max-count"]["reasons"] == {"compile_error": 1, "correct": 1, "runtime_error": 1, "wrong_answer": 1}
    assert set(report["sandbox"]["modes"]) <= {"namespaces", "user-namespaces", "none"}
    assert "sandbox" in stdout


def test_taco_and_codecontests_samples_and_comparison_plot(capsys, tmp_path):
    first, second = tmp_path / "lcb", tmp_path / "taco"
    assert (
        _eval(capsys, LCB, "--problems", LCB_PROBLEMS, "--verifier", "code", "--k", "1,4", "--out", first, *CODE_FLAGS)[
            0
        ]
        == 0
    )
    code, _, err = _eval(
        capsys, TACO, "--verifier", "code", "--k", "1,3", "--out", second, "--compare", first, *CODE_FLAGS
    )
    assert code == 0, err
    report = _report(second)
    rows = {r["problem_id"]: r for r in map(json.loads, (second / "problems.jsonl").read_text().splitlines())}
    assert {k: r["correct"] for k, r in rows.items()} == {"taco-reverse": 2, "taco-add": 2, "cc-div3": 1}
    assert report["pass@k"]["pass@1"] == pytest.approx(5 / 9)
    assert report["curve"]["k"] == curve_ks(3) == [1, 2, 3]
    assert matplotlib.image.imread(second / "passk.png").shape[0] > 0


def test_resume_after_a_kill_equals_an_uninterrupted_run(capsys, tmp_path):
    # A larger file (the LiveCodeBench samples three times, with their slow ones) so the run lasts
    # long enough to be killed partway.
    problems = [json.loads(line) for line in LCB_PROBLEMS.read_text().splitlines()]
    samples = [json.loads(line) for line in LCB.read_text().splitlines()]
    lines = []
    for copy in range(3):
        for s in samples:
            lines.append({**s, "question_id": f"{s['question_id']}-{copy}"})
    big = tmp_path / "big.jsonl"
    big.write_text("".join(json.dumps(r) + "\n" for r in lines))
    big_problems = tmp_path / "big_problems.jsonl"
    big_problems.write_text("".join(json.dumps({**p, "question_id": f"{p['question_id']}-{c}"}) + "\n"
                                    for c in range(3) for p in problems))
    flags = [
        "--problems",
        big_problems,
        "--verifier",
        "code",
        "--k",
        "1,2,4",
        "--workers",
        "1",
        "--label",
        "run",
        *CODE_FLAGS,
    ]
    killed, whole = tmp_path / "killed", tmp_path / "whole"

    command = [sys.executable, "-m", "fade", "eval", str(big), *map(str, flags), "--out", str(killed), "--no-progress"]
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    deadline = time.monotonic() + 120
    scores = killed / "scores.jsonl"
    while time.monotonic() < deadline and proc.poll() is None:
        if scores.exists() and len(scores.read_text().splitlines()) >= 8:
            break
        time.sleep(0.02)
    assert proc.poll() is None, "the run finished before it could be interrupted"
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    proc.stderr.close()
    partial = len(scores.read_text().splitlines())
    assert 8 <= partial < len(lines)
    with scores.open("a") as f:
        f.write('{"problem_id": "lcb-sum-0", "sample": 9, "sco')  # a write torn by the kill

    assert _eval(capsys, big, *flags, "--out", killed)[0] == 0
    assert _eval(capsys, big, *flags, "--out", whole)[0] == 0
    final = _scores(killed)
    assert len(final) == len(lines) and len({(r["problem_id"], r["sample"]) for r in final}) == len(lines)
    assert _comparable(_report(killed)) == _comparable(_report(whole))
    assert (killed / "problems.jsonl").read_text() == (whole / "problems.jsonl").read_text()


# -- mistakes ----------------------------------------------------------------------------------


def _assert_error(capsys, argv, *needles) -> str:
    code, _, err = _eval(capsys, *argv)
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("fade: error: ") and "Traceback" not in err
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


def _write(path: Path, rows) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


def test_bad_input_is_a_one_line_error(capsys, tmp_path):
    out = tmp_path / "out"
    math = ["--verifier", "math", "--out", out]
    _assert_error(capsys, [tmp_path / "missing.jsonl", *math], "no such file")
    _assert_error(capsys, [_write(tmp_path / "a.jsonl", ["{not json"]), *math], "a.jsonl:1", "not valid JSON")
    _assert_error(
        capsys, [_write(tmp_path / "b.jsonl", [{"completion": "x", "answer": "1"}]), *math], "b.jsonl:1", "problem id"
    )
    _assert_error(
        capsys, [_write(tmp_path / "c.jsonl", [{"id": 1, "answer": "1"}]), *math], "c.jsonl:1", "'completion'"
    )
    _assert_error(
        capsys, [_write(tmp_path / "d.jsonl", [{"id": 1, "completion": "x"}]), *math], "d.jsonl:1", "gold answer"
    )
    _assert_error(capsys, [_write(tmp_path / "e.jsonl", [{"id": 1, "completion": "x", "answer": "1"},
                                                          {"id": 1, "completion": "y", "answer": "2"}]), *math],
                  "e.jsonl:2", "different reference")
    _assert_error(
        capsys,
        [_write(tmp_path / "f.jsonl", [{"id": 1, "completion": "x", "tests": []}]), "--verifier", "code", "--out", out],
        "f.jsonl:1",
        "no test cases",
    )
    _assert_error(
        capsys,
        [
            _write(tmp_path / "g.jsonl", [{"id": 9, "completion": "x"}]),
            "--problems",
            _write(tmp_path / "p.jsonl", [{"id": 1, "answer": "1"}]),
            *math,
        ],
        "g.jsonl:1",
        "not in --problems",
    )
    _assert_error(capsys, [MATH, *math, "--k", "1,zero"], "--k", "'zero'")
    _assert_error(capsys, [MATH, *math, "--k", "0"], ">= 1")
    _assert_error(capsys, [MATH, *math, "--compare", tmp_path], "--compare", "report.json")
    _assert_error(capsys, [MATH, "--verifier", "maths", "--out", out], "invalid choice")


def test_resume_refuses_other_settings_or_changed_samples(capsys, tmp_path):
    out = tmp_path / "out"
    samples = _write(
        tmp_path / "s.jsonl",
        [
            {"id": 1, "completion": "print(1)", "tests": [{"input": "", "output": "1"}]},
            {"id": 1, "completion": "print(2)", "tests": [{"input": "", "output": "1"}]},
        ],
    )
    assert _eval(capsys, samples, "--verifier", "code", "--out", out, "--limit", "1", *CODE_FLAGS)[0] == 0
    _assert_error(capsys, [samples, "--verifier", "code", "--out", out, "--time-limit", "2"], "other settings")
    _assert_error(capsys, [samples, "--verifier", "math", "--out", out], "other settings")
    _write(samples, [{"id": 1, "completion": "print(3)", "tests": [{"input": "", "output": "1"}]}])
    _assert_error(
        capsys,
        [samples, "--verifier", "code", "--out", out, *CODE_FLAGS],
        "different completion",
        "samples file changed",
    )


def test_an_empty_completions_list_adds_no_problem_and_the_report_is_written(capsys, tmp_path):
    tests = [{"input": "", "output": "1"}]
    samples = _write(tmp_path / "s.jsonl", [{"id": 1, "completions": [], "tests": tests},
                                            {"id": 2, "completions": ["print(1)", "print(2)"], "tests": tests}])
    out = tmp_path / "out"
    code, _, err = _eval(capsys, samples, "--verifier", "code", "--out", out, "--k", "1", *CODE_FLAGS)
    assert code == 0, err
    report = _report(out)
    assert report["num_problems"] == 1 and report["num_samples"] == 2
    assert report["pass@k"]["pass@1"] == 0.5
    _assert_error(capsys, [_write(tmp_path / "e.jsonl", [{"id": 1, "completions": [], "tests": tests}]),
                           "--verifier", "code", "--out", tmp_path / "out2"], "e.jsonl", "no samples")


def test_unreadable_lines_are_errors_that_name_file_and_line(capsys, tmp_path):
    math = ["--verifier", "math", "--out", tmp_path / "out"]
    good = json.dumps({"id": 1, "completion": "x", "answer": "1"}).encode()
    latin = tmp_path / "latin.jsonl"
    latin.write_bytes(good + b"\n" + b'{"id": 2, "completion": "caf\xe9", "answer": "1"}\n')
    _assert_error(capsys, [latin, *math], "latin.jsonl:2", "not UTF-8", "0xe9")
    huge = tmp_path / "huge.jsonl"
    huge.write_bytes(good + b"\n" + b'{"id": 2, "completion": "x", "answer": ' + b"1" * 5000 + b"}\n")
    _assert_error(capsys, [huge, *math], "huge.jsonl:2", "4300")
    deep = tmp_path / "deep.jsonl"
    deep.write_bytes(b'{"id": 2, "completion": "x", "answer": ' + b"[" * 100_000 + b"]" * 100_000 + b"}\n")
    _assert_error(capsys, [deep, *math], "deep.jsonl:1", "nested deeper than Python's JSON parser reads")


def test_a_score_is_reused_only_against_the_same_reference(capsys, tmp_path):
    out = tmp_path / "out"
    samples = _write(
        tmp_path / "s.jsonl", [{"problem_id": "a", "completion": "print(7)", "tests": [{"input": "", "output": "7"}]}]
    )
    code, _, err = _eval(capsys, samples, "--verifier", "code", "--out", out, "--k", "1", *CODE_FLAGS)
    assert code == 0 and _report(out)["pass@k"]["pass@1"] == 1.0, err
    # The same completion, the expected output changed: the old score must not be reused.
    _write(samples, [{"problem_id": "a", "completion": "print(7)", "tests": [{"input": "", "output": "8"}]}])
    _assert_error(capsys, [samples, "--verifier", "code", "--out", out, "--k", "1", *CODE_FLAGS],
                  "problem \"a\" sample 0", "gold answer or tests", "changed")
    fresh = tmp_path / "fresh"
    assert _eval(capsys, samples, "--verifier", "code", "--out", fresh, "--k", "1", *CODE_FLAGS)[0] == 0
    assert _report(fresh)["pass@k"]["pass@1"] == 0.0
    # A reference from --problems: changing that file is noticed too.
    bare = _write(tmp_path / "bare.jsonl", [{"problem_id": "a", "completion": "print(7)"}])
    problems = _write(tmp_path / "p.jsonl", [{"problem_id": "a", "tests": [{"input": "", "output": "7"}]}])
    via = tmp_path / "via"
    assert _eval(capsys, bare, "--problems", problems, "--verifier", "code", "--out", via, *CODE_FLAGS)[0] == 0
    _write(problems, [{"problem_id": "a", "tests": [{"input": "", "output": "7"}, {"input": "", "output": "9"}]}])
    _assert_error(capsys, [bare, "--problems", problems, "--verifier", "code", "--out", via, *CODE_FLAGS], "changed")


def test_scores_without_a_reference_hash_are_not_reused(capsys, tmp_path):
    out = tmp_path / "out"
    samples = _write(
        tmp_path / "s.jsonl", [{"id": 1, "completion": "print(1)", "tests": [{"input": "", "output": "1"}]}]
    )
    assert _eval(capsys, samples, "--verifier", "code", "--out", out, *CODE_FLAGS)[0] == 0
    recs = _scores(out)
    for rec in recs:
        del rec["reference_sha"]
    (out / "scores.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    _assert_error(capsys, [samples, "--verifier", "code", "--out", out, *CODE_FLAGS], "no reference hash")


def test_a_second_run_on_the_same_folder_is_refused(capsys, tmp_path):
    from fade.verifiers.evaluate.store import folder_lock

    out = tmp_path / "out"
    out.mkdir()
    samples = _write(
        tmp_path / "s.jsonl", [{"id": 1, "completion": "print(1)", "tests": [{"input": "", "output": "1"}]}]
    )
    with folder_lock(out):
        _assert_error(capsys, [samples, "--verifier", "code", "--out", out, *CODE_FLAGS],
                      "being written by another fade eval", f"pid {os.getpid()}")
    assert not (out / "scores.jsonl").exists()
    # Released (as the kernel releases it when a run is killed): the next run goes ahead.
    assert _eval(capsys, samples, "--verifier", "code", "--out", out, *CODE_FLAGS)[0] == 0
    assert len(_scores(out)) == 1


# -- files fade eval did not write, and settings it cannot honour ---------------------------------

ONE = [{"id": 1, "completion": "print(1)", "tests": [{"input": "", "output": "1"}]}]
FOREIGN = "".join(json.dumps({"id": i, "text": f"another tool's line {i}"}) + "\n" for i in range(5))


def test_a_foreign_or_damaged_scores_file_is_refused_and_left_as_it_was(capsys, tmp_path):
    samples = _write(tmp_path / "s.jsonl", ONE)
    out = tmp_path / "out"
    assert _eval(capsys, samples, "--verifier", "code", "--out", out, *CODE_FLAGS)[0] == 0
    good = (out / "scores.jsonl").read_text()
    for content, needles in [
        (FOREIGN, ["scores.jsonl:1", "not a fade eval score line"]),
        (good + FOREIGN, ["scores.jsonl:2", "problem_id None"]),
        (good.replace('"score": 1.0', '"score": "1"'), ["scores.jsonl:1", "score '1'"]),
        (good.replace('"score": 1.0', '"score": null'), ["scores.jsonl:1", "score None"]),
        (good.replace('"reason": "correct", ', ""), ["scores.jsonl:1", "reason None"]),
        (good + "garbage without a newline", ["scores.jsonl:2", "unterminated"]),
    ]:
        (out / "scores.jsonl").write_text(content)
        _assert_error(capsys, [samples, "--verifier", "code", "--out", out, *CODE_FLAGS], *needles)
        assert (out / "scores.jsonl").read_text() == content  # not truncated, not appended to
    # Another tool's file in a folder fade eval never wrote: no run.json, so nothing is assumed.
    other = tmp_path / "other"
    other.mkdir()
    (other / "scores.jsonl").write_text(FOREIGN)
    _assert_error(capsys, [samples, "--verifier", "code", "--out", other, *CODE_FLAGS], "scores.jsonl", "no run.json")
    assert (other / "scores.jsonl").read_text() == FOREIGN and not (other / "run.json").exists()


@pytest.mark.parametrize("name", ["scores.jsonl", ".lock", "run.json"])
def test_links_in_the_output_folder_are_never_followed(capsys, tmp_path, name):
    samples = _write(tmp_path / "s.jsonl", ONE)
    out = tmp_path / "out"
    assert _eval(capsys, samples, "--verifier", "code", "--out", out, "--limit", "0", *CODE_FLAGS)[0] == 0
    target = tmp_path / "precious.txt"
    target.write_text((out / name).read_text() if name == "run.json" else "keep me\n")
    before = target.read_text()
    (out / name).unlink(missing_ok=True)
    (out / name).symlink_to(target)
    _assert_error(capsys, [samples, "--verifier", "code", "--out", out, *CODE_FLAGS], name, "symbolic link")
    assert target.read_text() == before
    (out / name).unlink()
    os.link(target, out / name)  # a hard link: writing through it would change the other name too
    _assert_error(capsys, [samples, "--verifier", "code", "--out", out, *CODE_FLAGS], name, "hard link")
    assert target.read_text() == before


def test_a_foreign_lock_file_is_refused_and_left_as_it_was(capsys, tmp_path):
    samples = _write(tmp_path / "s.jsonl", ONE)
    out = tmp_path / "out"
    out.mkdir()
    (out / ".lock").write_text("my notes\n")
    _assert_error(capsys, [samples, "--verifier", "code", "--out", out, *CODE_FLAGS], ".lock", "not the process id")
    assert (out / ".lock").read_text() == "my notes\n"


def test_a_deleted_run_json_does_not_disable_the_settings_check(capsys, tmp_path):
    samples = _write(tmp_path / "s.jsonl", [{"id": 1, "completion": "We get \\boxed{3} or so", "answer": "3"}])
    out = tmp_path / "out"
    assert _eval(capsys, samples, "--verifier", "math", "--out", out, "--answer-mode", "any")[0] == 0
    (out / "run.json").unlink()
    _assert_error(capsys, [samples, "--verifier", "math", "--out", out, "--answer-mode", "final"], "no run.json")
    (out / "run.json").write_text("{not json")
    _assert_error(capsys, [samples, "--verifier", "math", "--out", out, "--answer-mode", "final"],
                  "run.json", "not a fade eval run file")


@pytest.mark.parametrize("flags, needles", [
    (["--verifier", "math", "--timeout", "1e12"], ["timeout must be", "86400", "1000000000000.0"]),
    (["--verifier", "math", "--timeout", "inf"], ["timeout must be", "inf"]),
    (["--verifier", "code", "--time-limit", "1e12"], ["time_seconds must be at most 86400", "1000000000000.0"]),
    (["--verifier", "code", "--memory-mb", str(2 ** 60)], ["memory_mb must be at most"]),
    (["--verifier", "code", "--float-tolerance", "nan"], ["float_tolerance"]),
])
def test_settings_are_refused_before_anything_is_written(capsys, tmp_path, flags, needles):
    samples = _write(tmp_path / "s.jsonl", [{**ONE[0], "answer": "1"}])
    out = tmp_path / "out"
    _assert_error(capsys, [samples, *flags, "--out", out], *needles)
    assert not out.exists()


def test_a_truncated_gzip_samples_file_is_a_one_line_error(capsys, tmp_path):
    import gzip

    data = gzip.compress("".join(json.dumps({**ONE[0], "id": i}) + "\n" for i in range(200)).encode())
    cut = tmp_path / "s.jsonl.gz"
    cut.write_bytes(data[: len(data) // 2])
    _assert_error(capsys, [cut, "--verifier", "code", "--out", tmp_path / "out", *CODE_FLAGS], "s.jsonl.gz",
                  "cut off or damaged")
    cut.write_bytes(b"\x1f\x8b" + b"\x00" * 40)
    _assert_error(capsys, [cut, "--verifier", "code", "--out", tmp_path / "out", *CODE_FLAGS], "s.jsonl.gz",
                  "cut off or damaged")


def test_a_compare_report_that_cannot_be_drawn_is_refused_before_scoring(capsys, tmp_path):
    samples = _write(tmp_path / "s.jsonl", ONE)
    earlier = tmp_path / "earlier"
    assert _eval(capsys, samples, "--verifier", "code", "--out", earlier, "--k", "1", *CODE_FLAGS)[0] == 0
    report = _report(earlier)
    for broken, needle in [({k: v for k, v in report.items() if k != "pass@k"}, "pass@k"),
                           ({**report, "pass@k": {"pass@one": 1.0}}, "pass@k"),
                           ({**report, "curve": {"k": [1, 2], "pass@k": [1.0]}}, "curve")]:
        (earlier / "report.json").write_text(json.dumps(broken))
        out = tmp_path / "out"
        _assert_error(capsys, [samples, "--verifier", "code", "--out", out, "--compare", earlier, *CODE_FLAGS],
                      "not a fade eval report", needle)
        assert not out.exists()
