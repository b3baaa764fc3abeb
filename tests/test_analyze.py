"""fade analyze: each format's grouping rules, the per-step statistics, and bad input.

The engines' real dumps are in tests/test_analyze_trl.py (TRL) and tests/test_verl_cpu_e2e.py
(verl); here each layout is written as its engine writes it (tests/analyze_dumps.py), to pin the
rules one by one.
"""

from __future__ import annotations

import json
import math
import os
import warnings
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("pyarrow")

import fade  # noqa: E402
from analyze_dumps import (  # noqa: E402
    REWARDS,
    analyze_cli,
    generic_dump,
    generic_rows,
    nemo_rows,
    refused,
    trl_dump,
    verl_rows,
    write_jsonl,
    write_trl,
)
from fade.analyze import DumpError, ReadOptions, analyze_run, read_run, write_outputs  # noqa: E402
from fade.analyze.stats import SOLVE_BUCKETS  # noqa: E402
from fade.cli import main  # noqa: E402
from fade.specs import split_specs  # noqa: E402


def test_generic_statistics_are_the_hand_computed_ones(tmp_path):
    rows = [{"step": 3, "prompt_id": g, "reward": r} for g, group in enumerate(REWARDS) for r in group]
    analysis = analyze_run(write_jsonl(tmp_path / "r.jsonl", rows))
    (row,) = analysis.steps
    assert row["step"] == 3 and row["num_groups"] == 4 and row["num_rollouts"] == 16 and row["group_sizes"] == [4]
    assert row["zero_spread_share"] == 0.5 and row["zero_spread_groups"] == 2
    assert row["mean_reward"] == pytest.approx(8 / 16)
    hist = row["solve_rate_histogram"]
    assert hist == {**dict.fromkeys(SOLVE_BUCKETS, 0.0), "0": 0.25, "1": 0.25, "[0.2,0.4)": 0.25, "[0.6,0.8)": 0.25}
    # pass@2 per group: 1 - C(n-c,2)/C(n,2) = 1, 0, 1, 1/2
    assert row["pass_at_k"]["2"] == pytest.approx((1 + 0 + 1 + 0.5) / 4)
    assert row["pass_at_k"]["4"] == pytest.approx(3 / 4)
    r = np.array(sum(REWARDS, []))
    g = np.repeat(np.arange(4), 4)
    expected = fade.decompose(fade.estimator("dr_grpo")(r, g), r, g).diagnostics()
    assert row["estimators"]["dr_grpo"] == pytest.approx(expected)
    assert row["run"] is None


def test_verl_v1_groups_by_the_uid_prompt_and_keeps_each_sessions_final_output(tmp_path):
    rows = verl_rows(1, REWARDS)
    # a multi-output agent loop: session 1 of group 0 wrote index 0 (score 0) then index 1 (score 1)
    rows.insert(1, {**rows[1], "uid": "uuid1x0_1_1", "score": 1.0})
    write_jsonl(tmp_path / "1.jsonl", rows)
    write_jsonl(tmp_path / "2.jsonl", verl_rows(2, REWARDS[::-1]))
    run = read_run(tmp_path)
    assert run.format == "verl" and [b.step for b in run.steps] == [1, 2]
    first = run.steps[0]
    assert first.num_rollouts == 16 and first.num_groups == 4
    assert first.rewards[:4].tolist() == [1.0, 1.0, 1.0, 1.0]  # session 1's final output
    assert first.prompt_keys == ["prompt 0", "prompt 1", "prompt 2", "prompt 3"]


def test_legacy_verl_groups_by_prompt_text_whatever_the_row_order(tmp_path):
    rows = verl_rows(5, REWARDS, uid=False)
    order = np.random.default_rng(0).permutation(len(rows))
    write_jsonl(tmp_path / "5.jsonl", [rows[i] for i in order])
    run = read_run(tmp_path)
    assert run.format == "verl-legacy"
    batch = run.steps[0]
    by_prompt = {k: sorted(batch.rewards[batch.groups == i].tolist()) for i, k in enumerate(batch.prompt_keys)}
    assert by_prompt == {f"prompt {g}": sorted(REWARDS[g]) for g in range(4)}


def test_verl_metrics_feed_entropy_to_fade_and_flag_filtering(tmp_path):
    for step in (1, 2, 3):
        write_jsonl(tmp_path / "dump" / f"{step}.jsonl", verl_rows(step, REWARDS))
    metrics = write_jsonl(tmp_path / "metrics.jsonl", [
        {"step": s, "data": {"actor/entropy": 1.0 - 0.2 * s, "train/filter_groups/evicted_samples": 8 * (s == 2)}}
        for s in (1, 2, 3)])
    analysis = analyze_run(tmp_path / "dump", ReadOptions(metrics=metrics))
    assert analysis.estimators == ["grpo", "dr_grpo", "maxrl", "fade"]
    assert analysis.run.filtered and "lower bound" in analysis.run.filtered
    assert [s["entropy"] for s in analysis.steps] == pytest.approx([0.8, 0.6, 0.4])
    # replayed in step order as fade's verl trainer feeds it: before step s the entropy verl logged at
    # step s (its old-log-prob pass on that batch) and s - 1 updates
    assert analysis.run.entropy_feed == "same-step"
    replay = fade.estimator("fade")
    r, g = np.array(sum(REWARDS, [])), np.repeat(np.arange(4), 4)
    for step in (1, 2, 3):
        replay.observe(entropy=1.0 - 0.2 * step, step=step - 1)
        expected = fade.decompose(replay(r, g), r, g).diagnostics()
        assert analysis.steps[step - 1]["estimators"]["fade"] == pytest.approx(expected, nan_ok=True)


