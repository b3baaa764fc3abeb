"""The figures of an analysis, drawn with matplotlib (Agg) at a fixed size and dpi:

- ``plane.png``: each step's point on the sign/difficulty plane, for the run's own advantages and
  each counterfactual estimator, joined in step order (the run's trajectory beside the others'),
  and below it the difficulty against step with a centred rolling mean;
- ``zero_spread.png``: the zero-spread share and the mean reward against step;
- ``solve_rate.png``: the share of groups in each solve-rate bucket at every step (a heat map);
- ``pass_at_k.png``: unbiased pass@k against step, one line per k;
- ``prompts.png``: the solve rate of each prompt seen at two steps or more at every step it was
  seen (a heat map, prompts by steps; :mod:`fade.analyze.prompts`).

Each is written atomically (:func:`fade.atomic.write_figure_atomic`), never through a link, at the
plotting layer's dpi (:data:`fade.plots.DPI`); the plane is :func:`fade.plots.draw_plane`'s.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from fade.atomic import write_figure_atomic
from fade.mass import BALANCED_SIGN
from fade.plots import DPI, Mark, PlanePath, draw_plane, headless_pyplot

from .analysis import Analysis
from .prompts import SOLVED_RATE, excerpt
from .stats import SOLVE_BUCKETS

__all__ = ["FIGURES", "draw_all", "plane_note", "rolling_mean", "rolling_window"]

FIGURES = ("plane.png", "zero_spread.png", "solve_rate.png", "pass_at_k.png", "prompts.png")
#: The prompts heat map labels its rows with the prompts' excerpts up to this many rows.
_LABELLED_ROWS = 40


def rolling_window(num_steps: int) -> int | None:
    """The rolling mean's window over a run of ``num_steps`` steps: about a tenth of the run, odd
    (so it is centred), at least 3; None below 6 steps, too few to smooth."""
    if num_steps < 6:
        return None
    return max(3, round(num_steps / 10)) | 1


def rolling_mean(values: np.ndarray, window: int) -> np.ndarray:
    """The centred rolling mean of ``values`` over ``window`` (odd) positions: at each position the
    mean of the finite values among the window // 2 on either side and itself (fewer at the ends;
    NaN, a step without mass, left out), NaN where none is finite."""
    values = np.asarray(values, dtype=float)
    finite = np.isfinite(values)
    total = np.concatenate([[0.0], np.cumsum(np.where(finite, values, 0.0))])
    count = np.concatenate([[0], np.cumsum(finite)])
    i = np.arange(values.size)
    lo, hi = np.clip(i - window // 2, 0, values.size), np.clip(i + window // 2 + 1, 0, values.size)
    n = count[hi] - count[lo]
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n > 0, (total[hi] - total[lo]) / np.maximum(n, 1), np.nan)


def plane_note(analysis: Analysis) -> str | None:
    """What the plane panel says where every point of every series sits at sign balance 0.5 (every
    estimator centred, the run's own too): one flat line, so the panel says so; else None."""
    values = [row["sign_balance"] for s in analysis.steps for row in [s.get("run"), *s["estimators"].values()]
              if row and row.get("sign_balance") is not None and np.isfinite(row["sign_balance"])]
    if not values or max(abs(v - BALANCED_SIGN) for v in values) > 1e-6:
        return None
    return (f"every series is centred: the sign balance is {BALANCED_SIGN:g} at every step,\nso all points lie on "
            "one line; they differ in difficulty only (below)")


def _save(fig, path: Path) -> Path:
    plt = headless_pyplot()
    try:
        write_figure_atomic(path, fig, dpi=DPI)
    finally:
        plt.close(fig)
    return path


def draw_all(analysis: Analysis, out: Path) -> list[Path]:
    """Every figure the analysis has data for, written into ``out``."""
    written = [_plane(analysis, out / FIGURES[0]), _zero_spread(analysis, out / FIGURES[1])]
    if any("solve_rate_histogram" in s for s in analysis.steps):
        written += [_solve_rate(analysis, out / FIGURES[2]), _pass_at_k(analysis, out / FIGURES[3])]
    if analysis.prompts is not None:
        written.append(_prompts(analysis, out / FIGURES[4]))
    return written


def _plane(analysis: Analysis, path: Path) -> Path:
    plt = headless_pyplot()
    fig, (ax, below) = plt.subplots(2, 1, figsize=(7.5, 7.5), gridspec_kw={"height_ratios": [2.2, 1]})
    series = [("the run's own", [s.get("run") for s in analysis.steps])]
    series += [(spec, [s["estimators"].get(spec) for s in analysis.steps]) for spec in analysis.estimators]
    x = _steps(analysis)
    window = rolling_window(len(x))
    paths = []
    for i, (label, rows) in enumerate(series):
        xy = np.array([(r["difficulty"], r["sign_balance"]) if r else (np.nan, np.nan) for r in rows], dtype=float)
        if np.isnan(xy).all():
            continue
        colour = "black" if i == 0 else f"C{i - 1}"
        paths.append(PlanePath(xy[:, 0], xy[:, 1], colour, label=label, lw=1.2 if i == 0 else 0.8, alpha=0.7, dots=3,
                               end=Mark("s", 6, 0.6)))
        if window is None:
            below.plot(x, xy[:, 0], "o-", color=colour, ms=2.5, lw=1.2 if i == 0 else 0.8)
        else:  # a step of a few groups is noisy: the raw points, and their rolling mean as the line
            below.plot(x, xy[:, 0], "o", color=colour, ms=2, alpha=0.35)
            below.plot(x, rolling_mean(xy[:, 0], window), "-", color=colour, lw=1.6 if i == 0 else 1.1)
    draw_plane(ax, paths)
    ax.set_title(f"Gradient mass per step on the sign/difficulty plane ({analysis.run.format} run; square: last step)",
                 fontsize=9)
    if ax.get_legend_handles_labels()[0]:  # a run without mass at any step has no point to name
        ax.legend(fontsize=7, loc="center right")
    note = plane_note(analysis)
    if note:
        ax.text(0.5, 0.86, note, transform=ax.transAxes, ha="center", va="center", fontsize=7.5,
                bbox={"facecolor": "white", "edgecolor": "0.6", "alpha": 0.9})
    if window is not None:
        from matplotlib.lines import Line2D

        below.legend(handles=[Line2D([], [], color="0.4", marker="o", ls="", ms=2, alpha=0.5, label="each step"),
                              Line2D([], [], color="0.4", lw=1.4,
                                     label=f"rolling mean over {window} steps (centred)")],
                     fontsize=6.5, loc="upper right")
    from matplotlib.ticker import MaxNLocator

    below.xaxis.set_major_locator(MaxNLocator(integer=True))  # steps are whole numbers
    below.set_xlabel("step", fontsize=8)
    below.set_ylabel("difficulty", fontsize=8)
    below.set_ylim(-0.03, 1.03)
    below.tick_params(labelsize=7)
    below.grid(alpha=0.2)
    below.set_title("the difficulty axis against step (where centred estimators, all at sign balance 0.5, differ)",
                    fontsize=8)
    fig.tight_layout()
    return _save(fig, path)


def _steps(analysis: Analysis) -> np.ndarray:
    return np.array([s["step"] for s in analysis.steps])


def _zero_spread(analysis: Analysis, path: Path) -> Path:
    plt = headless_pyplot()
    fig, ax = plt.subplots(figsize=(7.5, 3.5))
    x = _steps(analysis)
    ax.plot(x, [s["zero_spread_share"] for s in analysis.steps], "o-", ms=3, color="C3",
            label="zero-spread share (rollouts with no centred gradient)")
    ax.plot(x, [s["mean_reward"] for s in analysis.steps], "s-", ms=3, color="C0", label="mean reward")
    ax.set_ylim(-0.03, 1.03)
    ax.set_xlabel("step")
    note = " (filtered run: a lower bound)" if analysis.run.filtered else ""
    ax.set_title(f"Zero-spread share and mean reward{note}", fontsize=9)
    ax.grid(alpha=0.2)
    ax.legend(fontsize=7)
    fig.tight_layout()
    return _save(fig, path)


def _solve_rate(analysis: Analysis, path: Path) -> Path:
    plt = headless_pyplot()
    rows = [s for s in analysis.steps if "solve_rate_histogram" in s]
    grid = np.array([[s["solve_rate_histogram"][b] for b in SOLVE_BUCKETS] for s in rows]).T
    fig, ax = plt.subplots(figsize=(7.5, 3.5))
    im = ax.imshow(grid, aspect="auto", origin="lower", cmap="viridis", vmin=0, vmax=1, interpolation="nearest")
    ax.set_yticks(range(len(SOLVE_BUCKETS)), SOLVE_BUCKETS, fontsize=7)
    ticks = np.linspace(0, len(rows) - 1, min(len(rows), 8)).round().astype(int)
    ax.set_xticks(ticks, [str(rows[i]["step"]) for i in ticks], fontsize=7)
    ax.set_xlabel("step")
    ax.set_ylabel("group solve rate")
    ax.set_title("Share of groups in each solve-rate bucket", fontsize=9)
    fig.colorbar(im, ax=ax, fraction=0.04)
    fig.tight_layout()
    return _save(fig, path)


def _pass_at_k(analysis: Analysis, path: Path) -> Path:
    plt = headless_pyplot()
    rows = [s for s in analysis.steps if "pass_at_k" in s]
    ks = sorted({int(k) for s in rows for k in s["pass_at_k"]})
    shown = [k for k in ks if k & (k - 1) == 0 or k == ks[-1]]  # powers of two and the largest
    fig, ax = plt.subplots(figsize=(7.5, 3.5))
    x = np.array([s["step"] for s in rows])
    for i, k in enumerate(shown):
        ax.plot(x, [s["pass_at_k"].get(str(k), np.nan) for s in rows], "o-", ms=3, color=f"C{i}", label=f"pass@{k}")
    ax.set_ylim(-0.03, 1.03)
    ax.set_xlabel("step")
    ax.set_title("Unbiased pass@k of the step's groups", fontsize=9)
    ax.grid(alpha=0.2)
    ax.legend(fontsize=7, ncol=min(len(shown), 4))
    fig.tight_layout()
    return _save(fig, path)


def _prompts(analysis: Analysis, path: Path) -> Path:
    plt = headless_pyplot()
    view = analysis.prompts
    rows = view.heatmap_rows()
    position = {step: i for i, step in enumerate(view.steps)}
    grid = np.full((len(rows), len(view.steps)), np.nan)
    for r, prompt in enumerate(rows):
        grid[r, [position[s] for s in prompt["steps"]]] = prompt["solve_rates"]
    fig, ax = plt.subplots(figsize=(7.5, min(9.0, max(3.5, 2.2 + 0.025 * len(rows)))))
    cmap = plt.get_cmap("viridis").with_extremes(bad="white")
    im = ax.imshow(np.ma.masked_invalid(grid), aspect="auto", cmap=cmap, vmin=0, vmax=1, interpolation="nearest")
    for a, _ in view.windows[1:]:
        ax.axvline(a - 0.5, color="0.5", lw=0.6, ls=":")
    never = next((r for r, p in enumerate(rows) if p["first_solve_step"] is None), None)
    if never is not None and never > 0:
        ax.axhline(never - 0.5, color="C3", lw=0.8)
    ticks = np.linspace(0, len(view.steps) - 1, min(len(view.steps), 8)).round().astype(int)
    ax.set_xticks(ticks, [str(view.steps[i]) for i in ticks], fontsize=7)
    if len(rows) <= _LABELLED_ROWS:
        labels = [excerpt(p["key"], 40).replace("$", r"\$") for p in rows]  # no mathtext from a prompt's $
        ax.set_yticks(range(len(rows)), labels, fontsize=6)
    else:
        ax.set_yticks([])
    ax.set_xlabel("step (dotted: windows)")
    ax.set_ylabel("prompt")
    shown = f"{len(rows)} of {len(view.prompts)}" if len(rows) < len(view.prompts) else f"all {len(rows)}"
    most = " (the most seen)" if len(rows) < len(view.prompts) else ""
    ax.set_title(f"Solve rate per prompt and step: {shown} prompts seen at 2+ steps{most}\nrows by the step first "
                 f"solved (rate >= {SOLVED_RATE:g}), never solved last (below the red line); blank: not seen",
                 fontsize=8.5)
    fig.colorbar(im, ax=ax, fraction=0.04, label="solve rate")
    fig.tight_layout()
    return _save(fig, path)
