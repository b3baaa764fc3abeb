"""Progress bars: one look for every long job (training, pretraining, calibration, scoring, sweeps).

A bar's line holds the description, the bar, done/total, the rate, the elapsed time and the ETA;
the free stats text (reward, entropy, ...) goes on a line of its own below it. Stats of any
length then cannot push the bar, the count, the rate or the ETA off an 80-column terminal: the
line's fixed columns take 75 characters at 80 (:data:`DESCRIPTION_WIDTH` for the description,
:data:`BAR_MIN_WIDTH` for the bar, which grows on wider terminals), and a stats line too long for
the terminal ends in an ellipsis. rich is imported only when a bar is drawn, so the core never
loads it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any, Protocol

__all__ = [
    "BAR_MIN_WIDTH", "DESCRIPTION_WIDTH", "Advance", "bar_columns", "make_progress", "rate_text", "spinner", "step_bar",
]

#: The description column's width at most (longer ones end in an ellipsis) ...
DESCRIPTION_WIDTH = 22
#: ... and the bar's at least, so that the line fits 80 columns with a rate such as "12.34 samples/s".
BAR_MIN_WIDTH = 10
#: The window, in seconds, over which a bar's rate is measured.
SPEED_WINDOW_SECONDS = 120.0


class Advance(Protocol):
    """What :func:`step_bar` yields: ``advance(stats)`` counts one unit of work done and shows
    ``stats``; ``advance(stats, 0)`` only changes the stats line (a pause such as an evaluation)."""

    def __call__(self, stats: str, units: int = 1) -> None: ...


def rate_text(speed: float) -> str:
    """Three significant digits at most below 1000 (``2.35``, ``23.5``, ``235``), so the rate
    column keeps its width as a job speeds up."""
    if speed < 10:
        return f"{speed:.2f}"
    return f"{speed:.1f}" if speed < 100 else f"{speed:.0f}"


def bar_columns(*, unit: str = "steps") -> tuple[Any, ...]:
    """The columns of a bar's line: description, bar, done/total, rate in ``unit``/s, elapsed, ETA."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        ProgressColumn,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )
    from rich.table import Column
    from rich.text import Text

    class Rate(ProgressColumn):
        def render(self, task) -> Text:  # a task may name its own unit: add_task(..., unit="runs")
            return Text(f"{rate_text(task.speed)} {task.fields.get('unit', unit)}/s" if task.speed else "")

    def fixed() -> Column:
        return Column(no_wrap=True)

    return (
        TextColumn(
            "[bold]{task.description}",
            table_column=Column(no_wrap=True, overflow="ellipsis", max_width=DESCRIPTION_WIDTH),
        ),
        BarColumn(bar_width=None, table_column=Column(ratio=1, min_width=BAR_MIN_WIDTH)),
        MofNCompleteColumn(table_column=fixed()),
        Rate(table_column=fixed()),
        TimeElapsedColumn(table_column=fixed()),
        TextColumn("ETA", table_column=fixed()),
        TimeRemainingColumn(table_column=fixed()),
    )


def make_progress(*, unit: str = "steps", **kwargs: Any):
    """A rich ``Progress`` with :func:`bar_columns` whose tasks' ``stats`` field, when a task has
    one and it is not empty, is drawn on its own line under the bars."""
    from rich.progress import Progress
    from rich.text import Text

    class _Progress(Progress):
        def get_renderables(self):
            yield self.make_tasks_table(self.tasks)
            for task in self.tasks:
                stats = task.fields.get("stats")
                if stats:
                    yield Text(f"  {stats}", no_wrap=True, overflow="ellipsis")

    return _Progress(*bar_columns(unit=unit), **kwargs)


@contextlib.contextmanager
def step_bar(
    description: str, total: int, completed: int = 0, enabled: bool = True, *, unit: str = "steps", console: Any = None
) -> Iterator[Advance]:
    """A progress bar for ``total`` units of work, ``completed`` of them done already; yields
    :class:`Advance`. ``console`` is the rich Console to draw on (default: the terminal).

    With ``enabled=False`` nothing is drawn and ``advance`` does nothing.
    """
    if not enabled:
        yield lambda stats, units=1: None
        return
    kwargs = {} if console is None else {"console": console}
    # A two-minute speed window: evaluations pause the count for tens of seconds, and the rate and
    # the ETA should include them rather than jump after each one.
    with make_progress(unit=unit, speed_estimate_period=SPEED_WINDOW_SECONDS, **kwargs) as bar:
        task = bar.add_task(description, total=total, completed=completed, stats="")

        def advance(stats: str, units: int = 1) -> None:
            bar.update(task, advance=units, stats=stats)

        yield advance


@contextlib.contextmanager
def spinner(description: str, enabled: bool = True, *, console: Any = None) -> Iterator[Callable[[str], None]]:
    """For work whose size is not known up front: a spinner, ``description``, what it is doing now
    and the elapsed time, on one line. Yields ``note(text)``, which sets what it is doing now."""
    if not enabled:
        yield lambda text: None
        return
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
    from rich.table import Column

    kwargs = {} if console is None else {"console": console}
    columns = (
        SpinnerColumn(), TextColumn("[bold]{task.description}"),
        TextColumn("{task.fields[now]}", table_column=Column(no_wrap=True, overflow="ellipsis", ratio=1)),
        TimeElapsedColumn(),
    )
    with Progress(*columns, **kwargs) as bar:
        task = bar.add_task(description, total=None, now="")
        yield lambda text: bar.update(task, now=text)
