"""``fade eval``: score a file of generated samples, incrementally and resumably, and report
pass@k, per-problem solve rates and distinct correct solutions.

Input: JSON lines, one sample each, from any generator. A line holds the problem's id
(``problem_id``, ``id``, ``question_id`` or ``task_id``; a string or an integer), the sample's
text (``completion``, or ``completions``: a list, one sample each) and the reference: a math
answer (``answer``, ``gold``, ``ground_truth`` or ``solution``) or the tests (any field
:mod:`fade.verifiers.testcases` reads). With ``problems=FILE`` the reference is read from a
problems file keyed by the same id instead, and a sample's own fields take precedence. A sample's
index is its position among its problem's samples in the file, so (problem, index) names it. A
line with ``"completions": []`` adds no samples; a problem with none is left out of the report.
The file is read as UTF-8 JSON lines; anything unreadable is an error naming its file and line.

Output, in the output folder:

- ``scores.jsonl``: one line per scored sample (problem_id, sample, completion_sha,
  reference_sha, score, reason, canonical, details), appended and flushed as each finishes. A
  rerun reads it and scores only what is missing; a last line torn by a kill is dropped and
  scored again, and any other line that is not a score line (another tool's file, a damaged one)
  is an error naming it, with the file left as it was. A score is reused only for the same completion against the same reference: a line
  whose completion_sha or reference_sha (the hash of the problem's gold answer or tests, from
  the samples file and ``--problems`` together) differs from the sample's is an error naming
  what changed, as is a line for a sample the file no longer has.
- ``.lock``: held while a run writes the folder; a second run on the same folder is refused.
- ``run.json``: the settings results depend on (verifier, timeout or limits, tolerance); a rerun
  with other settings is refused rather than mixing scores, and so is a folder with scores or a
  report but no run.json (deleted: the settings are unknown) or a damaged one.

fade eval writes only to files it made: a scores.jsonl, run.json or .lock that is a symbolic
link, a hard link or not a regular file is refused, never truncated, appended to or followed.
Every setting is checked before anything is read or written.
- ``report.json``, ``problems.jsonl`` and ``passk.png``, written once every sample is scored.

pass@k is the unbiased estimator (:func:`fade.pass_at_k`) averaged over problems. A problem with
fewer than k samples has no unbiased pass@k: it is left out of that k, and the report gives, per
k, how many problems were averaged (``problems_at_k``); a k that no problem reaches is null.
"""

from __future__ import annotations

import contextlib
import fcntl
import gzip
import hashlib
import json
import math
import os
import stat
import zlib
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from fade.atomic import atomic_write
from fade.passk import pass_at_k
from fade.progress import step_bar

from .code_exec import CodeVerifier
from .judges import JUDGES, judge_for
from .math_answer import MathVerifier, math_backend
from .result import VerifierResult
from .sandbox import Limits
from .testcases import CHECK_FIELDS, TEST_FIELDS, parse_tests

__all__ = ["EvalConfig", "EvalOutcome", "ID_FIELDS", "draw_passk", "evaluate", "load_report", "read_samples"]

ID_FIELDS = ("problem_id", "id", "question_id", "task_id")
GOLD_FIELDS = ("answer", "gold", "ground_truth", "solution")
VERIFIERS = ("math", "code")
SCORES, RUN, REPORT, PROBLEMS, PASSK_PNG = "scores.jsonl", "run.json", "report.json", "problems.jsonl", "passk.png"
LOCK = ".lock"
PASSK_DPI = 100
PASSK_SIZE_IN = (7.0, 4.5)

K_POLICY = (
    "pass@k is the unbiased estimator 1 - C(n-c, k)/C(n, k) averaged over the problems with at least k "
    "samples; problems with fewer samples are left out of that k (problems_at_k counts those averaged) "
    "and a k that no problem reaches is null"
)


@dataclass(frozen=True)
class Sample:
    problem: str  # the problem id as JSON text, so 1 and "1" stay distinct
    problem_id: Any
    index: int
    completion: str
    sha: str
    where: str
    reference_sha: str = ""


