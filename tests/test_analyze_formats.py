"""fade analyze on prime-rl's trace stream and on ROLL's RLVR dump, through the command line.

Neither engine installs here, so each fixture is written field for field as the engine's writer
writes it (tests/analyze_dumps.py, the writers cited at each builder); the statistics are checked
against numbers worked out by hand from the rewards below, not against fade's own functions.
"""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path

import pytest

pytest.importorskip("pyarrow")

from analyze_dumps import (  # noqa: E402
    analyzed,
    compact_line,
    episode,
    index_row,
    refused,
    roll_columns,
    scored,
    write_roll,
    write_stream,
)


def line_of(data: bytes, offset: int) -> int:
    return data[:offset].count(b"\n") + 1


# -- prime-rl's trace stream -------------------------------------------------------------------------


def prime_run(tmp_path: Path, **kw) -> tuple[Path, list[dict]]:
    """Two dispatch steps arriving interleaved, with eval episodes among them.

    Step 1: groups a [1, 0, 1, 1], b [0, 0, 0, 0], c [1, 1, 1, 1] (one episode of two traces, each
    scoring 1: its reward is their mean, 1), d [0, 1, 0, 0]. Step 2: e [1, 0, 0, errored],
    f [1, 1, 1, 1] (weights 0.5 + 0.5). By hand: step 1 has 2 of 4 groups with one reward (8 of 16
    rollouts), mean reward 8/16, solve rates 3/4, 0, 1, 1/4 (mean 1/2), pass@2 per group
    1 - C(n-c, 2)/C(n, 2) = 1, 0, 1, 1/2; step 2 has groups of 3 and 4, f alone without spread (4 of
    7 rollouts), mean reward 5/7, solve rates 1/3 and 1 (mean 2/3).
    """
    one = {"a": [1, 0, 1, 1], "b": [0, 0, 0, 0], "c": [1, 1, 1, 1], "d": [0, 1, 0, 0]}
    records = []
    for i in range(4):
        for g, rewards in one.items():
            traces = [scored(1.0), scored(1.0)] if (g, i) == ("c", 2) else [scored(float(rewards[i]))]
            records.append(episode(1, f"g1{g}", traces, key=f"task-{g}"))
        if i == 1:  # an evaluation, and step 2's first episodes, arrive while step 1 is still out
            records.append(episode(1, "eval0", [scored(1.0)], kind="eval"))
            records.append(episode(2, "g2e", [scored(1.0)], key="task-e"))
    records += [episode(2, "g2e", [scored(0.0)], key="task-e"), episode(2, "g2e", [scored(0.0)], key="task-e"),
                episode(2, "g2e", None, key="task-e")]
    half = {"correct": {"score": 1.0, "weight": 0.5}, "format": {"score": 1.0, "weight": 0.5}, "judge": None}
    records += [episode(2, "g2f", [half], key="task-f") for _ in range(4)]
    records.append(episode(2, "eval1", [scored(0.0)], kind="eval"))
    return write_stream(tmp_path / "run", records, **kw), records


def test_prime_rl_stream_statistics_are_the_hand_computed_ones(tmp_path, capsys):
    traces, records = prime_run(tmp_path)
    steps, report, _ = analyzed(capsys, tmp_path / "run", tmp_path / "out")
    assert report["format"] == "prime-rl-stream" and report["path"] == str(traces)
    assert [s["step"] for s in steps] == [1, 2]
    one, two = steps
    assert one["num_groups"] == 4 and one["num_rollouts"] == 16 and one["group_sizes"] == [4]
    assert one["zero_spread_share"] == 8 / 16 and one["zero_spread_groups"] == 2
    assert one["mean_reward"] == pytest.approx(8 / 16) and one["solve_rate"] == pytest.approx(1 / 2)
    assert one["pass_at_k"]["2"] == pytest.approx((1 + 0 + 1 + 1 / 2) / 4)
    assert two["num_groups"] == 2 and two["num_rollouts"] == 7 and two["group_sizes"] == [3, 4]
    assert two["zero_spread_share"] == pytest.approx(4 / 7) and two["zero_spread_groups"] == 1
    assert two["mean_reward"] == pytest.approx(5 / 7) and two["solve_rate"] == pytest.approx((1 / 3 + 1) / 2)
    assert report["mean_zero_spread_share"] == pytest.approx((1 / 2 + 4 / 7) / 2)
    notes = " ".join(report["notes"])
    assert "2 eval episodes left out" in notes and "1 train episodes without a rewarded trace" in notes
    assert one["run"] is None  # no advantages annotated


