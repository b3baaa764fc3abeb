"""The experimental design as data: which estimators play which role in the paper's claims, the
sweep presets built from those roles, the grid of runs a preset expands into, and what a run is
expected to cost.

A :class:`Preset` lists, per task, the estimator specs to train (``name`` or
``name:key=value:...``, the command line's syntax), the seeds, and the trainer settings; its
:meth:`Preset.runs` is the grid task x estimator x seed as :class:`RunSpec` objects, each of
which knows its directory (``runs/<task>/<label>/seed<k>/`` under the sweep's output) and its
full :class:`~fade.testbed.trainer.TrainConfig`. A :class:`Tuning` names the FADE configurations
tried on one task; estimators listed as ``tuned`` on another task are trained there with the
configuration chosen on the tuning task, without retuning (the sweep resolves them once the
candidates have finished). Run specs are small frozen data, so they travel cheaply to worker
processes.

Costs are estimates from a cost model measured on the 2-core development machine (one torch
thread per worker, two workers busy); the report states the CPU time each run really took.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fade.registry import estimator
from fade.specs import format_spec, parse_spec
from fade.specs import identity as spec_identity

__all__ = [
    "ABLATIONS",
    "BALANCED",
    "FADE",
    "FAILURE_BIASED",
    "H_STAR_LEVELS",
    "POWER_LEVELS",
    "PRESETS",
    "STATIC_BASELINES",
    "SUCCESS_BIASED",
    "Preset",
    "RunSpec",
    "TaskPlan",
    "Tuning",
    "canonical_spec",
    "check_spec",
    "estimate_seconds",
    "estimate_wall_seconds",
    "format_minutes",
    "get_preset",
    "identity",
    "spec_label",
]

# -- roles in the claims ------------------------------------------------------------------------

#: Sign axis (docs/method.md, section 1): success-biased weights put more mass on successes (m_S > m_F),
#: balanced ones equal mass, failure-biased ones more on failures.
SUCCESS_BIASED: tuple[str, ...] = ("psr", "asym_grpo:delta=2")
BALANCED: tuple[str, ...] = ("grpo", "dr_grpo")
FAILURE_BIASED: tuple[str, ...] = ("nsr", "asym_grpo:delta=0.5")

#: Difficulty axis: Power(alpha), m_S = m_F = p q^alpha. alpha = 1 is exactly dr_grpo (the same
#: advantages bit for bit), so the dr_grpo runs stand in for it instead of training it twice.
POWER_LEVELS: tuple[tuple[int, str], ...] = ((1, "dr_grpo"), (2, "power:alpha=2"), (3, "power:alpha=3"))

#: The static baselines FADE is measured against (the issue's list; asym_grpo at its default delta).
STATIC_BASELINES: tuple[str, ...] = (
    "grpo", "dr_grpo", "rloo", "maxrl", "w_reinforce", "passk:k=4", "power:alpha=2", "asym_grpo:delta=0.5",
)

#: FADE with its defaults, and its ablations (docs/method.md, section 3): fixed delta = 1 (fade_alpha),
#: fixed alpha = 1 (fade_delta), both knobs from the entropy, a fixed log-decay schedule.
FADE = "fade"
ABLATIONS: tuple[str, ...] = ("fade_alpha", "fade_delta", "fade_entropy_only", "fade_decay")

#: H* sensitivity: the target entropy as a fraction of the first observed entropy.
H_STAR_LEVELS: tuple[tuple[float, str], ...] = (
    (0.3, "fade:h_star_ratio=0.3"), (0.5, FADE), (0.7, "fade:h_star_ratio=0.7"),
)

# -- estimator specs ----------------------------------------------------------------------------
# Presets write estimators in the spec grammar of fade.specs; a run carries the parsed (name,
# params), parsed once when the grid is built.


def canonical_spec(text: str) -> str:
    """A spec written one way: ``name:key=value`` with the given parameters in sorted order."""
    return format_spec(*parse_spec(text))


def spec_label(text: str) -> str:
    """The folder name of a spec: ``power-alpha=2``, ``asym_grpo-delta=0.5``, ``grpo``."""
    return canonical_spec(text).replace(":", "-")


def identity(text: str) -> tuple[str, tuple[tuple[str, Any], ...]]:
    """What the estimator of spec ``text`` is, whatever it leaves to defaults (:func:`fade.specs.identity`).

    ``asym_grpo`` and ``asym_grpo:delta=0.5`` are the same estimator, so the claims find a run
    by its identity, not by the text of its spec. Unknown names raise ValueError listing the
    registered ones.
    """
    name, params = parse_spec(text)
    try:
        return spec_identity(name, params)
    except ValueError as exc:
        raise ValueError(f"estimator spec {text!r}: {exc}") from None


def _auto_params(name: str, params: dict[str, Any], steps: int) -> dict[str, Any]:
    """Parameters a run fills in from its own settings: fade_decay's schedule spans the run."""
    if name == "fade_decay" and params.get("total_steps") is None:
        return {**params, "total_steps": steps}
    return params


