"""Checks of a verl CPU smoke run (cpu_smoke.sh), read from what verl and fade wrote.

    python examples/verl/cpu_smoke_check.py OUT [the Hydra overrides the runs were given]

- every step ran: ``OUT/full.metrics.jsonl`` (verl's file logger) has steps 1, 2, 3 and
  ``OUT/resumed.metrics.jsonl`` step 3, and the console logs have the matching ``step:`` lines;
- with one of fade's estimators and fade's trainer (``trainer.v1.trainer_mode=fade``, the recipe's),
  verl's logger got the ``fade/...`` batch diagnostics at every step, and with FADE (a stateful
  one) also ``fade/alpha`` and ``fade/delta``, and ``OUT/full/global_step_2/fade_estimator.json``
  exists; with verl's own estimators, no ``fade/...`` metric;
- the resumed step 3 is the uninterrupted one: the same FADE state after it (alpha, delta, p_hat,
  h_hat, h_star) and the same rewards, entropy and loss.

Prints what it compared and exits 1 on the first failure. The estimator and the trainer mode are
the last ``algorithm.adv_estimator=`` and ``trainer.v1.trainer_mode=`` among the overrides (the
recipe's ``fade`` when none).
"""

from __future__ import annotations

import json
import math
import re
import sys
from pathlib import Path

#: FADE's schedule, as fade's verl trainer logs it.
SCHEDULE = ("alpha", "delta", "p_hat", "h_hat", "h_star")
#: Step metrics a resumed step must repeat, with the relative tolerance of "the same": the rollouts'
#: rewards and lengths, the policy's entropy and the advantages to float precision; the gradient
#: norm to the order of bf16 sums (verl orders a batch by when its rollouts finish).
REPEATED = {"critic/score/mean": 1e-6, "response_length/mean": 1e-6, "actor/entropy": 1e-6,
            "critic/advantages/max": 1e-6, "critic/advantages/min": 1e-6, "actor/grad_norm": 1e-3}
#: FADE's state after a step is a function of the rewards and the entropy: equal to float precision.
STATE_RTOL = 1e-9

_STEP_LINE = re.compile(r"step:(\d+) - ")


class CheckFailed(Exception):
    pass


def metrics(path: Path) -> dict[int, dict]:
    """verl's file logger: step -> metrics."""
    if not path.is_file():
        raise CheckFailed(f"{path} is missing: verl's file logger wrote nothing (did the run start?)")
    out = {}
    for line in path.read_text().splitlines():
        if line.strip():
            record = json.loads(line)
            out[int(record["step"])] = record["data"]
    return out


def console_steps(path: Path) -> dict[int, str]:
    """The ``step:N - key:value ...`` lines of verl's console logger, by step."""
    text = re.sub(r"\x1b\[[0-9;]*m", "", path.read_text())
    return {int(m.group(1)): line for line in text.splitlines() if (m := _STEP_LINE.search(line))}


def close(a: float, b: float, rtol: float) -> bool:
    return math.isclose(float(a), float(b), rel_tol=rtol, abs_tol=1e-12)


def last_value(overrides: list[str], key: str, default: str) -> str:
    """The value the overrides give ``key`` (Hydra: the last one wins), else the recipe's ``default``."""
    value = default
    for item in overrides:
        if item.lstrip("+").startswith(f"{key}="):
            value = item.split("=", 1)[1]
    return value