def test_prime_rl_stream_reads_the_runs_advantages_from_the_ship_stamps(tmp_path, capsys):
    # GRPO's centred advantage r - mean(r) of each group, stamped on every rewarded train trace
    records = [episode(3, "g", [scored(r)]) for r in (1.0, 0.0, 0.0, 1.0)]
    advantages = {rec["traces"][0]["id"]: r - 0.5 for rec, r in zip(records, (1.0, 0.0, 0.0, 1.0))}
    write_stream(tmp_path / "run", records, advantages=advantages, ship=3)
    steps, _, _ = analyzed(capsys, tmp_path / "run", tmp_path / "out")
    assert steps[0]["run"] is not None  # the run's own advantages' diagnostics
    # one trace's stamp missing (shipped traces only): the run's advantages are not read, and a note says so
    del advantages[records[0]["traces"][0]["id"]]
    write_stream(tmp_path / "partial", records, advantages=advantages, ship=3)
    steps, report, _ = analyzed(capsys, tmp_path / "partial", tmp_path / "out2")
    assert steps[0]["run"] is None and any("3 of 4 train episodes carry one" in n for n in report["notes"])


def test_prime_rl_stream_is_found_from_the_run_its_monitor_folder_or_a_file_and_by_format(tmp_path, capsys):
    traces, _ = prime_run(tmp_path)
    expected, _, _ = analyzed(capsys, tmp_path / "run", tmp_path / "o0")
    for i, target in enumerate([traces.parent, traces, traces / "stream.index.jsonl",
                                traces / "stream" / "00001.jsonl"], start=1):
        assert analyzed(capsys, target, tmp_path / f"o{i}")[0] == expected, target
    assert analyzed(capsys, tmp_path / "run", tmp_path / "named", "--format", "prime-rl")[0] == expected
    refused(capsys, tmp_path / "run", tmp_path / "out", "reads as a prime-rl dump, not verl",
            flags=("--format", "verl"))


def test_prime_rl_old_and_new_layouts_in_one_folder_are_refused(tmp_path, capsys):
    prime_run(tmp_path)
    old = {"group": {"id": "g"}, "task": {"key": "t"}, "run": {"work": {"step": 0}},
           "traces": [{"rewards": {"acc": {"score": 1.0, "weight": 1.0}}}]}
    (tmp_path / "run" / "rollouts" / "step_0" / "train" / "effective").mkdir(parents=True)
    (tmp_path / "run" / "rollouts" / "step_0" / "train" / "effective" / "traces.jsonl").write_bytes(compact_line(old))
    refused(capsys, tmp_path / "run", tmp_path / "out", "holds both prime-rl layouts", "expected one run's dump")


