"""fade inside verl: every fade estimator in verl's advantage registry, and a trainer that feeds FADE.

This package is verl's plug-in. Importing it registers each name of ``fade.available()`` with
verl's ``register_adv_est`` (:mod:`.estimators`: ``fade``, ``fade_alpha``, ... keep their name, the
others get a ``fade_`` prefix: ``fade_grpo``, ``fade_maxrl``, ...), registers :class:`FadeTrainer`
as ``trainer.v1.trainer_mode=fade`` (:mod:`.trainer`), and makes the changes to verl listed in
:mod:`.patches`. A run selects an estimator with ``algorithm.adv_estimator=NAME`` and passes its
parameters as ``+algorithm.fade.KEY=VALUE``. verl imports the package itself, in every Ray
process, on each ``import verl``: through the ``verl.plugins`` entry point this package installs,
or through ``VERL_USE_EXTERNAL_MODULES=fade.integrations.verl`` (forward it to the workers of a
multi-node run with ``+ray_kwargs.ray_init.runtime_env.env_vars.VERL_USE_EXTERNAL_MODULES=...``).

fade's counterparts of verl's own estimators (:data:`COUNTERPARTS`: ``fade_grpo`` for ``grpo``,
...) are drop-in: swapping the name gives verl's advantages and returns on every input verl
accepts. FADE needs the policy's entropy, which verl's estimator call lacks: :class:`FadeTrainer`,
verl's synchronous PPO trainer, hands the estimator ``metrics["actor/entropy"]`` and the step
before each advantage step, adds FADE's schedule and the batch's gradient-mass diagnostics to
verl's metrics as ``fade/...``, and saves the estimator's state in each checkpoint folder.

Loaded in every verl process, the plug-in also keeps verl's model setup working where TRL 1.x is
installed (see :func:`trl_has_value_head`), and with ``FADE_VERL_CPU=1`` switches on
:mod:`fade.integrations.verl_cpu`, which runs verl on CPU.
"""

from fade.integrations.state import STATE_FILE
from fade.integrations.verl import estimators, patches
from fade.integrations.verl.estimators import (
    COUNTERPARTS,
    ENTROPY_METRIC,
    TRAINER_NAME,
    Counterpart,
    check_run,
    counterpart,
    current_estimators,
    estimator_for,
    fade_metrics,
    fade_name,
    is_fade_name,
    params_from_config,
    register,
    registered_names,
    reset_estimators,
    resolve_params,
    setting,
    verl_name,
)
from fade.integrations.verl.patches import trl_has_value_head

# A module of fade.integrations.verl_cpu, not the package: a process that imports verl_cpu first
# runs this plug-in while that package's __init__ is still at its first line.
from fade.integrations.verl_cpu.platform import enabled as _cpu_mode_on

__all__ = [
    "COUNTERPARTS",
    "ENTROPY_METRIC",
    "STATE_FILE",
    "TRAINER_NAME",
    "Counterpart",
    "check_run",
    "counterpart",
    "current_estimators",
    "estimator_for",
    "fade_metrics",
    "fade_name",
    "final_sessions",
    "is_fade_name",
    "params_from_config",
    "register",
    "registered_names",
    "reset_estimators",
    "resolve_params",
    "setting",
    "trl_has_value_head",
    "verl_name",
]

estimators.register()
patches.guard_value_head()
# CPU mode must choose verl's platform before verl's engine modules read it on import, which the
# trainer's imports below do.
if _cpu_mode_on():
    patches.cpu_mode()

from fade.integrations.verl import trainer  # noqa: E402
from fade.integrations.verl.trainer import TRAINER_MISSING as _TRAINER_MISSING  # noqa: E402
from fade.integrations.verl.trainer import final_sessions  # noqa: E402

if _TRAINER_MISSING is None:
    from fade.integrations.verl.trainer import FadeTrainer as FadeTrainer  # re-exported where it exists

    trainer.register()
