"""fade analyze on AReaL's and slime's rollout dumps, through the command line.

Each dump is written as the engine writes it (tests/analyze_dumps.py), field for field from its
writer: AReaL 4aef98d, areal/infra/workflow_executor.py:818-921 (``_dump_trajectory``:
``rollout/<tail_version>/<task_id>.jsonl``, one record per sample); slime 624b824,
slime/observability/rollout_data_utils.py:140-153 (``torch.save({"rollout_id", "samples":
[Sample.to_dict()]})``) with slime/utils/types.py:93-227 (the fields of ``Sample`` and ``to_dict``,
``status`` as its text value). The statistics are checked against sums written out by hand, and
every refusal stops with exit status 2 and one line before anything is written.
"""

from __future__ import annotations

import json
import pickle
from enum import Enum
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("pyarrow")
torch = pytest.importorskip("torch")

from analyze_dumps import (  # noqa: E402
    REWARDS,
    analyze_cli,
    areal_records,
    areal_task,
    refused,
    slime_file,
    slime_sample,
    slime_samples,
    write_jsonl,
)
from fade.analyze import read_run  # noqa: E402


def by_hand(groups: list[list[float]]) -> dict:
    """The statistics of one step of binary rewards, summed out without fade: the zero-spread share
    (rollouts in groups of one reward over all rollouts), the mean reward, the mean solve rate."""
    n = sum(len(g) for g in groups)
    return {"zero_spread_share": sum(len(g) for g in groups if len(set(g)) == 1) / n,
            "mean_reward": sum(sum(g) for g in groups) / n,
            "solve_rate": sum(sum(g) / len(g) for g in groups) / len(groups),
            "num_groups": len(groups), "num_rollouts": n}


def checked(step: dict, groups: list[list[float]]) -> None:
    for name, value in by_hand(groups).items():
        assert step[name] == pytest.approx(value), name


# -- AReaL -----------------------------------------------------------------------------------------


def areal_log(log: Path) -> Path:
    """Two policy versions of a run, and an evaluation (eval-rollout/) that would change every number if
    read. Task 1X and task 2X ask problem X: the run asks its problems again at each version."""
    for task, rewards in enumerate(REWARDS, start=10):
        areal_task(log, 1, task, rewards, problem=task % 10)
    areal_task(log, 2, 20, [1.0, 1.0, 0.0, 1.0], skipped=(2,), problem=0)  # sample 2's completion was empty: 3 rows
    areal_task(log, 2, 21, [0.0, 1.0, 0.0, 1.0], order=[3, 1, 0, 2], problem=1)
    (log / "rollout" / "2" / "22.jsonl").touch()  # AReaL opens the file before skipping every sample
    for task in (10, 11):
        areal_task(log, 1, task, [1.0] * 8, folder="eval-rollout", problem=task % 10)
    return log


AREAL_STEPS = {1: REWARDS, 2: [[1.0, 1.0, 1.0], [0.0, 1.0, 0.0, 1.0]]}


def test_areal_statistics_are_the_hand_computed_ones(tmp_path, capsys):
    log = areal_log(tmp_path / "logs" / "exp" / "trial")
    code, steps, report, err = analyze_cli(capsys, log, tmp_path / "out")
    assert code == 0, err
    assert report["format"] == "areal" and [s["step"] for s in steps] == [1, 2]
    for step in steps:
        checked(step, AREAL_STEPS[step["step"]])
    # step 1: the four groups hold solve rates 0.75, 0, 1, 0.25
    assert steps[0]["zero_spread_share"] == 0.5 and steps[0]["mean_reward"] == 0.5
    assert steps[0]["solve_rate_histogram"]["0"] == 0.25 and steps[0]["solve_rate_histogram"]["[0.6,0.8)"] == 0.25
    # step 2: a group of 3 (all 1) and one of 4: 3 of 7 rollouts in zero-spread groups
    assert steps[1]["zero_spread_share"] == pytest.approx(3 / 7) and steps[1]["group_sizes"] == [3, 4]
    assert steps[1]["mean_reward"] == pytest.approx(5 / 7) and steps[1]["solve_rate"] == pytest.approx(0.75)
    notes = " ".join(report["notes"])
    assert "a step is a policy version folder" in notes and "not the training step" in notes
    assert "eval-rollout" in notes and "left out" in notes and "22.jsonl" in notes


