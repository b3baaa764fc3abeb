"""The ablations of FADE against a FADE whose sign knob acts.

FADE's defaults may never engage the sign knob in a short run (the entropy never falls to H*),
and an ablation measured against them then measures nothing. Each ablation here is measured
against FADE with the ablation's own entropy target and EMA where it sets them
(fade_delta:h_star_ratio=1.0 against fade:h_star_ratio=1.0), else against :data:`ENGAGED_FADE`,
whose sign knob acts from the start. Applies to a task where an ablation and its reference ran;
without such a pair, :mod:`.ablations` (against FADE's defaults) is all there is.
"""

from __future__ import annotations

from dataclasses import dataclass

from fade.specs import format_spec, parse_spec

from ..design import FADE
from .ablations import ABLATIONS, Ablation, ablate, losses
from .base import Claim, Context, Figures, Reads, StatTable, Table, VerdictLine, Words, line, stat_table

#: The FADE arm whose sign knob acts from the start (H* at the first entropy): the reference the
#: ablations without a target of their own are measured against.
ENGAGED_FADE = "fade:h_star_ratio=1.0"
#: The scalars the claim's table shows for every spec (with the final pass@k at the largest ks).
COLUMNS = ("peak_pass1", "passk_mean", "entropy_final", "delta_mean", "delta_below1")


def reference(spec: str) -> str:
    """The FADE arm an ablation is measured against: FADE with the ablation's own entropy target and
    EMA where it sets them, else :data:`ENGAGED_FADE`."""
    own = {k: v for k, v in parse_spec(spec)[1].items() if k in ("h_star", "h_star_ratio", "ema")}
    return format_spec(FADE, own) if own else ENGAGED_FADE


@dataclass(frozen=True)
class AblationsEngaged:
    """The references then the ablations (``specs``), the two largest logged ks, :data:`COLUMNS` and
    pass@k at those ks for each spec over seeds, and an :class:`~.ablations.Ablation` per ablation."""

    task: str
    specs: tuple[str, ...]
    ks: tuple[int, ...]
    stats: StatTable
    ablations: tuple[Ablation, ...]

    @property
    def reference_of(self) -> dict[str, str]:
        return {a.variant: a.reference for a in self.ablations}


def measure(task: str, context: Context) -> AblationsEngaged | None:
    runs = context.runs(task)
    names = {parse_spec(a)[0] for a in ABLATIONS}
    pairs = [(spec, reference(spec)) for spec in runs.spec_of.values() if parse_spec(spec)[0] in names]
    pairs = [(spec, ref) for spec, ref in pairs if runs.has(ref)]
    if not pairs:
        return None
    specs = [*dict.fromkeys(ref for _, ref in pairs), *(spec for spec, _ in pairs)]
    ks = sorted({k for spec in specs for s in runs.of(spec) for k in s.passk(s.final)})[-2:]
    keys = ["passk_mean", *(f"pass@{k}" for k in ks)]
    return AblationsEngaged(
        task=task, specs=tuple(specs), ks=tuple(ks), stats=stat_table(runs, specs, (*COLUMNS, *keys[1:])),
        ablations=tuple(ablate(runs, spec, ref, keys) for spec, ref in pairs),
    )


def verdict(r: AblationsEngaged) -> list[VerdictLine]:
    verdicts = []
    for a in r.ablations:
        if a.entropy is not None:
            verdicts.append(line(f"Without delta ({a.variant}) entropy collapses: lower final entropy than "
                                 f"{a.reference}, whose sign knob acts", a.entropy))
        elif a.passk is not None:
            verdicts.append(line(f"Without alpha ({a.variant}) pass@k drops: lower final pass@k mean"
                                 + "".join(f", pass@{k}" for k in r.ks) + f" than {a.reference}", a.passk))
        else:
            verdicts.extend(losses(a))
    return verdicts


def words(r: AblationsEngaged) -> Words:
    table = Table(
        [
            "variant",
            "measured against",
            "peak pass@1",
            "pass@k mean",
            *[f"final pass@{k}" for k in r.ks],
            "final entropy",
            "mean delta",
            "steps with delta < 1",
        ],
        caption="fade_alpha: delta fixed at 1; fade_delta: alpha fixed at 1; fade_entropy_only: both knobs from "
        "the entropy; fade_decay: a fixed log-decay schedule. Each is measured against FADE with its "
        f"own entropy target, or against {ENGAGED_FADE} (delta < 1 from the start) when it sets none",
    )
    reference_of = r.reference_of
    for spec in r.specs:
        st = r.stats[spec]
        table.rows.append([
            spec, reference_of.get(spec, "(reference)"), st["peak_pass1"].text(), st["passk_mean"].text(),
            *[st[f"pass@{k}"].text() for k in r.ks], st["entropy_final"].text(2), st["delta_mean"].text(2),
            st["delta_below1"].text(2),
        ])
    return Words("Ablations of FADE with its sign knob engaged", [table])


CLAIM = Claim(
    "ablations_engaged",
    reads=Reads(),
    measure=measure,
    verdict=verdict,
    words=words,
    figures=Figures(),
)
