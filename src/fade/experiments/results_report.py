"""The sweep's published report: ``README.md`` with the claims' tables and verdicts, the PNGs next
to it, and ``results.json`` with every number behind them.

:func:`write_report` takes the finished runs' summaries and the claims in words
(:func:`fade.experiments.claims.report_sections`) and writes, into the sweep's output folder: ``README.md``
headed by the exact command that regenerates it and then the design checks (is the regime
calibrated, does FADE's sign knob act: :func:`~fade.experiments.claims.design_checks`), the setup,
how to read the verdicts, every verdict at a glance, each claim's section, the figures, and where
the claims do not reproduce; ``atlas.png`` (the gradient-mass atlas of every estimator trained);
per task ``<task>-pass1.png``, ``<task>-passk.png``, ``<task>-entropy-rank1.png`` (one panel per
claim's group of arms) and ``<task>-plane.png``, then the figures the claims draw themselves
(:class:`~fade.experiments.claims.base.Figures`: the entropy checks', the controls', FADE's delta
and schedule, the Power(alpha) buckets, FADE's family side by side); and ``results.json``. It
knows no claim: it loops over the sections and over the claims of
:data:`~fade.experiments.claims.CHECKS` and :data:`~fade.experiments.claims.CLAIMS`. Runs are shown
per arm (:class:`~fade.experiments.design.Arm`): an estimator, with the training settings of its
own when it has some. A hand-written ``ANALYSIS.md`` in the same folder, if present, is included
verbatim, so an analysis survives regeneration.
"""

from __future__ import annotations

import datetime as _dt
import math
import os
import platform
import warnings
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from fade.atomic import atomic_write, write_json_atomic
from fade.geometry import PAPER_RANK1_SHARE
from fade.testbed.evaluation import EVAL_KS, ks_text

from . import design, figures, report_numbers
from .claims import CHECKS, CLAIMS, design_checks, fade_spec
from .claims.base import ClaimSection, Table, TaskFigures, VerdictLine
from .costs import estimate_seconds
from .design import Arm, Preset, RunSpec, as_arm
from .report_numbers import STATISTICAL_POWER
from .runs import SweepRun, copies
from .stats import (
    CONTRADICTED,
    FEW_SEEDS,
    MIN_PAIRED_SEEDS,
    MIN_SEEDS,
    NOT_MEASURED,
    NOT_SUPPORTED,
    OVERLAP,
    SUPPORTED,
    UNRESOLVED,
    Stat,
)

__all__ = ["README", "RESULTS_JSON", "ANALYSIS", "write_report"]

README, RESULTS_JSON, ANALYSIS = "README.md", "results.json", "ANALYSIS.md"

_EXPLAIN = {
    OVERLAP: "the seed means differ by less than the spread over seeds: at this scale the effect, if there is one, "
             "is inside seed-to-seed variation",
    NOT_SUPPORTED: "the measured ordering is the opposite of the claim, beyond the spread over seeds (or the "
                   "target was not reached on most seeds)",
    FEW_SEEDS: f"fewer than {MIN_SEEDS} seeds were run, so no verdict is given",
    UNRESOLVED: "the 95% interval of the paired difference contains 0: the effect, if there is one, is smaller "
                "than these seeds resolve (the interval's half-width says how small; compare the minimum detectable "
                "difference above)",
    CONTRADICTED: "the 95% interval of the paired difference lies entirely on the side opposite to the claim (or the "
                  "target was not reached on most seeds)",
}

_NO_INTERVAL = ("no interval was computed for this comparison: it is not a mean of paired differences (see its "
                "detail), so it was read by a rule of its own, and no half-width says how large an effect it could "
                "have resolved")


def _explain(verdict: VerdictLine) -> str:
    """Why a verdict is what it is, in words; an unresolved one without any interval says so."""
    if verdict.outcome in (UNRESOLVED, CONTRADICTED) and not any(p.interval is not None for _, p in verdict.parts):
        return _NO_INTERVAL
    return _EXPLAIN[verdict.outcome]


