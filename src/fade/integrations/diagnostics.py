"""The ``fade/...`` metrics both engine integrations log after each advantage computation: the
batch's gradient-mass diagnostics (positive and negative mass, sign balance, difficulty,
effective sample fraction) for every estimator, plus the schedule of a stateful one (FADE's
alpha, delta, p_hat, h_hat, h_star). Undefined values (the sign balance of a batch with no
signal, h_hat before any entropy) are left out rather than logged as NaN.
"""

from __future__ import annotations

import math
from typing import Any

import torch

import fade
from fade.adaptive import SCHEDULE
from fade.mass import DIAGNOSTICS

__all__ = ["DIAGNOSTICS", "SCHEDULE", "batch_metrics"]

def batch_metrics(est: fade.Estimator, advantages: Any, rewards: Any, groups: Any) -> dict[str, float]:
    """``fade/<key>`` for the latest call of ``est`` on (``rewards``, ``groups``) giving ``advantages``.

    A stateful estimator's ``last`` already holds the diagnostics; the others get them from
    :func:`fade.decompose`, on the rewards as the estimator reads them (successes under a
    ``success_threshold``, for instance).
    """
    values: dict[str, float] = dict(est.last) if est.stateful else {}
    if len(advantages) and not all(key in values for key in DIAGNOSTICS):
        rep = fade.decompose(advantages, est.as_success(torch.as_tensor(rewards)), groups)
        values.update({key: getattr(rep, key) for key in DIAGNOSTICS})
    out = {}
    for key in (*SCHEDULE, *DIAGNOSTICS):
        value = values.get(key)
        if value is not None and math.isfinite(value):
            out[f"fade/{key}"] = float(value)
    return out
