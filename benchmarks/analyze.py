"""Speed and memory of ``fade analyze`` on a synthetic verl dump, against pandas and the column floor.

What it measures
----------------
A verl v1 ``trainer.rollout_data_dir`` dump is generated in a temporary folder: ``--steps`` files
``{step}.jsonl`` (default 200), each with ``--prompts`` x ``--n`` rollouts (default 512 x 16)
whose lines carry verl's keys input, output, gts, score, step and uid, with ``--text-bytes`` of
prompt and response text per line (default 2048: about 3.3 GB in all). Then, on the same files
in the same run, each reader runs in a child process of its own (so that one's memory is not
another's; the files are read once first, so every reader finds them in the page cache alike):

- ``pandas``: ``pandas.read_json(path, lines=True)`` of every file, the frames kept, the peer a
  user would reach for;
- ``columns``: pyarrow's JSON reader with an explicit schema of the fields fade needs (score,
  step, uid, input), every other field skipped, the tables kept: the floor of reading;
- ``fade read``: ``fade.analyze.read_run``, i.e. the columns plus verl's grouping rules;
- ``fade analyze``: reading plus every step's statistics and the default estimators (grpo,
  dr_grpo, maxrl), and again with one estimator more (rloo), whose cost per 1,000 steps is the
  difference (each the best of three after a warm-up, in the ``fade read`` child).

Columns: seconds, rollouts/s, the ratio against pandas (pandas time / this time) and against the
columns (this time / columns time), and peak MB: the child's peak resident memory (``ru_maxrss``),
its imports included (the line below the table gives each child's memory after its imports; fade
imports torch). The goals: ``fade read`` at least 5x pandas, ``fade analyze`` within 2x of
``columns``, one more estimator well under a second per 1,000 steps.

How to run
----------
    python benchmarks/analyze.py [--steps 200 --prompts 512 --n 16 --text-bytes 2048] [--keep DIR]

``--smoke`` runs 2 steps of 8 x 4 rollouts (measures nothing; keeps the script working).
``--skip-pandas`` leaves pandas out (it holds every file's frame: about 3 GB of memory per GB of
dump).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


def generate(folder: Path, steps: int, prompts: int, n: int, text_bytes: int, seed: int = 0) -> int:
    """Write the dump; returns its size in bytes."""
    rng = np.random.default_rng(seed)
    alphabet = np.frombuffer(b"abcdefghijklmnopqrstuvwxyz     0123456789+-=", dtype=np.uint8)
    pool = ["".join(map(chr, rng.choice(alphabet, size=text_bytes))) for _ in range(64)]
    size = 0
    for step in range(1, steps + 1):
        p = rng.uniform(size=prompts)
        score = (rng.uniform(size=(prompts, n)) < p[:, None]).astype(float)
        lines = []
        for g in range(prompts):
            uuid = f"{step:04d}{g:06d}{rng.integers(1 << 40):011x}"
            text = pool[g % 64]
            prompt, answer = text[: text_bytes // 4], text[text_bytes // 4:]
            for s in range(n):
                lines.append(json.dumps({"input": prompt, "output": answer, "gts": str(g), "score": score[g, s],
                                         "step": step, "uid": f"{uuid}_{s}_0"}))
        data = ("\n".join(lines) + "\n").encode()
        (folder / f"{step}.jsonl").write_bytes(data)
        size += len(data)
    return size


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def peak_mb() -> float:
    """This process's peak resident memory so far, in MB (Linux reports ru_maxrss in KiB, macOS in bytes)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 2**20 if sys.platform == "darwin" else peak / 2**10


def child(reader: str, folder: Path) -> dict:
    """One reader on the dump in ``folder``, in this (child) process: its seconds and peak memory."""
    files = sorted(folder.glob("*.jsonl"), key=lambda p: int(p.stem))
    if reader == "pandas":
        import pandas as pd

        imports = peak_mb()
        return {"pandas read_json(lines=True)": (timed(lambda: [pd.read_json(p, lines=True) for p in files]),
                                                 peak_mb()), "imports": imports}
    if reader == "columns":
        import pyarrow as pa
        import pyarrow.json as pj

        imports = peak_mb()
        schema = pa.schema(
            [("score", pa.float64()), ("step", pa.int64()), ("uid", pa.string()), ("input", pa.string())]
        )
        opts = pj.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore")
        t = timed(lambda: [pj.read_json(p, parse_options=opts) for p in files])
        return {"columns (pyarrow, needed fields)": (t, peak_mb()), "imports": imports}
    import pyarrow.compute  # noqa: F401  (fade imports pyarrow where it reads: here, before the clock starts)

    from fade.analyze import analyze_records, read_run
    from fade.analyze.columns import arrow

    arrow()
    imports = peak_mb()
    holder = {}
    t_read = timed(lambda: holder.setdefault("run", read_run(folder)))
    out = {"fade read (read_run)": (t_read, peak_mb()), "imports": imports}
    run = holder["run"]
    analyze_records(run, ["grpo", "dr_grpo", "maxrl", "rloo"])  # warm-up
    t_stats = min(timed(lambda: analyze_records(run, ["grpo", "dr_grpo", "maxrl"])) for _ in range(3))
    t_more = min(timed(lambda: analyze_records(run, ["grpo", "dr_grpo", "maxrl", "rloo"])) for _ in range(3))
    out["fade analyze (read + 3 estimators)"] = (t_read + t_stats, peak_mb())
    out["stats"], out["more"] = t_stats, t_more
    return out


