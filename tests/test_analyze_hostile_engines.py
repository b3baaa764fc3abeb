"""fade analyze on ROLL, AReaL and slime dumps as hostile hands write them: each gives the right
answer, or one line ``fade: error: FILE[:LINE]: ...: expected ...`` (exit status 2, nothing
written); never a traceback, never a silent wrong number.

The classes of tests/test_analyze_hostile.py, tried on the three readers added since: integers
past the float range and past int64 (in fields and in names), JSON nested past Python's parser,
text that is not UTF-8 (and JSON's escaped lone surrogates, which no UTF-8 holds), a key written
twice, every field read given another JSON type, NaN and Infinity, empty and blank files, 5 MB
lines, files written while they are read, duplicates, unsorted steps, evaluation beside training;
for slime, torch values where numbers are expected and files that are not torch's zips.

The dumps are built as each engine writes them (tests/analyze_dumps.py: ROLL 8eb27cc ``roll/pipeline/rlvr/utils.py:
55-72``, one JSON object of columns per step; AReaL 4aef98d ``areal/infra/workflow_executor.py:
834-921``, a record per sample in ``rollout/<version>/<task_id>.jsonl``; slime 624b824
``slime/observability/rollout_data_utils.py:140-153``, ``torch.save({"rollout_id", "samples"})``),
then broken one field at a time. A slime reward that is a 0-d tensor is read as its number: slime
keeps ``Sample.reward`` as it is (``get_reward_value``, slime/utils/types.py:246-247) and builds its
reward tensor with ``torch.tensor(raw_rewards)`` (slime/ray/rollout.py:612-618), which takes a 0-d
tensor as the number it holds; any other tensor is refused.
"""

from __future__ import annotations

import io
import json
import pickle
import shutil
import threading
import warnings
import zipfile
from pathlib import Path

import pytest

pytest.importorskip("pyarrow")

from analyze_dumps import (  # noqa: E402
    DEEP,
    HUGE,
    HUGER,
    REWARDS,
    UNSET,
    analyze_cli,
    areal_records,
    areal_task,
    refused,
    roll_columns,
    slime_file,
    slime_sample,
    slime_samples,
    write_jsonl,
    write_roll,
)
from fade.analyze import read_run  # noqa: E402

NINES = "9" * 25  # a step in a name past int64






def by_hand(groups: list[list[float]]) -> dict:
    n = sum(len(g) for g in groups)
    return {"num_groups": len(groups), "num_rollouts": n,
            "zero_spread_share": sum(len(g) for g in groups if len(set(g)) == 1) / n,
            "mean_reward": sum(sum(g) for g in groups) / n}


def read_as(capsys, target: Path, out: Path, expected: dict[int, list[list[float]]], *, flags: tuple = (),
            warning: str | None = None) -> list[dict]:
    """``fade analyze target`` reads the steps ``expected`` (step -> its groups' rewards), each
    step's numbers those summed out by hand; stderr is empty, or the one warning holding ``warning``."""
    code, steps, _, err = analyze_cli(capsys, target, out, *flags)
    assert code == 0, err
    if warning is None:
        assert not err.strip(), err
    else:
        (line,) = err.strip().splitlines()
        assert line.startswith("fade: warning: ") and warning in line, line
    assert [s["step"] for s in steps] == sorted(expected)
    for step in steps:
        for name, value in by_hand(expected[step["step"]]).items():
            assert step[name] == pytest.approx(value), (step["step"], name)
    return steps


def expect(capsys, target: Path, out: Path, expected, *, flags: tuple = (), warning: str | None = None) -> None:
    """``expected``: the needles of a refusal (a tuple), or the steps read (a dict)."""
    if isinstance(expected, dict):
        read_as(capsys, target, out, expected, flags=flags, warning=warning)
    else:
        refused(capsys, target, out, *expected, flags=flags)


def literal(obj: object, text: str) -> str:
    """``obj`` as JSON, each ``"@@"`` in it written as the JSON text ``text`` (NaN, 1e400 spelt out, ...)."""
    dumped = json.dumps(obj)
    assert '"@@"' in dumped
    return dumped.replace('"@@"', text)


# -- ROLL: rollout_dump_data.step_{N}.jsonl, one JSON object of columns ------------------------------

ROLL_STEPS = {
    0: [("math_rule", 0, REWARDS[0]), ("math_rule", 1, REWARDS[1]), ("code_sandbox", "c7", REWARDS[2]),
        ("code_sandbox", "c8", REWARDS[3])],
    1: [("math_rule", 2, [1.0, 1.0, 0.0, 0.0]), ("math_rule", 3, [1.0, 1.0, 1.0, 1.0])],
}
ROLL_READ = {step: [scores for _, _, scores in prompts] for step, prompts in ROLL_STEPS.items()}


def roll_run(folder: Path, step0: dict | str | bytes | None = None) -> Path:
    """Steps 0 and 1; step 0 (not the newest) written as ``step0`` where given."""
    write_roll(folder, 0, roll_columns(0, ROLL_STEPS[0]) if step0 is None else step0)
    write_roll(folder, 1, roll_columns(1, ROLL_STEPS[1]))
    return folder


def roll_edit(column: str, row: int, text: str) -> str:
    """Step 0 with ``column``'s value at ``row`` (0-based; None: the whole column) as the JSON text ``text``."""
    cols = roll_columns(0, ROLL_STEPS[0])
    if row is None:
        cols[column] = "@@"
    else:
        cols[column][row] = "@@"
    return literal(cols, text) + "\n"


# -- AReaL: rollout/<version>/<task_id>.jsonl, a record per sample ------------------------------------

AREAL_TASKS = {1: {10: REWARDS[0], 11: REWARDS[1], 12: REWARDS[2], 13: REWARDS[3]},
               2: {20: [1.0, 1.0, 0.0, 1.0], 21: [0.0, 1.0, 0.0, 1.0]}}
AREAL_READ = {v: list(tasks.values()) for v, tasks in AREAL_TASKS.items()}


def areal_run(log: Path, task11: list | bytes | None = None, versions: dict | None = None) -> Path:
    """The log folder: rollout/1/ (tasks 10-13) and rollout/2/ (tasks 20, 21); task 11 written as
    ``task11`` where given."""
    for version, tasks in (AREAL_TASKS if versions is None else versions).items():
        for task, rewards in tasks.items():
            lines = areal_records(task, version, rewards) if task != 11 or task11 is None else task11
            write_jsonl(log / "rollout" / str(version) / f"{task}.jsonl", lines)
    return log


