"""verl's rollout dump (``trainer.rollout_data_dir``, ``validation_data_dir``).

One ``{global_steps}.jsonl`` per step with ``input, output, gts, score, step``. The v1 trainer adds
``uid`` = ``{prompt}_{session}_{index}``: a group is the uid's prompt part, and a session's final
output (highest index) is its rollout, as verl's own GRPO takes it. The legacy trainer writes no
uid and reorders rows (batch balancing): a group is the prompt text.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from ..columns import arrow, encode_keys, read_jsonl, shown
from ..records import DumpError, RunRecords, StepBatch, dense_ids
from .base import Format, ReadOptions, numbered_files, step_files

__all__ = ["FORMAT"]

_VERL_FILE = re.compile(r"^(\d+)\.jsonl$")
_VERL_KEYS = frozenset({"input", "output", "score", "step"})


def _read_verl(where: Path, options: ReadOptions, progress) -> RunRecords:
    numbered = [(-1, where)] if where.is_file() else numbered_files(where, _VERL_FILE)
    layouts: dict[str, Path] = {}

    def read(n: int, p: Path, newest: bool) -> StepBatch:
        cols = read_jsonl(p, {"score": "float", "step": "int", "uid": "str", "input": "str"},
                          required=("score", "step", "input"), newest=newest)
        steps = np.unique(cols["step"])
        if steps.size != 1 or (n >= 0 and int(steps[0]) != n):
            raise DumpError(f"{p}: holds step(s) {', '.join(map(str, steps[:5]))}: expected only step {n}, "
                            "as verl names the file")
        uid = cols["uid"]
        layout = "v1" if uid.null_count == 0 else "legacy" if uid.null_count == len(uid) else "mixed"
        if layout == "mixed":
            raise DumpError(f"{p}: some lines have a uid and some not: expected one verl trainer's dump")
        layouts.setdefault(layout, p)
        if len(layouts) > 1:
            raise DumpError(f"{where}: a folder mixing v1 ({layouts['v1'].name}) and legacy ({layouts['legacy'].name}) "
                            "verl dumps: expected one run's files")
        rewards = cols["score"]
        if layout == "v1":
            rewards, groups, keys = _verl_v1_groups(p, uid, rewards, cols["input"])
        else:
            groups, keys = encode_keys(cols["input"])  # the legacy trainer reorders rows: group by prompt text
        return StepBatch(int(steps[0]), rewards, groups, prompt_keys=keys, source=str(p))

    steps = step_files(numbered, read, progress)
    # fade's verl trainer feeds FADE the actor/entropy verl computed for this very batch before its
    # advantage, logged under the same global_steps (fade.integrations.verl.trainer, _compute_advantage)
    run = RunRecords("verl" if "legacy" not in layouts else "verl-legacy", str(where), steps, entropy_feed="same-step")
    if "legacy" in layouts:
        run.notes.append("legacy verl dump (no uid): groups are the rollouts of one prompt text")
    return run


def _verl_v1_groups(p: Path, uids, rewards: np.ndarray, inputs):
    """verl v1: the uid's prompt part is the group; of a session's rows the highest index is its
    rollout (columnwise: the uid is split by pyarrow, and rows are dropped only where a session
    wrote several).

    verl writes each output once, under ``{uid}_{session_id}_{index}`` (verl 0.9,
    trainer/ppo/v1/agent_loop_tq.py, _agent_loop_postprocess), so a uid written twice is refused:
    kept or dropped, it would count by the rows beside it. The n sessions of a uid are spawned from
    one prompt (_run_prompt), so their first outputs (index 0) carry one prompt text; a later
    output carries its own ``prompt_ids`` (a multi-output agent loop's context), so only index 0
    is held to it.
    """
    pa = arrow()
    import pyarrow.compute as pc

    parts = pc.extract_regex(uids, r"^(?P<prompt>.+)_(?P<session>[^_]+)_(?P<index>[0-9]+)$")
    if parts.null_count:
        row = int(np.flatnonzero(parts.is_null().to_numpy(zero_copy_only=False))[0])
        raise DumpError(
            f"{p}: row {row + 1}: uid {shown(uids[row].as_py())}: expected verl's {{prompt}}_{{session}}_{{index}}"
        )
    prompt, prompt_names = encode_keys(pc.struct_field(parts, "prompt"))
    session, _ = encode_keys(pc.struct_field(parts, "session"))
    try:
        index = pc.cast(pc.struct_field(parts, "index"), pa.int64()).to_numpy(zero_copy_only=False)
    except pa.ArrowInvalid:
        index = pc.struct_field(parts, "index").to_pylist()
        digits = [d.lstrip("0") for d in index]  # an index of thousands of digits is past int() too
        big = next(i for i, d in enumerate(digits) if len(d) > 19 or int(d or "0") >= 2**63)
        raise DumpError(f"{p}: row {big + 1}: uid {shown(uids[big].as_py())}: expected an index within int64") from None
    order = np.lexsort((np.arange(len(prompt)), index, session, prompt))  # a uid's rows together, in file order
    same = (np.diff(prompt[order]) == 0) & (np.diff(session[order]) == 0) & (np.diff(index[order]) == 0)
    if same.any():
        first, again = (int(i) for i in order[np.flatnonzero(same)[0]:][:2])
        raise DumpError(f"{p}: rows {first + 1} and {again + 1}: uid {uids[again].as_py()!r} twice: expected each "
                        "{prompt}_{session}_{index} once, as verl writes each output")
    text, _ = encode_keys(inputs)
    head = np.flatnonzero(index == 0)
    _, at = np.unique(prompt[head], return_index=True)
    owner = np.full(len(prompt_names), -1)
    owner[prompt[head[at]]] = head[at]
    other = head[text[head] != text[owner[prompt[head]]]]
    if other.size:
        row, first = int(other[0]), int(owner[prompt[other[0]]])
        raise DumpError(f"{p}: row {row + 1}: uid {uids[row].as_py()!r} has another input than row {first + 1} of "
                        f"prompt {prompt_names[prompt[row]]!r}: expected one prompt text per uid prompt (the "
                        "sessions of one prompt)")
    rows = np.arange(len(rewards))
    if index.any():
        key = prompt * (int(session.max()) + 1) + session
        order = np.lexsort((index, key))  # by session, then index: the last of each session is its final output
        last = np.r_[key[order][1:] != key[order][:-1], True]
        rows = np.sort(order[last])
    groups, _ = dense_ids(prompt[rows])
    _, first = np.unique(groups, return_index=True)
    keys = inputs.take(pa.array(rows[first])).to_pylist()
    return rewards[rows], groups, keys




def _find(folder: Path) -> Path | None:
    return folder if numbered_files(folder, _VERL_FILE) else None


FORMAT = Format(
    name="verl",
    engine="verl 0.9.1",
    writer=("verl/trainer/ppo/v1/trainer_base.py:1226-1260 (_write_generations)",
            "verl/trainer/ppo/v1/trainer_base.py:1297-1340 (_log_rollout_data)",
            "verl/trainer/ppo/v1/agent_loop_tq.py:178-193 (the uid)",
            "verl/trainer/ppo/ray_trainer.py:454-477, 514-547 (the legacy trainer)"),
    layout="verl's N.jsonl",
    keys="verl's input/output/score/step",
    find=_find,
    claims=lambda path, keys: path.suffix.lower() in (".jsonl", ".json") and _VERL_KEYS <= keys,
    read=_read_verl,
)
