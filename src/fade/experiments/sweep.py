"""Run a preset's grid of testbed training runs in parallel worker processes, resumably, and
write the report.

Each run trains in its own folder, ``OUT/runs/<task>/<label>/seed<k>/``, with the trainer's own
files and checkpoints. A run is *finished* when ``done.json`` is there (written atomically after
the trainer returns), the configuration it records equals the one planned, ``metrics.jsonl``
reaches the planned last step and, when evaluation is on, ``eval.jsonl`` holds that step's
evaluation (each log compressed, as the trainer writes it, or plain, as runs from before hold
it). Before training, :func:`~fade.experiments.execution.inspect_run` sorts every run into one of four
states:

- ``done``: finished as planned: skipped;
- ``resume``: a checkpoint and a ``run.json`` with the planned configuration (or the same one
  with fewer steps: the run is extended): the trainer resumes it, exactly;
- ``new``: nothing usable there: it trains from the start;
- ``conflict``: the folder holds a different run: that run fails with a message saying what
  differs, and the others go on.

Workers are ``spawn``-ed processes with one torch thread each, so N workers use N cores; with
one worker the runs train in this process, one after another. A run that raises writes its
traceback to ``error.txt`` and is reported as failed; the others keep going, and the sweep ends
with a report and a non-zero status. FADE's tuned runs (see :class:`~.design.Tuning`) are
submitted as soon as the tuning candidates have all finished. One sweep at a time may write into a
folder (``.sweep.lock`` holds its process id while it runs). One run's state, the worker and the
pools are :mod:`fade.experiments.execution`'s.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fade.atomic import write_json_atomic
from fade.progress import make_progress, spinner
from fade.testbed.runlog import METRICS_FILE

from .costs import estimate_seconds, estimate_wall_seconds, format_minutes
from .design import Preset, RunSpec
from .execution import (
    CONFLICT,
    DONE,
    DONE_FILE,
    ERROR_FILE,
    NEW,
    RESUME,
    InlinePool,
    ProcessPool,
    execute_run,
    inspect_run,
    log_lines,
    read_json,
)

__all__ = [
    "CONFLICT",
    "DONE",
    "DESIGN_FILE",
    "DONE_FILE",
    "ERROR_FILE",
    "NEW",
    "RESUME",
    "SweepOutcome",
    "check_claims",
    "check_design",
    "execute_run",
    "fix_design",
    "inspect_run",
    "plan_rows",
    "run_sweep",
]

TUNING_FILE, LOCK_FILE = "tuning.json", ".sweep.lock"
DESIGN_FILE = "design.json"
_POLL_SECONDS = 2.0


# -- the sweep ----------------------------------------------------------------------------------


@dataclass
class SweepOutcome:
    """What a sweep did: runs by key, the tuned choice, and the report it wrote."""

    runs: list[RunSpec] = field(default_factory=list)
    finished: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    choice: str | None = None
    readme: Path | None = None

    @property
    def ok(self) -> bool:
        return not self.failed


def default_command(preset: Preset, out: str | Path) -> str:
    return f"fade sweep --preset {preset.name.split()[0]} --out {out}"


def _logged_steps(run: RunSpec, out: str | Path) -> int:
    return min(len(log_lines(run.directory(out), METRICS_FILE)), run.steps)


def _tuning_candidates(preset: Preset) -> list[RunSpec]:
    if preset.tuning is None:
        return []
    plan = preset.plan(preset.tuning.task)
    return [plan.run(c, seed) for c in preset.tuning.candidates for seed in preset.seeds]


def _choose(preset: Preset, out: Path) -> str | None:
    """The tuned choice from the finished candidates, recorded in OUT/tuning.json."""
    from .claims.defaults import choose_tuned
    from .runs import summarise

    assert preset.tuning is not None
    summaries = [summarise(r, out) for r in _tuning_candidates(preset) if inspect_run(r, out)[0] == DONE]
    choice, rows = choose_tuned(preset.tuning, summaries)
    write_json_atomic(out / TUNING_FILE, {
        "task": preset.tuning.task, "score": preset.tuning.score, "choice": choice,
        "candidates": [{"candidate": r.candidate, "score_values": list(r.score.values)} for r in rows],
    })
    return choice


def plan_rows(preset: Preset, out: str | Path) -> list[dict[str, Any]]:
    """Every run of the sweep with its state and estimated CPU seconds (tuned runs: "after tuning")."""
    rows = []
    for run in preset.runs():
        state, why = inspect_run(run, out)
        rows.append({"run": run, "key": run.key, "state": state, "why": why, "seconds": estimate_seconds(run)})
    for plan, name, seed in preset.pending_tuned():
        run = plan.run(name, seed, tuned_from=preset.tuning.task if preset.tuning else None)
        rows.append({"run": run, "key": f"{plan.task}/{name} (parameters chosen on {run.tuned_from})/seed{seed}",
                     "state": "after tuning", "why": "", "seconds": estimate_seconds(run)})
    return rows


def dry_run_summary(rows: Sequence[dict[str, Any]], workers: int) -> str:
    todo = [r["seconds"] for r in rows if r["state"] != DONE]
    total = [r["seconds"] for r in rows]
    return (
        f"{len(rows)} runs, {len(rows) - len(todo)} already finished. "
        f"Estimated CPU time: {format_minutes(sum(total))} in all, "
        f"{format_minutes(sum(todo))} still to run, "
        f"about {format_minutes(estimate_wall_seconds(todo, workers))} of wall time "
        f"on {workers} worker(s) with a core each to themselves."
    )


def run_sweep(
    preset: Preset,
    out: str | Path,
    *,
    workers: int = 2,
    keep_checkpoints: bool = False,
    progress: bool = True,
    command: str | None = None,
    log: Callable[[str], None] | None = None,
    report: bool = True,
) -> SweepOutcome:
    """Run every unfinished run of ``preset`` into ``out``, then write ``out/README.md``.

    ``command`` is the command line printed at the top of the report (default: the preset's
    ``fade sweep`` command). ``log`` receives one line per run that finishes or fails (default:
    printed above the progress bar, or nowhere without it). ``report=False`` trains and writes no
    report (``fade demo`` draws its own figure). Workers are spawned, so a script that calls this
    with ``workers > 1`` needs the usual ``if __name__ == "__main__":`` guard.
    """
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ValueError(f"workers must be a positive integer, got {workers!r}")
    preset.check()
    check_claims(preset)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    with _lock(out):
        fix_design(preset, out)
        return _sweep(preset, out, workers, keep_checkpoints, progress, command or default_command(preset, out), log,
                      report)


def _started(preset: Preset, out: Path) -> list[str]:
    """The keys of the preset's runs that have left anything in ``out`` (a run folder with files)."""
    return [r.key for r in preset.runs() if r.directory(out).is_dir() and any(r.directory(out).iterdir())]