def areal_edit(field: str | None, text: str) -> list:
    """Task 11 with the second record's ``field`` as the JSON text ``text`` (None: the whole record)."""
    records: list = areal_records(11, 1, REWARDS[1])
    records[1] = text if field is None else literal({**records[1], field: "@@"}, text)
    return records


# -- slime: rollout_data/{rollout_id}.pt, torch.save({"rollout_id", "samples"}) ------------------------

SLIME_GROUPS = {1: REWARDS, 2: [[1.0, 0.0], [0.0, 0.0]]}


def slime_run(data: Path, samples1: object = UNSET, *, rollout_id: object = 1, body: object = UNSET,
              samples2: list | None = None) -> Path:
    """rollout_data/1.pt (REWARDS) and 2.pt; 1.pt's ``rollout_id``, its samples ``samples1`` or its
    whole ``body`` where given."""
    if samples1 is UNSET:
        samples1 = slime_samples(REWARDS, abridged=True)
    if samples2 is None:
        samples2 = slime_samples(SLIME_GROUPS[2], first_group=5, abridged=True)
    slime_file(data / "1.pt", rollout_id, samples1, body)
    slime_file(data / "2.pt", 2, samples2)
    return data


def spliced(path: Path, marker: str, opcodes: bytes) -> Path:
    """``path``, a torch.save file, with the pickled text ``marker`` (its BINUNICODE opcode) replaced by
    the pickle ``opcodes``: what no torch.save writes, a hostile hand can."""
    with zipfile.ZipFile(path) as z:
        entries = [(info.filename, z.read(info.filename)) for info in z.infolist()]
    text = marker.encode()
    needle = b"X" + len(text).to_bytes(4, "little") + text
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as z:
        for name, data in entries:
            if name.endswith("/data.pkl"):
                assert data.count(needle) == 1
                data = data.replace(needle, opcodes)
            z.writestr(name, data)
    return path


#: pickle opcodes of a list nested 5000 deep: 5000 EMPTY_LIST, each APPENDed into the one before.
DEEP_PICKLE = b"]" * 5000 + b"a" * 4999


# -- 1. integers past the float range ---------------------------------------------------------------


@pytest.mark.parametrize("case, needles", [
    ("roll_score", ("step_0.jsonl:1", "row 3", "score 100000... (an integer of 401 digits)", "a finite number")),
    ("roll_score_past_text", ("step_0.jsonl:1", "cannot be read into Python", "4300 digits", "expected")),
    ("roll_id_past_text", ("step_0.jsonl:1", "cannot be read into Python", "4300 digits")),
    ("areal_reward", ("1/11.jsonl:2", "reward is 100000... (an integer of 401 digits)", "expected a finite number")),
    ("areal_reward_past_text", ("1/11.jsonl:2", "cannot be read into Python", "4300 digits")),
    ("areal_task_id", ("1/11.jsonl:2", "task_id is 100000...", "expected an integer within int64")),
    ("slime_reward", ("1.pt: sample 3", "reward is 100000... (an integer of 401 digits)", "expected a finite number")),
    ("slime_reward_key", ("1.pt: sample 3", "reward['acc'] is 100000...", "expected a finite number")),
    ("slime_reward_long4", ("1.pt", "LONG4", "not unpickled")),  # past 255 bytes: torch's loader reads no LONG4
])
def test_an_integer_past_the_float_range_is_refused_naming_where_it_is(tmp_path, capsys, case, needles):
    flags: tuple = ()
    if case == "roll_score":
        target = roll_run(tmp_path / "roll", roll_edit("scores", 2, HUGE))
    elif case == "roll_score_past_text":
        target = roll_run(tmp_path / "roll", roll_edit("scores", 2, HUGER))
    elif case == "roll_id_past_text":
        target = roll_run(tmp_path / "roll", roll_edit("id", 0, HUGER))
    elif case.startswith("areal"):
        field = "task_id" if case == "areal_task_id" else "reward"
        target = areal_run(tmp_path / "log", areal_edit(field, HUGER if case.endswith("past_text") else HUGE))
    else:
        samples = slime_samples(REWARDS, abridged=True)
        if case == "slime_reward_key":
            for s in samples:
                s["reward"] = {"acc": s["reward"]}
            samples[2]["reward"]["acc"], flags = 10**400, ("--reward-column", "acc")
        else:
            samples[2]["reward"] = 10**400 if case == "slime_reward" else 10**5000
        target = slime_run(tmp_path / "rollout_data", samples)
    refused(capsys, target, tmp_path / "out", *needles, flags=flags)


# -- 2. steps, versions and ids past int64 -----------------------------------------------------------