@pytest.mark.parametrize(("feed", "fed"), [
    ("same-step", {1: 0.9, 2: 0.7, 3: 0.5, 4: None, 5: 0.1}),
    # TRL's default: the previous batch's loss pass; the first batch measured by the integration itself
    ("previous-step", {1: 0.9, 2: 0.9, 3: 0.7, 4: 0.5, 5: None}),
])
def test_fade_is_replayed_with_the_entropy_the_runs_engine_fed_it(feed, fed):
    """The run's entropy_feed, set by its format, picks which logged entropy FADE is fed before step s:
    here step 4 logged none (the state carries on), and a schedule with ema=1 shows each one fed."""
    from fade.analyze import RunRecords, StepBatch, analyze_records
    from fade.analyze.stats import Counterfactuals

    r, g = np.array(sum(REWARDS, [])), np.repeat(np.arange(4), 4)
    run = RunRecords("generic", "run", [StepBatch(s, r, g) for s in range(1, 6)],
                     entropy={1: 0.9, 2: 0.7, 3: 0.5, 5: 0.1})
    assert run.entropy_feed == "same-step"  # every format's default, verl's and the testbed's rule
    run.entropy_feed = feed
    spec = "fade:ema=1,h_star_ratio=1.5"
    analysis = analyze_records(run, [spec])
    replay = fade.estimator("fade", ema=1, h_star_ratio=1.5)
    for step, h in fed.items():
        replay.observe(step=step - 1, **({} if h is None else {"entropy": h}))
        expected = fade.decompose(replay(r, g), r, g).diagnostics()
        assert analysis.steps[step - 1]["estimators"][spec] == pytest.approx(expected, nan_ok=True), step
    assert replay.last["delta"] < 1  # the entropy moved delta: the comparison above sees which one was fed
    run.entropy_feed = "previous"
    with pytest.raises(ValueError, match="entropy_feed 'previous' of the generic run: expected one of same-step, "
                                         "previous-step"):
        Counterfactuals([spec], run)


def test_a_replayed_estimators_diagnostics_are_of_the_rewards_as_it_reads_them():
    """What fade analyze reports for a counterfactual is what a trainer weighing with it logs
    (fade.Weighing's diagnostics): under a success threshold, the mass over successes, not over the
    raw scores: the solve rate that places the mass on the difficulty axis is the share of successes."""
    from fade.analyze import RunRecords, StepBatch, analyze_records

    r, g = np.array([0.9, 0.2, 0.6, 0.1, 0.3, 0.4, 0.8, 0.7]), np.repeat(np.arange(2), 4)
    spec = "maxrl:success_threshold=0.35"
    analysis = analyze_records(RunRecords("generic", "run", [StepBatch(1, r, g)]), [spec])
    adv = fade.estimator("maxrl", success_threshold=0.35)(r, g)
    got = analysis.steps[0]["estimators"][spec]
    assert got == pytest.approx(fade.decompose(adv, (r >= 0.35).astype(float), g).diagnostics(), nan_ok=True)
    assert got != pytest.approx(fade.decompose(adv, r, g).diagnostics(), nan_ok=True)


def test_prime_rl_nemo_rl_and_fade_eval_layouts(tmp_path):
    prime = tmp_path / "prime" / "rollouts"
    for step in (0, 1):
        eps = [{"id": f"e{g}{i}", "group": {"id": f"g{step}{g}"}, "task": {"key": f"t{g}"},
                "run": {"work": {"step": step}}, "traces": [{"rewards": {"acc": {"score": r, "weight": 1.0}}}]}
               for g, group in enumerate(REWARDS) for i, r in enumerate(group)]
        write_jsonl(prime / f"step_{step}" / "train" / "effective" / "traces.jsonl", eps)
    run = read_run(tmp_path / "prime")
    assert run.format == "prime-rl" and [b.step for b in run.steps] == [0, 1]
    assert run.steps[1].prompt_keys == ["t0", "t1", "t2", "t3"]
    write_jsonl(tmp_path / "nemo" / "train_data_step7.jsonl", nemo_rows())
    batch = read_run(tmp_path / "nemo").steps[0]
    assert batch.step == 7 and batch.num_groups == 4
    assert batch.advantages.tolist() == (np.array(sum(REWARDS, [])) - 0.5).tolist()
    scores = [{"problem_id": f"p{g}", "sample": i, "score": r * 0.5, "reason": "", "canonical": None}
              for g, group in enumerate(REWARDS) for i, r in enumerate(group)]
    write_jsonl(tmp_path / "eval" / "scores.jsonl", scores)
    (row,) = analyze_run(tmp_path / "eval").steps
    assert row["solve_rate"] == pytest.approx(8 / 16)  # score > 0 is correct, as fade eval counts


def test_generic_csv_and_parquet_read_as_the_jsonl(tmp_path):
    import pyarrow as pa
    import pyarrow.csv as pcsv
    import pyarrow.parquet as pq

    rows = [{"step": s, "group_id": f"g{g}", "reward": r, "advantage": r - 0.5}
            for s in (1, 2) for g, group in enumerate(REWARDS) for r in group]
    table = pa.Table.from_pylist(rows)
    pcsv.write_csv(table, tmp_path / "r.csv")
    pq.write_table(table, tmp_path / "r.parquet")
    a = analyze_run(write_jsonl(tmp_path / "r.jsonl", rows)).steps
    for other in ("r.csv", "r.parquet"):
        assert analyze_run(tmp_path / other).steps == a
    assert a[0]["run"]["sign_balance"] == pytest.approx(0.5)