def check_claims(preset: Preset) -> None:
    """Raise ValueError when the preset names a claim its report should read that is not one."""
    if preset.claims is None:
        return
    from .claims import CLAIMS

    known = [claim.key for claim in CLAIMS]
    unknown = [key for key in preset.claims if key not in known]
    if unknown:
        raise ValueError(f"preset {preset.name!r} reads unknown claim(s) {unknown}; known claims: {', '.join(known)}")


def check_design(preset: Preset, out: str | Path, training: bool = False) -> dict[str, Any] | None:
    """The design record of the sweep folder ``out`` (None when it has none); ValueError when the
    record holds other comparisons or claims than ``preset`` fixes, or is unreadable; with
    ``training``, also when the preset pins the training code and the record holds another version
    (a report reads finished runs, so it is not refused for that)."""
    path = Path(out) / DESIGN_FILE
    if not path.exists():
        return None
    saved = read_json(path)
    if saved is None:
        raise ValueError(f"{path} is not a readable design record: expected the JSON object a `fade sweep` wrote")
    planned = preset.design
    if "code" in planned:
        code = planned.pop("code")
        if training and saved.get("code") != code:
            raise ValueError(
                f"{out} was trained on training code version {saved.get('code')!r} and this checkout's is {code!r} "
                f"(fade.testbed.session.code_version): every run of preset {preset.name!r} comes from one version, so "
                "finish it on the checkout that started it, or choose another --out"
            )
    changed = [key for key in planned if saved.get(key) != planned[key]]
    if changed:
        detail = "; ".join(
            f"{key}: {_brief(saved.get(key))} recorded, {_brief(planned[key])} planned" for key in changed
        )
        raise ValueError(f"{out} was started with other {' and '.join(changed)} than preset {preset.name!r} now fixes "
                         f"({detail}): a preset's comparisons are fixed before its runs, so choose another --out, or "
                         "remove the folder to start over")
    return saved


def _brief(value: Any) -> str:
    if isinstance(value, list):
        return f"{len(value)} entries" if len(value) != 1 else "1 entry"
    return repr(value)