@dataclass
class EvalConfig:
    """Everything ``fade eval`` takes."""

    samples: str
    out: str
    verifier: str
    ks: tuple[int, ...] = (1, 10, 100)
    problems: str | None = None
    workers: int | None = None
    timeout: float = 5.0  # math: seconds per sample
    math: dict[str, Any] = field(default_factory=dict)  # math: MathVerifier's answer_mode and math-verify settings
    limits: Limits | dict[str, Any] | None = None  # code: per-test limits, or fields replacing each judge's defaults
    judge: str = "auto"  # code: the judging profile, or "auto" (from each problem's format)
    float_tolerance: float = 1e-6
    limit: int | None = None  # score at most this many new samples, then stop
    compare: tuple[str, ...] = ()  # earlier output folders to draw on the same pass@k plot
    label: str | None = None
    progress: bool = True

    def math_verifier(self, workers: int = 1) -> MathVerifier:
        """The math verifier these settings describe (validated; its workers start on first use)."""
        return MathVerifier(timeout=self.timeout, workers=workers, **self.math)

    def settings(self) -> dict[str, Any]:
        """What the scores depend on; a resumed run must have the same."""
        if self.verifier == "math":
            return {"verifier": "math", "timeout": self.timeout, **self.math_verifier().settings()}
        limits = self.limits.to_dict() if isinstance(self.limits, Limits) else {"judge_defaults_with": self.limits or {}}
        return {"verifier": "code", "judge": self.judge, "limits": limits,
                "float_tolerance": self.float_tolerance}


@dataclass
class EvalOutcome:
    complete: bool
    scored_now: int
    total: int
    remaining: int
    report: dict[str, Any] | None
    written: list[Path]


# -- reading -------------------------------------------------------------------------------------


def _read_jsonl(path: str | Path, what: str) -> Iterator[tuple[int, dict]]:
    p = Path(path)
    if not p.is_file():
        raise ValueError(f"{what} {path}: no such file")
    # bytes, so that a bad byte is reported with its line, not by the reader; a .gz file (HumanEval
    # ships HumanEval.jsonl.gz) is read as it ships.
    with (gzip.open(p, "rb") if p.suffix == ".gz" else p.open("rb")) as f:
        for lineno, raw in _numbered_lines(f, path):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise ValueError(f"{path}:{lineno}: not UTF-8 (byte {raw[exc.start]:#04x} at column {exc.start + 1}); "
                                 "expected JSON lines in UTF-8") from None
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path}:{lineno}: not valid JSON ({exc.msg} at column {exc.colno})") from None
            except ValueError as exc:  # e.g. an integer past Python's 4300-digit conversion limit
                raise ValueError(f"{path}:{lineno}: a value JSON cannot be read into Python ({exc})") from None
            except RecursionError:
                raise ValueError(f"{path}:{lineno}: JSON nested too deeply to read") from None
            if not isinstance(obj, dict):
                raise ValueError(f"{path}:{lineno}: expected a JSON object, got {type(obj).__name__}")
            yield lineno, obj


def _numbered_lines(f: Any, path: str | Path) -> Iterator[tuple[int, bytes]]:
    """The lines of ``f`` numbered from 1; a .gz stream cut off or damaged is an error naming the file."""
    lineno = 0
    while True:
        try:
            raw = f.readline()
        except (EOFError, OSError, zlib.error) as exc:  # gzip.BadGzipFile is an OSError
            raise ValueError(f"{path}: the compressed file is cut off or damaged after line {lineno} ({exc}); "
                             "expected a complete .gz file") from None
        if not raw:
            return
        lineno += 1
        yield lineno, raw


def _problem_id(obj: dict, where: str) -> Any:
    for key in ID_FIELDS:
        if key in obj:
            pid = obj[key]
            if isinstance(pid, bool) or not isinstance(pid, (str, int)):
                raise ValueError(f"{where}: {key!r} must be a string or an integer, got {pid!r}")
            return pid
    raise ValueError(f"{where}: no problem id: expected one of the keys {', '.join(ID_FIELDS)}")


