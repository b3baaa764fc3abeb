"""The tiny policy and its sampler (fade.testbed.policy, fade.testbed.sampling).

The central check is that the two ways of computing log pi agree: what ``sample`` records while
decoding through the KV cache, in a batch of left-padded prompts of different lengths, equals
what ``sequence_logprobs`` recomputes in one full forward. Around it: padding invariance, eos and
length bookkeeping, determinism by generator seed, temperature, differentiability, the errors,
and checkpoints that round-trip exactly and are replaced atomically.
"""

from __future__ import annotations

import pytest
import torch
from tokenizers import Tokenizer
from tokenizers.models import WordLevel
from tokenizers.pre_tokenizers import Split
from transformers import PreTrainedTokenizerFast

from fade.testbed import sampling as sampling_module
from fade.testbed.policy import (
    build_policy,
    load_policy,
    parameter_count,
    resolve_device,
    save_policy,
    tiny_llama_config,
)
from fade.testbed.sampling import Rollouts, sample, sequence_logprobs

PAD, BOS, EOS = 0, 1, 2
VOCAB = 16
PROMPTS = [[BOS, 5, 6], [BOS, 7, 8, 9, 10, 11], [BOS], [BOS, 12, 13, 14]]


def tiny_config():
    return tiny_llama_config(
        VOCAB, hidden_size=32, num_layers=2, num_heads=2, intermediate_size=64, max_positions=32
    )


@pytest.fixture(scope="module")
def model():
    return build_policy(tiny_config(), seed=0)


def with_eos_bias(bias: float) -> torch.nn.Module:
    """A fresh tiny model whose output head adds ``bias`` to the eos logit (weights stay tied)."""
    m = build_policy(tiny_config(), seed=0)
    head = torch.nn.Linear(m.config.hidden_size, VOCAB, bias=True)
    head.weight = m.model.embed_tokens.weight
    with torch.no_grad():
        head.bias.zero_()
        head.bias[EOS] = bias
    m.lm_head = head
    return m


def draw(m, seed=0, prompts=PROMPTS, **kwargs) -> Rollouts:
    args = {"num_samples": 3, "max_new_tokens": 10, "eos_id": EOS, "pad_id": PAD} | kwargs
    return sample(m, prompts, generator=torch.Generator().manual_seed(seed), **args)


def rescore(m, r: Rollouts, temperature=1.0):
    return sequence_logprobs(
        m, r.prompt_ids, r.prompt_mask, r.completion_ids, r.completion_mask,
        temperature=temperature, with_entropy=True,
    )


def padded(prompts):
    width = max(len(p) for p in prompts)
    ids = torch.tensor([[PAD] * (width - len(p)) + p for p in prompts])
    mask = torch.tensor([[False] * (width - len(p)) + [True] * len(p) for p in prompts])
    return ids, mask


# -- the cache path agrees with a full forward ------------------------------------------------


@pytest.mark.parametrize("short_sequence", [sampling_module.SHORT_SEQUENCE, 0], ids=["math-kernel", "default-kernel"])
@pytest.mark.parametrize("share_prompts", [True, False], ids=["shared-prompts", "full-rows"])
@pytest.mark.parametrize("num_samples", [1, 3])
@pytest.mark.parametrize("temperature", [1.0, 0.6, 1.7])
def test_sampled_logprobs_and_entropy_equal_full_forward_rescoring(temperature, num_samples, share_prompts,
                                                                   short_sequence, monkeypatch):
    # Every path the trainer takes: the sampler's shared prefill (G > 1) or not (G = 1), against a
    # rescoring with the group's prompt run once or every row in full, on SDPA's math kernel (what
    # short sequences on CPU get) or the default one. A mild eos bias gives finished and unfinished
    # rows in the same batch.
    monkeypatch.setattr(sampling_module, "SHORT_SEQUENCE", short_sequence)
    m = with_eos_bias(0.5)
    r = draw(m, temperature=temperature, num_samples=num_samples, prompts=PROMPTS * 2)
    assert r.finished.any() and not r.finished.all()
    logprobs, entropy = sequence_logprobs(m, r.prompt_ids, r.prompt_mask, r.completion_ids, r.completion_mask,
                                          temperature=temperature, with_entropy=True, share_prompts=share_prompts)
    torch.testing.assert_close(logprobs, r.logprobs, atol=1e-5, rtol=0)
    torch.testing.assert_close(entropy, r.entropy, atol=1e-5, rtol=0)
    assert (r.logprobs[~r.completion_mask] == 0).all() and (r.entropy[~r.completion_mask] == 0).all()
    assert (r.logprobs[r.completion_mask] < 0).all() and (r.entropy[r.completion_mask] > 0).all()


