"""The sweep report's figures: small PNGs that show every run of a task side by side.

- :func:`draw_atlas`: the gradient-mass atlas of every estimator the sweep trained (built and
  drawn by :mod:`fade.plots.atlas`), with FADE's family drawn at the two ends of its schedule.
- :func:`draw_plane_paths`: each run as a path over the sign-balance / difficulty plane, one small
  panel per estimator, one line per seed (start circled, end starred).
- :func:`draw_pass1`: pass@1 against step, one panel per claim group, each run a thin line with
  its peak starred, the seed mean thick.
- :func:`draw_passk`: the final pass@k curves at every k the evaluations report, seed mean with a +- std band.
- :func:`draw_entropy_rank1`: training entropy and the head update's rank-1 share against step.
- :func:`draw_entropy_check`: predicted against observed entropy change (the first-order check).
- :func:`draw_entropy_formula`: observed entropy change against the formula's drive and each of its
  two terms, over blocks of steps, coloured by the run's side of the sign axis.
- :func:`draw_delta`: FADE's sign knob delta against step, one panel per FADE arm.
- :func:`draw_schedule`: alpha, delta and p_hat against step, one row per scheduled arm, beside a
  schedule written in advance (``fade_fixed``'s path).
- :func:`draw_bucket_gains`: pass@1 gain per difficulty bucket for each Power(alpha).
- :func:`draw_controls`: FADE against the entropy controls, every arm in one figure: the final
  pass@k against k and the training entropy against step.
- :func:`draw_side_by_side`: several runs on shared axes (the testbed's
  :func:`~fade.testbed.report.compare_runs`), for FADE and its variants on one seed.
- :func:`draw_calibration`: where a base policy starts (``fade calibrate``): its pass@1 per bucket
  and the spread of its per-prompt solve rates.

Figures are drawn at the plotting layer's dpi with fixed panel sizes; smoothing, the plotting
backend, the axis styling and the plane come from :mod:`fade.plots`, the moving average from
:mod:`fade.series` and the peak evaluation from :mod:`fade.testbed.runlog`.
"""

from __future__ import annotations

import contextlib
import math
import warnings
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import numpy as np

from fade import plots
from fade.atomic import write_figure_atomic
from fade.plots import (
    DPI,
    Mark,
    PlanePath,
    draw_plane,
    finish_axes,
    headless_pyplot,
    panel_grid,
    smoothing_window,
)
from fade.series import moving_average
from fade.specs import parse_spec
from fade.testbed.runlog import peak_eval_index
from fade.testbed.summary import FORMULA_TERMS, SIGN_CLASSES

from .calibrate import HARDEST_PASS1, MID_RANGE, Calibration
from .runs import SweepRun

__all__ = [
    "colours",
    "draw_calibration",
    "draw_atlas",
    "draw_bucket_gains",
    "draw_controls",
    "draw_delta",
    "draw_schedule",
    "draw_side_by_side",
    "draw_entropy_check",
    "draw_entropy_formula",
    "draw_entropy_rank1",
    "draw_pass1",
    "draw_passk",
    "draw_plane_paths",
]

Groups = Sequence[tuple[str, Sequence[str]]]
RunsBySpec = dict[str, list[SweepRun]]

def colours(specs: Sequence[str]) -> dict[str, tuple]:
    """One colour per estimator spec, the same in every figure of a report."""
    from matplotlib import colormaps

    cmap = colormaps["tab10" if len(specs) <= 10 else "tab20"]
    return {spec: cmap(i % cmap.N) for i, spec in enumerate(specs)}