def _reference(obj: dict, verifier: str) -> dict[str, Any]:
    if verifier == "math":
        return {k: obj[k] for k in GOLD_FIELDS if obj.get(k) is not None}
    keys = (*TEST_FIELDS, "metadata", "func_name", "fn_name")
    if obj.get("entry_point") is not None or obj.get("test_list") is not None:
        keys += CHECK_FIELDS  # a HumanEval or MBPP problem: its prompt and entry point are part of the program
    return {k: obj[k] for k in keys if obj.get(k) is not None}


def _gold(ref: dict[str, Any], verifier: str, where: str, judge: str = "auto") -> Any:
    if verifier == "math":
        for key in GOLD_FIELDS:
            if key in ref:
                value = ref[key]
                if isinstance(value, bool) or not isinstance(value, (str, int, float)) or not str(value).strip():
                    raise ValueError(f"{where}: {key!r} must be a non-empty string or a number, got {value!r}")
                return str(value)
        raise ValueError(f"{where}: no gold answer: expected one of the keys {', '.join(GOLD_FIELDS)} (or --problems FILE)")
    if not any(k in ref for k in TEST_FIELDS):
        raise ValueError(f"{where}: no tests: expected one of the keys {', '.join(TEST_FIELDS)} (or --problems FILE)")
    try:
        suite = parse_tests(ref)
        judge_for(suite, judge)  # a judge that cannot read the problem is refused before anything runs
        return suite
    except ValueError as exc:
        raise ValueError(f"{where}: {exc}") from None


def _reference_sha(ref: dict[str, Any]) -> str:
    """A hash of a problem's reference fields as read (gold answer or tests, with metadata)."""
    text = json.dumps(ref, sort_keys=True, ensure_ascii=False, default=repr)
    return hashlib.sha256(text.encode("utf-8", errors="surrogatepass")).hexdigest()[:16]


def read_samples(path: str | Path, verifier: str, problems: str | Path | None = None, judge: str = "auto"
                 ) -> tuple[list[Sample], dict[str, Any], list[str]]:
    """The samples of a file, each problem's reference (a gold answer or a :class:`TestSuite`),
    and the problems in order of first appearance. Raises ValueError naming the file and line
    of anything malformed, before anything is scored."""
    if verifier not in VERIFIERS:
        raise ValueError(f"unknown verifier {verifier!r}: expected one of {', '.join(VERIFIERS)}")
    known: dict[str, tuple[dict, str]] = {}
    if problems is not None:
        for lineno, obj in _read_jsonl(problems, "--problems"):
            where = f"{problems}:{lineno}"
            key = json.dumps(_problem_id(obj, where))
            if key in known:
                raise ValueError(f"{where}: problem {key} is listed twice (first at {known[key][1]})")
            known[key] = (_reference(obj, verifier), where)
    samples: list[Sample] = []
    refs: dict[str, Any] = {}
    ref_source: dict[str, tuple[dict, str]] = {}
    ref_shas: dict[str, str] = {}
    counts: Counter[str] = Counter()
    order: list[str] = []
    for lineno, obj in _read_jsonl(path, "samples file"):
        where = f"{path}:{lineno}"
        pid = _problem_id(obj, where)
        key = json.dumps(pid)
        if "completion" in obj:
            texts = [obj["completion"]]
        elif isinstance(obj.get("completions"), list):
            texts = obj["completions"]
        else:
            raise ValueError(f"{where}: no sample: expected 'completion' (text) or 'completions' (a list of texts)")
        for text in texts:
            if not isinstance(text, str):
                raise ValueError(f"{where}: a completion must be text, got {type(text).__name__}")
        own = _reference(obj, verifier)
        ref = {**known[key][0], **own} if key in known else own
        if not ref and problems is not None and key not in known:
            raise ValueError(f"{where}: problem {key} is not in --problems {problems} and the line has no reference of its own")
        if key not in ref_source:
            order.append(key)
            ref_source[key] = (ref, where)
            refs[key] = _gold(ref, verifier, where, judge)
            ref_shas[key] = _reference_sha(ref)
        elif ref != ref_source[key][0]:
            raise ValueError(f"{where}: problem {key} has a different reference than at {ref_source[key][1]}")
        for text in texts:
            sha = hashlib.sha256(text.encode("utf-8", errors="surrogatepass")).hexdigest()[:16]
            samples.append(Sample(key, pid, counts[key], text, sha, where, ref_shas[key]))
            counts[key] += 1
    if not samples:
        raise ValueError(f"{path}: no samples (the file has no non-blank lines, or only empty 'completions' lists)")
    # A problem whose lines hold no samples ("completions": []) has no solve rate: leave it out.
    return samples, refs, [key for key in order if counts[key]]


