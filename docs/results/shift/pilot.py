"""The shift pilot: candidate settings where FADE's schedule could act, run with grpo and FADE.

    python docs/results/shift/pilot.py run [--workers 2] [--only SETTING]   # train what is missing
    python docs/results/shift/pilot.py score                                  # criteria -> pilot.json

PILOT.md states the candidates, the criteria and the rule that picks a setting, written before any
run. Each run trains with one torch thread in a process of its own (``--workers`` at a time) into
``docs/results/shift/pilot/runs/<setting>/<arm>-s<seed>``; an interrupted run resumes from its
checkpoint and a finished one is skipped. ``score`` reads the logs and writes ``pilot.json``: per
run the step where FADE's alpha first leaves its cap after reaching it, the first step where it is
at most 1.5, the share of steps with delta < 1, the held-out pass@1 at step 0 and at the end, and
the run's wall seconds; per setting, the seeds that meet each criterion and the verdict.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
#: The runs' folder relative to the repository's root, where the script works (a run.json records
#: its ``out`` as given, and the repository holds no machine's absolute paths).
RUNS = Path("docs/results/shift/pilot/runs")
SEEDS = (0, 1, 2, 3, 4)
ARMS = {"grpo": ("grpo", {}), "fade": ("fade", {}), "fade-debiased": ("fade", {"p_start": "debiased"})}
#: The arms each setting runs: grpo and FADE at its defaults (the pilot as first written); then the
#: follow-up PILOT.md adds after the first results, before its runs: FADE with the debiased start
#: of p_hat on ``arith-d2``; then the second follow-up, ``arith-d2-400`` with grpo and that arm. The criteria judge each FADE arm on its own.
SETTING_ARMS = {"arith-d2": ("grpo", "fade", "fade-debiased"), "cdm-pool64": ("grpo", "fade"),
                "arith-d2-400": ("grpo", "fade-debiased")}
JUDGED = ("fade", "fade-debiased")
#: The candidates, as PILOT.md lists them: TrainConfig settings besides out, seed and estimator;
#: ``arith-d2-400`` is the second follow-up's, written after the first results and before its runs.
SETTINGS = {
    "arith-d2": dict(task="arithmetic", difficulties=[2], steps=300, eval_every=30, eval_prompts=64,
                     eval_samples=64),
    "cdm-pool64": dict(task="countdown_multi", train_pool=64, steps=200, lr=2e-4, prompts_per_step=16,
                       group_size=16, eval_every=20, eval_prompts=64, eval_samples=32),
    "arith-d2-400": dict(task="arithmetic", difficulties=[2], steps=400, eval_every=40, eval_prompts=64,
                         eval_samples=64),
}
#: The criteria (PILOT.md): alpha <= 1.5 before this share of the run, delta < 1 on at least this
#: share of the steps, a held-out pass@1 gain of at least this much, a run of at most this many
#: CPU seconds, on at least this many of the five seeds.
ALPHA_BY, DELTA_SHARE, GAIN, COST_S, SEEDS_NEEDED = 0.6, 0.25, 0.10, 240.0, 4
ALPHA_CAP = 3.0


def _folder(setting: str, arm: str, seed: int) -> Path:
    return RUNS / setting / f"{arm}-s{seed}"


def _train(setting: str, arm: str, seed: int) -> dict:
    import torch

    from fade.testbed.runlog import load_run
    from fade.testbed.trainer import TrainConfig, train

    torch.set_num_threads(1)
    out = _folder(setting, arm, seed)
    estimator, args = ARMS[arm]
    config = TrainConfig(out=str(out), seed=seed, estimator=estimator, estimator_args=args, checkpoint_every=50,
                         progress=False, **SETTINGS[setting])
    if (out / "checkpoint.pt").is_file() and len(load_run(out).metrics) >= config.steps:
        return {"run": str(out), "status": "skipped"}
    t0 = time.process_time()
    wall0 = time.perf_counter()
    train(config, resume=(out / "checkpoint.pt").is_file())
    cost = {"cpu_seconds": time.process_time() - t0, "wall_seconds": time.perf_counter() - wall0}
    (out / "cost.json").write_text(json.dumps(cost) + "\n")
    return {"run": str(out), "status": "finished", **cost}


def run(workers: int, only: str | None) -> None:
    jobs = [(s, a, seed) for s in SETTINGS if only in (None, s) for seed in SEEDS for a in SETTING_ARMS[s]]
    t0 = time.perf_counter()
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        for i, result in enumerate(pool.map(_train, *zip(*jobs)), 1):
            rate = (time.perf_counter() - t0) / i
            print(f"[{i}/{len(jobs)}] {result}  ETA {rate * (len(jobs) - i) / 60:.1f} min", flush=True)


def _score_run(folder: Path) -> dict:
    from fade.testbed.runlog import load_run

    r = load_run(folder)
    steps = len(r.metrics)
    alphas = [m.get("alpha") for m in r.metrics]
    deltas = [m.get("delta") for m in r.metrics]
    capped = [i for i, a in enumerate(alphas, 1) if a is not None and a >= ALPHA_CAP]
    left = next((i for i, a in enumerate(alphas, 1) if capped and i > capped[0] and a < ALPHA_CAP), None)
    low = next((i for i, a in enumerate(alphas, 1) if a is not None and a <= 1.5 and capped and i > capped[0]), None)
    evals = {e["step"]: e["pass@1"] for e in r.evals}
    cost_file = folder / "cost.json"
    cost = json.loads(cost_file.read_text()) if cost_file.is_file() else {}
    return {
        "steps": steps,
        "alpha_cap_step": capped[0] if capped else None,
        "alpha_leaves_cap_step": left,
        "alpha_at_most_1_5_step": low,
        "delta_below_1_share": (sum(d is not None and d < 1 for d in deltas) / steps) if steps else None,
        "pass1_base": evals.get(0),
        "pass1_final": evals.get(max(evals)) if evals else None,
        "cpu_seconds": cost.get("cpu_seconds"),
    }


def score() -> dict:
    out: dict = {"criteria": {"alpha_at_most_1_5_before_share": ALPHA_BY, "delta_below_1_share": DELTA_SHARE,
                              "pass1_gain": GAIN, "cpu_seconds": COST_S, "seeds_needed": SEEDS_NEEDED},
                 "settings": {}}
    for setting, kw in SETTINGS.items():
        runs = {f"{arm}-s{seed}": _score_run(_folder(setting, arm, seed)) for arm in SETTING_ARMS[setting]
                for seed in SEEDS if (_folder(setting, arm, seed) / "run.json").is_file()}
        arms = {}
        for arm in (a for a in JUDGED if a in SETTING_ARMS[setting]):
            passed: dict[str, list[int]] = {"alpha": [], "delta": [], "gain": [], "cost": [], "all": []}
            for seed in SEEDS:
                fade = runs.get(f"{arm}-s{seed}")
                if fade is None or fade["steps"] < kw["steps"]:
                    continue
                ok = {
                    "alpha": fade["alpha_at_most_1_5_step"] is not None
                    and fade["alpha_at_most_1_5_step"] < ALPHA_BY * kw["steps"],
                    "delta": fade["delta_below_1_share"] >= DELTA_SHARE,
                    "gain": fade["pass1_final"] - fade["pass1_base"] >= GAIN,
                    "cost": fade["cpu_seconds"] is not None and fade["cpu_seconds"] <= COST_S,
                }
                ok["all"] = all(ok.values())
                for key, value in ok.items():
                    if value:
                        passed[key].append(seed)
            arms[arm] = {"seeds_meeting": passed, "qualifies": len(passed["all"]) >= SEEDS_NEEDED}
        out["settings"][setting] = {"config": kw, "runs": runs, "arms": arms}
    (HERE / "pilot.json").write_text(json.dumps(out, indent=1) + "\n")
    return out


def main(argv: list[str] | None = None) -> int:
    os.chdir(ROOT)
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run")
    r.add_argument("--workers", type=int, default=2)
    r.add_argument("--only", choices=list(SETTINGS))
    sub.add_parser("score")
    args = ap.parse_args(argv)
    if args.command == "run":
        run(args.workers, args.only)
    else:
        print(json.dumps({s: {k: v for k, v in d.items() if k != "runs"} for s, d in score()["settings"].items()},
                         indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
