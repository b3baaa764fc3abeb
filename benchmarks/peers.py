"""fade against its peers' own advantage code, on the same batches: verl 0.9.1 and TRL 1.16.

What it measures
----------------
For N = 10^4, 10^5, 10^6 rollouts in consecutive groups of G = 16 (binary float32 rewards, a
solve rate drawn per group), the wall time of one advantage computation, in the two forms the
engines use:

- token level, verl's form: ``token_level_rewards`` (N, L) with the outcome reward on each
  response's last token, an int64 ``response_mask`` (N, L) (response lengths uniform in 1..L,
  L = 16 by default), and one uid per rollout. verl's real functions are called, imported from
  ``verl.trainer.ppo.core_algos``: ``compute_grpo_outcome_advantage`` (verl's default ``grpo``, a
  Python loop over rollouts and groups) and ``compute_grpo_vectorized_outcome_advantage``
  (``grpo_vectorized``); and fade through its verl plugin, the function verl calls for
  ``adv_estimator=fade_grpo`` and ``adv_estimator=fade`` (sum of token rewards, fade's estimator,
  broadcast over the mask): the same inputs and outputs as verl's, apples to apples.
- one reward per rollout, TRL's form: ``rewards`` (N,). TRL 1.16 has no standalone advantage
  function (GRPOTrainer computes it inline in ``_generate_and_score_completions``), so its
  default formula (``scale_rewards="group"``) is written here as TRL writes it: ``view(-1, G)``,
  ``nanmean``, TRL's own ``nanstd`` (imported from ``trl.trainer.utils``), ``+ 1e-4``,
  ``nan_to_num``. fade's ``grpo`` and ``fade`` run on the same 1-D rewards with ``groups=16``.

Uids, both by default: ``str`` are what verl's trainer puts in ``non_tensor_batch["uid"]``, an
object array of uuid strings, one per prompt; ``int`` are int64 ids. With strings both verl's
vectorised GRPO and fade's plugin spend most of their time mapping the uids to group indices
(``np.unique`` over strings); the ``int`` table shows the cost of the rest.

Columns: time (ms) (the best of several runs after a warm-up, garbage collector off, as in
benchmarks/advantages.py, whose helpers this script reuses), rollouts/s, and the ratios
``/ fade_grpo`` and ``/ fade``: this row's time over fade's time on the same inputs in the same
form (token level or 1-D). Above 1 means slower than fade. Outputs are checked to agree (fade_grpo
with verl's grpo, fade grpo with eps=1e-4 with TRL's) before anything is timed.

verl's loop takes seconds at N = 10^6; it is skipped there when its time at 10^5 predicts more
than 60 s, unless ``--full``.

How to run
----------
    python benchmarks/peers.py [--sizes 1e4,1e5,1e6] [--uids str,int] [--threads 1] [--full]

Needs the verl extra (``pip install -e '.[verl]'`` from the clone); the TRL row needs the trl extra and is
left out without it. About a minute on one core.
"""

from __future__ import annotations

import argparse
import gc
import platform
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

import fade

# benchmarks/ is not a package: running this file puts its folder on sys.path.
from advantages import GROUP, Printer, best_time, fmt_ms, fmt_n, fmt_rate, fmt_x, make_equal, parse_sizes, repeats_for

LOOP_BUDGET_S = 60.0  # skip verl's loop at a size where it is predicted to take longer


@dataclass
class PeerBatch:
    n: int
    rewards: torch.Tensor  # (n,) float32, 0 or 1, consecutive groups of GROUP
    token_rewards: torch.Tensor  # (n, L) float32, the reward on each response's last token
    mask: torch.Tensor  # (n, L) int64
    uids: np.ndarray  # (n,) what verl's trainer passes: object array of uuid strings, or int64


