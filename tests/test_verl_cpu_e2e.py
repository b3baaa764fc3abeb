"""FADE in verl's own training loop, end to end on CPU: ``examples/verl/cpu_smoke.sh`` runs verl's
``python -m verl.trainer.main_ppo`` (the GPU recipe with ``FADE_VERL_CPU=1``, a tiny model, small
sizes) for 3 steps with a checkpoint at step 2, then step 3 again in a new process resumed from it;
two more runs compare ``fade_grpo`` with verl's ``grpo`` under verl's own ``trainer_mode=sync``,
across the two runs and, on each batch, inside the ``fade_grpo`` run; one runs ``fade_decay``, whose
schedule must be the testbed's at each step; two stop before their first step, on a bad reward
setting and on a resume with another data-loader worker count.

Marked ``e2e`` (five ``main_ppo`` runs and two refused ones, about 6 to 7 minutes on 2 cores): ``make test`` leaves
it out, ``make test-e2e`` (and CI, after the suite) runs it. A test instrument
(tests/verl_recorder.py) records, inside verl's TaskRunner, the rows the actor update receives.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

pytest.importorskip("verl")

import fade  # noqa: E402
from fade.integrations import verl as fv  # noqa: E402
from fade.mass import DIAGNOSTICS  # noqa: E402

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "examples" / "verl" / "cpu_smoke.sh"
SCHEDULE = ("alpha", "delta", "p_hat", "h_hat", "h_star")
#: Diagnostics defined on every batch (sign balance and difficulty are left out of one without signal).
ALWAYS = ("positive_mass", "negative_mass", "effective_sample_fraction")
#: The FADE parameters of the recipe (run_fade_qwen2_5_7b_math.sh).
RECIPE = {"h_star_ratio": 0.5}
#: FADE in ``fade_run``: the recipe's with ema=1 and a target above the first entropy, so that delta
#: follows each step's own entropy from the first step on (the recipe's h_star_ratio=0.5 holds it at 1
#: for a run's first steps): which entropy FADE was fed, in the run and in a replay, shows at every step.
FADE_RUN = {"h_star_ratio": 1.1, "ema": 1.0}


#: What "the same losses" means between two processes: the rollouts, entropy and advantages to float
#: precision; the loss and gradient norm to the order of verl's bf16 sums, which follows the order the
#: rollouts finished in (the policy loss is a mean of centred advantages, about 1e-9, so absolute).
SAME = [("critic/score/mean", 1e-6, 0), ("response_length/mean", 1e-6, 0), ("actor/entropy", 1e-6, 0),
        ("critic/advantages/max", 1e-6, 0), ("critic/advantages/min", 1e-6, 0), ("actor/pg_loss", 0, 1e-6),
        ("actor/grad_norm", 1e-3, 0)]
#: After step 1 the two runs' weights differ by step 1's bf16 rounding (its sums ran in another order),
#: so the gradient norm of the same rollouts moves further: 0.108% at step 2 in one CI run.
LATER = {"actor/grad_norm": (1e-2, 0)}


def smoke(out: Path, *overrides: str, resume: bool = True, record: bool = False, fails: bool = False
          ) -> subprocess.CompletedProcess:
    if shutil.which("bash") is None:
        pytest.skip("bash is needed to run the smoke script")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FADE_", "VERL_USE_EXTERNAL"))}
    env.update(PYTHON=sys.executable, RESUME="1" if resume else "0",
               PYTHONPATH=os.pathsep.join([str(REPO / "tests"), str(REPO / "src"), env.get("PYTHONPATH", "")]))
    if record:
        env["FADE_RECORD_DIR"] = str(out / "record")
        # forced (++): the recipe already sets it for every Ray process, without the recorder
        overrides = (*overrides, "++ray_kwargs.ray_init.runtime_env.env_vars.VERL_USE_EXTERNAL_MODULES="
                                 "'fade.integrations.verl,verl_recorder'")
    proc = subprocess.run(["bash", str(SCRIPT), str(out), *overrides], env=env, capture_output=True, text=True,
                          timeout=1200)
    (out / "script.out").write_text(proc.stdout + proc.stderr)
    assert (proc.returncode != 0) is fails, (proc.stdout + proc.stderr)[-6000:]
    return proc


def logged(path: Path) -> dict[int, dict]:
    """verl's file logger: step -> metrics."""
    return {r["step"]: r["data"] for r in map(json.loads, path.read_text().splitlines()) if r}