def test_areal_reads_the_same_from_the_rollout_folder_and_with_format_named(tmp_path, capsys):
    log = areal_log(tmp_path / "trial")
    _, expected, _, _ = analyze_cli(capsys, log, tmp_path / "a")
    code, steps, _, err = analyze_cli(capsys, log / "rollout", tmp_path / "b", "--format", "areal")
    assert code == 0, err
    assert steps == expected
    refused(capsys, log, tmp_path / "c", "reads as a areal dump, not slime", flags=("--format", "slime"))
    # one version folder holds N.jsonl files, as a verl dump does: it is named as AReaL's, not read as verl's
    refused(capsys, log / "rollout" / "1", tmp_path / "d", "one version folder of AReaL's dump",
            "expected the folder holding it")


def test_areal_evaluation_is_never_read_as_training(tmp_path, capsys):
    log = areal_log(tmp_path / "trial")
    refused(capsys, log / "eval-rollout", tmp_path / "out", "eval-rollout", "evaluation rollouts",
            "expected the training ones")
    refused(capsys, log / "eval-rollout" / "1" / "10.jsonl", tmp_path / "out", "an evaluation's task file")
    code, steps, _, err = analyze_cli(capsys, log / "rollout" / "1" / "12.jsonl", tmp_path / "one")
    assert code == 0, err
    (step,) = steps
    assert step["step"] == 1
    checked(step, [REWARDS[2]])


@pytest.mark.parametrize("case, needles", [
    ("missing", ("1/11.jsonl:2", "no 'reward'", "expected AReaL's record")),
    ("text_reward", ("1/11.jsonl:2", "reward is '0.0'", "expected a finite number")),
    ("nested_reward", ("1/11.jsonl:2", "reward is {'value': 0.0}", "expected a finite number")),
    ("nan_reward", ("1/11.jsonl:2", "reward is nan", "expected a finite number")),
    ("huge_reward", ("1/11.jsonl:2", "expected a finite number")),
    ("bool_reward", ("1/11.jsonl:2", "reward is True", "expected a finite number")),
    ("text_sample", ("1/11.jsonl:2", "sample_idx is '1'", "expected an integer")),
    ("negative_sample", ("1/11.jsonl:2", "sample_idx is -1", "non-negative")),
    ("duplicate_sample", ("1/11.jsonl:3", "sample_idx 1 again (also line 2)", "expected each sample of a task once")),
    ("duplicate_key", ("1/11.jsonl:2", "key 'reward' twice in one object", "expected each key once")),
    ("other_task", ("1/11.jsonl:2", "task_id 12: expected 11", "as the file name says")),
    ("later_version", ("1/11.jsonl:2", "tail_version 2: expected at most 1")),
    ("not_an_object", ("1/11.jsonl:2", "a JSON list", "expected AReaL's record")),
    ("not_json", ("1/11.jsonl:2", "not valid JSON")),
    ("torn_older_version", ("1/11.jsonl:5", "the last line does not end the file")),
    ("blank", ("1/11.jsonl", "no records")),
    ("two_task_names", ("011.jsonl and 11.jsonl are both task 11",)),
    ("two_version_names", ("01 and 1 are both step 1", "expected one file per step")),
])
def test_areal_refusals_name_the_file_and_line_before_any_output(tmp_path, capsys, case, needles):
    log = areal_log(tmp_path / "trial")
    path = log / "rollout" / "1" / "11.jsonl"
    records = areal_records(11, 1, REWARDS[1], problem=1)
    second = records[1]
    edits = {
        "missing": lambda r: r.pop("reward"),
        "text_reward": lambda r: r.update(reward="0.0"),
        "nested_reward": lambda r: r.update(reward={"value": 0.0}),
        "bool_reward": lambda r: r.update(reward=True),
        "text_sample": lambda r: r.update(sample_idx="1"),
        "negative_sample": lambda r: r.update(sample_idx=-1),
        "other_task": lambda r: r.update(task_id=12),
        "later_version": lambda r: r.update(tail_version=2),
    }
    tail = ""
    if case in edits:
        edits[case](second)
    elif case == "nan_reward":
        second = json.dumps(second).replace('"reward": 0.0', '"reward": NaN')
    elif case == "huge_reward":
        second = json.dumps(second).replace('"reward": 0.0', '"reward": ' + "9" * 400)
    elif case == "duplicate_sample":
        records[2]["sample_idx"] = 1
    elif case == "duplicate_key":
        second = json.dumps(second).replace('"reward": 0.0', '"reward": 0.0, "reward": 1.0')
    elif case == "not_an_object":
        second = "[1, 2]"
    elif case == "not_json":
        second = '{"task_id": 11,'
    elif case == "torn_older_version":
        tail = '{"task_id": 11, "sample_idx": 4, "rew'
    records[1] = second
    write_jsonl(path, records, tail=tail)
    if case == "blank":
        path.write_text("\n\n")
    elif case == "two_task_names":
        write_jsonl(path.with_name("011.jsonl"), areal_records(11, 1, REWARDS[1], problem=1))
    elif case == "two_version_names":
        areal_task(log, 1, 10, REWARDS[0], problem=0).parent.rename(log / "rollout" / "01")
        areal_task(log, 1, 10, REWARDS[0], problem=0)
    refused(capsys, log, tmp_path / "out", *needles)


