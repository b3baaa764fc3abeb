"""One prepared check of fade's CUDA paths, and the testbed's speed at 1M, 20M and 50M parameters.

    python benchmarks/gpu_check.py [--device cuda] [--out docs/gpu] [--budget-s 420]
    python benchmarks/gpu_check.py --device cpu --smoke --out /tmp/gpu   # the same paths, tiny, on CPU

Parts, each written into ``OUT/gpu_check.json`` as soon as it ends (atomically, so a check stopped
part-way keeps what it finished), then a table in ``OUT/gpu_check.md``:

1. ``estimators``: every estimator of the registry, and ``fade.decompose``, on device tensors
   against the same inputs on CPU (max abs difference, tolerance 1e-5 relative to the scale);
2. ``losses``: every policy loss and entropy term of ``fade.losses``, forward and backward on the
   device against CPU (loss and gradient); Clip-Cov draws with a generator on the device, so it
   is checked for finite values and the gradient's device rather than against CPU's draws;
3. ``testbed``: ``fade train`` for 20 steps on the device: every policy loss finite, and the
   device of every tensor the update touches (the loss's inputs, the parameters, their gradients
   and the optimizer's state), recorded by hooks;
4. ``trl``: fade's FadeGRPOTrainer for 2 steps on the tiny local policy, in bf16 on CUDA (fp32 on
   CPU, where TRL has no bf16 path);
5. ``timing``: the testbed trainer and TRL's GRPOTrainer on equal work (benchmarks/trainer.py's
   two runners and sizes: the same model, batch, group size and length cap, every row updated),
   at the shipped ~1M model and at ~20M and ~50M parameters (random weights: speed only): per
   part (sampling, verification and policy pass, update), steps/s, tokens, peak memory.

A part that would start with less than its expected time left in ``--budget-s`` is written as
``skipped: time budget``; the whole check stays well inside 8 minutes on one H100. It exits 1 if
any part failed.
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

import fade
from fade import losses
from fade.atomic import atomic_write, write_json_atomic

RTOL = 1e-5
#: The seconds each part needs at most on one H100 (smoke: on CPU), checked against the budget left.
NEEDS = {"estimators": 20, "losses": 10, "testbed": 60, "trl": 60, "timing": 200}


def _device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name.startswith("cuda") and not torch.cuda.is_available():
        raise SystemExit(f"--device {name}: CUDA is not available here (torch {torch.__version__}); use --device cpu")
    return torch.device(name)


def _diff(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a.detach().double().cpu() - b.detach().double().cpu()).abs().max()) if a.numel() else 0.0


def _scale(x: torch.Tensor) -> float:
    return max(1.0, float(x.detach().double().abs().max())) if x.numel() else 1.0


# -- 1. estimators ---------------------------------------------------------------------------------


def check_estimators(device: torch.device, smoke: bool) -> dict[str, Any]:
    gen = torch.Generator().manual_seed(0)
    groups, size = (8, 4) if smoke else (1024, 16)
    p = torch.rand(groups, 1, generator=gen)
    rewards = (torch.rand(groups, size, generator=gen) < p).float().flatten()
    ids = torch.arange(groups).repeat_interleave(size)
    lengths = torch.randint(1, 200, (groups * size,), generator=gen).float()
    baseline = torch.rand(groups * size, generator=gen)
    rows, worst = {}, 0.0
    for name in fade.available():
        spec = fade.registry.spec(name)
        inputs = {
            k: v for k, v in (("lengths", lengths), ("baseline_rewards", baseline)) if k in (*spec.needs, *spec.uses)
        }
        out = {}
        for where in (torch.device("cpu"), device):
            est = fade.estimator(name, **({spec.run_length: 100} if spec.run_length else {}),
                                 **({"path": "shift"} if spec.schedule == "fixed" else {}))
            if est.reads_entropy:
                est.observe(entropy=1.2)
            out[where.type] = est(rewards.to(where), ids.to(where), **{k: v.to(where) for k, v in inputs.items()})
        theirs = out[device.type]
        assert theirs.device.type == device.type, f"{name}: advantages on {theirs.device}, inputs on {device}"
        d = _diff(theirs, out["cpu"]) / _scale(out["cpu"])
        report_cpu = fade.decompose(out["cpu"], rewards, ids).diagnostics()
        report_dev = fade.decompose(theirs, rewards.to(device), ids.to(device)).diagnostics()
        dd = max((abs(report_cpu[k] - report_dev[k]) for k in report_cpu
                  if math.isfinite(report_cpu[k]) and math.isfinite(report_dev[k])), default=0.0)
        rows[name] = {"max_rel_diff": d, "decompose_max_diff": dd, "device": str(theirs.device)}
        worst = max(worst, d, dd)
    return {"estimators": rows, "rollouts": groups * size, "worst": worst, "ok": worst <= RTOL}


# -- 2. losses -------------------------------------------------------------------------------------


def _loss_batch(seed: int, b: int, t: int):
    gen = torch.Generator().manual_seed(seed)
    old = -torch.rand(b, t, generator=gen) * 3
    log_prob = old + 0.6 * torch.randn(b, t, generator=gen)
    adv = torch.randn(b, generator=gen)
    mask = torch.rand(b, t, generator=gen) < 0.85
    mask[:, 0] = True
    entropy = torch.rand(b, t, generator=gen) * 2
    return log_prob, old, adv, mask, entropy


def check_losses(device: torch.device, smoke: bool) -> dict[str, Any]:
    b, t = (4, 6) if smoke else (256, 512)
    rows, worst = {}, 0.0
    random_draws = {"clip_cov"}
    for kind in ("policy", "entropy"):
        for name in losses.available(kind):
            out = {}
            for where in (torch.device("cpu"), device):
                lp, old, adv, mask, entropy = (x.to(where) for x in _loss_batch(0, b, t))
                lp = lp.clone().requires_grad_()
                if kind == "policy":
                    gen = torch.Generator(device=where).manual_seed(0)
                    loss, _ = losses.policy_loss(name)(lp, old, adv, mask, generator=gen)
                    leaf = lp
                else:
                    leaf = entropy.clone().requires_grad_()
                    loss, _ = losses.entropy_term(name)(leaf, mask)
                loss.backward()
                out[where.type] = (loss.detach(), leaf.grad)
            loss_dev, grad_dev = out[device.type]
            assert grad_dev is not None and grad_dev.device.type == device.type, f"{name}: gradient on {grad_dev}"
            assert torch.isfinite(loss_dev).all() and torch.isfinite(grad_dev).all(), f"{name}: not finite on {device}"
            row = {"loss": float(loss_dev), "grad_device": str(grad_dev.device)}
            if name in random_draws and device.type != "cpu":
                row["compared"] = "finite and on the device (random draws differ between devices' generators)"
            else:
                row["loss_diff"] = _diff(loss_dev, out["cpu"][0]) / _scale(out["cpu"][0])
                row["grad_diff"] = _diff(grad_dev, out["cpu"][1]) / _scale(out["cpu"][1])
                worst = max(worst, row["loss_diff"], row["grad_diff"])
            rows[f"{kind}:{name}"] = row
    return {"losses": rows, "tokens": b * t, "worst": worst, "ok": worst <= RTOL}


# -- 3. the testbed --------------------------------------------------------------------------------


def check_testbed(device: torch.device, smoke: bool) -> dict[str, Any]:
    from fade.testbed.trainer import TrainConfig, train

    seen: dict[str, set[str]] = {
        "loss inputs": set(),
        "parameters": set(),
        "gradients": set(),
        "optimizer state": set(),
    }
    values: list[float] = []
    original = losses.PolicyLoss.__call__

    def recording(self, log_prob, old_log_prob, advantages, mask, **kw):
        for x in (log_prob, old_log_prob, advantages, mask):
            seen["loss inputs"].add(str(x.device))
        loss, metrics = original(self, log_prob, old_log_prob, advantages, mask, **kw)
        values.append(float(loss.detach()))
        return loss, metrics

    def after_step(optimizer, args, kwargs):
        for group in optimizer.param_groups:
            for p in group["params"]:
                seen["parameters"].add(str(p.device))
                if p.grad is not None:
                    seen["gradients"].add(str(p.grad.device))
                for v in optimizer.state.get(p, {}).values():
                    if torch.is_tensor(v) and v.dim() > 0:
                        seen["optimizer state"].add(str(v.device))

    steps = 3 if smoke else 20
    from torch.optim.optimizer import register_optimizer_step_post_hook

    handle = register_optimizer_step_post_hook(after_step)
    losses.PolicyLoss.__call__ = recording
    try:
        with tempfile.TemporaryDirectory() as tmp:
            start = time.perf_counter()
            train(TrainConfig(out=str(Path(tmp) / "run"), task="arithmetic", estimator="fade", steps=steps, seed=0,
                              prompts_per_step=2 if smoke else 32, group_size=2 if smoke else 8, eval_every=0,
                              eval_prompts=0, checkpoint_every=steps, progress=False, device=str(device)))
            wall = time.perf_counter() - start
    finally:
        losses.PolicyLoss.__call__ = original
        handle.remove()
    devices = {k: sorted(v) for k, v in seen.items()}
    on_device = all(v and all(d.startswith(device.type) for d in v) for v in devices.values())
    finite = bool(values) and all(math.isfinite(v) for v in values)
    return {"steps": steps, "seconds": wall, "loss_first": values[0] if values else None,
            "loss_last": values[-1] if values else None, "losses_finite": finite, "devices": devices,
            "ok": finite and on_device}


# -- 4. FadeGRPOTrainer ----------------------------------------------------------------------------


def check_trl(device: torch.device, smoke: bool) -> dict[str, Any]:
    from transformers import TrainerCallback
    from transformers.trainer_callback import PrinterCallback
    from trl import GRPOConfig

    from fade.integrations.trl import FadeGRPOTrainer
    from fade.testbed.policy import load_policy
    from fade.testbed.tasks import get_task
    from fade.testbed.trainer import base_model_dir
    from fade.testbed.trl_task import prompt_dataset, reward_function

    bf16 = device.type == "cuda"
    seen: dict[str, Any] = {}

    class Probe(TrainerCallback):
        def on_step_end(self, args, state, control, model=None, **kwargs):
            p = next(model.parameters())
            seen.update(param_device=str(p.device), param_dtype=str(p.dtype))

    task = get_task("arithmetic")
    model, tokenizer = load_policy(base_model_dir("arithmetic"))
    problems = task.problems("train", n=32, seed=0)
    with tempfile.TemporaryDirectory() as tmp:
        config = GRPOConfig(
            output_dir=tmp, per_device_train_batch_size=16, num_generations=4, max_completion_length=8, max_steps=2,
            learning_rate=1e-4, bf16=bf16, use_cpu=device.type == "cpu", report_to="none", save_strategy="no",
            logging_steps=1, seed=0, disable_tqdm=True, beta=0.0, scale_rewards="none",
        )
        trainer = FadeGRPOTrainer(
            model=model,
            reward_funcs=[reward_function(task, problems)],
            args=config,
            train_dataset=prompt_dataset(problems, tokenizer.bos_token),
            processing_class=tokenizer,
            advantage="fade",
            callbacks=[Probe()],
        )
        trainer.remove_callback(PrinterCallback)
        trainer.train()
    logs = [row for row in trainer.state.log_history if "loss" in row]
    finite = bool(logs) and all(math.isfinite(row["loss"]) for row in logs)
    return {"bf16": bf16, "steps": trainer.state.global_step, "losses": [row["loss"] for row in logs], **seen,
            "ok": finite and trainer.state.global_step == 2 and seen.get("param_device", "").startswith(device.type)}


# -- 5. timing -------------------------------------------------------------------------------------


def _peak(device: torch.device) -> float:
    if device.type == "cuda":
        return torch.cuda.max_memory_allocated(device) / 2**20
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # the process's peak so far (MiB)


def check_timing(device: torch.device, smoke: bool, left: Callable[[], float], write: Callable[[dict], None]
                 ) -> dict[str, Any]:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from fade.testbed.policy import load_policy
    from trainer import EQUAL_WORK, policy_folder, run, run_trl  # benchmarks/trainer.py: the runners, the sizes

    steps, prompts, group = (3, 2, 2) if smoke else (10, 32, 8)
    sizes = ["1M"] if smoke else ["1M", "20M", "50M"]
    rows: dict[str, Any] = {}
    result = {"steps": steps, "prompts": prompts, "group_size": group, "sizes": rows, "equal_work": EQUAL_WORK,
              "ok": True}
    with tempfile.TemporaryDirectory() as tmp:
        for size in sizes:
            if left() < (20 if smoke else 70):
                rows[size] = {"status": "skipped: time budget"}
                continue
            folder = policy_folder(size, Path(tmp))
            params = sum(p.numel() for p in load_policy(folder)[0].parameters())
            row: dict[str, Any] = {"parameters": params}
            for label, go in (("fade train", lambda: run("grpo", steps, prompts, group, 0, model=folder,
                                                          device=str(device))),
                              ("TRL GRPOTrainer", lambda: run_trl(None, steps, prompts, group, 0, model=folder,
                                                                  device=device.type))):
                if device.type == "cuda":
                    torch.cuda.reset_peak_memory_stats(device)
                r = go()
                row[label] = {**{key: r[key] for key in ("step_ms", "steps_per_s", "tokens", "tokens_per_s",
                                                         "sample_ms", "policy_ms", "update_ms")},
                              "peak_mib": _peak(device)}
            row["trl_over_fade"] = row["TRL GRPOTrainer"]["step_ms"] / row["fade train"]["step_ms"]
            rows[size] = row
            write(result)
    return result


# -- the check -------------------------------------------------------------------------------------


def table(report: dict[str, Any]) -> str:
    lines = [
        f"# gpu_check on {report['device_name']}",
        "",
        f"torch {report['torch']}, CUDA {report['cuda']}, python {report['python']}, budget {report['budget_s']} s, "
        f"wall {report.get('wall_s', 0):.0f} s{' (smoke)' if report['smoke'] else ''}",
        "",
        "| part | status | what |",
        "|---|---|---|",
    ]
    for name, part in report["parts"].items():
        what = {
            "estimators": lambda p: f"{len(p['estimators'])} estimators + decompose, worst rel diff {p['worst']:.1e}",
            "losses": lambda p: f"{len(p['losses'])} loss terms fwd+bwd, worst rel diff {p['worst']:.1e}",
            "testbed": lambda p: (
                f"{p['steps']} steps, loss {p['loss_first']:.4g} -> {p['loss_last']:.4g}, "
                f"devices {json.dumps(p['devices'])}"
            ),
            "trl": lambda p: (
                f"{p['steps']} steps, bf16={p['bf16']}, params {p.get('param_dtype')} on "
                f"{p.get('param_device')}, losses {p['losses']}"
            ),
            "timing": lambda p: f"{len(p['sizes'])} sizes",
        }[name]
        lines.append(f"| {name} | {part['status']} | {what(part) if part['status'] == 'ok' else ''} |")
    timing = report["parts"].get("timing", {})
    if timing.get("status") == "ok":
        lines += [
            "",
            f"Timing: {timing['prompts']} prompts x G={timing['group_size']}, mean of steps 3..{timing['steps']}. "
            f"{timing.get('equal_work', '')}",
            "",
            "| model | parameters | trainer | sampling (ms) | verify + policy pass (ms) | update (ms) | step (ms) | "
            "steps/s | tokens/step | tokens/s | peak memory (MiB) |",
            "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for size, row in timing["sizes"].items():
            if "parameters" not in row:
                lines.append(f"| {size} | | {row['status']} | | | | | | | | |")
                continue
            for label in ("fade train", "TRL GRPOTrainer"):
                r = row[label]
                cells = [f"{r[key]:.0f}" for key in ("sample_ms", "policy_ms", "update_ms")]
                cells += [f"{r['step_ms']:.1f}", f"{r['steps_per_s']:.2f}", f"{r['tokens']:.0f}",
                          f"{r['tokens_per_s']:,.0f}", f"{r['peak_mib']:,.0f}"]
                lines.append(f"| {size} | {row['parameters']:,} | {label} | {' | '.join(cells)} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="auto", help="cuda, cuda:N, cpu or auto (default)")
    ap.add_argument("--out", default="gpu_check", help="the folder for gpu_check.json and gpu_check.md")
    ap.add_argument("--budget-s", type=float, default=420.0, help="stop starting parts after this many seconds")
    ap.add_argument("--smoke", action="store_true", help="tiny sizes: the same code paths in under a minute on CPU")
    ap.add_argument("--parts", default=",".join(NEEDS), help=f"comma-separated subset of {','.join(NEEDS)}")
    args = ap.parse_args(argv)
    device = _device(args.device)
    out = Path(args.out)
    start = time.perf_counter()

    def left() -> float:
        return args.budget_s - (time.perf_counter() - start)

    report: dict[str, Any] = {
        "device": str(device),
        "device_name": torch.cuda.get_device_name(device) if device.type == "cuda" else platform.processor() or "cpu",
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "python": platform.python_version(),
        "smoke": args.smoke,
        "budget_s": args.budget_s,
        "parts": {},
    }

    def write(report: dict[str, Any]) -> None:
        report["wall_s"] = time.perf_counter() - start
        write_json_atomic(out / "gpu_check.json", report)
        text = table(report).encode()
        atomic_write(out / "gpu_check.md", lambda f: f.write(text))

    checks = {"estimators": check_estimators, "losses": check_losses, "testbed": check_testbed, "trl": check_trl}
    for name in args.parts.split(","):
        if name not in NEEDS:
            raise SystemExit(f"--parts: unknown part {name!r}: expected some of {','.join(NEEDS)}")
        need = NEEDS[name] / (4 if args.smoke else 1)
        if left() < need:
            report["parts"][name] = {"status": "skipped: time budget"}
            write(report)
            continue
        print(f"gpu_check: {name} ...", flush=True)
        part_start = time.perf_counter()
        try:
            if name == "timing":
                def partial(result: dict) -> None:
                    report["parts"]["timing"] = {"status": "running", **result}
                    write(report)

                result = check_timing(device, args.smoke, left, partial)
            else:
                result = checks[name](device, args.smoke)
            ok = result.pop("ok")
            report["parts"][name] = {"status": "ok" if ok else "failed: a comparison is out of tolerance", **result}
        except Exception as exc:  # one part's failure is a finding; the next parts still run
            report["parts"][name] = {"status": f"failed: {type(exc).__name__}: {exc}".splitlines()[0],
                                     "traceback": traceback.format_exc()[-3000:]}
        report["parts"][name]["seconds"] = time.perf_counter() - part_start
        write(report)
        print(f"gpu_check: {name}: {report['parts'][name]['status']} ({report['parts'][name]['seconds']:.1f} s)",
              flush=True)
    print(table(report))
    return 0 if all(p["status"] == "ok" or p["status"].startswith("skipped") for p in report["parts"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
