"""Speed of every registered advantage estimator, against a verl-style loop and a memory copy.

What it measures
----------------
For each estimator in ``fade.available()`` and each batch size N (default 10^3 .. 10^7
rollouts), the wall time of one user-facing call ``est(rewards, groups, ...)``, validation
included, on binary float32 rewards (Bernoulli, with a solve rate drawn per group), in two
layouts:

- ``equal``:  consecutive groups of 16, passed as the int ``16`` (N is rounded down to a
  multiple of 16, so 10^3 runs as 992);
- ``ragged``: group sizes drawn uniformly from 1..32 (from k..32 for estimators that need k
  rollouts per group: passk and pkpo with their k, 2 for grpo_passk), rollouts shuffled by a
  random permutation so a group's members are not contiguous, passed as an int64 id tensor.

Per-rollout inputs an estimator needs (``lengths``, ``baseline_rewards``) are passed, random.
Each time is the best (minimum) of several repeats after a warm-up call, with
``time.perf_counter`` and the garbage collector off while timing.

Two peers are timed on the same data in the same run:

- ``loop``: verl 0.9.1's default ``compute_grpo_outcome_advantage``, written out here (verl is
  not imported): a ``defaultdict(list)`` of scalar tensors per index, ``torch.stack`` and
  ``torch.mean`` / ``torch.std`` per group, then a per-rollout loop writing
  ``(score - mean) / (std + eps)``. Timed for N up to 10^6 (``--loop-max``); at 10^6 it takes
  seconds, so it runs once there.
- ``copy``: ``rewards.clone()``, a plain copy of the same bytes: the memory floor no
  estimator that writes one value per rollout can beat.

Columns: time (ms), rollouts/s, "x loop" (loop time / estimator time at the same N and layout,
where the loop ran) and "x copy" (estimator time / copy time). A summary per layout then says
which estimators meet the targets "N = 10^6 in at most 50 ms on one core" and "at least 50x
faster than the loop at 10^6".

How to run
----------
    python benchmarks/advantages.py [--quick]

``--quick`` runs N = 10^3..10^5 only. Other flags: ``--threads`` (torch threads, default 1),
``--estimators grpo,rloo`` (restrict), ``--sizes 1e3,1e6`` (explicit sizes), ``--loop-max``
(largest N for the loop), ``--seed``. The full run takes a few minutes on one core.
"""

from __future__ import annotations

import argparse
import gc
import math
import platform
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

import fade

try:  # rich is a dependency of fade, but keep a plain fallback
    from rich.console import Console
    from rich.table import Table

    _RICH = True
except ImportError:  # pragma: no cover
    _RICH = False

GROUP = 16  # the equal layout's group size
MAX_RAGGED = 32  # ragged group sizes are drawn from lo..MAX_RAGGED
TARGET_MS = 50.0  # N = 10^6 in at most this many milliseconds
TARGET_X = 50.0  # at least this many times faster than the loop at N = 10^6
TARGET_N = 10**6

#: Parameters an estimator cannot be built without (no usable default).
REQUIRED_PARAMS: dict[str, dict] = {"fade_decay": {"total_steps": 1000}, "fade_fixed": {"path": "shift"}}


# -- the peer: verl 0.9.1's default GRPO advantage, as a loop -----------------------------------


def verl_grpo_loop(
    token_level_rewards: torch.Tensor,
    response_mask: torch.Tensor,
    index: np.ndarray,
    epsilon: float = 1e-6,
    norm_adv_by_std_in_grpo: bool = True,
) -> tuple[torch.Tensor, torch.Tensor]:
    """verl 0.9.1 ``compute_grpo_outcome_advantage`` (verl/trainer/ppo/core_algos.py), same loops."""
    scores = token_level_rewards.sum(dim=-1)

    id2score = defaultdict(list)
    id2mean = {}
    id2std = {}

    with torch.no_grad():
        bsz = scores.shape[0]
        for i in range(bsz):
            id2score[index[i]].append(scores[i])
        for idx in id2score:
            if len(id2score[idx]) == 1:
                id2mean[idx] = torch.tensor(0.0)
                id2std[idx] = torch.tensor(1.0)
            elif len(id2score[idx]) > 1:
                scores_tensor = torch.stack(id2score[idx])
                id2mean[idx] = torch.mean(scores_tensor)
                id2std[idx] = torch.std(scores_tensor)
            else:
                raise ValueError(f"no score in prompt index: {idx}")
        for i in range(bsz):
            if norm_adv_by_std_in_grpo:
                scores[i] = (scores[i] - id2mean[index[i]]) / (id2std[index[i]] + epsilon)
            else:
                scores[i] = scores[i] - id2mean[index[i]]

        scores = scores.unsqueeze(-1) * response_mask

    return scores, scores


# -- data ------------------------------------------------------------------------------------


