"""The experimental design's machinery: the records a sweep preset is written in, and the roles
more than one claim reads (the balanced baselines, the static baselines, FADE's defaults); a role
only one claim reads is a constant of that claim's module (:mod:`fade.experiments.claims`).

A :class:`Preset` lists, per task, the arms to train, the seeds, and the trainer settings. An arm
is an estimator spec (``name`` or ``name:key=value:...``, the command line's syntax), or an
:class:`Arm`: an estimator spec with training settings of its own (a policy loss, an entropy
term, dynamic sampling: :data:`ARM_SETTINGS`), so that a loss-side control is compared with an
advantage estimator on the same plan. :meth:`Preset.runs` is the grid task x arm x seed as
:class:`RunSpec` objects, each of which knows its directory (``runs/<task>/<label>/seed<k>/``
under the sweep's output; an arm without settings of its own keeps the folder its estimator
always had) and its full :class:`~fade.testbed.trainer.TrainConfig`. A :class:`Tuning` names the FADE configurations
tried on one task; estimators listed as ``tuned`` on another task are trained there with the
configuration chosen on the tuning task, without retuning (the sweep resolves them once the
candidates have finished). Run specs are small frozen data, so they travel cheaply to worker
processes.

The presets themselves are data, one module each, in :mod:`fade.experiments.presets`; what a run
costs is :mod:`fade.experiments.costs`; what the command line's ``--estimators``, ``--seeds``,
``--tasks`` and ``--steps`` make of a preset is :func:`fade.cli.sweep.custom_preset`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fade.registry import estimator, spec
from fade.specs import format_spec, format_value, parse_spec
from fade.specs import identity as spec_identity
from fade.testbed.config import TrainConfig

__all__ = [
    "ARM_SETTINGS",
    "BALANCED",
    "FADE",
    "STATIC_BASELINES",
    "Arm",
    "Comparison",
    "Preset",
    "RunSpec",
    "TaskPlan",
    "Tuning",
    "as_arm",
    "canonical_spec",
    "check_spec",
    "comparisons",
    "identity",
    "ordered",
    "spec_label",
]

# -- roles that several claims read ---------------------------------------------------------------

#: The balanced baselines (docs/method.md, section 1: equal mass on successes and failures, m_S = m_F),
#: the sign axis's middle, whose peaks the regime check reads and whose spread sizes the report's
#: minimum detectable difference.
BALANCED: tuple[str, ...] = ("grpo", "dr_grpo")

#: The static baselines FADE is measured against (the issue's list; asym_grpo at its default delta).
STATIC_BASELINES: tuple[str, ...] = (
    "grpo", "dr_grpo", "rloo", "maxrl", "w_reinforce", "passk:k=4", "power:alpha=2", "asym_grpo:delta=0.5",
)

#: FADE with its defaults.
FADE = "fade"

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
    """Parameters a run fills in from its own settings: an estimator's run length (fade_decay's
    schedule spans the run) when the spec leaves it unset."""
    key = spec(name).run_length
    if key is not None and params.get(key) is None:
        return {**params, key: steps}
    return params


def check_spec(text: str, steps: int = 100) -> None:
    """Raise ValueError if ``text`` does not build an estimator (unknown name, bad parameter)."""
    name, params = parse_spec(text)
    identity(text)
    try:
        estimator(name, **_auto_params(name, params, steps))
    except ValueError as exc:
        raise ValueError(f"estimator spec {text!r}: {exc}") from None


# -- arms: an estimator with training settings of its own ---------------------------------------


#: The training settings an arm may set beyond its plan's: TrainConfig fields, whose values the
#: trainer's own validation checks (:meth:`Arm.check` builds the config an arm's settings give), so
#: a bad preset is refused before any of its runs starts, with the trainer's message.
ARM_SETTINGS: tuple[str, ...] = (
    "policy_loss", "entropy", "filter_zero_variance", "filter_max_draws", "epochs", "minibatches", "loss_agg",
)
#: The settings whose values are loss-term specs, kept in canonical form, by the kind of term.
_LOSS_SPECS = {"policy_loss": "policy loss", "entropy": "entropy term"}


@dataclass(frozen=True)
class Arm:
    """What one arm of a plan trains: an estimator spec (canonical) and the training settings it
    sets beyond its plan's, as (name, value) pairs sorted by name (a loss term's spec canonical).

    ``text`` names the arm in reports (``dr_grpo+policy_loss=ppo_clip:clip_ratio_high=0.28``) and
    ``label`` in run folders (``:`` written ``-``); an arm that sets nothing is its estimator, with
    the estimator's text and folder. Build one with :func:`as_arm`.
    """

    estimator: str
    overrides: tuple[tuple[str, Any], ...] = ()

    @property
    def text(self) -> str:
        return self.estimator + "".join(f"+{key}={format_value(value)}" for key, value in self.overrides)

    @property
    def label(self) -> str:
        return self.text.replace(":", "-")

    @property
    def identity(self) -> tuple:
        """What the arm trains, whatever its estimator spec leaves to defaults (:func:`identity`)."""
        return identity(self.estimator), self.overrides

    @property
    def stateful(self) -> bool:
        """Whether the arm's estimator carries state across steps (FADE's family)."""
        return spec(parse_spec(self.estimator)[0]).stateful

    def check(self, steps: int = 100) -> None:
        """Raise ValueError naming the arm when its estimator does not build, a setting is not one
        an arm may set, or the trainer refuses the settings (TrainConfig.validate)."""
        check_spec(self.estimator, steps)
        for key, _ in self.overrides:
            if key not in ARM_SETTINGS:
                raise ValueError(f"arm {self.text!r}: unknown training setting {key!r}; an arm may set "
                                 f"{', '.join(ARM_SETTINGS)}")
        try:
            TrainConfig(out=".", **dict(self.overrides)).validate()  # validation reads no folder
        except (TypeError, ValueError) as exc:
            raise ValueError(f"arm {self.text!r}: {exc}") from None


def _setting(key: str, value: Any) -> Any:
    if key in _LOSS_SPECS and isinstance(value, str):
        return format_spec(*parse_spec(value, what=_LOSS_SPECS[key]))
    return value


def as_arm(arm: str | Arm, **overrides: Any) -> Arm:
    """The arm of an estimator spec (or an arm) with the training settings ``overrides``, in
    canonical form. Nothing is looked up here: :meth:`Arm.check` does that."""
    if isinstance(arm, Arm):
        given = dict(arm.overrides)
        clash = sorted(k for k in set(given) & set(overrides) if given[k] != _setting(k, overrides[k]))
        if clash:
            raise ValueError(f"arm {arm.text!r} already sets {', '.join(clash)}")
        overrides, arm = {**given, **overrides}, arm.estimator
    pairs = tuple(sorted((key, _setting(key, value)) for key, value in overrides.items()))
    return Arm(canonical_spec(arm), pairs)


# -- the run grid -------------------------------------------------------------------------------

#: TrainConfig's defaults: a run or plan that leaves a setting unset trains at the trainer's own.
_TRAIN_DEFAULTS: Mapping[str, Any] = {f.name: f.default for f in dataclasses.fields(TrainConfig)}


@dataclass(frozen=True)
class RunSpec:
    """One training run of a sweep: a task, an arm and a seed, with trainer settings.

    The arm's estimator is its registered ``name`` and the ``params`` its spec gave, as sorted
    (key, value) pairs; ``estimator`` is the canonical spec text. ``tuned_from`` names the task on
    which the estimator's parameters were chosen (None: they were not). ``trainer`` holds further
    :class:`TrainConfig` fields as (name, value) pairs, the plan's; ``overrides`` those the arm
    sets (:class:`Arm`), which name the run's folder and apply after the plan's.
    """

    task: str
    name: str
    params: tuple[tuple[str, Any], ...]
    seed: int
    steps: int
    eval_every: int
    eval_prompts: int
    eval_samples: int
    prompts_per_step: int = _TRAIN_DEFAULTS["prompts_per_step"]
    group_size: int = _TRAIN_DEFAULTS["group_size"]
    checkpoint_every: int = _TRAIN_DEFAULTS["checkpoint_every"]
    trainer: tuple[tuple[str, Any], ...] = ()
    tuned_from: str | None = None
    trains_on: str | None = None
    overrides: tuple[tuple[str, Any], ...] = ()

    @property
    def stateful(self) -> bool:
        """Whether the run's estimator carries state across steps (FADE's family)."""
        return spec(self.name).stateful

    @property
    def testbed_task(self) -> str:
        """The testbed task the run trains on: ``trains_on``, or ``task`` when that is a task itself."""
        return self.trains_on or self.task

    @property
    def estimator(self) -> str:
        """The canonical spec, ``name:key=value:...``."""
        return format_spec(self.name, dict(self.params))

    @property
    def arm(self) -> Arm:
        """The estimator with the training settings of its own: what the run compares."""
        return Arm(self.estimator, self.overrides)

    @property
    def label(self) -> str:
        return self.arm.label

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
        kwargs.update(dict(self.overrides))
        return kwargs

    @property
    def num_evals(self) -> int:
        """Evaluations the trainer runs: the base at step 0, every ``eval_every`` steps and the last."""
        if not self.eval_every or not self.eval_prompts:
            return 0
        return 1 + self.steps // self.eval_every + (1 if self.steps % self.eval_every else 0)


@dataclass(frozen=True)
class TaskPlan:
    """What a preset trains on one task: arms (estimator specs, or :class:`Arm` with training
    settings of their own), trainer settings, tuned estimators.

    ``task`` names the plan in run folders and reports; it is the testbed task trained on unless
    ``trains_on`` names another, so that one task can be trained in two settings (say Adam and
    plain SGD) that the claims read apart.
    """

    task: str
    estimators: tuple[str | Arm, ...]
    steps: int
    eval_every: int
    eval_prompts: int
    eval_samples: int = _TRAIN_DEFAULTS["eval_samples"]
    prompts_per_step: int = _TRAIN_DEFAULTS["prompts_per_step"]
    group_size: int = _TRAIN_DEFAULTS["group_size"]
    checkpoint_every: int = _TRAIN_DEFAULTS["checkpoint_every"]
    tuned: tuple[str, ...] = ()
    trainer: tuple[tuple[str, Any], ...] = ()
    trains_on: str | None = None

    @property
    def arms(self) -> tuple[Arm, ...]:
        """Every arm of the plan (not the tuned ones), canonical."""
        return tuple(as_arm(arm) for arm in self.estimators)

    def run(self, arm: str | Arm, seed: int, tuned_from: str | None = None) -> RunSpec:
        arm = as_arm(arm)
        name, params = parse_spec(arm.estimator)
        return RunSpec(
            task=self.task, name=name, params=tuple(sorted(params.items())), seed=seed, steps=self.steps,
            eval_every=self.eval_every, eval_prompts=self.eval_prompts, eval_samples=self.eval_samples,
            prompts_per_step=self.prompts_per_step, group_size=self.group_size,
            checkpoint_every=self.checkpoint_every, trainer=self.trainer, tuned_from=tuned_from,
            trains_on=self.trains_on, overrides=arm.overrides,
        )


@dataclass(frozen=True)
class Comparison:
    """One comparison a preset fixes before its runs: the claim that ``arm`` has a higher (``greater``)
    or lower run scalar ``measure`` than ``against`` (both arms of the same plan, canonical), judged
    on the paired per-seed differences (:func:`~fade.experiments.stats.compare`)."""

    arm: Arm
    against: Arm
    measure: str
    greater: bool = True

    @property
    def record(self) -> dict[str, Any]:
        """The comparison as the sweep folder's design record holds it (JSON)."""
        return {"arm": self.arm.text, "against": self.against.text, "measure": self.measure, "greater": self.greater}