def _ks_label(summaries: Sequence[SweepRun]) -> str:
    """The k the runs' evaluations report, from their samples per prompt (one label per distinct count)."""
    counts = sorted({s.run.eval_samples for s in summaries})
    if not counts:
        return ks_text(EVAL_KS[-1])
    if len(counts) == 1:
        return ks_text(counts[0])
    return "; ".join(f"{ks_text(n)} with {n} samples" for n in counts)


def _machine() -> str:
    model = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:  # Linux names the CPU here; elsewhere the platform string stays
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    import torch

    return (
        f"{platform.system()} {platform.machine()}, {model}, {os.cpu_count()} logical CPUs; torch {torch.__version__}"
    )


def _role_groups(view: TaskFigures) -> list[tuple[str, list[str]]]:
    """The claim groups the figures are organised by: each claim's panel (:class:`~.claims.base.Figures`)
    with the present arms (by text) it shows, in the report's order; arms in no group go to a last
    "other estimators" group."""
    present = view.present
    groups = [(claim.figures.group, list(claim.figures.arms(view))) for claim in (*CHECKS, *CLAIMS)
              if claim.figures.group]
    covered = {spec for _, specs in groups for spec in specs}
    groups.append(("other estimators", [spec for spec in present if spec not in covered]))
    kept: list[tuple[str, list[str]]] = []
    for i, (title, specs) in enumerate(groups):
        elsewhere = {spec for j, (_, other) in enumerate(groups) if j != i for spec in other}
        # A group of one estimator that another group already shows adds nothing.
        if specs and not (len(specs) == 1 and specs[0] in elsewhere):
            kept.append((title, specs))
    return kept or [("estimators", list(present))]


def _figures(out: Path, task: str, summaries: list[SweepRun], sections: list[ClaimSection], fade_spec: str,
             palette: dict) -> list[tuple[str, str]]:
    """Draw the task's figures; returns (file name, caption) of each."""
    runs_by_spec: dict[str, list[SweepRun]] = defaultdict(list)
    arms: dict[str, Arm] = {}
    for s in sorted(summaries, key=lambda s: s.seed):
        runs_by_spec[s.run.arm.text].append(s)
        arms.setdefault(s.run.arm.text, s.run.arm)
    view = TaskFigures(task, dict(runs_by_spec), arms, palette, fade_spec)
    groups = _role_groups(view)
    ks = _ks_label(summaries)
    drawn: list[tuple[str, str]] = []

    def draw(name: str, caption: str, fn) -> None:
        try:
            fn(out / name)
        except (ValueError, RuntimeError) as exc:  # a figure that cannot be drawn must not lose the report
            warnings.warn(f"{name}: not drawn ({exc})", RuntimeWarning, stacklevel=2)
            return
        drawn.append((name, caption))

    if any(s.pass1.size for s in summaries):
        draw(f"{task}-pass1.png", "pass@1 against step; each run's peak starred",
             lambda p: figures.draw_pass1(groups, runs_by_spec, palette, p, title=task))
        draw(f"{task}-passk.png", f"final pass@k for {ks}",
             lambda p: figures.draw_passk(groups, runs_by_spec, palette, p, title=task))
    draw(f"{task}-entropy-rank1.png", "training entropy and rank-1 share of the head's update against step",
         lambda p: figures.draw_entropy_rank1(groups, runs_by_spec, palette, p, title=task))
    draw(f"{task}-plane.png", "each run's path over the sign-balance / difficulty plane",
         lambda p: figures.draw_plane_paths(runs_by_spec, p, title=task))
    # Each measured claim's figures of its result, in the report's order; then every claim's figures of
    # the runs, whether or not it was measured here.
    for section in sections:
        for drawing in section.claim.figures.of_result(section.result, view):
            draw(drawing.name, drawing.caption, drawing.draw)
    for claim in (*CHECKS, *CLAIMS):
        for drawing in claim.figures.of_runs(view):
            draw(drawing.name, drawing.caption, drawing.draw)
    return drawn