@pytest.mark.parametrize("case, where, expected", [
    ("unknown", "x.jsonl:1", "unknown layout"),
    ("nan", "2.jsonl:2", "finite number"),
    ("torn_old", "1.jsonl:17", "cut short"),
    ("mixed", "mixing", "one run's files"),
    ("v1_and_legacy", "mixing v1", "one run's files"),
    ("ragged", "completions_00001.parquet", "ragged or missing groups"),
    ("step_mismatch", "3.jsonl", "expected only step 3"),
    ("partial_advantage", "r.jsonl", "every record or none"),
    ("missing_group", "r.jsonl:2", "group_id"),
])
def test_bad_dumps_stop_in_one_line_naming_the_file_and_line_before_any_output(tmp_path, case, where, expected):
    d = tmp_path / "run"
    if case == "unknown":
        target = write_jsonl(d / "x.jsonl", [{"foo": 1}])
    elif case == "nan":
        write_jsonl(d / "1.jsonl", verl_rows(1, REWARDS))
        (d / "2.jsonl").write_text("".join(json.dumps(r) + "\n" for r in verl_rows(2, REWARDS)).replace(
            '"score": 0.0', '"score": NaN', 1))
        target = d
    elif case == "torn_old":
        write_jsonl(d / "1.jsonl", verl_rows(1, REWARDS), tail='{"input": "prompt')
        write_jsonl(d / "2.jsonl", verl_rows(2, REWARDS))
        target = d
    elif case == "mixed":
        write_jsonl(d / "1.jsonl", verl_rows(1, REWARDS))
        write_jsonl(d / "train_data_step1.jsonl", [{"content": ["q", "a"], "rewards": 1.0}])
        target = d
    elif case == "v1_and_legacy":
        write_jsonl(d / "1.jsonl", verl_rows(1, REWARDS))
        write_jsonl(d / "2.jsonl", verl_rows(2, REWARDS, uid=False))
        target = d
    elif case == "ragged":
        import pyarrow as pa
        import pyarrow.parquet as pq

        prompts = ["a"] * 4 + ["b"] * 3 + ["c"] * 4
        (d / "completions").mkdir(parents=True)
        pq.write_table(
            pa.table(
                {
                    "step": [1] * 11,
                    "prompt": prompts,
                    "completion": ["x"] * 11,
                    "acc": [1.0] * 11,
                    "advantage": [0.0] * 11,
                }
            ),
            d / "completions" / "completions_00001.parquet",
        )
        target = d
    elif case == "step_mismatch":
        write_jsonl(d / "3.jsonl", verl_rows(4, REWARDS))
        target = d
    elif case == "partial_advantage":
        rows = [{"step": 1, "group_id": 0, "reward": 1.0, "advantage": 0.5}, {"step": 1, "group_id": 0, "reward": 0.0}]
        target = write_jsonl(d / "r.jsonl", rows)
    else:
        rows = [{"step": 1, "group_id": 0, "reward": 1.0}, {"step": 1, "reward": 0.0}]
        target = write_jsonl(d / "r.jsonl", rows)
    out = tmp_path / "out"
    with pytest.raises(DumpError) as err:
        analyze_run(target)
    message = str(err.value)
    assert where in message and expected in message and "\n" not in message
    assert main(["analyze", str(target), "--out", str(out), "--quiet"]) == 2
    assert not out.exists()


def test_a_torn_last_line_of_the_newest_step_file_is_skipped_with_a_warning(tmp_path):
    write_jsonl(tmp_path / "1.jsonl", verl_rows(1, REWARDS))
    write_jsonl(tmp_path / "2.jsonl", verl_rows(2, REWARDS), tail='{"input": "prompt 9", "sco')
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run = read_run(tmp_path)
    assert [b.num_rollouts for b in run.steps] == [16, 16]
    assert any("2.jsonl:17" in str(w.message) and "still being written" in str(w.message) for w in caught)


def test_estimator_specs_split_on_commas_and_keep_their_parameters():
    assert split_specs("grpo:eps=1e-4,scale=batch,dr_grpo,power:alpha=3") == [
        "grpo:eps=1e-4,scale=batch", "dr_grpo", "power:alpha=3"]
    with pytest.raises(ValueError, match="empty spec"):
        split_specs("grpo,,dr_grpo")
    with pytest.raises(ValueError, match="starts with a parameter"):
        split_specs("eps=1,grpo")


def test_named_estimators_that_refuse_the_rewards_stop_the_analysis_and_defaults_are_skipped(tmp_path):
    rows = [{"step": 1, "prompt_id": g, "reward": r * 1.5} for g, group in enumerate(REWARDS) for r in group]
    path = write_jsonl(tmp_path / "r.jsonl", rows)
    analysis = analyze_run(path)
    assert "maxrl" in analysis.skipped and "maxrl" not in analysis.estimators
    assert "solve_rate" not in analysis.steps[0]
    with pytest.raises(DumpError, match="maxrl"):
        analyze_run(path, estimators=["maxrl"])
    thresholded = analyze_run(path, ReadOptions(success_threshold=1.0))
    assert thresholded.steps[0]["solve_rate"] == pytest.approx(8 / 16)


def test_outputs_are_strict_json_and_the_figures_are_drawn(tmp_path):
    rows = [{"step": s, "prompt_id": g, "reward": float(r), "advantage": 0.0}
            for s in (1, 2) for g, group in enumerate(REWARDS) for r in group]
    analysis = analyze_run(write_jsonl(tmp_path / "r.jsonl", rows))
    written = write_outputs(analysis, tmp_path / "out")
    assert {p.name for p in written} >= {"steps.jsonl", "report.json", "summary.md", "plane.png"}
    for line in (tmp_path / "out" / "steps.jsonl").read_text().splitlines():
        row = json.loads(line, parse_constant=lambda c: pytest.fail(f"non-strict JSON constant {c}"))
        assert row["run"]["sign_balance"] is None  # no mass: no sign balance, written as null
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["num_steps"] == 2 and not math.isnan(report["mean_reward"])


# -- TRL: which columns are rewards, option values, evaluation files ---------------------------------




@pytest.mark.parametrize("extras", [("math_reason",), ("num_tokens",), ("length_ratio",),
                                    ("math_reason", "num_tokens", "length_ratio")])
def test_trl_reward_columns_are_the_reward_functions_the_run_names_not_its_log_extra_columns(tmp_path, capsys,
                                                                                             extras):
    code, plain, _, _ = analyze_cli(capsys, trl_dump(tmp_path / "plain"), tmp_path / "a")
    assert code == 0
    code, steps, report, err = analyze_cli(capsys, trl_dump(tmp_path / "extra", extras=extras), tmp_path / "b")
    assert code == 0, err
    assert steps == plain
    (note,) = [n for n in report["notes"] if "reward column" in n]
    assert "acc" in note and "trainer_state.json" in note
    assert all(e in note for e in extras)  # the columns left out are named