@pytest.mark.parametrize("case, expected", [
    ("roll_step", ("step_0.jsonl:1", "row 1", "global_step 100000... (an integer of 401 digits)", "within int64")),
    ("roll_step_2_63", ("step_0.jsonl:1", "row 1", "global_step 9223372036854775808", "within int64")),
    ("roll_name", (f"step '{NINES}' in its name", "expected an integer within int64")),
    # ROLL's id is the dataset's, text or an integer, only ever compared: one past int64 names its prompt
    ("roll_id", ROLL_READ),
    ("roll_name_file", (f"step '{NINES}' in its name", "expected an integer within int64")),
    ("areal_version_name", (f"rollout/{NINES}", "within int64")),
    ("areal_version_name_file", (f"rollout/{NINES}: version {NINES}", "within int64")),
    ("areal_task_name", (f"{NINES}.jsonl", f"task '{NINES}' in its name", "expected an integer within int64")),
    ("areal_tail_version", ("1/11.jsonl:2", "tail_version is 9223372036854775808", "within int64")),
    ("areal_sample_idx", ("1/11.jsonl:2", "sample_idx is 100000...", "within int64")),
    ("slime_name", (f"{NINES}.pt", f"rollout_id '{NINES}' in its name", "expected an integer within int64")),
    ("slime_name_file", (f"{NINES}.pt", f"rollout_id '{NINES}' in its name", "expected an integer within int64")),
    ("slime_rollout_id", ("1.pt: rollout_id is 9223372036854775808", "expected an integer within int64")),
    ("slime_group_index", ("1.pt: sample 3: group_index is 9223372036854775808", "within int64")),
    ("slime_index", ("1.pt: sample 3: index is 100000... (an integer of 401 digits)", "within int64")),
    ("slime_sample_rollout_id", ("1.pt: sample 3: rollout_id is 18446744073709551616", "within int64, or None")),
])
def test_a_step_or_an_id_past_int64_is_refused_naming_it(tmp_path, capsys, case, expected):
    if case == "roll_step":
        target = roll_run(tmp_path / "roll", roll_edit("global_step", None, "[" + ", ".join([HUGE] * 16) + "]"))
    elif case == "roll_id":  # prompt 0's id is 10**400, and it comes again at step 1: the per-prompt view names it
        zero, one = roll_columns(0, ROLL_STEPS[0]), roll_columns(1, ROLL_STEPS[1])
        zero["id"][:4] = [10**400] * 4
        for column in ("id", "prompt", "messages"):
            one[column][:4] = zero[column][:4]
        target = roll_run(tmp_path / "roll", zero)
        write_roll(target, 1, one)
    elif case == "roll_step_2_63":
        target = roll_run(tmp_path / "roll", {**roll_columns(0, ROLL_STEPS[0]), "global_step": [2**63] * 16})
    elif case.startswith("roll_name"):
        target = write_roll(tmp_path / "roll", NINES, roll_columns(0, ROLL_STEPS[0]))
        target = target if case == "roll_name_file" else target.parent
    elif case.startswith("areal_version_name"):
        target = areal_run(tmp_path / "log", versions={NINES: {10: REWARDS[0]}})
        target = target / "rollout" / NINES / "10.jsonl" if case.endswith("file") else target
    elif case == "areal_task_name":
        target = areal_run(tmp_path / "log")
        write_jsonl(target / "rollout" / "1" / f"{NINES}.jsonl", areal_records(12, 1, REWARDS[2]))
    elif case.startswith("areal"):
        field = case.removeprefix("areal_")
        target = areal_run(tmp_path / "log", areal_edit(field, str(2**63) if field == "tail_version" else HUGE))
    elif case.startswith("slime_name"):
        target = slime_file(tmp_path / "rollout_data" / f"{NINES}.pt", 1, slime_samples(REWARDS, abridged=True))
        target = target if case.endswith("file") else target.parent
    elif case == "slime_rollout_id":
        target = slime_run(tmp_path / "rollout_data", rollout_id=2**63)
    else:
        samples = slime_samples(REWARDS, abridged=True)
        field = case.removeprefix("slime_").replace("sample_", "")
        samples[2][field] = {"group_index": 2**63, "index": 10**400, "rollout_id": 2**64}[field]
        target = slime_run(tmp_path / "rollout_data", samples)
    expect(capsys, target, tmp_path / "out", expected)


# -- 3. JSON nested past Python's parser, and pickles nested as deep ---------------------------------


@pytest.mark.parametrize("case, expected", [
    ("roll_scores", ("step_0.jsonl:1", "nested deeper")),
    ("roll_responses", ("step_0.jsonl:1", "nested deeper")),  # ROLL's step is one object, read whole
    ("areal_prompt", ("1/11.jsonl:2", "nested deeper", "expected AReaL's record")),
    ("areal_completion", ("1/11.jsonl:2", "nested deeper")),
    ("slime_prompt", ("1.pt: sample 3", "prompt is a list nested too deep", "expected text or a list of messages")),
    ("slime_reward", ("1.pt: sample 3", "reward is a list nested too deep to show", "expected a finite number")),
    ("slime_rollout_id", ("1.pt: rollout_id is a list nested too deep to show", "expected an integer")),
    ("slime_samples", ("1.pt: sample 1 is a list", "Sample.to_dict()")),
    ("slime_samples_dict", ("1.pt: samples is a dict nested too deep to show", "expected a non-empty list")),
    ("slime_metadata", SLIME_GROUPS),  # a field fade does not read is loaded and left
])
def test_nesting_past_pythons_recursion_limit_is_one_line_or_read_past(tmp_path, capsys, case, expected):
    if case == "roll_scores":
        target = roll_run(tmp_path / "roll", '{"scores": ' + DEEP + "}\n")
    elif case == "roll_responses":
        target = roll_run(tmp_path / "roll", roll_edit("responses", 0, DEEP))
    elif case.startswith("areal"):
        target = areal_run(tmp_path / "log", areal_edit(case.removeprefix("areal_"), DEEP))
    else:
        data = tmp_path / "rollout_data"
        samples = slime_samples(REWARDS, abridged=True)
        field = case.removeprefix("slime_")
        if field == "rollout_id":
            slime_run(data, rollout_id="@@")
        elif field.startswith("samples"):
            slime_run(data, body={"rollout_id": 1, "samples": "@@"})
        else:
            samples[2][field] = "@@"
            slime_run(data, samples)
        # samples_dict: {"a": the deep list} (EMPTY_DICT, "a", the list, SETITEM)
        deep_dict = b"}X\x01\x00\x00\x00a" + DEEP_PICKLE + b"s"
        spliced(data / "1.pt", "@@", deep_dict if field == "samples_dict" else DEEP_PICKLE)
        target = data
    expect(capsys, target, tmp_path / "out", expected)


# -- 4. text that is not UTF-8 -----------------------------------------------------------------------