def comparisons(arms: Iterable[str | Arm], against: Iterable[str | Arm], measures: Iterable[str],
                greater: bool = True) -> tuple[Comparison, ...]:
    """Every arm of ``arms`` against every arm of ``against`` on every measure, in that order."""
    against, measures = [as_arm(a) for a in against], tuple(measures)
    return tuple(Comparison(as_arm(arm), other, measure, greater)
                 for arm in arms for other in against for measure in measures)


@dataclass(frozen=True)
class Tuning:
    """FADE's defaults chosen on one task: the candidate specs and the score that picks one.

    The score is ``passk_mean`` (the mean over the reported k = 1, 2, 4, ... of the final pass@k, averaged
    over seeds): one number that rewards accuracy (small k) and diversity (large k) alike, the
    trade-off FADE claims to win. Ties go to the earlier candidate.
    """

    task: str
    candidates: tuple[str, ...]
    score: str = "passk_mean"


@dataclass(frozen=True)
class Preset:
    """A named sweep: tasks with their plans, seeds, and optionally a tuning of FADE's defaults.

    ``comparisons`` are fixed with the preset, before any of its runs: the sweep records them in its
    folder when it starts one and refuses to go on once they differ from the record, as a changed
    setting is refused on resume. ``claims``, when given, limits the report to those claims' keys, so
    a confirmation reads only what it declared (None: every claim the runs cover). ``pins_code``:
    every run comes from one version of the training code (:func:`fade.testbed.session.code_version`),
    which the design records; training into the folder on another version is refused (its report
    is not).
    """

    name: str
    description: str
    seeds: tuple[int, ...]
    plans: tuple[TaskPlan, ...]
    tuning: Tuning | None = None
    comparisons: tuple[Comparison, ...] = ()
    claims: tuple[str, ...] | None = None
    pins_code: bool = False

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

    def check(self) -> None:
        """Raise ValueError naming the first arm that does not build: an estimator spec, or a
        training setting an arm may not set or sets to a bad value (:data:`ARM_SETTINGS`)."""
        for plan in self.plans:
            for arm in plan.arms:
                arm.check(plan.steps)
            for text in plan.tuned:
                check_spec(text, plan.steps)
        if self.tuning is not None:
            for text in self.tuning.candidates:
                check_spec(text)
            tuning_plan = self.plan(self.tuning.task)
            missing = [c for c in self.tuning.candidates if as_arm(c) not in tuning_plan.arms]
            if missing:
                raise ValueError(f"tuning candidates {missing} are not trained on {self.tuning.task!r}")
        trained = {arm for plan in self.plans for arm in plan.arms}
        for comparison in self.comparisons:
            for arm in (comparison.arm, comparison.against):
                if arm not in trained:
                    raise ValueError(f"preset {self.name!r} compares {arm.text!r}, which none of its plans trains")

    @property
    def design(self) -> dict[str, Any]:
        """What the preset fixes before its runs, as the sweep records it in its folder: the
        comparisons and the claims its report reads, and with ``pins_code`` the training code's version."""
        record: dict[str, Any] = {"comparisons": [c.record for c in self.comparisons],
                                  "claims": None if self.claims is None else list(self.claims)}
        if self.pins_code:
            from fade.testbed.session import code_version

            record["code"] = code_version()
        return record


def ordered(*groups: Iterable[str]) -> tuple[str, ...]:
    """The specs of all groups, each once, in first-seen order."""
    seen: dict[str, None] = {}
    for group in groups:
        for text in group:
            seen.setdefault(text, None)
    return tuple(seen)