# -- scores.jsonl --------------------------------------------------------------------------------


# Every line fade eval writes to scores.jsonl starts so; a torn last line is dropped only if it does.
_SCORE_LINE_START = b'{"problem_id": '


def _own_file(path: Path, what: str) -> bool:
    """Whether ``path`` exists; refuses anything but a regular file with one name (a symbolic link,
    a hard link to a file elsewhere, a folder, a pipe): fade eval writes only to files it made."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return False
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISREG(info.st_mode) or info.st_nlink != 1:
        kind = "a symbolic link" if stat.S_ISLNK(info.st_mode) else (
            "not a regular file" if not stat.S_ISREG(info.st_mode) else "a hard link to a file elsewhere")
        raise ValueError(f"{path} is {kind}, not the {what} fade eval writes: it is left alone; "
                         "choose another --out (or remove it)")
    return True


def _score_record_problem(rec: Any) -> str | None:
    """What is wrong with ``rec`` as a line of fade eval's scores.jsonl, or None."""
    if not isinstance(rec, dict):
        return f"a JSON {type(rec).__name__}, not an object"
    pid, sample, score = rec.get("problem_id"), rec.get("sample"), rec.get("score")
    if isinstance(pid, bool) or not isinstance(pid, (str, int)):
        return f"problem_id {pid!r} is not a string or an integer"
    if isinstance(sample, bool) or not isinstance(sample, int) or sample < 0:
        return f"sample {sample!r} is not an integer >= 0"
    if isinstance(score, bool) or not isinstance(score, (int, float)) or not 0 <= score <= 1:
        return f"score {score!r} is not a number in [0, 1]"
    if not isinstance(rec.get("reason"), str):
        return f"reason {rec.get('reason')!r} is not text"
    if not isinstance(rec.get("canonical"), (str, type(None))):
        return f"canonical {rec.get('canonical')!r} is not text or null"
    if not isinstance(rec.get("details", {}), dict):
        return f"details {rec.get('details')!r} is not an object"
    return None


def _load_scores(path: Path) -> dict[tuple[str, int], dict]:
    """The scores already written, keyed by (problem, sample). A last line torn by a kill (no
    newline, the start of a score line) is cut off; any other line that is not a score line is an
    error naming it, and nothing is changed: the file is not fade eval's, or it was damaged."""
    if not _own_file(path, "scores file"):
        return {}
    fd = os.open(path, os.O_RDWR | os.O_NOFOLLOW)
    with os.fdopen(fd, "r+b") as f:
        data = f.read()
        scores: dict[tuple[str, int], dict] = {}
        good = 0
        for lineno, line in enumerate(data.splitlines(keepends=True), start=1):
            if not line.endswith(b"\n"):
                if not line.startswith(_SCORE_LINE_START):
                    raise ValueError(f"{path}:{lineno}: not a fade eval score line (unterminated, and not the start of "
                                     "one a kill tore); this is not fade eval's scores file or it is damaged: "
                                     "choose another --out")
                break  # torn by a kill mid-write
            try:
                rec = json.loads(line)
            except (ValueError, RecursionError):
                rec = None
                problem = "not valid JSON"
            else:
                problem = _score_record_problem(rec)
            if problem is not None:
                raise ValueError(f"{path}:{lineno}: not a fade eval score line ({problem}); this is not fade eval's "
                                 "scores file or it is damaged: choose another --out")
            scores[(json.dumps(rec["problem_id"]), rec["sample"])] = rec
            good += len(line)
        if good < len(data):
            f.truncate(good)
    return scores


def _atomic_write_text(path: Path, text: str) -> None:
    data = text.encode("utf-8")
    atomic_write(path, lambda f: f.write(data))


