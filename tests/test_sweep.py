"""``fade sweep`` on a tiny grid: runs train in worker processes, a rerun skips what is finished and
resumes what is not, a failed run is reported without losing the others, verdicts come from the
numbers, and the report has its tables, verdict lines and PNGs."""

from __future__ import annotations

import dataclasses
import json
import math
import re
from pathlib import Path

import numpy as np
import pytest

from fade import jsonl
from fade.cli import main
from fade.cli.sweep import custom_preset
from fade.experiments.claims import design_checks, report_sections
from fade.experiments.claims.defaults import choose_tuned
from fade.experiments.claims.regime import REGIME_CALIBRATED, REGIME_NOT_CALIBRATED
from fade.experiments.claims.sign_knob import REQUIREMENT_MET, REQUIREMENT_NOT_MET
from fade.experiments.design import Preset, TaskPlan, Tuning
from fade.experiments.presets import PRESETS, get_preset
from fade.experiments.runs import summarise
from fade.experiments.stats import (
    CONTRADICTED,
    FEW_SEEDS,
    NOT_MEASURED,
    NOT_SUPPORTED,
    OVERLAP,
    SUPPORTED,
    UNRESOLVED,
    Stat,
    Verdict,
    combine,
    compare,
)
from fade.experiments.sweep import DONE, NEW, RESUME, inspect_run, report_sweep, run_sweep

VERDICTS = (SUPPORTED, NOT_SUPPORTED, OVERLAP, FEW_SEEDS, NOT_MEASURED)
SMALL = dict(
    steps=3, eval_every=2, eval_prompts=4, eval_samples=4, prompts_per_step=4, group_size=4, checkpoint_every=1
)


def _tiny(**overrides) -> Preset:
    """Two tasks; FADE's h_star_ratio tuned on arithmetic and carried to countdown without retuning."""
    plans = (
        TaskPlan(task="arithmetic", estimators=("grpo", "psr", "fade", "fade:h_star_ratio=0.3"), **SMALL),
        TaskPlan(task="countdown", estimators=("grpo",), tuned=("fade",), **SMALL),
    )
    base = dict(name="tiny", description="A tiny sweep for the tests.", seeds=(0,), plans=plans,
                tuning=Tuning(task="arithmetic", candidates=("fade", "fade:h_star_ratio=0.3")))
    base.update(overrides)
    return Preset(**base)


def _one(estimator: str = "grpo", **small) -> Preset:
    plan = TaskPlan(task="arithmetic", estimators=(estimator,), **{**SMALL, **small})
    return Preset(name="one", description="One run.", seeds=(0,), plans=(plan,))


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    """The tiny sweep run once with two worker processes."""
    out = tmp_path_factory.mktemp("sweep")
    outcome = run_sweep(_tiny(), out, workers=2, progress=False, command="fade sweep --preset tiny --out OUT")
    return out, outcome


def test_every_run_finishes_in_worker_processes(swept):
    out, outcome = swept
    assert outcome.ok, outcome.failed
    assert outcome.choice in ("fade", "fade:h_star_ratio=0.3")
    assert sorted(outcome.finished) == sorted(r.key for r in outcome.runs)
    assert len(outcome.runs) == 6  # 4 on arithmetic, grpo and the tuned FADE on countdown
    for run in outcome.runs:
        done = json.loads((run.directory(out) / "done.json").read_text())
        assert done["steps"] == 3 and done["cpu_seconds"] > 0
        assert done["torch_threads"] == 1  # one thread per worker: N workers use N cores
        assert not (run.directory(out) / "checkpoint.pt").exists()  # pruned once finished
        assert inspect_run(run, out)[0] == DONE
    tuned = [r for r in outcome.runs if r.tuned_from]
    assert [r.key for r in tuned] == [f"countdown/{r.label}/seed0" for r in tuned]
    assert json.loads((out / "tuning.json").read_text())["choice"] == outcome.choice
    assert tuned[0].estimator == outcome.choice


def test_report_has_command_tables_verdicts_and_pngs(swept):
    out, _ = swept
    text = (out / "README.md").read_text()
    assert text.splitlines()[0].startswith("# ")
    assert "fade sweep --preset tiny --out OUT" in text.split("## Setup")[0]  # the command heads the report
    assert "CPU min per run" in text and "| arithmetic |" in text
    assert "## Sign axis" in text and "## FADE (" in text and "## FADE's defaults" in text
    verdict_lines = [line for line in text.splitlines() if line.startswith("- **")]
    assert verdict_lines
    for line in verdict_lines:
        assert any(line.startswith(f"- **{v}**") for v in VERDICTS), line
    assert FEW_SEEDS in text  # one seed: no verdict is claimed
    pngs = [
        "atlas.png",
        *(f"{t}-{k}.png" for t in ("arithmetic", "countdown") for k in ("pass1", "passk", "entropy-rank1", "plane")),
    ]
    for name in pngs:
        path = out / name
        assert path.is_file() and 0 < path.stat().st_size < 400_000, name
        assert f"]({name})" in text, name
    results = json.loads((out / "results.json").read_text())
    assert {r["key"] for r in results["runs"]} == {r for r in _keys(out)}
    assert all(v["outcome"] in VERDICTS for c in results["claims"] for v in c["verdicts"])


def _keys(out: Path) -> list[str]:
    return ["/".join(p.parent.relative_to(out / "runs").parts) for p in (out / "runs").rglob("done.json")]


def test_rerun_skips_finished_runs_without_training(swept):
    out, first = swept
    stamps = {p: p.stat().st_mtime_ns for p in (out / "runs").rglob("*.jsonl*")}
    again = run_sweep(_tiny(), out, workers=1, progress=False)
    assert again.finished == [] and again.ok
    assert sorted(again.skipped) == sorted(first.finished)
    assert again.choice == first.choice
    assert {p: p.stat().st_mtime_ns for p in stamps} == stamps


def test_interrupted_run_is_resumed_not_restarted(tmp_path):
    short = run_sweep(_one(steps=2), tmp_path, workers=1, progress=False, keep_checkpoints=True)
    run = short.runs[0]
    metrics = run.directory(tmp_path) / "metrics.jsonl.gz"
    first_two = jsonl.read_bytes(metrics).decode().splitlines()
    # The planned run is longer than what is there: as if killed at step 2 of 3.
    planned = _one(steps=3)
    assert inspect_run(planned.runs()[0], tmp_path)[0] == RESUME
    resumed = run_sweep(planned, tmp_path, workers=1, progress=False)
    assert resumed.finished == [run.key]
    lines = jsonl.read_bytes(metrics).decode().splitlines()
    assert lines[:2] == first_two and json.loads(lines[2])["step"] == 3
    assert json.loads((run.directory(tmp_path) / "done.json").read_text())["resumed"] is True
    # A lost done marker with no checkpoint left: the run is trained again from the start.
    (run.directory(tmp_path) / "done.json").unlink()
    assert inspect_run(planned.runs()[0], tmp_path)[0] == NEW


def test_failed_run_is_reported_and_the_others_kept(tmp_path, capsys):
    # psr's folder holds a different run: it fails with a clear message, grpo still trains.
    blocked = tmp_path / "runs" / "arithmetic" / "psr" / "seed0"
    blocked.mkdir(parents=True)
    (blocked / "done.json").write_text(json.dumps({"config": {"steps": 99}}))
    argv = ["sweep", "--preset", "quick", "--out", str(tmp_path), "--estimators", "grpo,psr", "--seeds", "0",
            "--steps", "2", "--workers", "1", "--no-progress"]
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 1
    assert "arithmetic/psr/seed0" in err and "holds a different run" in err
    assert (tmp_path / "runs" / "arithmetic" / "grpo" / "seed0" / "done.json").is_file()
    assert (blocked / "error.txt").is_file()
    readme = (tmp_path / "README.md").read_text()
    assert "## Failed runs" in readme and "arithmetic/psr/seed0" in readme
    assert "--estimators grpo,psr --seeds 0 --steps 2 --workers 1" in readme


def test_a_second_sweep_into_the_same_folder_is_refused(tmp_path):
    import os

    (tmp_path / ".sweep.lock").write_text(f"{os.getppid()}\n")  # a live process that is not this one
    with pytest.raises(ValueError, match="another fade sweep"):
        run_sweep(_one(), tmp_path, workers=1, progress=False)
    assert not (tmp_path / "runs").exists()