@pytest.mark.parametrize("case, needles", [
    ("no_step", ("00000.jsonl:2", "run.work.step None", "expected an integer")),
    ("step_text", ("00000.jsonl:2", "run.work.step '1'", "expected an integer")),
    ("step_huge", ("00000.jsonl:2", f"run.work.step {2**70}", "expected an integer within int64")),
    ("no_group", ("00000.jsonl:2", "group None", 'expected {"id": text}')),
    ("score_text", ("00000.jsonl:2", "reward 'correct' score '1'", "expected a finite number")),
    ("score_nan", ("00000.jsonl:2", "reward 'correct' score None", "a NaN is written as null")),
    ("duplicate_key", ("00000.jsonl:2", "key 'group' twice", "expected each key once")),
    ("group_two_steps", ("00000.jsonl:2: group 'g1a' at step 2", "00000.jsonl:1 has it at step 1",
                         "expected one step per group")),
    ("duplicate_episode", ("00001.jsonl:1", "again (also", "00000.jsonl:1", "expected each episode once")),
    ("torn_old_chunk", ("00000.jsonl:4", "cut short")),
    ("chunk_missing", ("chunk 00001 is missing", "expected every chunk from 00000")),
    ("index_other_episode", ("stream.index.jsonl:3", "someone-else", "00000.jsonl:3",
                             "expected the index to describe the stream")),
    ("index_row_missing", ("00000.jsonl:3: no row in stream.index.jsonl, but a later episode has one",)),
    ("index_points_nowhere", ("stream.index.jsonl:26", "no record starts there")),
    ("index_row_twice", ("stream.index.jsonl:4", "again (also line 3)", "expected one row per episode")),
    ("no_index", ("no stream.index.jsonl beside stream/",)),
    ("advantage_nan", ("orchestrator.index.jsonl:1", "advantage None", "expected a finite number")),
])
def test_prime_rl_stream_refusals_name_the_file_and_line(tmp_path, capsys, case, needles):
    traces, _ = prime_run(tmp_path, advantages={"x": 0.5} if case == "advantage_nan" else None)
    chunk0, index = traces / "stream" / "00000.jsonl", traces / "stream.index.jsonl"
    lines = chunk0.read_bytes().splitlines(keepends=True)
    rows = index.read_bytes().splitlines(keepends=True)
    second = json.loads(lines[1])

    def rewrite(line: bytes) -> None:
        """Line 2 of chunk 0 replaced, and the index rebuilt for it, as the monitor would write it."""
        lines[1] = line
        chunk0.write_bytes(b"".join(lines))
        offsets = [sum(map(len, lines[:i])) for i in range(len(lines))]
        rows[:len(lines)] = [compact_line(index_row(i + 1, json.loads(line), 0, offset))
                             for i, (line, offset) in enumerate(zip(lines, offsets))]
        index.write_bytes(b"".join(rows))

    def edit_row(i: int, **fields) -> None:
        rows[i] = compact_line({**json.loads(rows[i]), **fields})
        index.write_bytes(b"".join(rows))

    if case == "no_step":
        del second["run"]["work"]["step"]
        rewrite(compact_line(second))
    elif case == "step_text":
        second["run"]["work"]["step"] = "1"
        rewrite(compact_line(second))
    elif case == "step_huge":
        second["run"]["work"]["step"] = 2**70
        rewrite(compact_line(second))
    elif case == "no_group":
        del second["group"]
        rewrite(compact_line(second))
    elif case == "score_text":
        second["traces"][0]["rewards"]["correct"]["score"] = "1"
        rewrite(compact_line(second))
    elif case == "score_nan":  # orjson writes a NaN score as null
        second["traces"][0]["rewards"]["correct"]["score"] = None
        rewrite(compact_line(second))
    elif case == "duplicate_key":
        rewrite(compact_line(second)[:-2] + b',"group":{"id":"other"}}\n')
    elif case == "group_two_steps":  # line 1 is group a's first episode, at step 1; line 2 one of it at step 2
        assert json.loads(lines[0])["group"]["id"] == "g1a"
        rewrite(compact_line(episode(2, "g1a", [scored(1.0)])))
    elif case == "duplicate_episode":  # chunk 0's first record written again at the head of chunk 1
        chunk1 = traces / "stream" / "00001.jsonl"
        chunk1.write_bytes(lines[0] + chunk1.read_bytes())
    elif case == "torn_old_chunk":
        chunk0.write_bytes(b"".join(lines[:3]) + lines[3][:40])
    elif case == "chunk_missing":
        (traces / "stream" / "00001.jsonl").unlink()
    elif case == "index_other_episode":
        edit_row(2, id="someone-else")
    elif case == "index_row_missing":
        del rows[2]
        index.write_bytes(b"".join(rows))
    elif case == "index_points_nowhere":  # the last row: a record without a row at the tail is allowed
        edit_row(len(rows) - 1, offset=json.loads(rows[-1])["offset"] + 1)
    elif case == "index_row_twice":
        rows[3] = rows[2]
        index.write_bytes(b"".join(rows))
    elif case == "no_index":
        index.unlink()
    elif case == "advantage_nan":
        annotations = traces / "annotations" / "orchestrator.index.jsonl"
        row = json.loads(annotations.read_bytes())
        row["info"]["advantage"] = None
        annotations.write_bytes(compact_line(row))
    refused(capsys, tmp_path / "run", tmp_path / "out", *needles)


