"""A character-level tokenizer for the testbed's tasks, built locally with the ``tokenizers``
library so that no download is needed: one token per character of a task's alphabet after three
special tokens, wrapped as a ``transformers`` fast tokenizer that saves and loads with
``save_pretrained`` / ``AutoTokenizer.from_pretrained`` like any other. Text is never mapped to
an unknown token: ``encode`` names the first character outside the alphabet instead.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast

if TYPE_CHECKING:
    from .tasks import Task

__all__ = ["SPECIAL_TOKENS", "char_tokenizer", "encode", "task_tokenizer"]

#: Ids 0, 1, 2: padding, start of sequence, end of sequence.
SPECIAL_TOKENS = ("<pad>", "<bos>", "<eos>")


def char_tokenizer(alphabet: str) -> PreTrainedTokenizerFast:
    """A tokenizer with ids ``<pad>`` 0, ``<bos>`` 1, ``<eos>`` 2, then the characters of
    ``alphabet`` in its order.

    It adds no special tokens when encoding (the caller places ``<bos>`` and ``<eos>``), and
    ``decode`` joins tokens with nothing between them, so it gives back the exact text.
    """
    if not isinstance(alphabet, str) or not alphabet:
        raise ValueError(f"alphabet must be a non-empty string, got {alphabet!r}")
    repeated = sorted({c for c in alphabet if alphabet.count(c) > 1})
    if repeated:
        raise ValueError(f"alphabet must not repeat characters, got {alphabet!r} (repeats {repeated})")
    # The fast tokenizer matches special tokens inside text before splitting it, so an alphabet
    # that can spell one would read that spelling as the special token.
    spelled = [t for t in SPECIAL_TOKENS if set(t) <= set(alphabet)]
    if spelled:
        raise ValueError(f"alphabet {alphabet!r} can spell the special tokens {spelled}: drop one of their characters")
    vocab = {token: i for i, token in enumerate((*SPECIAL_TOKENS, *alphabet))}
    backend = Tokenizer(models.WordLevel(vocab=vocab))
    # One piece per character; "." would leave runs of newlines as one piece.
    backend.pre_tokenizer = pre_tokenizers.Split(Regex(r"[\s\S]"), behavior="isolated")
    backend.decoder = decoders.Fuse()
    pad, bos, eos = SPECIAL_TOKENS
    return PreTrainedTokenizerFast(
        tokenizer_object=backend,
        pad_token=pad,
        bos_token=bos,
        eos_token=eos,
        clean_up_tokenization_spaces=False,
    )


def task_tokenizer(task: Task) -> PreTrainedTokenizerFast:
    """The character tokenizer of ``task.alphabet``."""
    return char_tokenizer(task.alphabet)


def encode(tokenizer: PreTrainedTokenizerFast, text: str) -> list[int]:
    """The ids of ``text``, one per character, without special tokens.

    Raises ``ValueError`` naming the first character that is not in the tokenizer's alphabet,
    where the tokenizer itself would fail with a message about a missing unknown token.
    """
    vocab = tokenizer.get_vocab()
    for i, c in enumerate(text):
        if c not in vocab:
            raise ValueError(f"character {c!r} at position {i} of {text!r} is not in the tokenizer's alphabet")
    return tokenizer.encode(text, add_special_tokens=False)
