"""A sweep worker killed with SIGKILL loses no finished run: the rerun skips every finished run
(its logs untouched) and resumes the interrupted one from its checkpoint."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from fade import jsonl

SWEEP = textwrap.dedent(
    """
    import sys
    from fade.experiments.design import Preset, TaskPlan
    from fade.experiments.sweep import run_sweep

    if __name__ == "__main__":  # workers are spawned: they import this file without running the sweep
        preset = Preset(
            name="kill-test", description="tiny", seeds=(0, 1),
            plans=(TaskPlan(task="arithmetic", estimators=("grpo", "psr", "nsr"), steps=8, eval_every=4,
                            eval_prompts=4, eval_samples=4, prompts_per_step=4, group_size=4, checkpoint_every=1),),
        )
        outcome = run_sweep(preset, sys.argv[1], workers=2, progress=False)
        print("finished", len(outcome.finished), "skipped", len(outcome.skipped), "failed", len(outcome.failed))
    """
)


def _workers(parent: int) -> list[int]:
    """The spawned worker processes under ``parent`` (not multiprocessing's resource tracker)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ")
        except OSError:
            continue
        if int(stat[1]) == parent and b"spawn_main" in cmdline:
            found.append(int(entry.name))
    return found


def _start_sweep(tmp_path: Path, **popen) -> tuple[Path, Path, subprocess.Popen]:
    """The tiny sweep in a process of its own: (its script, its output folder, the process)."""
    script = tmp_path / "sweep.py"
    script.write_text(SWEEP)
    out = tmp_path / "out"
    return script, out, subprocess.Popen([sys.executable, str(script), str(out)], **popen)


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="finds the worker processes through /proc")
def test_a_killed_worker_loses_no_finished_run(tmp_path):
    script, out, proc = _start_sweep(tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 300
        while not list(out.glob("runs/*/*/*/done.json")):
            assert proc.poll() is None, proc.stdout.read().decode()
            assert time.monotonic() < deadline, "no run finished in time"
            time.sleep(0.2)
        workers = _workers(proc.pid)
        assert workers, "no worker process found"
        os.kill(workers[0], signal.SIGKILL)
        proc.wait(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
    finished = {p.parent: {f.name: f.read_bytes() for f in p.parent.iterdir() if f.is_file()}
                for p in out.glob("runs/*/*/*/done.json")}
    assert 1 <= len(finished) < 6

    rerun = subprocess.run([sys.executable, str(script), str(out)], capture_output=True, text=True, timeout=600)
    assert rerun.returncode == 0, rerun.stderr
    assert f"skipped {len(finished)} failed 0" in rerun.stdout
    assert len(list(out.glob("runs/*/*/*/done.json"))) == 6
    for directory, files in finished.items():  # a finished run's logs are untouched by the rerun
        assert {name: (directory / name).read_bytes() for name in files} == files
    logs = list(out.glob("runs/*/*/*/metrics.jsonl.gz"))
    assert len(logs) == 6
    for metrics in logs:
        steps = [line for line in jsonl.read_bytes(metrics).decode().splitlines() if line.strip()]
        assert len(steps) == 8, metrics


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="finds the worker processes through /proc")
def test_workers_end_when_the_sweep_is_killed(tmp_path):
    _, _, proc = _start_sweep(tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    workers: list[int] = []
    try:
        deadline = time.monotonic() + 120
        while len(workers) < 2 and time.monotonic() < deadline:
            workers = _workers(proc.pid)
            time.sleep(0.2)
        assert workers, "no worker process started"
        proc.kill()  # the sweep cannot clean up: its workers must notice and end by themselves
        proc.wait(timeout=30)
        deadline = time.monotonic() + 30
        while any(Path(f"/proc/{pid}").exists() and _state(pid) != "Z" for pid in workers):
            assert time.monotonic() < deadline, "a worker outlived its sweep"
            time.sleep(0.2)
    finally:
        for pid in workers:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "Z"