def _check_settings(out: Path, settings: dict[str, Any]) -> None:
    """Refuse to add scores made with other settings to a folder's scores, and to write into a
    folder whose run.json (the settings its scores were made with) is damaged or missing."""
    run = out / RUN
    if not _own_file(run, "run file"):
        made = [name for name in (SCORES, REPORT, PROBLEMS) if os.path.lexists(out / name)]
        if made:  # fade eval writes run.json before anything else
            raise ValueError(f"{out} holds {', '.join(made)} but no {RUN}, which says what settings they were made "
                             "with: not a fade eval folder, or its run.json was deleted; choose another --out")
        return
    try:
        before = json.loads(run.read_text(encoding="utf-8"))["settings"]
    except (ValueError, KeyError, TypeError, RecursionError):
        raise ValueError(f"{run} is not a fade eval run file (expected JSON with its settings); it is left alone: "
                         "choose another --out") from None
    if before != settings:
        raise ValueError(
            f"{out} holds scores made with other settings ({json.dumps(before)}); rerun with those, "
            f"or choose another --out (now: {json.dumps(settings)})"
        )


# -- scoring -------------------------------------------------------------------------------------




def _scorer(config: EvalConfig) -> tuple[Callable[[str, Any], VerifierResult], Callable[[], None], int]:
    workers = config.workers or (os.cpu_count() or 1)
    if config.verifier == "math":
        v = config.math_verifier(workers)
        return v.score, v.close, workers
    c = CodeVerifier(limits=config.limits, workers=workers, float_tolerance=config.float_tolerance, judge=config.judge)
    return c.score, lambda: None, workers


def _score_missing(todo: list[Sample], refs: dict[str, Any], config: EvalConfig, scores_path: Path,
                   done: dict[tuple[str, int], dict], total: int) -> int:
    """Score ``todo`` in parallel, appending each result to scores.jsonl as it finishes."""
    score, close, workers = _scorer(config)
    correct = sum(rec["score"] > 0 for rec in done.values())
    finished = len(done)
    scored = 0
    try:
        # Never through a link: _load_scores has checked the file (or its absence) under the lock.
        fd = os.open(scores_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o644)
        with os.fdopen(fd, "a", encoding="utf-8") as log, step_bar("scoring", total, finished, config.progress, unit="samples") as advance, \
                ThreadPoolExecutor(max_workers=workers) as pool:
            pending = iter(todo)
            running: dict[Any, Sample] = {}

            def submit_next() -> None:
                sample = next(pending, None)
                if sample is not None:
                    running[pool.submit(score, sample.completion, refs[sample.problem])] = sample

            # A bounded window of work in flight: an interrupt loses at most that much.
            for _ in range(2 * workers):
                submit_next()
            while running:
                ready, _ = wait(running, return_when=FIRST_COMPLETED)
                for future in ready:
                    sample = running.pop(future)
                    result = future.result()
                    rec = {"problem_id": sample.problem_id, "sample": sample.index, "completion_sha": sample.sha,
                           "reference_sha": sample.reference_sha, **result.to_dict()}
                    log.write(json.dumps(rec) + "\n")
                    log.flush()
                    done[(sample.problem, sample.index)] = rec
                    scored += 1
                    finished += 1
                    correct += result.score > 0
                    advance(f"correct {correct}/{finished}")
                    submit_next()
    finally:
        close()
    return scored


# -- the report ----------------------------------------------------------------------------------


def curve_ks(max_n: int) -> list[int]:
    """The k at which the pass@k curve is drawn: every k to 16, then about 12 per decade, up to max_n."""
    ks = set(range(1, min(max_n, 16) + 1))
    if max_n > 16:
        ks.update(int(round(x)) for x in np.geomspace(16, max_n, num=max(2, int(12 * math.log10(max_n / 16)) + 1)))
    return sorted(k for k in ks if 1 <= k <= max_n)


def _mean_pass_at_k(n: np.ndarray, c: np.ndarray, k: int) -> tuple[float | None, int]:
    keep = n >= k
    if not keep.any():
        return None, 0
    return float(np.mean(pass_at_k(n[keep], c[keep], k))), int(keep.sum())


