"""fade: advantage functions for RL with verifiable rewards.

A registry of vectorised advantage estimators (GRPO, Dr. GRPO, RLOO, REINFORCE variants,
pass@k training, MaxRL, W-REINFORCE, FADE, ...), their gradient-mass decomposition (analytic
profiles over the solve rate and per-batch diagnostics), and the unbiased pass@k estimator.
The core depends on torch and numpy only.
"""

from . import adaptive as _adaptive  # noqa: F401  (registers FADE and its ablations)
from . import estimators as _estimators  # noqa: F401  (registers the estimators)
from .adaptive import FadeEstimator
from .geometry import rank1_share
from .mass import MassProfile, MassReport, carries_signal, decompose, mass_profile
from .passk import pass_at_k
from .registry import Estimator, EstimatorSpec, advantages, available, estimator, register, spec
from .specs import estimator_from_spec, format_spec, parse_spec
from .weighing import Weighing, weigh

__version__ = "0.1.0"

__all__ = [
    "Estimator",
    "EstimatorSpec",
    "FadeEstimator",
    "MassProfile",
    "MassReport",
    "Weighing",
    "advantages",
    "available",
    "carries_signal",
    "decompose",
    "estimator",
    "estimator_from_spec",
    "format_spec",
    "mass_profile",
    "parse_spec",
    "pass_at_k",
    "rank1_share",
    "register",
    "spec",
    "weigh",
]