def test_prime_rl_stream_a_torn_last_line_of_the_live_chunk_is_skipped_with_a_warning(tmp_path, capsys):
    traces, records = prime_run(tmp_path)
    live = sorted((traces / "stream").iterdir())[-1]
    data = live.read_bytes()
    before, _, _ = analyzed(capsys, tmp_path / "run", tmp_path / "before")
    # the record, cut mid-write; no index row yet
    live.write_bytes(data + compact_line(episode(2, "g2f", [scored(0.0)]))[:50])
    after, _, err = analyzed(capsys, tmp_path / "run", tmp_path / "after")
    assert after == before
    assert err.splitlines() == [f"fade: warning: {live}:{line_of(data, len(data))}: skipped the unfinished last line "
                                "of a file still being written"]
    # a record whose index row is not written yet (the stream is flushed first) is read
    live.write_bytes(data + compact_line(episode(2, "g2f", [scored(0.0)])))
    tail, _, _ = analyzed(capsys, tmp_path / "run", tmp_path / "tail")
    assert tail[1]["num_rollouts"] == 8 and tail[1]["mean_reward"] == pytest.approx(5 / 8)


def test_prime_rl_stream_sealed_chunks_need_zstandard(tmp_path, capsys):
    traces, _ = prime_run(tmp_path)
    expected, _, _ = analyzed(capsys, tmp_path / "run", tmp_path / "plain")
    first = traces / "stream" / "00000.jsonl"
    try:
        import zstandard
    except ImportError:
        first.rename(first.with_name("00000.jsonl.zst"))  # what is in it is never read
        refused(capsys, tmp_path / "run", tmp_path / "out", "00000.jsonl.zst: a sealed (zstd-compressed) chunk",
                "zstandard is not installed: pip install zstandard")
        return
    # sealed in frames (chunks.py:62-72, seekable format), a seek table in a skippable frame at the end
    data = first.read_bytes()
    cut = data.index(b"\n") + 1
    c = zstandard.ZstdCompressor(level=3)
    seek_table = (0x184D2A5E).to_bytes(4, "little") + (9).to_bytes(4, "little") + bytes(9)
    first.with_name("00000.jsonl.zst").write_bytes(c.compress(data[:cut]) + c.compress(data[cut:]) + seek_table)
    first.unlink()
    assert analyzed(capsys, tmp_path / "run", tmp_path / "sealed")[0] == expected
    # a sealed twin beside the plain chunk (a seal finishing): the plain one is read, once
    first.write_bytes(data)
    assert analyzed(capsys, tmp_path / "run", tmp_path / "both")[0] == expected


# -- ROLL ------------------------------------------------------------------------------------------

#: The step's columns as this file's run writes them: its dataset has a difficulty column, and its
#: sampling a temperature.
roll_dump = partial(roll_columns, difficulty="3", temperature=1.0)

#: Step 0 is REWARDS over two domains; step 1 holds prompt 2 twice in a row (its dataset wrapped),
#: read as two groups of 4, the most common run being 4 long.
ROLL_STEPS = {
    0: [("math_rule", 0, [1.0, 0.0, 1.0, 1.0]), ("math_rule", 1, [0.0, 0.0, 0.0, 0.0]),
        ("code_sandbox", "c7", [1.0, 1.0, 1.0, 1.0]), ("code_sandbox", "c8", [0.0, 1.0, 0.0, 0.0])],
    1: [("math_rule", 2, [1.0, 1.0, 0.0, 0.0]), ("math_rule", 2, [0.0, 0.0, 0.0, 0.0]),
        ("math_rule", 3, [1.0, 1.0, 1.0, 1.0])],
}


