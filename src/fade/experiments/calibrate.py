"""Calibration of an experiment's regime: where the base policy starts on a task.

Whether an advantage's sign and difficulty axes can matter depends on the regime: prompts the
base never solves give no gradient to a centred estimator, prompts it always solves give none
either, and a task with one answer per problem cannot show diversity. :func:`calibrate` samples
the base policy on training and test prompts of a task and measures what decides that: the base
pass@1 per difficulty bucket, the spread of per-prompt solve rates over training prompts, and
the number of distinct correct answers the problems admit. :func:`regime_checks` states the
experiment's requirements on those numbers and whether they hold. The figure ``fade calibrate``
writes is drawn from the returned :class:`Calibration` by
:func:`fade.experiments.figures.draw_calibration`; this module draws nothing.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from fade.options import option
from fade.testbed.tasks import TASKS

__all__ = ["CalibrateConfig", "Calibration", "RegimeCheck", "calibrate", "regime_checks"]

#: Requirements of the calibrated regime: the hardest bucket's base pass@1 lies in this range
#: (hard, but not beyond reach: a centred estimator needs some successes in a group) ...
HARDEST_PASS1 = (0.02, 0.15)
#: ... and at least MID_FRACTION of training prompts have a base solve rate in MID_RANGE, where
#: the sign and difficulty weights of the estimators differ most ...
MID_RANGE = (0.05, 0.4)
MID_FRACTION = 0.3
#: ... and the problems admit several distinct correct answers on average.
MIN_MEAN_SOLUTIONS = 2.0


@dataclass(frozen=True)
class CalibrateConfig:
    """What ``fade calibrate`` does (its flags): the task, where the report goes, and
    :func:`calibrate`'s settings, whose defaults are these."""

    task: str = option(help="the built-in task", choices=TASKS)
    out: str = option(help="folder for calibration.json and calibration.png", metavar="DIR")
    model: str | None = option(None, "a local policy instead of the task's shipped base (default: the shipped base)",
                               metavar="DIR")
    train_prompts: int = option(256, "training prompts sampled", metavar="N")
    test_prompts: int = option(256, "test prompts sampled", metavar="N")
    samples: int = option(64, "completions per prompt", metavar="N")
    seed: int = option(0, "seeds the prompts drawn and the sampling")
    device: str = option("auto", "auto, cpu or cuda")
    progress: bool = option(True, "no progress bar")


@dataclass(frozen=True)
class Calibration:
    """The base policy on a task: ``pass1_by_bucket`` (test prompts), ``train_solve_rates`` (one per
    training prompt, the fraction of ``samples`` completions that are correct), ``mean_solutions``
    (distinct correct answers per training problem, None where the task cannot count them)."""

    task: str
    samples: int
    pass1_by_bucket: dict[int, float]
    train_solve_rates: list[float]
    train_buckets: list[int]
    mean_solutions: float | None

    @property
    def mid_fraction(self) -> float:
        rates = np.asarray(self.train_solve_rates)
        return float(((rates >= MID_RANGE[0]) & (rates <= MID_RANGE[1])).mean())

    def histogram(
        self, edges: tuple[float, ...] = (0.0, 1e-9, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0 - 1e-9, 1.0)
    ) -> list[tuple[str, float]]:
        """Share of training prompts per solve-rate range, for the report."""
        rates = np.asarray(self.train_solve_rates)
        labels = [
            "0",
            "(0, 0.05)",
            "[0.05, 0.1)",
            "[0.1, 0.2)",
            "[0.2, 0.4)",
            "[0.4, 0.6)",
            "[0.6, 0.8)",
            "[0.8, 1)",
            "1",
        ]
        counts, _ = np.histogram(rates, bins=np.asarray(edges))
        # numpy's last bin is closed; 1.0 lands in the last, the rest by half-open ranges.
        return [(label, float(c) / max(len(rates), 1)) for label, c in zip(labels, counts)]

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "mid_fraction": self.mid_fraction, "histogram": self.histogram()}


@dataclass(frozen=True)
class RegimeCheck:
    requirement: str
    value: str
    ok: bool


