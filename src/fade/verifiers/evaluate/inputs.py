"""Reading ``fade eval``'s inputs: the samples file and the problems file, JSON lines in UTF-8
(or gzip), into samples named by (problem, index) and each problem's reference (a gold answer or a
:class:`~fade.verifiers.testcases.TestSuite`). Anything malformed is an error naming its file and
line, raised before anything is scored."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fade import jsonl

from ..judges import judge_for
from ..rewards import GOLD_COLUMNS
from ..testcases import CHECK_FIELDS, TEST_FIELDS, parse_tests
from .config import VERIFIERS

__all__ = ["ID_FIELDS", "Sample", "read_samples"]

ID_FIELDS = ("problem_id", "id", "question_id", "task_id")


@dataclass(frozen=True)
class Sample:
    problem: str  # the problem id as JSON text, so 1 and "1" stay distinct
    problem_id: Any
    index: int
    completion: str
    sha: str
    where: str
    reference_sha: str = ""


def _read_jsonl(path: str | Path, what: str) -> Iterator[tuple[int, dict]]:
    """(line number, object) of each line of an input file, read as it goes: a .gz file (HumanEval
    ships HumanEval.jsonl.gz) as it ships; any line that is not a JSON object in UTF-8, a torn last
    line and a .gz file cut off are errors naming the file and line (:mod:`fade.jsonl`)."""
    if not Path(path).is_file():
        raise ValueError(f"{what} {path}: no such file")
    return jsonl.records(path, torn="error")


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
        return {k: obj[k] for k in GOLD_COLUMNS if obj.get(k) is not None}
    keys = (*TEST_FIELDS, "metadata", "func_name", "fn_name")
    if obj.get("entry_point") is not None or obj.get("test_list") is not None:
        keys += CHECK_FIELDS  # a HumanEval or MBPP problem: its prompt and entry point are part of the program
    return {k: obj[k] for k in keys if obj.get(k) is not None}


def _gold(ref: dict[str, Any], verifier: str, where: str, judge: str = "auto") -> Any:
    if verifier == "math":
        for key in GOLD_COLUMNS:
            if key in ref:
                value = ref[key]
                if isinstance(value, bool) or not isinstance(value, (str, int, float)) or not str(value).strip():
                    raise ValueError(f"{where}: {key!r} must be a non-empty string or a number, got {value!r}")
                return str(value)
        raise ValueError(
            f"{where}: no gold answer: expected one of the keys {', '.join(GOLD_COLUMNS)} (or --problems FILE)"
        )
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
            raise ValueError(
                f"{where}: problem {key} is not in --problems {problems} and the line has no reference of its own"
            )
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
