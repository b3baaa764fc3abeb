"""Sign axis: success-biased weights collapse entropy faster than balanced ones, failure-biased
weights hold it and drive the head update's rank-1 share up.

Applies to a task with a balanced baseline (grpo, dr_grpo) and a sign-biased estimator of either
side. The entropy drop rate is read over the first :func:`~fade.testbed.summary.early_steps`
steps, where the estimators' weights differ before the policies do.
"""

from __future__ import annotations

from dataclasses import dataclass

from fade.testbed.summary import early_steps

from ..design import BALANCED, FAILURE_BIASED, SUCCESS_BIASED
from ..stats import compare
from .base import Claim, Context, Judgement, Reads, StatTable, judge, stat_table

#: The scalars the claim's table shows for every estimator.
COLUMNS = ("sign_balance_mean", "entropy_drop_rate", "entropy_first", "entropy_final", "rank1_final", "peak_pass1")


@dataclass(frozen=True)
class SignAxis:
    """The estimators by role, their :data:`COLUMNS` over seeds, and the three verdicts (None where
    the role they compare did not run)."""

    task: str
    early: int
    success: tuple[str, ...]
    balanced: tuple[str, ...]
    failure: tuple[str, ...]
    stats: StatTable
    success_collapses: Judgement | None
    failure_holds: Judgement | None
    failure_funnels: Judgement | None

    @property
    def roles(self) -> tuple[tuple[str, tuple[str, ...]], ...]:
        return (("success-biased", self.success), ("balanced", self.balanced), ("failure-biased", self.failure))


def measure(task: str, context: Context) -> SignAxis | None:
    runs = context.runs(task)
    success, balanced, failure = runs.present(SUCCESS_BIASED), runs.present(BALANCED), runs.present(FAILURE_BIASED)
    if not balanced or not (success or failure):
        return None
    stats = stat_table(runs, [*success, *balanced, *failure], COLUMNS)

    def against_balanced(side: list[str], key: str, *, greater: bool, digits: int = 3) -> Judgement | None:
        if not side:
            return None
        return judge((f"{x} vs {b}", compare(stats[x][key], stats[b][key], greater=greater, digits=digits))
                     for x in side for b in balanced)

    return SignAxis(
        task=task, early=early_steps(context.steps(task)), success=tuple(success), balanced=tuple(balanced),
        failure=tuple(failure), stats=stats,
        success_collapses=against_balanced(success, "entropy_drop_rate", greater=True, digits=4),
        failure_holds=against_balanced(failure, "entropy_drop_rate", greater=False, digits=4),
        failure_funnels=against_balanced(failure, "rank1_final", greater=True),
    )


CLAIM = Claim("sign", Reads(), measure)
