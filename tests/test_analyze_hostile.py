"""fade analyze on files real runs and hostile hands write: each gives the right answer, or one line
``fade: error: FILE:LINE: ...: expected ...`` (exit status 2, nothing written); never a traceback,
never a silent wrong number.

Each class of input that a JSON parser, numpy or a format's reader cannot take is tried on every
reader it reaches (verl, TRL, NeMo-RL, prime-rl, fade eval, generic, the --metrics side file):
lines longer than pyarrow's block, files a live run appends to while they are read, integers past
the float range, steps past int64, JSON nested past Python's recursion limit, fields of the wrong
JSON type, columns of the wrong type, and files that are not what their name says.
"""

from __future__ import annotations

import json
import pickle
import threading
import zipfile
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("pyarrow")

import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

from analyze_dumps import (  # noqa: E402
    DEEP,
    HUGE,
    REWARDS,
    analyze_cli,
    episode,
    generic_rows,
    nemo_rows,
    prime_dump,
    prime_rows,
    refused,
    scored,
    trl_table,
    trl_table_dump,
    verl_dump,
    verl_rows,
    write_jsonl,
    write_stream,
)
from fade.analyze import read_run  # noqa: E402

# -- 1. lines of any length --------------------------------------------------------------------------


def test_a_line_longer_than_pyarrows_block_is_read_as_any_other(tmp_path, capsys):
    # a long agentic trace in verl's output: 5 MB on one line, past pyarrow's 1 MiB JSON block
    rows = verl_rows()
    rows[5]["output"] = "x" * (5 << 20)
    write_jsonl(tmp_path / "long" / "1.jsonl", rows)
    write_jsonl(tmp_path / "short" / "1.jsonl", verl_rows())
    code, long, _, err = analyze_cli(capsys, tmp_path / "long", tmp_path / "a")
    assert code == 0, err
    code, short, _, err = analyze_cli(capsys, tmp_path / "short", tmp_path / "b")
    assert code == 0, err
    assert long == short and long[0]["num_rollouts"] == 16
    # the generic reader too, and a long line that breaks the contract is named
    rows = generic_rows()
    rows[3]["trace"] = "y" * (3 << 20)
    code, steps, _, err = analyze_cli(capsys, write_jsonl(tmp_path / "g.jsonl", rows), tmp_path / "c")
    assert code == 0, err
    assert steps[0]["num_rollouts"] == 16 and steps[0]["zero_spread_share"] == 0.5
    rows[9]["reward"] = "high"
    refused(capsys, write_jsonl(tmp_path / "bad.jsonl", rows), tmp_path / "d", "bad.jsonl:10", "'reward' is 'high'",
            "expected a finite number")


# -- 2. a dump still being written -------------------------------------------------------------------


def test_a_file_appended_to_while_it_is_read_is_read_as_it_was_when_opened(tmp_path, capsys, monkeypatch):
    # a live run appends to its newest file between fade's reads of it: the file is read once, to
    # the size it had when opened, and pyarrow and the per-line reader get those same bytes (fade
    # once read it again for pyarrow, and again for the line of an error, and failed about half
    # the time)
    import pyarrow.json as pj

    import fade.jsonl as jsonl

    target = verl_dump(tmp_path / "verl")
    nemo = write_jsonl(tmp_path / "nemo" / "train_data_step1.jsonl", nemo_rows())
    code, expected, _, err = analyze_cli(capsys, target, tmp_path / "expected")
    assert code == 0, err
    growing = []

    def append(path: Path) -> None:  # another group, and the next line half written
        with open(path, "a") as f:
            f.write("".join(json.dumps(r) + "\n" for r in verl_rows()[:4]) + '{"input": "prompt 9", "sco')
        growing.append(path)

    read_json, loads = pj.read_json, jsonl.json.loads

    def read_json_growing(source, *args, **kwargs):  # the file grows as pyarrow parses it
        append(target / "1.jsonl")
        return read_json(source, *args, **kwargs)

    monkeypatch.setattr(pj, "read_json", read_json_growing)
    code, steps, _, err = analyze_cli(capsys, target, tmp_path / "a")
    assert code == 0 and not err, err
    assert steps == expected and growing
    monkeypatch.setattr(pj, "read_json", read_json)

    class GrowingJson:  # the per-line reader (NeMo-RL's nested fields): the file grows as it parses
        def __getattr__(self, name):
            return getattr(json, name)

        def loads(self, text, *args, **kwargs):
            with open(nemo, "a") as f:
                f.write('{"content": ["q9", "a"], "rewa')
            return loads(text, *args, **kwargs)

    monkeypatch.setattr(jsonl, "json", GrowingJson())
    code, steps, _, err = analyze_cli(capsys, nemo.parent, tmp_path / "b")
    assert code == 0 and not err, err
    assert steps[0]["num_rollouts"] == 16 and steps[0]["num_groups"] == 4