@pytest.mark.parametrize("case, needles", [
    ("roll_byte", ("step_0.jsonl:1", "not UTF-8", "expected ROLL's one JSON object")),
    ("roll_byte_newest", ("step_1.jsonl:1", "not UTF-8")),  # whole (it ends in its newline), so not skipped
    ("roll_surrogate_prompt", ("step_0.jsonl:1", "row 1: prompt", "a lone surrogate", "expected Unicode text")),
    ("roll_surrogate_id", ("step_0.jsonl:1", "row 1: id", "a lone surrogate")),
    ("roll_surrogate_messages", ("step_0.jsonl:1", "row 1: messages", "a lone surrogate")),
    ("roll_surrogate_domain", ("step_0.jsonl:1", "row 1: domain", "a lone surrogate")),
    ("areal_byte", ("1/11.jsonl:2", "not UTF-8", "byte 0xff")),
    ("areal_surrogate", ("1/11.jsonl:1", "prompt", "a lone surrogate", "expected Unicode text")),
    ("slime_byte", ("1.pt", "not a readable torch file", "UnicodeDecodeError")),
    ("slime_surrogate", ("1.pt: sample 1", "prompt", "a lone surrogate", "expected Unicode text")),
])
def test_text_that_is_not_unicode_is_refused_naming_where_it_is(tmp_path, capsys, case, needles):
    # a lone surrogate (JSON's "\udcff", or a pickled str holding one) is text no UTF-8 encodes: a
    # prompt key that held one could be neither compared by pyarrow nor written in the report; each
    # prompt is seen at both steps, so the per-prompt view would write it
    if case.startswith("roll_byte"):
        step = 1 if case.endswith("newest") else 0
        body = (json.dumps(roll_columns(step, ROLL_STEPS[step])) + "\n").encode()
        body = body.replace(f'"question {2 * step}"'.encode(), f'"question {2 * step}\xff"'.encode("latin-1"))
        target = roll_run(tmp_path / "roll", None if step else body)
        if step:
            write_roll(target, 1, body)
    elif case.startswith("roll_surrogate"):
        field = case.removeprefix("roll_surrogate_")
        cols = roll_columns(0, ROLL_STEPS[0])
        cols[field][:4] = ["\udcff"] * 4 if field != "messages" else [[{"role": "user", "content": "\udcff"}]] * 4
        target = roll_run(tmp_path / "roll", json.dumps(cols) + "\n")  # ensure_ascii: written as \udcff
        write_roll(target, 1, json.dumps({k: v[:8] for k, v in cols.items()} | {"global_step": [1] * 8}) + "\n")
    elif case == "areal_byte":
        records = areal_records(11, 1, REWARDS[1])
        lines = [json.dumps(r).encode() for r in records]
        lines[1] = lines[1].replace(b"problem 11", b"problem \xff")
        target = areal_run(tmp_path / "log", b"\n".join(lines) + b"\n")
    elif case == "areal_surrogate":
        target = areal_run(tmp_path / "log", [{**r, "prompt": "\udcff"} for r in areal_records(11, 1, REWARDS[1])])
        again = [{**r, "prompt": "\udcff"} for r in areal_records(11, 2, [1.0])]
        write_jsonl(target / "rollout" / "2" / "11.jsonl", again)
    elif case == "slime_byte":
        samples = slime_samples(REWARDS, abridged=True)
        samples[2]["response"] = "@@"
        target = slime_run(tmp_path / "rollout_data", samples)
        spliced(target / "1.pt", "@@", b"X\x04\x00\x00\x00ab\xff\xfe")
    else:
        samples = slime_samples(REWARDS, abridged=True)
        for s in samples[:4]:
            s["prompt"] = "\udcff"
        target = slime_run(tmp_path / "rollout_data", samples, samples2=samples[:4])
    refused(capsys, target, tmp_path / "out", *needles)


# -- 5. a key written twice --------------------------------------------------------------------------


@pytest.mark.parametrize("case, expected", [
    ("roll_global_step", ("step_0.jsonl:1", "key 'global_step' twice", "expected each key once")),
    ("roll_nested", ("step_0.jsonl:1", "key 'a' twice")),  # in a column fade does not read, too
    ("areal_prompt", ("1/11.jsonl:2", "key 'prompt' twice in one object", "expected each key once")),
    ("areal_task_id", ("1/11.jsonl:2", "key 'task_id' twice in one object")),
    # a pickle builds its dict by assignments: a key set twice holds its last value, for every reader
    ("slime_reward", {1: [[1.0, 0.0, 0.0, 1.0], *REWARDS[1:]], 2: SLIME_GROUPS[2]}),
])
def test_a_key_written_twice_is_refused_or_read_as_its_format_defines(tmp_path, capsys, case, expected):
    if case == "roll_global_step":
        text = json.dumps(roll_columns(0, ROLL_STEPS[0]))[:-1] + ', "global_step": [1]}\n'
        target = roll_run(tmp_path / "roll", text)
    elif case == "roll_nested":
        target = roll_run(tmp_path / "roll", roll_edit("tag", 5, '{"a": 1, "a": 2}'))
    elif case.startswith("areal"):
        field = case.removeprefix("areal_")
        value = json.dumps(areal_records(11, 1, REWARDS[1])[1][field])
        target = areal_run(tmp_path / "log", areal_edit(field, f"{value}, \"{field}\": {value}"))
    else:
        samples = slime_samples(REWARDS, abridged=True)
        samples[2]["zzzz"] = 0.0  # after "reward", renamed to it in the pickle: the sample's reward set again
        target = slime_run(tmp_path / "rollout_data", samples)
        spliced(target / "1.pt", "zzzz", b"X\x06\x00\x00\x00reward")
    expect(capsys, target, tmp_path / "out", expected)


# -- 6. every field read, of another JSON type -------------------------------------------------------


@pytest.mark.parametrize("fmt, field, text, needles", [
    *[("roll", "scores", t, ("row 3", f"score {s}", "expected a finite number"))
      for t, s in (("null", "None"), ("true", "True"), ('"1"', "'1'"), ("[1]", "[1]"), ("{}", "{}"))],
    *[("roll", "global_step", t, ("row 3", f"global_step {s}", "expected an integer"))
      for t, s in (("null", "None"), ("0.0", "0.0"), ('"0"', "'0'"), ("true", "True"), ("[0]", "[0]"))],
    *[("roll", "id", t, ("row 3", f"id {s}", "expected text or an integer"))
      for t, s in (("null", "None"), ("1.5", "1.5"), ("true", "True"), ("{}", "{}"), ("[0]", "[0]"))],
    *[("roll", "prompt", t, ("row 3", f"prompt {s}", "expected text")) for t, s in (("1", "1"), ("null", "None"),
                                                                                    ("{}", "{}"), ('["q"]', "['q']"))],
    *[("roll", "messages", t, ("row 3", f"messages {s}", "expected text")) for t, s in (("1", "1"), ("{}", "{}"))],
    *[("roll", "domain", t, ("row 3", f"domain {s}", "expected text")) for t, s in (("1", "1"), ("[]", "[]"),
                                                                                    ("{}", "{}"))],
    ("roll", "scores column", "true", ("column 'scores' is a bool", "expected a list")),
    ("roll", "scores column", '"x"', ("column 'scores' is a str", "expected a list")),
    ("roll", "scores column", "null", ("no 'scores' column", "expected ROLL's RLVR dump")),
    ("roll", "global_step column", "{}", ("column 'global_step' is a dict", "expected a list")),
    ("roll", "id column", '"abc"', ("column 'id' is a str", "expected a list")),
    ("roll", "domain column", "3", ("column 'domain' is a int", "expected a list")),
    *[("roll", "object", t, (f"a JSON {s}", "expected ROLL's one JSON object of columns"))
      for t, s in (("[]", "list"), ("null", "null"), ('"text"', "str"), ("3", "int"))],
    *[("areal", "task_id", t, (f"task_id is {s}", "expected an integer"))
      for t, s in (("null", "None"), ("true", "True"), ('"11"', "'11'"), ("11.0", "11.0"), ("[11]", "[11]"),
                   ("{}", "{}"))],
    *[("areal", f, t, (f"{f} is {s}", "expected")) for f in ("sample_idx", "head_version", "tail_version")
      for t, s in (("null", "None"), ('"1"', "'1'"), ("1.5", "1.5"))],
    *[("areal", "reward", t, (f"reward is {s}", "expected a finite number"))
      for t, s in (("null", "None"), ('"0.0"', "'0.0'"), ("[0.0]", "[0.0]"), ("{}", "{}"), ("true", "True"))],
    *[("areal", "prompt", t, (f"prompt is {s}", "expected text")) for t, s in (("null", "None"), ("1", "1"),
                                                                               ('["p"]', "['p']"), ("{}", "{}"))],
    *[("areal", None, t, (f"a JSON {s}", "expected AReaL's record")) for t, s in (("[]", "list"), ("null", "null"),
                                                                                  ('"text"', "str"), ("3", "int"))],
])
def test_a_field_of_another_json_type_is_refused_naming_its_line(tmp_path, capsys, fmt, field, text, needles):
    if fmt == "roll":
        if field == "object":
            body = text + "\n"
        elif field.endswith(" column"):
            body = roll_edit(field.removesuffix(" column"), None, text)
        else:
            body = roll_edit(field, 2, text)
        refused(capsys, roll_run(tmp_path / "roll", body), tmp_path / "out", "step_0.jsonl:1", *needles)
    else:
        refused(capsys, areal_run(tmp_path / "log", areal_edit(field, text)), tmp_path / "out", "1/11.jsonl:2",
                *needles)


