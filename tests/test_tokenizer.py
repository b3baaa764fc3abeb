"""The character tokenizer: fixed special ids, one id per character in alphabet order, exact
round trips of every task's prompts and answers, a named error for characters outside the
alphabet, and the same behaviour after ``save_pretrained`` / ``AutoTokenizer.from_pretrained``.
"""

from __future__ import annotations

import pytest
from transformers import AutoTokenizer

from fade.testbed.tasks import ArithmeticTask, CountdownTask
from fade.testbed.tokenizer import SPECIAL_TOKENS, char_tokenizer, encode, task_tokenizer

TASKS = {"arithmetic": ArithmeticTask(), "arithmetic+*": ArithmeticTask(ops=("+", "*")), "countdown": CountdownTask()}


@pytest.fixture(scope="module", params=sorted(TASKS))
def task_and_tokenizer(request):
    task = TASKS[request.param]
    return task, task_tokenizer(task)


def test_special_ids_then_the_alphabet_in_order(task_and_tokenizer):
    task, tok = task_and_tokenizer
    assert SPECIAL_TOKENS == ("<pad>", "<bos>", "<eos>")
    assert (tok.pad_token_id, tok.bos_token_id, tok.eos_token_id) == (0, 1, 2)
    assert (tok.pad_token, tok.bos_token, tok.eos_token) == SPECIAL_TOKENS
    assert tok.convert_tokens_to_ids(list(task.alphabet)) == list(range(3, 3 + len(task.alphabet)))
    assert len(tok) == len(tok.get_vocab()) == 3 + len(task.alphabet)


def test_prompts_and_answers_round_trip(task_and_tokenizer):
    task, tok = task_and_tokenizer
    for p in task.problems("train", 80, seed=0) + task.problems("test", 80, seed=0):
        text = p.prompt + p.answer
        ids = encode(tok, text)
        assert ids == [tok.convert_tokens_to_ids(c) for c in text]
        assert tok(text)["input_ids"] == ids  # no special tokens added
        assert tok.decode(ids) == text  # nothing inserted between characters
        framed = [tok.bos_token_id, *ids, tok.eos_token_id, tok.pad_token_id]
        assert tok.decode(framed, skip_special_tokens=True) == text
        assert tok.decode(framed) == f"<bos>{text}<eos><pad>"


def test_a_character_outside_the_alphabet_is_named():
    tok = task_tokenizer(CountdownTask())
    with pytest.raises(ValueError, match=r"'x' at position 2"):
        encode(tok, "3+x")
    with pytest.raises(ValueError, match="'é'"):
        encode(tok, "é")
    with pytest.raises(ValueError, match="' '"):
        encode(tok, "3 + 5")
    assert encode(tok, "") == []


def test_whitespace_and_newlines_are_characters_like_any_other():
    tok = char_tokenizer("ab \n\t")
    text = "a\n\nb  \t\ta"
    ids = encode(tok, text)
    assert len(ids) == len(text)
    assert tok.decode(ids) == text


@pytest.mark.parametrize("alphabet, match", [("", "non-empty"), ("abca", "repeat"), ("<>adeops", "spell")])
def test_bad_alphabets(alphabet, match):
    with pytest.raises(ValueError, match=match):
        char_tokenizer(alphabet)


def test_save_and_load_round_trip(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    task = CountdownTask()
    tok = task_tokenizer(task)
    tok.save_pretrained(tmp_path)
    loaded = AutoTokenizer.from_pretrained(tmp_path)
    assert loaded.get_vocab() == tok.get_vocab()
    assert (loaded.pad_token_id, loaded.bos_token_id, loaded.eos_token_id) == (0, 1, 2)
    for p in task.problems("test", 50, seed=1):
        text = p.prompt + p.answer
        assert encode(loaded, text) == encode(tok, text)
        assert loaded.decode(encode(loaded, text)) == text
    with pytest.raises(ValueError, match="'x'"):
        encode(loaded, "x")