def make_batch(n: int, length: int, uids: str, seed: int) -> PeerBatch:
    base = make_equal(n, seed)
    rng = np.random.default_rng(seed)
    lengths = torch.as_tensor(rng.integers(1, length + 1, size=base.n))
    mask = (torch.arange(length).unsqueeze(0) < lengths.unsqueeze(1)).to(torch.int64)
    tok = torch.zeros(base.n, length, dtype=torch.float32)
    tok[torch.arange(base.n), lengths - 1] = base.rewards
    if uids == "str":
        prompts = rng.integers(1 << 62, size=base.n // GROUP)
        table = np.array([str(uuid.UUID(int=int(x))) for x in prompts], dtype=object)
        ids = table[base.index]
    else:
        ids = base.index.astype(np.int64)
    return PeerBatch(base.n, base.rewards, tok, mask, ids)


def trl_grpo(nanstd: Callable[..., torch.Tensor]) -> Callable[[torch.Tensor, int], torch.Tensor]:
    """TRL 1.16's default GRPO advantage (scale_rewards="group"), written as GRPOTrainer writes it."""

    def advantages(rewards: torch.Tensor, num_generations: int) -> torch.Tensor:
        mean_grouped_rewards = torch.nanmean(rewards.view(-1, num_generations), dim=1)
        mean_grouped_rewards = mean_grouped_rewards.repeat_interleave(num_generations, dim=0)
        std_rewards = nanstd(rewards.view(-1, num_generations), dim=1)
        std_rewards = std_rewards.repeat_interleave(num_generations, dim=0)
        adv = (rewards - mean_grouped_rewards) / (std_rewards + 1e-4)
        return torch.nan_to_num(adv, nan=0.0)

    return advantages


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", type=parse_sizes, default=[10**4, 10**5, 10**6],
                    help="comma-separated N, rounded down to multiples of 16 (default 1e4,1e5,1e6)")
    ap.add_argument("--uids", default="str,int", help="uid forms to run: str (verl's), int, or str,int (default)")
    ap.add_argument("--length", type=int, default=16, help="response length L of the token-level inputs (default 16)")
    ap.add_argument("--threads", type=int, default=1, help="torch.set_num_threads (default 1)")
    ap.add_argument("--full", action="store_true", help="run verl's loop at every size, however long")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--smoke", action="store_true", help="N = 10^3 only: checks that the script runs (CI), measures nothing"
    )
    args = ap.parse_args(argv)
    if args.smoke:
        args.sizes = [10**3]
    forms = [u.strip() for u in args.uids.split(",") if u.strip()]
    if not forms or any(u not in ("str", "int") for u in forms):
        raise SystemExit(f"--uids must be str, int or str,int; got {args.uids!r}")
    if args.length < 1:
        raise SystemExit(f"--length must be a positive number of tokens, got {args.length}")

    t_start = time.perf_counter()
    torch.set_num_threads(args.threads)
    import verl
    from verl.trainer.ppo import core_algos

    import fade.integrations.verl as fade_verl  # registers fade's names in verl

    try:
        import trl
        from trl.trainer.utils import nanstd

        trl_fn, trl_version = trl_grpo(nanstd), trl.__version__
    except ImportError:
        trl_fn, trl_version = None, "not installed"

    verl_loop = core_algos.compute_grpo_outcome_advantage
    verl_vec = core_algos.compute_grpo_vectorized_outcome_advantage
    plugin_grpo = core_algos.get_adv_estimator_fn("fade_grpo")
    plugin_fade = core_algos.get_adv_estimator_fn("fade")
    # FADE as it is mid-run: entropy below its target (delta = 0.5) and p_hat = 0.5 (alpha = 1.5),
    # so every branch of the formula runs. The plugin's estimator gets the same through verl's config.
    fade_params = {"h_star": 1.5}
    fade_config = {"fade": fade_params}
    est_grpo, est_fade = fade.estimator("grpo"), fade.estimator("fade", **fade_params)
    est_fade.observe(entropy=1.0)
    fade_verl.estimator_for("fade", fade_params).observe(entropy=1.0)

    out = Printer()
    out.line(
        f"fade {fade.__version__} | verl {verl.__version__} | trl {trl_version} | torch {torch.__version__} | "
        f"python {platform.python_version()} | {platform.machine()} {platform.processor() or ''}".rstrip()
    )
    out.line(
        f"torch threads: {torch.get_num_threads()} | sizes: {', '.join(fmt_n(n) for n in args.sizes)} | "
        f"groups of {GROUP}, "
        f"consecutive | binary float32 rewards | token level: L = {args.length}, int64 mask | uids: {', '.join(forms)}"
    )
    out.line()

    for form in forms:
        rows: list[list[str]] = []
        breaks: set[int] = set()
        summary: list[str] = []
        loop_at: dict[int, float] = {}
        for n in args.sizes:
            t_size = time.perf_counter()
            b = make_batch(n, args.length, form, args.seed)
            reps = repeats_for(b.n)
            # Same answers first: a fast wrong function is not a result.
            ours = plugin_grpo(b.token_rewards, b.mask, index=b.uids, config=None)[0]
            theirs = verl_vec(b.token_rewards, b.mask, b.uids)[0]
            torch.testing.assert_close(ours, theirs, rtol=1e-4, atol=1e-4)
            if trl_fn is not None:
                ours_1d = fade.advantages("grpo", b.rewards, GROUP, eps=1e-4)
                torch.testing.assert_close(ours_1d, trl_fn(b.rewards, GROUP), rtol=1e-5, atol=1e-5)

            timed: dict[str, float | None] = {}
            # the loop is linear in N: predict from the largest size it ran at
            predicted = loop_at[max(loop_at)] * b.n / max(loop_at) if loop_at else 0.0
            if args.full or predicted <= LOOP_BUDGET_S:
                loop_reps = 1 if b.n >= 10**5 else 3
                timed["verl grpo (loop)"] = best_time(lambda: verl_loop(b.token_rewards, b.mask, b.uids), loop_reps,
                                                      warmup=b.n < 10**5)
                loop_at[b.n] = timed["verl grpo (loop)"]
            else:
                timed["verl grpo (loop)"] = None
                summary.append(f"verl's loop skipped at N = {fmt_n(b.n)}: predicted {predicted:.0f} s (--full runs it)")
            timed["verl grpo_vectorized"] = best_time(lambda: verl_vec(b.token_rewards, b.mask, b.uids), reps)
            timed["fade_grpo (verl plugin)"] = best_time(
                lambda: plugin_grpo(b.token_rewards, b.mask, index=b.uids, config=None), reps)
            timed["fade (verl plugin)"] = best_time(
                lambda: plugin_fade(b.token_rewards, b.mask, index=b.uids, config=fade_config), reps)
            if trl_fn is not None:
                timed["TRL GRPO formula"] = best_time(lambda: trl_fn(b.rewards, GROUP), reps)
            timed["fade grpo"] = best_time(lambda: est_grpo(b.rewards, GROUP), reps)
            timed["fade"] = best_time(lambda: est_fade(b.rewards, GROUP), reps)

            token_level = ("verl grpo (loop)", "verl grpo_vectorized", "fade_grpo (verl plugin)", "fade (verl plugin)")
            for label, t in timed.items():
                tok = label in token_level
                ref_grpo = timed["fade_grpo (verl plugin)" if tok else "fade grpo"]
                ref_fade = timed["fade (verl plugin)" if tok else "fade"]
                rows.append([
                    "token level" if tok else "1-D",
                    label,
                    fmt_n(b.n),
                    fmt_ms(t),
                    fmt_rate(b.n, t),
                    fmt_x(t / ref_grpo) if t is not None else "-",
                    fmt_x(t / ref_fade) if t is not None else "-",
                ])
            breaks.add(len(rows) - 1)
            plugin = timed["fade_grpo (verl plugin)"]
            vs = [f"verl's grpo_vectorized {fmt_x(timed['verl grpo_vectorized'] / plugin)}"]
            if timed["verl grpo (loop)"] is not None:
                vs.insert(0, f"verl's grpo loop {fmt_x(timed['verl grpo (loop)'] / plugin)}")
            line = f"N = {fmt_n(b.n)}: {' and '.join(vs)} the time of fade_grpo through the plugin"
            if "TRL GRPO formula" in timed:
                line += f"; TRL's formula {fmt_x(timed['TRL GRPO formula'] / timed['fade grpo'])} the time of fade grpo"
            summary.append(line)
            b = None  # free this size's batch before the next one is built
            gc.collect()
            out.line(f"  measured N = {fmt_n(n)} ({form} uids) in {time.perf_counter() - t_size:.1f} s")
        out.line()
        columns = ["form", "implementation", "N", "time (ms)", "rollouts/s", "/ fade_grpo", "/ fade"]
        title = f"{form} uids: time, and its ratio to fade's on the same inputs in the same form"
        out.table(title, columns, rows, right={2, 3, 4, 5, 6}, breaks=breaks)
        for line in summary:
            out.line(line)
        out.line()
    out.line(f"total runtime: {time.perf_counter() - t_start:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