def summarize(samples: list[Sample], done: dict[tuple[str, int], dict], order: list[str], ks: Sequence[int],
              config: EvalConfig) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The report and the per-problem rows, from the scores of every sample."""
    per_problem: dict[str, list[dict]] = {key: [] for key in order}
    ids: dict[str, Any] = {}
    for s in samples:
        per_problem[s.problem].append(done[(s.problem, s.index)])
        ids[s.problem] = s.problem_id
    rows = []
    for key in order:
        recs = per_problem[key]
        correct = [r for r in recs if r["score"] > 0]
        distinct = len({r.get("canonical") or "" for r in correct})
        rows.append({"problem_id": ids[key], "n": len(recs), "correct": len(correct),
                     "solve_rate": len(correct) / len(recs), "distinct_correct": distinct,
                     "reasons": dict(sorted(Counter(r["reason"] for r in recs).items()))})
    n = np.array([r["n"] for r in rows])
    c = np.array([r["correct"] for r in rows])
    for row in rows:
        for k in ks:
            if row["n"] >= k:
                row[f"pass@{k}"] = pass_at_k(row["n"], row["correct"], k)
    pass_k, at_k = {}, {}
    for k in ks:
        pass_k[f"pass@{k}"], at_k[str(k)] = _mean_pass_at_k(n, c, k)
    # The curve stops at the fewest samples any problem has, so every point averages the same problems.
    curve = [(k, _mean_pass_at_k(n, c, k)[0]) for k in curve_ks(int(n.min()))]
    reasons = Counter(r["reason"] for recs in per_problem.values() for r in recs)
    report: dict[str, Any] = {
        "label": config.label or Path(config.out).name,
        "verifier": config.verifier,
        "samples_file": str(config.samples),
        "problems_file": config.problems,
        "settings": config.settings(),
        "num_problems": len(rows),
        "num_samples": len(samples),
        "samples_per_problem": {"min": int(n.min()), "max": int(n.max())},
        "k": list(ks),
        "pass@k": pass_k,
        "problems_at_k": at_k,
        "k_policy": K_POLICY,
        "mean_solve_rate": float(np.mean(c / n)),
        "problems_solved": int((c > 0).sum()),
        "mean_distinct_correct": float(np.mean([r["distinct_correct"] for r in rows])),
        "total_distinct_correct": int(sum(r["distinct_correct"] for r in rows)),
        "reasons": dict(sorted(reasons.items())),
        "curve": {"k": [k for k, _ in curve], "pass@k": [v for _, v in curve]},
    }
    if config.verifier == "math":
        # What read the answers (the verdicts are the same under every supported ANTLR runtime).
        report["math_backend"] = math_backend()
    if config.verifier == "code":
        modes = Counter(r["details"].get("sandbox") for recs in per_problem.values() for r in recs
                        if isinstance(r.get("details"), dict) and r["details"].get("sandbox"))
        nets = Counter(r["details"].get("network_isolated") for recs in per_problem.values() for r in recs
                       if isinstance(r.get("details"), dict) and "network_isolated" in r["details"])
        report["sandbox"] = {"modes": dict(modes), "network_isolated": dict((str(k).lower(), v) for k, v in nets.items())}
        judges = Counter(r["details"].get("judge") for recs in per_problem.values() for r in recs
                         if isinstance(r.get("details"), dict) and r["details"].get("judge"))
        report["judges"] = dict(sorted(judges.items()))
    return report, rows


def load_report(directory: str | Path) -> dict[str, Any]:
    """The report.json of an earlier ``fade eval`` output folder."""
    path = Path(directory) / REPORT
    if not path.is_file():
        raise ValueError(f"--compare {directory}: no {REPORT} there (expected the --out folder of a finished fade eval)")
    try:
        report = json.loads(path.read_text(encoding="utf-8"))
        problem = _report_problem(report)
    except (ValueError, RecursionError) as exc:
        problem = f"not JSON: {exc}"
    if problem is not None:
        raise ValueError(f"{path} is not a fade eval report ({problem}): --compare takes finished fade eval folders")
    return report


def _report_problem(report: Any) -> str | None:
    """What is missing or malformed in ``report`` for drawing it (:func:`draw_passk`), or None."""
    def number(v: Any) -> bool:
        return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)

    curve = report.get("curve") if isinstance(report, dict) else None
    if not isinstance(curve, dict) or not isinstance(curve.get("k"), list) or not isinstance(curve.get("pass@k"), list):
        return "expected the keys curve.k and curve.pass@k, lists"
    if len(curve["k"]) != len(curve["pass@k"]) or not all(number(k) and k >= 1 for k in curve["k"]) \
            or not all(v is None or number(v) for v in curve["pass@k"]):
        return "curve.k must be numbers >= 1 and curve.pass@k as many numbers or nulls"
    passk = report.get("pass@k")
    if not isinstance(passk, dict) or not all(isinstance(k, str) and k.startswith("pass@") and k[5:].isascii() and k[5:].isdigit()
                                             and (v is None or number(v)) for k, v in passk.items()):
        return "expected pass@k, an object of pass@K keys and numbers or nulls"
    if not isinstance(report.get("label", ""), str):
        return "its label is not text"
    return None


def draw_passk(reports: Sequence[dict[str, Any]], path: str | Path) -> Path:
    """Draw the pass@k curves of one or more reports on one plot (log-scaled k) into ``path``.

    Higher and flatter-rising curves trade pass@1 against pass@k differently: a run whose curve
    starts lower but ends higher kept more diverse correct solutions.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    out = Path(path)
    fig, ax = plt.subplots(figsize=PASSK_SIZE_IN, dpi=PASSK_DPI, layout="constrained")
    try:
        max_k = 1
        for report in reports:
            ks = np.array(report["curve"]["k"], dtype=float)
            vals = np.array([np.nan if v is None else v for v in report["curve"]["pass@k"]], dtype=float)
            keep = np.isfinite(vals)
            if not keep.any():
                continue
            top = int(ks[keep].max())
            max_k = max(max_k, top)
            p1 = report["pass@k"].get("pass@1")
            label = report.get("label", "run") + (f" (pass@1 {p1:.3f})" if isinstance(p1, (int, float)) else "")
            (line,) = ax.plot(ks[keep], vals[keep], lw=1.6, label=label)
            # The requested k, marked where they lie on the curve (same problems averaged).
            marks = [(int(k[5:]), v) for k, v in report["pass@k"].items() if isinstance(v, (int, float)) and int(k[5:]) <= top]
            if marks:
                ax.plot([m[0] for m in marks], [m[1] for m in marks], "o", color=line.get_color(), ms=5)
        ax.set_xscale("log", base=2 if max_k <= 64 else 10)
        ax.set_xlim(0.9, max(2, max_k) * 1.1)
        ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda x, _: f"{x:g}"))
        ax.set_ylim(0, 1.02)
        ax.set_xlabel("k (samples drawn)")
        ax.set_ylabel("pass@k (unbiased)")
        title = "pass@k" if len(reports) == 1 else "pass@k: accuracy (k = 1) against diversity (large k)"
        ax.set_title(title, fontsize=10)
        ax.grid(alpha=0.25, which="both")
        ax.legend(fontsize=8, frameon=False, loc="lower right")
        out.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(out, dpi=PASSK_DPI)
    finally:
        plt.close(fig)
    return out


