"""The confirmation design: a preset whose comparisons are fixed before its runs (recorded in the
sweep folder and refused once changed), the confirm preset on seeds no other preset used, the time
to threshold read off hand-written curves, and the report's count of the intervals it computed with
arms that copy one another counted once."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import pytest

from fade.cli.sweep import custom_preset
from fade.experiments.claims import report_sections
from fade.experiments.costs import estimate_seconds
from fade.experiments.design import Preset, TaskPlan, comparisons
from fade.experiments.presets import PRESETS, get_preset
from fade.experiments.presets.confirm import CONFIRM_FADE, CONFIRM_MEASURES, CONFIRM_STATIC
from fade.experiments.presets.paper import PAPER_SCHEDULE
from fade.experiments.runs import copies, summarise
from fade.experiments.stats import CONTRADICTED, SUPPORTED, UNRESOLVED
from fade.experiments.sweep import DESIGN_FILE, check_claims, check_design, fix_design, report_sweep, run_sweep

SMALL = dict(
    steps=3, eval_every=2, eval_prompts=4, eval_samples=4, prompts_per_step=4, group_size=4, checkpoint_every=1
)


def _fixed(measure: str = "passk_mean", **overrides) -> Preset:
    plan = TaskPlan(task="arithmetic", estimators=("grpo", "fade"), **SMALL)
    base = dict(name="fixed", description="Two arms and one comparison fixed in advance.", seeds=(0,), plans=(plan,),
                comparisons=comparisons(["fade"], ["grpo"], [measure]), claims=("comparisons", "time_to_threshold"))
    base.update(overrides)
    return Preset(**base)


# -- the confirm preset ---------------------------------------------------------------------------------


def test_the_confirm_preset_fixes_its_comparisons_on_seeds_no_other_preset_used():
    confirm, paper = get_preset("confirm"), get_preset("paper")
    confirm.check()
    check_claims(confirm)
    used = {seed for name, preset in PRESETS.items() if name != "confirm" for seed in preset.seeds}
    assert confirm.seeds == tuple(range(5, 15)) and not used & set(confirm.seeds)
    (plan,), adam = confirm.plans, paper.plan("countdown_multi")
    assert plan.task == adam.task and plan.trainer == adam.trainer  # the paper preset's task, optimizer and lr
    for field in ("steps", "eval_prompts", "eval_samples", "prompts_per_step", "group_size"):
        assert getattr(plan, field) == PAPER_SCHEDULE[field] == getattr(adam, field), field
    assert plan.eval_every == 10  # twice as often as the paper preset: times to threshold within 10 steps
    assert [arm.text for arm in plan.arms] == ["dr_grpo", "grpo", "power:alpha=3", "passk:k=4", "fade",
                                               "fade:h_star_ratio=0.7"]
    # FADE and h_star_ratio = 0.7 against each of the four others, on the four measures: nothing else
    pairs = {(c.arm.text, c.against.text, c.measure) for c in confirm.comparisons}
    assert len(confirm.comparisons) == len(pairs) == 2 * 4 * 4
    assert pairs == {(f, s, m) for f in CONFIRM_FADE for s in CONFIRM_STATIC for m in CONFIRM_MEASURES}
    assert set(CONFIRM_MEASURES) == {"passk_mean", "smoothed_peak_pass1", "entropy_final", "distinct_correct_final"}
    assert all(c.greater for c in confirm.comparisons)
    assert confirm.claims == ("comparisons", "time_to_threshold")
    runs = confirm.runs()
    assert len(runs) == 60 and all(r.num_evals == 21 for r in runs)
    assert 3 * 3600 < sum(estimate_seconds(r) for r in runs) < 6 * 3600  # the cost model's 4.8 CPU hours
    # a custom list of estimators carries none of the fixed comparisons
    assert custom_preset(confirm, seeds=[5]).comparisons == confirm.comparisons
    assert custom_preset(confirm, estimators=["grpo"]).comparisons == ()


def test_the_shift_preset_runs_the_piloted_setting_on_new_seeds_with_its_comparisons_fixed():
    from fade.adaptive import FIXED_PATHS
    from fade.experiments.presets.shift import SHIFT_FADE, SHIFT_OTHERS

    shift = get_preset("shift")
    shift.check()
    check_claims(shift)
    used = {seed for name, preset in PRESETS.items() if name != "shift" for seed in preset.seeds}
    assert shift.seeds == tuple(range(15, 25)) and not used & set(shift.seeds)
    assert not {0, 1, 2, 3, 4} & set(shift.seeds)  # the pilot's
    (plan,) = shift.plans
    # the pilot's arith-d2-400 (docs/results/shift/pilot.py): bucket 2 only, 400 steps, evaluated every 40
    assert (plan.task, plan.steps, plan.eval_every) == ("arithmetic", 400, 40)
    assert (plan.eval_prompts, plan.eval_samples) == (64, 64)
    assert dict(plan.trainer) == {"difficulties": (2,)}
    run = shift.runs()[0]
    kwargs = run.train_kwargs("out")
    assert (kwargs["prompts_per_step"], kwargs["group_size"], kwargs.get("lr", 1e-4)) == (32, 8, 1e-4)
    assert [arm.text for arm in plan.arms] == ["dr_grpo", "grpo", "power:alpha=3", "passk:k=4", "fade",
                                               "fade:p_start=debiased", "fade_decay", "fade_fixed:path=shift"]
    assert "shift" in FIXED_PATHS
    # each FADE arm against every other arm on the four measures, the pair of FADE arms once
    pairs = {(c.arm.text, c.against.text, c.measure) for c in shift.comparisons}
    assert len(shift.comparisons) == len(pairs) == (7 + 6) * 4
    assert pairs == ({("fade", other, m) for other in (*SHIFT_OTHERS, SHIFT_FADE[1]) for m in CONFIRM_MEASURES}
                     | {(SHIFT_FADE[1], other, m) for other in SHIFT_OTHERS for m in CONFIRM_MEASURES})
    assert all(c.greater for c in shift.comparisons)
    assert shift.claims == ("comparisons", "time_to_threshold") and shift.pins_code
    assert "code" in shift.design and len(shift.runs()) == 80
    assert all(r.num_evals == 11 for r in shift.runs())
    decay = {r.train_kwargs("o")["estimator_args"].get("total_steps") for r in shift.runs() if r.name == "fade_decay"}
    assert decay == {400}


def test_a_preset_that_pins_the_code_refuses_to_train_on_another_version(tmp_path, monkeypatch):
    """The design records the training code's version; training into the folder on another version is
    refused with one line before anything is written, and the report of its finished runs is not."""
    import fade.testbed.session as session

    monkeypatch.setattr(session, "code_version", lambda: "aaaa")
    pinned = _fixed(pins_code=True)
    assert run_sweep(pinned, tmp_path, workers=1, progress=False).ok
    record = json.loads((tmp_path / DESIGN_FILE).read_text())
    assert record["code"] == "aaaa"
    monkeypatch.setattr(session, "code_version", lambda: "bbbb")
    before = sorted(p.name for p in tmp_path.rglob("*"))
    with pytest.raises(ValueError, match=r"trained on training code version 'aaaa' and this checkout's is 'bbbb'"):
        run_sweep(pinned, tmp_path, workers=1, progress=False)
    assert sorted(p.name for p in tmp_path.rglob("*")) == before
    assert report_sweep(pinned, tmp_path).readme.is_file()  # finished runs still read
    # ... and the report says which code trained them: the folder's record, not this checkout's
    assert json.loads((tmp_path / "results.json").read_text())["design"]["fixed"]["code"] == "aaaa"
    assert json.loads((tmp_path / DESIGN_FILE).read_text()) == record
    # a preset that does not pin the code neither records nor checks it
    assert "code" not in _fixed().design


def test_the_code_version_follows_the_code_not_its_comments(tmp_path, monkeypatch):
    import importlib
    import sys

    import fade.testbed.session as session

    package = tmp_path / "versioned"
    package.mkdir()
    module = package / "__init__.py"
    module.write_text('"""Doc."""\n\ndef f(x):\n    """Twice."""\n    return 2 * x  # doubled\n')
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(session, "CODE_MODULES", ("versioned",))

    def version() -> str:
        sys.modules.pop("versioned", None)
        importlib.invalidate_caches()
        return session.code_version()

    first = version()
    assert len(first) == 16 and version() == first
    module.write_text('"""Another doc."""\n\n\ndef f(x):\n    """Two x."""\n    # comment\n    return 2 * x\n')
    assert version() == first
    module.write_text('"""Doc."""\n\ndef f(x):\n    return 3 * x\n')
    assert version() != first


def test_a_comparison_of_an_arm_no_plan_trains_is_refused():
    bad = _fixed(comparisons=comparisons(["fade"], ["dr_grpo"], ["passk_mean"]))
    with pytest.raises(ValueError, match="compares 'dr_grpo', which none of its plans trains"):
        bad.check()
    with pytest.raises(ValueError, match=r"unknown claim\(s\) \['nonsense'\]"):
        check_claims(_fixed(claims=("comparisons", "nonsense")))


# -- comparisons fixed before the runs ---------------------------------------------------------------------


def test_changed_comparisons_are_refused_once_a_run_exists(tmp_path):
    """The sweep records the comparisons when it starts; a later sweep, a report or a dry run into the
    same folder whose preset compares otherwise is refused with one line, as a changed run setting is."""
    outcome = run_sweep(_fixed(), tmp_path, workers=1, progress=False)
    assert outcome.ok, outcome.failed
    record = json.loads((tmp_path / DESIGN_FILE).read_text())
    assert record == {"preset": "fixed", "comparisons": [{"arm": "fade", "against": "grpo", "measure": "passk_mean",
                                                           "greater": True}],
                      "claims": ["comparisons", "time_to_threshold"]}
    again = run_sweep(_fixed(), tmp_path, workers=1, progress=False)  # the same design: nothing retrained
    assert again.finished == [] and len(again.skipped) == 2
    changed = _fixed(measure="peak_pass1")
    for attempt in (lambda: run_sweep(changed, tmp_path, workers=1, progress=False),
                    lambda: report_sweep(changed, tmp_path), lambda: check_design(changed, tmp_path)):
        with pytest.raises(ValueError, match="was started with other comparisons than preset 'fixed' now fixes"):
            attempt()
    fewer = _fixed(comparisons=())
    with pytest.raises(ValueError, match="other comparisons"):
        run_sweep(fewer, tmp_path, workers=1, progress=False)
    with pytest.raises(ValueError, match="other claims"):
        run_sweep(_fixed(claims=None), tmp_path, workers=1, progress=False)
    assert json.loads((tmp_path / DESIGN_FILE).read_text()) == record  # the record is never rewritten


def test_comparisons_cannot_be_fixed_after_runs_started(tmp_path):
    """A folder that holds runs but no record was started before the comparisons were fixed: refused.
    A preset that fixes none gets its record there (folders from before records existed)."""
    preset = _fixed()
    started = preset.runs()[0].directory(tmp_path)
    started.mkdir(parents=True)
    (started / "metrics.jsonl").write_text('{"step": 1}\n')
    with pytest.raises(ValueError, match="comparisons would be fixed after its runs started"):
        fix_design(preset, tmp_path)
    assert not (tmp_path / DESIGN_FILE).exists()
    plain = _fixed(comparisons=(), claims=None)
    fix_design(plain, tmp_path)
    assert json.loads((tmp_path / DESIGN_FILE).read_text()) == {"preset": "fixed", "comparisons": [], "claims": None}
    (tmp_path / DESIGN_FILE).write_text("not json")
    with pytest.raises(ValueError, match="is not a readable design record"):
        check_design(plain, tmp_path)


# -- hand-written runs: the fixed comparisons, the time to threshold, copies -------------------------------

STEPS, EVERY = 100, 10


def _write(out: Path, run, pass1: np.ndarray, *, entropy: float = 0.4, passk_extra: float = 0.1) -> None:
    directory = run.directory(out)
    directory.mkdir(parents=True)
    records = [{"step": step, "entropy": entropy, "reward_mean": 0.2, "rank1_share": 0.5, "positive_mass": 0.2,
                "negative_mass": 0.2, "sign_balance": 0.5, "difficulty": 0.3, "effective_sample_fraction": 0.5,
                "step_seconds": 0.1} for step in range(1, run.steps + 1)]
    (directory / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    evals = [{"step": step, "pass@1": float(p), "pass@2": float(p) + passk_extra, "distinct_correct": 1.0 + float(p)}
             for step, p in zip(range(0, run.steps + 1, run.eval_every), pass1)]
    (directory / "eval.jsonl").write_text("".join(json.dumps(e) + "\n" for e in evals))


def _curve(base: float, gain: float, rise_at: int) -> np.ndarray:
    """pass@1 at every evaluation: the base, then linear up to base + gain by step ``rise_at``, then flat."""
    steps = np.arange(0, STEPS + 1, EVERY)
    return base + gain * np.clip(steps / rise_at, 0, 1)


def _hand_sweep(out: Path, arms: dict[str, tuple[float, int, float]], seeds=range(5), preset_comparisons=()):
    """Runs of ``arms``: per arm (gain, step its gain is made by, extra final pass@2), per seed a base of
    0.1 + 0.01 * seed and a small seed wobble every arm shares."""
    plan = TaskPlan(task="countdown_multi", estimators=tuple(arms), steps=STEPS, eval_every=EVERY, eval_prompts=4,
                    eval_samples=4)
    preset = Preset(name="hand", description="Hand-written runs.", seeds=tuple(seeds), plans=(plan,),
                    comparisons=preset_comparisons, claims=("comparisons", "time_to_threshold"))
    summaries = []
    for run in preset.runs():
        gain, rise_at, extra = arms[run.arm.text]
        wobble = 0.003 * ((run.seed * 7) % 5 - 2)
        _write(out, run, _curve(0.1 + 0.01 * run.seed, gain + wobble, rise_at), passk_extra=0.1 + extra + wobble)
        summaries.append(summarise(run, out))
    return preset, summaries


def test_time_to_threshold_compares_every_arm_with_the_best_static_arm(tmp_path):
    """FADE makes the best static arm's gain in half the steps on every seed, power:alpha=3 never gets
    there: the best static arm is chosen by its gain, FADE is earlier with a larger area, and the
    arm that never crosses counts one evaluation past the end, said in the table."""
    arms = {"dr_grpo": (0.10, 80, 0.0), "power:alpha=3": (0.05, 80, 0.0), "fade": (0.10, 40, 0.0),
            "psr": (0.20, 80, 0.0)}  # a sign-axis probe with the largest gain: not a baseline, it sets no bar
    preset, summaries = _hand_sweep(tmp_path, arms)
    (section,) = [s for s in report_sections(summaries, preset) if s.key == "time_to_threshold"]
    r = section.result
    assert r.best == "dr_grpo" and r.share == 0.75
    timing = {a.arm: a for a in r.arms}
    assert [a.arm for a in r.arms][0] == "dr_grpo" and timing["dr_grpo"].earlier is None
    # dr_grpo's smoothed gain ~0.10: the threshold ~base + 0.075, which it reaches at step 60-70 and FADE by 30-40
    assert timing["fade"].steps.mean < timing["dr_grpo"].steps.mean < STEPS
    assert timing["fade"].never == 0 and timing["power:alpha=3"].never == 5
    assert timing["power:alpha=3"].steps.values == (STEPS + EVERY,) * 5
    assert timing["fade"].earlier.outcome == SUPPORTED and timing["fade"].larger_area.outcome == SUPPORTED
    assert timing["power:alpha=3"].earlier.outcome == CONTRADICTED  # computed, shown, but not a claim of its own
    statements = [v.statement for v in section.verdicts]
    assert statements == ["fade reaches the threshold earlier than dr_grpo",
                          "fade has a larger area under its pass@1 curve than dr_grpo"]
    row = next(row for row in section.tables[0].rows if "power" in row[0])
    assert row[2] == "5 of 5"
    assert "5 of 20 runs never crossed" in section.notes[0]
    # steps print whole, as the evaluations are whole steps
    assert re.search(r"\(n=5\) vs \d+ ± \d+ \(n=5\); paired difference [+-]\d+ \[[+-]\d+, [+-]\d+\]",
                     timing["fade"].earlier.detail), timing["fade"].earlier.detail


def test_the_report_reads_only_the_fixed_comparisons_and_counts_copies_once(tmp_path):
    """fade_alpha's runs are fade's bit for bit: the report lists them as copies, the claims resting on
    either count once, and it says how many intervals it computed and how many are distinct."""
    from fade.experiments.results_report import write_report

    arms = {"dr_grpo": (0.10, 80, 0.0), "fade": (0.10, 40, 0.05), "fade_alpha": (0.10, 40, 0.05)}
    fixed = comparisons(["fade", "fade_alpha"], ["dr_grpo"], ["passk_mean", "smoothed_peak_pass1"])
    preset, summaries = _hand_sweep(tmp_path, arms, preset_comparisons=fixed)
    assert copies(summaries) == [("countdown_multi", ("fade", "fade_alpha"))]
    sections = report_sections(summaries, preset)
    assert [s.key for s in sections] == ["comparisons", "time_to_threshold"]  # the preset's claims only
    fixed_section = sections[0]
    assert len(fixed_section.verdicts) == 4
    outcome = {v.statement: v.outcome for v in fixed_section.verdicts}
    assert outcome["fade has a higher final pass@k mean than dr_grpo"] == SUPPORTED
    peak = "has a higher peak pass@1 (smoothed over 3 evaluations) than dr_grpo"
    assert outcome[f"fade_alpha {peak}"] == outcome[f"fade {peak}"]

    out = tmp_path / "report"
    write_report(out, preset=preset, runs=preset.runs(), summaries=summaries, sections=sections, failures={},
                 command="fade sweep --preset hand", workers=1)
    text = (out / "README.md").read_text()
    assert "- countdown_multi: `fade` = `fade_alpha`" in text
    # 4 samples per prompt: pass@k up to k = 4, so no label claims a pass@64
    assert "final pass@k for k = 1, 2, 4" in text and "pass@k over k = 1, 2, 4." in text and "..., 64" not in text
    # 4 fixed comparisons + 2 arms x (step, area) against dr_grpo = 8 intervals; fade_alpha's 4 repeat fade's
    assert "8 claims" in text and "4 of them repeat another claim's comparisons exactly" in text
    assert "The report computed 8 paired intervals, 4 of them distinct (4 repeat another's numbers exactly)" in text
    results = json.loads((out / "results.json").read_text())
    assert results["design"]["intervals"] == {"computed": 8, "distinct": 4}
    assert results["design"]["copies"] == [{"task": "countdown_multi", "arms": ["fade", "fade_alpha"]}]
    assert results["design"]["fixed"]["comparisons"][0] == {"arm": "fade", "against": "dr_grpo",
                                                             "measure": "passk_mean", "greater": True}
    assert all(math.isfinite(r["scalars"]["pass1_area"]) for r in results["runs"])


def test_an_unresolved_verdict_without_an_interval_says_none_was_computed(tmp_path):
    """The time-to-peak reading of fade_vs_baselines is a ratio with unreached seeds, not a paired
    interval: where it is unresolved, the report says no interval was computed for it."""
    from fade.experiments.results_report import write_report

    arms = {"grpo": (0.10, 50, 0.0), "dr_grpo": (0.10, 50, 0.0), "fade": (0.09, 60, 0.0)}
    preset, summaries = _hand_sweep(tmp_path, arms)
    preset = Preset(name="hand", description="All claims.", seeds=preset.seeds, plans=preset.plans)
    sections = report_sections(summaries, preset)
    earlier = next(v for s in sections if s.key == "fade_vs_baselines" for v in s.verdicts if "earlier" in v.statement)
    assert earlier.outcome in (UNRESOLVED, CONTRADICTED) and all(p.interval is None for _, p in earlier.parts)
    out = tmp_path / "report"
    write_report(out, preset=preset, runs=preset.runs(), summaries=summaries, sections=sections, failures={},
                 command="fade sweep --preset hand", workers=1)
    text = (out / "README.md").read_text()
    line = next(line for line in text.splitlines() if line.startswith("- countdown_multi: FADE reaches"))
    assert "no interval was computed for this comparison" in line


def test_the_k_label_follows_the_samples_per_prompt():
    from fade.testbed.evaluation import ks_text, reported_ks

    assert reported_ks(32) == (1, 2, 4, 8, 16, 32) and reported_ks(64)[-1] == 64 and reported_ks(5) == (1, 2, 4)
    assert ks_text(32) == "k = 1, 2, 4, ..., 32" and ks_text(2) == "k = 1, 2"
    for bad in (0, -1, 2.0, True):
        with pytest.raises(ValueError, match="samples must be a positive int"):
            reported_ks(bad)


def test_the_shipped_fixed_control_weighed_with_its_written_path_at_every_step():
    """Every shipped run of the shift preset's fixed two-phase control logged, at each of its 400
    steps, exactly the knobs its written path gives at that step: it never read its own run."""
    from fade.adaptive import fixed_knobs
    from fade.testbed.runlog import load_run

    arm = Path(__file__).resolve().parents[1] / "docs/results/shift/runs/arithmetic/fade_fixed-path=shift"
    folders = sorted(arm.glob("seed*"))
    assert [f.name for f in folders] == [f"seed{s}" for s in range(15, 25)]
    for folder in folders:
        metrics = load_run(folder).metrics
        assert [m["step"] for m in metrics] == list(range(1, 401)), folder.name
        for m in metrics:
            assert (m["alpha"], m["delta"]) == fixed_knobs("shift", m["step"]), (folder.name, m["step"])