def in_child(reader: str, folder: Path) -> dict:
    done = subprocess.run([sys.executable, __file__, "--child", reader, str(folder)], capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"the {reader} child exited {done.returncode}:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--prompts", type=int, default=512)
    ap.add_argument("--n", type=int, default=16)
    ap.add_argument("--text-bytes", type=int, default=2048)
    ap.add_argument("--smoke", action="store_true", help="2 steps of 8 x 4 rollouts (measures nothing)")
    ap.add_argument("--skip-pandas", action="store_true")
    ap.add_argument("--keep", default=None, metavar="DIR", help="write the dump here and keep it")
    ap.add_argument("--child", nargs=2, metavar=("READER", "DIR"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child[0], Path(args.child[1]))))
        return 0
    if args.smoke:
        args.steps, args.prompts, args.n, args.text_bytes = 2, 8, 4, 256

    import pyarrow as pa

    folder = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="fade-analyze-bench-"))
    folder.mkdir(parents=True, exist_ok=True)
    try:
        t_gen = timed(lambda: generate(folder, args.steps, args.prompts, args.n, args.text_bytes))
        files = sorted(folder.glob("*.jsonl"), key=lambda p: int(p.stem))
        size = sum(p.stat().st_size for p in files)
        rollouts = args.steps * args.prompts * args.n
        for p in files:  # into the page cache for every reader alike
            p.read_bytes()
        results: dict[str, dict] = {}
        for reader in ("columns", "fade") if args.skip_pandas else ("pandas", "columns", "fade"):
            results[reader] = in_child(reader, folder)
    finally:
        if not args.keep:
            shutil.rmtree(folder, ignore_errors=True)

    rows = [(name, *value) for r in results.values() for name, value in r.items() if isinstance(value, list)]
    pandas_t = rows[0][1] if not args.skip_pandas else None
    columns_t = next(t for name, t, _ in rows if name.startswith("columns"))
    t_stats, t_more = results["fade"]["stats"], results["fade"]["more"]
    print(
        f"fade analyze benchmark: {args.steps} steps x {args.prompts} prompts x {args.n} rollouts = "
        f"{rollouts} rollouts, "
        f"{size / 1e9:.2f} GB ({args.text_bytes} B of text per line; generated in {t_gen:.0f} s)"
    )
    print(f"python {platform.python_version()}, pyarrow {pa.__version__}, {platform.machine()}, "
          f"{os.cpu_count()} CPUs; each reader in a child process of its own")
    print()
    print(f"| {'reader':<38} | {'seconds':>8} | {'rollouts/s':>11} | {'x pandas':>8} | {'x columns':>9} | "
          f"{'peak MB':>8} |")
    print("|" + "-" * 40 + "|" + "|".join("-" * (w + 1) + ":" for w in (8, 11, 8, 9, 8)) + "|")
    for name, t, mb in rows:
        vs = f"{pandas_t / t:.1f}" if pandas_t else "-"
        print(f"| {name:<38} | {t:>8.2f} | {rollouts / t:>11.3g} | {vs:>8} | {t / columns_t:>9.2f} | {mb:>8.0f} |")
    per_1000 = (t_more - t_stats) / args.steps * 1000
    print()
    print("peak MB: each child's peak resident memory, its imports included (after imports: "
          + ", ".join(f"{reader} {r['imports']:.0f} MB" for reader, r in results.items()) + ")")
    print(f"statistics and 3 estimators: {t_stats:.2f} s ({t_stats / args.steps * 1000:.1f} ms per step); "
          f"one estimator more (rloo): {per_1000:.3f} s per 1,000 steps of {args.prompts * args.n} rollouts")
    return 0


if __name__ == "__main__":
    sys.exit(main())