def test_dry_run_lists_runs_and_estimates(tmp_path, capsys):
    assert main(["sweep", "--preset", "full", "--out", str(tmp_path), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "84 runs" in out and "arithmetic/power-alpha=3/seed2" in out
    assert "countdown/fade (parameters chosen on arithmetic)/seed0" in out
    assert "wall time on 2 worker(s)" in out
    assert not (tmp_path / "runs").exists()
    assert main(["sweep", "--out", str(tmp_path), "--dry-run", "--estimators", "grpo,power:alpha=3", "--seeds", "4",
                 "--steps", "7"]) == 0
    out = capsys.readouterr().out
    assert "2 runs" in out and "arithmetic/power-alpha=3/seed4" in out


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["--preset", "nope"], "unknown preset 'nope'; known presets: quick, full"),
        (["--estimators", "grpo,bogus"], "unknown estimator 'bogus'"),
        (["--estimators", "power:beta=2"], "'power' got unknown parameter(s) ['beta']"),
        (["--seeds", "0,x"], "'x' is not a non-negative integer"),
        (["--tasks", "chess"], "unknown task(s) ['chess']"),
        (["--workers", "0"], "--workers must be >= 1"),
        (["--steps", "0"], "--steps must be a positive integer"),
    ],
)
def test_bad_names_are_clear_errors(argv, needle, tmp_path, capsys):
    assert main(["sweep", "--out", str(tmp_path), "--dry-run", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("fade: error:") and needle in err, err


def test_presets_cover_the_claims_within_budget():
    from fade.experiments.costs import estimate_seconds, estimate_wall_seconds

    quick, full = get_preset("quick"), get_preset("full")
    assert set(PRESETS) == {"quick", "full", "paper", "entropy", "confirm", "shift"}
    for preset in (quick, full):
        preset.check()
    quick_wall = estimate_wall_seconds([estimate_seconds(r) for r in quick.runs()], 2)
    assert quick_wall < 12 * 60  # "about 10 minutes"
    runs = full.runs() + full.tuned_runs("fade")
    assert 2 * 3600 < estimate_wall_seconds([estimate_seconds(r) for r in runs], 2) < 5 * 3600
    assert all(len(full.seeds) >= 3 for _ in runs)
    arithmetic = full.plan("arithmetic").estimators
    for spec in ("psr", "asym_grpo:delta=2", "nsr", "asym_grpo:delta=0.5", "power:alpha=3", "fade_decay",
                 "fade:h_star_ratio=0.7", "rloo", "maxrl", "w_reinforce", "passk:k=4"):
        assert spec in arithmetic, spec
    assert full.plan("countdown").tuned == ("fade",) and full.tuning.task == "arithmetic"


def test_the_paper_preset_is_the_calibrated_paired_design_within_eight_cpu_hours():
    from fade.experiments.costs import estimate_seconds
    from fade.experiments.presets.paper import PAPER_FADE_ARMS

    paper = get_preset("paper")
    paper.check()
    runs = paper.runs()
    assert len(paper.seeds) >= 5 and paper.tuning is None
    assert sum(estimate_seconds(r) for r in runs) < 8.5 * 3600  # the cost model's estimate, 8.15 CPU hours
    adam, sgd = paper.plan("countdown_multi"), paper.plan("countdown_multi-sgd")
    assert adam.group_size == sgd.group_size == 16
    for spec in ("grpo", "dr_grpo", "psr", "nsr", "asym_grpo:delta=2", "asym_grpo:delta=0.5", "power:alpha=3",
                 *PAPER_FADE_ARMS, "fade_alpha", "fade_decay"):
        assert spec in adam.estimators, spec
    assert {"fade:h_star_ratio=1.0", "fade:h_star_ratio=1.2", "fade:h_star=1.0", "fade:ema=0.98"} <= set(
        PAPER_FADE_ARMS
    )
    # the SGD setting trains the same task, apart in folders and reports, with a plain unclipped step
    run = next(r for r in runs if r.task == "countdown_multi-sgd" and r.name == "nsr" and r.seed == 0)
    assert run.key == "countdown_multi-sgd/nsr/seed0" and run.testbed_task == "countdown_multi"
    kwargs = run.train_kwargs("OUT")
    assert kwargs["task"] == "countdown_multi" and kwargs["optimizer"] == "sgd" and kwargs["grad_clip"] >= 1e6
    assert kwargs["out"].replace("\\", "/").endswith("runs/countdown_multi-sgd/nsr/seed0")
    assert {r.key for r in runs} == {r.key for r in custom_preset(paper, tasks=list(paper.tasks)).runs()}
    only_sgd = custom_preset(paper, tasks=["countdown_multi-sgd"]).runs()
    assert {r.task for r in only_sgd} == {"countdown_multi-sgd"} and len(only_sgd) == 15


# -- the verdict rule and claims computed from the numbers -----------------------------------------


def test_compare_follows_the_stated_rule():
    high, low = Stat.of([1.0, 1.1, 0.9]), Stat.of([0.0, 0.1, -0.1])
    assert compare(high, low, greater=True).outcome == SUPPORTED
    assert compare(low, high, greater=True).outcome == NOT_SUPPORTED
    assert compare(low, high, greater=False).outcome == SUPPORTED
    assert compare(Stat.of([1.0, 0.0, 2.0]), low, greater=True).outcome == OVERLAP
    assert compare(Stat.of([1.0, 1.1]), low, greater=True).outcome == FEW_SEEDS
    assert compare(high, 0.5, greater=True).outcome == SUPPORTED  # against a constant
    assert compare(Stat.of([math.nan]), low, greater=True).outcome == NOT_MEASURED
    assert "1.000 ± 0.100 (n=3) vs 0.000 ± 0.100 (n=3)" in compare(high, low, greater=True).detail
    verdict = lambda o: Verdict(o, "")  # noqa: E731
    assert combine([verdict(SUPPORTED), verdict(SUPPORTED)]) == SUPPORTED
    assert combine([verdict(SUPPORTED), verdict(NOT_SUPPORTED)]) == NOT_SUPPORTED
    assert combine([verdict(SUPPORTED), verdict(OVERLAP)]) == OVERLAP


def _write_run(out: Path, run, entropy_slope: float, seed_noise: float, positive: float, negative: float) -> None:
    directory = run.directory(out)
    directory.mkdir(parents=True)
    with open(directory / "metrics.jsonl", "w") as f:
        for step in range(1, run.steps + 1):
            f.write(json.dumps({
                "step": step, "entropy": 1.0 - entropy_slope * step + seed_noise, "rank1_share": 0.5,
                "positive_mass": positive, "negative_mass": negative, "sign_balance": positive / (positive + negative),
                "difficulty": 0.5, "effective_sample_fraction": 0.5, "step_seconds": 0.1,
            }) + "\n")
    with open(directory / "eval.jsonl", "w") as f:
        for step in (0, run.steps):
            f.write(json.dumps({"step": step, "pass@1": 0.2 + step / 1000, "pass@2": 0.3 + step / 1000}) + "\n")


@pytest.mark.parametrize("psr_slope, expected", [(0.01, SUPPORTED), (0.0005, NOT_SUPPORTED)])
def test_sign_axis_verdict_is_computed_from_the_runs(tmp_path, psr_slope, expected):
    """Logs written by hand: the verdict follows the entropy the runs logged, whichever way it goes."""
    plan = TaskPlan(
        task="arithmetic", estimators=("grpo", "psr"), steps=30, eval_every=30, eval_prompts=4, eval_samples=2
    )
    summaries = []
    for seed in range(3):
        for spec, slope, pos, neg in (("grpo", 0.002, 0.2, 0.2), ("psr", psr_slope, 0.4, 0.0)):
            run = plan.run(spec, seed)
            _write_run(tmp_path, run, slope, 0.01 * seed, pos, neg)
            summaries.append(summarise(run, tmp_path))
    sections = report_sections(summaries)
    sign = next(s for s in sections if s.key == "sign")
    assert sign.verdicts[0].outcome == expected
    assert sign.tables[0].rows[0][0] == "psr"


def test_a_setting_added_to_the_trainer_later_keeps_finished_runs_finished():
    from fade.experiments.execution import _differences

    planned = {"estimator": "grpo", "steps": 3, "max_new_tokens": None, "out": "a"}
    recorded_before_the_option = {"estimator": "grpo", "steps": 3, "out": "b"}
    assert _differences(recorded_before_the_option, planned) == {}
    assert _differences(recorded_before_the_option, {**planned, "max_new_tokens": 5}) == {"max_new_tokens": (None, 5)}
    assert _differences({**recorded_before_the_option, "steps": 2}, planned) == {"steps": (2, 3)}


def _without_date(text: str) -> str:
    return re.sub(r"Generated \d{4}-\d{2}-\d{2}", "Generated DATE", text)


def test_report_only_rebuilds_the_report_from_finished_runs(swept):
    out, first = swept
    stamps = {p: p.stat().st_mtime_ns for p in (out / "runs").rglob("*.jsonl*")}
    outcome = report_sweep(_tiny(), out, workers=2, command="fade sweep --preset tiny --out OUT")
    assert sorted(outcome.skipped) == sorted(first.finished)
    before = (out / "README.md").read_text()
    assert f"{len(first.finished)} of {len(first.finished)} runs finished" in before
    (out / "README.md").unlink()
    report_sweep(_tiny(), out, workers=2, command="fade sweep --preset tiny --out OUT")
    assert _without_date((out / "README.md").read_text()) == _without_date(before)
    assert {p: p.stat().st_mtime_ns for p in stamps} == stamps  # nothing retrained
    with pytest.raises(ValueError, match="holds no sweep"):
        report_sweep(_tiny(), out / "nowhere")


def test_an_interrupted_sweep_reports_what_finished(tmp_path):
    def interrupt_after_first_run(line: str) -> None:
        if line.startswith("done"):
            raise KeyboardInterrupt

    preset = _tiny(plans=(TaskPlan(task="arithmetic", estimators=("grpo", "psr"), **SMALL),), tuning=None)
    with pytest.raises(KeyboardInterrupt):
        run_sweep(preset, tmp_path, workers=1, progress=False, log=interrupt_after_first_run)
    text = (tmp_path / "README.md").read_text()
    assert "1 of 2 runs finished" in text
    states = sorted(inspect_run(r, tmp_path)[0] for r in preset.runs())
    assert states == [DONE, NEW]


@pytest.mark.parametrize("better, chosen", [(0.0, "fade"), (0.05, "fade:h_star_ratio=0.3")])
def test_tuning_keeps_the_defaults_unless_a_candidate_scores_higher(tmp_path, better, chosen):
    """Bit-identical runs (an entropy target never reached) tie, and the tie keeps the defaults."""
    plan = TaskPlan(task="arithmetic", estimators=("fade:h_star_ratio=0.3", "fade"), steps=30, eval_every=30,
                    eval_prompts=4, eval_samples=2)
    tuning = Tuning(task="arithmetic", candidates=("fade:h_star_ratio=0.3", "fade"))
    summaries = []
    for seed in range(3):
        for spec in ("fade:h_star_ratio=0.3", "fade"):
            run = plan.run(spec, seed)
            _write_run(tmp_path, run, 0.002, 0.01 * seed, 0.2, 0.2)
            if spec != "fade" and better:
                path = run.directory(tmp_path) / "eval.jsonl"
                rows = [json.loads(line) for line in path.read_text().splitlines()]
                rows[-1] = {k: (v + better if k.startswith("pass@") else v) for k, v in rows[-1].items()}
                path.write_text("".join(json.dumps(r) + "\n" for r in rows))
            summaries.append(summarise(run, tmp_path))
    choice, rows = choose_tuned(tuning, summaries)
    assert choice == chosen
    assert len(rows) == 2


def test_entropy_check_draws_no_correlation_from_rounding_of_centred_runs(tmp_path):
    """Four centred runs whose logged imbalance is float noise that happens to track the entropy:
    no verdict (the first term predicts nothing), and the note says why."""
    plan = TaskPlan(task="countdown", estimators=("grpo", "rloo", "dr_grpo", "maxrl"), steps=60, eval_every=60,
                    eval_prompts=4, eval_samples=2)
    summaries = []
    for seed in range(3):
        for i, spec in enumerate(plan.estimators):
            noise = 3e-9 * (i + 1)
            _write_run(tmp_path, plan.run(spec, seed), 0.001 * (i + 1), 0.01 * seed, 0.2 + noise, 0.2)
            summaries.append(summarise(plan.run(spec, seed), tmp_path))
    check = next(s for s in report_sections(summaries) if s.key == "entropy_check")
    assert check.verdicts == []
    assert any("Every run here is of a centred estimator" in note for note in check.notes)
    assert all(s.scalars["entropy_predicted_early"] == 0.0 for s in summaries)


def test_five_seeds_give_paired_verdicts_a_verdict_table_and_the_detectable_difference(tmp_path):
    """Hand-written logs of 5 seeds: psr's entropy falls faster than grpo's and dr_grpo's on every
    seed by a margin the seed-to-seed spread hides, so the spread rule overlaps while the paired
    interval lies above 0; the report states the paired rule, its verdict table and the MDE."""
    from fade.experiments.results_report import write_report
    from fade.experiments.stats import MIN_PAIRED_SEEDS, minimum_detectable_difference, paired_differences

    seeds = tuple(range(MIN_PAIRED_SEEDS))
    plan = TaskPlan(task="arithmetic", estimators=("grpo", "dr_grpo", "psr"), steps=30, eval_every=30, eval_prompts=4,
                    eval_samples=2)
    preset = Preset(name="paired", description="Five seeds, paired.", seeds=seeds, plans=(plan,))
    shared = [0.0, 0.004, -0.003, 0.006, -0.005]  # per-seed offsets every estimator shares
    own = {"grpo": [0.0002, -0.0004, 0.0, 0.0004, -0.0002], "dr_grpo": [-0.0002, 0.0, 0.0004, -0.0004, 0.0002],
           "psr": [0.0001, -0.0001, 0.0, 0.0001, -0.0001]}  # what each run adds of its own: small
    summaries = []
    for seed in seeds:
        for spec, pos, neg in (("grpo", 0.2, 0.2), ("dr_grpo", 0.2, 0.2), ("psr", 0.4, 0.0)):
            run = plan.run(spec, seed)
            slope = 0.005 + shared[seed] + own[spec][seed] + (0.001 if spec == "psr" else 0.0)
            _write_run(tmp_path, run, slope, 0.0, pos, neg)
            path = run.directory(tmp_path) / "eval.jsonl"
            rows = [json.loads(line) for line in path.read_text().splitlines()]
            rows[-1]["pass@1"] += 2 * (shared[seed] + own[spec][seed])
            path.write_text("".join(json.dumps(r) + "\n" for r in rows))
            summaries.append(summarise(run, tmp_path))
    sections = report_sections(summaries, preset)
    sign = next(s for s in sections if s.key == "sign")
    line = sign.verdicts[0]
    assert line.outcome == SUPPORTED
    for name, part in line.parts:
        assert part.interval is not None and part.interval.n == 5 and part.interval.low > 0, name
        assert "paired difference +0.001" in part.detail
        # The spread rule on the same numbers cannot tell them apart.
        assert compare(Stat.of(part_values(summaries, name.split(" vs ")[0])),
                       Stat.of(part_values(summaries, name.split(" vs ")[1])), greater=True).outcome == OVERLAP

    out = tmp_path / "report"
    write_report(out, preset=preset, runs=preset.runs(), summaries=summaries, sections=sections, failures={},
                 command="fade sweep --preset paired", workers=1)
    text = (out / "README.md").read_text()
    assert "Rule in force: **paired by seed**" in text
    table = text.split("## Verdict table")[1].split("\n## ")[0]
    assert "| task | claim | comparison | mean difference | 95% CI | verdict |" in table
    assert re.search(
        r"\| arithmetic \| Success-biased weights .* \| psr vs grpo \| \+0\.0010\d* \| \[\+0\.\d+, \+0\.\d+\] "
        r"\(n=5\) \| \*\*supported\*\* \|",
        table,
    ), table
    peaks = {spec: {s.seed: s.scalars["peak_pass1"] for s in summaries if s.run.estimator == spec} for spec in own}
    sd = float(np.std(paired_differences(peaks["grpo"], peaks["dr_grpo"]), ddof=1))
    mdd = minimum_detectable_difference(sd, 5)
    stated = re.search(r"- arithmetic: \*\*([0-9.]+)\*\* at n = 5 seeds \(SD of paired differences ([0-9.]+), "
                       r"between grpo, dr_grpo; 5 differences\)", text)
    assert stated, text
    assert float(stated[1]) == pytest.approx(mdd, rel=0.05) and float(stated[2]) == pytest.approx(sd, rel=0.05)
    results = json.loads((out / "results.json").read_text())
    assert results["design"]["rule"] == "paired"
    assert results["design"]["minimum_detectable_pass1"]["arithmetic"]["mdd"] == pytest.approx(mdd)
    part = results["claims"][0]["verdicts"][0]["parts"][0]
    assert part["interval"]["n"] == 5 and part["interval"]["low"] > 0


def part_values(summaries, spec: str) -> list[float]:
    return [s.scalars["entropy_drop_rate"] for s in summaries if s.run.estimator == spec]


# -- the paper preset's report: design checks, the entropy formula with both terms, FADE's arms --------

PAPER_LIKE = dict(steps=100, eval_every=10, eval_prompts=4, eval_samples=4, prompts_per_step=4, group_size=4)
ADAM_SPECS = (
    "grpo",
    "dr_grpo",
    "psr",
    "nsr",
    "fade",
    "fade:h_star_ratio=1.0",
    "fade_alpha",
    "fade_delta:h_star_ratio=1.0",
    "fade_decay",
)
#: Per estimator: (m_S, m_F) while delta = 1, the level of its entropy drive, its pass@1 lift, its
#: extra pass@k (k >= 2) at the end. The engaged FADE arm gains on both; fade_delta loses the pass@k.
PAPER_LIKE_RUNS = {
    "grpo": ((0.2, 0.2), -1.0, 0.0, 0.0), "dr_grpo": ((0.2, 0.2), -0.8, 0.0, 0.0),
    "psr": ((0.4, 0.0), -2.0, 0.0, 0.0), "nsr": ((0.0, 0.4), 1.0, 0.0, 0.0),
    "fade": ((0.2, 0.2), -0.6, 0.0, 0.0), "fade:h_star_ratio=1.0": ((0.2, 0.2), 0.8, 0.05, 0.05),
    "fade_alpha": ((0.2, 0.2), -1.5, 0.0, 0.0), "fade_delta:h_star_ratio=1.0": ((0.2, 0.2), 0.5, 0.05, -0.05),
    "fade_decay": ((0.2, 0.2), -0.5, -0.05, -0.05),
}


def _paper_like_preset() -> Preset:
    adam = TaskPlan(task="countdown_multi", estimators=ADAM_SPECS, **PAPER_LIKE)
    sgd = TaskPlan(
        task="countdown_multi-sgd", trains_on="countdown_multi", estimators=("psr", "grpo", "nsr"), **PAPER_LIKE
    )
    return Preset(name="paper-like", description="Hand-written logs shaped like the paper preset's.",
                  seeds=tuple(range(5)), plans=(adam, sgd))


def _write_logged(out: Path, run, records: list[dict], evals: list[dict]) -> None:
    directory = run.directory(out)
    directory.mkdir(parents=True)
    (directory / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    (directory / "eval.jsonl").write_text("".join(json.dumps(r) + "\n" for r in evals))


def _paper_like_sweep(
    out: Path,
    *,
    direction: float = 1.0,
    knob_share: float = 0.4,
    late: tuple[str, int] | None = None,
    spike: tuple[str, int] | None = None,
):
    """Every run of the paper-like preset written by hand, returned summarised. The entropy moves by
    ``direction`` * eta * entropy_drive at every step (the formula, exactly, when direction = 1);
    the sign-engaged arms have delta < 1 on the last ``knob_share`` of their steps; balanced runs peak
    in pass@1 at half the run, except ``late`` = (spec, seed), which peaks at the last evaluation, and
    ``spike`` = (spec, seed), whose last evaluation alone rises above its mid-run peak."""
    preset = _paper_like_preset()
    rng = np.random.default_rng(0)
    summaries = []
    for run in preset.runs():
        (m_s, m_f), level, lift, wide = PAPER_LIKE_RUNS[run.estimator]
        engaged = run.estimator in ("fade:h_star_ratio=1.0", "fade_delta:h_star_ratio=1.0")
        phase, level = rng.uniform(0, 2 * np.pi), level + rng.normal(0, 0.2)
        entropy, records = 1.0, []
        for step in range(1, run.steps + 1):
            delta = 0.6 if engaged and step > run.steps * (1 - knob_share) else 1.0
            negative = m_f / delta
            drive = level + 0.5 * np.sin(2 * np.pi * step / 80 + phase)
            mass_term = (m_s - negative) * entropy
            record = {"step": step, "entropy": entropy, "rank1_share": 0.5, "positive_mass": m_s,
                      "negative_mass": negative, "sign_balance": m_s / (m_s + negative), "difficulty": 0.5,
                      "effective_sample_fraction": 0.5, "step_seconds": 0.1, "mass_entropy_term": mass_term,
                      "cov_adv_logp": -drive - mass_term, "entropy_drive": drive}
            if run.name.startswith("fade"):
                record.update(alpha=2.0, delta=delta, p_hat=0.3, h_hat=entropy, h_star=1.0)
            records.append(record)
            entropy += direction * 0.002 * drive
        seed_effect = 0.01 * run.seed + rng.normal(0, 0.002)
        evals = []
        for step in range(0, run.steps + 1, run.eval_every):
            rising = (run.estimator, run.seed) == late
            shape = step / run.steps if rising else 1 - abs(step - run.steps / 2) / (run.steps / 2)
            pass1 = 0.2 + 0.1 * shape + (lift + seed_effect if step else 0.0)
            if (run.estimator, run.seed) == spike and step == run.steps:
                pass1 += 0.12
            extra = wide if step == run.steps else 0.0
            evals.append({"step": step, "pass@1": pass1, "pass@2": pass1 + 0.1 + extra, "pass@4": pass1 + 0.2 + extra})
        _write_logged(out, run, records, evals)
        summaries.append(summarise(run, out))
    return preset, summaries


def _section(sections, key: str, task: str):
    return next(s for s in sections if s.key == key and s.task == task)


def test_paper_report_answers_the_regime_the_sign_knob_the_entropy_formula_and_fades_arms(tmp_path):
    from fade.experiments.results_report import write_report

    preset, summaries = _paper_like_sweep(tmp_path / "sweep")
    sections = report_sections(summaries, preset)
    adam, sgd = "countdown_multi", "countdown_multi-sgd"

    checks = design_checks(summaries)
    assert [(s.key, s.task) for s in checks] == [("regime", adam), ("regime", sgd), ("sign_knob", adam),
                                                  ("schedule", adam), ("collapse", adam), ("collapse", sgd)]
    assert all(s.check.outcome == REQUIREMENT_MET and not s.tables for s in checks[4:])  # no run collapsed
    schedule = checks[3]
    assert schedule.check.outcome == REQUIREMENT_MET
    rows = {row[0]: row for row in schedule.tables[0].rows}
    assert set(rows) == {"fade", "fade:h_star_ratio=1.0", "fade_alpha", "fade_delta:h_star_ratio=1.0", "fade_decay"}
    assert all(s.check.outcome == REGIME_CALIBRATED for s in checks[:2])
    assert "seed 0: 50 (50%)" in checks[0].tables[0].rows[0][1]
    assert "grpo (5 seeds) peaks at 50 (50%) with 90% of its gain by " in checks[0].notes[0]
    knob = checks[2]
    assert knob.check.outcome == REQUIREMENT_MET
    assert "fade:h_star_ratio=1.0" in knob.check.detail
    rows = {row[0]: row for row in knob.tables[0].rows}
    assert set(rows) == {"fade", "fade:h_star_ratio=1.0", "fade_alpha", "fade_delta:h_star_ratio=1.0", "fade_decay"}
    assert rows["fade:h_star_ratio=1.0"][2] == "0.40 (0.40, 0.40, 0.40, 0.40, 0.40)"
    assert rows["fade"][2].startswith("0.00")

    # The entropy formula with both terms, per plan and per sign: entropy moved by the drive -> supported.
    assert not any(s.key == "entropy_check" for s in sections)  # the mass-only check is for runs without the terms
    for task in (adam, sgd):
        formula = _section(sections, "entropy_formula", task)
        groups = [row[0] for row in formula.tables[0].rows]
        assert groups == ["all runs", "success-heavy", "failure-heavy", "centred"]
        across, within = formula.verdicts
        assert within.outcome == SUPPORTED
        assert all(part.outcome == SUPPORTED and part.interval is not None for _, part in within.parts)
        assert across.outcome == SUPPORTED
    across = _section(sections, "entropy_formula", adam).verdicts[0]
    by_group = dict(across.parts)
    assert by_group["success-heavy"].outcome == NOT_MEASURED  # psr is the only success-heavy run of a seed
    assert by_group["all runs"].interval.n == 5
    classes = _section(sections, "entropy_formula", adam).result.classes
    assert classes["countdown_multi/psr/seed0"] == "success-heavy"
    assert classes["countdown_multi/fade-h_star_ratio=1.0/seed0"] == "failure-heavy"
    assert classes["countdown_multi/fade/seed0"] == "centred"

    # FADE's arms against grpo and dr_grpo, paired; the ablations against the engaged arm.
    arms = _section(sections, "fade_arms", adam)
    accuracy = {v.statement.split(" ")[0]: v for v in arms.verdicts if "raises accuracy" in v.statement}
    diversity = {v.statement.split(" ")[0]: v for v in arms.verdicts if "raises diversity" in v.statement}
    assert set(accuracy) == set(diversity) == {"fade", "fade:h_star_ratio=1.0"}
    for lines, parts in ((accuracy, ["peak vs grpo", "peak vs dr_grpo"]),
                         (diversity, ["pass@k mean vs grpo", "pass@k mean vs dr_grpo"])):
        assert lines["fade:h_star_ratio=1.0"].outcome == SUPPORTED
        assert [name for name, _ in lines["fade:h_star_ratio=1.0"].parts] == parts
        assert lines["fade"].outcome != SUPPORTED
    ablations = _section(sections, "ablations_engaged", adam)
    outcomes = {v.statement.split(": ")[0]: v.outcome for v in ablations.verdicts}
    assert outcomes == {"Without delta (fade_alpha) entropy collapses": SUPPORTED,
                        "Without alpha (fade_delta:h_star_ratio=1.0) pass@k drops": SUPPORTED,
                        "fade_decay loses accuracy to the adaptive controller": SUPPORTED,
                        "fade_decay loses diversity to the adaptive controller": SUPPORTED}
    assert "than fade:h_star_ratio=1.0" in ablations.verdicts[0].statement

    out = tmp_path / "report"
    write_report(out, preset=preset, runs=preset.runs(), summaries=summaries, sections=sections, failures={},
                 command="fade sweep --preset paper-like", workers=1)
    text = (out / "README.md").read_text()
    first = text.index("## Regime check")
    assert first < text.index("## Setup") and first == text.index("\n## ") + 1  # the report's first section
    assert "Verdict: **regime calibrated**. Requirement: Every seed of the balanced baselines (grpo, dr_grpo)" in text
    assert "Verdict: **requirement met**" in text
    outcomes = [v.outcome for s in sections for v in s.verdicts]
    resolved = sum(o in (SUPPORTED, CONTRADICTED) for o in outcomes)
    assert f"{len(outcomes)} claims: {resolved} resolved ({outcomes.count(SUPPORTED)} supported, " in text
    assert "paired intervals" in text and "each at 95% on its own with no correction" in text
    assert "## Entropy formula with both terms" in text and "## FADE's arms (H* sensitivity)" in text
    for name in (f"{adam}-entropy-formula.png", f"{sgd}-entropy-formula.png", f"{adam}-delta.png",
                 f"{adam}-schedule.png"):
        assert (out / name).is_file() and (out / name).stat().st_size > 0, name
        assert f"]({name})" in text, name
    assert not (out / f"{sgd}-delta.png").exists()  # no FADE arm with plain SGD
    results = json.loads((out / "results.json").read_text())
    assert [c["outcome"] for c in results["design_checks"]] == [
        REGIME_CALIBRATED, REGIME_CALIBRATED, *[REQUIREMENT_MET] * 4]
    assert "some runs collapsed" not in text and "the regime check failed" not in text
    assert results["claims"][0]["key"] == "sign"


@pytest.mark.parametrize("late, spike, share, regime, knob", [
    (("dr_grpo", 3), None, 0.4, "regime not calibrated", "requirement met"),
    (None, ("grpo", 2), 0.2, "regime calibrated", "requirement not met"),
])
def test_design_checks_follow_the_logged_peaks_and_deltas(tmp_path, late, spike, share, regime, knob):
    """A balanced baseline rising to its last evaluation on one seed fails the regime, one whose last
    evaluation alone jumps above its mid-run peak does not (the check reads the 3-evaluation moving
    average); an arm with delta < 1 on only 20% of its steps does not meet the issue's 30%."""
    _, summaries = _paper_like_sweep(tmp_path, knob_share=share, late=late, spike=spike)
    sections = {s.key + "/" + s.task: s for s in design_checks(summaries)}
    checks = {key: s.check for key, s in sections.items()}
    assert checks["regime/countdown_multi"].outcome == regime
    assert checks["regime/countdown_multi-sgd"].outcome == "regime calibrated"
    assert checks["sign_knob/countdown_multi"].outcome == knob
    if late:
        assert "dr_grpo seed 3 (90%)" in checks["regime/countdown_multi"].detail  # the last full window
    if spike:
        grpo = sections["regime/countdown_multi"].tables[0].rows[0]
        assert "seed 2: 50 (50%)" in grpo[1] and "100 (100%)" in grpo[3]  # smoothed peak mid-run, raw at the end


def test_the_regime_caveat_says_whether_a_plan_reads_peaks(tmp_path):
    """A late baseline on both plans: the Adam plan's FADE claims read peaks, the SGD plan's sign and
    entropy-formula claims do not, and the report's caveat says which."""
    from fade.experiments.results_report import write_report

    preset, summaries = _paper_like_sweep(tmp_path / "sweep", late=("grpo", 2))
    checks = {s.task: s.check for s in design_checks(summaries) if s.key == "regime"}
    assert {task: check.outcome for task, check in checks.items()} == {
        "countdown_multi": REGIME_NOT_CALIBRATED, "countdown_multi-sgd": REGIME_NOT_CALIBRATED}
    out = tmp_path / "report"
    write_report(out, preset=preset, runs=preset.runs(), summaries=summaries,
                 sections=report_sections(summaries, preset), failures={}, command="fade sweep", workers=1)
    text = (out / "README.md").read_text()
    assert ("- countdown_multi: the regime check failed (**regime not calibrated**): a balanced baseline was still "
            "climbing late in the run, so claims about peaks") in text
    assert ("- countdown_multi-sgd: the regime check failed (**regime not calibrated**): a balanced baseline was "
            "still climbing late in the run, but no claim of this plan reads a peak.") in text


def test_entropy_moving_against_the_drive_contradicts_the_formula(tmp_path):
    _, summaries = _paper_like_sweep(tmp_path, direction=-1.0)
    sections = report_sections(summaries)
    for task in ("countdown_multi", "countdown_multi-sgd"):
        formula = _section(sections, "entropy_formula", task)
        assert formula.verdicts[1].outcome == CONTRADICTED
        assert any("correlates *negatively*" in note for note in formula.notes)


def test_runs_without_the_new_keys_keep_the_old_report(tmp_path):
    """Logs from before the trainer wrote the formula's terms and FADE's schedule: the mass-only
    entropy check as before, and no entropy-formula, sign-knob or FADE-arm section."""
    from fade.experiments.results_report import write_report

    plan = TaskPlan(task="arithmetic", estimators=("grpo", "psr", "fade"), steps=30, eval_every=30, eval_prompts=4,
                    eval_samples=2)
    preset = Preset(name="old", description="Old logs.", seeds=(0, 1, 2), plans=(plan,))
    summaries = []
    for seed in preset.seeds:
        for spec, slope, pos, neg in (("grpo", 0.002, 0.2, 0.2), ("psr", 0.01, 0.4, 0.0), ("fade", 0.003, 0.2, 0.2)):
            _write_run(tmp_path, plan.run(spec, seed), slope, 0.01 * seed, pos, neg)
            summaries.append(summarise(plan.run(spec, seed), tmp_path))
    sections = report_sections(summaries, preset)
    keys = {s.key for s in sections}
    assert "entropy_check" in keys
    assert not keys & {"entropy_formula", "fade_arms", "ablations_engaged"}
    assert [s.key for s in design_checks(summaries)] == ["regime", "collapse"]  # pass@1 logged; delta not
    assert all(math.isnan(s.scalars["delta_below1"]) and math.isnan(s.scalars["drive_r_blocks"]) for s in summaries)
    out = tmp_path / "report"
    write_report(out, preset=preset, runs=preset.runs(), summaries=summaries, sections=sections, failures={},
                 command="fade sweep --preset old", workers=1)
    text = (out / "README.md").read_text()
    assert "sign knob" not in text and "Entropy formula with both terms" not in text
    assert not list(out.glob("*-delta.png")) and not list(out.glob("*-entropy-formula.png"))


def test_a_baseline_that_never_rises_above_its_base_fails_the_regime(tmp_path):
    """A run whose smoothed pass@1 peaks at step 0 (it collapsed after the base evaluation, as plain SGD
    at too large a step does) has no peak to decline from: the regime check names it and fails."""
    preset, summaries = _paper_like_sweep(tmp_path)
    collapsed = next(
        s for s in summaries if s.run.task == "countdown_multi" and s.run.estimator == "grpo" and s.seed == 1
    )
    path = collapsed.run.directory(tmp_path) / "eval.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    for row in rows[1:]:
        row.update({key: 0.0 for key in row if key != "step"})
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    summaries = [summarise(s.run, tmp_path) if s is collapsed else s for s in summaries]
    section = next(s for s in design_checks(summaries) if s.key == "regime" and s.task == "countdown_multi")
    check = section.check
    assert check.outcome == REGIME_NOT_CALIBRATED
    assert "never above the base evaluation (diverged or no gain): grpo seed 1" in check.detail
    assert "seed 1: **no gain**," in section.tables[0].rows[0][1]
    assert section.tables[0].rows[0][4] == "4 of 5"
    assert section.tables[0].rows[0][2].split(", ")[1] == "—"  # no gain: no step with 90% of it

    # The collapse check names it too (its last pass@1 is below half its base), and the report says
    # which way the regime failed.
    from fade.experiments.results_report import write_report

    collapse = next(s for s in design_checks(summaries) if s.key == "collapse" and s.task == "countdown_multi")
    assert collapse.check.outcome == REQUIREMENT_NOT_MET
    assert collapse.result.seeds == {"grpo": [1]}
    assert "(grpo seeds 1)" in collapse.check.detail
    assert collapse.tables[0].rows == [["grpo", "1 of 5", f"seed 1: {collapsed.scalars['base_pass1']:.3f} -> 0.000"]]
    out = tmp_path / "report"
    write_report(out, preset=preset, runs=preset.runs(), summaries=summaries,
                 sections=report_sections(summaries, preset), failures={}, command="fade sweep", workers=1)
    text = (out / "README.md").read_text()
    assert "a balanced baseline never rose above its base evaluation (it diverged or learnt nothing)" in text
    assert "still climbing late" not in text
    assert "- countdown_multi: some runs collapsed (**requirement not met**)" in text and "grpo: seeds 1</sub>" in text


# -- arms with training of their own, and the entropy preset ----------------------------------------

RESULTS = Path(__file__).resolve().parents[1] / "docs" / "results"


@pytest.mark.parametrize("name, folder", [("quick", "quick"), ("full", "."), ("paper", "paper")])
def test_the_shipped_presets_keep_their_run_keys_and_folders(name, folder):
    """Every run of the presets whose runs docs/results ships is found where it was trained, so a
    sweep into those folders still skips or resumes them; an arm that sets nothing is its estimator."""
    preset, out = get_preset(name), RESULTS / folder
    runs = preset.runs() + preset.tuned_runs(
        json.loads((out / "tuning.json").read_text())["choice"] if preset.tuning else ""
    )
    assert len(runs) == {"quick": 12, "full": 84, "paper": 120}[name]
    for run in runs:
        assert run.overrides == () and run.arm.text == run.estimator
        assert run.label == run.estimator.replace(":", "-")
        assert run.key == f"{run.task}/{run.label}/seed{run.seed}"
        assert run.directory(out).is_dir(), run.key


def test_an_arm_names_its_training_in_its_key_and_folder():
    from fade.experiments.design import as_arm

    plan = TaskPlan(task="countdown_multi", estimators=(
        "dr_grpo", as_arm("dr_grpo", policy_loss="ppo_clip:clip_ratio_high=0.28", filter_zero_variance=True),
        as_arm("dr_grpo", entropy="entropy_bonus:coef=1e-2")), steps=3, eval_every=3, eval_prompts=4,
        trainer=(("lr", 2e-4), ("minibatches", 4)))
    plain, dapo, bonus = (plan.run(arm, 2) for arm in plan.estimators)
    assert plain.key == "countdown_multi/dr_grpo/seed2"
    assert dapo.arm.text == "dr_grpo+filter_zero_variance=true+policy_loss=ppo_clip:clip_ratio_high=0.28"
    assert (
        dapo.key == "countdown_multi/dr_grpo+filter_zero_variance=true+policy_loss=ppo_clip-clip_ratio_high=0.28/seed2"
    )
    assert bonus.label == "dr_grpo+entropy=entropy_bonus-coef=0.01"  # loss specs are kept canonical
    assert dapo.directory("OUT") == Path("OUT") / "runs" / "countdown_multi" / dapo.label / "seed2"
    kwargs = dapo.train_kwargs("OUT")
    assert kwargs["estimator"] == "dr_grpo" and kwargs["lr"] == 2e-4 and kwargs["minibatches"] == 4
    assert kwargs["policy_loss"] == "ppo_clip:clip_ratio_high=0.28" and kwargs["filter_zero_variance"] is True
    assert "policy_loss" not in plain.train_kwargs("OUT")  # the plain arm trains as its plan says
    assert dapo.arm == as_arm("dr_grpo", filter_zero_variance=True, policy_loss="ppo_clip:clip_ratio_high=0.28")
    assert dapo.arm.identity != plain.arm.identity and plain.arm.identity == as_arm("dr_grpo").identity
    assert as_arm(bonus.arm, minibatches=2).text == "dr_grpo+entropy=entropy_bonus:coef=0.01+minibatches=2"
    with pytest.raises(ValueError, match="already sets entropy"):
        as_arm(bonus.arm, entropy="entropy_bonus:coef=0.1")


def test_the_entropy_preset_is_the_paper_design_with_the_controls_on_one_update_schedule():
    from fade.experiments.costs import estimate_seconds, estimate_wall_seconds
    from fade.experiments.presets.entropy import (
        ENTROPY_BASELINE,
        ENTROPY_CONTROLS,
        ENTROPY_FADE,
        ENTROPY_FADE_COMBINED,
        ENTROPY_STATIC_TWIN,
    )

    entropy, paper = get_preset("entropy"), get_preset("paper")
    entropy.check()
    (plan,), adam = entropy.plans, paper.plan("countdown_multi")
    assert entropy.seeds == paper.seeds and entropy.tuning is None
    for field in ("task", "steps", "eval_every", "eval_prompts", "eval_samples", "prompts_per_step", "group_size"):
        assert getattr(plan, field) == getattr(adam, field), field
    # four optimizer steps a batch at a quarter of the paper preset's learning rate: a batch moves the weights
    # about as far as the paper preset's one step (at the paper preset's own rate four steps over-stepped)
    assert dict(plan.trainer) == {**dict(adam.trainer), "minibatches": 4, "lr": dict(adam.trainer)["lr"] / 4}
    assert all(r.train_kwargs("OUT")["lr"] == 5e-5 for r in entropy.runs())
    arms = [ENTROPY_BASELINE, ENTROPY_FADE, *ENTROPY_CONTROLS, ENTROPY_FADE_COMBINED, ENTROPY_STATIC_TWIN]
    assert plan.arms == tuple(c.arm for c in arms) and len(arms) == 15
    assert ENTROPY_STATIC_TWIN.arm.text == "power:alpha=3"  # FADE's static twin, beside the controls
    assert ENTROPY_FADE.arm.text == "fade:h_star_ratio=0.7" and ENTROPY_BASELINE.arm.text == "dr_grpo"
    settings = {c.name: dict(c.arm.overrides) for c in ENTROPY_CONTROLS}
    assert settings["entropy bonus, tuned"] == {"entropy": "entropy_bonus:coef=0.01"}
    assert settings["adaptive entropy, tuned"] == {"entropy": "adaptive_entropy:target_ratio=0.7"}  # FADE's H*
    assert settings["DAPO: clip-higher + dynamic sampling"] == {
        "filter_zero_variance": True, "policy_loss": "ppo_clip:clip_ratio_high=0.28"}
    assert all(c.arm.estimator == "dr_grpo" and c.arm.overrides and c.source for c in ENTROPY_CONTROLS)
    runs = entropy.runs()
    assert len(runs) == 75 and len({r.directory("OUT") for r in runs}) == 75
    assert all(r.train_kwargs("OUT")["minibatches"] == 4 for r in runs)  # every arm, dr_grpo and FADE too
    # the cost model's estimate, as docs/results/README.md states it
    assert sum(estimate_seconds(r) for r in runs) / 3600 == pytest.approx(5.10, abs=0.01)
    assert estimate_wall_seconds([estimate_seconds(r) for r in runs], 2) / 3600 == pytest.approx(2.58, abs=0.01)


def test_every_setting_an_arm_may_set_is_a_trainer_setting():
    from fade.experiments.design import ARM_SETTINGS
    from fade.testbed.config import TrainConfig

    assert set(ARM_SETTINGS) <= {f.name for f in dataclasses.fields(TrainConfig)}


@pytest.mark.parametrize("overrides, needle", [
    ({"policy_loss": "ppo_clipp"}, "unknown policy loss 'ppo_clipp'"),
    ({"policy_loss": "ppo_clip:clip_ratio_low=2"}, "clip_ratio_low must be a number in [0, 1]"),
    ({"policy_loss": "entropy_bonus"}, "'entropy_bonus' is an entropy term, not a policy loss"),
    ({"entropy": "adaptive_entropy:target_ratio=0"}, "target_ratio must be a finite number > 0"),
    ({"entropy": "adaptive_entropy:target=0.3,target_ratio=0.7"}, "give target or target_ratio, not both"),
    ({"entropy": "entropy_bonus:target_ratio=0.7"}, "'entropy_bonus' got unknown parameter(s) ['target_ratio']"),
    ({"entropy": "adaptive_entropy:coef=2"}, "must lie in [coef_min, coef_max]"),
    ({"filter_zero_variance": 1}, "filter_zero_variance must be true or false, got 1"),
    ({"minibatches": 0}, "minibatches must be a positive integer, got 0"),
    ({"filter_max_draws": 3}, "--filter-max-draws 3 applies with --filter-zero-variance only"),
    ({"learning_rate": 1e-3}, "unknown training setting 'learning_rate'; an arm may set policy_loss, entropy"),
])
def test_a_bad_arm_is_refused_before_any_run_trains(tmp_path, overrides, needle):
    from fade.experiments.design import as_arm

    bad = as_arm("dr_grpo", **overrides)
    preset = _one()
    preset = dataclasses.replace(preset, plans=(dataclasses.replace(preset.plans[0], estimators=("grpo", bad)),))
    with pytest.raises(ValueError) as caught:
        preset.check()
    assert needle in str(caught.value) and f"arm {bad.text!r}" in str(caught.value)
    with pytest.raises(ValueError, match="arm 'dr_grpo\\+"):
        run_sweep(preset, tmp_path, workers=1, progress=False)
    assert not (tmp_path / "runs").exists()


#: The hand-written entropy sweep: per arm, its peak pass@1 over FADE's, its final pass@k over
#: FADE's (at k >= 2), its final entropy and its distinct correct answers.
ENTROPY_LIKE = {"FADE": (0.0, 0.0, 0.30, 1.2), "dr_grpo (no control)": (0.0, -0.08, 0.20, 0.9),
                "entropy bonus, tuned": (-0.10, -0.10, 0.50, 0.8), "clip-higher, recommended": (0.0, 0.0, 0.25, 1.1),
                "FADE + clip-higher": (0.0, 0.0, 0.31, 1.2)}
#: What each run adds of its own, per seed: small, centred.
OWN = (0.002, -0.002, 0.001, -0.001, 0.0)


def _entropy_like_sweep(out: Path, names=tuple(ENTROPY_LIKE), clip_gap: float = 0.0):
    """An entropy-preset layout of 5 seeds written by hand: FADE, dr_grpo with the same peak pass@1
    and less pass@k, an entropy bonus that loses pass@1 and keeps more entropy, clip-higher at FADE's
    pass@1 whose pass@k is FADE's plus ``clip_gap``, and FADE with clip-higher."""
    from fade.experiments.presets.entropy import (
        ENTROPY_BASELINE,
        ENTROPY_CONTROLS,
        ENTROPY_FADE,
        ENTROPY_FADE_COMBINED,
    )

    controls = {c.name: c for c in (ENTROPY_FADE, ENTROPY_BASELINE, *ENTROPY_CONTROLS, ENTROPY_FADE_COMBINED)}
    plan = TaskPlan(task="countdown_multi", estimators=tuple(controls[name].arm for name in names), steps=30,
                    eval_every=10, eval_prompts=4, eval_samples=4, prompts_per_step=4, group_size=4,
                    trainer=(("minibatches", 4),))
    preset = Preset(
        name="entropy-like", description="The entropy preset's layout.", seeds=tuple(range(5)), plans=(plan,)
    )
    summaries = []
    for i, name in enumerate(names):
        peak, wide, entropy, distinct = ENTROPY_LIKE[name]
        if name == "clip-higher, recommended":
            wide += clip_gap
        for seed in preset.seeds:
            run = plan.run(controls[name].arm, seed)
            own = OWN[(seed + 2 * i) % 5]  # each arm its own draw of the same small noise
            top = 0.25 + 0.01 * seed + peak + own
            records = [{"step": step, "entropy": 0.45 - (0.45 - entropy) * step / run.steps + own, "rank1_share": 0.3,
                        "positive_mass": 0.2, "negative_mass": 0.2, "sign_balance": 0.5, "difficulty": 0.5,
                        "effective_sample_fraction": 0.5, "step_seconds": 0.1} for step in range(1, run.steps + 1)]
            final = top - 0.01
            evals = [
                {"step": 0, "pass@1": 0.15},
                {"step": 10, "pass@1": top},
                {"step": 20, "pass@1": top - 0.005},
                {
                    "step": 30,
                    "pass@1": final,
                    "pass@2": final + 0.1 + wide + own,
                    "pass@4": final + 0.2 + wide + own,
                    "distinct_correct": distinct + own,
                },
            ]
            _write_logged(out, run, records, evals)
            summaries.append(summarise(run, out))
    return preset, summaries


def test_fade_against_the_controls_is_computed_from_the_runs(tmp_path):
    """FADE minus each arm on four measures, paired: dr_grpo matches FADE's pass@1 and loses pass@k;
    the entropy bonus loses pass@1, pass@k and distinct answers but keeps more entropy; clip-higher
    matches FADE everywhere the seeds resolve."""
    from fade.experiments.results_report import write_report

    preset, summaries = _entropy_like_sweep(tmp_path / "sweep")
    sections = report_sections(summaries, preset)
    section = _section(sections, "controls", "countdown_multi")
    outcomes = {v.statement: v.outcome for v in section.verdicts}
    assert len(outcomes) == 4 * 4  # four arms, four measures
    expected = {
        "dr_grpo (no control)": (SUPPORTED, UNRESOLVED, SUPPORTED, SUPPORTED),
        "entropy bonus, tuned": (SUPPORTED, SUPPORTED, CONTRADICTED, SUPPORTED),
        "clip-higher, recommended": (UNRESOLVED, UNRESOLVED, SUPPORTED, SUPPORTED),
        "FADE + clip-higher": (UNRESOLVED, UNRESOLVED, CONTRADICTED, UNRESOLVED),
    }
    measures = ("final pass@k mean", "peak pass@1", "final entropy", "number of distinct correct answers per problem")
    for arm, verdicts in expected.items():
        for measure, verdict in zip(measures, verdicts):
            assert outcomes[f"FADE has a higher {measure} than {arm}"] == verdict, (arm, measure)
    arms, means, differences, passk = section.tables
    assert arms.rows[0][:2] == ["**FADE**", "`fade:h_star_ratio=0.7`"]
    assert arms.rows[2][1] == "`dr_grpo+entropy=entropy_bonus:coef=0.01`"
    bonus = next(row for row in differences.rows if row[0] == "entropy bonus, tuned")
    assert bonus[1].startswith("+0.167 [") and bonus[3].startswith("-0.19")  # FADE - bonus: pass@k up, entropy down
    assert [row[0] for row in passk.rows][0] == "**FADE**" and passk.header == ["arm", "pass@1", "pass@2", "pass@4"]
    assert "How the settings were chosen" in section.notes[0]

    match = _section(sections, "controls_match", "countdown_multi")
    answers = {row[0]: row[-1] for row in match.tables[0].rows}
    assert answers == {
        "dr_grpo (no control)": "below FADE's pass@k",
        "entropy bonus, tuned": "pass@1 not equal",
        "clip-higher, recommended": "matches FADE's pass@k (not resolved apart)",
    }  # FADE + clip-higher is FADE
    assert match.verdicts[0].outcome == UNRESOLVED
    assert [name for name, _ in match.verdicts[0].parts] == ["pass@k mean vs dr_grpo (no control)",
                                                              "pass@k mean vs clip-higher, recommended"]
    assert any("not resolved above these arms'" in n and n.endswith(": clip-higher, recommended.") for n in match.notes)

    # the plain-arm claims read dr_grpo and FADE only; the collapse check reads every arm
    assert {s.key for s in sections} >= {"controls", "controls_match"}
    collapse = _section(design_checks(summaries), "collapse", "countdown_multi")
    assert collapse.result.measured == 25

    out = tmp_path / "report"
    write_report(out, preset=preset, runs=preset.runs(), summaries=summaries, sections=sections, failures={},
                 command="fade sweep --preset entropy", workers=1)
    text = (out / "README.md").read_text()
    assert "## FADE (fade:h_star_ratio=0.7) against the entropy controls — countdown_multi" in text
    assert "## Does a control match FADE's pass@k at equal pass@1? — countdown_multi" in text
    figure = out / "countdown_multi-controls.png"
    assert figure.is_file() and 0 < figure.stat().st_size < 400_000
    assert "](countdown_multi-controls.png)" in text
    results = json.loads((out / "results.json").read_text())
    assert [c["key"] for c in results["claims"]][-3:] == ["controls", "controls_match", "time_to_threshold"]
    overrides = {r["key"]: r.get("overrides") for r in results["runs"]}
    assert overrides["countdown_multi/dr_grpo+entropy=entropy_bonus-coef=0.01/seed0"] == {
        "entropy": "entropy_bonus:coef=0.01"}
    assert overrides["countdown_multi/dr_grpo/seed0"] is None  # a plain arm's record is as before
    assert all(r["scalars"]["distinct_correct_final"] > 0 for r in results["runs"])


@pytest.mark.parametrize("gap, outcome, answer", [(0.05, CONTRADICTED, "exceeds FADE's pass@k"),
                                                  (-0.05, SUPPORTED, "below FADE's pass@k")])
def test_a_control_at_equal_pass1_decides_whether_fades_pass_k_is_matched(tmp_path, gap, outcome, answer):
    preset, summaries = _entropy_like_sweep(tmp_path, clip_gap=gap)
    match = _section(report_sections(summaries, preset), "controls_match", "countdown_multi")
    assert {row[0]: row[-1] for row in match.tables[0].rows}["clip-higher, recommended"] == answer
    assert match.verdicts[0].outcome == outcome


def test_no_arm_at_equal_pass1_leaves_the_question_open(tmp_path):
    preset, summaries = _entropy_like_sweep(tmp_path, names=("FADE", "entropy bonus, tuned"))
    match = _section(report_sections(summaries, preset), "controls_match", "countdown_multi")
    assert match.verdicts == [] and match.result.unmatched is None
    assert any("No arm's peak pass@1 equals FADE's" in note for note in match.notes)


def test_without_a_control_the_report_has_no_control_claims(tmp_path):
    """The paper preset trains FADE's arm and dr_grpo too, without any control: no control section,
    no control figure, and its report reads as it did."""
    from fade.experiments.results_report import write_report

    preset, summaries = _entropy_like_sweep(tmp_path / "sweep", names=("FADE", "dr_grpo (no control)"))
    sections = report_sections(summaries, preset)
    assert not {"controls", "controls_match"} & {s.key for s in sections}
    write_report(tmp_path / "report", preset=preset, runs=preset.runs(), summaries=summaries, sections=sections,
                 failures={}, command="fade sweep", workers=1)
    assert not list((tmp_path / "report").glob("*-controls.png"))
    assert "entropy controls" not in (tmp_path / "report" / "README.md").read_text()


def test_a_run_fills_the_run_length_its_estimator_declares_not_a_name_it_knows(monkeypatch):
    """The sweep fills whatever parameter an estimator's registration names as the run's length
    (fade_decay's total_steps), and leaves a given one alone; registering a run length that is not
    one of the estimator's parameters is refused."""
    import fade.registry as registry

    def formula(rewards, groups, *, horizon=None):
        return rewards - rewards.mean()

    monkeypatch.setattr(registry, "_REGISTRY", dict(registry._REGISTRY))
    registry.register("horizon_probe", run_length="horizon", horizon=None)(formula)
    plan = TaskPlan(task="arithmetic", estimators=("horizon_probe", "horizon_probe:horizon=7", "fade_decay"),
                    steps=30, eval_every=10, eval_prompts=4)
    runs = {run.estimator: run.train_kwargs("out")["estimator_args"] for run in (plan.run(a, 0) for a in plan.arms)}
    assert runs["horizon_probe"] == {"horizon": 30}
    assert runs["horizon_probe:horizon=7"] == {"horizon": 7}
    assert runs["fade_decay"]["total_steps"] == 30
    with pytest.raises(ValueError, match="run_length 'steps' is not one of its parameters"):
        registry.register("bad_probe", run_length="steps", horizon=None)(formula)


# -- where FADE's schedule acts ------------------------------------------------------------------------


def _knobs(alpha, delta, seed=0):
    from types import SimpleNamespace

    alpha, delta = np.asarray(alpha, dtype=float), np.asarray(delta, dtype=float)
    return SimpleNamespace(seed=seed, steps=np.arange(1, alpha.size + 1), curves={"alpha": alpha, "delta": delta})


def test_the_schedule_check_reads_bounds_static_steps_and_the_static_tail_by_hand():
    from fade.experiments.claims.schedule import run_schedule, static_name

    # 1.5 climbing to the cap at step 4, held there to the end: power:alpha=3 from step 4 (70% of 10 steps)
    r = run_schedule(_knobs([1.5, 2.0, 2.5, 3, 3, 3, 3, 3, 3, 3], [1] * 10), alpha_max=3.0)
    assert (r.steps, r.at_cap, r.at_one, r.between, r.delta_below1) == (10, 0.7, 0.0, 0.3, 0.0)
    assert r.static == 0.7 and r.leaves_cap is None and (r.tail, r.tail_from) == ("power:alpha=3", 4)
    # capped at once, leaves at step 3, reaches 1 at step 6; delta below 1 from step 8: the tail is not static
    r = run_schedule(_knobs([3, 3, 2.5, 2, 1.5, 1, 1, 1, 1, 1], [1] * 7 + [0.99, 0.97, 0.95]), alpha_max=3.0)
    assert r.leaves_cap == 3 and r.at_cap == 0.2 and r.at_one == 0.5 and r.delta_below1 == pytest.approx(0.3)
    assert r.static == pytest.approx(0.4) and r.tail is None and r.tail_from is None
    # static at 1 with delta 1 to the end: dr_grpo; a missing knob leaves the step out of every share
    r = run_schedule(_knobs([2, float("nan"), 1, 1], [1, 1, 1, 1]), alpha_max=2.0)
    assert r.steps == 3 and r.at_cap == pytest.approx(1 / 3) and (r.tail, r.tail_from) == ("dr_grpo", 3)
    assert r.leaves_cap == 3  # the first logged step after the cap that is not at it
    # static everywhere, one alpha: the tail is the whole run
    r = run_schedule(_knobs([3] * 4, [1] * 4), alpha_max=3.0)
    assert (r.tail, r.tail_from, r.static) == ("power:alpha=3", 1, 1.0)
    assert static_name(1.0) == "dr_grpo" and static_name(2.5) == "power:alpha=2.5"
