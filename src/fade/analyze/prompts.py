"""The per-prompt view of a run: how each prompt's solve rate moved over the steps it was seen at.

A step's groups name their prompt (``StepBatch.prompt_keys``), so a prompt sampled at several
steps has a trajectory: its solve rate at each of those steps, its rollouts there pooled (a prompt
in two groups of one step is one point, successes over rollouts of both). The run's steps are
split into up to :data:`MAX_WINDOWS` windows of consecutive steps, of sizes differing by at most
one: the step at position i of S (0-based, in step order) is in window floor(i * W / S), W =
min(10, S). A prompt is solved at a step, or in a window, when its pooled solve rate there is at
least :data:`SOLVED_RATE`. Over the windows where it was seen, a prompt seen at two steps or more
is in exactly one class (:data:`CLASSES`):

- ``always_solved``: solved in every one; ``never_solved``: in none;
- ``learned``: not solved in the first, solved in the last;
- ``forgotten``: solved in the first, not solved in the last;
- ``fluctuating``: solved in some but not all, the first and the last alike.

Its change is the pooled solve rate of its last window minus that of its first (None where both
are one window). The view needs prompt keys, a success rule and a prompt seen at two steps;
:func:`prompt_view` says in one line why there is no view where one is missing, so a report never
shows an empty table as if it were a finding (docs/analyze.md, "The per-prompt view").
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from typing import Any

import numpy as np

from .records import RunRecords

__all__ = ["CLASSES", "EXCERPT_CHARS", "HEATMAP_ROWS", "MAX_WINDOWS", "SOLVED_RATE", "TOP_CHANGED", "PromptView",
           "excerpt", "prompt_view"]

#: A prompt is solved at a step, or in a window, when its pooled solve rate there is at least this.
SOLVED_RATE = 0.5
#: The run is split into at most this many windows of consecutive steps.
MAX_WINDOWS = 10
#: The classes of a prompt seen at two steps or more: a partition of those prompts.
CLASSES = ("always_solved", "never_solved", "learned", "forgotten", "fluctuating")
#: The longest excerpt of a prompt's key, in characters (escapes included, the ellipsis too).
EXCERPT_CHARS = 80
#: How many of the prompts that changed most the report lists.
TOP_CHANGED = 10
#: The most prompts (rows) the heat map draws: those seen at the most steps.
HEATMAP_ROWS = 200

_NAMED_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
#: Characters that would break the excerpt's line or hide text: controls, format characters
#: (bidirectional overrides, zero-width), surrogates and the line and paragraph separators.
_ESCAPED_CATEGORIES = {"Cc", "Cf", "Cs", "Zl", "Zp"}


def _escape(ch: str) -> str:
    if ch in _NAMED_ESCAPES:
        return _NAMED_ESCAPES[ch]
    if unicodedata.category(ch) in _ESCAPED_CATEGORIES:
        return f"\\u{ord(ch):04x}" if ord(ch) <= 0xFFFF else f"\\U{ord(ch):08x}"
    return ch


def excerpt(key: str | int, limit: int = EXCERPT_CHARS) -> str:
    """The start of a prompt's key on one line of at most ``limit`` characters: leading and
    trailing whitespace dropped, control and format characters escaped (``\\n``, ``\\t``, ``\\r``,
    ``\\uXXXX``), and an ellipsis where it is cut (never inside an escape)."""
    text = (key if isinstance(key, str) else str(key)).strip()
    pieces = [_escape(ch) for ch in text[: limit + 1]]
    if sum(map(len, pieces)) <= limit:
        return "".join(pieces)
    out, used = [], 0
    for piece in pieces:
        if used + len(piece) > limit - 1:
            break
        out.append(piece)
        used += len(piece)
    return "".join(out) + "…"


def _classify(solved: list[bool]) -> str:
    """The class of a prompt from whether it was solved in each window where it was seen, in order."""
    if all(solved):
        return "always_solved"
    if not any(solved):
        return "never_solved"
    if solved[0] != solved[-1]:
        return "learned" if solved[-1] else "forgotten"
    return "fluctuating"


@dataclass
class PromptView:
    """The prompts of a run seen at two steps or more, and the run's windows.

    Attributes:
        steps: the run's step numbers, in order.
        windows: per window, the positions (0-based, in ``steps``) of its first and last step.
        prompts: a row per prompt seen at two steps or more (the lines of ``prompts.jsonl``), in
            the order the prompts first appear in the run.
        num_prompts: every prompt the run saw, at one step or more.
    """

    steps: list[int]
    windows: list[tuple[int, int]]
    prompts: list[dict[str, Any]]
    num_prompts: int

    def counts(self) -> dict[str, int]:
        """How many prompts are in each class."""
        out = dict.fromkeys(CLASSES, 0)
        for row in self.prompts:
            out[row["class"]] += 1
        return out

    def per_window(self) -> list[dict[str, Any]]:
        """Per window, of the prompts seen at two steps or more: how many were seen in it, solved in
        it, and learned or forgotten in it (solved in it and not in the latest earlier window where
        they were seen, or the reverse)."""
        rows = [{"window": w, "first_step": self.steps[a], "last_step": self.steps[b], "num_steps": b - a + 1,
                 "seen": 0, "solved": 0, "learned": 0, "forgotten": 0} for w, (a, b) in enumerate(self.windows)]
        for prompt in self.prompts:
            before = None
            for w, solved in zip(prompt["windows"], prompt["windows_solved"]):
                rows[w]["seen"] += 1
                rows[w]["solved"] += solved
                if before is not None and before != solved:
                    rows[w]["learned" if solved else "forgotten"] += 1
                before = solved
        return rows

    def top_changed(self, n: int = TOP_CHANGED) -> list[dict[str, Any]]:
        """The ``n`` prompts whose solve rate changed most from their first window to their last
        (by absolute change; ties: more rollouts first, then the first to appear); none unchanged."""
        moved = [(i, p) for i, p in enumerate(self.prompts) if p["change"]]
        moved.sort(key=lambda ip: (-abs(ip[1]["change"]), -sum(ip[1]["rollouts"]), ip[0]))
        keep = ("key", "excerpt", "class", "num_steps", "first_window", "last_window", "first_window_solve_rate",
                "last_window_solve_rate", "change")
        return [{k: p[k] for k in keep} for _, p in moved[:n]]

    def heatmap_rows(self, limit: int = HEATMAP_ROWS) -> list[dict[str, Any]]:
        """The prompts the heat map draws: the ``limit`` seen at the most steps (ties: more rollouts,
        then the first to appear), ordered by the step they were first solved at, never solved last
        (ties: the first seen first)."""
        order = sorted(range(len(self.prompts)),
                       key=lambda i: (-self.prompts[i]["num_steps"], -sum(self.prompts[i]["rollouts"]), i))[:limit]
        position = {s: i for i, s in enumerate(self.steps)}

        def first_solve(i: int) -> tuple[bool, int, int, int]:
            p = self.prompts[i]
            solved = p["first_solve_step"]
            return solved is None, position[solved] if solved is not None else 0, position[p["steps"][0]], i

        return [self.prompts[i] for i in sorted(order, key=first_solve)]

    def summary(self) -> dict[str, Any]:
        """The ``prompts`` section of report.json."""
        return {
            "solved_rate": SOLVED_RATE, "num_prompts": self.num_prompts, "num_prompts_seen_twice": len(self.prompts),
            "classes": self.counts(), "windows": self.per_window(), "top_changed": self.top_changed(),
        }


def _successes(rewards: np.ndarray, rule: tuple[str, float]) -> np.ndarray:
    op, t = rule
    return rewards >= t if op == ">=" else rewards > t


def _plain(key: Any) -> str | int:
    """A key as JSON writes it: numpy's integers and text as Python's (the integer 1 and the text
    "1" stay two keys)."""
    if isinstance(key, np.integer):
        return int(key)
    return str(key) if isinstance(key, str) else key


def prompt_view(run: RunRecords) -> PromptView | str:
    """The per-prompt view of ``run``, or the one line that says why it has none: no prompt keys,
    no success rule, or no prompt seen at two steps."""
    if not run.steps or any(b.prompt_keys is None for b in run.steps):
        return f"no per-prompt view: the {run.format} dump names no prompt across steps"
    if run.success is None:
        return ("no per-prompt view: the rewards are not successes (not all 0 or 1, and no --success-threshold "
                "said which are)")
    ids: dict[Any, int] = {}
    keys: list[Any] = []
    pid, pos, succ, size = [], [], [], []
    num_steps = len(run.steps)
    num_windows = min(MAX_WINDOWS, num_steps)
    for i, batch in enumerate(run.steps):
        groups = batch.num_groups
        c = np.bincount(batch.groups, weights=_successes(batch.rewards, run.success), minlength=groups)
        names = [_plain(k) for k in batch.prompt_keys]
        for key in names:
            if key not in ids:
                ids[key] = len(keys)
                keys.append(key)
        pid.append(np.fromiter((ids[k] for k in names), dtype=np.int64, count=groups))
        pos.append(np.full(groups, i, dtype=np.int64))
        succ.append(c.round().astype(np.int64))
        size.append(np.bincount(batch.groups, minlength=groups))
    pid, pos, succ, size = (np.concatenate(a) for a in (pid, pos, succ, size))
    # a prompt in two groups of one step is one point: its successes over its rollouts of both
    cell, inverse = np.unique(pid * num_steps + pos, return_inverse=True)
    succ = np.bincount(inverse, weights=succ).round().astype(np.int64)
    size = np.bincount(inverse, weights=size).round().astype(np.int64)
    cell_pid, cell_pos = cell // num_steps, cell % num_steps
    seen = np.bincount(cell_pid, minlength=len(keys))
    if (seen < 2).all():
        return (f"no per-prompt view: every prompt was seen at one step only ({len(keys)} prompts over "
                f"{num_steps} step{'s' * (num_steps != 1)})")
    wins = (cell_pos * num_windows // num_steps).tolist()
    step_numbers = [b.step for b in run.steps]
    starts = np.concatenate([[0], np.cumsum(seen)]).tolist()
    cell_pos, succ, size = cell_pos.tolist(), succ.tolist(), size.tolist()
    prompts = []  # ids are in first-appearance order, and so are the rows
    for p, key in enumerate(keys):
        a, b = starts[p], starts[p + 1]
        if b - a >= 2:
            prompts.append(_prompt_row(key, [step_numbers[i] for i in cell_pos[a:b]], succ[a:b], size[a:b], wins[a:b]))
    # window w holds the positions i with floor(i * W / S) == w: from ceil(w * S / W) to ceil((w + 1) * S / W) - 1
    windows = [(-(-w * num_steps // num_windows), -(-(w + 1) * num_steps // num_windows) - 1)
               for w in range(num_windows)]
    return PromptView(step_numbers, windows, prompts, len(keys))


def _prompt_row(key: Any, steps: list[int], succ: list[int], size: list[int], wins: list[int]) -> dict[str, Any]:
    """A line of prompts.jsonl: one prompt's trajectory, window by window and class."""
    rates = [c / n for c, n in zip(succ, size)]
    solved_at = [s for s, r in zip(steps, rates) if r >= SOLVED_RATE]
    windows: list[int] = []
    pooled: list[list[int]] = []
    for w, c, n in zip(wins, succ, size):
        if not windows or windows[-1] != w:
            windows.append(w)
            pooled.append([0, 0])
        pooled[-1][0] += c
        pooled[-1][1] += n
    window_rates = [c / n for c, n in pooled]
    windows_solved = [r >= SOLVED_RATE for r in window_rates]
    return {
        "key": key, "excerpt": excerpt(key), "num_steps": len(steps), "steps": steps, "successes": succ,
        "rollouts": size, "solve_rates": rates,
        "first_solve_step": solved_at[0] if solved_at else None,
        "last_solve_step": solved_at[-1] if solved_at else None,
        "windows": windows, "window_solve_rates": window_rates, "windows_solved": windows_solved,
        "first_window": windows[0], "last_window": windows[-1],
        "first_window_solve_rate": window_rates[0], "last_window_solve_rate": window_rates[-1],
        "change": window_rates[-1] - window_rates[0] if len(windows) > 1 else None,
        "class": _classify(windows_solved),
    }
