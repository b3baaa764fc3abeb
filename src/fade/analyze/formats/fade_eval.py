"""``fade eval``'s ``scores.jsonl``: one step, every problem a group, a success a score above 0."""

from __future__ import annotations

from pathlib import Path

from ..columns import encode_keys, read_jsonl
from ..records import RunRecords, StepBatch
from .base import Format, ReadOptions

__all__ = ["FORMAT"]


def _read_eval(where: Path, options: ReadOptions, progress) -> RunRecords:
    cols = read_jsonl(where, {"problem_id": "key", "score": "float"}, required=("problem_id", "score"), newest=True)
    groups, keys = encode_keys(cols["problem_id"])
    progress(1, 1)
    run = RunRecords(
        "fade-eval", str(where), [StepBatch(0, cols["score"], groups, prompt_keys=keys, source=str(where))]
    )
    run.success = (">", 0.0)  # fade eval counts a sample with score > 0 as correct
    return run




FORMAT = Format(
    name="fade-eval",
    engine="fade eval (this project)",
    writer=("src/fade/verifiers/evaluate/store.py (scores.jsonl)",),
    layout="fade eval's scores.jsonl",
    keys="fade eval's problem_id/sample/score",
    find=lambda folder: folder / "scores.jsonl" if (folder / "scores.jsonl").is_file() else None,
    claims=lambda path, keys: path.suffix.lower() in (".jsonl", ".json") and {"problem_id", "sample", "score"} <= keys,
    read=_read_eval,
)