def roll_run(folder: Path) -> Path:
    for step, prompts in ROLL_STEPS.items():
        write_roll(folder, step, roll_dump(step, prompts))
    return folder


def test_roll_statistics_are_the_hand_computed_ones(tmp_path, capsys):
    steps, report, _ = analyzed(capsys, roll_run(tmp_path / "dump"), tmp_path / "out")
    assert report["format"] == "roll" and [s["step"] for s in steps] == [0, 1]
    zero, one = steps
    # step 0: groups [1,0,1,1], [0,0,0,0], [1,1,1,1], [0,1,0,0]: two without spread (8 of 16 rollouts),
    # mean reward 8/16, solve rates 3/4, 0, 1, 1/4; pass@2 per group 1, 0, 1, 1/2
    assert zero["num_groups"] == 4 and zero["group_sizes"] == [4]
    assert zero["zero_spread_share"] == 8 / 16 and zero["mean_reward"] == pytest.approx(8 / 16)
    assert zero["solve_rate"] == pytest.approx(1 / 2) and zero["pass_at_k"]["2"] == pytest.approx(2.5 / 4)
    assert zero["solve_rate_histogram"]["0"] == 1 / 4 and zero["solve_rate_histogram"]["1"] == 1 / 4
    # step 1: groups [1,1,0,0], [0,0,0,0], [1,1,1,1]: two without spread (8 of 12), mean 6/12, solve rates 1/2, 0, 1
    assert one["num_groups"] == 3 and one["zero_spread_share"] == pytest.approx(8 / 12)
    assert one["mean_reward"] == pytest.approx(6 / 12) and one["solve_rate"] == pytest.approx(1 / 2)
    assert any("ROLL groups are consecutive rows of one prompt (id, messages, prompt) in one domain, 4 at a time" in n
               for n in report["notes"])
    # --group-size 2 cuts every prompt's run in pairs: step 0's [1,0],[1,1],[0,0],[0,0],[1,1],[1,1],[0,1],[0,0]
    steps, _, _ = analyzed(capsys, tmp_path / "dump", tmp_path / "pairs", "--group-size", "2")
    assert steps[0]["num_groups"] == 8 and steps[0]["zero_spread_share"] == 12 / 16


def test_roll_is_found_from_its_folder_or_a_file_and_by_format(tmp_path, capsys):
    folder = roll_run(tmp_path / "dump")
    expected, _, _ = analyzed(capsys, folder, tmp_path / "o1")
    assert analyzed(capsys, folder, tmp_path / "o2", "--format", "roll")[0] == expected
    single, _, _ = analyzed(capsys, folder / "rollout_dump_data.step_1.jsonl", tmp_path / "o3")
    assert single == expected[1:]
    refused(capsys, folder, tmp_path / "out", "reads as a roll dump, not verl", flags=("--format", "verl"))


def test_roll_prompts_sharing_an_id_are_told_apart_by_their_text(tmp_path, capsys):
    expected, _, _ = analyzed(capsys, roll_run(tmp_path / "dump"), tmp_path / "o1")
    cols = roll_dump(0, ROLL_STEPS[0])
    cols["id"] = ["deepmath"] * len(cols["id"])  # a dataset whose id names its source, not the prompt
    write_roll(tmp_path / "shared", 0, json.dumps(cols) + "\n")
    steps, _, _ = analyzed(capsys, tmp_path / "shared", tmp_path / "o2")
    assert steps == expected[:1]