def test_lines_appended_after_the_file_was_opened_wait_for_the_next_analysis(tmp_path, capsys, monkeypatch):
    # whole lines a live run appends while fade reads are not read, even one that would be refused:
    # the next analysis reads them
    import pyarrow.json as pj

    target = write_jsonl(tmp_path / "run" / "1.jsonl", verl_rows())
    read_json = pj.read_json

    def read_json_growing(source, *args, **kwargs):
        with open(target, "a") as f:
            f.write(json.dumps({**verl_rows()[0], "uid": "uuid1x9_0_0", "score": "pending"}) + "\n")
        return read_json(source, *args, **kwargs)

    monkeypatch.setattr(pj, "read_json", read_json_growing)
    code, steps, _, err = analyze_cli(capsys, target.parent, tmp_path / "a")
    assert code == 0 and not err, err
    assert steps[0]["num_rollouts"] == 16
    monkeypatch.setattr(pj, "read_json", read_json)
    refused(capsys, target.parent, tmp_path / "out", "1.jsonl:17", "'score' is 'pending'", "expected a finite number")


def test_a_dump_analysed_while_a_writer_appends_to_it_reads_every_time(tmp_path):
    # a real writer thread: every analysis reads a whole number of lines, whatever it finds
    folder = tmp_path / "live"
    write_jsonl(folder / "1.jsonl", verl_rows(1))
    newest = write_jsonl(folder / "2.jsonl", verl_rows(2))
    done = threading.Event()

    def writer() -> None:
        with open(newest, "a") as f:
            for batch in range(10**6):
                if done.is_set():
                    return
                text = "".join(json.dumps({**r, "uid": r["uid"].replace("uuid2", f"uuid2b{batch}")}) + "\n"
                               for r in verl_rows(2))
                for i in range(0, len(text), 37):  # lines written in pieces, as a buffered writer flushes
                    f.write(text[i:i + 37])
                    f.flush()

    thread = threading.Thread(target=writer, daemon=True)
    thread.start()
    try:
        import warnings

        for _ in range(20):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # the unfinished last line, when there is one
                run = read_run(folder)
            assert [b.step for b in run.steps] == [1, 2] and run.steps[0].num_rollouts == 16
            assert run.steps[1].num_rollouts >= 16
    finally:
        done.set()
        thread.join()


def test_a_newest_file_holding_only_an_unfinished_line_is_one_line(tmp_path, capsys):
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "1.jsonl").write_text('{"input": "prompt 0", "sco')
    refused(capsys, tmp_path / "run", tmp_path / "out", "1.jsonl:1", "the only line is cut short")


# -- 3. integers, nesting and types a JSON parser or numpy cannot take -------------------------------


@pytest.mark.parametrize("case, needles", [
    ("verl_score", ("1.jsonl:3", "'score' is 100000... (an integer of 401 digits)", "expected a finite number")),
    ("generic_reward", ("r.jsonl:2", "'reward' is 100000...", "expected a finite number")),
    ("generic_advantage", ("r.jsonl:1", "'advantage' is 100000...", "expected a finite number")),
    ("eval_score", ("scores.jsonl:1", "'score' is 100000...", "expected a finite number")),
    ("nemo_rewards", ("train_data_step1.jsonl:1", "'rewards' is 100000...", "expected a finite number")),
    ("nemo_advantages", ("train_data_step1.jsonl:1", "an advantage of 100000...", "expected finite numbers")),
    ("prime_score", ("traces.jsonl:1", "reward inf", "expected a finite number")),
    ("metrics_entropy", ("m.jsonl:1", "'actor/entropy' is 100000...", "expected a mean token entropy")),
    ("metrics_engine", ("m.jsonl:1", "'reward_std' is 100000...", "expected a number within the float range")),
    ("state_entropy", ("trainer_state.json: log_history[0]", "'entropy' is 100000...", "a finite number >= 0")),
])
def test_an_integer_past_the_float_range_is_refused_naming_its_line(tmp_path, capsys, case, needles):
    d = tmp_path / "run"
    flags: tuple = ()
    if case == "verl_score":
        target = verl_dump(d, 3, json.dumps(verl_rows()[2]).replace('"score": 1.0', f'"score": {HUGE}'))
    elif case == "generic_reward":
        lines: list = generic_rows()
        lines[1] = json.dumps(lines[1]).replace('"reward": 0.0', f'"reward": {HUGE}')
        target = write_jsonl(d / "r.jsonl", lines)
    elif case == "generic_advantage":
        target = write_jsonl(d / "r.jsonl", [json.dumps(r)[:-1] + f', "advantage": {HUGE}}}' for r in generic_rows()])
    elif case == "eval_score":
        target = write_jsonl(d / "scores.jsonl", [f'{{"problem_id": "p", "sample": 0, "score": {HUGE}}}']).parent
    elif case.startswith("nemo"):
        field = '"rewards": 1.0' if case == "nemo_rewards" else '"advantages": [0.0'
        big = f'"rewards": {HUGE}' if case == "nemo_rewards" else f'"advantages": [{HUGE}'
        lines = [json.dumps(r).replace(field, big) for r in nemo_rows()]
        target = write_jsonl(d / "train_data_step1.jsonl", lines).parent
    elif case == "prime_score":
        target = prime_dump(d, [json.dumps(r).replace('"score": 1.0', f'"score": {HUGE}') for r in prime_rows()])
    elif case.startswith("metrics"):
        target = verl_dump(d / "dump")
        key = "actor/entropy" if case == "metrics_entropy" else "reward_std"
        flags = ("--metrics", write_jsonl(d / "m.jsonl", [f'{{"step": 1, "data": {{"{key}": {HUGE}}}}}']))
    else:
        target = trl_table_dump(d, state=f'{{"log_history": [{{"step": 1, "entropy": {HUGE}}}]}}')
    refused(capsys, target, tmp_path / "out", *needles, flags=flags)