def test_rollouts_layout(model):
    r = draw(model, num_samples=3)
    g, width = 3, max(len(p) for p in PROMPTS)
    assert r.prompt_index.tolist() == [i for i in range(len(PROMPTS)) for _ in range(g)]
    ids, mask = padded(PROMPTS)
    assert torch.equal(r.prompt_ids, ids.repeat_interleave(g, 0))
    assert torch.equal(r.prompt_mask, mask.repeat_interleave(g, 0))
    assert r.prompt_ids.shape == (len(PROMPTS) * g, width)
    assert r.completion_ids.dtype == torch.long and r.completion_mask.dtype == torch.bool
    assert r.logprobs.dtype == torch.float32 and r.entropy.dtype == torch.float32
    assert r.lengths.dtype == torch.long and r.finished.dtype == torch.bool


def test_left_padding_does_not_change_a_prompts_logprobs(model):
    prompt, completion = [BOS, 5, 6], [7, 3, 9, EOS]
    alone_ids, alone_mask = padded([prompt])
    batch_ids, batch_mask = padded([[BOS, 7, 8, 9, 10, 11, 12], prompt, [BOS, 4, 4, 4, 4]])
    assert not batch_mask[1, :4].any()  # the prompt really is padded in the batch
    comp = torch.tensor([completion]).repeat(3, 1)
    comp_mask = torch.ones_like(comp, dtype=torch.bool)
    alone, alone_h = sequence_logprobs(model, alone_ids, alone_mask, comp[:1], comp_mask[:1], with_entropy=True)
    batch, batch_h = sequence_logprobs(model, batch_ids, batch_mask, comp, comp_mask, with_entropy=True)
    torch.testing.assert_close(batch[1:2], alone, atol=1e-5, rtol=0)
    torch.testing.assert_close(batch_h[1:2], alone_h, atol=1e-5, rtol=0)
    # The rows differ from each other, so the comparison above is not vacuous.
    assert (batch[0] - batch[1]).abs().max() > 1e-3


def test_masked_completion_tail_does_not_change_the_real_tokens(model):
    ids, mask = padded([[BOS, 5, 6]])
    full = torch.tensor([[7, 3, EOS, PAD, PAD]])
    short = torch.tensor([[7, 3, EOS]])
    lp_full, _ = sequence_logprobs(model, ids, mask, full, full != PAD)
    lp_short, _ = sequence_logprobs(model, ids, mask, short, short != PAD)
    torch.testing.assert_close(lp_full[:, :3], lp_short, atol=1e-6, rtol=0)
    assert (lp_full[:, 3:] == 0).all()


# -- eos, lengths and the step cap -------------------------------------------------------------


def test_eos_bookkeeping():
    m = with_eos_bias(0.5)
    max_new = 6
    r = draw(m, max_new_tokens=max_new, num_samples=4)
    assert r.finished.any() and not r.finished.all()
    assert r.completion_ids.shape[1] == max_new  # an unfinished row ran every step
    for row in range(r.completion_ids.shape[0]):
        n = int(r.lengths[row])
        tokens, mask = r.completion_ids[row].tolist(), r.completion_mask[row].tolist()
        assert mask == [True] * n + [False] * (max_new - n)
        assert tokens[n:] == [PAD] * (max_new - n)
        if r.finished[row]:
            assert tokens[n - 1] == EOS and EOS not in tokens[: n - 1]
        else:
            assert n == max_new and EOS not in tokens
    assert torch.equal(r.lengths, r.completion_mask.sum(-1))


def test_eos_favoured_model_stops_after_one_token():
    r = draw(with_eos_bias(60.0), max_new_tokens=10)
    assert r.completion_ids.shape[1] == 1  # decoding stopped as soon as every row was done
    assert (r.completion_ids[:, 0] == EOS).all()
    assert r.lengths.tolist() == [1] * len(r.lengths) and r.finished.all()
    assert r.logprobs.abs().max() < 1e-6


def test_max_new_tokens_caps_a_model_that_never_stops():
    r = draw(with_eos_bias(-60.0), max_new_tokens=7)
    assert r.completion_ids.shape[1] == 7
    assert (r.lengths == 7).all() and not r.finished.any() and r.completion_mask.all()