def check_spec(text: str, steps: int = 100) -> None:
    """Raise ValueError if ``text`` does not build an estimator (unknown name, bad parameter)."""
    name, params = parse_spec(text)
    identity(text)
    try:
        estimator(name, **_auto_params(name, params, steps))
    except ValueError as exc:
        raise ValueError(f"estimator spec {text!r}: {exc}") from None


# -- the run grid -------------------------------------------------------------------------------


@dataclass(frozen=True)
class RunSpec:
    """One training run of a sweep: a task, an estimator and a seed, with trainer settings.

    The estimator is its registered ``name`` and the ``params`` its spec gave, as sorted (key,
    value) pairs; ``estimator`` is the canonical spec text. ``tuned_from`` names the task on
    which the estimator's parameters were chosen (None: they were not). ``trainer`` holds further
    :class:`TrainConfig` fields as (name, value) pairs.
    """

    task: str
    name: str
    params: tuple[tuple[str, Any], ...]
    seed: int
    steps: int
    eval_every: int
    eval_prompts: int
    eval_samples: int
    prompts_per_step: int = 32
    group_size: int = 8
    checkpoint_every: int = 50
    trainer: tuple[tuple[str, Any], ...] = ()
    tuned_from: str | None = None
    trains_on: str | None = None

    @property
    def testbed_task(self) -> str:
        """The testbed task the run trains on: ``trains_on``, or ``task`` when that is a task itself."""
        return self.trains_on or self.task

    @property
    def estimator(self) -> str:
        """The canonical spec, ``name:key=value:...``."""
        return format_spec(self.name, dict(self.params))

    @property
    def label(self) -> str:
        return self.estimator.replace(":", "-")

    @property
    def key(self) -> str:
        """``task/label/seedK``: the run's place under ``runs/`` and its name in reports."""
        return f"{self.task}/{self.label}/seed{self.seed}"

    def directory(self, out: str | Path) -> Path:
        return Path(out) / "runs" / self.task / self.label / f"seed{self.seed}"

    def train_kwargs(self, out: str | Path) -> dict[str, Any]:
        """Keyword arguments of the run's TrainConfig (progress off: the sweep draws its own)."""
        kwargs: dict[str, Any] = dict(
            out=str(self.directory(out)), task=self.testbed_task, estimator=self.name,
            estimator_args=_auto_params(self.name, dict(self.params), self.steps), steps=self.steps, seed=self.seed,
            eval_every=self.eval_every, eval_prompts=self.eval_prompts, eval_samples=self.eval_samples,
            prompts_per_step=self.prompts_per_step, group_size=self.group_size,
            checkpoint_every=min(self.checkpoint_every, self.steps), progress=False,
        )
        kwargs.update(dict(self.trainer))
        return kwargs

    @property
    def num_evals(self) -> int:
        """Evaluations the trainer runs: the base at step 0, every ``eval_every`` steps and the last."""
        if not self.eval_every or not self.eval_prompts:
            return 0
        return 1 + self.steps // self.eval_every + (1 if self.steps % self.eval_every else 0)


@dataclass(frozen=True)
class TaskPlan:
    """What a preset trains on one task: estimator specs, trainer settings, tuned estimators.

    ``task`` names the plan in run folders and reports; it is the testbed task trained on unless
    ``trains_on`` names another, so that one task can be trained in two settings (say Adam and
    plain SGD) that the claims read apart.
    """

    task: str
    estimators: tuple[str, ...]
    steps: int
    eval_every: int
    eval_prompts: int
    eval_samples: int = 64
    prompts_per_step: int = 32
    group_size: int = 8
    checkpoint_every: int = 50
    tuned: tuple[str, ...] = ()
    trainer: tuple[tuple[str, Any], ...] = ()
    trains_on: str | None = None

    def run(self, estimator: str, seed: int, tuned_from: str | None = None) -> RunSpec:
        name, params = parse_spec(estimator)
        return RunSpec(
            task=self.task, name=name, params=tuple(sorted(params.items())), seed=seed, steps=self.steps,
            eval_every=self.eval_every, eval_prompts=self.eval_prompts, eval_samples=self.eval_samples,
            prompts_per_step=self.prompts_per_step, group_size=self.group_size,
            checkpoint_every=self.checkpoint_every, trainer=self.trainer, tuned_from=tuned_from,
            trains_on=self.trains_on,
        )