@dataclass
class Batch:
    layout: str  # "equal" or "ragged"
    n: int
    rewards: torch.Tensor  # float32 (n,), 0 or 1
    groups: int | torch.Tensor  # the int GROUP, or int64 ids (n,)
    index: np.ndarray  # one id per rollout, for the loop (verl passes a numpy array)
    lengths: torch.Tensor
    baseline_rewards: torch.Tensor


def _bernoulli_by_group(ids: torch.Tensor, num_groups: int, gen: torch.Generator) -> torch.Tensor:
    p = torch.rand(num_groups, generator=gen)
    return torch.bernoulli(p[ids], generator=gen).to(torch.float32)


def _extras(n: int, gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    lengths = torch.randint(1, 4097, (n,), generator=gen).to(torch.float32)
    baseline = torch.bernoulli(torch.full((n,), 0.5), generator=gen).to(torch.float32)
    return lengths, baseline


def make_equal(n: int, seed: int) -> Batch:
    n = (n // GROUP) * GROUP
    gen = torch.Generator().manual_seed(seed)
    ids = torch.arange(n) // GROUP
    rewards = _bernoulli_by_group(ids, n // GROUP, gen)
    lengths, baseline = _extras(n, gen)
    return Batch("equal", n, rewards, GROUP, ids.numpy(), lengths, baseline)


def make_ragged(n: int, lo: int, seed: int) -> Batch:
    """Sizes uniform in lo..MAX_RAGGED summing to n (the last one topped up to >= lo), shuffled."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(lo, MAX_RAGGED + 1, size=n // lo + 1)
    cum = np.cumsum(sizes)
    k = int(np.searchsorted(cum, n))  # first group whose end reaches n
    sizes = sizes[: k + 1].copy()
    sizes[k] = n - (int(cum[k - 1]) if k > 0 else 0)
    if sizes[k] < lo and k > 0:  # merge a too-small tail into the previous group
        sizes[k - 1] += sizes[k]
        sizes = sizes[:k]
    assert int(sizes.sum()) == n and int(sizes.min()) >= min(lo, n)
    ids_sorted = torch.repeat_interleave(torch.arange(len(sizes)), torch.from_numpy(sizes))
    gen = torch.Generator().manual_seed(seed)
    ids = ids_sorted[torch.randperm(n, generator=gen)].contiguous()
    rewards = _bernoulli_by_group(ids, len(sizes), gen)
    lengths, baseline = _extras(n, gen)
    return Batch("ragged", n, rewards, ids, ids.numpy(), lengths, baseline)


# -- timing ----------------------------------------------------------------------------------


def repeats_for(n: int) -> int:
    if n <= 10**3:
        return 30
    if n <= 10**4:
        return 15
    if n <= 10**5:
        return 7
    if n <= 10**6:
        return 5
    return 3


def best_time(fn: Callable[[], object], repeats: int, warmup: bool = True) -> float:
    """Minimum wall time of ``fn()`` over ``repeats`` calls, in seconds."""
    if warmup:
        fn()
    gc.collect()
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        best = math.inf
        for _ in range(repeats):
            t0 = time.perf_counter()
            fn()
            best = min(best, time.perf_counter() - t0)
    finally:
        if was_enabled:
            gc.enable()
    return best


def min_group_size(name: str, est: fade.Estimator) -> int:
    if name in ("passk", "pkpo"):
        return max(int(est.params["k"]), 1)
    if name == "grpo_passk":
        return 2
    return 1


# -- formatting ------------------------------------------------------------------------------


def fmt_ms(t: float | None) -> str:
    if t is None:
        return "-"
    ms = t * 1e3
    if ms >= 100:
        return f"{ms:,.0f}"
    if ms >= 10:
        return f"{ms:.1f}"
    if ms >= 1:
        return f"{ms:.2f}"
    return f"{ms:.3f}"


def fmt_rate(n: int, t: float | None) -> str:
    if t is None or t <= 0:
        return "-"
    r = n / t
    for unit, scale in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if r >= scale:
            return f"{r / scale:.2f}{unit}"
    return f"{r:.0f}"


def fmt_x(x: float | None) -> str:
    if x is None:
        return "-"
    if x >= 100:
        return f"{x:,.0f}x"
    if x >= 10:
        return f"{x:.1f}x"
    return f"{x:.2f}x"


def fmt_n(n: int) -> str:
    if n < 1:
        return str(n)
    e = math.log10(n)
    if abs(e - round(e)) < 1e-9:
        return f"1e{round(e)}"
    return f"{n:,}"


class Printer:
    def __init__(self) -> None:
        # piped output gets a fixed width wide enough for the table, not rich's 80-column default
        self.console = (Console() if sys.stdout.isatty() else Console(width=120)) if _RICH else None

    def line(self, text: str = "") -> None:
        if self.console is not None:
            self.console.print(text, highlight=False, markup=False, soft_wrap=True)
        else:
            print(text)

    def table(self, title: str, columns: list[str], rows: list[list[str]], right: set[int], breaks: set[int]) -> None:
        if self.console is not None:
            t = Table(title=title, title_justify="left")
            for i, c in enumerate(columns):
                t.add_column(c, justify="right" if i in right else "left", no_wrap=True)
            for i, row in enumerate(rows):
                t.add_row(*row, end_section=(i in breaks))
            self.console.print(t)
            return
        widths = [max(len(c), *(len(r[i]) for r in rows)) if rows else len(c) for i, c in enumerate(columns)]

        def fmt(cells: list[str]) -> str:
            return "  ".join(c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(cells, widths)))

        print(title)
        print(fmt(columns))
        print("  ".join("-" * w for w in widths))
        for i, row in enumerate(rows):
            print(fmt(row))
            if i in breaks and i != len(rows) - 1:
                print()
        print()


# -- main ------------------------------------------------------------------------------------


def parse_sizes(text: str) -> list[int]:
    out = []
    for part in text.split(","):
        part = part.strip()
        if part:
            out.append(int(float(part)))
    if not out or min(out) < 1:
        raise SystemExit(f"--sizes must be positive numbers, got {text!r}")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="N = 10^3..10^5 only")
    ap.add_argument("--sizes", type=parse_sizes, default=None, help="comma-separated N, e.g. 1e3,1e6")
    ap.add_argument("--threads", type=int, default=1, help="torch.set_num_threads (default 1)")
    ap.add_argument("--estimators", default=None, help="comma-separated names (default: all registered)")
    ap.add_argument("--loop-max", type=float, default=1e6, help="largest N for the verl loop (default 1e6)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--smoke", action="store_true", help="N = 10^3 only: checks that the script runs (CI), measures nothing"
    )
    args = ap.parse_args(argv)

    t_start = time.perf_counter()
    torch.set_num_threads(args.threads)
    sizes = args.sizes or ([10**3] if args.smoke else [10**3, 10**4, 10**5] if args.quick else
                           [10**3, 10**4, 10**5, 10**6, 10**7])
    loop_max = int(args.loop_max)
    names = fade.available()
    if args.estimators:
        wanted = [s.strip() for s in args.estimators.split(",") if s.strip()]
        unknown = [w for w in wanted if w not in names]
        if unknown:
            raise SystemExit(f"unknown estimator(s) {unknown}; available: {', '.join(names)}")
        names = wanted

    out = Printer()
    out.line(
        f"fade {fade.__version__} | torch {torch.__version__} | numpy {np.__version__} | "
        f"python {platform.python_version()} | {platform.machine()} {platform.processor() or ''}".rstrip()
    )
    out.line(
        f"torch threads: {torch.get_num_threads()} | sizes: {', '.join(fmt_n(n) for n in sizes)} | "
        f"loop up to N = {fmt_n(loop_max)} | rewards: binary float32 | equal groups of {GROUP}; "
        f"ragged sizes lo..{MAX_RAGGED}, shuffled"
    )
    out.line()

    estimators = {}
    for name in names:
        estimators[name] = fade.estimator(name, **REQUIRED_PARAMS.get(name, {}))

    # results[layout][name][n] = seconds (or an error string)
    results: dict[str, dict[str, dict[int, float | str]]] = {"equal": defaultdict(dict), "ragged": defaultdict(dict)}
    loop_t: dict[str, dict[int, float]] = {"equal": {}, "ragged": {}}
    copy_t: dict[str, dict[int, float]] = {"equal": {}, "ragged": {}}
    actual_n: dict[str, dict[int, int]] = {"equal": {}, "ragged": {}}

    for n in sizes:
        t_size = time.perf_counter()
        reps = repeats_for(n)
        for layout in ("equal", "ragged"):
            cache: dict[int, Batch] = {}

            def batch_for(lo: int) -> Batch:
                if lo not in cache:
                    cache[lo] = make_equal(n, args.seed) if layout == "equal" else make_ragged(n, lo, args.seed + lo)
                return cache[lo]

            base = batch_for(1)
            actual_n[layout][n] = base.n
            copy_t[layout][n] = best_time(base.rewards.clone, max(reps, 10))
            if base.n <= loop_max:
                trl = base.rewards.unsqueeze(-1)
                mask = torch.ones_like(trl)
                idx = base.index
                # seconds per call at 10^5 and up: no warm-up (nothing to warm), fewer runs
                loop_reps = 1 if base.n >= 10**6 else 2 if base.n >= 10**5 else 5
                loop_t[layout][n] = best_time(lambda: verl_grpo_loop(trl, mask, idx), loop_reps, warmup=base.n < 10**5)
            for name, est in estimators.items():
                b = batch_for(min_group_size(name, est)) if layout == "ragged" else base
                kwargs = {}
                if "lengths" in est.spec.needs:
                    kwargs["lengths"] = b.lengths
                if "baseline_rewards" in est.spec.needs:
                    kwargs["baseline_rewards"] = b.baseline_rewards
                try:
                    results[layout][name][n] = best_time(lambda: est(b.rewards, b.groups, **kwargs), reps)
                except Exception as exc:  # report and carry on
                    results[layout][name][n] = f"{type(exc).__name__}: {exc}"
            cache.clear()
        gc.collect()
        out.line(f"  measured N = {fmt_n(n)} in {time.perf_counter() - t_size:.1f} s")
    out.line()

    # -- tables ------------------------------------------------------------------------------
    columns = ["estimator", "layout", "N", "time (ms)", "rollouts/s", "x loop", "x copy"]
    right = {2, 3, 4, 5, 6}
    errors: list[str] = []
    for layout in ("equal", "ragged"):
        rows: list[list[str]] = []
        breaks: set[int] = set()

        def add(label: str, n: int, t: float | None, vs_loop: float | None, vs_copy: float | None) -> None:
            m = actual_n[layout][n]
            rows.append([label, layout, f"{m:,}", fmt_ms(t), fmt_rate(m, t), fmt_x(vs_loop), fmt_x(vs_copy)])

        for n in sizes:
            lt = loop_t[layout].get(n)
            add("loop (verl grpo)", n, lt, 1.0 if lt is not None else None, lt / copy_t[layout][n] if lt else None)
        breaks.add(len(rows) - 1)
        for n in sizes:
            ct = copy_t[layout][n]
            lt = loop_t[layout].get(n)
            add("copy (floor)", n, ct, lt / ct if lt is not None else None, 1.0)
        breaks.add(len(rows) - 1)
        for name in names:
            for n in sizes:
                t = results[layout][name][n]
                if isinstance(t, str):
                    m = actual_n[layout][n]
                    rows.append([name, layout, f"{m:,}", "error", "-", "-", "-"])
                    errors.append(f"{name} ({layout}, N = {m:,}): {t}")
                    continue
                lt = loop_t[layout].get(n)
                add(name, n, t, lt / t if lt is not None else None, t / copy_t[layout][n])
            breaks.add(len(rows) - 1)
        title = (
            f"{layout} groups ({'int ' + str(GROUP) if layout == 'equal' else 'int64 ids, sizes lo..32, shuffled'}); "
            f"best of {', '.join(f'{repeats_for(n)}@{fmt_n(n)}' for n in sizes)} after a warm-up"
        )
        out.table(title, columns, rows, right, breaks)

    for e in errors:
        out.line(f"error: {e}")

    # -- summary -----------------------------------------------------------------------------
    out.line("Targets at N = 10^6: (a) at most 50 ms on one core; (b) at least 50x faster than the loop.")
    if TARGET_N not in sizes:
        out.line("  N = 10^6 was not measured in this run (use the full run or --sizes 1e6).")
    else:
        if torch.get_num_threads() != 1:
            out.line(f"  note: measured with {torch.get_num_threads()} threads, not one core")
        for layout in ("equal", "ragged"):
            lt = loop_t[layout].get(TARGET_N)
            ok_ms, bad_ms, ok_x, bad_x = [], [], [], []
            for name in names:
                t = results[layout][name][TARGET_N]
                if isinstance(t, str):
                    bad_ms.append(f"{name} (error)")
                    bad_x.append(f"{name} (error)")
                    continue
                (ok_ms if t * 1e3 <= TARGET_MS else bad_ms).append(
                    name if t * 1e3 <= TARGET_MS else f"{name} ({fmt_ms(t)} ms)"
                )
                if lt is not None:
                    x = lt / t
                    (ok_x if x >= TARGET_X else bad_x).append(name if x >= TARGET_X else f"{name} ({fmt_x(x)})")
            out.line(f"  {layout}, <= 50 ms at 10^6: {len(ok_ms)}/{len(names)} meet: {', '.join(ok_ms) or 'none'}")
            out.line(f"  {layout}, <= 50 ms at 10^6: {len(bad_ms)}/{len(names)} miss: {', '.join(bad_ms) or 'none'}")
            if lt is None:
                out.line(f"  {layout}, >= 50x loop at 10^6: the loop was not run at N = 10^6")
            else:
                out.line(f"  {layout}, >= 50x loop at 10^6 (loop {fmt_ms(lt)} ms): {len(ok_x)}/{len(names)} meet: "
                         f"{', '.join(ok_x) or 'none'}")
                out.line(
                    f"  {layout}, >= 50x loop at 10^6: {len(bad_x)}/{len(names)} miss: {', '.join(bad_x) or 'none'}"
                )
    out.line(f"total runtime: {time.perf_counter() - t_start:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