# -- the whole run -------------------------------------------------------------------------------


def evaluate(config: EvalConfig) -> EvalOutcome:
    """Score what is missing in ``config.out`` and, once every sample is scored, write the report."""
    ks = _check_config(config)
    compared = [load_report(d) for d in config.compare]
    out = Path(config.out)
    _check_settings(out, config.settings())
    samples, refs, order = read_samples(config.samples, config.verifier, config.problems, config.judge)
    out.mkdir(parents=True, exist_ok=True)
    with _folder_lock(out):
        _check_settings(out, config.settings())  # again, now that no other run can write it
        return _evaluate_locked(config, out, samples, refs, order, ks, compared)


def _check_config(config: EvalConfig) -> tuple[int, ...]:
    """Refuse every bad setting of ``config`` with one line, before anything is read or written;
    returns the k values."""
    if config.verifier not in VERIFIERS:
        raise ValueError(f"unknown verifier {config.verifier!r}: expected one of {', '.join(VERIFIERS)}")
    ks = tuple(config.ks)
    if not ks or any(isinstance(k, bool) or not isinstance(k, int) or k < 1 for k in ks):
        raise ValueError(f"k values must be positive integers, got {list(ks)}")
    if config.limit is not None and (isinstance(config.limit, bool) or not isinstance(config.limit, int) or config.limit < 0):
        raise ValueError(f"limit must be a non-negative integer, got {config.limit!r}")
    workers = config.workers
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
        raise ValueError(f"workers must be a positive integer, got {workers!r}")
    if config.verifier == "math":
        config.math_verifier()  # its timeout and math-verify settings (no worker starts here)
        return ks
    if isinstance(config.limits, dict):
        Limits(**config.limits)
    if config.judge != "auto" and config.judge not in JUDGES:
        raise ValueError(f"unknown judge {config.judge!r}: expected auto or one of {', '.join(JUDGES)}")
    CodeVerifier(limits=config.limits, workers=workers, float_tolerance=config.float_tolerance, judge=config.judge)
    return ks