@dataclass(frozen=True)
class Tuning:
    """FADE's defaults chosen on one task: the candidate specs and the score that picks one.

    The score is ``passk_mean`` (the mean over k = 1, 2, 4, ..., 64 of the final pass@k, averaged
    over seeds): one number that rewards accuracy (small k) and diversity (large k) alike, the
    trade-off FADE claims to win. Ties go to the earlier candidate.
    """

    task: str
    candidates: tuple[str, ...]
    score: str = "passk_mean"


@dataclass(frozen=True)
class Preset:
    """A named sweep: tasks with their plans, seeds, and optionally a tuning of FADE's defaults."""

    name: str
    description: str
    seeds: tuple[int, ...]
    plans: tuple[TaskPlan, ...]
    tuning: Tuning | None = None

    @property
    def tasks(self) -> tuple[str, ...]:
        return tuple(plan.task for plan in self.plans)

    def plan(self, task: str) -> TaskPlan:
        for plan in self.plans:
            if plan.task == task:
                return plan
        raise ValueError(f"preset {self.name!r} has no task {task!r}; its tasks: {', '.join(self.tasks)}")

    def runs(self) -> list[RunSpec]:
        """Every run whose estimator parameters are fixed in advance (not the tuned ones)."""
        return [plan.run(spec, seed) for plan in self.plans for spec in plan.estimators for seed in self.seeds]

    def tuned_runs(self, choice: str) -> list[RunSpec]:
        """The tuned runs, trained with ``choice``, the spec chosen on the tuning task."""
        if self.tuning is None:
            return []
        name = parse_spec(choice)[0]
        return [
            plan.run(choice, seed, tuned_from=self.tuning.task)
            for plan in self.plans
            for tuned in plan.tuned
            if parse_spec(tuned)[0] == name
            for seed in self.seeds
        ]

    def pending_tuned(self) -> list[tuple[TaskPlan, str, int]]:
        """(plan, estimator name, seed) of each tuned run, before its parameters are chosen."""
        return [(plan, tuned, seed) for plan in self.plans for tuned in plan.tuned for seed in self.seeds]

    def with_overrides(
        self,
        *,
        estimators: Sequence[str] | None = None,
        seeds: Sequence[int] | None = None,
        tasks: Sequence[str] | None = None,
        steps: int | None = None,
    ) -> Preset:
        """A custom sweep built on this preset's trainer settings.

        ``tasks`` keeps those of the preset's tasks (a task the preset does not plan takes the
        first plan's settings); ``estimators`` replaces every task's estimator list and drops the
        tuning (a custom list has no candidates to tune on); ``seeds`` replaces the seeds;
        ``steps`` sets every run's length (evaluations stay every ``eval_every`` steps, and the
        last step is always evaluated).
        """
        plans = list(self.plans)
        tuning = self.tuning
        if tasks is not None:
            from fade.testbed.tasks import TASKS

            if not tasks:
                raise ValueError("--tasks is empty: expected at least one task")
            by_task = {plan.task: plan for plan in plans}
            known = sorted({*TASKS, *by_task})
            unknown = [t for t in tasks if t not in known]
            if unknown:
                raise ValueError(f"unknown task(s) {unknown}; known tasks: {', '.join(known)}")
            plans = [
                by_task.get(t) or dataclasses.replace(plans[0], task=t, tuned=(), trains_on=None)
                for t in dict.fromkeys(tasks)
            ]
            if tuning is not None and tuning.task not in tasks:
                tuning = None
                plans = [dataclasses.replace(plan, tuned=()) for plan in plans]
        if estimators is not None:
            if not estimators:
                raise ValueError("--estimators is empty: expected at least one estimator spec")
            for text in estimators:
                check_spec(text)
            specs = tuple(dict.fromkeys(canonical_spec(t) for t in estimators))
            plans = [dataclasses.replace(plan, estimators=specs, tuned=()) for plan in plans]
            tuning = None
        if steps is not None:
            if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
                raise ValueError(f"--steps must be a positive integer, got {steps!r}")
            plans = [dataclasses.replace(plan, steps=steps) for plan in plans]
        new_seeds = self.seeds
        if seeds is not None:
            if not seeds:
                raise ValueError("--seeds is empty: expected at least one seed")
            bad = [s for s in seeds if isinstance(s, bool) or not isinstance(s, int) or s < 0]
            if bad:
                raise ValueError(f"seeds must be integers >= 0, got {bad}")
            new_seeds = tuple(dict.fromkeys(seeds))
        custom = any(x is not None for x in (estimators, seeds, tasks, steps))
        return Preset(
            name=self.name if not custom else f"{self.name} (custom)",
            description=self.description if not custom else f"A custom sweep with the {self.name} preset's trainer settings.",
            seeds=new_seeds,
            plans=tuple(plans),
            tuning=tuning,
        )

    def check(self) -> None:
        """Raise ValueError naming the first estimator spec that does not build."""
        for plan in self.plans:
            for text in (*plan.estimators, *plan.tuned):
                check_spec(text, plan.steps)
        if self.tuning is not None:
            for text in self.tuning.candidates:
                check_spec(text)
            tuning_plan = self.plan(self.tuning.task)
            missing = [c for c in self.tuning.candidates if canonical_spec(c) not in map(canonical_spec, tuning_plan.estimators)]
            if missing:
                raise ValueError(f"tuning candidates {missing} are not trained on {self.tuning.task!r}")