@pytest.mark.parametrize("case, needles", [
    ("score", ("stream/00000.jsonl:1", "reward 'correct' score 100000...", "expected a finite number")),
    ("weight", ("stream/00000.jsonl:1", "reward 'correct' weight 100000...", "expected a finite number")),
    ("step", ("stream/00000.jsonl:1", "run.work.step 100000...", "expected an integer within int64")),
    ("advantage", ("orchestrator.index.jsonl:1", "advantage 100000...", "expected a finite number")),
    ("chunk_name", ("stream/999999999999999999999999.jsonl", "chunk '999999999999999999999999' in its name",
                    "expected an integer within int64")),
    ("chunk_far", ("stream: chunk 00001 is missing", "1000000000000000")),  # never range(10**15 + 1)
])
def test_prime_rl_stream_integers_past_their_range_are_one_line(tmp_path, capsys, case, needles):
    records = [episode(1, f"g{g}", [scored(float(r))], key=f"t{g}") for g in range(2) for r in (1, 0, 1, 0)]
    traces = write_stream(tmp_path / "run", records, advantages={records[0]["traces"][0]["id"]: 0.5})
    chunk, old, new = traces / "stream" / "00000.jsonl", None, None
    if case in ("score", "weight"):
        old, new = f'"{case}":1.0', f'"{case}":{HUGE}'
    elif case == "step":
        old, new = '"step":1,"policy"', f'"step":{HUGE},"policy"'
    elif case == "advantage":
        chunk, old, new = traces / "annotations" / "orchestrator.index.jsonl", '"advantage":0.5', f'"advantage":{HUGE}'
    else:
        (traces / "stream" / "00001.jsonl").rename(
            traces / "stream" / ("9" * 24 + ".jsonl" if case == "chunk_name" else f"{10**15}.jsonl"))
    if old is not None:
        chunk.write_bytes(chunk.read_bytes().replace(old.encode(), new.encode(), 1))
    refused(capsys, tmp_path / "run", tmp_path / "out", *needles)


@pytest.mark.parametrize("case, needles", [
    ("verl", ("1.jsonl:3", "'step' is 100000... (an integer of 401 digits)", "expected an integer within int64")),
    ("generic", ("r.jsonl:4", "'step' is 9223372036854775808", "expected an integer within int64")),
    ("metrics", ("m.jsonl:1", "step 100000...", "expected an integer within int64")),
    ("state", ("trainer_state.json: log_history[0]", "step 9223372036854775808", "expected an integer within int64")),
    ("state_eval", ("trainer_state.json: log_history[1]", "step 100000...", "expected an integer within int64")),
])
def test_a_step_past_int64_is_refused_naming_its_line(tmp_path, capsys, case, needles):
    d = tmp_path / "run"
    flags: tuple = ()
    if case == "verl":
        target = verl_dump(d, 3, json.dumps(verl_rows()[2]).replace('"step": 1', f'"step": {HUGE}'))
    elif case == "generic":
        lines: list = generic_rows()
        lines[3] = {**lines[3], "step": 2**63}
        target = write_jsonl(d / "r.jsonl", lines)
    elif case == "metrics":
        target = verl_dump(d / "dump")
        flags = ("--metrics", write_jsonl(d / "m.jsonl", [f'{{"step": {HUGE}, "data": {{"actor/entropy": 1.0}}}}']))
    elif case == "state":
        target = trl_table_dump(d, state=json.dumps({"log_history": [{"step": 2**63, "rewards/acc/mean": 0.5}]}))
    else:
        target = trl_table_dump(d, state=f'{{"log_history": [{{"step": 1, "rewards/acc/mean": 0.5}}, '
                                   f'{{"step": {HUGE}, "eval_loss": 0.1}}]}}')
    refused(capsys, target, tmp_path / "out", *needles, flags=flags)