#: (where, value, expected): ``where`` is the whole file, its rollout_id or samples, sample 3, or a
#: field of sample 3; ``value`` a function of torch; ``expected`` the refusal's needles, or the steps read.
SLIME_VALUES = [
    ("file", lambda t: [1, 2], ("1.pt: holds list", "a dict of rollout_id and samples")),
    ("file", lambda t: t.zeros(3), ("1.pt: holds Tensor",)),
    ("file", lambda t: None, ("1.pt: holds NoneType",)),
    ("file", lambda t: {"rollout_id": 1}, ("1.pt: holds 'rollout_id'",)),
    *[("file rollout_id", v, (f"1.pt: rollout_id is {s}", "expected an integer within int64"))
      for v, s in ((lambda t: None, "None"), (lambda t: "1", "'1'"), (lambda t: 1.0, "1.0"), (lambda t: True, "True"),
                   (lambda t: t.tensor(1), "tensor(1)"))],
    *[("samples", v, (f"1.pt: samples is {s}", "expected a non-empty list of Sample.to_dict()"))
      for v, s in ((lambda t: None, "None"), (lambda t: t.tensor([1.0, 0.0]), "tensor([1., 0.])"),
                   (lambda t: {"0": slime_sample(0, 0, 1.0, abridged=True)}, "{'0': {"), (lambda t: "abc", "'abc'"),
                   (lambda t: [], "[]"))],
    *[("sample", v, (f"1.pt: sample 3 is a {s}", "expected slime's Sample.to_dict()"))
      for v, s in ((lambda t: [slime_sample(0, 2, 1.0, abridged=True)], "list"), (lambda t: t.tensor(1.0), "Tensor"),
                   (lambda t: None, "NoneType"), (lambda t: "x", "str"))],
    *[("group_index", v, (f"group_index is {s}", "expected an integer"))
      for v, s in ((lambda t: None, "None"), (lambda t: "0", "'0'"), (lambda t: 0.0, "0.0"), (lambda t: False, "False"),
                   (lambda t: t.tensor(0), "tensor(0)"))],
    ("index", lambda t: t.tensor(2), ("index is tensor(2)", "expected an integer")),
    *[("rollout_id", v, (f"rollout_id is {s}", "expected an integer within int64, or None"))
      for v, s in ((lambda t: "x", "'x'"), (lambda t: 1.5, "1.5"), (lambda t: True, "True"),
                   (lambda t: t.tensor(7), "tensor(7)"))],
    *[("prompt", v, (f"prompt is {s}", "expected text or a list of messages"))
      for v, s in ((lambda t: 1, "1"), (lambda t: None, "None"), (lambda t: {"role": "user"}, "{'role': 'user'}"),
                   (lambda t: b"q", "b'q'"), (lambda t: t.tensor([1]), "tensor([1])"),
                   (lambda t: [{"role": "user", 1: "x"}], "[{'role': 'user', 1: 'x'}]"))],
    *[("reward", v, (f"reward is {s}", "expected a finite number"))
      for v, s in ((lambda t: None, "None"), (lambda t: "1", "'1'"), (lambda t: [1.0], "[1.0]"),
                   (lambda t: True, "True"), (lambda t: t.tensor([1.0]), "tensor([1.])"),
                   (lambda t: t.tensor([[1.0]]), "tensor([[1.]])"), (lambda t: t.tensor(True), "tensor(True)"),
                   (lambda t: t.tensor(float("nan")), "tensor(nan)"), (lambda t: t.tensor(1 + 1j), "tensor(1.+1.j)"))],
    ("reward", lambda t: {}, ("reward is a dict", "--reward-column KEY")),
    *[("status", v, (f"status is {s}", "Sample.Status's values"))
      for v, s in ((lambda t: None, "None"), (lambda t: 1, "1"), (lambda t: "done", "'done'"),
                   (lambda t: t.tensor(1), "tensor(1)"))],
    # a 0-d tensor is the number it holds, as slime's torch.tensor(raw_rewards) reads it
    *[("reward", v, SLIME_GROUPS) for v in (lambda t: t.tensor(1.0), lambda t: t.tensor(1),
                                            lambda t: t.tensor(1.0, dtype=t.bfloat16),
                                            lambda t: t.tensor(1.0, dtype=t.float64))],
]


@pytest.mark.parametrize("where, value, expected", [pytest.param(*c, id=f"{c[0]}-{i}")
                                                    for i, c in enumerate(SLIME_VALUES)])
