"""``fade eval``: score a file of generated samples, incrementally and resumably, and report
pass@k, per-problem solve rates and distinct correct solutions.

Input: JSON lines, one sample each, from any generator. A line holds the problem's id
(``problem_id``, ``id``, ``question_id`` or ``task_id``; a string or an integer), the sample's
text (``completion``, or ``completions``: a list, one sample each) and the reference: a math
answer (``answer``, ``gold``, ``ground_truth`` or ``solution``:
:data:`fade.verifiers.rewards.GOLD_COLUMNS`) or the tests (any field
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
  is an error naming it, with the file left as it was. A score is reused only for the same completion
  against the same reference: a line
  whose completion_sha or reference_sha (the hash of the problem's gold answer or tests, from
  the samples file and ``--problems`` together) differs from the sample's is an error naming
  what changed, as is a line for a sample the file no longer has.
- ``.lock``: held while a run writes the folder; a second run on the same folder is refused.
- ``run.json``: the settings results depend on (verifier, timeout or limits, tolerance); a rerun
  with other settings is refused rather than mixing scores, and so is a folder with scores or a
  report but no run.json (deleted: the settings are unknown) or a damaged one.
- ``report.json`` and ``problems.jsonl``, written once every sample is scored; ``fade eval`` then
  draws ``passk.png`` from the report (:func:`fade.plots.draw_eval_passk`, the plotting layer).

fade eval writes only to files it made: a scores.jsonl, run.json or .lock that is a symbolic
link, a hard link or not a regular file is refused, never truncated, appended to or followed.
Every setting is checked before anything is read or written.

The parts, one job each: :mod:`.config` (what a run takes and returns), :mod:`.inputs` (reading
the samples and problems), :mod:`.store` (the output folder's files and their hardening),
:mod:`.scoring` (the worker pool), :mod:`.report` (the report's numbers) and :mod:`.pipeline`
(:func:`evaluate`, the run from start to end).
"""

from .config import VERIFIERS, EvalConfig, EvalOutcome
from .inputs import ID_FIELDS, Sample, read_samples
from .pipeline import evaluate
from .report import K_POLICY, curve_ks, load_report, summarize
from .store import LOCK, PASSK_PNG, PROBLEMS, REPORT, RUN, SCORES

__all__ = [
    "ID_FIELDS",
    "K_POLICY",
    "LOCK",
    "PASSK_PNG",
    "PROBLEMS",
    "REPORT",
    "RUN",
    "SCORES",
    "VERIFIERS",
    "EvalConfig",
    "EvalOutcome",
    "Sample",
    "curve_ks",
    "evaluate",
    "load_report",
    "read_samples",
    "summarize",
]