def test_areal_a_task_file_still_being_written_in_the_newest_version_is_skipped_with_a_warning(tmp_path, capsys):
    log = areal_log(tmp_path / "trial")
    write_jsonl(log / "rollout" / "2" / "23.jsonl", areal_records(23, 2, [1.0, 0.0], problem=3),
                tail='{"task_id": 23, "sam')
    code, steps, _, err = analyze_cli(capsys, log, tmp_path / "out")
    assert code == 0, err
    (warning,) = err.strip().splitlines()
    assert warning.startswith("fade: warning: ") and "23.jsonl" in warning and "still being written" in warning
    checked(steps[1], AREAL_STEPS[2])  # the whole task is left out, not read as a smaller group


# -- slime -----------------------------------------------------------------------------------------


# rollout 2: rollout 500 of group 5 was split into three parts (slime's agent trajectories: one
# rollout_id, the rollout's reward on each, slime/agent/trajectory.py:248-261, 339-340)
SLIME_STEPS = {1: REWARDS, 2: [[1.0, 0.0], [0.0, 0.0]]}


def slime_run(dump: Path) -> Path:
    """``--dump-details DUMP``: rollout_data/{id}.pt, an evaluation's eval_{id}.pt, the trainer's train_data/."""
    data = dump / "rollout_data"
    slime_file(data / "1.pt", 1, slime_samples(REWARDS, shuffle=0))
    parts = [slime_sample(5, 500, 1.0, rollout_id=500) for _ in range(3)]
    slime_file(data / "2.pt", 2, [parts[0], slime_sample(5, 501, 0.0), parts[1], parts[2]]
               + slime_samples([[0.0, 0.0]], first_group=6))
    for rollout in (1, 2):  # every sample solved: read as training, it would change every number
        slime_file(data / f"eval_{rollout}.pt", rollout, slime_samples([[1.0] * 8]))
    slime_file(dump / "train_data" / "1.pt", 1, [])
    return dump


def test_slime_statistics_are_the_hand_computed_ones(tmp_path, capsys):
    dump = slime_run(tmp_path / "details")
    code, steps, report, err = analyze_cli(capsys, dump, tmp_path / "out")
    assert code == 0, err
    assert report["format"] == "slime" and [s["step"] for s in steps] == [1, 2]
    for step in steps:
        checked(step, SLIME_STEPS[step["step"]])
    assert steps[0]["zero_spread_share"] == 0.5 and steps[0]["mean_reward"] == 0.5 and steps[0]["solve_rate"] == 0.5
    # rollout 2: groups [1, 0] (the three parts counted once) and [0, 0]
    assert steps[1]["num_rollouts"] == 4 and steps[1]["zero_spread_share"] == 0.5 and steps[1]["mean_reward"] == 0.25
    notes = " ".join(report["notes"])
    assert "2 evaluation file(s)" in notes and "eval_1.pt" in notes
    assert "2 sample(s) were further parts of a rollout" in notes