# -- randomness and temperature ----------------------------------------------------------------


def test_same_seed_same_rollouts_other_seed_other_rollouts(model):
    a, b, c = draw(model, seed=3), draw(model, seed=3), draw(model, seed=4)
    for name in Rollouts.__dataclass_fields__:
        assert torch.equal(getattr(a, name), getattr(b, name)), name
    assert not torch.equal(a.completion_ids, c.completion_ids)


def test_sampling_with_a_generator_leaves_the_global_rng_alone(model):
    before = torch.get_rng_state()
    draw(model)
    assert torch.equal(torch.get_rng_state(), before)


def test_lower_temperature_concentrates(model):
    # The first step's distribution depends only on the prompt, so it compares row by row.
    cold, warm = draw(model, temperature=0.3), draw(model, temperature=1.0)
    assert (cold.entropy[:, 0] < warm.entropy[:, 0]).all()
    assert cold.entropy[cold.completion_mask].mean() < warm.entropy[warm.completion_mask].mean()


# -- gradients ---------------------------------------------------------------------------------


@pytest.mark.parametrize("width", [1, 2, 10], ids=["T=1", "T=2", "T=10"])
def test_a_shared_prompt_gives_the_full_forwards_values_and_gradient(width):
    """The update's pass with each distinct prompt run once (its cache gathered to the rows) is the
    same function of the parameters as a full forward per row: values and gradient within float
    error, on shuffled rows of several groups (a minibatch) and at completion widths 1, 2 and 10."""
    m = with_eos_bias(0.5)
    r = draw(m, num_samples=4, max_new_tokens=width, prompts=PROMPTS + [[BOS, 5, 6]])  # a prompt twice
    rows = torch.randperm(r.prompt_ids.shape[0], generator=torch.Generator().manual_seed(1))[:13]
    results = {}
    for share in (True, False):
        m.zero_grad()
        lp, h = sequence_logprobs(m, r.prompt_ids[rows], r.prompt_mask[rows], r.completion_ids[rows],
                                  r.completion_mask[rows], temperature=0.8, with_entropy=True, share_prompts=share)
        weights = torch.linspace(-1, 1, lp.numel()).reshape(lp.shape)
        ((weights * lp).sum() + h.sum()).backward()
        results[share] = (lp.detach(), h.detach(), [p.grad.clone() for p in m.parameters()])
    (lp_s, h_s, g_s), (lp_f, h_f, g_f) = results[True], results[False]
    torch.testing.assert_close(lp_s, lp_f, atol=1e-5, rtol=0)
    torch.testing.assert_close(h_s, h_f, atol=1e-5, rtol=0)
    for a, b in zip(g_s, g_f, strict=True):
        torch.testing.assert_close(a, b, atol=1e-5 * float(b.abs().max()) + 1e-8, rtol=0)
    assert any(float(g.abs().max()) > 0 for g in g_s)


def test_distinct_prompts_read_pads_alike_and_keep_row_order():
    from fade.testbed.sampling import _distinct_prompts

    ids = torch.tensor([[PAD, BOS, 5], [EOS, BOS, 5], [BOS, 5, 6], [PAD, BOS, 5], [BOS, 5, 6]])
    mask = torch.tensor([[False, True, True], [False, True, True], [True, True, True], [False, True, True],
                         [True, True, True]])
    first, inverse = _distinct_prompts(ids, mask)
    assert sorted(first.tolist()) == [0, 2]  # row 1's pad holds another id: still row 0's prompt
    assert [first[i].item() for i in inverse.tolist()] == [0, 0, 2, 0, 2]


def test_sequence_logprobs_is_differentiable(model):
    r = draw(model)
    model.zero_grad()
    logprobs, entropy = rescore(model, r)
    advantage = torch.linspace(-1, 1, logprobs.shape[0])[:, None]
    loss = -(advantage * logprobs).sum() / r.completion_mask.sum() - 0.01 * entropy.sum()
    loss.backward()
    grads = [p.grad for p in model.parameters()]
    assert all(g is not None and torch.isfinite(g).all() for g in grads)
    assert sum(float(g.abs().sum()) for g in grads) > 0
    model.zero_grad()