def test_without_the_runs_record_only_float_columns_are_rewards_and_the_note_names_them(tmp_path, capsys):
    code, plain, _, _ = analyze_cli(capsys, trl_dump(tmp_path / "plain", record=False), tmp_path / "a")
    dump = trl_dump(tmp_path / "extra", extras=("math_reason", "num_tokens"), record=False)
    code, steps, report, err = analyze_cli(capsys, dump, tmp_path / "b")
    assert code == 0, err
    assert steps == plain  # TRL writes rewards as floats: text and integer columns are log_extra columns
    (note,) = [n for n in report["notes"] if "reward column" in n]
    assert "acc" in note and "math_reason" in note and "num_tokens" in note
    # a float log_extra column cannot be told from a reward function without the run's record:
    # it is taken, and the note names it and the option that leaves it out
    dump = trl_dump(tmp_path / "float", extras=("length_ratio",), record=False)
    code, steps, report, err = analyze_cli(capsys, dump, tmp_path / "c")
    assert code == 0, err
    (note,) = [n for n in report["notes"] if "reward column" in n]
    assert "acc, length_ratio" in note and "--reward-column" in note
    code, steps, report, err = analyze_cli(capsys, dump, tmp_path / "d", "--reward-column", "acc")
    assert code == 0, err
    assert steps == plain


def test_reward_columns_can_be_named_and_weighted(tmp_path, capsys):
    dump = trl_dump(tmp_path / "two", rewards={"acc": 1.0, "fmt": 0.5}, extras=("length_ratio",))
    code, steps, report, err = analyze_cli(capsys, dump, tmp_path / "a", "--reward-column", "acc,fmt",
                                           "--reward-weights", "1,2")
    assert code == 0, err
    base = np.array(sum(REWARDS, []))
    assert steps[0]["mean_reward"] == pytest.approx(float((np.roll(base, 1) * 2).mean()))
    code, steps, _, err = analyze_cli(capsys, dump, tmp_path / "b")  # the record's two functions, weights 1
    assert code == 0, err
    assert steps[0]["mean_reward"] == pytest.approx(float((np.roll(base, 1) * 1.5).mean()))


@pytest.mark.parametrize("flags, needles", [
    (("--reward-column", "nope"), ("completions_00001.parquet", "'nope'", "expected one of acc")),
    (("--reward-column", "math_reason"), ("completions_00001.parquet", "'math_reason'", "expected a numeric")),
    (("--reward-column", "acc,acc"), ("--reward-column 'acc,acc'", "expected distinct column names")),
])
def test_a_reward_column_not_there_not_a_number_or_named_twice_is_refused(tmp_path, capsys, flags, needles):
    out = tmp_path / "out"
    code, _, _, err = analyze_cli(capsys, trl_dump(tmp_path / "run", extras=("math_reason",)), out, *flags)
    assert code == 2
    (line,) = err.strip().splitlines()
    assert line.startswith("fade: error: ") and all(n in line for n in needles), line
    assert not out.exists()


def test_a_reward_function_the_record_names_but_the_files_lack_is_refused(tmp_path, capsys):
    dump = trl_dump(tmp_path / "run")
    state = json.loads((dump / "trainer_state.json").read_text())
    state["log_history"][0]["rewards/fmt/mean"] = 1.0
    (dump / "trainer_state.json").write_text(json.dumps(state))
    out = tmp_path / "out"
    code, _, _, err = analyze_cli(capsys, dump, out)
    assert code == 2
    (line,) = err.strip().splitlines()
    assert "completions_00001.parquet" in line and "'fmt'" in line and "trainer_state.json" in line, line
    assert "expected" in line and not out.exists()


@pytest.mark.parametrize("flags, needles", [
    (("--reward-weights", "1,nan"), ("--reward-weights", "nan", "expected finite")),
    (("--reward-weights", "inf"), ("--reward-weights", "inf", "expected finite")),
    (("--reward-weights", "1,x"), ("--reward-weights", "'1,x'", "expected comma-separated numbers")),
    (("--success-threshold", "nan"), ("--success-threshold", "nan", "expected a finite number")),
    (("--success-threshold", "inf"), ("--success-threshold", "inf", "expected a finite number")),
    (("--success-threshold=-inf",), ("--success-threshold", "-inf", "expected a finite number")),
    (("--success-threshold", "2"),
     ("--success-threshold 2", "no rollout", "all 0 or 1", "expected a threshold in (0, 1]")),
    (("--success-threshold", "0"), ("--success-threshold 0", "every rollout", "expected a threshold in (0, 1]")),
])
def test_option_values_outside_their_meaning_are_refused_before_any_output(tmp_path, capsys, flags, needles):
    out = tmp_path / "out"
    code, _, _, err = analyze_cli(capsys, trl_dump(tmp_path / "run"), out, *flags)
    assert code == 2
    (line,) = err.strip().splitlines()
    assert line.startswith("fade: error: ") and all(n in line for n in needles), line
    assert not out.exists()
    with pytest.raises(ValueError):
        read_run(tmp_path / "run", ReadOptions(reward_weights=[1.0, math.nan]))


def test_a_threshold_on_rewards_that_are_not_0_or_1_is_kept(tmp_path, capsys):
    code, steps, report, err = analyze_cli(capsys, trl_dump(tmp_path / "run", rewards={"acc": 0.5}), tmp_path / "o",
                                           "--success-threshold", "0.5")
    assert code == 0, err
    assert report["success"] == "reward >= 0.5" and steps[0]["solve_rate"] == pytest.approx(0.5)


def test_trl_files_an_evaluation_wrote_at_their_step_are_left_out(tmp_path, capsys):
    code, kept, _, _ = analyze_cli(capsys, trl_dump(tmp_path / "plain", steps=(1, 4)), tmp_path / "a")
    # an evaluation at step 2 wrote completions_00002.parquet, and step 3 (no new generation) wrote
    # the same rows again: both hold the evaluation's rows, not a training batch
    dump = trl_dump(tmp_path / "eval", steps=(1, 2, 4), eval_steps=(2,), repeat={3: 2})
    code, steps, report, err = analyze_cli(capsys, dump, tmp_path / "b")
    assert code == 0, err
    assert [s["step"] for s in steps] == [1, 4]
    assert steps == kept
    (note,) = [n for n in report["notes"] if "evaluation" in n]
    assert "completions_00002.parquet" in note and "completions_00003.parquet" in note