def fix_design(preset: Preset, out: str | Path) -> None:
    """Record what ``preset`` fixes before its runs (:attr:`Preset.design`) in ``out``, or check it
    against the record there: a changed comparison is refused as a changed setting is on resume.

    A folder without a record whose runs have started gets one only when the preset fixes no
    comparison (folders from before records existed); comparisons cannot be fixed after the fact.
    """
    out = Path(out)
    if check_design(preset, out, training=True) is not None:
        return
    started = _started(preset, out)
    if preset.comparisons and started:
        raise ValueError(f"{out} holds runs of preset {preset.name!r} ({len(started)}, e.g. {started[0]}) but no "
                         f"{DESIGN_FILE}: its comparisons would be fixed after its runs started; choose another --out")
    write_json_atomic(out / DESIGN_FILE, {"preset": preset.name, **preset.design})


@contextlib.contextmanager
def _lock(out: Path) -> Iterator[None]:
    """One sweep at a time per folder: two would train the same runs into the same files."""
    path = out / LOCK_FILE
    try:
        other = int(path.read_text().strip())
    except (OSError, ValueError):
        other = None
    if other is not None and other != os.getpid() and _alive(other):
        raise ValueError(f"another fade sweep (process {other}) is running into {out}; wait for it or remove {path}")
    path.write_text(f"{os.getpid()}\n")
    try:
        yield
    finally:
        path.unlink(missing_ok=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)  # signal 0: only asks whether the process exists
    except ProcessLookupError:
        return False
    except OSError:  # exists but belongs to someone else
        return True
    return True


def _sweep(preset: Preset, out: Path, workers: int, keep_checkpoints: bool, progress: bool, command: str,
           log: Callable[[str], None] | None, report: bool = True) -> SweepOutcome:
    outcome = SweepOutcome()
    first = preset.runs()
    candidates = {r.key for r in _tuning_candidates(preset)}
    tuned_waiting = preset.pending_tuned()
    # Tuning candidates first, so the tuned runs can start early; then the longest runs first.
    first.sort(key=lambda r: (r.key not in candidates, -estimate_seconds(r)))
    outcome.runs = list(first)
    states = {r.key: inspect_run(r, out)[0] for r in first}
    todo = [r for r in first if states[r.key] != DONE]
    outcome.skipped = [r.key for r in first if states[r.key] == DONE]
    total_steps = sum(r.steps for r in first) + sum(plan.steps for plan, _, _ in tuned_waiting)

    bar = _Bar(progress, len(first) + len(tuned_waiting), total_steps, log)
    pool = InlinePool(str(out), keep_checkpoints) if workers == 1 else ProcessPool(workers, str(out), keep_checkpoints)
    unsettled = {r.key for r in todo}
    try:
        with bar:
            bar.advance_runs(len(outcome.skipped))
            for run in todo:
                pool.submit(run)

            def maybe_submit_tuned() -> None:
                nonlocal tuned_waiting
                if not tuned_waiting or candidates & unsettled:
                    return
                outcome.choice = _choose(preset, out)
                waiting, tuned_waiting = tuned_waiting, []
                if outcome.choice is None:
                    for plan, name, seed in waiting:
                        key = f"{plan.task}/{name} (tuned)/seed{seed}"
                        outcome.failed[key] = (
                            f"no tuning candidate on {preset.tuning.task} finished: nothing to choose from"
                        )
                        bar.advance_runs(1)
                    return
                bar.say(f"tuned on {preset.tuning.task}: {outcome.choice}")
                for run in preset.tuned_runs(outcome.choice):
                    outcome.runs.append(run)
                    if inspect_run(run, out)[0] == DONE:
                        outcome.skipped.append(run.key)
                        bar.advance_runs(1)
                    else:
                        unsettled.add(run.key)
                        pool.submit(run)

            maybe_submit_tuned()

            def steps_logged() -> int:
                return sum(r.steps if r.key not in unsettled and r.key not in outcome.failed else _logged_steps(r, out)
                           for r in outcome.runs)

            bar.steps(steps_logged())
            while unsettled:
                for run, result in pool.completed(_POLL_SECONDS):
                    unsettled.discard(run.key)
                    status = result.get("status")
                    if status == "failed":
                        outcome.failed[run.key] = result.get("error", "unknown error")
                        bar.say(f"failed  {run.key}: {outcome.failed[run.key]}")
                    elif status == "skipped":
                        outcome.skipped.append(run.key)
                    else:
                        outcome.finished.append(run.key)
                        bar.say(f"done    {run.key} in {result.get('cpu_seconds', 0) / 60:.1f} CPU min")
                    bar.advance_runs(1)
                maybe_submit_tuned()
                bar.steps(steps_logged())
    except BaseException:
        pool.close(cancel=True)
        # An interrupted sweep still reports the runs that finished, so a long sweep stopped at
        # any point leaves a report of what it measured; the rest resumes on the next call.
        if report:
            with contextlib.suppress(Exception):
                outcome.readme = write_sweep_report(preset, out, outcome, command, workers)
        raise
    pool.close()
    if report:
        outcome.readme = write_sweep_report(preset, out, outcome, command, workers, progress)
    return outcome