@pytest.mark.parametrize("engine", ["verl", "nemo", "prime", "trl"])
def test_a_step_past_int64_in_a_file_name_is_refused_naming_the_file(tmp_path, capsys, engine):
    digits = "9" * 25
    if engine == "verl":
        write_jsonl(tmp_path / "run" / f"{digits}.jsonl", verl_rows())
    elif engine == "nemo":
        write_jsonl(tmp_path / "run" / f"train_data_step{'0' * 3 + '7' * 200}.jsonl", nemo_rows())
        digits = "0007777777"  # a name as long as a file system takes
    elif engine == "prime":
        write_jsonl(tmp_path / "run" / "rollouts" / f"step_{digits}" / "train" / "effective" / "traces.jsonl",
                    [{**r, "run": {}} for r in prime_rows()])
    else:
        (tmp_path / "run" / "completions").mkdir(parents=True)
        pq.write_table(trl_table(), tmp_path / "run" / "completions" / f"completions_{digits}.parquet")
    refused(capsys, tmp_path / "run", tmp_path / "out", f"step '{digits}", "in its name",
            "expected an integer within int64")


def test_a_group_size_past_int64_is_refused_naming_the_option(tmp_path, capsys):
    refused(capsys, trl_table_dump(tmp_path / "trl"), tmp_path / "out",
            "--group-size 100000... (an integer of 31 digits)", "expected a number of rows",
            flags=("--group-size", 10**30))


@pytest.mark.parametrize("case, needles", [
    ("verl_score", ("1.jsonl:3", "nested deeper than Python's JSON parser reads")),
    ("nemo", ("train_data_step1.jsonl:1", "nested deeper")),
    ("prime", ("traces.jsonl:1", "nested deeper")),
    ("metrics", ("m.jsonl:1", "nested deeper", "expected one metrics object per line")),
    ("state", ("trainer_state.json", "nested deeper", "expected TRL's trainer_state.json")),
    ("metrics_state", ("m.json", "nested deeper", "expected TRL's trainer_state.json")),
])
def test_json_nested_past_pythons_parser_is_one_line(tmp_path, capsys, case, needles):
    d = tmp_path / "run"
    flags: tuple = ()
    if case == "verl_score":
        target = verl_dump(d, 3, json.dumps(verl_rows()[2]).replace('"score": 1.0', f'"score": {DEEP}'))
    elif case == "nemo":
        lines = [json.dumps(r).replace('"content": [', f'"content": [{DEEP}, ') for r in nemo_rows()]
        target = write_jsonl(d / "train_data_step1.jsonl", lines).parent
    elif case == "prime":
        target = prime_dump(d, [json.dumps(r)[:-1] + f', "info": {DEEP}}}' for r in prime_rows()])
    elif case == "metrics":
        target = verl_dump(d / "dump")
        flags = ("--metrics", write_jsonl(d / "m.jsonl", [f'{{"step": 1, "data": {DEEP}}}']))
    elif case == "state":
        target = trl_table_dump(d, state=f'{{"log_history": {DEEP}}}')
    else:
        target = verl_dump(d / "dump")
        (d / "m.json").write_text(f'{{"log_history": [{{"step": 1, "x": {DEEP}}}]}}')
        flags = ("--metrics", d / "m.json")
    refused(capsys, target, tmp_path / "out", *needles, flags=flags)


def test_a_deep_field_fade_does_not_read_is_read_past_and_an_error_after_it_is_named(tmp_path, capsys):
    deep = json.dumps(verl_rows()[2])[:-1] + f', "messages": {DEEP}}}'
    code, steps, _, err = analyze_cli(capsys, verl_dump(tmp_path / "ok", 3, deep), tmp_path / "a")
    assert code == 0, err
    assert steps[0]["num_rollouts"] == 16
    lines: list = verl_rows()
    lines[2], lines[5] = deep, {**lines[5], "score": "0.5"}
    write_jsonl(tmp_path / "bad" / "1.jsonl", lines)
    refused(capsys, tmp_path / "bad", tmp_path / "out", "1.jsonl:6", "'score' is '0.5'", "expected a finite number")


