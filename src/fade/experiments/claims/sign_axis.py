"""Sign axis: success-biased weights collapse entropy faster than balanced ones, failure-biased
weights hold it and drive the head update's rank-1 share up.

Applies to a task with a balanced baseline (grpo, dr_grpo) and a sign-biased estimator of either
side (:data:`SUCCESS_BIASED`, :data:`FAILURE_BIASED`). The entropy drop rate is read over the first
:func:`~fade.testbed.summary.early_steps` steps, where the estimators' weights differ before the
policies do. The figures every task shows have a panel of these estimators.
"""

from __future__ import annotations

from dataclasses import dataclass

from fade.testbed.summary import early_steps

from ..design import BALANCED
from ..stats import compare
from .base import (
    Claim,
    Context,
    Figures,
    Judgement,
    Reads,
    StatTable,
    Table,
    TaskFigures,
    VerdictLine,
    Words,
    judge,
    line,
    stat_table,
)

#: Success-biased weights put more mass on successes than on failures (m_S > m_F, docs/method.md,
#: section 1), failure-biased ones more on failures; the balanced ones (m_S = m_F) are
#: :data:`~fade.experiments.design.BALANCED`.
SUCCESS_BIASED: tuple[str, ...] = ("psr", "asym_grpo:delta=2")
FAILURE_BIASED: tuple[str, ...] = ("nsr", "asym_grpo:delta=0.5")

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


def verdict(r: SignAxis) -> list[VerdictLine]:
    balanced, verdicts = ", ".join(r.balanced), []
    if r.success_collapses is not None:
        verdicts.append(line(
            f"Success-biased weights ({', '.join(r.success)}) collapse entropy faster than balanced ones "
            f"({balanced}): larger entropy drop per step over the first {r.early} steps", r.success_collapses))
    if r.failure_holds is not None:
        verdicts.append(line(
            f"Failure-biased weights ({', '.join(r.failure)}) hold entropy: smaller entropy drop per step than "
            f"balanced ones over the first {r.early} steps", r.failure_holds))
    if r.failure_funnels is not None:
        verdicts.append(line("Failure-biased weights drive the head update's rank-1 share up: higher final "
                             "rank1_share than balanced ones", r.failure_funnels))
    return verdicts


def words(r: SignAxis) -> Words:
    table = Table(
        ["estimator", "role", "sign_balance", f"entropy drop / step, first {r.early} steps (x1e-3)",
         "entropy first → final", "final rank1_share", "peak pass@1"],
        caption="mean ± std over seeds; sign_balance and the rates are per-run means over steps",
    )
    for role, specs in r.roles:
        for spec in specs:
            st = r.stats[spec]
            table.rows.append([
                spec, role, st["sign_balance_mean"].text(), st["entropy_drop_rate"].text(2, scale=1e3),
                f"{st['entropy_first'].text(2)} → {st['entropy_final'].text(2)}", st["rank1_final"].text(),
                st["peak_pass1"].text(),
            ])
    return Words("Sign axis: entropy collapse and the rank-1 funnel", [table], notes=[
        f"The runs' paths and entropy: `{r.task}-plane.png`, `{r.task}-entropy-rank1.png` (below)."])


def arms(view: TaskFigures) -> list[str]:
    return view.pick([*SUCCESS_BIASED, *BALANCED, *FAILURE_BIASED])


CLAIM = Claim(
    "sign",
    reads=Reads(),
    measure=measure,
    verdict=verdict,
    words=words,
    figures=Figures("sign axis", arms),
)
