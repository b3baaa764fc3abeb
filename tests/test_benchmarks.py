"""Every script in benchmarks/ runs: each takes ``--smoke`` (a tiny setting that measures nothing)
and must finish with exit status 0, so a benchmark cannot stop working unseen (benchmarks/trainer.py
once crashed for months at TRL's changed default). About 45 s for all of them on 2 idle cores."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
#: gpu_check.py's smoke run is tests/test_devices.py's, which also reads what it wrote.
SCRIPTS = sorted(p.name for p in BENCHMARKS.glob("*.py") if p.name != "gpu_check.py")


def test_the_benchmarks_are_all_here():
    assert {"advantages.py", "analyze.py", "engine_parity.py", "judging.py", "peers.py", "trainer.py"} <= set(SCRIPTS)


@pytest.mark.parametrize("script", SCRIPTS)
def test_every_benchmark_runs_with_smoke(script, tmp_path):
    done = subprocess.run([sys.executable, str(BENCHMARKS / script), "--smoke"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"{script} --smoke exited {done.returncode}:\n{(done.stdout + done.stderr)[-3000:]}"