def report_sweep(preset: Preset, out: str | Path, *, workers: int = 2, command: str | None = None,
                 progress: bool = False) -> SweepOutcome:
    """Write the report of ``preset``'s runs finished so far in ``out``; train nothing.

    Safe while a sweep is running into the same folder: it only reads the finished runs' logs.
    """
    preset.check()
    check_claims(preset)
    out = Path(out)
    if not out.is_dir():
        raise ValueError(f"{out} holds no sweep: expected the folder a `fade sweep` wrote")
    check_design(preset, out)
    outcome = SweepOutcome(runs=preset.runs())
    if preset.tuning is not None and (out / TUNING_FILE).is_file():
        outcome.choice = (read_json(out / TUNING_FILE) or {}).get("choice")
        if outcome.choice:
            outcome.runs += preset.tuned_runs(outcome.choice)
    outcome.skipped = [r.key for r in outcome.runs if inspect_run(r, out)[0] == DONE]
    outcome.readme = write_sweep_report(
        preset, out, outcome, command or default_command(preset, out), workers, progress
    )
    return outcome


def write_sweep_report(preset: Preset, out: Path, outcome: SweepOutcome, command: str, workers: int,
                       progress: bool = False) -> Path:
    """Summarise every finished run and write the report (README.md, PNGs, results.json);
    ``progress`` shows which part it is on (a large sweep's report takes a while)."""
    from .claims import report_sections
    from .results_report import write_report
    from .runs import summarise

    if preset.tuning is not None and outcome.choice is None and (out / TUNING_FILE).is_file():
        outcome.choice = (read_json(out / TUNING_FILE) or {}).get("choice")
    summaries = []
    order = {arm.text: i for i, arm in enumerate(arm for plan in preset.plans for arm in plan.arms)}
    tasks = {task: i for i, task in enumerate(preset.tasks)}
    runs = sorted(
        outcome.runs, key=lambda r: (tasks.get(r.task, len(tasks)), order.get(r.arm.text, len(order)), r.seed)
    )
    with spinner("report", progress) as note:
        for i, run in enumerate(runs, 1):
            note(f"reading run {i}/{len(runs)}: {run.key}")
            if run.key in outcome.failed or inspect_run(run, out)[0] != DONE:
                continue
            try:
                summaries.append(summarise(run, out))
            except (ValueError, OSError) as exc:
                outcome.failed[run.key] = f"could not read its logs: {exc}"
        note(f"verdicts on {len(summaries)} runs")
        sections = report_sections(summaries, preset, outcome.choice)
        note(f"tables and figures into {out}")
        saved = read_json(out / DESIGN_FILE) if (out / DESIGN_FILE).is_file() else None
        return write_report(out, preset=preset, runs=outcome.runs, summaries=summaries, sections=sections,
                            failures=outcome.failed, command=command, workers=workers, choice=outcome.choice,
                            trained_code=(saved or {}).get("code"))


class _Bar:
    """Two rich bars, runs and training steps (with the ETA), or nothing when progress is off."""

    def __init__(self, enabled: bool, runs: int, steps: int, log: Callable[[str], None] | None):
        self.enabled, self._log = enabled, log
        self._progress = None
        if enabled:
            # A long speed window: evaluations pause the steps for seconds at a time.
            self._progress = make_progress(speed_estimate_period=600)
            self._runs = self._progress.add_task("runs ", total=runs, unit="runs")
            self._steps = self._progress.add_task("steps", total=steps, unit="steps")

    def __enter__(self) -> _Bar:
        if self._progress is not None:
            self._progress.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        if self._progress is not None:
            self._progress.__exit__(*exc)

    def advance_runs(self, n: int) -> None:
        if self._progress is not None:
            self._progress.update(self._runs, advance=n)

    def steps(self, completed: int) -> None:
        if self._progress is not None:
            self._progress.update(self._steps, completed=completed)

    def say(self, line: str) -> None:
        if self._log is not None:
            self._log(line)
        elif self._progress is not None:
            self._progress.console.print(line)
