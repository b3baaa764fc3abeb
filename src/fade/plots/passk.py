"""``fade eval``'s figure: the pass@k curves of one or more of its reports on one plot.

The verifiers draw nothing: the command line draws this from the reports ``evaluate()`` returned
(:mod:`fade.cli.eval`), at a fixed size (:data:`PASSK_SIZE_IN`) and :data:`fade.plots.axes.DPI`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from fade.atomic import write_figure_atomic

from .axes import DPI, headless_pyplot

__all__ = ["PASSK_SIZE_IN", "draw_eval_passk"]

#: ``fade eval``'s passk.png: a fixed size, in inches.
PASSK_SIZE_IN = (7.0, 4.5)


def draw_eval_passk(reports: Sequence[dict[str, Any]], path: str | Path) -> Path:
    """Draw the pass@k curves of one or more ``fade eval`` reports on one plot (log-scaled k) into
    ``path``; a report of another run is checked first by :func:`fade.verifiers.evaluate.load_report`.

    Higher and flatter-rising curves trade pass@1 against pass@k differently: a run whose curve
    starts lower but ends higher kept more diverse correct solutions.
    """
    plt = headless_pyplot()
    import matplotlib.ticker

    out = Path(path)
    fig, ax = plt.subplots(figsize=PASSK_SIZE_IN, dpi=DPI, layout="constrained")
    try:
        max_k = 1
        for report in reports:
            ks = np.array(report["curve"]["k"], dtype=float)
            vals = np.array([np.nan if v is None else v for v in report["curve"]["pass@k"]], dtype=float)
            keep = np.isfinite(vals)
            if not keep.any():
                continue
            top = int(ks[keep].max())
            max_k = max(max_k, top)
            p1 = report["pass@k"].get("pass@1")
            label = report.get("label", "run") + (f" (pass@1 {p1:.3f})" if isinstance(p1, (int, float)) else "")
            (line,) = ax.plot(ks[keep], vals[keep], lw=1.6, label=label)
            # The requested k, marked where they lie on the curve (same problems averaged).
            marks = [
                (int(k[5:]), v)
                for k, v in report["pass@k"].items()
                if isinstance(v, (int, float)) and int(k[5:]) <= top
            ]
            if marks:
                ax.plot([m[0] for m in marks], [m[1] for m in marks], "o", color=line.get_color(), ms=5)
        ax.set_xscale("log", base=2 if max_k <= 64 else 10)
        ax.set_xlim(0.9, max(2, max_k) * 1.1)
        ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda x, _: f"{x:g}"))
        ax.set_ylim(0, 1.02)
        ax.set_xlabel("k (samples drawn)")
        ax.set_ylabel("pass@k (unbiased)")
        title = "pass@k" if len(reports) == 1 else "pass@k: accuracy (k = 1) against diversity (large k)"
        ax.set_title(title, fontsize=10)
        ax.grid(alpha=0.25, which="both")
        ax.legend(fontsize=8, frameon=False, loc="lower right")
        out.parent.mkdir(parents=True, exist_ok=True)
        write_figure_atomic(out, fig, dpi=DPI)
    finally:
        plt.close(fig)
    return out
