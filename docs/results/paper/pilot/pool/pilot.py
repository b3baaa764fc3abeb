"""Exploratory pilot: train on a fixed pool of training problems instead of the whole split.

The paper preset's baselines plateau rather than decline (PILOT.md). A small pool that the policy
can fit is one way to get the paper's decline: training reward climbs, entropy collapses, and the
held-out pass@1 peaks and falls. The trainer has no option for a pool yet, so this script swaps
the task's training draw for one from a fixed pool (the same pool for every seed; each step's
prompts a seeded draw from it) and otherwise runs the preset's settings.

    python docs/results/paper/pilot/pool/pilot.py ESTIMATOR SEED POOL OUT
"""

import random
import sys

import torch

from fade.testbed import tasks
from fade.testbed.trainer import TrainConfig, train

estimator, seed, pool, out = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
torch.set_num_threads(1)
whole_split = tasks.Task.problems


def from_pool(self, split, n=None, seed=0):
    if split != "train" or n is None:
        return whole_split(self, split, n, seed)
    fixed = whole_split(self, "train", pool, 12345)
    return random.Random(f"pool/{seed}").sample(fixed, n)


tasks.Task.problems = from_pool
train(TrainConfig(task="countdown_multi", estimator=estimator, steps=200, seed=seed, lr=2e-4,
                  prompts_per_step=16, group_size=16, eval_every=20, eval_prompts=64, eval_samples=32,
                  checkpoint_every=1000, out=out, progress=False))