def test_without_the_runs_record_a_note_says_evaluation_files_cannot_be_told_apart(tmp_path, capsys):
    code, _, report, err = analyze_cli(capsys, trl_dump(tmp_path / "run", record=False), tmp_path / "o")
    assert code == 0, err
    assert any("evaluat" in n and "trainer_state.json" in n for n in report["notes"])


# -- the output folder: whose it is, links, the previous analysis's files, bad paths ---------------


OUTPUT_NAMES = ("steps.jsonl", "report.json", "summary.md", "prompts.jsonl", "plane.png", "zero_spread.png",
                "solve_rate.png", "pass_at_k.png", "prompts.png")


def snapshot(folder: Path) -> dict[str, object]:
    """Every entry under ``folder`` as it is on disk: a file's bytes, a link's target, a folder."""
    return {str(p.relative_to(folder)): ("link", os.readlink(p)) if p.is_symlink() else
            "folder" if p.is_dir() else p.read_bytes() for p in sorted(folder.rglob("*"))}


def run_analyze(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(["analyze", *map(str, argv), "--quiet"])
    out, err = capsys.readouterr()
    return code, out, err


def test_a_fade_eval_folder_is_refused_and_left_as_it_was(tmp_path, capsys):
    samples = Path(__file__).resolve().parents[1] / "examples" / "samples" / "math_aime.jsonl"
    folder = tmp_path / "eval"
    assert main(["eval", str(samples), "--verifier", "math", "--k", "1,2", "--out", str(folder), "--no-progress",
                 "--workers", "1"]) == 0
    capsys.readouterr()
    before = snapshot(folder)
    assert {"scores.jsonl", "run.json", "report.json"} <= set(before)
    code, _, err = run_analyze(capsys, generic_dump(tmp_path / "r.jsonl"), "--out", folder)
    assert code == 2
    (line,) = err.strip().splitlines()
    assert line.startswith(f"fade: error: --out {folder} holds ") and "choose another --out" in line, line
    assert "scores.jsonl (fade eval)" in line and "report.json (not fade analyze's)" in line, line
    assert snapshot(folder) == before


@pytest.mark.parametrize("name, writer", [
    ("metrics.jsonl.gz", "fade train"), ("checkpoint.pt", "fade train"), ("run.json", "fade eval or fade train"),
    ("design.json", "fade sweep or fade demo"), ("runs", "fade sweep or fade demo"),
    ("calibration.json", "fade calibrate"), ("pretrain.jsonl", "fade pretrain"),
    ("report.json", "not fade analyze's"), ("plane.png", "not a file"),
])
def test_a_folder_holding_another_commands_outputs_is_refused_before_the_dump_is_read(tmp_path, capsys, name,
                                                                                         writer):
    folder = tmp_path / "out"
    folder.mkdir()
    if name in ("runs", "plane.png"):
        (folder / name).mkdir()
    else:
        (folder / name).write_text('{"global_step": 3}\n')
    before = snapshot(folder)
    # the dump does not exist: the folder is refused first
    code, _, err = run_analyze(capsys, tmp_path / "missing", "--out", folder)
    assert code == 2
    (line,) = err.strip().splitlines()
    assert f"--out {folder} holds " in line and f"{name} ({writer})" in line, line
    assert snapshot(folder) == before


def test_a_new_folder_an_empty_one_and_a_previous_analysis_are_written(tmp_path, capsys):
    dump = generic_dump(tmp_path / "r.jsonl")
    (tmp_path / "empty").mkdir()
    for folder in (tmp_path / "new" / "nested", tmp_path / "empty", tmp_path / "empty"):
        code, out, err = run_analyze(capsys, dump, "--out", folder, "--no-figures")
        assert code == 0, err
        assert sorted(p.name for p in folder.iterdir()) == ["prompts.jsonl", "report.json", "steps.jsonl",
                                                            "summary.md"]


def test_links_at_the_output_names_are_replaced_and_what_they_point_to_is_left_alone(tmp_path, capsys):
    folder, kept = tmp_path / "out", tmp_path / "kept"
    folder.mkdir()
    kept.mkdir()
    for name in OUTPUT_NAMES:
        (kept / name).write_text(f"not fade's {name}\n")
        (folder / name).symlink_to(kept / name)
    code, out, err = run_analyze(capsys, generic_dump(tmp_path / "r.jsonl"), "--out", folder)
    assert code == 0, err
    for name in OUTPUT_NAMES:
        assert (folder / name).is_file() and not (folder / name).is_symlink(), name
        assert (kept / name).read_text() == f"not fade's {name}\n", name
    assert json.loads((folder / "report.json").read_text())["num_steps"] == 2
    assert (folder / "plane.png").read_bytes().startswith(b"\x89PNG")


def test_a_new_analysis_removes_the_previous_analysiss_files_it_does_not_write_again(tmp_path, capsys):
    folder = tmp_path / "out"
    code, _, err = run_analyze(capsys, generic_dump(tmp_path / "r.jsonl"), "--out", folder)
    assert code == 0, err
    assert sorted(p.name for p in folder.iterdir()) == sorted(OUTPUT_NAMES)
    # what is not fade analyze's stays: a file of the user's, a folder, a link, a PNG of another name
    (folder / "notes.txt").write_text("mine\n")
    (folder / "extra").mkdir()
    (folder / "other.png").write_bytes(b"\x89PNG mine")
    (folder / "link.png").symlink_to(folder / "notes.txt")
    (folder / ".plane.png.abc123.tmp").write_bytes(b"half a figure")  # a killed analysis's leftover
    mine = {"notes.txt", "extra", "other.png", "link.png"}
    # rewards other than 0 or 1: no solve-rate, pass@k or per-prompt output, so the previous ones go
    code, _, err = run_analyze(capsys, generic_dump(tmp_path / "s.jsonl", scale=1.5), "--out", folder)
    assert code == 0, err
    assert {p.name for p in folder.iterdir()} == {"steps.jsonl", "report.json", "summary.md", "plane.png",
                                                   "zero_spread.png"} | mine
    code, out, err = run_analyze(capsys, generic_dump(tmp_path / "r.jsonl"), "--out", folder, "--no-figures")
    assert code == 0, err
    assert {p.name for p in folder.iterdir()} == {"steps.jsonl", "report.json", "summary.md", "prompts.jsonl"} | mine
    assert (folder / "notes.txt").read_text() == "mine\n" and (folder / "other.png").read_bytes() == b"\x89PNG mine"


def test_a_metrics_path_that_is_not_a_regular_file_is_refused_before_it_is_read(tmp_path, capsys):
    import signal

    fifo, folder = tmp_path / "metrics.jsonl", tmp_path / "out"
    os.mkfifo(fifo)
    (tmp_path / "metrics_dir").mkdir()

    def hung(signum, frame):
        raise AssertionError("fade analyze waited on the FIFO")

    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(60)
    try:
        for metrics, kind in ((fifo, "a FIFO"), (tmp_path / "metrics_dir", "a folder")):
            code, _, err = run_analyze(capsys, generic_dump(tmp_path / "r.jsonl"), "--out", folder,
                                       "--metrics", metrics)
            assert code == 2
            (line,) = err.strip().splitlines()
            assert line == f"fade: error: --metrics {metrics} is {kind}: expected a regular file of per-step metrics"
            assert not folder.exists()
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def test_an_empty_out_is_refused_and_nothing_is_written_in_the_current_folder(tmp_path, capsys, monkeypatch):
    dump = generic_dump(tmp_path / "dump" / "r.jsonl")
    monkeypatch.chdir(tmp_path)
    code, _, err = run_analyze(capsys, dump, "--out", "")
    assert code == 2
    (line,) = err.strip().splitlines()
    assert line == "fade: error: --out '' is empty: expected the folder to write the analysis into"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dump"]


def test_the_torn_line_warning_is_one_line_on_the_command_line(tmp_path, capsys):
    write_jsonl(tmp_path / "run" / "1.jsonl", verl_rows(1, REWARDS))
    write_jsonl(tmp_path / "run" / "2.jsonl", verl_rows(2, REWARDS), tail='{"input": "prompt 9", "sco')
    for _ in range(2):  # shown on every run, not once per process
        code, out, err = run_analyze(capsys, tmp_path / "run", "--out", tmp_path / "out", "--no-figures")
        assert code == 0, err
        assert err.splitlines() == [f"fade: warning: {tmp_path / 'run' / '2.jsonl'}:17: skipped the unfinished "
                                    "last line of a file still being written"]
    with pytest.warns(RuntimeWarning, match="2.jsonl:17: skipped the unfinished last line"):
        read_run(tmp_path / "run")  # a library caller still gets a warning


def test_the_other_commands_files_are_the_names_those_commands_write():
    from fade.analyze.report import OTHER_COMMANDS_FILES

    store = pytest.importorskip("fade.verifiers.evaluate.store")
    runlog = pytest.importorskip("fade.testbed.runlog")
    session = pytest.importorskip("fade.testbed.session")
    pretrain = pytest.importorskip("fade.testbed.pretrain")
    sweep = pytest.importorskip("fade.experiments.sweep")
    presets = pytest.importorskip("fade.experiments.presets")
    report = pytest.importorskip("fade.testbed.report")
    named = {
        "fade eval": {store.SCORES, store.PROBLEMS, store.LOCK, store.RUN},
        "fade train": {runlog.CONFIG_FILE, runlog.METRICS_FILE, runlog.METRICS_FILE + runlog.COMPRESSED,
                       runlog.EVAL_FILE, runlog.EVAL_FILE + runlog.COMPRESSED, session.RESUMES_FILE,
                       session.CHECKPOINT, report.TRAINING_PNG},
        "fade sweep": {sweep.DESIGN_FILE, sweep.TUNING_FILE, sweep.LOCK_FILE,
                       presets.get_preset("paper").runs()[0].directory("out").parts[1]},  # out/runs/TASK/...
        "fade pretrain": {pretrain.LOG, pretrain.CHECKPOINT},
    }
    for command, names in named.items():
        for name in names:
            assert command in OTHER_COMMANDS_FILES.get(name, ""), (command, name)


# -- bad input through the command line: one line naming the file, and nothing written ---------------




def test_an_integer_key_and_a_text_key_spelled_alike_are_two_groups(tmp_path, capsys):
    # fade's old encoding wrote the integer 1 as the text "\x00int:1": that text merged with it
    rows = generic_rows(1, [1, "\x00int:1", "1", 1, "\x00int:1", "1"], [1.0, 0.0, 1.0, 1.0, 0.0, 0.0])
    code, steps, _, err = analyze_cli(capsys, write_jsonl(tmp_path / "r.jsonl", rows), tmp_path / "a")
    assert code == 0, err
    (row,) = steps
    assert row["num_groups"] == 3 and row["group_sizes"] == [2]
    assert row["zero_spread_share"] == pytest.approx(4 / 6)  # 1: [1, 1] and "\x00int:1": [0, 0] agree
    run = read_run(write_jsonl(tmp_path / "k.jsonl", generic_rows(1, [7, "7", 7], [1.0, 0.0, 1.0])))
    assert run.steps[0].prompt_keys == [7, "7"]  # each group's key as the dump wrote it


def test_a_csv_group_key_is_the_text_as_written(tmp_path, capsys):
    # "01" and "1" are two groups, not the integer 1 twice
    (tmp_path / "r.csv").write_text("step,group_id,reward\n1,01,1\n1,1,0\n1,01,1\n1,1,0\n")
    code, steps, _, err = analyze_cli(capsys, tmp_path / "r.csv", tmp_path / "b")
    assert code == 0, err
    assert steps[0]["num_groups"] == 2 and steps[0]["zero_spread_share"] == 1.0


def test_a_group_key_column_neither_text_nor_integers_is_refused(tmp_path, capsys):
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"step": [1, 1], "group_id": [1.0, 1.5], "reward": [1.0, 0.0]}), tmp_path / "r.parquet")
    refused(capsys, tmp_path / "r.parquet", tmp_path / "out", "r.parquet", "'group_id'", "expected text or integers")


