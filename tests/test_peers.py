"""fade against literal re-implementations of verl 0.9.1's and TRL 1.16's advantage formulas.

Each reference below copies the logic of a peer function (a loop over groups, as the peers
write it), not its code: verl's ``compute_*_outcome_advantage`` in trainer/ppo/core_algos.py
(with ``masked_whiten`` / ``masked_var`` from utils/torch_functional.py) and TRL's GRPO
advantage in GRPOTrainer (``scale_rewards`` group / batch / none, eps 1e-4, unbiased nanstd).
Token-level peers are run on a (batch, length) reward matrix with the outcome reward on the
last response token and a mask built from the lengths; their per-sequence value is compared.

verl's loops give a one-rollout group its raw reward (mean 0, std 1); fade gives it 0 unless
``lone="verl"``. Batches here have groups of at least 2 rollouts, and one test shows both
conventions. tests/test_verl_contract.py runs verl's installed functions side by side with fade's.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest
import torch

import fade

SEEDS = range(12)


def random_batch(seed: int, *, binary: bool | None = None, min_size: int = 2):
    """Shuffled ragged groups (sizes min_size..9) with string uids, rewards, lengths, baselines."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(min_size, 10, size=rng.integers(1, 7))
    uids = np.repeat(np.array([f"uid-{rng.integers(1 << 30)}-{i}" for i in range(sizes.size)]), sizes)
    n = uids.size
    if binary is None:
        binary = bool(rng.integers(2))
    rewards = rng.integers(0, 2, size=n).astype(np.float64) if binary else np.round(rng.normal(size=n), 2)
    lengths = rng.integers(1, 20, size=n)
    baselines = rng.integers(0, 2, size=n).astype(np.float64)
    perm = rng.permutation(n)
    return rewards[perm], uids[perm], lengths[perm], baselines[perm]


