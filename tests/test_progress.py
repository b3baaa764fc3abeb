"""Progress bars at 80 columns: the bar, the step count, the rate and the ETA stay on the bar's
line whatever the description and the stats; the stats get a line of their own."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from fade.progress import DESCRIPTION_WIDTH, make_progress, rate_text, step_bar

LONG_STATS = "reward 0.301  entropy 0.842  alpha 1.52  delta 1.00  pass@1 0.253 (step 100)  and more beyond 80 columns"


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _render(description: str, total: int, done: int, seconds_per_unit: float, stats: str, *, unit: str = "steps",
            width: int = 80) -> list[str]:
    clock = _Clock()
    console = Console(file=io.StringIO(), width=width, color_system=None, force_terminal=False)
    progress = make_progress(unit=unit, console=console, get_time=clock, auto_refresh=False)
    task = progress.add_task(description, total=total, completed=0, stats="")
    for _ in range(done):
        clock.now += seconds_per_unit
        progress.update(task, advance=1, stats=stats)
    console.print(progress.get_renderable())  # what the live display draws: the bar table and the stats lines
    return console.file.getvalue().splitlines()


@pytest.mark.parametrize(
    "description, total, done, per_unit, unit, count, rate, eta",
    [
        # ETA: the remaining units over the rate, rounded up to a second.
        ("fade on arithmetic", 500, 12, 0.4, "steps", "12/500", "2.50 steps/s", "0:03:16"),
        ("fade:h_star_ratio=1.0 on countdown_multi", 200, 150, 1.25, "steps", "150/200", "0.80 steps/s", "0:01:03"),
        ("pretrain", 2000, 1999, 0.008, "steps", "1999/2000", "125 steps/s", "0:00:01"),
        ("scoring", 9999, 120, 0.08, "samples", "120/9999", "12.5 samples/s", "0:13:11"),
    ],
)
def test_the_bar_line_keeps_bar_count_rate_and_eta_at_80_columns(description, total, done, per_unit, unit, count,
                                                                   rate, eta):
    lines = _render(description, total, done, per_unit, LONG_STATS, unit=unit)
    assert len(lines) == 2, lines
    bar, stats = lines
    assert len(bar) <= 80 and len(stats) <= 80
    assert bar.startswith(description[: DESCRIPTION_WIDTH - 1])
    assert "━" in bar or done / total < 0.05, bar
    for part in (count, rate, "ETA", eta):
        assert part in bar, (part, bar)
    # The stats line starts with the stats and is cut with an ellipsis, not wrapped onto the bar.
    assert stats.startswith("  reward 0.301  entropy 0.842") and stats.endswith("…")


def test_a_short_stats_line_is_whole_and_no_stats_no_line():
    assert _render("fade on arithmetic", 10, 3, 1.0, "reward 0.5")[1] == "  reward 0.5"
    assert len(_render("fade on arithmetic", 10, 3, 1.0, "")) == 1


def test_wider_terminals_give_the_bar_the_room():
    narrow = _render("fade on arithmetic", 10, 5, 1.0, "x")[0]
    wide = _render("fade on arithmetic", 10, 5, 1.0, "x", width=120)[0]
    assert wide.count("━") > narrow.count("━") > 0


def test_rate_text_keeps_three_significant_digits():
    assert [rate_text(x) for x in (0.8, 2.345, 12.34, 123.4, 4567.8)] == ["0.80", "2.35", "12.3", "123", "4568"]


def test_step_bar_counts_units_and_notes_without_counting():
    console = Console(file=io.StringIO(), width=80, color_system=None, force_terminal=False)
    with step_bar("job", 10, 2, console=console) as advance:
        advance("one")
        advance("evaluating", 0)
        advance("two", 3)
    last = console.file.getvalue().splitlines()[-2:]
    assert "6/10" in last[0] and last[1] == "  two"
    with step_bar("off", 10, enabled=False) as advance:
        advance("nothing", 0)
        advance("nothing")


def test_spinner_shows_what_it_is_doing_and_the_elapsed_time():
    from fade.progress import spinner

    console = Console(file=io.StringIO(), width=80, color_system=None, force_terminal=False)
    with spinner("report", console=console) as note:
        note("reading run 3/12: arithmetic/grpo/seed0")
        note("tables and figures")
    line = console.file.getvalue().splitlines()[-1]
    assert "report" in line and "tables and figures" in line and "0:00:0" in line and len(line) <= 80
    with spinner("off", enabled=False) as note:
        note("nothing")


def test_the_trainer_counts_every_step_and_notes_its_evaluations(tiny_model, tmp_path, monkeypatch):
    """What the trainer's bar is told: one unit a step, and a note (no unit) for each evaluation's
    chunks, starting before the first step."""
    import contextlib

    from fade.testbed import trainer

    calls: list[tuple[str, int]] = []

    @contextlib.contextmanager
    def recording(description, total, completed=0, enabled=True, **kwargs):
        calls.append((f"open {description} {total} {completed}", -1))
        yield lambda stats, units=1: calls.append((stats, units))

    monkeypatch.setattr(trainer, "step_bar", recording)
    config = trainer.TrainConfig(out=str(tmp_path / "run"), model=tiny_model, estimator="grpo", steps=3, eval_every=2,
                                 eval_prompts=3, eval_samples=2, prompts_per_step=2, group_size=2, device="cpu")
    trainer.train(config)
    assert calls[0] == ("open grpo on arithmetic 3 0", -1)
    assert calls[1] == ("evaluating at step 0: 0/3 prompts x 2 samples", 0)
    assert ("evaluating at step 0: 3/3 prompts x 2 samples", 0) in calls
    steps = [stats for stats, units in calls if units == 1]
    assert len(steps) == 3 and all(s.startswith("reward ") for s in steps)
    assert "pass@1" in steps[-1] and "(step 3)" in steps[-1]  # the last evaluation's pass@1 stays on the line
    assert ("evaluating at step 2: 0/3 prompts x 2 samples", 0) in calls
    assert sum(units for _, units in calls if units > 0) == 3