def _timing_table(runs: Sequence[RunSpec], summaries: Sequence[SweepRun]) -> Table:
    table = Table(
        [
            "task",
            "runs finished",
            "CPU min per run: mean (min–max)",
            "wall s per training step",
            "estimated CPU min per run",
            "CPU hours, all runs",
        ],
        caption="CPU time is the worker process's own (one torch thread); resumed runs count their last session only",
    )
    for task in dict.fromkeys(r.task for r in sorted(runs, key=lambda r: r.task != runs[0].task)):
        done = [s for s in summaries if s.task == task]
        cpu = [s.timing["cpu_seconds"] / 60 for s in done if "cpu_seconds" in s.timing]
        per_step = [float(s.timing["train_seconds"]) / max(len(s.steps), 1) for s in done]
        estimate = Stat.of(estimate_seconds(r) / 60 for r in runs if r.task == task)
        table.rows.append([
            task, f"{len(done)} of {sum(1 for r in runs if r.task == task)}",
            f"{Stat.of(cpu).mean:.1f} ({min(cpu):.1f}–{max(cpu):.1f})" if cpu else "—",
            f"{Stat.of(per_step).mean:.2f}" if per_step else "—", f"{estimate.mean:.1f}",
            f"{sum(cpu) / 60:.2f}" if cpu else "—",
        ])
    return table


def _settings_table(preset: Preset) -> Table:
    table = Table(
        ["task", "steps", "prompts x G per step", "eval every", "eval prompts x samples", "estimators", "seeds"]
    )
    for plan in preset.plans:
        estimators = ", ".join(arm.text for arm in plan.arms) + (
            f"; tuned: {', '.join(plan.tuned)}" if plan.tuned else ""
        )
        table.rows.append(
            [
                plan.task,
                str(plan.steps),
                f"{plan.prompts_per_step} x {plan.group_size}",
                str(plan.eval_every),
                f"{plan.eval_prompts} x {plan.eval_samples}",
                estimators,
                ", ".join(map(str, preset.seeds)),
            ]
        )
    return table


def _context(task: str, summaries: Sequence[SweepRun]) -> list[str]:
    """Measured facts about the scale of the runs on ``task``, for reading verdicts that fail."""
    runs = [s for s in summaries if s.task == task]
    if not runs:
        return []
    steps = max(s.run.steps for s in runs)
    facts = [
        f"{len(runs)} runs of {steps} steps at {runs[0].run.prompts_per_step} prompts x G = {runs[0].run.group_size}; "
        f"pass@1 measured every {runs[0].run.eval_every} steps on {runs[0].run.eval_prompts} prompts x "
        f"{runs[0].run.eval_samples} samples, so a peak's step is known to within {runs[0].run.eval_every} steps"
    ]
    base = Stat.of(s.scalars["base_pass1"] for s in runs)
    peaks = Stat.of(s.scalars["peak_pass1"] for s in runs)
    if base.n:
        facts.append(
            f"base pass@1 {base.mean:.3f}; peak pass@1 over all runs {min(peaks.values):.3f}–{max(peaks.values):.3f}"
        )
    balanced = {as_arm(b).identity for b in design.BALANCED}
    ratios = Stat.of(s.scalars["entropy_final"] / s.scalars["entropy_first"] for s in runs if s.identity in balanced)
    if ratios.n:
        facts.append(f"entropy of balanced runs (grpo, dr_grpo) at the end / at the start: {ratios.text(2)}")
    rank = Stat.of(s.scalars["rank1_final"] for s in runs)
    if rank.n:
        facts.append(
            f"final rank1_share over all runs {min(rank.values):.3f}–{max(rank.values):.3f} "
            f"(the paper reports > {PAPER_RANK1_SHARE} for every method at 500 steps, 0.96 for a failure-biased run)"
        )
    return facts


def _fixed(preset: Preset, trained_code: str | None) -> dict[str, Any]:
    """What the preset fixed before its runs (:attr:`Preset.design`), its training code's version the
    one the runs were trained on (the sweep folder's design record) where it is known, not this
    checkout's: a report may read runs another version trained."""
    fixed = preset.design
    if "code" in fixed and trained_code is not None:
        fixed["code"] = trained_code
    return fixed


