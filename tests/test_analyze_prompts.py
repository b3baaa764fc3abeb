"""fade analyze's per-prompt view: trajectories, windows and classes computed by hand on small
dumps, the files it writes through the command line, the runs that have no view (and say why),
and the plane figure's note and rolling mean.

The definitions under test (src/fade/analyze/prompts.py, docs/analyze.md "The per-prompt view"):
a prompt's solve rate at a step pools its rollouts of that step; the run's S steps fall in
W = min(10, S) windows, position i in window floor(i * W / S); solved means a pooled solve rate
>= 0.5; the classes compare the windows where the prompt was seen.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("pyarrow")

from analyze_dumps import generic_dump, write_jsonl  # noqa: E402
from fade.analyze import RunRecords, StepBatch, analyze_records, analyze_run, write_outputs  # noqa: E402
from fade.analyze.figures import plane_note, rolling_mean, rolling_window  # noqa: E402
from fade.analyze.prompts import CLASSES, EXCERPT_CHARS, excerpt, prompt_view  # noqa: E402
from fade.cli import main  # noqa: E402

A = "Add\t2+2?\nAnswer | `x`"  # a prompt text with a tab, a newline, a pipe and a backtick

#: step -> [(prompt key, rewards of its group)], in the order written. Each step is one window
#: (4 steps, 4 windows). "f" is seen at one step only; 7 and "7" are two prompts.
RUN = {
    1: [(A, [0, 0]), ("b", [1, 1]), ("d", [1, 0]), ("e", [1, 1]), (7, [0, 0])],
    2: [(A, [1, 0]), ("c", [0, 0]), ("d", [0, 0]), ("e", [0, 0]), (7, [0, 0])],
    3: [(A, [1, 1]), ("b", [1, 0]), ("e", [1, 1]), ("7", [1, 1]), ("f", [1, 0])],
    4: [(A, [1, 1]), ("c", [1, 0, 0, 0]), ("7", [1, 1])],
}

#: Worked by hand from RUN: steps seen, successes, rollouts, first and last step solved, class.
EXPECTED = {
    A: ([1, 2, 3, 4], [0, 1, 2, 2], [2, 2, 2, 2], 2, 4, "learned"),
    "b": ([1, 3], [2, 1], [2, 2], 1, 3, "always_solved"),
    "d": ([1, 2], [1, 0], [2, 2], 1, 1, "forgotten"),
    "e": ([1, 2, 3], [2, 0, 2], [2, 2, 2], 1, 3, "fluctuating"),
    7: ([1, 2], [0, 0], [2, 2], None, None, "never_solved"),
    "c": ([2, 4], [0, 1], [2, 4], None, None, "never_solved"),
    "7": ([3, 4], [2, 2], [2, 2], 3, 4, "always_solved"),
}


def analyze_cli(capsys, dump: Path, out: Path, *flags: str) -> tuple[str, dict]:
    code = main(["analyze", str(dump), "--out", str(out), "--quiet", *flags])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return captured.out, json.loads((out / "report.json").read_text())


def prompts_file(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "prompts.jsonl").read_text(encoding="utf-8").splitlines()]


# -- the view, by hand ---------------------------------------------------------------------------------


def test_trajectories_classes_and_windows_are_the_hand_computed_ones(tmp_path, capsys):
    out = tmp_path / "out"
    stdout, report = analyze_cli(capsys, generic_dump(tmp_path / "run.jsonl", RUN), out)
    rows = prompts_file(out)
    # every prompt seen at two steps or more, in the order they first appear; "f" (one step) is not
    assert [r["key"] for r in rows] == [A, "b", "d", "e", 7, "c", "7"]
    for row in rows:
        steps, succ, size, first, last, cls = EXPECTED[row["key"]]
        assert (row["steps"], row["successes"], row["rollouts"]) == (steps, succ, size), row["key"]
        assert row["solve_rates"] == [c / n for c, n in zip(succ, size)]
        assert row["num_steps"] == len(steps)
        assert (row["first_solve_step"], row["last_solve_step"], row["class"]) == (first, last, cls), row["key"]
        assert row["windows"] == [s - 1 for s in steps]  # 4 steps: a window each
    by_key = {r["key"]: r for r in rows}
    assert by_key[A]["change"] == 1.0 and by_key["b"]["change"] == -0.5 and by_key["c"]["change"] == 0.25
    assert by_key["e"]["change"] == 0.0 and by_key["e"]["windows_solved"] == [True, False, True]
    # the excerpt: one line, control characters escaped; the key is the text as the dump wrote it
    assert by_key[A]["excerpt"] == "Add\\t2+2?\\nAnswer | `x`"

    section = report["prompts"]
    assert section["num_prompts"] == 8 and section["num_prompts_seen_twice"] == 7
    assert section["classes"] == {"always_solved": 2, "never_solved": 2, "learned": 1, "forgotten": 1,
                                  "fluctuating": 1}
    # per window (= step): seen, solved, and learned / forgotten since the prompt's previous window
    assert [(w["first_step"], w["last_step"], w["seen"], w["solved"], w["learned"], w["forgotten"])
            for w in section["windows"]] == [(1, 1, 5, 3, 0, 0), (2, 2, 5, 1, 1, 2), (3, 3, 4, 4, 1, 0),
                                              (4, 4, 3, 2, 0, 0)]
    # the largest changes first; b and d tie at -0.5 on rollouts too, so the first to appear first
    assert [(p["key"], p["change"]) for p in section["top_changed"]] == [(A, 1.0), ("b", -0.5), ("d", -0.5),
                                                                          ("c", 0.25)]
    summary = (out / "summary.md").read_text(encoding="utf-8")
    assert "## Prompts across steps" in summary
    assert "| 2 | 2 | 1 | 1 | 1 |" in summary  # the classes table
    # the excerpt in a code span whose fence outruns its backticks, its pipe escaped for the table
    assert "| `` Add\\t2+2?\\nAnswer \\| `x` `` | learned | 4 | 0.000 (w0) | 1.000 (w3) | +1.000 |" in summary
    assert (out / "prompts.png").read_bytes().startswith(b"\x89PNG")
    assert "no per-prompt view" not in stdout


def test_a_prompt_in_two_groups_of_one_step_is_one_point_of_its_pooled_rollouts(tmp_path, capsys):
    # TRL: a prompt the dataset holds twice fills two consecutive groups of one step
    import pyarrow as pa
    import pyarrow.parquet as pq

    def write(step: int, prompts: list[str], rewards: list[float]) -> None:
        r = np.asarray(rewards, dtype=float).reshape(-1, 2)
        adv = (r - r.mean(1, keepdims=True)).ravel().tolist()
        path = tmp_path / "trl" / "completions" / f"completions_{step:05d}.parquet"
        path.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.table({"step": [step] * len(prompts), "prompt": prompts, "completion": ["x"] * len(prompts),
                                 "acc": list(map(float, rewards)), "advantage": adv}), path)

    write(1, ["p0"] * 4 + ["p1"] * 2, [1, 0, 1, 1, 0, 0])
    write(2, ["p0"] * 2 + ["p1"] * 2, [0, 0, 1, 1])
    out = tmp_path / "out"
    analyze_cli(capsys, tmp_path / "trl", out, "--group-size", "2")
    steps = [json.loads(line) for line in (out / "steps.jsonl").read_text().splitlines()]
    assert steps[0]["num_groups"] == 3  # p0's two groups are two groups of the step's statistics
    p0, p1 = prompts_file(out)
    assert (p0["key"], p0["successes"], p0["rollouts"], p0["solve_rates"]) == ("p0", [3, 0], [4, 2], [0.75, 0.0])
    assert p0["class"] == "forgotten" and p1["class"] == "learned"


def test_windows_split_the_steps_into_ten_of_sizes_one_apart_and_pool_their_rollouts():
    # 12 steps: position i in window floor(i * 10 / 12): windows 0 and 5 hold two steps
    keys = {s: (["p", "q"] if s <= 2 else ["p"]) for s in range(1, 13)}
    rewards = {1: [[1, 1], [1, 0]], 2: [[0, 0], [0, 0]]}
    steps = []
    for s, names in keys.items():
        r = np.array(rewards.get(s, [[1, 0]]), dtype=float)
        steps.append(StepBatch(s, r.ravel(), np.repeat(np.arange(len(names)), 2), prompt_keys=names))
    view = prompt_view(RunRecords("generic", "x", steps, success=(">=", 1.0)))
    assert view.windows == [(0, 1), (2, 2), (3, 3), (4, 4), (5, 5), (6, 7), (8, 8), (9, 9), (10, 10), (11, 11)]
    p, q = view.prompts
    assert p["windows"] == list(range(10)) and p["window_solve_rates"][0] == 0.5  # steps 1 and 2: 2 of 4
    assert p["windows_solved"] == [True] * 10 and p["class"] == "always_solved"
    # q is solved at step 1 (1 of 2) but not in window 0 (1 of 4): a class reads windows, a solve step steps
    assert (q["first_solve_step"], q["windows"], q["window_solve_rates"]) == (1, [0], [0.25])
    assert q["class"] == "never_solved" and q["change"] is None
    assert view.per_window()[5] == {"window": 5, "first_step": 7, "last_step": 8, "num_steps": 2, "seen": 1,
                                    "solved": 1, "learned": 0, "forgotten": 0}


def test_the_heat_map_rows_are_the_most_seen_prompts_ordered_by_first_solve(tmp_path):
    view = analyze_run(generic_dump(tmp_path / "run.jsonl", RUN)).prompts
    assert [p["key"] for p in view.heatmap_rows()] == ["b", "d", "e", A, "7", 7, "c"]
    # the three seen most: A (4 steps), e (3), then c (2 steps but 6 rollouts)
    assert [p["key"] for p in view.heatmap_rows(3)] == ["e", A, "c"]


@pytest.mark.parametrize("key, expected", [
    ("  plain  ", "plain"),
    (42, "42"),
    ("a\r\nb\x00c\u202ed\u2028e", "a\\r\\nb\\u0000c\\u202ed\\u2028e"),
    ("x" * EXCERPT_CHARS, "x" * EXCERPT_CHARS),
    ("x" * (EXCERPT_CHARS + 1), "x" * (EXCERPT_CHARS - 1) + "…"),
    ("x" * (EXCERPT_CHARS - 2) + "\n" + "y", "x" * (EXCERPT_CHARS - 2) + "…"),  # never cut inside an escape
])
def test_an_excerpt_is_one_bounded_line(key, expected):
    got = excerpt(key)
    assert got == expected
    assert len(got) <= EXCERPT_CHARS and "\n" not in got and got.isprintable()


# -- no view: a note, and no file ----------------------------------------------------------------------


@pytest.mark.parametrize("case, needle", [
    ("not successes", "rewards are not successes"),
    ("one step", "every prompt was seen at one step only (5 prompts over 1 step)"),
    ("each prompt once", "every prompt was seen at one step only (3 prompts over 2 steps)"),
])
def test_a_run_without_a_view_says_why_and_writes_no_per_prompt_file(tmp_path, capsys, case, needle):
    if case == "not successes":
        dump = generic_dump(tmp_path / "run.jsonl", RUN, scale=0.7)
    elif case == "one step":
        dump = generic_dump(tmp_path / "run.jsonl", {1: RUN[1]})
    else:
        dump = generic_dump(tmp_path / "run.jsonl", {1: RUN[1][:2], 2: RUN[2][1:2]})
    out = tmp_path / "out"
    stdout, report = analyze_cli(capsys, dump, out)
    assert set(report["prompts"]) == {"note"} and needle in report["prompts"]["note"]
    assert f"note: {report['prompts']['note']}" in " ".join(stdout.split())
    assert not (out / "prompts.jsonl").exists() and not (out / "prompts.png").exists()
    summary = (out / "summary.md").read_text()
    assert f"## Prompts across steps\n\n- {report['prompts']['note']}\n" in summary
    assert "always solved" not in summary  # no table of zeros


def test_a_dump_without_prompt_keys_says_so(tmp_path):
    batch = StepBatch(1, np.array([1.0, 0.0, 1.0, 1.0]), np.array([0, 0, 1, 1]))
    analysis = analyze_records(RunRecords("mine", "x", [batch, StepBatch(2, batch.rewards, batch.groups)],
                                          success=(">=", 1.0)))
    assert analysis.prompts is None and "the mine dump names no prompt across steps" in analysis.prompts_note
    written = write_outputs(analysis, tmp_path / "out")
    assert {p.name for p in written}.isdisjoint({"prompts.jsonl", "prompts.png"})
    assert json.loads((tmp_path / "out" / "report.json").read_text())["prompts"] == {"note": analysis.prompts_note}


def test_a_rerun_removes_the_per_prompt_files_it_does_not_write_again(tmp_path, capsys):
    out = tmp_path / "out"
    dump = generic_dump(tmp_path / "run.jsonl", RUN)
    analyze_cli(capsys, dump, out)
    assert (out / "prompts.png").is_file() and (out / "prompts.jsonl").is_file()
    analyze_cli(capsys, dump, out, "--no-figures")
    assert not (out / "prompts.png").exists() and (out / "prompts.jsonl").is_file()
    analyze_cli(capsys, dump, out)
    analyze_cli(capsys, generic_dump(tmp_path / "scaled.jsonl", RUN, scale=0.7), out)
    assert not (out / "prompts.png").exists() and not (out / "prompts.jsonl").exists()


# -- property: the classes partition the prompts seen twice ----------------------------------------------


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.tuples(st.integers(0, 5), st.integers(1, 3), st.integers(0, 3)), min_size=1,
                         max_size=6), min_size=1, max_size=14))
def test_the_classes_partition_the_prompts_seen_at_two_steps_or_more(steps):
    # each step: groups (prompt, size, successes <= size); a prompt may come in two groups of a step
    batches, seen = [], {}
    for s, groups in enumerate(steps):
        rewards = np.concatenate([np.r_[np.ones(min(c, n)), np.zeros(n - min(c, n))] for _, n, c in groups])
        ids = np.repeat(np.arange(len(groups)), [n for _, n, _ in groups])
        batches.append(StepBatch(10 * s, rewards, ids, prompt_keys=[f"p{k}" for k, _, _ in groups]))
        for k, n, c in groups:
            cell = seen.setdefault(f"p{k}", {}).setdefault(s, [0, 0])
            cell[0] += min(c, n)
            cell[1] += n
    view = prompt_view(RunRecords("generic", "x", batches, success=(">=", 1.0)))
    twice = {k for k, cells in seen.items() if len(cells) >= 2}
    if not twice:
        assert isinstance(view, str) and "one step only" in view
        return
    assert sorted(p["key"] for p in view.prompts) == sorted(twice)
    counts = view.counts()
    assert set(counts) == set(CLASSES) and sum(counts.values()) == len(twice)
    num_windows = min(10, len(steps))
    for p in view.prompts:
        cells = seen[p["key"]]
        assert p["steps"] == [10 * s for s in sorted(cells)]
        assert p["solve_rates"] == [cells[s][0] / cells[s][1] for s in sorted(cells)]
        pooled: dict[int, list[int]] = {}
        for s, (c, n) in cells.items():
            w = pooled.setdefault(s * num_windows // len(steps), [0, 0])
            w[0] += c
            w[1] += n
        solved = [pooled[w][0] / pooled[w][1] >= 0.5 for w in sorted(pooled)]
        expected = ("always_solved" if all(solved) else "never_solved" if not any(solved) else
                    "learned" if not solved[0] and solved[-1] else "forgotten" if solved[0] and not solved[-1]
                    else "fluctuating")
        assert p["class"] == expected
    assert sum(w["seen"] for w in view.per_window()) == sum(len(p["windows"]) for p in view.prompts)


# -- plane.png: a flat sign balance says so; difficulty against step is smoothed -------------------------


def test_the_plane_says_when_every_series_sits_at_sign_balance_one_half(tmp_path):
    centred = analyze_run(generic_dump(tmp_path / "run.jsonl", RUN))
    assert "every series is centred" in plane_note(centred)
    # the run's own advantages, all positive, are success-heavy: the plane is not one line
    rows = [{"step": s, "prompt_id": k, "reward": float(r), "advantage": 1.0}
            for s, groups in RUN.items() for k, rewards in groups for r in rewards]
    assert plane_note(analyze_run(write_jsonl(tmp_path / "own.jsonl", rows))) is None


def test_the_rolling_mean_is_centred_and_leaves_out_steps_without_mass():
    got = rolling_mean(np.array([1.0, np.nan, 3.0, 5.0, 7.0]), 3)
    assert got.tolist() == [1.0, 2.0, 4.0, 5.0, 6.0]
    assert np.isnan(rolling_mean(np.array([np.nan, np.nan]), 3)).all()
    assert [rolling_window(n) for n in (3, 5, 6, 30, 40, 200)] == [None, None, 3, 3, 5, 21]