@pytest.mark.parametrize("step, shown", [("null", "step None"), ("[1]", "step [1]"), ("1e400", "step inf"),
                                         ("2.5", "step 2.5"), ('"3"', "step '3'"), ("true", "step True")])
def test_a_logged_step_that_is_no_integer_is_refused_in_every_side_file(tmp_path, capsys, step, shown):
    state = f'{{"global_step": 1, "log_history": [{{"step": {step}, "rewards/acc/mean": 0.5, "entropy": 1.0}}]}}'
    refused(capsys, trl_table_dump(tmp_path / "trl", state=state), tmp_path / "out",
            "trainer_state.json: log_history[0]", shown, "expected an integer")
    target = verl_dump(tmp_path / "verl")
    (tmp_path / "m.json").write_text(state)
    refused(capsys, target, tmp_path / "out", "m.json: log_history[0]", shown, "expected an integer",
            flags=("--metrics", tmp_path / "m.json"))
    metrics = write_jsonl(tmp_path / "m.jsonl", [f'{{"step": {step}, "data": {{"actor/entropy": 1.0}}}}'])
    refused(capsys, target, tmp_path / "out", "m.jsonl:1", "expected an integer", flags=("--metrics", metrics))


@pytest.mark.parametrize("value, shown", [("-0.5", "is -0.5"), ("NaN", "is nan"), ("Infinity", "is inf"),
                                          ("1e400", "is inf"), ('"0.5"', "is '0.5'"), ("true", "is True")])
def test_an_entropy_that_is_no_finite_number_at_least_0_is_refused_naming_its_line(tmp_path, capsys, value, shown):
    target = verl_dump(tmp_path / "verl")
    metrics = write_jsonl(tmp_path / "m.jsonl", ['{"step": 1, "data": {"actor/entropy": 0.7}}',
                                                 f'{{"step": 2, "data": {{"actor/entropy": {value}}}}}'])
    refused(capsys, target, tmp_path / "out", "m.jsonl:2", f"'actor/entropy' {shown}",
            "expected a mean token entropy, a finite number >= 0", flags=("--metrics", metrics))
    state = f'{{"log_history": [{{"step": 1, "rewards/acc/mean": 0.5, "entropy": {value}}}]}}'
    refused(capsys, trl_table_dump(tmp_path / "trl", state=state), tmp_path / "out",
            "trainer_state.json: log_history[0]", f"'entropy' {shown}", "a finite number >= 0")


def test_a_live_runs_metrics_file_skips_its_unfinished_last_line(tmp_path, capsys):
    target = verl_dump(tmp_path / "verl")
    metrics = tmp_path / "m.jsonl"
    metrics.write_text('{"step": 1, "data": {"actor/entropy": 0.7}}\n{"step": 2, "data": {"actor/en')
    code, steps, _, err = analyze_cli(capsys, target, tmp_path / "out", "--metrics", metrics)
    assert code == 0
    assert err.strip() == f"fade: warning: {metrics}:2: skipped the unfinished last line of a file still being written"
    assert steps[0]["entropy"] == 0.7


@pytest.mark.parametrize("field, value, needles", [
    ("group", "g", ("no group.id",)),
    ("group", {"id": {"a": 1}}, ("group.id is {'a': 1}", "expected text or an integer")),
    ("traces", {"rewards": {}}, ("traces is {'rewards': {}}", "expected a list of traces")),
    ("traces", "abc", ("traces is 'abc'", "expected a list of traces")),
    ("traces", [], ("no traces",)),
    ("traces", [1], ("the last trace is 1", "expected an object")),
    ("traces", [{"rewards": [1.0]}], ("the last trace's rewards is [1.0]", "expected an object of {score, weight}")),
    ("traces", [{"rewards": {"acc": 1.0}}], ("reward 'acc' is 1.0", "expected {score, weight}, both numbers")),
    ("traces", [{"rewards": {"acc": {"score": 1.0, "weight": "x"}}}], ("'weight': 'x'", "both numbers")),
    ("traces", [{"rewards": {"acc": {"score": 1.0, "weight": None}}}], ("'weight': None", "both numbers")),
    ("traces", [{"rewards": {"acc": {"score": True}}}], ("'score': True", "both numbers")),
    ("run", "x", ("run is 'x'", "expected an object")),
    ("run", {"work": [1]}, ("run.work is [1]", "expected an object")),
    ("run", {"work": {"step": 2**70}}, ("run.work.step 1180591620717411303424", "expected 1")),
    ("task", "t", ("task is 't'", "expected an object")),
    ("task", {"key": [1]}, ("task.key is [1]", "expected text or an integer")),
])
def test_prime_rl_fields_of_the_wrong_json_type_are_refused_naming_the_line(tmp_path, capsys, field, value, needles):
    rows = prime_rows()
    rows[2] = {**rows[2], field: value}
    refused(capsys, prime_dump(tmp_path / "prime", rows), tmp_path / "out", "traces.jsonl:3", *needles)