# -- errors ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"prompts": []}, r"prompts is empty"),
        ({"prompts": [[BOS, 3], []]}, r"prompt 1 is empty"),
        ({"temperature": 0.0}, r"temperature must be .* > 0, got 0.0"),
        ({"temperature": -1.0}, r"temperature must be .* > 0, got -1.0"),
        ({"num_samples": 0}, r"num_samples must be an integer >= 1, got 0"),
        ({"max_new_tokens": 0}, r"max_new_tokens must be an integer >= 1, got 0"),
        ({"prompts": [[BOS] * 28], "max_new_tokens": 5}, r"\(28 tokens\) .* \(5\) = 33 exceeds .* \(32\)"),
        ({"prompts": [[BOS, VOCAB]]}, rf"prompt token ids must be in \[0, {VOCAB}\), got {VOCAB}"),
        ({"eos_id": VOCAB}, rf"eos_id must be in \[0, {VOCAB}\)"),
    ],
    ids=["no-prompts", "empty-prompt", "zero-temp", "negative-temp", "no-samples", "no-steps",
         "too-long", "bad-token", "bad-eos"],
)
def test_sample_rejects_bad_arguments(model, kwargs, match):
    args = {"prompts": PROMPTS, "num_samples": 2, "max_new_tokens": 4, "eos_id": EOS, "pad_id": PAD}
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        sample(model, args.pop("prompts"), **args)


def test_the_longest_prompt_that_fits_is_accepted(model):
    r = sample(model, [[BOS] * 27], num_samples=1, max_new_tokens=5, eos_id=EOS, pad_id=PAD)
    assert r.completion_ids.shape[1] <= 5


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a second device type")
def test_generator_on_another_device_is_rejected(model):
    with pytest.raises(ValueError, match=r"generator is on cuda.* model is on cpu"):
        sample(model, PROMPTS, num_samples=1, max_new_tokens=2, eos_id=EOS, pad_id=PAD,
               generator=torch.Generator(device="cuda"))


def test_sequence_logprobs_rejects_bad_inputs(model):
    ids, mask = padded([[BOS, 5], [BOS]])
    comp = torch.tensor([[3, EOS], [4, 5]])
    cmask = torch.ones_like(comp, dtype=torch.bool)
    with pytest.raises(ValueError, match=r"temperature must be .* > 0, got 0"):
        sequence_logprobs(model, ids, mask, comp, cmask, temperature=0)
    with pytest.raises(ValueError, match=r"prompt_ids and prompt_mask must be \(B, P\)"):
        sequence_logprobs(model, ids, mask[:, :1], comp, cmask)
    with pytest.raises(ValueError, match=r"batch sizes differ: 2 and 1"):
        sequence_logprobs(model, ids, mask, comp[:1], cmask[:1])
    with pytest.raises(ValueError, match=r"left-padded"):
        sequence_logprobs(model, ids, mask.flip(1), comp, cmask)
    with pytest.raises(ValueError, match=r"right-padded"):
        sequence_logprobs(model, ids, mask, comp, torch.tensor([[False, True], [True, True]]))


def test_resolve_device():
    assert resolve_device("cpu") == torch.device("cpu")
    assert resolve_device("auto").type == ("cuda" if torch.cuda.is_available() else "cpu")
    with pytest.raises(ValueError, match=r"got 'tpu'"):
        resolve_device("tpu")
    with pytest.raises(ValueError, match=r"got 'cuda:x'"):
        resolve_device("cuda:x")
    if torch.cuda.is_available():
        assert resolve_device("cuda").type == "cuda"
        with pytest.raises(ValueError, match=r"'cuda:999' requested but only"):
            resolve_device("cuda:999")
    else:
        with pytest.raises(ValueError, match=r"'cuda' requested but CUDA is not available"):
            resolve_device("cuda")


# -- building and checkpoints ------------------------------------------------------------------


def test_default_config_is_the_measured_tiny_llama():
    config = tiny_llama_config(vocab_size=18)
    assert config.tie_word_embeddings and config._attn_implementation == "sdpa"
    assert (config.pad_token_id, config.bos_token_id, config.eos_token_id) == (PAD, BOS, EOS)
    m = build_policy(config, seed=0)
    assert m.lm_head.weight is m.model.embed_tokens.weight
    assert parameter_count(m) == 1_052_032
    with pytest.raises(ValueError, match=r"divisible by num_heads, got hidden_size=30 and num_heads=4"):
        tiny_llama_config(18, hidden_size=30)
    with pytest.raises(ValueError, match=r"eos_token_id must be in \[0, 2\), got 2"):
        tiny_llama_config(2)