@contextlib.contextmanager
def _folder_lock(out: Path) -> Iterator[None]:
    """Hold ``out/.lock`` (an advisory lock the kernel drops when the process dies, so a killed
    run never leaves the folder locked); refuse when another run holds it."""
    path = out / LOCK
    _own_file(path, "lock file")
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK, 0o644)
    except OSError as exc:  # a link made since the check above (ELOOP), or no permission
        raise ValueError(f"{path} cannot be opened as fade eval's lock file ({exc.strerror}); choose another --out") from None
    try:
        _own_file(path, "lock file")
        held = os.pread(fd, 64, 0)
        if held.strip() and not held.strip().isdigit():
            raise ValueError(f"{path} holds {held[:32]!r}, not the process id fade eval writes there: it is not fade "
                             "eval's lock file; choose another --out (or remove it)")
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 64, 0).decode("ascii", errors="replace").strip() or "unknown"
            raise ValueError(f"{out} is being written by another fade eval (pid {holder}); wait for it to finish "
                             "or choose another --out") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        os.close(fd)


def _evaluate_locked(config: EvalConfig, out: Path, samples: list[Sample], refs: dict[str, Any], order: list[str],
                     ks: tuple[int, ...], compared: list[dict[str, Any]]) -> EvalOutcome:
    doc = {"settings": config.settings(), "samples": str(config.samples), "problems": config.problems}
    _atomic_write_text(out / RUN, json.dumps(doc, indent=2) + "\n")
    scores_path = out / SCORES
    done = _load_scores(scores_path)
    wanted = {(s.problem, s.index): s for s in samples}
    for key, rec in done.items():
        sample = wanted.get(key)
        if sample is None:
            raise ValueError(f"{scores_path} scores problem {key[0]} sample {key[1]}, which {config.samples} does not have: "
                             "the samples file changed; use another --out")
        if rec.get("completion_sha") != sample.sha:
            raise ValueError(f"{scores_path} scores a different completion for problem {key[0]} sample {key[1]} "
                             f"(line {sample.where}): the samples file changed; use another --out")
        if rec.get("reference_sha") != sample.reference_sha:
            was = "no reference hash (written by an earlier fade)" if "reference_sha" not in rec else "another reference"
            raise ValueError(f"{scores_path} scored problem {key[0]} sample {key[1]} against {was}: its gold answer or "
                             f"tests (line {sample.where}, or --problems) changed since; use another --out")
    todo = [s for s in samples if (s.problem, s.index) not in done]
    if config.limit is not None:
        todo = todo[: config.limit]
    scored = _score_missing(todo, refs, config, scores_path, done, len(samples)) if todo else 0
    remaining = sum((s.problem, s.index) not in done for s in samples)
    if remaining:
        stale = out / REPORT
        if stale.exists():
            stale.unlink()  # a report of fewer samples than the file now holds would mislead
        return EvalOutcome(False, scored, len(samples), remaining, None, [])
    report, rows = summarize(samples, done, order, ks, config)
    written = [out / REPORT, out / PROBLEMS]
    _atomic_write_text(out / PROBLEMS, "".join(json.dumps(r) + "\n" for r in rows))
    _atomic_write_text(out / REPORT, json.dumps(report, indent=2) + "\n")
    written.append(draw_passk([report, *compared], out / PASSK_PNG))
    return EvalOutcome(True, scored, len(samples), 0, report, written)
