"""Show a training run: figures of the run, and of several runs on shared axes.

The run is read by :mod:`fade.testbed.runlog` (:func:`~fade.testbed.runlog.load_run`, which
tolerates what a killed or resumed run leaves behind: a truncated last line is skipped with a
warning; a repeated step keeps its last record). :func:`plot_run` writes three PNGs into the run
directory, at 100 dpi with fixed sizes so a PNG's pixel size depends only on what it shows:

- ``training.png``: a grid of panels against step, one per signal the run logged (reward and
  per-bucket solve rates, entropy with its target, positive/negative mass, sign_balance (at
  least 0.4-0.6 in view), the first-order entropy formula's drive and its two terms, difficulty,
  effective_sample_fraction, rank1_share, grad/param norm, FADE's alpha and delta, the policy
  loss's clip fractions and ppo_kl and the KL to the base policy (once one is non-zero: off-policy
  updates), the entropy term's coefficient (when there is one), the zero-variance filter's share
  and draws (when it is on), seconds per step), moving-average smoothed over the faint raw
  values, each legend above its panel's curves; size :func:`training_pixel_size`.
- ``passk.png``: pass@1 (with pass@4, 16, 64) against step with the peak marked, the pass@k curve
  of the base, final and best evaluations, and per-bucket pass@1 against step; size
  :func:`passk_pixel_size`. Not written when the run has no ``eval.jsonl``.
- ``plane.png``: the run's path over the sign/difficulty plane, with the same axes as the
  gradient-mass atlas (x = difficulty, y = sign_balance), coloured by step; PLANE_PIXEL_SIZE.

:func:`compare_runs` draws several runs on shared axes. The tables of one run and of several
(:func:`summary_table`, :func:`compare_table`) live in :mod:`fade.testbed.tables` (re-exported here);
the numbers they and the figures put on a run are :mod:`fade.testbed.summary`'s, and the panels'
house style and the plane are the plotting layer's (:mod:`fade.plots`). matplotlib is imported
inside the drawing functions, with the non-interactive Agg backend.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from fade.atomic import write_figure_atomic
from fade.mass import BALANCED_SIGN
from fade.plots import (
    DPI,
    NEGATIVE_COLOUR,
    POSITIVE_COLOUR,
    Mark,
    PlanePath,
    bucket_colours,
    draw_plane,
    finish_axes,
    headless_pyplot,
    legend_in_headroom,
    panel_grid,
    smoothing_window,
    trace,
)
from fade.series import moving_average

from .runlog import (
    ENTROPY_FORMULA_KEYS,
    METRICS_FILE,
    Run,
    load_run,
    logged_buckets,
    logged_ks,
    metric_column,
    metric_columns,
    metric_value,
    peak_eval_index,
)
from .summary import last_finite
from .tables import compare_labels, compare_table, run_label, run_title, shared_base, summary_table

__all__ = [
    "COMPARE_PIXEL_SIZE",
    "PASSK_PNG",
    "PLANE_PIXEL_SIZE",
    "PLANE_PNG",
    "TRAINING_PNG",
    "compare_runs",
    "compare_table",  # re-exported from tables, as the command line reads it here
    "load_run",  # re-exported from runlog: `fade report` reads the run it draws through here
    "passk_pixel_size",
    "plot_run",
    "summary_table",  # re-exported from tables, as the command line reads it here
    "training_panels",
    "training_pixel_size",
]

TRAINING_PNG, PASSK_PNG, PLANE_PNG = "training.png", "passk.png", "plane.png"

TRAINING_COLUMNS = 3
_PANEL_W_IN, _TRAINING_PANEL_H_IN, _PASSK_PANEL_H_IN, _TITLE_H_IN = 4.0, 2.6, 3.4, 0.5
_PLANE_SIZE_IN = (6.5, 5.5)
_COMPARE_SIZE_IN = (11.0, 9.5)
_COMPARE_LEGEND_COLUMNS = 4
PLANE_PIXEL_SIZE = (round(_PLANE_SIZE_IN[0] * DPI), round(_PLANE_SIZE_IN[1] * DPI))  # (650, 550)
COMPARE_PIXEL_SIZE = (round(_COMPARE_SIZE_IN[0] * DPI), round(_COMPARE_SIZE_IN[1] * DPI))  # (1100, 950)

_STEP_PASS_KS = (1, 4, 16, 64)
#: The sign_balance range a training panel always shows (0.5 = balanced).
SIGN_BALANCE_SPAN = (0.4, 0.6)


def training_pixel_size(num_panels: int) -> tuple[int, int]:
    """(width, height) in pixels of ``training.png`` with ``num_panels`` panels.

    TRAINING_COLUMNS = 3 panels of 4.0 x 2.6 inches per row, ceil(n / 3) rows, under a 0.5-inch
    title band, at 100 dpi: width = 1200, height = 260 * ceil(n / 3) + 50. A run with no
    plottable signal at all gets one (empty, labelled) panel.
    """
    if num_panels < 0:
        raise ValueError(f"num_panels must be >= 0, got {num_panels}")
    rows = math.ceil(max(num_panels, 1) / TRAINING_COLUMNS)
    return (
        round(TRAINING_COLUMNS * _PANEL_W_IN * DPI),
        round((rows * _TRAINING_PANEL_H_IN + _TITLE_H_IN) * DPI),
    )


def passk_pixel_size(has_buckets: bool) -> tuple[int, int]:
    """(width, height) in pixels of ``passk.png``: 3 panels (or 2 without per-bucket keys) of
    4.0 x 3.4 inches under a 0.5-inch title band at 100 dpi: (1200 or 800, 390)."""
    panels = 3 if has_buckets else 2
    return round(panels * _PANEL_W_IN * DPI), round((_PASSK_PANEL_H_IN + _TITLE_H_IN) * DPI)


# -- columns ------------------------------------------------------------------------------------


def _plane_path(cols: dict[str, np.ndarray], steps: np.ndarray, window: int):
    """(steps, difficulty, sign_balance) over the steps where both are finite, smoothed."""
    x, y = cols.get("difficulty"), cols.get("sign_balance")
    if x is None or y is None:
        return None
    keep = np.isfinite(x) & np.isfinite(y)
    if not keep.any():
        return None
    return steps[keep], moving_average(x[keep], window), moving_average(y[keep], window), x[keep], y[keep]


# -- plot_run -----------------------------------------------------------------------------------


def _training_panels(
    cols: dict[str, np.ndarray], steps: np.ndarray, window: int
) -> list[tuple[str, Callable[[Any], None]]]:
    """(title, draw) for each panel whose signals the run logged, in reading order."""
    c = cols.get
    has = cols.__contains__
    solve_buckets = logged_buckets(cols, "solve_rate")
    panels: list[tuple[str, Callable[[Any], None]]] = []

    def reward(ax):
        colours = bucket_colours(solve_buckets)
        for b in solve_buckets:
            trace(ax, steps, c(f"solve_rate/d{b}"), window, label=f"solve d{b}", color=colours[b], lw=0.8, raw=False)
        trace(ax, steps, c("reward_mean"), window, label="reward_mean", color="black")
        trace(ax, steps, c("solve_rate"), window, label="solve_rate", color="tab:blue", lw=1.0)
        trace(ax, steps, c("p_hat"), 1, label="p_hat (EMA)", color="0.45", ls="--", lw=1.0)

    if any(has(k) for k in ("reward_mean", "solve_rate")) or solve_buckets:
        title = "reward_mean, solve rate per bucket (d1 easiest)" if solve_buckets else "reward_mean"
        panels.append((title, reward))

    def entropy(ax):
        trace(ax, steps, c("entropy"), window, label="entropy", color="tab:purple")
        trace(ax, steps, c("h_hat"), 1, label="h_hat (EMA)", color="0.45", lw=1.0, ls=":")
        trace(ax, steps, c("h_star"), 1, label="h_star (target)", color="black", lw=1.0, ls="--")

    if has("entropy"):
        panels.append(("mean token entropy", entropy))

    def mass(ax):
        trace(ax, steps, c("positive_mass"), window, label="positive_mass", color=POSITIVE_COLOUR)
        trace(ax, steps, c("negative_mass"), window, label="negative_mass", color=NEGATIVE_COLOUR)

    if has("positive_mass") or has("negative_mass"):
        panels.append(("gradient mass", mass))

    def sign_balance(ax):
        ax.axhline(BALANCED_SIGN, color="0.4", ls="--", lw=1)
        trace(ax, steps, c("sign_balance"), window, color="tab:blue")
        # At least 0.4-0.6 in view: a centred estimator's float noise around 0.5 must not fill the panel.
        values = c("sign_balance")
        finite = np.concatenate([values[np.isfinite(values)], SIGN_BALANCE_SPAN])
        lo, hi = float(finite.min()), float(finite.max())
        pad = 0.05 * (hi - lo)
        ax.set_ylim(max(0.0, lo - pad), min(1.0, hi + pad))

    if has("sign_balance"):
        panels.append(("sign_balance (0.5 = balanced)", sign_balance))

    def entropy_formula(ax):
        # dH ~ -eta [(m_S - m_F) H + Cov(A, log pi)] (docs/method.md, section 4): the drive is the bracket
        # negated, so above zero predicts rising entropy; the entropy panel shows what happened.
        ax.axhline(0.0, color="0.6", ls=":", lw=1)
        trace(ax, steps, c("mass_entropy_term"), window, label="(m_S - m_F) H", color="tab:olive", lw=1.0)
        trace(ax, steps, c("cov_adv_logp"), window, label="Cov(A, log pi)", color="tab:pink", lw=1.0)
        trace(ax, steps, c("entropy_drive"), window, label="entropy_drive", color="black")

    if any(has(k) for k in ENTROPY_FORMULA_KEYS):
        panels.append(("entropy_drive = -[(m_S - m_F) H + Cov(A, log pi)]", entropy_formula))

    for key, title, colour in (
        ("difficulty", "difficulty (low = hard focus)", "tab:orange"),
        ("effective_sample_fraction", "effective_sample_fraction", "tab:green"),
        ("rank1_share", "rank1_share of the head's update", "tab:red"),
    ):
        if has(key):
            panels.append((title, lambda ax, key=key, colour=colour: trace(ax, steps, c(key), window, color=colour)))

    def norms(ax):
        trace(ax, steps, c("grad_norm"), window, color="tab:blue")
        ax.tick_params(axis="y", labelcolor="tab:blue")
        if has("param_norm"):
            # The two differ by orders of magnitude, so param_norm gets its own scale.
            twin = ax.twinx()
            trace(twin, steps, c("param_norm"), 1, color="tab:brown")
            twin.tick_params(labelsize=7, labelcolor="tab:brown")

    if has("grad_norm") or has("param_norm"):
        panels.append(("grad_norm (left), param_norm (right)", norms))

    def schedule(ax):
        trace(ax, steps, c("alpha"), 1, label="alpha (difficulty)", color="tab:orange")
        trace(ax, steps, c("delta"), 1, label="delta (sign)", color="tab:blue")
        ax.axhline(1.0, color="0.6", ls=":", lw=1)

    if has("alpha") or has("delta"):
        panels.append(("estimator schedule (1, 1 = dr_grpo)", schedule))

    shift = (("clip_fraction", "tab:gray"), ("clip_fraction_lower", "tab:olive"), ("cov_clip_fraction", "tab:pink"),
             ("ppo_kl", "tab:purple"), ("ppo_kl_abs", "tab:brown"), ("kl", "tab:cyan"))

    def policy_shift(ax):
        for key, colour in shift:
            if _nonzero(c(key)):
                trace(ax, steps, c(key), window, label=key, color=colour)

    # With one pass over each batch the new policy is the old one when the loss is taken, so the
    # clip fractions and ppo_kl are 0 at every step; the panel shows up once one (or the KL to the
    # base policy) carries something: off-policy steps (epochs or minibatches above 1).
    if any(_nonzero(c(key)) for key, _ in shift):
        panels.append(("clip_fraction, kl", policy_shift))

    def entropy_term(ax):
        trace(ax, steps, c("entropy_coef"), 1, label="entropy_coef (applied)", color="tab:purple")

    if has("entropy_coef"):
        panels.append(("entropy term's coefficient", entropy_term))

    def dynamic_sampling(ax):
        trace(ax, steps, c("filtered_share"), window, color="tab:red")
        ax.tick_params(axis="y", labelcolor="tab:red")
        ax.set_ylim(-0.02, 1.02)
        twin = ax.twinx()  # a count of draws, beside a share
        trace(twin, steps, c("sample_draws"), 1, color="0.3", lw=1.0)
        twin.tick_params(labelsize=7, labelcolor="0.3")

    if has("filtered_share"):
        panels.append(("filtered_share (left), sample_draws (right)", dynamic_sampling))

    def seconds(ax):
        for key, colour in (
            ("step_seconds", "black"),
            ("sample_seconds", "tab:blue"),
            ("policy_seconds", "tab:orange"),
            ("advantage_seconds", "tab:green"),
            ("update_seconds", "tab:red"),
        ):
            trace(ax, steps, c(key), window, label=key.removesuffix("_seconds"), color=colour, lw=1.0)

    if any(has(k) for k in ("step_seconds", "sample_seconds", "advantage_seconds", "update_seconds")):
        panels.append(("seconds per step", seconds))
    return panels


def _nonzero(values: np.ndarray | None) -> bool:
    return values is not None and bool((np.isfinite(values) & (values != 0)).any())


def training_panels(run: Run) -> list[str]:
    """The titles of the panels ``training.png`` draws for ``run``, in order: one per group of
    signals with at least one finite value (the size is ``training_pixel_size(len(...))``)."""
    steps = metric_column(run.metrics, "step")
    return [title for title, _ in _training_panels(metric_columns(run.metrics), steps, 1)]


def _draw_training(run: Run, cols: dict[str, np.ndarray], steps: np.ndarray, window: int, out: Path) -> Path:
    plt = headless_pyplot()
    panels = _training_panels(cols, steps, window)
    width_px, height_px = training_pixel_size(len(panels))
    rows = math.ceil(max(len(panels), 1) / TRAINING_COLUMNS)
    fig = plt.figure(figsize=(width_px / DPI, height_px / DPI), dpi=DPI)
    try:
        axes = panel_grid(fig, rows, TRAINING_COLUMNS, top=_TITLE_H_IN + 0.3).ravel()
        for i, ax in enumerate(axes):
            if i >= len(panels):
                ax.set_axis_off()
                continue
            title, draw = panels[i]
            draw(ax)
            finish_axes(ax, title)
            legend_in_headroom(ax)
            if i // TRAINING_COLUMNS == rows - 1 or i + TRAINING_COLUMNS >= len(panels):
                ax.set_xlabel("step", fontsize=7, labelpad=1)
        if not panels:
            axes[0].set_axis_on()
            axes[0].text(0.5, 0.5, "no numeric training signal logged", ha="center", va="center")
        smoothing = f"  |  moving average over {window} steps, raw faint" if window > 1 else ""
        fig.suptitle(f"training: {run_title(run)}{smoothing}", fontsize=10, y=1 - 0.15 / fig.get_size_inches()[1])
        write_figure_atomic(out, fig, dpi=DPI)
    finally:
        plt.close(fig)
    return out


def _draw_passk(run: Run, out: Path) -> Path:
    plt = headless_pyplot()
    cols = metric_columns(run.evals)
    steps = metric_column(run.evals, "step")
    ks = logged_ks(cols)
    buckets = logged_buckets(cols, "pass@1")
    width_px, height_px = passk_pixel_size(bool(buckets))
    fig = plt.figure(figsize=(width_px / DPI, height_px / DPI), dpi=DPI)
    try:
        axes = panel_grid(fig, 1, 3 if buckets else 2, top=_TITLE_H_IN + 0.1, right=0.2, wspace=0.6).ravel()

        over_steps = axes[0]
        for k in _STEP_PASS_KS:
            bold = k == 1
            trace(over_steps, steps, cols.get(f"pass@{k}"), 1, label=f"pass@{k}", lw=1.8 if bold else 1.0)
        pass1 = cols.get("pass@1")
        best = peak_eval_index(pass1) if pass1 is not None else None
        if best is not None:
            over_steps.plot([steps[best]], [pass1[best]], "*", ms=13, color="gold", mec="black", mew=0.7, zorder=4)
            # The label goes towards the middle of the axis so a peak at either end stays legible.
            right_half = steps[best] > (steps[0] + steps[-1]) / 2
            over_steps.annotate(
                f"peak {pass1[best]:.3f} @ step {int(steps[best])}",
                (steps[best], pass1[best]),
                xytext=(-9 if right_half else 9, 8),
                textcoords="offset points",
                fontsize=7,
                ha="right" if right_half else "left",
            )
        over_steps.set_xlabel("step", fontsize=7)
        finish_axes(over_steps, "pass@k vs step (star: peak pass@1)", legend=True)

        curve = axes[1]
        chosen: dict[int, str] = {0: f"base (step {int(steps[0])})"}
        if best is not None and best not in (0, len(steps) - 1):
            chosen[best] = f"best pass@1 (step {int(steps[best])})"
        chosen[len(steps) - 1] = f"final (step {int(steps[-1])})"
        styles = {"base": ("0.5", "--"), "best": ("gold", "-"), "final": ("tab:blue", "-")}
        for index, label in chosen.items():
            record = run.evals[index]
            pairs = [(k, metric_value(record.get(f"pass@{k}"))) for k in ks]
            pairs = [(k, v) for k, v in pairs if math.isfinite(v)]
            if not pairs:
                continue
            colour, ls = styles[label.split()[0]]
            curve.plot(*zip(*pairs), marker="o", ms=3.5, color=colour, ls=ls, label=label, mec="black", mew=0.4)
        if ks:
            curve.set_xscale("log", base=2)
            curve.set_xticks(ks, [str(k) for k in ks])
        curve.set_xlabel("k (log2)", fontsize=7)
        finish_axes(curve, "pass@k vs k", legend=True)

        if buckets:
            per_bucket = axes[2]
            colours = bucket_colours(buckets)
            for b in buckets:
                trace(per_bucket, steps, cols.get(f"pass@1/d{b}"), 1, label=f"d{b}", color=colours[b])
            per_bucket.set_xlabel("step", fontsize=7)
            finish_axes(per_bucket, "pass@1 per difficulty bucket (d1 easiest)", legend=True)
        fig.suptitle(f"evaluation: {run_title(run)}", fontsize=10, y=1 - 0.12 / fig.get_size_inches()[1])
        write_figure_atomic(out, fig, dpi=DPI)
    finally:
        plt.close(fig)
    return out


def _draw_plane(run: Run, cols: dict[str, np.ndarray], steps: np.ndarray, window: int, out: Path) -> Path:
    plt = headless_pyplot()
    fig = plt.figure(figsize=_PLANE_SIZE_IN, dpi=DPI)
    try:
        ax = panel_grid(fig, 1, 1, top=0.35, bottom=0.5, left=0.65, right=1.0)[0, 0]
        path = _plane_path(cols, steps, window)
        if path is None:
            draw_plane(ax)
            ax.text(0.5, 0.5, "no step logged both difficulty and sign_balance", ha="center", va="center")
        else:
            t, x, y, raw_x, raw_y = path
            lo, hi = float(t[0]), float(t[-1])
            norm = plt.Normalize(lo, hi if hi > lo else lo + 1)
            draw_plane(ax, [PlanePath(
                x, y, colour="black", lw=2.0, steps=t, step_colours=norm, raw=(raw_x, raw_y) if window > 1 else None,
                start=Mark("o", 9, 1.2, hollow=True, label=f"start (step {int(t[0])})"),
                end=Mark("*", 15, 0.8, colour="gold", label=f"end (step {int(t[-1])})"))])
            box = ax.get_position()
            bar_axes = fig.add_axes((box.x1 + 0.015, box.y0, 0.025, box.height))
            colourbar = fig.colorbar(plt.cm.ScalarMappable(norm=norm, cmap="viridis"), cax=bar_axes)
            colourbar.set_label("step", fontsize=8)
            colourbar.ax.tick_params(labelsize=7)
            ax.legend(fontsize=7.5, loc="best", frameon=False)
        smoothing = f", moving average over {window} steps" if window > 1 else ""
        ax.set_title(f"{run_label(run)}: path on the sign/difficulty plane{smoothing}", fontsize=9)
        write_figure_atomic(out, fig, dpi=DPI)
    finally:
        plt.close(fig)
    return out


def plot_run(directory: str | Path, *, smooth: int | None = None) -> list[Path]:
    """Write ``training.png``, ``passk.png`` (only if the run has evaluations) and ``plane.png``
    into the run directory and return their paths in that order.

    ``smooth`` is the moving-average window in steps for the training curves and the plane path
    (1 = raw); None picks about steps / 50. Gaps (None, NaN, absent keys) are left out point by
    point; a panel whose signals were never logged is left out of ``training.png``.
    """
    run = load_run(directory)
    if not run.metrics:
        raise ValueError(f"{run.directory / METRICS_FILE} has no complete record: nothing to plot")
    window = smoothing_window(smooth, len(run.metrics))
    cols = metric_columns(run.metrics)
    steps = metric_column(run.metrics, "step")
    written = [_draw_training(run, cols, steps, window, run.directory / TRAINING_PNG)]
    if run.evals:
        written.append(_draw_passk(run, run.directory / PASSK_PNG))
    written.append(_draw_plane(run, cols, steps, window, run.directory / PLANE_PNG))
    return written


# -- compare_runs -------------------------------------------------------------------------------


def compare_runs(
    directories: Sequence[str | Path],
    out_png: str | Path,
    *,
    label_key: str | None = None,
    smooth: int | None = None,
) -> Path:
    """Draw several runs on shared axes into the PNG ``out_png`` (COMPARE_PIXEL_SIZE pixels).

    Panels: pass@1 against step with each run's peak starred; each run's final pass@k curve over
    k (log2 axis), under the base's when all runs share their step-0 evaluation; training entropy
    against step (smoothed as in :func:`plot_run`, the window set by the longest run), with a
    dotted line at FADE's target H* for each run that logged one; each run's smoothed path on the
    sign/difficulty plane, start circled, end starred. Runs are labelled by ``label_key`` read from their
    ``run.json`` (dotted keys
    reach into nested dicts, e.g. ``estimator_args.h_star_ratio``), else by estimator and its
    arguments, else by directory name.
    """
    if not directories:
        raise ValueError("compare_runs needs at least one run directory")
    runs = [load_run(d) for d in directories]
    labels = compare_labels(runs, label_key)
    window = smoothing_window(smooth, max(len(run.metrics) for run in runs))
    plt = headless_pyplot()
    from matplotlib.lines import Line2D

    legend_rows = math.ceil(len(runs) / _COMPARE_LEGEND_COLUMNS)
    fig = plt.figure(figsize=_COMPARE_SIZE_IN, dpi=DPI)
    try:
        grid = panel_grid(fig, 2, 2, top=0.35 + 0.22 * legend_rows, bottom=0.5, right=0.2, wspace=0.7, hspace=0.75)
        (over_steps, curve), (entropy, plane) = grid
        paths = []
        all_ks: set[int] = set()
        handles = []
        base = shared_base(runs)
        if base is not None:
            pairs = [(k, metric_value(base.get(f"pass@{k}"))) for k in logged_ks(base)]
            pairs = [(k, v) for k, v in pairs if math.isfinite(v)]
            if pairs:
                curve.plot(*zip(*pairs), "o--", ms=3, color="0.55", lw=1.2)
                all_ks.update(k for k, _ in pairs)
                handles.append(Line2D([], [], color="0.55", ls="--", marker="o", ms=3, lw=1.2, label="base (step 0)"))
        targets = False
        for i, (run, label) in enumerate(zip(runs, labels)):
            colour = plt.get_cmap("tab10")(i % 10)
            handles.append(Line2D([], [], color=colour, lw=2, label=label))
            if run.evals:
                steps = metric_column(run.evals, "step")
                pass1 = metric_column(run.evals, "pass@1")
                trace(over_steps, steps, pass1, 1, color=colour)
                best = peak_eval_index(pass1)
                if best is not None:
                    over_steps.plot([steps[best]], [pass1[best]], "*", ms=12, color=colour, mec="black", mew=0.6)
                final = run.evals[-1]
                ks = logged_ks(final)
                pairs = [(k, metric_value(final.get(f"pass@{k}"))) for k in ks]
                pairs = [(k, v) for k, v in pairs if math.isfinite(v)]
                if pairs:
                    curve.plot(*zip(*pairs), "o-", ms=3.5, color=colour)
                    all_ks.update(k for k, _ in pairs)
            cols = metric_columns(run.metrics)
            steps = metric_column(run.metrics, "step")
            trace(entropy, steps, cols.get("entropy"), window, color=colour)
            h_star = last_finite(cols.get("h_star"))
            if math.isfinite(h_star):  # FADE's entropy target: delta < 1 while the entropy EMA is below it
                entropy.axhline(h_star, color=colour, ls=":", lw=1.2)
                targets = True
            path = _plane_path(cols, steps, window)
            if path is not None:
                _, x, y, _, _ = path
                paths.append(PlanePath(x, y, colour, lw=1.6, start=Mark("o", 7, 1.5, hollow=True),
                                       end=Mark("*", 13, 0.6)))
        draw_plane(plane, paths)
        if all_ks:
            curve.set_xscale("log", base=2)
            ks = sorted(all_ks)
            curve.set_xticks(ks, [str(k) for k in ks])
        over_steps.set_xlabel("step", fontsize=7)
        curve.set_xlabel("k (log2)", fontsize=7)
        entropy.set_xlabel("step", fontsize=7)
        finish_axes(over_steps, "pass@1 vs step (star: peak)")
        finish_axes(curve, "final pass@k vs k" + (" (dashed grey: the base)" if base is not None else ""))
        smoothing = f", moving average over {window} steps" if window > 1 else ""
        finish_axes(entropy, f"training entropy{smoothing}" + ("; dotted: FADE's target H*" if targets else ""))
        plane.set_title("path on the sign/difficulty plane (circle: start, star: end)", fontsize=9)
        fig.legend(
            handles=handles,
            loc="upper center",
            ncol=min(len(handles), _COMPARE_LEGEND_COLUMNS),
            fontsize=8,
            frameon=False,
            borderaxespad=0.3,
        )
        out = Path(out_png)
        out.parent.mkdir(parents=True, exist_ok=True)
        write_figure_atomic(out, fig, dpi=DPI)
    finally:
        plt.close(fig)
    return out