def test_slime_reads_the_same_from_rollout_data_one_file_and_with_format_named(tmp_path, capsys):
    dump = slime_run(tmp_path / "details")
    _, expected, _, _ = analyze_cli(capsys, dump, tmp_path / "a")
    code, steps, _, err = analyze_cli(capsys, dump / "rollout_data", tmp_path / "b", "--format", "slime")
    assert code == 0, err
    assert steps == expected
    code, steps, _, err = analyze_cli(capsys, dump / "rollout_data" / "2.pt", tmp_path / "c")
    assert code == 0, err
    assert steps == expected[1:]
    refused(capsys, dump, tmp_path / "d", "reads as a slime dump, not areal", flags=("--format", "areal"))
    refused(capsys, dump / "rollout_data" / "eval_1.pt", tmp_path / "e", "eval_1.pt", "an evaluation's file")
    # slime's own tests and examples format a template of their own (rollout_{rollout_id}.pt)
    for rollout in (1, 2):
        (dump / "rollout_data" / f"{rollout}.pt").rename(dump / "rollout_data" / f"rollout_{rollout}.pt")
        (dump / "rollout_data" / f"eval_{rollout}.pt").rename(dump / "rollout_data" / f"rollout_eval_{rollout}.pt")
    code, steps, _, err = analyze_cli(capsys, dump, tmp_path / "f")
    assert code == 0, err
    assert steps == expected


def test_slime_reward_dicts_are_read_at_the_key_named(tmp_path, capsys):
    samples = slime_samples(REWARDS)
    for s in samples:
        s["reward"] = {"accuracy": s["reward"], "length_penalty": -0.5}
    target = slime_file(tmp_path / "rollout_data" / "3.pt", 3, samples)
    refused(capsys, target, tmp_path / "out", "3.pt: sample 1", "reward is a dict", "--reward-column KEY")
    refused(capsys, target, tmp_path / "out", "sample 1: reward has no 'acc'", flags=("--reward-column", "acc"))
    refused(capsys, target, tmp_path / "out", "expected one key", flags=("--reward-column", "accuracy,length"))
    code, steps, _, err = analyze_cli(capsys, target, tmp_path / "ok", "--reward-column", "accuracy")
    assert code == 0, err
    checked(steps[0], REWARDS)
    plain = slime_file(tmp_path / "plain" / "3.pt", 3, slime_samples(REWARDS))
    refused(capsys, plain, tmp_path / "out", "not a dict", flags=("--reward-column", "accuracy"))


