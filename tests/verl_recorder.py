"""A test instrument loaded into verl's TaskRunner by tests/test_verl_cpu_e2e.py
(``VERL_USE_EXTERNAL_MODULES=fade.integrations.verl,verl_recorder``, with tests/ on PYTHONPATH).

With ``FADE_RECORD_DIR`` set, each step of verl's v1 trainer writes ``step_<N>.json``: read from
the TransferQueue just before ``_update_actor`` sends the batch to the actor, every row's uid,
reward (its token rewards summed), response mask and advantages (what the update applies), and
the advantages verl's own ``grpo`` gives that same batch; under fade's trainer also the FADE state
before and after the advantage step and the entropy verl handed it. It only observes.
"""

from __future__ import annotations

import json
import os

import fade.integrations.verl as fv

ROW_FIELDS = ["uid", "rm_scores", "response_mask", "advantages"]


def verl_grpo(rows: list[dict], algorithm) -> list[float]:
    """verl's own grpo (its registered function, as ``compute_advantage`` calls it) on these rows:
    each response's advantage (the value on its first response token)."""
    import numpy as np
    import torch
    from verl.trainer.ppo import core_algos

    width = max(len(r["mask"]) for r in rows)
    rewards = torch.zeros(len(rows), width)
    mask = torch.zeros(len(rows), width, dtype=torch.int64)
    for i, r in enumerate(rows):
        mask[i, : len(r["mask"])] = torch.tensor(r["mask"])
        rewards[i, : len(r["scores"])] = torch.tensor(r["scores"])
    adv, _ = core_algos.get_adv_estimator_fn("grpo")(
        token_level_rewards=rewards, response_mask=mask, index=np.array([r["uid"] for r in rows], dtype=object),
        norm_adv_by_std_in_grpo=algorithm.get("norm_adv_by_std_in_grpo", True), config=algorithm)
    first = (mask != 0).to(torch.int64).argmax(dim=1, keepdim=True)
    return adv.gather(1, first).squeeze(1).tolist()


def _install(directory: str) -> None:
    from verl.trainer.ppo.v1 import trainer_base

    trainer = fv.FadeTrainer
    compute_advantage, update_actor = trainer._compute_advantage, trainer_base.PPOTrainer._update_actor

    def _compute_advantage(self, batch, metrics):
        est = self._fade_estimator()
        before = est.state_dict() if est is not None and est.stateful else None
        out = compute_advantage(self, batch, metrics)
        self._fade_record = {
            "step": self.global_steps,
            "estimator": self.config.algorithm.adv_estimator,
            "entropy": metrics.get(fv.ENTROPY_METRIC),
            "state_before": before,
            "state_after": est.state_dict() if est is not None and est.stateful else None,
            "last": dict(est.last) if est is not None else None,
        }
        return out

    def _update_actor(self, batch, metrics):
        data = trainer_base.tq.kv_batch_get(keys=batch.keys, partition_id=batch.partition_id, select_fields=ROW_FIELDS)
        uids = data["uid"].tolist() if hasattr(data["uid"], "tolist") else list(data["uid"])
        rows = [
            {"key": key, "uid": str(uid), "reward": float(scores.sum()), "scores": scores.tolist(),
             "mask": mask.tolist(), "advantages": adv.tolist()}
            for key, uid, scores, mask, adv in zip(batch.keys, uids, data["rm_scores"].unbind(),
                                                    data["response_mask"].unbind(), data["advantages"].unbind())
        ]
        record = {
            "step": self.global_steps,
            "estimator": self.config.algorithm.adv_estimator,
            **getattr(self, "_fade_record", {}),
            "rows": rows,
            "verl_grpo": verl_grpo(rows, self.config.algorithm),
        }
        with open(os.path.join(directory, f"step_{self.global_steps}.json"), "w") as f:
            json.dump(record, f)
        return update_actor(self, batch, metrics)

    trainer._compute_advantage = _compute_advantage
    trainer_base.PPOTrainer._update_actor = _update_actor  # every v1 trainer mode's update


if os.environ.get("FADE_RECORD_DIR") and fv._TRAINER_MISSING is None:
    os.makedirs(os.environ["FADE_RECORD_DIR"], exist_ok=True)
    _install(os.environ["FADE_RECORD_DIR"])
