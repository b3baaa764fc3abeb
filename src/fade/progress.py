"""Progress bars: one look for every long job (training, pretraining, scoring, sweeps).

Each bar shows done/total, a free stats field, the rate, the elapsed time and the ETA. rich is
imported only when a bar is drawn, so the core never loads it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["bar_columns", "step_bar"]


def bar_columns(*, unit: str = "steps", stats: bool = True) -> tuple[Any, ...]:
    """The columns of a bar: description, bar, done/total, [stats], rate in ``unit``/s, elapsed, ETA."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        ProgressColumn,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )
    from rich.text import Text

    class Rate(ProgressColumn):
        def render(self, task) -> Text:  # a task may name its own unit: add_task(..., unit="runs")
            return Text(f"{task.speed:.2f} {task.fields.get('unit', unit)}/s" if task.speed else "")

    return (
        TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
        *((TextColumn("{task.fields[stats]}"),) if stats else ()),
        Rate(), TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
    )


@contextlib.contextmanager
def step_bar(
    description: str, total: int, completed: int = 0, enabled: bool = True, *, unit: str = "steps"
) -> Iterator[Callable[[str], None]]:
    """A progress bar for ``total`` units of work; yields ``advance(stats)``, one unit per call.

    With ``enabled=False`` nothing is drawn and ``advance`` does nothing.
    """
    if not enabled:
        yield lambda stats: None
        return
    from rich.progress import Progress

    with Progress(*bar_columns(unit=unit)) as bar:
        task = bar.add_task(description, total=total, completed=completed, stats="")
        yield lambda stats: bar.update(task, advance=1, stats=stats)