def console_steps(path: Path) -> dict[int, str]:
    text = re.sub(r"\x1b\[[0-9;]*m", "", path.read_text())
    return {int(m.group(1)): line for line in text.splitlines() if (m := re.search(r"step:(\d+) - ", line))}


@pytest.fixture(scope="module")
def fade_run(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("fade")
    # rollout_data_dir: verl's own dump, which fade analyze reads; the resumed run rewrites 3.jsonl, as
    # the recorder rewrites step_3.json, so both hold the batch of the resumed step 3
    proc = smoke(out, f"++algorithm.fade.h_star_ratio={FADE_RUN['h_star_ratio']}",
                 f"+algorithm.fade.ema={FADE_RUN['ema']}", f"trainer.rollout_data_dir={out / 'rollouts'}", record=True)
    assert "cpu smoke: passed" in proc.stdout
    return out


@pytest.fixture(scope="module")
def sync_runs(tmp_path_factory) -> dict[str, Path]:
    runs = {}
    for name in ("grpo", "fade_grpo"):
        runs[name] = tmp_path_factory.mktemp(name)
        # ~algorithm.fade: the recipe's FADE parameter, which fade_grpo would refuse rather than ignore
        # rollout_data_dir: verl's own dump of every step's rollouts, which fade analyze reads
        smoke(runs[name], "trainer.v1.trainer_mode=sync", f"algorithm.adv_estimator={name}", "~algorithm.fade",
              f"trainer.rollout_data_dir={runs[name] / 'rollouts'}", resume=False, record=True)
    return runs


def state(path: Path) -> dict:
    return json.loads(path.read_text())["state"]


def test_smoke_script_runs_three_fade_steps_and_a_resumed_one(fade_run):
    full, resumed = console_steps(fade_run / "full.log"), console_steps(fade_run / "resumed.log")
    assert sorted(full) == [1, 2, 3] and sorted(resumed) == [3]
    for line in [*full.values(), *resumed.values()]:
        assert "fade/alpha:" in line and "fade/delta:" in line
    for step in (2, 3):
        assert (fade_run / "full" / f"global_step_{step}" / fv.STATE_FILE).is_file()
    # the CPU switch's rewrite is printed, and verl's worker set up its model with TRL 1.x installed
    text = (fade_run / "full.log").read_text()
    assert "fade (FADE_VERL_CPU=1): actor_rollout_ref.rollout.name: 'vllm' -> 'hf'" in text


def test_fade_state_after_the_resumed_step_3_is_the_uninterrupted_runs(fade_run):
    uninterrupted = state(fade_run / "full" / "global_step_3" / fv.STATE_FILE)
    resumed = state(fade_run / "resumed" / "global_step_3" / fv.STATE_FILE)
    assert resumed == uninterrupted  # p_hat, h_hat, h_first, h_star, step: exactly
    at_2 = state(fade_run / "full" / "global_step_2" / fv.STATE_FILE)
    assert at_2 != uninterrupted  # step 3 moved it: the comparison above is not of two copies of step 2
    a, b = logged(fade_run / "full.metrics.jsonl")[3], logged(fade_run / "resumed.metrics.jsonl")[3]
    assert {k: b[f"fade/{k}"] for k in SCHEDULE} == {k: a[f"fade/{k}"] for k in SCHEDULE}
    assert b["critic/score/mean"] == a["critic/score/mean"] and b["actor/entropy"] == a["actor/entropy"]


def test_fade_metrics_reach_verls_logger_at_every_step(fade_run):
    for run, steps in (("full", [1, 2, 3]), ("resumed", [3])):
        metrics = logged(fade_run / f"{run}.metrics.jsonl")
        assert sorted(metrics) == steps
        for step in steps:
            keys = {k.removeprefix("fade/") for k in metrics[step] if k.startswith("fade/")}
            assert {*SCHEDULE, *ALWAYS} <= keys <= {*SCHEDULE, *DIAGNOSTICS}, (run, step, keys)
    # the logged schedule is what the estimator used for that batch
    metrics = logged(fade_run / "full.metrics.jsonl")
    for step in (1, 2, 3):
        record = json.loads((fade_run / "record" / f"step_{step}.json").read_text())
        assert {k: metrics[step][f"fade/{k}"] for k in ("alpha", "delta")} == {
            k: record["last"][k] for k in ("alpha", "delta")}
        assert record["entropy"] == metrics[step]["actor/entropy"]


def test_the_update_applies_the_advantages_fades_estimator_returned(fade_run):
    """Recompute each step from the rows the actor update received (uids, summed rewards) and the
    entropy verl handed FADE, starting from FADE's state before the step: the same advantages."""
    differs_from_grpo = False
    for step in (1, 2, 3):
        record = json.loads((fade_run / "record" / f"step_{step}.json").read_text())
        rows = record["rows"]
        est = fade.estimator("fade", **FADE_RUN)
        if record["state_before"] is not None:
            est.load_state_dict(record["state_before"])
        est.observe(entropy=record["entropy"], step=step - 1)  # FADE's step: the updates before this one
        rewards = torch.tensor([r["reward"] for r in rows])
        uids = [r["uid"] for r in rows]
        expected = est(rewards, uids)
        assert est.state_dict() == record["state_after"] and record["state_after"]["step"] == step
        applied = []
        for row in rows:
            mask = torch.tensor(row["mask"], dtype=torch.bool)
            adv = torch.tensor(row["advantages"])
            assert torch.all(adv[~mask] == 0) and torch.all(adv[mask] == adv[mask][0])  # one value per response
            applied.append(float(adv[mask][0]) if mask.any() else 0.0)
        torch.testing.assert_close(torch.tensor(applied), expected.float(), rtol=0, atol=1e-7)
        grpo = fade.advantages("grpo", rewards, uids)
        differs_from_grpo |= bool((grpo - expected).abs().max() > 1e-3)
    assert differs_from_grpo  # alpha != 1: FADE's weighting, not a group-normalised copy, reached the update


def per_response(row: dict) -> float:
    mask = torch.tensor(row["mask"], dtype=torch.bool)
    return float(torch.tensor(row["advantages"])[mask][0]) if mask.any() else 0.0


def test_fade_analyze_replays_the_runs_fade_as_verl_fed_it(fade_run):
    """fade analyze on verl's rollout dump and file logger, replaying the run's FADE spec: at every step
    the advantages the update applied (rows matched by the uid verl wrote) and the alpha and delta verl
    logged. verl feeds FADE the entropy of the batch it weighs, logged under the same step; a replay
    fed step s - 1's (the rule before) weighed every step with the previous step's delta."""
    from fade.analyze import ReadOptions, analyze_run, read_run
    from fade.analyze.stats import Counterfactuals

    spec = "fade:" + ",".join(f"{k}={v}" for k, v in FADE_RUN.items())
    full, resumed = logged(fade_run / "full.metrics.jsonl"), logged(fade_run / "resumed.metrics.jsonl")
    # the dump's step 3 is the resumed run's (below): the same entropy and schedule as the full run's
    assert {k: resumed[3][k] for k in ("actor/entropy", "fade/alpha", "fade/delta")} == {
        k: full[3][k] for k in ("actor/entropy", "fade/alpha", "fade/delta")}
    options = ReadOptions(metrics=fade_run / "full.metrics.jsonl")
    run = read_run(fade_run / "rollouts", options)
    assert run.format == "verl" and run.entropy_feed == "same-step" and [b.step for b in run.steps] == [1, 2, 3]
    analysis = analyze_run(fade_run / "rollouts", options, estimators=[spec])
    replay = Counterfactuals([spec], run)
    deltas = []
    for batch, row in zip(run.steps, analysis.steps):
        record = json.loads((fade_run / "record" / f"step_{batch.step}.json").read_text())
        applied_by_key = {r["key"]: per_response(r) for r in record["rows"]}
        dump = (fade_run / "rollouts" / f"{batch.step}.jsonl").read_text().splitlines()
        uids = [json.loads(line)["uid"] for line in dump if line]
        assert all(u.endswith("_0") for u in uids) and sorted(uids) == sorted(applied_by_key)  # one output a session
        applied = torch.tensor([applied_by_key[u] for u in uids], dtype=torch.float64)
        adv = replay.weigh(batch)[spec].advantages
        torch.testing.assert_close(adv, applied, rtol=1e-6, atol=1e-6, msg=lambda m: f"step {batch.step}: {m}")
        last = replay.estimators[spec].last
        for knob in ("alpha", "delta"):
            assert last[knob] == pytest.approx(full[batch.step][f"fade/{knob}"], rel=1e-6), (batch.step, knob)
        deltas.append(last["delta"])
        expected = fade.decompose(applied, torch.tensor(batch.rewards), torch.tensor(batch.groups)).diagnostics()
        assert row["estimators"][spec] == pytest.approx(expected, rel=1e-5, abs=1e-6, nan_ok=True), batch.step
    assert max(deltas) < 1 and len(set(deltas)) == 3  # each step's own entropy moved delta


def test_fade_grpo_is_verls_grpo_on_every_batch_of_verls_sync_trainer(sync_runs):
    """Inside one run of verl's own trainer (trainer_mode=sync) with fade_grpo: at every step the
    advantages the update applied equal those verl's grpo gives that same batch."""
    largest = 0.0
    for step in (1, 2, 3):
        record = json.loads((sync_runs["fade_grpo"] / "record" / f"step_{step}.json").read_text())
        assert record["estimator"] == "fade_grpo"
        applied = torch.tensor([per_response(r) for r in record["rows"]])
        verl = torch.tensor(record["verl_grpo"])
        torch.testing.assert_close(applied, verl, rtol=1e-5, atol=1e-6)
        largest = max(largest, float(verl.abs().max()))
    assert largest > 0.1  # groups with signal: not batches of zeros compared with zeros


def test_fade_grpo_gives_verls_grpo_losses_in_two_runs_while_their_rollouts_agree(sync_runs):
    """Two runs of verl's sync trainer on the same seed, grpo and fade_grpo. The rollouts are seeded
    per request, so step 1 samples the same responses from the same weights: the same advantages and
    losses. The update is reproducible only to the order of verl's bf16 sums (a batch is ordered by
    when its rollouts finish), so at a later step one sampled token can flip and the runs part: each
    step is compared while the two runs' rollouts still agree, step 1 always."""
    grpo, ours = logged(sync_runs["grpo"] / "full.metrics.jsonl"), logged(sync_runs["fade_grpo"] / "full.metrics.jsonl")
    assert sorted(grpo) == sorted(ours) == [1, 2, 3]
    compared = []
    for step in (1, 2, 3):
        a, b = grpo[step], ours[step]
        same_rollouts = all(a[k] == b[k] for k in ("critic/score/mean", "response_length/mean", "actor/entropy"))
        if step > 1 and not same_rollouts:
            break
        for key, rel, atol in SAME:
            rel, atol = LATER.get(key, (rel, atol)) if step > 1 else (rel, atol)
            assert b[key] == pytest.approx(a[key], rel=rel, abs=atol), (step, key, a[key], b[key])
        assert not any(k.startswith("fade/") for k in a)  # verl's own grpo: fade stays out of it
        compared.append(step)
    assert compared[0] == 1


def test_fade_analyze_reads_verls_dump_as_the_update_received_it(sync_runs):
    """fade analyze on the rollout_data_dir and file logger verl itself wrote: at every step the
    zero-spread share and the rollout count of the batch the update received, and, as both runs
    applied verl's grpo, grpo's counterfactual mass is the mass of the advantages the update applied."""
    from fade.analyze import ReadOptions, analyze_run

    for name, run in sync_runs.items():
        metrics = logged(run / "full.metrics.jsonl")
        analysis = analyze_run(run / "rollouts", ReadOptions(metrics=run / "full.metrics.jsonl"))
        assert analysis.run.format == "verl" and [s["step"] for s in analysis.steps] == [1, 2, 3]
        assert analysis.estimators == ["grpo", "dr_grpo", "maxrl", "fade"]  # the logged entropy replays FADE
        with_signal = 0
        for row in analysis.steps:
            rows = json.loads((run / "record" / f"step_{row['step']}.json").read_text())["rows"]
            rewards = torch.tensor([r["reward"] for r in rows])
            uids = [r["uid"] for r in rows]
            groups: dict[str, list[float]] = {}
            for uid, r in zip(uids, rewards.tolist()):
                groups.setdefault(uid, []).append(r)
            assert row["num_rollouts"] == len(rows) and row["num_groups"] == len(groups), (name, row["step"])
            share = sum(len(v) for v in groups.values() if max(v) - min(v) <= 1e-9) / len(rows)
            assert row["zero_spread_share"] == pytest.approx(share, abs=1e-12), (name, row["step"])
            applied = torch.tensor([per_response(r) for r in rows])
            expected = fade.decompose(applied, rewards, uids).diagnostics()
            assert row["estimators"]["grpo"] == pytest.approx(expected, rel=1e-5, abs=1e-6, nan_ok=True), (name, row)
            assert row["entropy"] == metrics[row["step"]]["actor/entropy"]
            with_signal += share < 1
        assert with_signal  # steps with signal: not empty mass compared with empty mass


# -- FADE's step, and settings refused before the first step ---------------------------------------


def test_fade_decays_logged_schedule_is_the_testbeds_at_every_step(tmp_path, tiny_model):
    """verl's step 1 is FADE's step 0, as in the testbed (docs/method.md): the schedule verl's logger
    got from a fade_decay run equals a testbed run's at the same training step, and its closed form."""
    from dataclasses import replace

    from fade.adaptive import schedule
    from fade.testbed.runlog import load_run
    from fade.testbed.trainer import TrainConfig, train

    smoke(tmp_path / "verl", "algorithm.adv_estimator=fade_decay", "+algorithm.fade.total_steps=3", resume=False)
    verl = logged(tmp_path / "verl" / "full.metrics.jsonl")
    out = train(TrainConfig(out=str(tmp_path / "testbed"), model=tiny_model, task="arithmetic", estimator="fade_decay",
                            estimator_args={"total_steps": 3, **RECIPE}, steps=3, prompts_per_step=2, group_size=4,
                            eval_every=0, eval_prompts=0, checkpoint_every=3, progress=False))
    testbed = {row["step"]: row for row in load_run(out).metrics}
    est = fade.estimator("fade_decay", total_steps=3)
    assert sorted(verl) == sorted(testbed) == [1, 2, 3]
    for step in (1, 2, 3):
        closed = schedule(replace(est.state, step=step - 1), est.params, "decay")
        assert (verl[step]["fade/alpha"], verl[step]["fade/delta"]) == pytest.approx(closed, rel=1e-9), step
        assert (testbed[step]["alpha"], testbed[step]["delta"]) == pytest.approx(closed, rel=1e-12), step
    assert verl[1]["fade/alpha"] == 3.0 and verl[1]["fade/delta"] == 1.0  # the first update explores fully


def refused(out: Path, *overrides: str) -> str:
    """A smoke run that must stop before its first step; its output."""
    proc = smoke(out, *overrides, resume=False, fails=True)
    text = proc.stdout + proc.stderr
    assert not console_steps(out / "full.log"), "a step ran"
    return text


def test_a_bad_reward_timeout_stops_the_run_before_its_first_step_with_one_line(tmp_path):
    # Before: every reward call raised in verl's reward workers, the run died in a worker traceback.
    text = refused(tmp_path, "+reward.custom_reward_function.reward_kwargs.timeout=0")
    assert re.search(r"the run's reward settings are invalid \(verl: reward.custom_reward_function.reward_kwargs\): "
                     r"timeout must be a number of seconds > 0 and at most 86400, got 0", text), text[-4000:]


def test_a_resume_with_another_dataloader_worker_count_stops_before_its_first_step(fade_run, tmp_path):
    # Before: torchdata's AssertionError at the first batch, after the workers loaded the checkpoint.
    text = refused(tmp_path, "trainer.resume_mode=resume_path",
                   f"trainer.resume_from_path={fade_run / 'full' / 'global_step_2'}", "data.dataloader_num_workers=1")
    assert re.search(
        r"data.dataloader_num_workers=1, but the checkpoint \S+global_step_2 saved its data loader with 0: "
        r"verl's StatefulDataLoader resumes only with the same count",
        text,
    ), text[-4000:]