@pytest.mark.parametrize("extra, needles", [
    ({"advantages": {"a": 1.0}}, ("advantages is {'a': 1.0}", "expected a list of numbers, one per token")),
    ({"advantages": [0.1, 0.2, 0.3, 0.4]}, ("4 advantages and 3 token_loss_mask entries", "one mask entry per token")),
    ({"advantages": [0.1, 0.2]}, ("2 advantages and 3 token_loss_mask entries",)),
    ({"advantages": [[0.1], [0.2], [0.3]]}, ("advantages is [[0.1], [0.2], [0.3]]", "a list of numbers")),
    ({"advantages": ["a", "b", "c"]}, ("advantages is ['a', 'b', 'c']", "a list of numbers")),
    ({"advantages": [None, 0.5, 0.5]}, ("advantages is [None, 0.5, 0.5]", "a list of numbers")),
    ({"advantages": [0.0, float("nan"), 0.5]}, ("an advantage of nan", "expected finite numbers")),
    ({"token_loss_mask": "011"}, ("token_loss_mask is '011'", "expected a list of 0 and 1")),
    ({"token_loss_mask": [0, 2, 1]}, ("token_loss_mask is [0, 2, 1]", "expected a list of 0 and 1")),
    ({"token_loss_mask": [0, 0, 0]}, ("no advantage under the loss mask",)),
    ({"content": "hello"}, ("content is 'hello'", "expected the rollout's messages, a list")),
    ({"content": None}, ("no content",)),
])
def test_nemo_rl_advantages_and_masks_that_do_not_fit_are_refused_naming_the_line(tmp_path, capsys, extra, needles):
    rows = nemo_rows()
    rows[1] = {**rows[1], **extra}
    write_jsonl(tmp_path / "nemo" / "train_data_step1.jsonl", rows)
    refused(capsys, tmp_path / "nemo", tmp_path / "out", "train_data_step1.jsonl:2", *needles)


def test_nemo_rl_advantages_on_some_lines_only_are_refused(tmp_path, capsys):
    rows = nemo_rows()
    del rows[4]["advantages"]
    write_jsonl(tmp_path / "nemo" / "train_data_step1.jsonl", rows)
    refused(capsys, tmp_path / "nemo", tmp_path / "out", "train_data_step1.jsonl:5",
            "no advantages while other lines have them")


