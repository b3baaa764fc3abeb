"""fade analyze on AReaL's rollout dumps, through the command line.

Each dump is written as the engine writes it, field for field from its writer: AReaL 4aef98d,
areal/infra/workflow_executor.py:818-921 (``_dump_trajectory``: ``rollout/<tail_version>/<task_id>.jsonl``,
one record per sample). The statistics are checked
against sums written out by hand, and every refusal stops with exit status 2 and one line before
anything is written.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("pyarrow")

from fade.cli import main  # noqa: E402

REWARDS = [[1.0, 0.0, 1.0, 1.0], [0.0, 0.0, 0.0, 0.0], [1.0, 1.0, 1.0, 1.0], [0.0, 1.0, 0.0, 0.0]]


def analyze_cli(capsys, path: Path, out: Path, *flags: str) -> tuple[int, list[dict], dict, str]:
    """``fade analyze`` through the command line: its exit status, steps.jsonl, report.json and stderr."""
    code = main(["analyze", str(path), "--out", str(out), "--quiet", "--no-figures", *flags])
    err = capsys.readouterr().err
    if code != 0:
        return code, [], {}, err
    steps = [json.loads(line) for line in (out / "steps.jsonl").read_text().splitlines()]
    return code, steps, json.loads((out / "report.json").read_text()), err


def refused(capsys, target: Path, out: Path, *needles: str, flags: tuple[str, ...] = ()) -> str:
    """``fade analyze target`` stops with exit status 2 and one error line holding ``needles``, and
    leaves ``out`` unwritten."""
    code = main(["analyze", str(target), "--out", str(out), "--quiet", "--no-figures", *flags])
    err = capsys.readouterr().err
    assert code == 2, err
    (line,) = err.strip().splitlines()
    assert line.startswith("fade: error: ") and all(n in line for n in needles), line
    assert not out.exists()
    return line


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


def areal_records(task: int, version: int, rewards: list[float], *, skipped: tuple[int, ...] = ()) -> list[dict]:
    """A task's records as ``_dump_trajectory`` writes them (workflow_executor.py:887-920): one per
    sample ``i`` of the task's batch, none for a sample with an empty completion (``skipped``);
    head_version -1 (the prompt tokens' placeholder version, rlvr.py:168), tail_version the folder's."""
    return [{"task_id": task, "sample_idx": i, "seqlen": 12, "prompt_len": 5, "head_version": -1,
             "tail_version": version, "reward": r, "prompt": f"<|user|>problem {task % 10}",
             "completion": f"answer {i}"}
            for i, r in enumerate(rewards) if i not in skipped]


def write_lines(path: Path, records: list, *, tail: str = "") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records) + tail)
    return path


def areal_task(log: Path, version: int, task: int, rewards: list[float], *, folder: str = "rollout",
               skipped: tuple[int, ...] = (), order: list[int] | None = None) -> Path:
    records = areal_records(task, version, rewards, skipped=skipped)
    if order is not None:
        records = [records[i] for i in order]
    return write_lines(log / folder / str(version) / f"{task}.jsonl", records)


def areal_log(log: Path) -> Path:
    """Two policy versions of a run, and an evaluation (eval-rollout/) that would change every number if read."""
    for task, rewards in enumerate(REWARDS, start=10):
        areal_task(log, 1, task, rewards)
    areal_task(log, 2, 20, [1.0, 1.0, 0.0, 1.0], skipped=(2,))  # sample 2's completion was empty: 3 rows
    areal_task(log, 2, 21, [0.0, 1.0, 0.0, 1.0], order=[3, 1, 0, 2])
    (log / "rollout" / "2" / "22.jsonl").touch()  # AReaL opens the file before skipping every sample
    for task in (10, 11):
        areal_task(log, 1, task, [1.0] * 8, folder="eval-rollout")
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
    refused(capsys, log, tmp_path / "c", "reads as a areal dump, not verl", flags=("--format", "verl"))
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
    ("duplicate_key", ("1/11.jsonl:2", "'reward' twice in one record", "expected each field once")),
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
    records = areal_records(11, 1, REWARDS[1])
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
    write_lines(path, records, tail=tail)
    if case == "blank":
        path.write_text("\n\n")
    elif case == "two_task_names":
        write_lines(path.with_name("011.jsonl"), areal_records(11, 1, REWARDS[1]))
    elif case == "two_version_names":
        areal_task(log, 1, 10, REWARDS[0]).parent.rename(log / "rollout" / "01")
        areal_task(log, 1, 10, REWARDS[0])
    refused(capsys, log, tmp_path / "out", *needles)


def test_areal_a_task_file_still_being_written_in_the_newest_version_is_skipped_with_a_warning(tmp_path, capsys):
    log = areal_log(tmp_path / "trial")
    write_lines(log / "rollout" / "2" / "23.jsonl", areal_records(23, 2, [1.0, 0.0]), tail='{"task_id": 23, "sam')
    code, steps, _, err = analyze_cli(capsys, log, tmp_path / "out")
    assert code == 0, err
    (warning,) = err.strip().splitlines()
    assert warning.startswith("fade: warning: ") and "23.jsonl" in warning and "still being written" in warning
    checked(steps[1], AREAL_STEPS[2])  # the whole task is left out, not read as a smaller group