def write_report(
    out: str | Path,
    *,
    preset: Preset,
    runs: Sequence[RunSpec],
    summaries: Sequence[SweepRun],
    sections: Sequence[ClaimSection],
    failures: dict[str, str],
    command: str,
    workers: int,
    choice: str | None = None,
    trained_code: str | None = None,
) -> Path:
    """Write README.md, the PNGs and results.json into ``out``; returns the README's path.

    ``sections`` are the claims in words (:func:`~fade.experiments.claims.report_sections`); the design
    checks are measured here, on every run. Nothing below knows a claim: each section says its own
    tables, verdicts, notes and caveat, and each claim draws its own figures. ``trained_code`` is the
    training code's version the sweep folder recorded when its runs began, written in results.json
    for a preset that pins it (None: this checkout's).
    """
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    summaries = list(summaries)
    tasks = [t for t in preset.tasks if any(r.task == t for r in runs)]
    palette = figures.colours(list(dict.fromkeys(s.run.arm.text for s in summaries)))
    copied = copies(summaries)

    lines = [
        f"# FADE's claims on the CPU testbed: preset `{preset.name}`",
        "",
        "Regenerate this report (finished runs are skipped, interrupted ones resumed):",
        "",
        "```",
        command,
        "```",
        "",
    ]
    lines += [preset.description, ""]
    lines += [f"{len(summaries)} of {len(runs)} runs finished"
              + (f"; **{len(failures)} failed** (listed at the end)" if failures else "")
              + f". Generated {_dt.date.today().isoformat()} by fade {report_numbers.version()}.", ""]

    # What must hold before any verdict below can be read: first, ahead of the setup.
    checks = design_checks(summaries)
    for section in checks:
        lines += report_numbers.check_lines(section)

    lines += ["## Setup", "",
              f"- Report written on: {_machine()} (the runs may have trained elsewhere; their CPU times below are "
              "each run's own).",
              f"- {workers} worker process(es), one torch thread each; runs are independent processes of the testbed "
              "trainer (`fade train`), checkpointed and resumable.", ""]
    lines += report_numbers.md_table(_settings_table(preset)) + [""]
    lines += ["CPU time per run, measured:", ""] + report_numbers.md_table(_timing_table(runs, summaries)) + [""]
    total_estimate = sum(estimate_seconds(r) for r in runs) / 60
    lines += [f"The cost model estimated {total_estimate:.0f} CPU minutes for the whole sweep "
              f"(`{command} --dry-run` prints the estimate per run).", ""]

    verdict_rows = [(s, v) for s in sections for v in s.verdicts]
    paired = report_numbers.paired(verdict_rows)
    # the design's minimum detectable difference per task: stated in the README and in results.json
    detectable = {task: m for task in tasks if (m := report_numbers.minimum_detectable(task, summaries))}
    lines += _how_to_read(paired, detectable, _ks_label(summaries))
    lines += _at_a_glance(verdict_rows, paired, sections, copied)

    atlas_specs = list(dict.fromkeys(s.run.estimator for s in summaries))
    if atlas_specs:
        group_size = summaries[0].run.group_size
        try:
            figures.draw_atlas(atlas_specs, group_size, out / "atlas.png")
            lines += ["## Gradient-mass atlas of the estimators trained", "",
                      f"m_S(p) and m_F(p) of every estimator at G = {group_size}, and where each sits on the "
                      "sign/difficulty plane (FADE's family at the two ends of its schedule).", "",
                      "![atlas](atlas.png)", ""]
        except ValueError as exc:
            warnings.warn(f"atlas.png: not drawn ({exc})", RuntimeWarning, stacklevel=2)

    drawn: dict[str, list[tuple[str, str]]] = {}
    for task in tasks:
        task_summaries = [s for s in summaries if s.task == task]
        if task_summaries:
            drawn[task] = _figures(out, task, task_summaries, [s for s in sections if s.task == task],
                                   fade_spec(preset, task, choice), palette)

    for section in sections:
        lines += report_numbers.claim_lines(section)

    for task, pictures in drawn.items():
        if not pictures:
            continue
        lines += [f"## Figures — {task}", ""]
        for name, caption in pictures:
            lines += [f"**{caption}**", "", f"![{caption}]({name})", ""]

    lines += _not_reproduced(checks, verdict_rows, tasks, summaries)
    analysis = out / ANALYSIS
    if analysis.is_file():
        lines += ["## Analysis", "", f"<sub>Hand-written in {ANALYSIS}, kept when the report is regenerated.</sub>", "",
                  analysis.read_text().strip(), ""]

    if failures:
        lines += [
            "## Failed runs",
            "",
            "Each keeps its checkpoint and its error in `error.txt`; rerun the command to retry.",
            "",
        ]
        lines += [f"- `{key}`: {message}" for key, message in sorted(failures.items())] + [""]

    lines += _every_run(summaries)

    readme = out / README
    text = "\n".join(lines).encode("utf-8")
    atomic_write(readme, lambda f: f.write(text))
    computed = report_numbers.interval_verdicts(sections)
    design = {
        "rule": "paired" if paired else "spread",
        "minimum_detectable_pass1": detectable,
        "intervals": {"computed": len(computed), "distinct": len({report_numbers.numbers(v) for v in computed})},
        "copies": [{"task": task, "arms": list(arms)} for task, arms in copied],
        "fixed": _fixed(preset, trained_code),
    }
    write_json_atomic(
        out / RESULTS_JSON,
        report_numbers.results_json(preset, runs, summaries, sections, failures, command, choice, design, checks),
    )
    return readme