def test_slime_a_value_of_another_type_is_refused_naming_its_sample(tmp_path, capsys, where, value, expected):
    torch = pytest.importorskip("torch")
    data = tmp_path / "rollout_data"
    samples = slime_samples(REWARDS, abridged=True)
    if where == "file":
        slime_run(data, body=value(torch))
    elif where == "file rollout_id":
        slime_run(data, rollout_id=value(torch))
    elif where == "samples":
        slime_run(data, value(torch))
    else:
        if where == "sample":
            samples[2] = value(torch)
        else:
            samples[2][where] = value(torch)
        slime_run(data, samples)
        expected = expected if isinstance(expected, dict) or expected[0].startswith("1.pt") else (
            "1.pt: sample 3", *expected)
    expect(capsys, data, tmp_path / "out", expected)


# -- 7. NaN and Infinity -----------------------------------------------------------------------------


@pytest.mark.parametrize("case, needles", [
    *[(f"roll_score_{t}", ("step_0.jsonl:1", "row 3", f"score {s}", "expected a finite number"))
      for t, s in (("NaN", "nan"), ("Infinity", "inf"), ("-Infinity", "-inf"))],
    ("roll_step_NaN", ("step_0.jsonl:1", "row 3", "global_step nan", "expected an integer")),
    ("roll_id_Infinity", ("step_0.jsonl:1", "row 3", "id inf", "expected text or an integer")),
    *[(f"areal_reward_{t}", ("1/11.jsonl:2", f"reward is {s}", "expected a finite number"))
      for t, s in (("NaN", "nan"), ("Infinity", "inf"), ("-Infinity", "-inf"))],
    ("areal_task_id_NaN", ("1/11.jsonl:2", "task_id is nan", "expected an integer")),
    *[(f"slime_reward_{t}", ("1.pt: sample 3", f"reward is {s}", "expected a finite number"))
      for t, s in (("nan", "nan"), ("inf", "inf"), ("-inf", "-inf"))],
    ("slime_reward_key_nan", ("1.pt: sample 3", "reward['acc'] is nan", "expected a finite number")),
    ("slime_reward_tensor_inf", ("1.pt: sample 3", "reward is tensor(inf)", "expected a finite number")),
])
def test_nan_and_infinity_are_refused_naming_where_they_are(tmp_path, capsys, case, needles):
    flags: tuple = ()
    kind, _, value = case.rpartition("_")
    if kind.startswith("roll"):
        field = {"roll_score": "scores", "roll_step": "global_step", "roll_id": "id"}[kind]
        target = roll_run(tmp_path / "roll", roll_edit(field, 2, value))
    elif kind.startswith("areal"):
        target = areal_run(tmp_path / "log", areal_edit(kind.removeprefix("areal_"), value))
    else:
        torch = pytest.importorskip("torch")
        samples = slime_samples(REWARDS, abridged=True)
        number = float(value)
        if kind == "slime_reward_key":
            for s in samples:
                s["reward"] = {"acc": s["reward"]}
            samples[2]["reward"]["acc"], flags = number, ("--reward-column", "acc")
        else:
            samples[2]["reward"] = torch.tensor(number) if kind == "slime_reward_tensor" else number
        target = slime_run(tmp_path / "rollout_data", samples)
    refused(capsys, target, tmp_path / "out", *needles, flags=flags)


# -- 8. empty files and files of whitespace ---------------------------------------------------------

@pytest.mark.parametrize("case, expected", [
    ("roll_empty_newest", {0: ROLL_READ[0]}),
    ("roll_blank_newest", {0: ROLL_READ[0]}),
    ("roll_empty_older", ("step_0.jsonl: empty", "expected ROLL's one JSON object of columns")),
    ("roll_blank_older", ("step_0.jsonl: empty",)),
    ("roll_empty_only", ("step_0.jsonl", "expected at least one complete step")),
    ("roll_torn_only", ("step_0.jsonl", "expected at least one complete step")),
    ("roll_empty_path", ("step_0.jsonl", "no records")),
    ("areal_empty_task", AREAL_READ | {1: [REWARDS[0], *REWARDS[2:]]}),  # AReaL opens it, then skips every sample
    ("areal_blank_task", ("1/11.jsonl", "no records (blank lines only)")),
    ("areal_spaces_older", ("1/11.jsonl:1", "the last line does not end the file")),
    ("areal_torn_only", ("1/10.jsonl", "expected at least one complete step")),
    ("areal_all_empty", ("no steps read",)),
    ("areal_empty_path", ("10.jsonl", "no records")),
    ("slime_empty_newest", {1: REWARDS}),
    ("slime_empty_older", ("1.pt: empty", "only the newest file")),
    ("slime_blank_newest", ("2.pt", "not a torch file", "expected slime's torch.save")),
    ("slime_blank_older", ("1.pt", "not a torch file")),
    ("slime_empty_only", ("1.pt", "expected at least one complete step")),
    ("slime_torn_only", ("1.pt", "expected at least one complete step")),
])
def test_an_empty_or_blank_file_is_refused_or_skipped_as_unfinished(tmp_path, capsys, case, expected):
    # an empty newest file is one its writer has opened and not yet written (skipped with a warning);
    # one that is the run's only file leaves nothing to read (one line, not a warning and an error)
    warning = None
    if case.startswith("roll"):
        folder = tmp_path / "roll"
        body = "" if "empty" in case else " \n\n  \n"
        if case.endswith("newest"):
            write_roll(folder, 0, roll_columns(0, ROLL_STEPS[0]))
            write_roll(folder, 1, body)
            warning = "step_1.jsonl: skipped the unfinished dump"
        elif case.endswith("older"):
            roll_run(folder, body)
        else:
            write_roll(folder, 0, json.dumps(roll_columns(0, ROLL_STEPS[0]))[:200] if "torn" in case else "")
        target = folder / "rollout_dump_data.step_0.jsonl" if case.endswith("path") else folder
    elif case.startswith("areal"):
        log = tmp_path / "log"
        if case == "areal_torn_only":
            areal_task(log, 1, 10, [1.0, 0.0])
            with open(log / "rollout" / "1" / "10.jsonl", "a") as f:
                f.write('{"task_id": 10, "sam')
        elif case in ("areal_all_empty", "areal_empty_path"):
            areal_run(log, versions={1: {10: []}, 2: {20: []}})
        else:
            areal_run(log, {"areal_empty_task": b"", "areal_blank_task": b"\n\n", "areal_spaces_older": b"   "}[case])
        target = log / "rollout" / "1" / "10.jsonl" if case.endswith("path") else log
    else:
        pytest.importorskip("torch")
        data = tmp_path / "rollout_data"
        body = b"" if "empty" in case else b"  \n\t\n"
        if case.endswith("newest"):
            slime_run(data)
            (data / "2.pt").write_bytes(body)
            warning = "2.pt: skipped the newest file"
        elif case.endswith("older"):
            slime_run(data)
            (data / "1.pt").write_bytes(body)
        else:
            path = slime_file(data / "1.pt", 1, slime_samples(REWARDS, abridged=True))
            path.write_bytes(path.read_bytes()[:300] if "torn" in case else b"")
        target = data
    expect(capsys, target, tmp_path / "out", expected, warning=warning)