def check(out: Path, overrides: list[str]) -> list[str]:
    import fade
    from fade.integrations import verl as fv

    report = []
    name = last_value(overrides, "algorithm.adv_estimator", "fade")
    # fade's trainer adds the fade/... metrics; verl's own trainer modes compute fade's advantages without
    fade_trainer = last_value(overrides, "trainer.v1.trainer_mode", "fade") == fv.TRAINER_NAME
    resumed = (out / "resumed.log").is_file()
    runs = {"full": [1, 2, 3], **({"resumed": [3]} if resumed else {})}
    logged = {run: metrics(out / f"{run}.metrics.jsonl") for run in runs}
    for run, steps in runs.items():
        if sorted(logged[run]) != steps:
            raise CheckFailed(f"{run} run logged steps {sorted(logged[run])}, expected {steps}")
        lines = console_steps(out / f"{run}.log")
        if sorted(lines) != steps:
            raise CheckFailed(f"{run} run printed step lines {sorted(lines)}, expected {steps}")
        report.append(f"{run}: steps {steps} in verl's file and console loggers")

    stateful = False
    if fv.is_fade_name(name) and fade_trainer:
        stateful = fade.spec(fv.fade_name(name)).schedule is not None  # FADE and its variants
        # defined on every batch (the sign balance and difficulty are left out of a batch without signal)
        wanted = {f"fade/{k}" for k in ("positive_mass", "negative_mass", "effective_sample_fraction")}
        if stateful:
            wanted |= {"fade/alpha", "fade/delta"}
        for run, steps in runs.items():
            lines = console_steps(out / f"{run}.log")
            for step in steps:
                missing = sorted(k for k in wanted if k not in logged[run][step] or f"{k}:" not in lines[step])
                if missing:
                    raise CheckFailed(f"{run} run, step {step}: verl's loggers lack {missing}")
        report.append(f"{name}: {', '.join(sorted(wanted))} logged at every step")
        if stateful:
            state = out / "full" / "global_step_2" / fv.STATE_FILE
            if not state.is_file():
                raise CheckFailed(f"{state} is missing: the checkpoint at step 2 has no {name} state")
            report.append(f"{state} written with the step-2 checkpoint")
    elif fv.is_fade_name(name):
        report.append(f"{name} in verl's own trainer mode: fade's function computes the advantages, "
                      f"the fade/... metrics come with trainer.v1.trainer_mode={fv.TRAINER_NAME}")
    else:
        leaked = sorted(k for step in logged["full"].values() for k in step if k.startswith("fade/"))
        if leaked:
            raise CheckFailed(f"verl's own estimator {name!r} got fade metrics {leaked[:3]}")
        report.append(f"{name}: verl's own estimator, no fade metrics")

    if resumed:
        a, b = logged["full"][3], logged["resumed"][3]
        tolerance = {**{k: t for k, t in REPEATED.items() if k in a}, **{f"fade/{k}": STATE_RTOL for k in SCHEDULE}}
        keys = [k for k in tolerance if k in a]
        diffs = {k: (a[k], b.get(k)) for k in keys if b.get(k) is None or not close(a[k], b[k], tolerance[k])}
        if diffs:
            raise CheckFailed(f"the resumed step 3 differs from the uninterrupted one: {diffs}")
        report.append("resumed step 3 = uninterrupted step 3: " + ", ".join(f"{k} {a[k]:.6g}" for k in keys))
        if stateful:
            full = json.loads((out / "full" / "global_step_3" / fv.STATE_FILE).read_text())["state"]
            again = json.loads((out / "resumed" / "global_step_3" / fv.STATE_FILE).read_text())["state"]
            diffs = {k: (full[k], again[k]) for k in full
                     if (full[k] is None) != (again[k] is None)
                     or (full[k] is not None and not close(full[k], again[k], STATE_RTOL))}
            if diffs:
                raise CheckFailed(f"{name}'s state after the resumed step 3 differs: {diffs}")
            report.append(f"{name} state after step 3, uninterrupted and resumed: {full}")
    return report


def main() -> None:
    if len(sys.argv) < 2:
        sys.exit(f"usage: {sys.argv[0]} OUT [Hydra overrides...]")
    try:
        for line in check(Path(sys.argv[1]), sys.argv[2:]):
            print(f"check: {line}")
    except CheckFailed as exc:
        sys.exit(f"check failed: {exc}")


if __name__ == "__main__":
    main()