@pytest.mark.parametrize("columns, state, needles", [
    ({"advantage": [str(x) for x in trl_table().column("advantage").to_pylist()]}, None,
     ("column 'advantage' is string", "expected numbers")),
    ({"advantage": ["x"] * 16}, None, ("row 1: advantage 'x'", "expected a finite number")),
    ({"advantage": [[0.0]] * 16}, None, ("column 'advantage' is list<element: double>", "expected numbers")),
    ({"prompt": [{"text": f"p{i // 4}"} for i in range(16)]}, None,
     ("column 'prompt' is struct<text: string>", "expected text or a list of messages")),
    ({"prompt": [i // 4 for i in range(16)]}, None, ("column 'prompt' is int64", "expected text or a list")),
    ({"prompt": [None] + [f"p{i // 4}" for i in range(1, 16)]}, None, ("row 1: no prompt",)),
    ({"acc": [str(x) for x in sum(REWARDS, [])]}, '{"log_history": [{"step": 1, "rewards/acc/mean": 0.5}]}',
     ("column 'acc' is string, a reward function", "expected a numeric reward column")),
    ({"acc": [{"a": 1.0}] * 16}, '{"log_history": [{"step": 1, "rewards/acc/mean": 0.5}]}',
     ("column 'acc' is struct<a: double>", "expected a numeric reward column")),
])
def test_trl_columns_of_the_wrong_type_are_refused_naming_the_file(tmp_path, capsys, columns, state, needles):
    target = trl_table_dump(tmp_path / "trl", trl_table(**columns), state)
    refused(capsys, target, tmp_path / "out", "completions_00001.parquet", *needles)


def test_trl_conversations_are_prompts(tmp_path, capsys):
    chats = [[{"role": "user", "content": f"p{i // 4}"}] for i in range(16)]
    chat = trl_table_dump(tmp_path / "chat", trl_table(prompt=chats))
    code, steps, _, err = analyze_cli(capsys, chat, tmp_path / "a")
    assert code == 0 and not err, err  # no warning either (arrow's read-only arrays are copied for torch)
    code, plain, _, _ = analyze_cli(capsys, trl_table_dump(tmp_path / "plain"), tmp_path / "b")
    assert code == 0 and steps == plain


class Detonator:
    """Unpickling it leaves a mark: a file that is a pickle must never be unpickled."""

    unpickled = False

    def __setstate__(self, state):
        Detonator.unpickled = True


@pytest.mark.parametrize("kind", ["zip", "pickle", "empty", "text"])
def test_a_parquet_that_is_really_something_else_is_one_line_naming_it(tmp_path, capsys, kind):
    def fake(path: Path) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        if kind == "zip":
            with zipfile.ZipFile(path, "w") as z:
                z.writestr("data.csv", "step,reward\n1,1\n")
        elif kind == "pickle":
            path.write_bytes(pickle.dumps(Detonator()))
        else:
            path.write_bytes(b"" if kind == "empty" else b"step,group_id,reward\n1,a,1\n")
        return path

    what = {"zip": "it is a zip archive, not a parquet file", "pickle": "it is a Python pickle, not a parquet file",
            "empty": "it is an empty file", "text": "not a readable parquet file"}[kind]
    refused(capsys, fake(tmp_path / "r.parquet"), tmp_path / "out", "r.parquet", what, "expected a parquet file")
    fake(tmp_path / "trl" / "completions" / "completions_00001.parquet")
    refused(capsys, tmp_path / "trl", tmp_path / "out", "completions_00001.parquet", what)
    assert not Detonator.unpickled


@pytest.mark.parametrize("name, columns, needles", [
    ("text", {"reward": ["1", "0"] * 8}, ("column 'reward' is string", "expected numbers")),
    ("word", {"reward": ["1", "high"] * 8}, ("row 2: reward 'high'", "expected a finite number")),
    ("bool", {"reward": [True, False] * 8}, ("column 'reward' is bool", "expected numbers")),
    ("list", {"reward": [[1.0]] * 16}, ("column 'reward' is list<element: double>",)),
    ("null", {"reward": [1.0] * 15 + [None]}, ("row 16: reward nan", "expected a finite number")),
    ("advantage", {"advantage": ["0.5"] * 16}, ("column 'advantage' is string", "expected numbers")),
    ("inf_advantage", {"advantage": [0.0] * 15 + [float("inf")]}, ("row 16: advantage inf", "a finite number")),
    ("binary_key", {"group_id": [b"a"] * 16}, ("column 'group_id' is binary", "expected text or integers")),
    ("empty", {"step": [], "group_id": [], "reward": []}, ("no rows", "expected one row per rollout")),
])
def test_generic_columns_of_the_wrong_type_are_refused_naming_the_row(tmp_path, capsys, name, columns, needles):
    base = {"step": [1] * 16, "group_id": [f"g{i // 4}" for i in range(16)], "reward": sum(REWARDS, [])}
    types = {"step": pa.int64(), "group_id": pa.string(), "reward": pa.float64()} if name == "empty" else {}
    pq.write_table(pa.table({k: pa.array(v, types.get(k)) for k, v in {**base, **columns}.items()}),
                   tmp_path / "r.parquet")
    refused(capsys, tmp_path / "r.parquet", tmp_path / "out", "r.parquet", *needles)


@pytest.mark.parametrize("text, needles", [
    ("step,group_id,reward\n1,a,1\n1,a,high\n", ("r.csv: row 2: reward 'high'", "expected a finite number")),
    ("step,group_id,reward\n", ("r.csv: no rows",)),
    ("step,group_id,reward,advantage\n1,a,1,x\n1,a,0,y\n", ("r.csv: row 1: advantage 'x'",)),
    (f"step,group_id,reward\n1,a,{HUGE}\n1,a,0\n", ("r.csv: row 1: reward inf", "expected a finite number")),
])
def test_generic_csv_cells_that_are_no_numbers_are_refused_naming_the_row(tmp_path, capsys, text, needles):
    (tmp_path / "r.csv").write_text(text)
    refused(capsys, tmp_path / "r.csv", tmp_path / "out", *needles)


@pytest.mark.parametrize("case, needles", [
    ("utf8", ("1.jsonl:2", "not UTF-8 (byte 0xff at column 19)", "in UTF-8")),
    ("twice", ("1.jsonl:3", "pyarrow's JSON reader refuses this line", "specified twice", "each field once")),
    ("metrics_utf8", ("m.jsonl:1", "not UTF-8 (byte 0xff at column 31)", "expected one metrics object per line")),
    ("state_utf8", ("trainer_state.json", "not UTF-8 (byte 0xff", "expected TRL's trainer_state.json")),
])
def test_bytes_that_are_not_utf8_and_a_field_written_twice_are_named(tmp_path, capsys, case, needles):
    flags: tuple = ()
    if case == "utf8":  # in the prompt text fade reads (in the output it skips, pyarrow keeps the bytes unread)
        path = write_jsonl(tmp_path / "run" / "1.jsonl", verl_rows())
        data = path.read_bytes().split(b"\n")
        data[1] = data[1].replace(b'"prompt 0"', b'"prompt \xff"')
        path.write_bytes(b"\n".join(data))
        target = path.parent
    elif case == "twice":
        target = verl_dump(tmp_path / "run", 3, json.dumps(verl_rows()[2])[:-1] + ', "score": 0.0}')
    elif case == "metrics_utf8":
        target = verl_dump(tmp_path / "run")
        (tmp_path / "m.jsonl").write_bytes(b'{"step": 1, "data": {"note": "\xff"}}\n')
        flags = ("--metrics", tmp_path / "m.jsonl")
    else:
        target = trl_table_dump(tmp_path / "trl")
        (target / "trainer_state.json").write_bytes(b'{"log_history": [{"step": 1, "note": "\xff"}]}')
    refused(capsys, target, tmp_path / "out", *needles, flags=flags)


# -- 4. memory: a generic parquet or CSV read in batches ---------------------------------------------


@pytest.mark.parametrize("suffix", [".parquet", ".csv"])
def test_a_file_read_in_batches_reads_as_one_and_names_rows_of_the_file(tmp_path, capsys, monkeypatch, suffix):
    # a batch of 5 rows: keys recur across batches (and across row groups, each with its dictionary);
    # the groups, their keys and the rows an error names are the file's
    import pyarrow.csv as pcsv

    from fade.analyze.formats import generic

    rng = np.random.default_rng(0)
    steps = np.repeat([3, 1, 2], 16)
    keys = [f"k{(i // 4) % 3}" for i in range(48)]
    rewards = (rng.uniform(size=48) < 0.5).astype(float)
    table = pa.table({"step": steps, "group_id": keys, "reward": rewards, "prompt_id": list(range(48))})
    path = tmp_path / f"r{suffix}"
    if suffix == ".parquet":
        pq.write_table(table, path, row_group_size=7)
    else:
        pcsv.write_csv(table, path)
    write_jsonl(tmp_path / "r.jsonl", table.to_pylist())
    code, whole, _, err = analyze_cli(capsys, tmp_path / "r.jsonl", tmp_path / "a")
    assert code == 0, err
    monkeypatch.setattr(generic, "BATCH_ROWS", 5)
    code, batched, _, err = analyze_cli(capsys, path, tmp_path / "b")
    assert code == 0, err
    assert batched == whole and [s["step"] for s in batched] == [1, 2, 3]
    assert read_run(path).steps[0].prompt_keys == ["k1", "k2", "k0"]  # step 1: rows 17-32, first seen first
    bad = table.set_column(2, "reward", pa.array(np.r_[rewards[:37], np.nan, rewards[38:]]))
    if suffix == ".parquet":
        pq.write_table(bad, path, row_group_size=7)
    else:
        pcsv.write_csv(bad, path)
    refused(capsys, path, tmp_path / "out", f"r{suffix}: row 38: reward nan", "expected a finite number")


# -- text no file can hold ---------------------------------------------------------------------------


def test_a_key_holding_a_lone_surrogate_is_refused_naming_its_line_and_nothing_is_written(tmp_path, capsys):
    """JSON may spell a lone surrogate ("\\udcff"), which no UTF-8 file holds: a group key holding one
    would stop the command while it writes the report. It is refused at its line, before any output."""
    rows = [{**row, "step": step} for step in (1, 2) for row in generic_rows()]
    rows[1]["group_id"] = "g0\udcff"
    path = write_jsonl(tmp_path / "run.jsonl", rows)
    refused(capsys, path, tmp_path / "out", "run.jsonl:2:", "'group_id'", "lone surrogate")


def test_the_reports_bytes_are_made_before_the_first_file_is_written(tmp_path, monkeypatch):
    """A value that cannot be written stops write_outputs with the folder as it was: no file of the
    analysis is written before every file's bytes are made."""
    import fade.analyze.report as report
    from fade.analyze import analyze_run

    path = write_jsonl(tmp_path / "run.jsonl", [{**row, "step": s} for s in (1, 2) for row in generic_rows()])
    analysis = analyze_run(path)
    monkeypatch.setattr(report, "summary_markdown", lambda a: "text \udcff")
    with pytest.raises(UnicodeEncodeError):
        report.write_outputs(analysis, tmp_path / "out", figures=False)
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())