# -- 9. lines of 5 MB --------------------------------------------------------------------------------


@pytest.mark.parametrize("case", ["roll_response", "roll_prompt", "areal_completion", "areal_prompt", "slime_prompt"])
def test_a_5mb_field_is_read_as_any_other(tmp_path, capsys, case):
    big = "x" * (5 << 20)
    if case.startswith("roll"):
        cols = roll_columns(0, ROLL_STEPS[0])
        if case == "roll_response":
            cols["responses"][5] = big
        else:
            cols["prompt"][4:8] = [big] * 4
        target, expected = roll_run(tmp_path / "roll", cols), ROLL_READ
    elif case.startswith("areal"):
        field = case.removeprefix("areal_")
        target = areal_run(tmp_path / "log", [{**r, field: big} for r in areal_records(11, 1, REWARDS[1])])
        expected = AREAL_READ
    else:
        pytest.importorskip("torch")
        samples = slime_samples(REWARDS, abridged=True)
        for s in samples[4:8]:
            s["prompt"] = big
        target, expected = slime_run(tmp_path / "rollout_data", samples), SLIME_GROUPS
    read_as(capsys, target, tmp_path / "out", expected)


# -- 10. a dump written while it is read --------------------------------------------------------------


@pytest.mark.parametrize("engine", ["roll", "areal", "slime"])
def test_a_dump_written_while_it_is_read_reads_whole_steps_every_time(tmp_path, engine):
    # a writer thread writes the newest step in pieces (as a buffered writer flushes) while fade reads
    # it again and again: every read gives the older steps in full and the newest whole or not at all
    folder = tmp_path / engine
    if engine == "roll":  # ROLL writes a step's file once, mode "w": here again and again
        roll_run(folder)
        newest, data, mode = folder / "rollout_dump_data.step_2.jsonl", (json.dumps(roll_columns(
            2, ROLL_STEPS[1])) + "\n").encode(), "wb"
        whole = {0: [16], 1: [8], 2: [8]}
    elif engine == "areal":  # AReaL appends a task's records to its file: here a task of ever more samples
        areal_run(folder)
        newest, mode = folder / "rollout" / "2" / "22.jsonl", "ab"
        data = "".join(json.dumps(r) + "\n" for r in areal_records(22, 2, [1.0, 0.0] * 2000)).encode()
        whole = {1: [16], 2: [8] + list(range(9, 5000))}
    else:  # slime's torch.save writes its zip front to back, the directory last
        pytest.importorskip("torch")
        slime_run(folder)
        newest, mode = folder / "3.pt", "wb"
        buffer = io.BytesIO()
        import torch

        torch.save({"rollout_id": 3, "samples": slime_samples(REWARDS, abridged=True)}, buffer)
        data = buffer.getvalue()
        whole = {1: [16], 2: [4], 3: [16]}
    done = threading.Event()

    def writer() -> None:
        while not done.is_set():
            with open(newest, mode) as f:
                for i in range(0, len(data), 37):
                    if done.is_set():
                        return
                    f.write(data[i:i + 37])
                    f.flush()
            if mode == "ab":
                return

    thread = threading.Thread(target=writer, daemon=True)
    thread.start()
    try:
        for _ in range(15):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # the unfinished newest step, when there is one
                run = read_run(folder)
            seen = {b.step: b.num_rollouts for b in run.steps}
            assert all(seen[s] in whole[s] for s in seen) and set(whole) - set(seen) <= {max(whole)}, seen
    finally:
        done.set()
        thread.join()


# -- 11. duplicates ---------------------------------------------------------------------------------


@pytest.mark.parametrize("case, expected", [
    ("roll_two_names", ("step_01.jsonl and", "step_1.jsonl are both step 1", "expected one file per step")),
    ("roll_copied_step", ("step_2.jsonl:1", "global_step 0: expected 2", "as ROLL names the file")),
    ("areal_two_version_names", ("01 and 1 are both step 1",)),
    ("areal_two_task_names", ("011.jsonl and 11.jsonl are both task 11",)),
    ("areal_sample_twice", ("1/11.jsonl:3", "sample_idx 1 again (also line 2)")),
    # AReaL numbers tasks per executor from 0, so a restarted run reuses a task id in a later version
    ("areal_task_in_two_versions", AREAL_READ | {2: [*AREAL_READ[2], REWARDS[0]]}),
    ("slime_two_names", ("01.pt and 1.pt are both step 1",)),
    ("slime_copied_rollout", ("3.pt: rollout_id 1: expected 3", "as the file name says")),
    ("slime_index_twice", ("1.pt: sample 3", "index 0 again (also sample 1)", "expected each sample once")),
])
def test_a_step_or_a_sample_written_twice_is_refused(tmp_path, capsys, case, expected):
    if case == "roll_two_names":
        target = roll_run(tmp_path / "roll")
        write_roll(target, "01", roll_columns(1, ROLL_STEPS[1]))
    elif case == "roll_copied_step":
        target = roll_run(tmp_path / "roll")
        write_roll(target, 2, roll_columns(0, ROLL_STEPS[0]))
    elif case.startswith("areal"):
        target = areal_run(tmp_path / "log")
        if case == "areal_two_version_names":
            shutil.copytree(target / "rollout" / "1", target / "rollout" / "01")
        elif case == "areal_two_task_names":
            shutil.copy(target / "rollout" / "1" / "11.jsonl", target / "rollout" / "1" / "011.jsonl")
        elif case == "areal_sample_twice":
            records = areal_records(11, 1, REWARDS[1])
            records[2]["sample_idx"] = 1
            areal_run(target, records)
        else:
            areal_task(target, 2, 10, REWARDS[0])
    else:
        pytest.importorskip("torch")
        target = tmp_path / "rollout_data"
        samples = slime_samples(REWARDS, abridged=True)
        if case == "slime_index_twice":
            samples[2]["index"] = 0
        slime_run(target, samples)
        if case == "slime_two_names":
            shutil.copy(target / "1.pt", target / "01.pt")
        elif case == "slime_copied_rollout":
            shutil.copy(target / "1.pt", target / "3.pt")
    expect(capsys, target, tmp_path / "out", expected)