def test_verl_v1_refuses_a_uid_over_two_prompt_texts_and_a_uid_written_twice(tmp_path, capsys):
    rows = verl_rows(1, REWARDS)
    rows[5] = {**rows[5], "input": "prompt 9"}  # uid uuid1x1_1_0 of prompt uuid1x1, whose row 5 is "prompt 1"
    refused(capsys, write_jsonl(tmp_path / "a" / "1.jsonl", rows).parent, tmp_path / "out",
            "1.jsonl: row 6", "'uuid1x1_1_0'", "row 5", "expected one prompt text per uid prompt")
    # a uid written twice is refused whether or not a session elsewhere wrote several outputs (the
    # rows beside it once decided whether it was counted twice or once)
    for name, extra in (("b", []), ("c", [{**verl_rows(1, REWARDS)[8], "uid": "uuid1x2_0_1"}])):
        rows = verl_rows(1, REWARDS)
        rows += [{**rows[2], "score": 0.0}] + extra
        refused(capsys, write_jsonl(tmp_path / name / "1.jsonl", rows).parent, tmp_path / "out",
                "1.jsonl: rows 3 and 17", "'uuid1x0_2_0' twice", "expected each")
    # a later output of a multi-output agent loop carries its own prompt: that is no second prompt
    rows = verl_rows(1, REWARDS)
    rows.insert(1, {**rows[1], "uid": "uuid1x0_1_1", "input": "prompt 0, turn 2", "score": 1.0})
    code, steps, _, err = analyze_cli(capsys, write_jsonl(tmp_path / "d" / "1.jsonl", rows).parent, tmp_path / "d-out")
    assert code == 0, err
    assert steps[0]["num_rollouts"] == 16 and steps[0]["num_groups"] == 4