def test_build_policy_is_deterministic_and_keeps_the_global_rng():
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    a = build_policy(tiny_config(), seed=7)
    assert torch.equal(torch.rand(3), expected)
    b, c = build_policy(tiny_config(), seed=7), build_policy(tiny_config(), seed=8)
    sa, sb, sc = a.state_dict(), b.state_dict(), c.state_dict()
    assert all(torch.equal(sa[k], sb[k]) for k in sa)
    assert not torch.equal(sa["model.embed_tokens.weight"], sc["model.embed_tokens.weight"])


def char_tokenizer() -> PreTrainedTokenizerFast:
    vocab = {"<pad>": PAD, "<bos>": BOS, "<eos>": EOS, **{str(d): 3 + d for d in range(10)}, "+": 13}
    backend = Tokenizer(WordLevel(vocab, unk_token="<pad>"))
    backend.pre_tokenizer = Split("", behavior="isolated")
    return PreTrainedTokenizerFast(
        tokenizer_object=backend, pad_token="<pad>", bos_token="<bos>", eos_token="<eos>"
    )


def logits_of(m):
    ids, mask = padded(PROMPTS)
    with torch.no_grad():
        return m(input_ids=ids, attention_mask=mask.long(), position_ids=(mask.cumsum(-1) - 1).clamp(min=0)).logits


def test_save_load_round_trip(tmp_path, model):
    tokenizer = char_tokenizer()
    save_policy(model, tokenizer, tmp_path / "ckpt")
    loaded, loaded_tokenizer = load_policy(tmp_path / "ckpt")
    assert torch.equal(logits_of(loaded), logits_of(model))
    assert loaded.lm_head.weight is loaded.model.embed_tokens.weight
    assert (tmp_path / "ckpt" / "model.safetensors").is_file()
    assert loaded_tokenizer("12+3")["input_ids"] == tokenizer("12+3")["input_ids"] == [4, 5, 13, 6]
    assert load_policy(tmp_path / "ckpt", dtype=torch.bfloat16)[0].dtype == torch.bfloat16


def test_save_without_tokenizer_loads_none(tmp_path, model):
    save_policy(model, None, tmp_path / "ckpt")
    assert load_policy(tmp_path / "ckpt")[1] is None


def test_save_is_atomic_and_overwrites(tmp_path, model):
    target = tmp_path / "ckpt"
    save_policy(model, None, target)
    assert [p.name for p in tmp_path.iterdir()] == ["ckpt"]
    other = build_policy(tiny_config(), seed=1)
    save_policy(other, None, target)
    assert [p.name for p in tmp_path.iterdir()] == ["ckpt"]
    assert torch.equal(logits_of(load_policy(target)[0]), logits_of(other))

    class BrokenTokenizer:
        def save_pretrained(self, directory):
            raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        save_policy(model, BrokenTokenizer(), target)
    # The failed save left the previous checkpoint whole and no staging directory behind.
    assert [p.name for p in tmp_path.iterdir()] == ["ckpt"]
    assert torch.equal(logits_of(load_policy(target)[0]), logits_of(other))


def test_load_policy_errors(tmp_path):
    with pytest.raises(ValueError, match=r"does not exist"):
        load_policy(tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match=r"holds no model: expected config.json"):
        load_policy(tmp_path / "empty")
    (tmp_path / "file").write_text("x")
    with pytest.raises(ValueError, match=r"is not a directory"):
        load_policy(tmp_path / "file")


def test_greedy_takes_the_most_likely_token_at_every_step(model):
    from fade.testbed.sampling import greedy

    ids, mask = greedy(model, PROMPTS, max_new_tokens=6, eos_id=EOS, pad_id=PAD)
    assert ids.shape[0] == len(PROMPTS)
    # the same whatever the generator: greedy draws no randomness
    a = draw(model, seed=1, greedy=True, num_samples=2, max_new_tokens=6)
    b = draw(model, seed=2, greedy=True, num_samples=2, max_new_tokens=6)
    assert torch.equal(a.completion_ids, b.completion_ids)
    assert torch.equal(a.completion_ids[::2], ids)
    # replay each prefix through a full forward: every chosen token is the argmax
    with torch.no_grad():
        for row, prompt in enumerate(PROMPTS):
            seq = list(prompt)
            for t in range(int(mask[row].sum())):
                logits = model(input_ids=torch.tensor([seq])).logits[0, -1]
                assert int(ids[row, t]) == int(logits.argmax())
                seq.append(int(ids[row, t]))