def test_roll_a_torn_newest_dump_is_skipped_with_a_warning_and_a_torn_older_one_refused(tmp_path, capsys):
    folder = roll_run(tmp_path / "dump")
    newest = folder / "rollout_dump_data.step_2.jsonl"
    whole = json.dumps(roll_dump(2, ROLL_STEPS[1]))
    newest.write_text(whole[: len(whole) // 2])  # the daemon process writing it was stopped
    steps, _, err = analyzed(capsys, folder, tmp_path / "out")
    assert [s["step"] for s in steps] == [0, 1]
    assert err.splitlines() == [f"fade: warning: {newest}: skipped the unfinished dump of a step still being written"]
    newest.unlink()
    older = folder / "rollout_dump_data.step_0.jsonl"
    older.write_text(older.read_text()[:-40])
    refused(capsys, folder, tmp_path / "out2", "rollout_dump_data.step_0.jsonl:1", "cut short")


@pytest.mark.parametrize("case, needles", [
    ("no_scores", ("step_0.jsonl:1", "no 'scores' column", "expected ROLL's RLVR dump")),
    ("score_text", ("step_0.jsonl:1", "row 3", "score '1'", "expected a finite number")),
    ("score_nan", ("step_0.jsonl:1", "row 2", "score nan", "expected a finite number")),
    ("step_other", ("step_0.jsonl:1", "row 1", "global_step 5", "as ROLL names the file")),
    ("step_text", ("step_0.jsonl:1", "row 1", "global_step '0'", "expected an integer")),
    ("step_huge", ("step_0.jsonl:1", "row 1", f"global_step {2**70}", "expected an integer within int64")),
    ("nested", ("step_0.jsonl:1", "nested deeper than Python's JSON parser reads")),
    ("short_column", ("step_0.jsonl:1", "column 'domain' has 15 values and 'scores' 16")),
    ("id_list", ("step_0.jsonl:1", "row 1", "id [0]", "expected text or an integer")),
    ("duplicate_key", ("step_0.jsonl:1", "key 'scores' twice", "expected each key once")),
    ("two_objects", ("step_0.jsonl:2", "a second JSON object", "expected one per file")),
    ("ragged", ("step_0.jsonl", "rows 1-3 are 3 rows of one prompt", "group size 4", "ragged or missing groups")),
    ("one_each", ("step_0.jsonl", "most prompts have one response", "give --group-size 1")),
    ("sizes_differ", ("step 0 reads as groups of 2", "step 1 as groups of 4", "give --group-size")),
])
def test_roll_refusals_name_the_file_and_what_was_expected(tmp_path, capsys, case, needles):
    folder = roll_run(tmp_path / "dump")
    cols = roll_dump(0, ROLL_STEPS[0])
    text = None
    if case == "no_scores":
        del cols["scores"]
    elif case == "score_text":
        cols["scores"][2] = "1"
    elif case == "score_nan":
        cols["scores"][1] = float("nan")  # json.dumps writes NaN
    elif case == "step_other":
        cols["global_step"] = [5] * 16
    elif case == "step_text":
        cols["global_step"] = ["0"] * 16
    elif case == "step_huge":
        cols["global_step"] = [2**70] * 16
    elif case == "nested":
        text = '{"scores": ' + "[" * 100_000 + "]" * 100_000 + "}\n"
    elif case == "short_column":
        cols["domain"].pop()
    elif case == "id_list":
        cols["id"][0] = [0]
    elif case == "duplicate_key":
        text = json.dumps(cols)[:-1] + ', "scores": [0.0]}\n'
    elif case == "two_objects":
        text = json.dumps(cols) + "\n" + json.dumps(cols) + "\n"
    elif case == "ragged":
        write_roll(folder, 0, roll_dump(0, [("math_rule", 0, [1.0, 0.0, 1.0])] + ROLL_STEPS[0][1:]))
    elif case == "one_each":
        write_roll(folder, 0, roll_dump(0, [("math_rule", i, [1.0]) for i in range(4)]))
    elif case == "sizes_differ":
        write_roll(folder, 0, roll_dump(0, [("math_rule", 0, [1.0, 0.0]), ("math_rule", 1, [1.0, 1.0])]))
    if case not in ("ragged", "one_each", "sizes_differ"):
        write_roll(folder, 0, text if text is not None else json.dumps(cols) + "\n")
    refused(capsys, folder, tmp_path / "out", *needles)
