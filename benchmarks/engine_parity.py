"""The engine contract's table: how far fade's counterparts are from verl's and TRL's own estimators.

Runs the side-by-side tests (tests/test_verl_contract.py, and the GRPOTrainer comparisons of
tests/test_trl.py) with ``FADE_PARITY_JSON`` set, so that every comparison they assert records
its largest absolute difference (tests/conftest.py), then writes the maximum per estimator pair and
setting to docs/engines/parity.json and the tables of docs/engines/parity.md. The tests hold every
cell to the engines' own tolerance (rtol 1e-5, atol 1e-6) except the one documented difference,
so the tables cannot show a number the tests did not accept. The property-based tests draw their
random batches from a fixed seed (``HYPOTHESIS_SEED``), so a rerun on the same code writes the
same tables. Needs the verl and trl extras.

    python benchmarks/engine_parity.py [--smoke]

``--smoke`` runs one side-by-side test per engine and writes the tables to a temporary folder
instead: it checks that the script runs (CI), and leaves docs/engines as it is.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
#: The seed of the property-based side-by-side tests' draws when they fill the table.
HYPOTHESIS_SEED = 0
OUT = REPO / "docs" / "engines"

TESTS = [
    "tests/test_verl_contract.py",
    "tests/test_trl.py::test_fade_grpo_gives_grpotrainers_advantages_for_every_scale_and_aggregation",
    "tests/test_trl.py::test_fade_grpo_gives_grpotrainers_advantages_and_loss_on_every_loss_type",
]

#: verl's settings as the table's columns, and which recorded settings each column gathers.
VERL_COLUMNS = [
    ("outcome rewards", lambda s: s == "outcome rewards"),
    ("norm_adv_by_std_in_grpo=False", lambda s: s == "norm_adv_by_std_in_grpo=False"),
    ("gamma (0.9, 0.5)", lambda s: s.startswith("gamma=")),
    ("epsilon (keyword)", lambda s: s.startswith("epsilon=") and s.endswith("(keyword)")),
    ("verl's positional order (epsilon 4th)", lambda s: s.startswith("epsilon=") and s.endswith("(positional)")),
    ("one-rollout groups", lambda s: s == "one-rollout groups"),
    ("multi-token rewards", lambda s: s == "multi-token rewards"),
    ("mask holes, empty responses", lambda s: s == "mask holes, empty responses"),
    ("multi-output sessions", lambda s: s == "multi-output sessions"),
    ("no index", lambda s: s == "no index"),
    ("config: dict, namespace, AlgoConfig", lambda s: s.startswith("config as ")),
    ("random ragged batches", lambda s: s == "random ragged batches"),
    ("all-equal groups", lambda s: s == "all-equal groups"),
]


#: One quick side-by-side test per engine, for --smoke.
SMOKE_TESTS = [
    "tests/test_verl_contract.py::test_outcome_rewards",
    "tests/test_trl.py::test_fade_grpo_gives_grpotrainers_advantages_for_every_scale_and_aggregation",
]


def run_tests(path: Path, tests: list[str]) -> None:
    # A fresh pytest, even when this script runs inside one (an xdist worker's variables would make
    # the records go to a per-worker file). Hypothesis draws the random batches from a fixed seed,
    # so a rerun on the same code writes the same table.
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env["FADE_PARITY_JSON"] = str(path)
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:cacheprovider",
           f"--hypothesis-seed={HYPOTHESIS_SEED}", *tests]
    done = subprocess.run(cmd, cwd=REPO, env=env)
    if done.returncode != 0:
        sys.exit(f"the side-by-side tests failed (exit {done.returncode}): no table is written")


def gather(rows: list[dict]) -> list[dict]:
    """One entry per (engine, theirs, ours, setting): the largest difference, refusals, the exception."""
    cells: dict[tuple, dict] = {}
    for row in rows:
        key = (row["engine"], row["theirs"], row["ours"], row["setting"])
        cell = cells.setdefault(key, {"engine": key[0], "theirs": key[1], "ours": key[2], "setting": key[3],
                                      "comparisons": 0})
        if "refused" in row:
            cell["refused"] = row["refused"]
            continue
        cell["comparisons"] += 1
        field = "exception_diff" if "exception" in row else "max_abs_diff"
        cell[field] = max(cell.get(field, 0.0), row["max_abs_diff"])
        if "exception" in row:
            cell["exception"] = row["exception"]
    return sorted(cells.values(), key=lambda c: (c["engine"], c["ours"], c["setting"]))


def number(x: float) -> str:
    return "0" if x == 0 else f"{x:.1e}"


def cell_text(cells: list[dict]) -> str:
    if not cells:
        return ""
    parts = []
    diffs = [c["max_abs_diff"] for c in cells if "max_abs_diff" in c]
    if diffs:
        parts.append(number(max(diffs)))
    for c in cells:
        if "exception" in c:
            parts.append(f"**exception**: {number(c['exception_diff'])} ({c['exception']})")
    refusals = sorted({(c["setting"].removeprefix("config as "), c["refused"]) for c in cells if "refused" in c})
    for setting, how in refusals:
        parts.append(f"{setting}: {how}" if setting.startswith(("dict", "namespace", "algoconfig")) else how)
    return "; ".join(parts)


def verl_table(cells: list[dict]) -> list[str]:
    pairs = sorted({(c["theirs"], c["ours"]) for c in cells if c["engine"] == "verl"}, key=lambda p: p[1])
    lines = ["| verl -> fade | " + " | ".join(name for name, _ in VERL_COLUMNS) + " |",
             "|---|" + "---|" * len(VERL_COLUMNS)]
    for theirs, ours in pairs:
        row = [cell_text([c for c in cells if c["engine"] == "verl" and (c["theirs"], c["ours"]) == (theirs, ours)
                          and match(c["setting"])]) or "-" for _, match in VERL_COLUMNS]
        lines.append(f"| `{theirs}` -> `{ours}` | " + " | ".join(row) + " |")
    return lines


def trl_tables(cells: list[dict]) -> list[str]:
    trl = [c for c in cells if c["engine"] == "trl"]
    scales = ["'group'", "'batch'", "'none'", "True", "False"]
    lines = ['GRPOTrainer -> `FadeGRPOTrainer(advantage="grpo")`, largest difference of the advantages that reach '
             "the loss (reward weights [0.7, -1.3], None rewards, a completion every function declines):", "",
             "| scale_rewards | sum_then_normalize | normalize_then_sum |", "|---|---|---|"]
    for scale in scales:
        row = [cell_text([c for c in trl if c["setting"] == f"scale_rewards={scale}, {mode}"])
               for mode in ("sum_then_normalize", "normalize_then_sum")]
        lines.append(f"| {scale} | " + " | ".join(row) + " |")
    losses = [c for c in trl if c["setting"].startswith("loss_type=")]
    lines += ["", "Every `loss_type` (scale_rewards='batch', reward weights [1, 0.5]); the loss values agree too:", "",
              "| " + " | ".join(c["setting"].removeprefix("loss_type=") for c in losses) + " |",
              "|" + "---|" * len(losses),
              "| " + " | ".join(cell_text([c]) for c in losses) + " |"]
    return lines


def render(cells: list[dict]) -> str:
    compared = sum(c["comparisons"] for c in cells)
    return "\n".join([
        "# fade against the engines' own estimators: measured",
        "",
        "<!-- Generated by `python benchmarks/engine_parity.py` from the side-by-side tests; do not edit. -->",
        "",
        "Each cell is the largest absolute difference between fade's counterpart and the engine's own "
        "estimator over every comparison the tests make for that setting (advantages and returns, "
        f"{compared} comparisons in all). The tests hold every cell to the engines' own tolerance, rtol 1e-5 "
        "and atol 1e-6, except the one documented exception. Where verl itself refuses an input, fade refuses "
        "it too (\"both refuse\"); where verl silently ignores a setting, fade refuses it. The contract, the "
        "settings each estimator reads and the exception are in [verl.md](verl.md) and [trl.md](trl.md).",
        "",
        "## verl 0.9.1",
        "",
        *verl_table(cells),
        "",
        "## TRL 1.16",
        "",
        *trl_tables(cells),
        "",
    ])


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--smoke", action="store_true",
                    help="one test per engine, tables to a temporary folder: checks that the script runs (CI)")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "parity.json"
        run_tests(path, SMOKE_TESTS if args.smoke else TESTS)
        cells = gather(json.loads(path.read_text()))
        out = Path(tmp) / "tables" if args.smoke else OUT
        out.mkdir(parents=True, exist_ok=True)
        (out / "parity.json").write_text(json.dumps(cells, indent=1) + "\n")
        (out / "parity.md").write_text(render(cells))
        print(f"wrote {out / 'parity.json'} and {out / 'parity.md'} ({len(cells)} cells)")


if __name__ == "__main__":
    main()
