"""The ``fade/...`` metrics both engine integrations log after each advantage computation: the
batch's gradient-mass diagnostics (positive and negative mass, sign balance, difficulty,
effective sample fraction) for every estimator, plus the schedule of a stateful one (FADE's
alpha, delta, p_hat, h_hat, h_star). Undefined values (the sign balance of a batch with no
signal, h_hat before any entropy) are left out rather than logged as NaN. The diagnostics
themselves are :func:`fade.mass.batch_diagnostics`, the definition the testbed trainer logs too.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import fade
from fade.adaptive import SCHEDULE
from fade.mass import DIAGNOSTICS, batch_diagnostics

__all__ = ["DIAGNOSTICS", "SCHEDULE", "batch_metrics"]


def batch_metrics(
    est: fade.Estimator, advantages: Any, rewards: Any, groups: Any, record: Mapping[str, float] | None = None
) -> dict[str, float]:
    """``fade/<key>`` for the latest call of ``est`` on (``rewards``, ``groups``) giving ``advantages``.

    ``record`` is that call's record: ``est.last`` when None, or the record of
    :meth:`fade.Estimator.evaluate`. The schedule comes from it, the diagnostics from
    :func:`fade.mass.batch_diagnostics`, on the rewards as the estimator reads them.
    """
    values = dict(est.last if record is None else record)
    values.update(batch_diagnostics(est, advantages, rewards, groups, values))
    out = {}
    for key in (*SCHEDULE, *DIAGNOSTICS):
        value = values.get(key)
        if value is not None and math.isfinite(value):
            out[f"fade/{key}"] = float(value)
    return out
