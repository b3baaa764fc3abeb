"""The dumps fade analyze's tests read, each built once, as its engine writes it.

The test files of ``fade analyze`` (tests/test_analyze*.py) import their dumps from here: rows and
files of the generic layout, verl, NeMo-RL, prime-rl (its per-step traces and its trace stream),
TRL, ROLL, AReaL and slime, and the JSON-lines writer under them; and how a test runs ``fade analyze``
through its command line (:func:`analyze_cli`, :func:`analyzed`, :func:`refused`) with the hostile
values every reader meets (:data:`HUGE`, :data:`HUGER`, :data:`DEEP`). Where two test files write one
engine's dump in two shapes, the builder takes the difference as a parameter, so that every test
reads the bytes it was written against. A run whose numbers a test works out by hand (which groups,
which steps) stays beside that test, built from these. None of this imports pyarrow or torch until a
builder needs it: a test file that skips without them imports this module all the same.
"""

from __future__ import annotations

import json
import random
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pytest

if TYPE_CHECKING:
    import pyarrow as pa

#: One step's rewards, four groups of four: solve rates 3/4, 0, 1 and 1/4, two groups without spread.
REWARDS = [[1.0, 0.0, 1.0, 1.0], [0.0, 0.0, 0.0, 0.0], [1.0, 1.0, 1.0, 1.0], [0.0, 1.0, 0.0, 0.0]]