def regime_checks(cal: Calibration) -> list[RegimeCheck]:
    """The calibrated regime's requirements on ``cal``, each with the measured value."""
    hardest = cal.pass1_by_bucket[max(cal.pass1_by_bucket)]
    lo, hi = HARDEST_PASS1
    checks = [
        RegimeCheck(f"hardest bucket's base pass@1 in [{lo}, {hi}]", f"{hardest:.3f}", lo <= hardest <= hi),
        RegimeCheck(
            f"at least {MID_FRACTION:.0%} of training prompts with base solve rate in [{MID_RANGE[0]}, {MID_RANGE[1]}]",
            f"{cal.mid_fraction:.1%}", cal.mid_fraction >= MID_FRACTION,
        ),
    ]
    if cal.mean_solutions is not None:
        checks.append(RegimeCheck(
            f"at least {MIN_MEAN_SOLUTIONS:g} distinct correct answers per problem on average",
            f"{cal.mean_solutions:.2f}", cal.mean_solutions >= MIN_MEAN_SOLUTIONS,
        ))
    return checks


def calibrate(
    task_name: str,
    *,
    model: str | None = CalibrateConfig.model,
    train_prompts: int = CalibrateConfig.train_prompts,
    test_prompts: int = CalibrateConfig.test_prompts,
    samples: int = CalibrateConfig.samples,
    seed: int = CalibrateConfig.seed,
    device: str = CalibrateConfig.device,
    progress: bool = False,
) -> Calibration:
    """Sample the base policy (the task's shipped one, or ``model``) ``samples`` times on
    ``train_prompts`` training and ``test_prompts`` test problems (stratified over buckets);
    ``progress`` draws a bar over the prompts. The defaults are :class:`CalibrateConfig`'s."""
    for name, value in (("train_prompts", train_prompts), ("test_prompts", test_prompts), ("samples", samples)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    import torch

    from fade.progress import step_bar
    from fade.testbed.evaluation import solve_counts
    from fade.testbed.policy import load_policy, resolve_device
    from fade.testbed.tasks import get_task
    from fade.testbed.trainer import base_model_dir

    task = get_task(task_name)
    policy_dir = model or base_model_dir(task.base or task_name)
    policy, tokenizer = load_policy(policy_dir, device=resolve_device(device))
    eos = tokenizer.eos_token_id
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else eos
    gen = torch.Generator(device=next(policy.parameters()).device).manual_seed(seed)
    kwargs = dict(samples=samples, max_new_tokens=task.max_answer_chars + 1, eos_id=eos, pad_id=pad, generator=gen)

    test = task.problems("test", n=test_prompts, seed=seed)
    train = task.problems("train", n=train_prompts, seed=seed)
    with step_bar("calibrate", len(test) + len(train), 0, progress, unit="prompts") as advance:
        seen = [0]

        def on_prompts(split: str, total: int) -> Callable[[int], None]:
            def done(prompts: int) -> None:
                advance(f"{task_name}: {split} prompts {prompts}/{total}, {samples} samples each", prompts - seen[0])
                seen[0] = prompts
            return done

        counts = solve_counts(policy, tokenizer, task, test, on_prompts=on_prompts("test", len(test)), **kwargs)
        seen[0] = 0
        train_counts = solve_counts(
            policy, tokenizer, task, train, on_prompts=on_prompts("training", len(train)), **kwargs
        )
    by_bucket: dict[int, list[float]] = defaultdict(list)
    for problem, c in zip(test, counts):
        by_bucket[problem.difficulty].append(c / samples)
    solutions = getattr(task, "solutions", None)
    mean_solutions = None if solutions is None else float(np.mean([len(solutions(p)) for p in train]))
    return Calibration(
        task=task_name,
        samples=samples,
        pass1_by_bucket={b: float(np.mean(v)) for b, v in sorted(by_bucket.items())},
        train_solve_rates=[c / samples for c in train_counts],
        train_buckets=[p.difficulty for p in train],
        mean_solutions=None if mean_solutions is None or math.isnan(mean_solutions) else mean_solutions,
    )