def _how_to_read(paired: bool, detectable: dict[str, dict], ks: str) -> list[str]:
    """The rule in force (paired by seed, or the spread rule), the glossary, and the design's minimum
    detectable difference."""
    spread_rule = (  # follows "a claim that X "
        f"exceeds Y is **{SUPPORTED}** when X's seed mean is above Y's and the intervals mean ± std do "
        f"not overlap, **{NOT_SUPPORTED}** when the opposite ordering holds with non-overlapping intervals, and "
        f"**{OVERLAP}** otherwise; with fewer than {MIN_SEEDS} seeds a comparison is **{FEW_SEEDS}**. ")
    glossary = (
        "The entropy drop rate is the least-squares slope of the training entropy over "
        "the first third of the run (sign flipped); final entropy is the mean over the last tenth of the steps; "
        f"pass@k mean is the mean of the final pass@k over {ks}."
    )
    lines = ["## How to read the verdicts", ""]
    if not paired:
        return lines + [
            "Every number is a mean ± standard deviation over seeds (n = seeds with a finished run). A claim that X "
            + spread_rule
            + "A claim made of several comparisons is supported when all "
            "are, not supported when any contradicts it, and inconclusive otherwise. " + glossary,
            "",
        ]
    lines += [
        f"Rule in force: **paired by seed**. Seed s gives every estimator the same base policy and the same prompt "
        f"stream, so where both sides of a comparison share at least {MIN_PAIRED_SEEDS} seeds, a claim that X "
        f"exceeds Y is judged on the per-seed differences X_s − Y_s: the 95% interval of their mean is a seeded "
        f"bootstrap (10,000 resamples, expanded percentile interval; `fade.experiments.stats`). The claim is "
        f"**{SUPPORTED}** when the interval lies above 0, **{CONTRADICTED}** when it lies below 0, and "
        f"**{UNRESOLVED}** otherwise, printed with the interval's half-width. Against a constant (a step ratio of "
        f"1, a correlation of 0) the same rule runs on X_s − c. A comparison with fewer than {MIN_PAIRED_SEEDS} "
        f"shared seeds keeps the spread rule: a claim that X "
        + spread_rule
        + "A claim made of several comparisons is supported "
        "when all are, contradicted when any contradicts it, and unresolved otherwise. Tables show mean ± "
        "standard deviation over seeds. " + glossary,
        "",
    ]
    if detectable:
        lines += [
            f"Minimum detectable pass@1 difference of this design (paired, two-sided 95%, power "
            f"{STATISTICAL_POWER:.0%}: (t_0.975 + t_{STATISTICAL_POWER}) · SD / √n with t on n − 1 degrees of "
            "freedom, SD the observed standard deviation of paired peak-pass@1 differences. A true difference "
            f"of this size clears 0 in {STATISTICAL_POWER:.0%} of such experiments, a smaller one less often; "
            "the bootstrap interval behaves like the t-test this formula is for. The SD is itself estimated "
            "from n seeds, so the figure is a guide, not a guarantee):",
            "",
        ]
        lines += [f"- {task}: {m['text']}" for task, m in detectable.items()] + [""]
    return lines