# -- 12. steps in any order --------------------------------------------------------------------------


@pytest.mark.parametrize("engine", ["roll", "areal", "slime"])
def test_steps_written_out_of_order_are_read_in_step_order(tmp_path, capsys, engine):
    # written 10, 2, 9 (a name sorted as text puts 10 before 2 and 9); the samples of a step shuffled
    groups = {10: REWARDS, 2: [[1.0, 1.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0]], 9: [[0.0, 1.0, 1.0, 1.0]]}
    folder = tmp_path / engine
    for step, rewards in groups.items():
        if engine == "roll":
            prompts = [("math_rule", f"p{step}_{g}", r) for g, r in enumerate(rewards)]
            write_roll(folder, step, roll_columns(step, prompts))
        elif engine == "areal":
            for g, r in enumerate(rewards):
                write_jsonl(folder / "rollout" / str(step) / f"{step * 10 + g}.jsonl",
                            areal_records(step * 10 + g, step, r)[::-1])
        else:
            pytest.importorskip("torch")
            slime_file(folder / f"{step}.pt", step, slime_samples(rewards, abridged=True)[::-1])
    read_as(capsys, folder, tmp_path / "out", groups)


# -- 13. evaluation beside training -----------------------------------------------------------------


@pytest.mark.parametrize("case, expected", [
    ("areal_beside", AREAL_READ),
    ("areal_folder", ("eval-rollout", "AReaL's evaluation rollouts", "expected the training ones")),
    ("areal_file", ("eval-rollout/1/10.jsonl", "an evaluation's task file", "expected a training one")),
    ("slime_beside", SLIME_GROUPS),
    ("slime_beside_template", SLIME_GROUPS),
    ("slime_file", ("eval_1.pt", "an evaluation's file", "expected a training rollout file")),
    ("slime_only", ("only evaluation files", "eval_1.pt")),
])
def test_evaluation_beside_training_is_never_read_as_training(tmp_path, capsys, case, expected):
    # every evaluation rollout solved: read as training, it would change every number
    if case.startswith("areal"):
        log = areal_run(tmp_path / "log")
        for task in (10, 11):
            areal_task(log, 1, task, [1.0] * 8, folder="eval-rollout")
        target = {"areal_beside": log, "areal_folder": log / "eval-rollout",
                  "areal_file": log / "eval-rollout" / "1" / "10.jsonl"}[case]
    else:
        pytest.importorskip("torch")
        data = slime_run(tmp_path / "rollout_data")
        for rollout in (1, 2):
            slime_file(data / f"eval_{rollout}.pt", rollout, slime_samples([[1.0] * 8], abridged=True))
        if case == "slime_beside_template":  # slime's own examples: rollout_{id}.pt, rollout_eval_{id}.pt
            for path in list(data.iterdir()):
                path.rename(data / f"rollout_{path.name}")
        elif case == "slime_only":
            (data / "1.pt").unlink()
            (data / "2.pt").unlink()
        target = data / "eval_1.pt" if case == "slime_file" else data
    expect(capsys, target, tmp_path / "out", expected)


# -- 14. slime files that are not torch's zips ------------------------------------------------------


class Detonator:
    """Unpickling it leaves a mark: a file that is a pickle must never be unpickled."""

    unpickled = False

    def __setstate__(self, state):
        Detonator.unpickled = True


@pytest.mark.parametrize("case, expected", [
    ("zip_of_csv", ("1.pt", "not a readable torch file", "expected slime's torch.save")),
    ("zip_of_payload", ("1.pt", "holds", "not unpickled")),
    # a whole zip with bytes after it is never skipped as unfinished: read where torch reads it, else refused
    ("zip_trailing_bytes_newest", ("2.pt", "not a readable torch file", "expected slime's torch.save")),
    ("zip_trailing_kilobyte_newest", SLIME_GROUPS),
    ("zip_bytes_zeroed", ("1.pt", "not unpickled")),
    ("pickle_older", ("1.pt", "not a torch file", "a Python pickle")),
    ("pickle_newest", ("2.pt", "not a torch file", "a Python pickle")),  # complete, so never skipped as unfinished
    ("legacy_torch_newest", ("2.pt", "not a torch file", "a Python pickle")),
    ("truncated_older", ("1.pt", "not a complete torch file", "only the newest file")),
    ("truncated_newest", {1: REWARDS}),
])
def test_slime_a_pt_that_is_not_a_whole_torch_zip_is_one_line_and_never_unpickled(tmp_path, capsys, case, expected):
    torch = pytest.importorskip("torch")
    data = slime_run(tmp_path / "rollout_data")
    path = data / ("2.pt" if case.endswith("newest") else "1.pt")
    if case == "zip_of_csv":
        with zipfile.ZipFile(path, "w") as z:
            z.writestr("archive/data.csv", "rollout_id,reward\n1,1\n")
    elif case == "zip_of_payload":
        with zipfile.ZipFile(path) as z:
            entries = [(i.filename, z.read(i.filename)) for i in z.infolist()]
        with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as z:
            for name, content in entries:
                z.writestr(name, pickle.dumps(Detonator(), protocol=2) if name.endswith("/data.pkl") else content)
    elif case.startswith("zip_trailing"):
        path.write_bytes(path.read_bytes() + b"\x00garbage" * (20000 if "bytes" in case else 128))
    elif case == "zip_bytes_zeroed":
        content = bytearray(path.read_bytes())
        start = content.find(b"data.pkl") + 8
        content[start + 40:start + 240] = bytes(200)
        path.write_bytes(bytes(content))
    elif case.startswith("pickle"):
        path.write_bytes(pickle.dumps({"rollout_id": 1, "samples": [Detonator()]}))
    elif case.startswith("legacy"):
        torch.save({"rollout_id": 2, "samples": slime_samples(SLIME_GROUPS[2], abridged=True)}, path,
                   _use_new_zipfile_serialization=False)
    else:
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    expect(capsys, data, tmp_path / "out", expected,
           warning="2.pt: skipped the newest file" if case == "truncated_newest" else None)
    assert not Detonator.unpickled