def test_one_step_is_read_from_one_file(tmp_path, capsys):
    out = tmp_path / "out"
    verl = tmp_path / "verl"
    write_jsonl(verl / "2.jsonl", verl_rows(2, REWARDS))
    write_jsonl(verl / "02.jsonl", verl_rows(2, REWARDS))
    refused(capsys, verl, out, "02.jsonl and 2.jsonl are both step 2", "expected one file per step")
    prompts, rewards = [f"p{i // 4}" for i in range(16)], sum(REWARDS, [])
    trl = tmp_path / "trl" / "completions"
    write_trl(trl / "completions_00002.parquet", 2, prompts, rewards, 4)
    write_trl(trl / "completions_2.parquet", 2, prompts, rewards, 4)
    refused(capsys, trl.parent, out, "completions_00002.parquet and completions_2.parquet are both step 2")
    named = tmp_path / "named" / "completions"
    write_trl(named / "completions_00002.parquet", 3, prompts, rewards, 4)
    refused(capsys, named.parent, out, "completions_00002.parquet", "holds step 3", "expected step 2")
    nemo = [{"content": [f"q{i // 4}", "a"], "rewards": r} for i, r in enumerate(rewards)]
    write_jsonl(tmp_path / "nemo" / "train_data_step2.jsonl", nemo)
    write_jsonl(tmp_path / "nemo" / "train_data_step02.jsonl", nemo)
    refused(capsys, tmp_path / "nemo", out, "train_data_step02.jsonl and train_data_step2.jsonl are both step 2")
    for step in ("step_2", "step_02"):
        eps = [{"group": {"id": f"g{i // 4}"}, "task": {"key": "t"}, "traces": [{"rewards": {"acc": {"score": r}}}]}
               for i, r in enumerate(rewards)]
        write_jsonl(tmp_path / "prime" / "rollouts" / step / "train" / "effective" / "traces.jsonl", eps)
    refused(capsys, tmp_path / "prime", out, "step_02/train/effective/traces.jsonl and step_2/", "both step 2")


def test_generic_steps_out_of_order_are_sorted_and_a_step_in_two_blocks_is_one_step(tmp_path, capsys):
    rows = (generic_rows(3, ["a", "a"], [1.0, 0.0]) + generic_rows(1, ["a", "a"], [1.0, 1.0])
            + generic_rows(2, ["b", "b"], [0.0, 0.0]) + generic_rows(3, ["b", "b"], [1.0, 1.0]))
    code, steps, report, err = analyze_cli(capsys, write_jsonl(tmp_path / "r.jsonl", rows), tmp_path / "o")
    assert code == 0, err
    assert [s["step"] for s in steps] == [1, 2, 3] and report["first_step"] == 1 and report["last_step"] == 3
    assert steps[2]["num_groups"] == 2 and steps[2]["zero_spread_share"] == 0.5


@pytest.mark.parametrize("case, needles", [
    ("json_fraction", ("r.jsonl:3", "'step' is 2.5", "expected an integer")),
    ("json_int64", ("r.jsonl:2", "'step' is 9223372036854775808", "expected an integer within int64")),
    ("csv_fraction", ("r.csv: row 3", "step '2.5'", "expected an integer")),
    ("csv_int64", ("r.csv: row 2", "step '100000000000000000000'", "expected an integer within int64")),
    ("parquet_fraction", ("r.parquet: row 3", "step 2.5", "expected an integer")),
    ("parquet_uint64", ("r.parquet: row 2", "step 18446744073709551615", "expected an integer within int64")),
    ("trl_fraction", ("completions_00002.parquet: row 1", "step 2.5", "expected an integer")),
])
def test_a_step_that_is_no_int64_integer_is_refused_not_cut(tmp_path, capsys, case, needles):
    import pyarrow as pa
    import pyarrow.parquet as pq

    steps: list = [1, 1, 2.5, 2.5] if "fraction" in case else [1, 2**63, 1, 1]
    if case == "csv_int64":
        steps = [1, 10**20, 1, 1]
    rows = [{"step": s, "group_id": "a", "reward": float(i % 2)} for i, s in enumerate(steps)]
    kind = case.split("_")[0]
    if kind == "json":
        target = write_jsonl(tmp_path / "r.jsonl", rows)
    elif kind == "csv":
        target = tmp_path / "r.csv"
        target.write_text("step,group_id,reward\n" + "".join(f"{r['step']},a,{r['reward']}\n" for r in rows))
    elif kind == "parquet":
        target = tmp_path / "r.parquet"
        step = (pa.array(steps, pa.float64()) if "fraction" in case
                else pa.array([1, 2**64 - 1, 1, 1], pa.uint64()))
        pq.write_table(pa.table({"step": step, "group_id": ["a"] * 4, "reward": [0.0, 1.0, 0.0, 1.0]}), target)
    else:
        target = tmp_path / "trl"
        path = write_trl(target / "completions" / "completions_00002.parquet", 2, ["p"] * 4, [1.0, 0.0, 1.0, 0.0], 4)
        table = pq.read_table(path)
        pq.write_table(table.set_column(0, "step", pa.array([2.5] * 4)), path)
    refused(capsys, target, tmp_path / "out", *needles)