def _at_a_glance(verdict_rows: Sequence[tuple[ClaimSection, VerdictLine]], paired: bool,
                 sections: Sequence[ClaimSection], copied: Sequence[tuple[str, Sequence[str]]]) -> list[str]:
    """Every claim's verdict in one table, their count, the arms that copy one another, and with the
    paired rule the table of every comparison behind them."""
    if not verdict_rows:
        lines = ["## Verdicts at a glance", "", "No claim could be measured: no finished run covers one.", ""]
    else:
        summary = Table(["task", "claim", "verdict"])
        summary.rows = [[s.task, v.statement, f"**{v.outcome}**"] for s, v in verdict_rows]
        lines = ["## Verdicts at a glance", "", report_numbers.verdict_count(verdict_rows, paired, sections), ""]
        lines += report_numbers.md_table(summary) + [""]
        if copied:
            lines += ["Arms that are copies of one another: their runs are the same on every seed, bit for bit (every "
                      "evaluation, reward and entropy), so they are one experiment under several names and a claim "
                      "resting on one of them is counted once:", ""]
            lines += [f"- {task}: " + " = ".join(f"`{arm}`" for arm in arms) for task, arms in copied] + [""]
    if paired:
        lines += ["## Verdict table", "", "Each comparison behind each claim: the mean paired difference (the claim's "
                  "first side minus its second, over the seeds both share), its 95% bootstrap interval and the verdict "
                  "read off it; a claim's own verdict (above) combines its rows.", ""]
        lines += report_numbers.md_table(report_numbers.verdict_table(verdict_rows)) + [""]
    return lines


def _not_reproduced(checks: Sequence[ClaimSection], verdict_rows: Sequence[tuple[ClaimSection, VerdictLine]],
                    tasks: Sequence[str], summaries: Sequence[SweepRun]) -> list[str]:
    """What a failed design check means for the claims of its task (its caveat), then every verdict
    that is not supported, why, and the measured scale of the runs."""
    lines = ["## Where the claims do not reproduce at this scale", ""]
    cautions = [section for section in checks if section.caveat is not None]
    for section in cautions:
        lines += [f"- {section.task}: " + section.caveat([v for s, v in verdict_rows if s.task == section.task])]
    if cautions:
        lines += [""]
    not_reproduced = [(s, v) for s, v in verdict_rows if v.outcome not in (SUPPORTED, NOT_MEASURED)]
    if not verdict_rows:
        return lines + ["Nothing was measured.", ""]
    if not not_reproduced:
        return lines + ["Every claim measured here is supported by the rule above.", ""]
    for section, verdict in not_reproduced:
        lines += [f"- {section.task}: {verdict.statement} — **{verdict.outcome}**: {_explain(verdict)}. "
                  f"<sub>{verdict.detail}</sub>"]
    lines += ["", "Measured scale of these runs, against which to read them:", ""]
    for task in tasks:
        lines += [f"- {task}: {fact}." for fact in _context(task, summaries)]
    return lines + [""]


def _every_run(summaries: Sequence[SweepRun]) -> list[str]:
    """Each run's own numbers, folded."""
    num = report_numbers.num
    table = Table(["run", "CPU min", "peak pass@1 (step)", "final pass@1", "final pass@64", "entropy first → final",
                   "final rank1_share"])
    for s in summaries:
        sc = s.scalars
        cpu = s.timing.get("cpu_seconds", math.nan) / 60
        table.rows.append(
            [
                f"`{s.run.key}`",
                "—" if not math.isfinite(cpu) else f"{cpu:.1f}",
                f"{num(sc['peak_pass1'])} ({num(sc['peak_step'], 0)})",
                num(sc["final_pass1"]),
                num(sc.get("pass@64", math.nan)),
                f"{num(sc['entropy_first'], 2)} → {num(sc['entropy_final'], 2)}",
                num(sc["rank1_final"]),
            ]
        )
    return ["## Every run", "", "<details><summary>per-run numbers</summary>", ""] + report_numbers.md_table(table) + [
        "", "</details>", ""]