def _ordered(*groups: Iterable[str]) -> tuple[str, ...]:
    """The specs of all groups, each once, in first-seen order."""
    seen: dict[str, None] = {}
    for group in groups:
        for text in group:
            seen.setdefault(text, None)
    return tuple(seen)


_QUICK = Preset(
    name="quick",
    description=(
        "A first look in about 10 minutes on 2 cores: the sign axis (psr, grpo, nsr) and FADE on "
        "arithmetic, 3 seeds, 120 steps, small evaluations. Verdicts at this length say little."
    ),
    seeds=(0, 1, 2),
    plans=(
        TaskPlan(
            task="arithmetic", estimators=("grpo", "psr", "nsr", FADE),
            steps=120, eval_every=20, eval_prompts=32, eval_samples=64, checkpoint_every=40,
        ),
    ),
)

_FULL_ARITHMETIC = _ordered(
    BALANCED, SUCCESS_BIASED, FAILURE_BIASED, [spec for _, spec in POWER_LEVELS], STATIC_BASELINES,
    [spec for _, spec in H_STAR_LEVELS], ABLATIONS,
)

_FULL = Preset(
    name="full",
    description=(
        "Every claim on arithmetic with 3 seeds (sign axis, difficulty axis, FADE against the static "
        "baselines, ablations, H* sensitivity, FADE's defaults chosen among the H* candidates), then "
        "FADE with the defaults chosen on arithmetic against the static baselines on countdown."
    ),
    seeds=(0, 1, 2),
    plans=(
        TaskPlan(task="arithmetic", estimators=_FULL_ARITHMETIC, steps=300, eval_every=30, eval_prompts=64, eval_samples=64),
        TaskPlan(
            task="countdown", estimators=STATIC_BASELINES, tuned=(FADE,),
            steps=250, eval_every=25, eval_prompts=64, eval_samples=64,
        ),
    ),
    tuning=Tuning(task="arithmetic", candidates=tuple(spec for _, spec in H_STAR_LEVELS)),
)

# -- the paper preset: a calibrated regime where both axes can matter ------------------------------

#: The calibrated regime (docs/results/paper/PILOT.md): countdown problems with several solutions,
#: G = 16, and a learning rate at which the balanced baselines gain within 40-100 steps and then
#: wander on a plateau as their entropy and pass@16 fall (1.5e-4 still rises at 250 steps; 3e-4
#: barely gains; 1e-3 diverges). On a plateau about one seed in ten sets its smoothed peak after
#: 80% of the run, at 200 steps, at 300 and with a small training pool alike.
PAPER_TASK = "countdown_multi"
PAPER_TRAINER: tuple[tuple[str, Any], ...] = (("lr", 2e-4),)
#: Plain SGD for the first-order entropy formula (docs/method.md, section 4: it is about plain gradient steps),
#: unclipped, at a step size it survives: 0.1 sent 7 of 15 runs (every nsr seed) to pass@1 = 0 within
#: 20 steps, and 0.05 diverged on nsr seed 1 within 40 (PILOT.md).
PAPER_SGD_TRAINER: tuple[tuple[str, Any], ...] = (("optimizer", "sgd"), ("lr", 0.03), ("grad_clip", 1e9))
#: FADE with its sign knob engaged: H* at 0.7, 1.0 and 1.2 of the first entropy (at and above 1
#: delta < 1 from the start), the paper's headline absolute H* = 1.0, and the other reading of
#: the EMA (the new value's weight 0.98), beside the default (0.5 of the first entropy).
PAPER_FADE_ARMS: tuple[str, ...] = (
    FADE, "fade:h_star_ratio=0.7", "fade:h_star_ratio=1.0", "fade:h_star_ratio=1.2", "fade:h_star=1.0",
    "fade:ema=0.98",
)
#: The ablations with the sign knob acting (H* at the first entropy), and the fixed schedule.
PAPER_ABLATIONS: tuple[str, ...] = (
    "fade_alpha", "fade_delta:h_star_ratio=1.0", "fade_entropy_only:h_star_ratio=1.0", "fade_decay",
)
#: The estimators run with plain SGD: one of each sign, for the entropy formula under both signs.
PAPER_SGD: tuple[str, ...] = ("psr", "grpo", "nsr")