def write_jsonl(path: Path, lines: list | bytes, *, tail: str = "") -> Path:
    """A JSON-lines file, its folders made: each item a dict (dumped) or a line of text as it is, then
    ``tail`` (a last line cut short, say); ``bytes`` written as they are."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(lines if isinstance(lines, bytes) else
                     ("".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines) + tail).encode())
    return path


# -- the generic layout: a row per rollout -----------------------------------------------------------


def generic_rows(step: int = 1, keys: list | None = None, rewards: list[float] | None = None) -> list[dict]:
    """A row per rollout of one step: its ``group_id`` from ``keys`` and its reward. Without keys
    and rewards, REWARDS, group g keyed ``g{g}``."""
    if keys is None and rewards is None:
        keys = [f"g{g}" for g, group in enumerate(REWARDS) for _ in group]
        rewards = sum(REWARDS, [])
    return [{"step": step, "group_id": k, "reward": r} for k, r in zip(keys, rewards)]


def generic_dump(path: Path, run: dict | None = None, *, scale: float = 1.0) -> Path:
    """A generic JSON-lines dump of ``run`` (step -> [(prompt_id, rewards of its group)], in the order
    written; REWARDS at steps 1 and 2 by default); ``scale`` != 1 makes the rewards other than 0 or 1
    (no solve rate, no pass@k, no per-prompt view)."""
    run = {s: list(enumerate(REWARDS)) for s in (1, 2)} if run is None else run
    return write_jsonl(path, [{"step": s, "prompt_id": key, "reward": r * scale}
                              for s, groups in run.items() for key, rewards in groups for r in rewards])


# -- verl: rollout_data_dir/{step}.jsonl ---------------------------------------------------------------


def verl_rows(step: int = 1, rewards: list[list[float]] = REWARDS, *, uid: bool = True) -> list[dict]:
    """verl's rows of one step, group g's rollout s a row of prompt ``prompt {g}``; with ``uid``
    (verl's v1 trainer) each row's uid ``uuid{step}x{g}_{s}_0``, without it the legacy layout."""
    rows = []
    for g, group in enumerate(rewards):
        for s, r in enumerate(group):
            row = {"input": f"prompt {g}", "output": f"answer {s}", "gts": "1", "score": r, "step": step}
            if uid:
                row["uid"] = f"uuid{step}x{g}_{s}_0"
            rows.append(row)
    return rows


def verl_dump(folder: Path, line: int | None = None, text: str | None = None) -> Path:
    """verl's 1.jsonl of REWARDS, line ``line`` (1-based) replaced by ``text``."""
    lines: list = verl_rows()
    if line is not None:
        lines[line - 1] = text
    write_jsonl(folder / "1.jsonl", lines)
    return folder


# -- NeMo-RL: train_data_step{N}.jsonl -----------------------------------------------------------------


def nemo_rows() -> list[dict]:
    """NeMo-RL's rows of REWARDS: the message contents, the reward, token advantages and loss mask."""
    return [{"content": [f"q{g}", f"a{i}"], "rewards": r, "advantages": [0.0, r - 0.5, r - 0.5],
             "token_loss_mask": [0, 1, 1]} for g, group in enumerate(REWARDS) for i, r in enumerate(group)]


# -- prime-rl: rollouts/step_{N}/train/effective/traces.jsonl ----------------------------------------


def prime_rows() -> list[dict]:
    """prime-rl's episodes of REWARDS at step 1, one trace each, group g ``g{g}`` of task ``t{g}``."""
    return [{"group": {"id": f"g{g}"}, "task": {"key": f"t{g}"}, "run": {"work": {"step": 1}},
             "traces": [{"rewards": {"acc": {"score": r, "weight": 1.0}}}]}
            for g, group in enumerate(REWARDS) for r in group]


def prime_dump(folder: Path, lines: list) -> Path:
    """``lines`` as step 1's traces.jsonl under ``folder``."""
    write_jsonl(folder / "rollouts" / "step_1" / "train" / "effective" / "traces.jsonl", lines)
    return folder


# -- prime-rl's trace stream ---------------------------------------------------------------------------
#
# Under the run's output folder the file monitor writes monitors/file/traces/ (prime-rl
# monitors/file/traces/__init__.py:13-30): stream/NNNNN.jsonl, a record per episode, each compact
# JSON with its newline (monitor.py:143-144, orjson OPT_APPEND_NEWLINE), numbered f"{n:05d}" and
# sealed as .jsonl.zst (chunks.py:28-29, 62-72); stream.index.jsonl, the index_row of each record,
# written after it (monitor.py:145-146; index.py:49-151); annotations/<producer>/NNNNN.jsonl and
# annotations/<producer>.index.jsonl (monitor.py:154-170; update.py:21-25). A record is verifiers'
# Episode.to_record() (episode.py:86-104, 149-155: None fields left out) with the orchestrator's
# arrival stamps on each trace's info (annotations.py:20-30) and the dispatcher's group and run
# (dispatcher.py:635-646: group.id a uuid, run.work.step the step the group opened at).


def compact_line(obj: dict) -> bytes:
    """``obj`` as the monitor writes a line: compact JSON and its newline."""
    return json.dumps(obj, separators=(",", ":")).encode() + b"\n"


def episode(step: int, group: str, rewards: list[dict] | None, *, kind: str = "train", key: str = "t",
            arrival: int | None = None) -> dict:
    """One episode record; ``rewards``: a reward map per trace (None: an errored rollout, no trace)."""
    traces = []
    for r in rewards or []:
        traces.append({
            "id": uuid.uuid4().hex, "task": {"type": "Task", "data": {"idx": 0}, "key": key},
            "nodes": [{"message": {"role": "user", "content": "q"}, "token_ids": [1], "mask": [False]},
                      {"message": {"role": "assistant", "content": "a"}, "token_ids": [2, 3], "mask": [True, True],
                       "parent": 0, "sampled": True}],
            "rewards": r, "metrics": {}, "ok": True, "stop_condition": "completed",
            "info": {"kind": kind, "dispatch": {"step": step, "time": 1.0},
                     "arrival": {"step": step if arrival is None else arrival, "time": 2.0}},
        })
    return {"id": uuid.uuid4().hex, "env": {"id": "math", "name": "math"},
            "task": {"type": "Task", "data": {"idx": 0}, "key": key}, "group": {"id": group},
            "run": {"type": "train", "id": "run", "work": {"type": kind, "step": step,
                                                           "policy": {"start": max(step - 1, 0), "end": step}}},
            "ok": rewards is not None, "errors": [] if rewards is not None else [{"type": "Error", "message": "x"}],
            "traces": traces}


def scored(score, weight=1.0) -> dict:
    return {"correct": {"score": score, "weight": weight}}


def index_row(line: int, record: dict, chunk: int, offset: int) -> dict:
    """index.py:145-151: summarize_episode without its reward/metric/timing maps, and the chunk."""
    traces = record.get("traces") or []
    sums = [sum((r.get("score") or 0) * (r.get("weight") if r.get("weight") is not None else 1)
                for r in t["rewards"].values() if isinstance(r, dict) and isinstance(r.get("score"), (int, float)))
            for t in traces if t.get("rewards")]
    info = (traces or [{}])[0].get("info") or {}
    work = (record.get("run") or {}).get("work") or {}
    return {"cost": None, "line": line, "offset": offset, "id": record["id"],
            "kind": info.get("kind") or work.get("type") or "eval", "trace_ids": [t["id"] for t in traces],
            "env": "math", "group": (record.get("group") or {}).get("id"), "ok": record["ok"],
            "num_errors": len(record["errors"]), "reward": sum(sums) / len(sums) if sums else None,
            "advantage": None, "input_tokens": 1, "output_tokens": 2, "turns": 1, "branches": 1,
            "stop_condition": "completed", "truncated": False, "dispatch": (info.get("dispatch") or {}).get("time"),
            "arrival": (info.get("arrival") or {}).get("time"), "duration": 1.0, "chunk": chunk}


def write_stream(run: Path, records: list[dict], *, per_chunk: int = 4, advantages: dict[str, float] | None = None,
                 ship: int = 1) -> Path:
    """The file monitor's folders for ``records`` in arrival order, ``per_chunk`` to a chunk; the
    orchestrator's ship stamps carry ``advantages`` (trace id -> value) at step ``ship``."""
    traces = run / "monitors" / "file" / "traces"
    (traces / "stream").mkdir(parents=True)
    chunks: list[bytearray] = []
    index = bytearray()
    for line, record in enumerate(records, start=1):
        if (line - 1) % per_chunk == 0:
            chunks.append(bytearray())
        offset = len(chunks[-1])
        chunks[-1] += compact_line(record)
        index += compact_line(index_row(line, record, len(chunks) - 1, offset))
    for number, data in enumerate(chunks):
        (traces / "stream" / f"{number:05d}.jsonl").write_bytes(bytes(data))
    (traces / "stream.index.jsonl").write_bytes(bytes(index))
    if advantages:
        (traces / "annotations" / "orchestrator").mkdir(parents=True)
        stream, rows = bytearray(), bytearray()
        for tid, value in advantages.items():
            update = {"version": 1, "trace_id": tid,  # update.py make_update; annotations.py:40-42 the stamp
                      "info": {"effective": True, "ship": {"step": ship, "time": 3.0}, "advantage": value},
                      "branches": [{"index": 0, "advantages": [None, value, value]}]}
            rows += compact_line({"trace_id": tid, "chunk": 0, "offset": len(stream), "info": update["info"]})
            stream += compact_line(update)
        (traces / "annotations" / "orchestrator" / "00000.jsonl").write_bytes(bytes(stream))
        (traces / "annotations" / "orchestrator.index.jsonl").write_bytes(bytes(rows))
    return traces


# -- TRL: completions/completions_NNNNN.parquet and trainer_state.json --------------------------------


def trl_columns(step: int, prompts: list[str], rewards: list[float], size: int, *,
                advantages: list[float] | None = None) -> dict[str, list]:
    """The columns of one TRL completions file, one reward function ``acc``: advantages centred on each
    group of ``size`` consecutive rows (a partial group's last rows the reward less 0.5)."""
    r = np.asarray(rewards, dtype=np.float64)
    if advantages is None:
        whole = r[: r.size // size * size].reshape(-1, size)
        advantages = np.r_[(whole - whole.mean(1, keepdims=True)).ravel(), r[whole.size:] - 0.5].tolist()
    return {"step": [step] * r.size, "prompt": prompts, "completion": ["x"] * r.size, "acc": r.tolist(),
            "advantage": advantages}


def write_trl(path: Path, step: int, prompts: list[str], rewards: list[float], size: int, *,
              advantages: list[float] | None = None) -> Path:
    """One TRL completions parquet of :func:`trl_columns`."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table(trl_columns(step, prompts, rewards, size, advantages=advantages)), path)
    return path


def trl_table(**columns) -> pa.Table:
    """Step 1 of REWARDS as TRL's columns, prompt ``p{g}`` in groups of 4; ``columns`` replace or add columns."""
    import pyarrow as pa

    base = trl_columns(1, [f"p{i // 4}" for i in range(16)], sum(REWARDS, []), 4)
    return pa.table({**base, **columns})


def trl_table_dump(folder: Path, table: pa.Table | None = None, state: str | None = None) -> Path:
    """A TRL output folder of one file, completions/completions_00001.parquet holding ``table``
    (:func:`trl_table` by default), and trainer_state.json the text ``state`` where given."""
    import pyarrow.parquet as pq

    (folder / "completions").mkdir(parents=True, exist_ok=True)
    pq.write_table(trl_table() if table is None else table, folder / "completions" / "completions_00001.parquet")
    if state is not None:
        (folder / "trainer_state.json").write_text(state)
    return folder


def trl_dump(root: Path, steps: tuple[int, ...] = (1, 2), *, extras: tuple[str, ...] = (),
             rewards: dict[str, float] | None = None, record: bool = True, eval_steps: tuple[int, ...] = (),
             repeat: dict[int, int] | None = None) -> Path:
    """A TRL output folder as GRPOTrainer.log writes it: completions/completions_NNNNN.parquet with
    step, prompt, completion, a column per reward function, the log_extra columns (``extras``:
    the text ``math_reason``, the integer ``num_tokens``, the float ``length_ratio``) and
    advantage; with ``record``, trainer_state.json, whose log_history names the reward functions
    (``rewards/NAME/mean``) and each evaluation (``eval_*`` at its step). ``rewards`` weights the
    columns: {"acc": 1.0} is one reward function; ``repeat`` writes step s's rows again at step t."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rewards = rewards or {"acc": 1.0}
    (root / "completions").mkdir(parents=True, exist_ok=True)
    base = np.array(sum(REWARDS, []))
    rows = {}
    logged = {"math_reason": ["ok"] * base.size, "num_tokens": list(range(base.size)),
              "length_ratio": np.linspace(0.1, 0.9, base.size).tolist()}
    for s in steps:
        r = np.roll(base, s)  # another batch each step
        rows[s] = {"step": [s] * r.size, "prompt": [f"p{i // 4}" for i in range(r.size)],
                   "completion": ["x" * (i % 3) for i in range(r.size)],
                   **{name: (r * w).tolist() for name, w in rewards.items()},
                   **{name: logged[name] for name in extras},
                   "advantage": (r - r.reshape(-1, 4).mean(1).repeat(4)).tolist()}
    for t, s in (repeat or {}).items():
        rows[t] = {**rows[s], "step": [t] * len(rows[s]["step"])}
    for s, table in rows.items():
        pq.write_table(pa.table(table), root / "completions" / f"completions_{s:05d}.parquet")
    if record:
        history = []
        for s in sorted(rows):
            history.append({"step": s, "loss": 0.0, "frac_reward_zero_std": 0.5,
                            **{f"rewards/{name}/mean": 0.5 for name in rewards}})
            if s in eval_steps:
                history.append({"step": s, "eval_loss": 0.0, **{f"eval_rewards/{name}/mean": 0.5 for name in rewards}})
        (root / "trainer_state.json").write_text(json.dumps({"global_step": max(rows), "log_history": history}))
    return root


# -- ROLL: rollout_dump_data.step_{N}.jsonl, one JSON object of columns --------------------------------
#
# roll/pipeline/rlvr/utils.py (alibaba/ROLL 8eb27cc): dump_rollout_to_specific_path (55-72) takes the
# batch's non-tensor columns (the dataset's), adds responses (decoded), scores
# (data.batch["scores"].tolist()), sampling_params (json.dumps(meta_info) on every row) and
# global_step; write_to_json_process (37-45) keeps the COLUMMNS_CONFIG columns (19-35) and writes
# rollout_dump_data.step_{global_step}.jsonl, mode "w", json.dumps(data, ensure_ascii=False) + "\n".
# The batch is each domain's, concatenated (rlvr_pipeline.py:542-556), a prompt's
# num_return_sequences responses together (generate_scheduler.py:394-396, 703-721).


def roll_columns(step: int, prompts: list[tuple[str, object, list[float]]], *, difficulty: str | None = None,
                 temperature: float | None = None) -> dict[str, list]:
    """The columns of one step, a value per response: ``prompts`` is (domain, id, scores of its
    responses) in batch order. ``difficulty``: the dataset's difficulty column, where it has one;
    ``temperature``: the sampling's, in the meta info, where the run sets one."""
    generation = {"num_return_sequences": 4, **({} if temperature is None else {"temperature": temperature})}
    sampling = json.dumps({"global_step": 0, "generation_config": generation})
    names = ("id", "source", "difficulty", "prompt", "messages", "ground_truth", "tag", "domain", "responses",
             "scores", "sampling_params", "global_step")
    cols: dict[str, list] = {k: [] for k in names if k != "difficulty" or difficulty is not None}
    for domain, pid, scores in prompts:
        for s in scores:
            row = {"id": pid, "source": "deepmath", "difficulty": difficulty, "prompt": f"question {pid}",
                   "messages": json.dumps([{"role": "user", "content": f"question {pid}"}]), "ground_truth": "42",
                   "tag": domain, "domain": domain, "responses": f"answer {s}", "scores": s,
                   "sampling_params": sampling, "global_step": step}
            for k in cols:
                cols[k].append(row[k])
    return cols


def write_roll(folder: Path, step: int | str, body: dict | str | bytes) -> Path:
    """The step's file as ROLL writes it, mode "w", one json.dumps line (utils.py:37-45) of the
    columns ``body``; text or bytes as they are."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"rollout_dump_data.step_{step}.jsonl"
    path.write_bytes(body if isinstance(body, bytes) else
                     (body if isinstance(body, str) else json.dumps(body, ensure_ascii=False) + "\n").encode())
    return path


# -- AReaL: rollout/<version>/<task_id>.jsonl, a record per sample --------------------------------------
#
# AReaL 4aef98d, areal/infra/workflow_executor.py:818-921 (``_dump_trajectory``:
# ``rollout/<tail_version>/<task_id>.jsonl``, one record per sample).


def areal_records(task: int, version: int, rewards: list[float], *, skipped: tuple[int, ...] = (),
                  problem: int | None = None) -> list[dict]:
    """A task's records as ``_dump_trajectory`` writes them (workflow_executor.py:887-920): one per
    sample ``i`` of the task's batch, none for a sample with an empty completion (``skipped``);
    head_version -1 (the prompt tokens' placeholder version, rlvr.py:168), tail_version the folder's.
    The prompt names ``problem``, the task id where None."""
    return [{"task_id": task, "sample_idx": i, "seqlen": 12, "prompt_len": 5, "head_version": -1,
             "tail_version": version, "reward": r, "prompt": f"<|user|>problem {task if problem is None else problem}",
             "completion": f"answer {i}"}
            for i, r in enumerate(rewards) if i not in skipped]


def areal_task(log: Path, version: int, task: int, rewards: list[float], *, folder: str = "rollout",
               skipped: tuple[int, ...] = (), order: list[int] | None = None, problem: int | None = None) -> Path:
    """The task's file under the log folder (``folder``: eval-rollout for an evaluation's), its records
    in ``order`` where given."""
    records = areal_records(task, version, rewards, skipped=skipped, problem=problem)
    if order is not None:
        records = [records[i] for i in order]
    return write_jsonl(log / folder / str(version) / f"{task}.jsonl", records)


# -- slime: rollout_data/{rollout_id}.pt, torch.save({"rollout_id", "samples"}) ------------------------
#
# slime 624b824, slime/observability/rollout_data_utils.py:140-153 (``torch.save({"rollout_id",
# "samples": [Sample.to_dict()]})``) with slime/utils/types.py:93-227 (the fields of ``Sample`` and
# ``to_dict``, ``status`` as its text value). A test that builds one is skipped where torch is not
# installed.


def slime_sample(group_index: int, index: int, reward, *, prompt: str = "", rollout_id: int | None = None,
                 status: str = "completed", abridged: bool = False, **fields) -> dict:
    """``Sample.to_dict()`` (slime/utils/types.py:222-227) of a sample slime's default rollout made:
    every dataclass field (types.py:97-151) in its order, ``status`` as its value, the ``spec_info``
    and ``prefix_cache_info`` as dicts; a top-p replay's token ids as the int32 tensor
    ``decode_int32_meta_array`` makes (slime/utils/misc.py:29-30). ``abridged``: the fields the
    hostile tests break, a response of two tokens, the top-p replay's offsets a tensor."""
    torch = pytest.importorskip("torch")

    if abridged:
        sample = {"group_index": group_index, "index": index, "rollout_id": rollout_id,
                  "prompt": prompt or f"Solve problem {group_index}.", "tokens": [101, 102, 7, 8],
                  "multimodal_inputs": None, "response": " 7 8", "response_length": 2, "label": str(group_index),
                  "reward": reward, "loss_mask": [1, 1], "weight_versions": ["3"], "rollout_log_probs": [-0.5, -0.25],
                  "rollout_top_p_token_offsets": torch.tensor([0, 1, 2]), "remove_sample": False, "status": status,
                  "metadata": {"source_name": "math"}, "spec_info": {"spec_accept_token_num": 0},
                  "prefix_cache_info": {"cached_tokens": 0}}
        sample.update(fields)
        return sample
    tokens = [101, 102, 103, 7, 8, 9]
    sample = {
        "group_index": group_index, "index": index, "rollout_id": rollout_id,
        "prompt": prompt or f"Solve problem {group_index}.", "tokens": tokens, "multimodal_inputs": None,
        "multimodal_train_inputs": None, "multimodal_train_input_id": None, "apply_chat_template_kwargs": {},
        "response": " 7 8 9", "response_length": 3, "label": str(group_index), "reward": reward,
        "loss_mask": [1, 1, 1], "weight_versions": ["3"], "rollout_log_probs": [-0.5, -0.25, -0.125],
        "rollout_top_p_token_ids": torch.frombuffer(bytearray(np.arange(3, dtype=np.int32).tobytes()),
                                                    dtype=torch.int32),
        "rollout_top_p_token_offsets": torch.tensor([0, 1, 2, 3], dtype=torch.int32), "rollout_routed_experts": None,
        "remove_sample": False, "teacher_log_probs": None, "status": status,
        "metadata": {"source_name": "math", "tools": [{"name": "python", "parameters": {"code": {"type": "string"}}}],
                     "start_rollout_id": 1},
        "generate_function_path": None, "custom_rm_path": None, "train_metadata": None, "session_id": None,
        "non_generation_time": 0.0,
        "spec_info": {"spec_accept_token_num": 0, "spec_draft_token_num": 0, "spec_verify_ct": 0,
                      "completion_token_num": 0},
        "prefix_cache_info": {"cached_tokens": 0, "total_prompt_tokens": 3},
    }
    sample.update(fields)
    return sample


def slime_samples(groups: list[list[float]], first_group: int = 0, *, shuffle: int | None = None,
                  abridged: bool = False) -> list[dict]:
    """Each group's samples, group ``first_group`` first, in order or shuffled with the seed ``shuffle``.
    A sample's index counts the batch from ``first_group * 100``; an abridged one's is
    ``group_index * 100`` and its place in the group."""
    samples, index = [], first_group * 100
    for g, rewards in enumerate(groups, start=first_group):
        for i, r in enumerate(rewards):
            samples.append(slime_sample(g, g * 100 + i if abridged else index, r, abridged=abridged))
            index += 1
    if shuffle is not None:
        random.Random(shuffle).shuffle(samples)
    return samples


#: No body given: slime_file saves the rollout_id and samples.
UNSET = object()


def slime_file(path: Path, rollout_id, samples, body: object = UNSET) -> Path:
    """As save_debug_rollout_data writes it (rollout_data_utils.py:144-153), or ``body`` saved as it is."""
    torch = pytest.importorskip("torch")

    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save({"rollout_id": rollout_id, "samples": samples} if body is UNSET else body, path)
    return path


# -- fade analyze through its command line ---------------------------------------------------------

#: An integer literal past the largest float (1e400 written out): json gives a Python int no float holds.
HUGE = "1" + "0" * 400
#: An integer literal past the digits Python converts from text (4300): json.loads raises ValueError.
HUGER = "1" + "0" * 5000
#: JSON nested past Python's parser (its recursion limit, 1000); pyarrow reads it.
DEEP = "[" * 5000 + "]" * 5000


def analyze_cli(capsys, target: Path, out: Path, *flags) -> tuple[int, list[dict], dict, str]:
    """``fade analyze target --out out`` through the command line: its exit status, steps.jsonl,
    report.json and stderr (no steps and no report where it failed)."""
    from fade.cli import main

    code = main(["analyze", str(target), "--out", str(out), "--quiet", "--no-figures", *map(str, flags)])
    err = capsys.readouterr().err
    if code != 0:
        return code, [], {}, err
    steps = [json.loads(line) for line in (out / "steps.jsonl").read_text().splitlines()]
    return code, steps, json.loads((out / "report.json").read_text()), err


def analyzed(capsys, target: Path, out: Path, *flags) -> tuple[list[dict], dict, str]:
    """``fade analyze target --out out``, which must succeed: the steps, the report and stderr."""
    code, steps, report, err = analyze_cli(capsys, target, out, *flags)
    assert code == 0, err
    return steps, report, err


def refused(capsys, target: Path, out: Path, *needles: str, flags: tuple = ()) -> str:
    """``fade analyze target`` stops with exit status 2 and one line ``fade: error: ...`` holding
    every one of ``needles``, and writes nothing: the line."""
    code, _, _, err = analyze_cli(capsys, target, out, *flags)
    assert code == 2, err
    (line,) = err.strip().splitlines()
    assert line.startswith("fade: error: ") and all(n in line for n in needles), line
    assert not out.exists()
    return line