def token_level(rewards: np.ndarray, lengths: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
    """verl's inputs: outcome reward on the last response token, mask of the response tokens."""
    width = int(lengths.max()) + 2
    mask = (torch.arange(width).unsqueeze(0) < torch.as_tensor(lengths).unsqueeze(1)).to(torch.float64)
    tok = torch.zeros(len(rewards), width, dtype=torch.float64)
    tok[torch.arange(len(rewards)), torch.as_tensor(lengths) - 1] = torch.as_tensor(rewards)
    return tok, mask


def by_group(index) -> dict:
    out = defaultdict(list)
    for i, u in enumerate(index):
        out[u].append(i)
    return out


# -- verl, re-implemented --------------------------------------------------------------------


def verl_grpo(scores: torch.Tensor, index, epsilon: float = 1e-6, norm_adv_by_std_in_grpo: bool = True) -> torch.Tensor:
    scores = scores.clone()
    out = scores.clone()
    for rows in by_group(index).values():
        s = scores[rows]
        if len(rows) == 1:
            mean, std = torch.tensor(0.0, dtype=s.dtype), torch.tensor(1.0, dtype=s.dtype)
        else:
            mean, std = s.mean(), s.std()  # torch.std is unbiased
        for i in rows:
            if norm_adv_by_std_in_grpo:
                out[i] = (scores[i] - mean) / (std + epsilon)
            else:
                out[i] = scores[i] - mean
    return out


def verl_rloo(scores: torch.Tensor, index) -> torch.Tensor:
    out = scores.clone()
    for rows in by_group(index).values():
        n = len(rows)
        if n > 1:
            mean = scores[rows].mean()
            for i in rows:
                out[i] = scores[i] * n / (n - 1) - mean * n / (n - 1)
    return out


def verl_opo(scores: torch.Tensor, response_length: torch.Tensor, index) -> torch.Tensor:
    out = scores.clone()
    for rows in by_group(index).values():
        if len(rows) == 1:
            baseline = 0.0
        else:
            baseline = (response_length[rows] * scores[rows]).sum() / response_length[rows].sum()
        for i in rows:
            out[i] = scores[i] - baseline
    return out


def verl_gpg(scores: torch.Tensor, index, f_norm: float = 1.0) -> torch.Tensor:
    bsz = scores.shape[0]
    alpha = bsz / torch.count_nonzero(scores).clamp(min=1)
    out = scores.clone()
    for rows in by_group(index).values():
        mean = scores[rows].mean() if len(rows) > 1 else 0.0
        for i in rows:
            out[i] = alpha * (scores[i] - mean) / f_norm
    return out


def verl_grpo_passk(
    scores: torch.Tensor, index, epsilon: float = 1e-6, norm_adv_by_std_in_grpo: bool = True
) -> torch.Tensor:
    out = torch.zeros_like(scores)
    for rows in by_group(index).values():
        r = scores[rows]
        topk, topk_idx = torch.topk(r, 2)
        adv = topk[0] - topk[1]
        if norm_adv_by_std_in_grpo:
            adv = adv / (r.std() + epsilon)
        out[rows[int(topk_idx[0])]] = adv
    return out


def verl_masked_mean(values, mask):
    return (values * mask).sum() / (mask.sum() + 1e-8)


def verl_masked_var(values, mask):
    mean = verl_masked_mean(values, mask)
    variance = verl_masked_mean((values - mean) ** 2, mask)
    mask_sum = mask.sum()
    return variance * (mask_sum / (mask_sum - 1))


def verl_masked_whiten(values, mask):
    mean, var = verl_masked_mean(values, mask), verl_masked_var(values, mask)
    return (values - mean) * torch.rsqrt(var + 1e-8)


def verl_reinforce_pp(token_level_rewards, response_mask, gamma: float = 1.0):
    returns = torch.zeros_like(token_level_rewards)
    running = torch.zeros(token_level_rewards.shape[0], dtype=token_level_rewards.dtype)
    for t in reversed(range(token_level_rewards.shape[1])):
        new = token_level_rewards[:, t] + gamma * running
        returns[:, t] = new * response_mask[:, t]
        running = new * response_mask[:, t] + running * (1 - response_mask[:, t])
    return verl_masked_whiten(returns, response_mask) * response_mask


def verl_reinforce_pp_baseline(token_level_rewards, response_mask, index):
    scores = token_level_rewards.sum(dim=-1)
    centred = scores.clone()
    for rows in by_group(index).values():
        mean = scores[rows].mean() if len(rows) > 1 else 0.0
        for i in rows:
            centred[i] = scores[i] - mean
    tiled = centred.unsqueeze(-1).tile([1, token_level_rewards.shape[-1]]) * response_mask
    return verl_masked_whiten(tiled, response_mask) * response_mask


def verl_remax(token_level_rewards, reward_baselines, response_mask):
    returns = (token_level_rewards * response_mask).flip(dims=[-1]).cumsum(dim=-1).flip(dims=[-1])
    return returns - reward_baselines.unsqueeze(-1) * response_mask


def per_sequence(token_adv: torch.Tensor, lengths: np.ndarray) -> torch.Tensor:
    """The advantage at the first token; check every response token carries the same value."""
    mask = (torch.arange(token_adv.shape[1]).unsqueeze(0) < torch.as_tensor(lengths).unsqueeze(1))
    first = token_adv[:, 0]
    assert torch.allclose(torch.where(mask, token_adv, first.unsqueeze(1)), first.unsqueeze(1).expand_as(token_adv))
    return first


CLOSE = {"rtol": 1e-9, "atol": 1e-9}


# -- tests: verl -------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", SEEDS)
def test_grpo_matches_verl(seed):
    r, uid, _, _ = random_batch(seed)
    ref = verl_grpo(torch.as_tensor(r), uid)
    torch.testing.assert_close(fade.advantages("grpo", r, uid), ref, **CLOSE)


@pytest.mark.parametrize("seed", SEEDS)
def test_dr_grpo_matches_verl_without_std_norm(seed):
    r, uid, _, _ = random_batch(seed)
    ref = verl_grpo(torch.as_tensor(r), uid, norm_adv_by_std_in_grpo=False)
    torch.testing.assert_close(fade.advantages("dr_grpo", r, uid), ref, **CLOSE)
    torch.testing.assert_close(fade.advantages("grpo", r, uid, scale="none"), ref, **CLOSE)


@pytest.mark.parametrize("seed", SEEDS)
def test_rloo_matches_verl(seed):
    r, uid, _, _ = random_batch(seed)
    torch.testing.assert_close(fade.advantages("rloo", r, uid), verl_rloo(torch.as_tensor(r), uid), **CLOSE)


@pytest.mark.parametrize("seed", SEEDS)
def test_opo_matches_verl(seed):
    r, uid, lengths, _ = random_batch(seed)
    tok, mask = token_level(r, lengths)
    ref = verl_opo(tok.sum(-1), mask.sum(-1), uid)
    torch.testing.assert_close(fade.advantages("opo", r, uid, lengths=lengths), ref, **CLOSE)


@pytest.mark.parametrize("seed", SEEDS)
def test_gpg_matches_verl(seed):
    r, uid, _, _ = random_batch(seed)
    # verl's alpha = bsz / count_nonzero(...) is a float32 tensor (int tensor division): 1e-7 apart
    torch.testing.assert_close(fade.advantages("gpg", r, uid), verl_gpg(torch.as_tensor(r), uid), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("norm", [True, False])
@pytest.mark.parametrize("seed", SEEDS)
def test_grpo_passk_matches_verl(seed, norm):
    r, uid, _, _ = random_batch(seed)
    ref = verl_grpo_passk(torch.as_tensor(r), uid, norm_adv_by_std_in_grpo=norm)
    torch.testing.assert_close(fade.advantages("grpo_passk", r, uid, norm_by_std=norm), ref, **CLOSE)


@pytest.mark.parametrize("seed", SEEDS)
def test_reinforce_pp_matches_verl_token_whitening(seed):
    r, uid, lengths, _ = random_batch(seed)
    tok, mask = token_level(r, lengths)
    ref = per_sequence(verl_reinforce_pp(tok, mask), lengths)
    torch.testing.assert_close(fade.advantages("reinforce_pp", r, uid, lengths=lengths), ref, rtol=1e-7, atol=1e-7)


@pytest.mark.parametrize("seed", SEEDS)
def test_reinforce_pp_baseline_matches_verl_token_whitening(seed):
    r, uid, lengths, _ = random_batch(seed)
    tok, mask = token_level(r, lengths)
    ref = per_sequence(verl_reinforce_pp_baseline(tok, mask, uid), lengths)
    got = fade.advantages("reinforce_pp_baseline", r, uid, lengths=lengths)
    torch.testing.assert_close(got, ref, rtol=1e-7, atol=1e-7)


def test_reinforce_pp_without_lengths_is_one_token_per_rollout():
    r, uid, _, _ = random_batch(3)
    ones = np.ones(r.size, dtype=np.int64)
    tok, mask = token_level(r, ones)
    ref = per_sequence(verl_reinforce_pp(tok, mask), ones)
    torch.testing.assert_close(fade.advantages("reinforce_pp", r, uid), ref, rtol=1e-7, atol=1e-7)


@pytest.mark.parametrize("seed", SEEDS)
def test_remax_matches_verl(seed):
    r, uid, lengths, b = random_batch(seed)
    tok, mask = token_level(r, lengths)
    ref = per_sequence(verl_remax(tok, torch.as_tensor(b), mask), lengths)
    torch.testing.assert_close(fade.advantages("remax", r, uid, baseline_rewards=b), ref, **CLOSE)


@pytest.mark.parametrize("name", ["grpo", "dr_grpo", "rloo", "opo", "gpg", "reinforce_pp_baseline"])
def test_one_rollout_groups_get_zero_or_verls_raw_reward_with_lone_verl(name):
    """fade's convention gives a lone rollout 0; ``lone="verl"`` gives verl's loops' mean 0, std 1."""
    r = np.array([1.0, 0.0, 1.0, 0.7, 0.0, 0.25])
    uid = np.array(["a", "a", "lone", "lone2", "b", "b"])
    t = torch.as_tensor(r)
    lone = torch.tensor([2, 3])
    lengths = np.array([3, 4, 5, 6, 2, 7])
    tok, mask = token_level(r, lengths)
    theirs = {
        "grpo": lambda: verl_grpo(t, uid),
        "dr_grpo": lambda: verl_grpo(t, uid, norm_adv_by_std_in_grpo=False),
        "rloo": lambda: verl_rloo(t, uid),
        "opo": lambda: verl_opo(t, torch.as_tensor(lengths), uid),
        "gpg": lambda: verl_gpg(t, uid),
        "reinforce_pp_baseline": lambda: per_sequence(verl_reinforce_pp_baseline(tok, mask, uid), lengths),
    }[name]()
    inputs = {"lengths": lengths} if name in ("opo", "reinforce_pp_baseline") else {}
    zero = fade.advantages(name, r, uid, **inputs)
    if name != "reinforce_pp_baseline":  # whitening spreads the lone rollouts over the whole batch
        assert torch.equal(zero[lone], torch.zeros(2, dtype=torch.float64))
        torch.testing.assert_close(zero[:2], theirs[:2], rtol=1e-6, atol=1e-7)  # the real groups agree
    verl = fade.advantages(name, r, uid, lone="verl", **inputs)
    torch.testing.assert_close(verl, theirs, rtol=1e-6, atol=1e-7)
    expected = t[lone] / (1 + 1e-6) if name == "grpo" else t[lone]
    if name == "gpg":
        expected = expected * r.size / np.count_nonzero(r)
    if name != "reinforce_pp_baseline":
        torch.testing.assert_close(verl[lone], expected, **CLOSE)


# -- TRL ---------------------------------------------------------------------------------------


def trl_nanstd(x: torch.Tensor, dim=None) -> torch.Tensor:
    mean = torch.nanmean(x, dim=dim, keepdim=True)
    var = torch.nanmean((x - mean) ** 2, dim=dim)
    count = torch.sum(~torch.isnan(x), dim=dim)
    return torch.sqrt(var * count / (count - 1))


def trl_grpo(rewards: torch.Tensor, num_generations: int, scale_rewards: str) -> torch.Tensor:
    mean = torch.nanmean(rewards.view(-1, num_generations), dim=1).repeat_interleave(num_generations, dim=0)
    if scale_rewards in ("group", "none"):
        std = trl_nanstd(rewards.view(-1, num_generations), dim=1).repeat_interleave(num_generations, dim=0)
    else:
        std = trl_nanstd(rewards).expand_as(rewards)
    adv = rewards - mean
    if scale_rewards != "none":
        adv = adv / (std + 1e-4)
    return adv


@pytest.mark.parametrize("scale", ["group", "batch", "none"])
@pytest.mark.parametrize("seed", SEEDS)
def test_grpo_matches_trl(seed, scale):
    rng = np.random.default_rng(seed)
    g = int(rng.integers(2, 9))
    n = g * int(rng.integers(1, 7))
    r = rng.integers(0, 2, size=n).astype(np.float64) if seed % 2 else np.round(rng.random(n), 2)
    ref = trl_grpo(torch.as_tensor(r), g, scale)
    got = fade.advantages("grpo", r, g, eps=1e-4, scale=scale)
    torch.testing.assert_close(got, ref, **CLOSE)
    # the same with ids instead of a group size
    torch.testing.assert_close(fade.advantages("grpo", r, np.arange(n) // g, eps=1e-4, scale=scale), ref, **CLOSE)