def test_trl_groups_are_whole_groups_of_the_runs_one_size(tmp_path, capsys):
    # TRL wrote 5 groups of 4 (zero-spread share 0.4) and a partial group of 2: the runs of one
    # prompt (4, 4, 4, 4, 4, 2) split into groups of 2 read as a share of 0.8; the advantages TRL
    # centred on each group of 4 say that 2 is no group size, and a run of 2 is no group of 4
    rewards = [1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 0, 0, 1, 1, 0, 0, 1, 0, 1, 0, 1, 0]
    prompts = [f"p{i // 4}" for i in range(22)]
    dump = tmp_path / "partial"
    write_trl(dump / "completions" / "completions_00001.parquet", 1, prompts, rewards, 4)
    refused(capsys, dump, tmp_path / "out", "completions_00001.parquet: rows 9-10", "advantages sum to",
            "expected groups of 2 rows", "completions_00001.parquet rows 21-22", "give --group-size")
    refused(capsys, dump, tmp_path / "out", "completions_00001.parquet: rows 21-22 are 2 rows of one prompt",
            "ragged or missing groups", flags=("--group-size", "4"))
    # the same prompt in two consecutive groups is a run of 8: two groups of 4, as TRL grouped them;
    # a file where every prompt came twice (runs of 8) is read in the run's groups of 4
    ok = tmp_path / "ok" / "completions"
    write_trl(ok / "completions_00001.parquet", 1, [f"p{i // 4}" for i in range(20)], rewards[:20], 4)
    twice = ["p0"] * 8 + ["p1"] * 8 + ["p2"] * 4
    write_trl(ok / "completions_00002.parquet", 2, twice, rewards[:20], 4)
    write_trl(ok / "completions_00003.parquet", 3, [f"q{i // 8}" for i in range(16)], rewards[:16], 4)
    code, steps, report, err = analyze_cli(capsys, ok.parent, tmp_path / "ok-out")
    assert code == 0, err
    assert [(s["num_groups"], s["group_sizes"]) for s in steps] == [(5, [4]), (5, [4]), (4, [4])]
    assert [s["zero_spread_share"] for s in steps] == [0.4, 0.4, 0.5]
    assert any("group size 4" in n and "completions_00001.parquet rows 1-4" in n for n in report["notes"])
    # a --group-size that splits TRL's groups is refused the same way
    refused(capsys, ok.parent, tmp_path / "out", "completions_00001.parquet: rows 9-10", "advantages sum to",
            "(--group-size)", "the group size is not 2)", flags=("--group-size", "2"))


def test_a_run_of_fades_trl_trainer_is_read_though_its_advantages_are_not_centred(tmp_path, capsys):
    # FadeGRPOTrainer writes its estimator's advantages (FADE divides the failures' by delta, so a
    # group's need not sum to 0) and logs fade/... in trainer_state.json: its groups are cut by the
    # run's group size alone, and its estimator is not taken as TRL's
    rewards = [1.0, 0.0, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0]
    r = np.asarray(rewards).reshape(-1, 4)
    centred = r - r.mean(1, keepdims=True)
    fade_adv = np.where(centred < 0, centred / 0.8, centred).ravel().tolist()  # FADE with delta 0.8
    dump = tmp_path / "fade_trl"
    write_trl(dump / "completions" / "completions_00001.parquet", 1, [f"p{i // 4}" for i in range(8)], rewards, 4,
              advantages=fade_adv)
    history = [{"step": 1, "loss": 0.0, "rewards/acc/mean": 0.375, "entropy": 1.0, "fade/delta": 0.8}]
    (dump / "trainer_state.json").write_text(json.dumps({"global_step": 1, "log_history": history}))
    code, steps, report, err = analyze_cli(capsys, dump, tmp_path / "out")
    assert [(s["num_groups"], s["group_sizes"]) for s in steps] == [(2, [4])]
    assert report["estimator"] is None and report["entropy_feed"] == "previous-step"
    expected = fade.decompose(np.asarray(fade_adv), np.asarray(rewards), np.repeat([0, 1], 4)).diagnostics()
    assert steps[0]["run"] == pytest.approx(expected, nan_ok=True)  # the advantages the run applied, as written
    assert any("FadeGRPOTrainer" in n for n in report["notes"])
    assert any("group size 4" in n and "not checked against the advantages" in n for n in report["notes"])
    trl_only = [{k: v for k, v in history[0].items() if not k.startswith("fade/")}]
    (dump / "trainer_state.json").write_text(json.dumps({"global_step": 1, "log_history": trl_only}))
    refused(capsys, dump, tmp_path / "out2", "advantages sum to", "expected groups of 4 rows")  # TRL's are centred


def test_the_mean_of_rewards_near_the_largest_float_is_that_number(tmp_path, capsys):
    big = 1.5e308
    rows = generic_rows(1, ["a", "a", "b", "b"], [big, big, big, 0.5 * big])
    rows += generic_rows(2, ["a", "a"], [big, big])
    code, steps, report, err = analyze_cli(capsys, write_jsonl(tmp_path / "r.jsonl", rows), tmp_path / "o")
    assert code == 0, err
    assert steps[0]["mean_reward"] == pytest.approx(0.875 * big, rel=1e-15)
    assert steps[1]["mean_reward"] == big
    assert report["mean_reward"] == pytest.approx(0.9375 * big, rel=1e-15)
