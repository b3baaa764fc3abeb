"""``fade demo``: what FADE changes, in a few minutes on two cores.

Two runs of the testbed trainer on the same seed, hence the same base policy, the same prompts at
every step and the same held-out evaluation set, differing only in the advantage: a static
baseline and FADE. They are two of the paper preset's runs (``fade sweep --preset paper``,
reported in docs/results/paper/README.md), so the demo reproduces its seed 0 (up to the float
rounding of the machine, which makes two machines' runs of one seed drift apart after a few
dozen steps):

- task ``countdown_multi`` (countdown problems with several correct expressions, where a
  policy can keep many answers or collapse onto a few), G = 16 completions of 16 prompts a
  step, 200 steps, AdamW at lr 2e-4, evaluation of 64 held-out prompts x 32 samples every 20
  steps;
- the baseline ``dr_grpo`` (r - group mean): FADE at alpha = delta = 1 is exactly dr_grpo, so
  the pair isolates what FADE's two schedules add; its peak pass@1 there is within 0.005 of
  grpo's, the best static baseline's;
- ``fade``: FADE at its defaults, the setting the out-of-sample evidence supports. On ten seeds
  no setting was chosen on (``fade sweep --preset confirm``, seeds 5-14) it raised the final
  pass@k mean over dr_grpo by +0.106 [+0.058, +0.159], kept +0.094 [+0.084, +0.105] nats more
  entropy and +0.417 [+0.312, +0.547] more distinct correct answers per problem, with a peak
  pass@1 not resolved apart (-0.012 [-0.033, +0.013]). The setting chosen on seeds 0-4,
  ``h_star_ratio=0.7``, fell below the default there. On this task FADE's schedule settles early:
  alpha climbs from about 1.5 to its cap of 3 by steps 39-53 and stays, and delta stays 1 (the
  default H* is not reached in 200 steps), so from then on FADE weighs as ``power:alpha=3``, and
  the confirm preset resolves no difference between the two.

:func:`run_demo` trains the two runs in parallel (one core each, resumable: a rerun skips what
finished) and returns their folders; the command line then draws them with
:func:`fade.testbed.report.compare_runs` and prints :func:`fade.testbed.tables.compare_table`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

from .design import Preset
from .presets import get_preset
from .presets.paper import PAPER_TASK

__all__ = ["DEMO_BASELINE", "DEMO_FADE", "DEMO_SEED", "DemoOutcome", "demo_preset", "run_demo"]

DEMO_BASELINE = "dr_grpo"
DEMO_FADE = "fade"
DEMO_SEED = 0
#: The comparison figure, in the demo's folder.
FIGURE = "compare.png"


def demo_preset() -> Preset:
    """The paper preset narrowed to the demo's two runs: its plan of :data:`PAPER_TASK` with the
    two estimators, on :data:`DEMO_SEED`, its settings otherwise unchanged (what ``fade sweep
    --preset paper --tasks countdown_multi --estimators dr_grpo,fade --seeds 0`` trains)."""
    paper = get_preset("paper")
    plan = dataclasses.replace(paper.plan(PAPER_TASK), estimators=(DEMO_BASELINE, DEMO_FADE), tuned=())
    return Preset(name=f"{paper.name} (custom)", description=f"A custom sweep with the {paper.name} preset's "
                  "trainer settings.", seeds=(DEMO_SEED,), plans=(plan,), pins_code=paper.pins_code)


@dataclass
class DemoOutcome:
    """The demo's run folders (baseline first), and the runs that failed with their messages."""

    runs: list[Path]
    labels: list[str]
    failed: dict[str, str]


def run_demo(out: str | Path, *, workers: int = 2, progress: bool = True) -> DemoOutcome:
    """Train (or resume, or skip when finished) the demo's two runs into ``out/runs/``."""
    from .sweep import run_sweep

    preset = demo_preset()
    outcome = run_sweep(preset, out, workers=workers, progress=progress, report=False,
                        command=f"fade demo --out {out}")
    runs = preset.runs()
    return DemoOutcome(runs=[run.directory(out) for run in runs], labels=[run.estimator for run in runs],
                       failed=dict(outcome.failed))
