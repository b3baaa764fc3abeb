"""``fade calibrate``: where a base policy starts on a task, against the calibrated regime's requirements.

Its flags are the fields of :class:`fade.experiments.calibrate.CalibrateConfig`.
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

from fade import options
from fade.experiments.calibrate import CalibrateConfig

from .extras import import_testbed
from .output import console, fmt

__all__ = ["add", "run"]


def add(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "calibrate",
        help="where a base policy starts on a task: pass@1 per bucket, per-prompt solve rates, the regime's checks",
        description=(
            "Sample the task's shipped base policy (or --model) on training and test prompts and measure the "
            "base pass@1 per difficulty bucket, the spread of per-prompt solve rates and the distinct answers per "
            "problem, against the calibrated regime's requirements. Writes calibration.json and calibration.png."
        ),
    )
    options.add_options(p, CalibrateConfig)
    p.set_defaults(func=run, needs=lambda args: ("testbed",))


def run(args: argparse.Namespace) -> int:
    import_testbed()
    from fade.atomic import write_json_atomic
    from fade.experiments.calibrate import calibrate, regime_checks
    from fade.experiments.figures import draw_calibration

    config = options.from_args(CalibrateConfig, args)
    settings = dataclasses.asdict(config)
    task, out = settings.pop("task"), Path(settings.pop("out"))
    cal = calibrate(task, **settings)
    checks = regime_checks(cal)
    out.mkdir(parents=True, exist_ok=True)
    write_json_atomic(out / "calibration.json", {
        **cal.to_dict(), "checks": [{"requirement": c.requirement, "value": c.value, "ok": c.ok} for c in checks],
    })
    png = draw_calibration(cal, out / "calibration.png")
    from rich.table import Table

    table = Table(title=f"{task}: base policy, {cal.samples} samples per prompt")
    table.add_column("measure")
    table.add_column("value", justify="right")
    for b, v in cal.pass1_by_bucket.items():
        table.add_row(f"test pass@1, bucket {b}", fmt(v))
    for c in checks:
        table.add_row(c.requirement, f"{c.value} {'ok' if c.ok else 'NOT MET'}")
    shown = console()
    shown.print(table)
    shown.print(f"wrote {out / 'calibration.json'} and {png}")
    return 0