class Payload:
    """An object whose unpickling writes ``marker``: what an arbitrary unpickle of a hostile file runs."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return exec, (f"open({str(self.marker)!r}, 'w').write('unpickled')",)


class Status(Enum):
    COMPLETED = "completed"


def test_slime_files_holding_objects_are_refused_and_never_unpickled(tmp_path, capsys):
    control = tmp_path / "control"
    pickle.loads(pickle.dumps(Payload(control)))  # the payload is live: unpickled, it writes its marker
    assert control.read_text() == "unpickled"
    marker = tmp_path / "marker"
    samples = slime_samples(REWARDS)
    samples[2]["metadata"] = {"hook": Payload(marker)}
    target = slime_file(tmp_path / "hostile" / "rollout_data" / "1.pt", 1, samples)
    line = refused(capsys, target.parents[1], tmp_path / "out", "1.pt", "holds exec", "not unpickled")
    assert str(target) in line
    assert not marker.exists()
    for name, value in (("enum", Status.COMPLETED), ("numpy", np.float64(1.0))):
        samples = slime_samples(REWARDS)
        samples[0]["status" if name == "enum" else "reward"] = value
        target = slime_file(tmp_path / name / "1.pt", 1, samples)
        refused(capsys, target, tmp_path / "out", "1.pt", "Status" if name == "enum" else "numpy", "not unpickled")


def torn(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


@pytest.mark.parametrize("case, needles", [
    ("missing", ("1.pt: sample 3", "no 'reward'", "Sample.to_dict()")),
    ("text_group", ("1.pt: sample 3", "group_index is '0'", "expected an integer")),
    ("no_group", ("1.pt: sample 3", "group_index is None", "expected an integer")),
    ("float_index", ("1.pt: sample 3", "index is 2.0", "expected an integer")),
    ("huge_index", ("1.pt: sample 3", f"index is {2**70}", "expected an integer within int64")),
    ("no_reward", ("1.pt: sample 3", "reward is None", "expected a finite number")),
    ("nan_reward", ("1.pt: sample 3", "reward is nan", "expected a finite number")),
    ("bool_reward", ("1.pt: sample 3", "reward is True", "expected a finite number")),
    ("tensor_reward", ("1.pt: sample 3", "reward is tensor([1.])", "expected a finite number")),
    ("status", ("1.pt: sample 3", "status is 'done'", "Sample.Status's values")),
    ("duplicate", ("1.pt: sample 3", "index 0 again (also sample 1)", "expected each sample once")),
    ("parts_disagree", ("1.pt: sample 6: rollout_id 7 with group_index 1", "sample 3 with group_index 0",
                        "expected the parts of one rollout in one group")),
    ("not_a_sample", ("1.pt: sample 3 is a list", "Sample.to_dict()")),
    ("other_rollout", ("1.pt: rollout_id 4: expected 1", "as the file name says")),
    ("no_samples", ("1.pt: samples is []", "non-empty list")),
    ("not_a_dump", ("1.pt: holds Tensor", "a dict of rollout_id and samples")),
    ("truncated_older", ("1.pt", "not a complete torch file", "only the newest file")),
    ("garbage", ("1.pt", "not a torch file", "a Python pickle")),
    ("two_names", ("01.pt and 1.pt are both step 1",)),
    ("two_templates", ("two templates",)),
    ("only_evaluation", ("only evaluation files", "eval_1.pt")),
])
def test_slime_refusals_name_the_file_and_sample_before_any_output(tmp_path, capsys, case, needles):
    data = tmp_path / "details" / "rollout_data"
    samples = slime_samples(REWARDS)
    third = samples[2]
    edits = {
        "missing": lambda s: s.pop("reward"),
        "text_group": lambda s: s.update(group_index="0"),
        "no_group": lambda s: s.update(group_index=None),
        "float_index": lambda s: s.update(index=2.0),
        "huge_index": lambda s: s.update(index=2**70),
        "no_reward": lambda s: s.update(reward=None),
        "nan_reward": lambda s: s.update(reward=float("nan")),
        "bool_reward": lambda s: s.update(reward=True),
        "tensor_reward": lambda s: s.update(reward=torch.tensor([1.0])),  # a 0-d tensor is its number
        "status": lambda s: s.update(status="done"),
        "duplicate": lambda s: s.update(index=0),
    }
    rollout, body = 1, None
    if case in edits:
        edits[case](third)
    elif case == "parts_disagree":
        third["rollout_id"] = samples[5]["rollout_id"] = 7  # the same rollout in groups 0 and 1
    elif case == "not_a_sample":
        samples[2] = [third]
    elif case == "other_rollout":
        rollout = 4
    elif case == "no_samples":
        samples = []
    elif case == "not_a_dump":
        body = torch.zeros(3)
    if body is not None:
        data.mkdir(parents=True)
        torch.save(body, data / "1.pt")
    else:
        slime_file(data / "1.pt", rollout, samples)
    slime_file(data / "2.pt", 2, slime_samples(REWARDS))
    if case == "truncated_older":
        torn(data / "1.pt")
    elif case == "garbage":
        (data / "1.pt").write_bytes(b"\x80\x04not a torch file" * 8)
    elif case == "two_names":
        slime_file(data / "01.pt", 1, slime_samples(REWARDS))
    elif case == "two_templates":
        slime_file(data / "rollout_3.pt", 3, slime_samples(REWARDS))
    elif case == "only_evaluation":
        for name in ("1.pt", "2.pt"):
            (data / name).rename(data / f"eval_{name}")
    refused(capsys, data.parent, tmp_path / "out", *needles)


def test_slime_a_newest_file_cut_short_is_skipped_with_a_warning(tmp_path, capsys):
    data = tmp_path / "rollout_data"
    slime_file(data / "1.pt", 1, slime_samples(REWARDS))
    torn(slime_file(data / "2.pt", 2, slime_samples(REWARDS)))
    code, steps, _, err = analyze_cli(capsys, data, tmp_path / "out")
    assert code == 0, err
    (warning,) = err.strip().splitlines()
    assert warning.startswith("fade: warning: ") and "2.pt" in warning and "still being written" in warning
    assert [s["step"] for s in steps] == [1]
    with pytest.warns(RuntimeWarning, match="2.pt: skipped the newest file"):
        read_run(data)