def _save(fig, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_figure_atomic(path, fig, dpi=DPI)
    return path


def draw_atlas(specs: Sequence[str], group_size: int, path: str | Path) -> Path:
    """The atlas of ``specs`` at G = ``group_size`` (:func:`fade.plots.atlas_profiles`, each labelled
    by its spec). Stateful estimators (FADE and its ablations) change their profile as they train,
    so the family is drawn once, at the two ends of its schedule (:data:`fade.plots.FADE_ENDS`);
    estimators that need a baseline response's reward (remax) are left out."""
    from fade.registry import missing_inputs
    from fade.registry import spec as registry_spec

    chosen = []
    stateful = False
    for text in specs:
        entry = registry_spec(parse_spec(text)[0])
        if entry.stateful:
            stateful = True
        elif not missing_inputs(entry, {"lengths"}):  # a baseline response's reward (remax): none here
            chosen.append((text, text))
    if stateful:
        chosen.extend(plots.FADE_ENDS)
    if not chosen:
        raise ValueError(f"no estimator among {list(specs)} has a fixed mass profile to draw")
    return plots.draw_atlas([(label, profile) for label, _, profile in plots.atlas_profiles(chosen, group_size)],
                            Path(path))


def _stack(arrays: Sequence[np.ndarray]) -> np.ndarray:
    """Rows of equal length (the shortest) for a mean over seeds."""
    n = min(len(a) for a in arrays)
    return np.vstack([a[:n] for a in arrays])


def _mean_curve(runs: Sequence[SweepRun], key: str, window: int) -> tuple[np.ndarray, np.ndarray]:
    steps = _stack([r.steps for r in runs])[0]
    values = _stack([r.curves[key] for r in runs])
    with np.errstate(all="ignore"):
        mean = np.nanmean(values, axis=0)
    keep = np.isfinite(mean)
    return steps[keep], moving_average(mean[keep], window) if keep.sum() > 2 else mean[keep]


@contextlib.contextmanager
def _panel_figure(
    count: int, columns: int, size: tuple[float, float], path: str | Path, title: str
) -> Iterator[np.ndarray]:
    """The axes of ``count`` panels of ``size`` inches in ``columns`` columns under a title band;
    once the block has drawn them the figure gets ``title`` and is saved to ``path``. Closed either way."""
    plt = headless_pyplot()
    rows = max(1, math.ceil(count / columns))
    top, bottom, hspace = 0.75, 0.45, 0.75  # inches: the title band, step labels, a panel's title
    height = rows * size[1] + top + bottom + (rows - 1) * hspace
    fig = plt.figure(figsize=(columns * size[0], height), dpi=DPI)
    try:
        axes = panel_grid(
            fig, rows, columns, top=top, bottom=bottom, hspace=hspace, left=0.6, right=0.25, wspace=0.6
        ).ravel()
        for ax in axes[count:]:
            ax.set_axis_off()
        yield axes
        fig.suptitle(title, fontsize=10, y=1 - 0.25 / fig.get_size_inches()[1])
        _save(fig, Path(path))
    finally:
        plt.close(fig)


def _group_columns(groups: Groups) -> int:
    return max(1, min(2, len(groups)))


def _present(specs: Sequence[str], runs_by_spec: RunsBySpec,
             keep: Callable[[SweepRun], bool] | None = None) -> Iterator[tuple[str, list[SweepRun]]]:
    """(spec, its runs that ``keep`` accepts: all by default) for each spec of ``specs`` with at least one."""
    for spec in specs:
        runs = [r for r in runs_by_spec.get(spec, []) if keep is None or keep(r)]
        if runs:
            yield spec, runs


def draw_plane_paths(runs_by_spec: RunsBySpec, path: str | Path, *, title: str) -> Path:
    """Each run as a smoothed path over the sign/difficulty plane, one panel per estimator."""
    from matplotlib import colormaps

    specs = [s for s, runs in runs_by_spec.items() if runs]
    palette = colormaps["viridis"]
    with _panel_figure(len(specs), min(4, max(len(specs), 1)), (3.0, 2.7), path,
                       f"{title}: each run's path (circle: start, star: end)") as axes:
        for ax, spec in zip(axes, specs):
            runs = runs_by_spec[spec]
            paths = []
            for i, run in enumerate(runs):
                x, y = run.curves["difficulty"], run.curves["sign_balance"]
                keep = np.isfinite(x) & np.isfinite(y)
                if not keep.any():
                    continue
                window = smoothing_window(None, int(keep.sum()))
                colour = palette(0.15 + 0.7 * i / max(len(runs) - 1, 1))
                paths.append(PlanePath(moving_average(x[keep], window), moving_average(y[keep], window), colour,
                                       label=f"seed {run.seed}", lw=1.3, start=Mark("o", 5, 1.2, hollow=True),
                                       end=Mark("*", 9, 0.4)))
            draw_plane(ax, paths, labels=False, lw=0.8)
            ax.set_xlabel("difficulty (low = hard focus)", fontsize=7, labelpad=1)
            ax.set_ylabel("sign_balance", fontsize=7, labelpad=1)
            finish_axes(ax, spec, legend=len(runs) > 1)
    return Path(path)


def draw_pass1(groups: Groups, runs_by_spec: RunsBySpec, palette: dict, path: str | Path, *, title: str) -> Path:
    """pass@1 against step per claim group: runs thin with their peak starred, seed mean thick."""
    with _panel_figure(len(groups), _group_columns(groups), (5.5, 3.4), path,
                       f"{title}: pass@1 vs step (thin: runs, star: each run's peak; thick: seed mean)") as axes:
        for ax, (group, specs) in zip(axes, groups):
            for spec, runs in _present(specs, runs_by_spec, lambda r: r.pass1.size > 0):
                colour = palette[spec]
                for run in runs:
                    ax.plot(run.eval_steps, run.pass1, color=colour, lw=0.7, alpha=0.45)
                    best = peak_eval_index(run.pass1)
                    if best is not None:
                        ax.plot(
                            [run.eval_steps[best]], [run.pass1[best]], "*", ms=8, color=colour, mec="black", mew=0.4
                        )
                steps = _stack([r.eval_steps for r in runs])[0]
                ax.plot(steps, _stack([r.pass1 for r in runs]).mean(axis=0), color=colour, lw=2.0, label=spec)
            ax.set_xlabel("step", fontsize=7)
            finish_axes(ax, group, legend=True)
    return Path(path)


def draw_passk(groups: Groups, runs_by_spec: RunsBySpec, palette: dict, path: str | Path, *, title: str) -> Path:
    """The final pass@k over k (log2 axis) per claim group: seed mean, +- std band."""
    with _panel_figure(len(groups), _group_columns(groups), (5.5, 3.4), path,
                       f"{title}: final pass@k vs k (seed mean, band: ± std)") as axes:
        for ax, (group, specs) in zip(axes, groups):
            all_ks: set[int] = set()
            for spec, runs in _present(specs, runs_by_spec, lambda r: bool(r.final)):
                ks = sorted(set.intersection(*(set(r.passk(r.final)) for r in runs)))
                if not ks:
                    continue
                values = np.array([[r.passk(r.final)[k] for k in ks] for r in runs])
                mean = values.mean(axis=0)
                ax.plot(ks, mean, "o-", ms=3, color=palette[spec], lw=1.5, label=spec)
                if len(runs) > 1:
                    std = values.std(axis=0, ddof=1)
                    ax.fill_between(ks, mean - std, mean + std, color=palette[spec], alpha=0.12, lw=0)
                all_ks.update(ks)
            if all_ks:
                ax.set_xscale("log", base=2)
                ks = sorted(all_ks)
                ax.set_xticks(ks, [str(k) for k in ks])
            ax.set_xlabel("k (log2)", fontsize=7)
            finish_axes(ax, group, legend=True)
    return Path(path)


def draw_entropy_rank1(
    groups: Groups, runs_by_spec: RunsBySpec, palette: dict, path: str | Path, *, title: str
) -> Path:
    """Training entropy (left) and rank-1 share of the head's update (right) per claim group."""
    with _panel_figure(2 * len(groups), 2, (5.0, 2.8), path,
                       f"{title}: entropy and rank-1 share vs step (seed mean, smoothed)") as axes:
        for row, (group, specs) in enumerate(groups):
            entropy_ax, rank_ax = axes[2 * row], axes[2 * row + 1]
            for spec, runs in _present(specs, runs_by_spec):
                window = smoothing_window(None, min(len(r.steps) for r in runs))
                for ax, key in ((entropy_ax, "entropy"), (rank_ax, "rank1_share")):
                    steps, mean = _mean_curve(runs, key, window)
                    ax.plot(steps, mean, color=palette[spec], lw=1.4, label=spec)
            for ax, what in ((entropy_ax, "mean token entropy"), (rank_ax, "rank1_share of the head's update")):
                ax.set_xlabel("step", fontsize=7)
                finish_axes(ax, f"{group}: {what}", legend=ax is entropy_ax)
    return Path(path)


def draw_entropy_check(points: Sequence[tuple[str, int, float, float]], eta: float, palette: dict, path: str | Path,
                       *, title: str) -> Path:
    """Observed block-to-block entropy change against the first-order prediction, per estimator."""
    plt = headless_pyplot()
    fig = plt.figure(figsize=(6.5, 5.0), dpi=DPI)
    try:
        ax = fig.add_axes((0.12, 0.1, 0.58, 0.78))
        specs = list(dict.fromkeys(p[0] for p in points))
        for spec in specs:
            xs = [p[2] for p in points if p[0] == spec]
            ys = [p[3] for p in points if p[0] == spec]
            ax.scatter(xs, ys, s=9, alpha=0.6, color=palette.get(spec, "0.3"), label=spec, lw=0)
        if math.isfinite(eta) and points:
            lo, hi = min(p[2] for p in points), max(p[2] for p in points)
            ax.plot([lo, hi], [eta * lo, eta * hi], color="black", lw=1, ls="--", label=f"fit: eta = {eta:.3g}")
        ax.axhline(0, color="0.6", lw=0.6)
        ax.axvline(0, color="0.6", lw=0.6)
        ax.set_xlabel("predicted: sum of (m_S - m_F) H over the span", fontsize=8)
        ax.set_ylabel("observed change of block-mean entropy", fontsize=8)
        ax.tick_params(labelsize=7)
        ax.grid(alpha=0.25)
        ax.legend(fontsize=6.5, frameon=False, loc="upper left", bbox_to_anchor=(1.02, 1.0))
        ax.set_title(f"{title}: first-order entropy check", fontsize=9)
        return _save(fig, Path(path))
    finally:
        plt.close(fig)


#: FADE's default floor of delta (docs/method.md, section 3), drawn as a guide.
DELTA_MIN = 0.3
#: The sign groups' colours in the entropy-formula figure: success-heavy warm, failure-heavy cool.
SIGN_COLOURS = dict(zip(SIGN_CLASSES, ("tab:red", "tab:blue", "0.45")))


def draw_entropy_formula(points: Sequence[tuple[str, str, float, float, float, float]], path: str | Path,
                         *, title: str) -> Path:
    """Observed entropy change per step against the block-mean drive and each of its terms.

    ``points`` are (sign group, spec, drive, -(m_S - m_F) H, -Cov(A, log pi), observed) per block
    pair, as :func:`fade.experiments.claims.entropy_formula.formula_points` collects them; one panel per term,
    each with its least-squares line through the origin and the pooled Pearson r.
    """
    columns = list(FORMULA_TERMS.items())
    with _panel_figure(len(columns), len(columns), (3.6, 3.2), path,
                       f"{title}: entropy formula over blocks (x: block-mean term, y: observed dH per step)") as axes:
        observed = np.array([p[5] for p in points], dtype=float)
        for index, (ax, (_, label)) in enumerate(zip(axes, columns)):
            x_all = np.array([p[2 + index] for p in points], dtype=float)
            for group, colour in SIGN_COLOURS.items():
                keep = np.array([p[0] == group for p in points], dtype=bool) & np.isfinite(x_all)
                if keep.any():
                    ax.scatter(x_all[keep], observed[keep], s=8, alpha=0.55, color=colour, lw=0, label=group)
            keep = np.isfinite(x_all) & np.isfinite(observed)
            x, y = x_all[keep], observed[keep]
            caption = label
            if x.size >= 3 and (x * x).sum() > 0 and np.ptp(x) > 0 and np.ptp(y) > 0:
                eta = float((x * y).sum() / (x * x).sum())
                ends = np.array([x.min(), x.max()])
                ax.plot(ends, eta * ends, color="black", lw=1, ls="--")
                caption = f"{label}: r = {np.corrcoef(x, y)[0, 1]:.2f}, eta = {eta:.3g}"
            ax.axhline(0, color="0.6", lw=0.6)
            ax.axvline(0, color="0.6", lw=0.6)
            ax.set_xlabel(f"block mean of {label}", fontsize=7)
            if index == 0:
                ax.set_ylabel("observed entropy change per step", fontsize=7)
            finish_axes(ax, caption, legend=index == 0)
    return Path(path)


def draw_delta(arms: Sequence[tuple[str, list[SweepRun]]], palette: dict, path: str | Path, *, title: str) -> Path:
    """delta against step for each FADE arm: each seed thin, the seed mean thick, delta = 1 (the sign
    knob at rest) and FADE's default floor delta_min dotted; a panel's title gives the share of
    steps below 1."""
    with _panel_figure(len(arms), min(3, max(len(arms), 1)), (3.8, 2.6), path,
                       f"{title}: FADE's delta vs step (thin: seeds, thick: seed mean)") as axes:
        for ax, (spec, runs) in zip(axes, arms):
            colour = palette.get(spec, "0.3")
            for run in runs:
                ax.plot(run.steps, run.curves["delta"], color=colour, lw=0.6, alpha=0.45)
            steps, mean = _mean_curve(runs, "delta", 1)
            ax.plot(steps, mean, color=colour, lw=1.8)
            for level in (1.0, DELTA_MIN):
                ax.axhline(level, color="0.5", lw=0.7, ls=":")
            share = [r.scalars.get("delta_below1", math.nan) for r in runs]
            share = [v for v in share if math.isfinite(v)]
            ax.set_ylim(0.25, 1.05)
            ax.set_xlabel("step", fontsize=7)
            ax.set_ylabel("delta", fontsize=7)
            below = f"delta < 1 on {np.mean(share):.0%} of steps" if share else "delta not logged"
            finish_axes(ax, f"{spec}: {below}")
    return Path(path)


#: The knobs :func:`draw_schedule` draws, with their axis ranges.
SCHEDULE_PANELS: tuple[tuple[str, tuple[float, float]], ...] = (("alpha", (0.9, 3.1)), ("delta", (0.85, 1.01)),
                                                                 ("p_hat", (0.0, 1.0)))


def draw_schedule(arms: Sequence[tuple[str, list[SweepRun]]], palette: dict, path: str | Path, *, title: str,
                  reference: tuple[str, np.ndarray, np.ndarray, np.ndarray] | None = None) -> Path:
    """alpha, delta and p_hat against step for each scheduled arm, one row per arm: each seed thin,
    the median over seeds thick; ``reference`` (a name, steps, alpha, delta), a schedule written in
    advance, dashed in every row's alpha and delta panels, so that each arm's path reads against it."""
    with _panel_figure(len(arms) * len(SCHEDULE_PANELS), len(SCHEDULE_PANELS), (3.6, 2.3), path,
                       f"{title}: the schedule's knobs vs step (thin: seeds, thick: median"
                       + (f", dashed: {reference[0]}" if reference else "") + ")") as axes:
        for row, (spec, runs) in enumerate(arms):
            colour = palette.get(spec, "0.3")
            for col, (key, limits) in enumerate(SCHEDULE_PANELS):
                ax = axes[row * len(SCHEDULE_PANELS) + col]
                for run in runs:
                    ax.plot(run.steps, run.curves[key], color=colour, lw=0.6, alpha=0.4)
                steps = _stack([r.steps for r in runs])[0]
                with np.errstate(all="ignore"), warnings.catch_warnings():
                    warnings.simplefilter("ignore", RuntimeWarning)  # a step no seed logged
                    median = np.nanmedian(_stack([r.curves[key] for r in runs]), axis=0)
                ax.plot(steps, median, color=colour, lw=1.8)
                every = np.concatenate([np.asarray(r.curves[key], dtype=float) for r in runs])
                if reference is not None and key in ("alpha", "delta"):
                    ref = reference[2] if key == "alpha" else reference[3]
                    ax.plot(reference[1], ref, color="black", lw=1.0, ls="--")
                if key == "delta":
                    ax.axhline(1.0, color="0.5", lw=0.7, ls=":")
                low = min(limits[0], float(np.nanmin(every)) - 0.02) if np.isfinite(every).any() else limits[0]
                ax.set_ylim(low, limits[1])
                ax.set_xlabel("step", fontsize=7)
                ax.set_ylabel(key, fontsize=7)
                finish_axes(ax, f"{spec}: {key}" if col == 0 else key)
    return Path(path)


def draw_bucket_gains(levels: Sequence[tuple[str, list[SweepRun]]], path: str | Path, *, title: str) -> Path:
    """Bars of the pass@1 gain (final - base) per difficulty bucket, one bar per level, +- std."""
    plt = headless_pyplot()
    fig = plt.figure(figsize=(6.5, 3.6), dpi=DPI)
    try:
        ax = fig.add_axes((0.1, 0.15, 0.62, 0.72))
        buckets = sorted({b for _, runs in levels for r in runs for b in r.buckets()})
        width = 0.8 / max(len(levels), 1)
        cmap = plt.get_cmap("plasma")
        for i, (label, runs) in enumerate(levels):
            gains = np.array([[r.scalars.get(f"gain/d{b}", math.nan) for b in buckets] for r in runs])
            with warnings.catch_warnings():  # a bucket no run evaluated is a gap, not an error
                warnings.simplefilter("ignore", RuntimeWarning)
                mean = np.nanmean(gains, axis=0)
                std = np.nanstd(gains, axis=0, ddof=1) if len(runs) > 1 else None
            x = np.arange(len(buckets)) + (i - (len(levels) - 1) / 2) * width
            ax.bar(
                x, mean, width, yerr=std, color=cmap(0.15 + 0.7 * i / max(len(levels) - 1, 1)), label=label, capsize=2
            )
        ax.axhline(0, color="0.4", lw=0.8)
        ax.set_xticks(range(len(buckets)), [f"d{b}" for b in buckets])
        ax.set_xlabel("difficulty bucket (d1 easiest)", fontsize=8)
        ax.set_ylabel("pass@1 gain, final - base", fontsize=8)
        ax.tick_params(labelsize=7)
        ax.grid(alpha=0.25, axis="y")
        ax.legend(fontsize=7, frameon=False, loc="upper left", bbox_to_anchor=(1.02, 1.0))
        ax.set_title(f"{title}: where the gains land", fontsize=9)
        return _save(fig, Path(path))
    finally:
        plt.close(fig)


def draw_controls(arms: Sequence[tuple[str, object, list[SweepRun]]], path: str | Path, *, title: str) -> Path:
    """Every arm of the entropy comparison, (name, colour, runs) each, the first FADE's: the final
    pass@k against k (log2 axis, seed mean) on the left, the training entropy against step (seed
    mean, smoothed) on the right, one legend beside them. FADE is drawn thick and black."""
    plt = headless_pyplot()
    fig = plt.figure(figsize=(13.0, 4.6), dpi=DPI)
    try:
        passk_ax = fig.add_axes((0.05, 0.12, 0.3, 0.74))
        entropy_ax = fig.add_axes((0.41, 0.12, 0.3, 0.74))
        all_ks: set[int] = set()
        for i, (name, colour, runs) in enumerate(arms):
            style = dict(color="black", lw=2.4, zorder=3) if i == 0 else dict(color=colour, lw=1.2)
            finished = [r for r in runs if r.final]
            ks = sorted(set.intersection(*(set(r.passk(r.final)) for r in finished))) if finished else []
            if ks:
                mean = np.array([[r.passk(r.final)[k] for k in ks] for r in finished]).mean(axis=0)
                passk_ax.plot(ks, mean, "o-", ms=2.5, label=name, **style)
                all_ks.update(ks)
            if runs:
                steps, entropy = _mean_curve(runs, "entropy", smoothing_window(None, min(len(r.steps) for r in runs)))
                entropy_ax.plot(steps, entropy, label=None if ks else name, **style)
        if all_ks:
            ks = sorted(all_ks)
            passk_ax.set_xscale("log", base=2)
            passk_ax.set_xticks(ks, [str(k) for k in ks])
        passk_ax.set_xlabel("k (log2)", fontsize=8)
        entropy_ax.set_xlabel("step", fontsize=8)
        finish_axes(passk_ax, "final pass@k against k (seed mean)")
        finish_axes(entropy_ax, "training entropy against step (seed mean, smoothed)")
        handles = [h for ax in (passk_ax, entropy_ax) for h in ax.get_legend_handles_labels()[0]]
        labels = [label for ax in (passk_ax, entropy_ax) for label in ax.get_legend_handles_labels()[1]]
        if handles:
            fig.legend(handles, labels, fontsize=7, frameon=False, loc="upper left", bbox_to_anchor=(0.73, 0.88))
        fig.suptitle(f"{title}: FADE against the entropy controls", fontsize=10)
        return _save(fig, Path(path))
    finally:
        plt.close(fig)


def draw_side_by_side(directories: Sequence[str | Path], path: str | Path) -> Path:
    """The runs in ``directories`` on shared axes, read from their logs: the testbed's
    :func:`fade.testbed.report.compare_runs` (its pass@1, pass@k, entropy and plane panels)."""
    from fade.testbed.report import compare_runs

    return compare_runs(directories, path)


def draw_calibration(cal: Calibration, path: str | Path) -> Path:
    """Two panels: the base pass@1 per bucket, and the spread of per-prompt solve rates over
    training prompts with the regime's middle range shaded."""
    plt = headless_pyplot()
    fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.4), constrained_layout=True)
    try:
        buckets = sorted(cal.pass1_by_bucket)
        left.bar([str(b) for b in buckets], [cal.pass1_by_bucket[b] for b in buckets], color="tab:blue")
        lo, hi = HARDEST_PASS1
        left.axhspan(lo, hi, color="0.85", zorder=0, label=f"hardest bucket's range [{lo}, {hi}]")
        left.set_xlabel("difficulty bucket (test prompts)")
        left.set_ylabel("base pass@1")
        left.legend(fontsize=8, frameon=False)
        rates = np.asarray(cal.train_solve_rates)
        right.hist(rates, bins=np.linspace(0, 1, 33), color="tab:green")
        right.axvspan(
            *MID_RANGE, color="0.85", zorder=0, label=f"{cal.mid_fraction:.0%} of prompts in {list(MID_RANGE)}"
        )
        right.set_xlabel(f"base solve rate per training prompt ({cal.samples} samples)")
        right.set_ylabel("prompts")
        right.legend(fontsize=8, frameon=False)
        solutions = "" if cal.mean_solutions is None else f", {cal.mean_solutions:.2f} distinct answers per problem"
        fig.suptitle(f"{cal.task}: where the base policy starts{solutions}", fontsize=11)
        out = Path(path)
        write_figure_atomic(out, fig, dpi=DPI)
    finally:
        plt.close(fig)
    return out