_PAPER = Preset(
    name="paper",
    description=(
        "The instrument for the paper's claims: countdown_multi (several solutions per problem, the base "
        "policy solving 5-40% of most training prompts), G = 16 and 16 prompts a step, 5 seeds paired by seed; "
        "the sign and difficulty axes, the static baselines, FADE with its sign knob engaged (H* arms, the EMA "
        "reading) and its ablations with Adam, and one estimator of each sign with plain SGD for the entropy "
        "formula. Verdicts from paired bootstrap intervals."
    ),
    seeds=(0, 1, 2, 3, 4),
    plans=(
        TaskPlan(
            task=PAPER_TASK,
            estimators=_ordered(
                BALANCED, SUCCESS_BIASED, FAILURE_BIASED, [spec for _, spec in POWER_LEVELS],
                ("rloo", "maxrl", "passk:k=4"), PAPER_FADE_ARMS, PAPER_ABLATIONS,
            ),
            steps=200, eval_every=20, eval_prompts=64, eval_samples=32, prompts_per_step=16, group_size=16,
            checkpoint_every=50, trainer=PAPER_TRAINER,
        ),
        TaskPlan(
            task=f"{PAPER_TASK}-sgd", trains_on=PAPER_TASK, estimators=PAPER_SGD,
            steps=200, eval_every=20, eval_prompts=64, eval_samples=32, prompts_per_step=16, group_size=16,
            checkpoint_every=50, trainer=PAPER_SGD_TRAINER,
        ),
    ),
)

#: The presets ``fade sweep --preset`` knows, by name.
PRESETS: dict[str, Preset] = {p.name: p for p in (_QUICK, _FULL, _PAPER)}


def get_preset(name: str) -> Preset:
    """The preset called ``name``; an unknown name raises ValueError listing the known ones."""
    if name not in PRESETS:
        raise ValueError(f"unknown preset {name!r}; known presets: {', '.join(PRESETS)}")
    return PRESETS[name]


# -- cost model ---------------------------------------------------------------------------------

#: CPU seconds per training step at 32 prompts x G = 8 with one torch thread while a second
#: worker runs, measured on the 2-core development machine with the shipped base policies.
STEP_SECONDS: Mapping[str, float] = {"arithmetic": 0.55, "countdown": 0.95, "countdown_multi": 0.95}
#: CPU seconds per evaluated rollout (one sampled completion, plus its share of the greedy decode).
EVAL_ROLLOUT_SECONDS: Mapping[str, float] = {"arithmetic": 0.0014, "countdown": 0.0022, "countdown_multi": 0.0022}
#: Loading the policy, writing the final policy, checkpoints and the run's own plots.
RUN_OVERHEAD_SECONDS = 5.0
_REFERENCE_ROLLOUTS = 32 * 8


def estimate_seconds(run: RunSpec) -> float:
    """Expected CPU seconds of ``run`` from the cost model (unknown tasks cost like countdown)."""
    step = STEP_SECONDS.get(run.testbed_task, max(STEP_SECONDS.values()))
    per_rollout = EVAL_ROLLOUT_SECONDS.get(run.testbed_task, max(EVAL_ROLLOUT_SECONDS.values()))
    rollouts = run.prompts_per_step * run.group_size
    train = run.steps * step * rollouts / _REFERENCE_ROLLOUTS
    evaluation = run.num_evals * run.eval_prompts * run.eval_samples * per_rollout
    return RUN_OVERHEAD_SECONDS + train + evaluation


def estimate_wall_seconds(costs: Sequence[float], workers: int) -> float:
    """Wall time of jobs of the given costs on ``workers`` workers, longest first (greedy)."""
    if workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers}")
    loads = [0.0] * workers
    for cost in sorted(costs, reverse=True):
        loads[loads.index(min(loads))] += cost
    return max(loads) if costs else 0.0


def format_minutes(seconds: float) -> str:
    """``42 min`` or ``3 h 05 min``."""
    minutes = math.ceil(seconds / 60)
    return f"{minutes} min" if minutes < 60 else f"{minutes // 60} h {minutes % 60:02d} min"

