"""The math reward: equivalent forms accepted, wrong ones rejected, garbage handled with a reason,
a hard per-call timeout from any thread, and the same verifier behind TRL, verl and the testbed."""

from __future__ import annotations

import importlib.util
import json
import math
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

pytest.importorskip("math_verify")

from fade.verifiers import rewards  # noqa: E402
from fade.verifiers.math_answer import MathVerifier  # noqa: E402
from fade.verifiers.result import REASONS  # noqa: E402


@pytest.fixture(scope="module")
def verifier():
    with MathVerifier(timeout=2.0, workers=2) as v:
        yield v


@pytest.mark.parametrize("completion, gold", [
    ("We get $2^{10} = 1024$, so the remainder is $\\boxed{024}$.", "24"),  # AIME: leading zeros
    ("The answer is \\boxed{33}.", "033"),
    ("so the final answer is 33.", "33"),  # no box
    ("\\boxed{\\frac12}", "\\frac{1}{2}"),
    ("\\boxed{0.5}", "\\frac{1}{2}"),
    ("\\boxed{\\dfrac{2}{4}}", "$\\frac{1}{2}$"),
    ("$\\boxed{\\frac{\\sqrt{2}}{2}}$", "\\frac{1}{\\sqrt{2}}"),
    ("\\boxed{2^{1/2}}", "\\sqrt{2}"),
    ("\\boxed{x^2+2x+1}", "(x+1)^2"),
    ("The answer is \\boxed{11}", "\\boxed{11}"),  # a boxed gold
    ("First I thought 34, but the answer is \\boxed{33}.", "33"),  # the box wins over earlier numbers
    ("\\boxed{(1, 2)}", "(1,2)"),
])
def test_equivalent_forms_are_accepted(verifier, completion, gold):
    result = verifier.score(completion, gold)
    assert result.reason == "correct", result
    assert result.score == 1.0 and result.canonical


@pytest.mark.parametrize("completion, gold", [
    ("\\boxed{34}", "33"),
    ("\\boxed{1024}", "24"),
    ("\\boxed{\\frac{1}{3}}", "\\frac{1}{2}"),
    ("\\boxed{0.25}", "\\frac{1}{3}"),
    ("\\boxed{x^2+1}", "(x+1)^2"),
    ("\\boxed{\\sqrt{3}}", "\\sqrt{2}"),
    ("The answer is 33, no wait, \\boxed{34}", "33"),  # the box is the answer
])
def test_wrong_answers_are_rejected(verifier, completion, gold):
    result = verifier.score(completion, gold)
    assert result.reason == "wrong", result
    assert result.score == 0.0 and result.canonical is None
    assert result.details["extracted"]


@pytest.mark.parametrize("completion, reasons", [
    ("", {"empty"}),
    ("   \n\t ", {"empty"}),
    ("I have no idea.", {"no_answer"}),
    ("}{\\boxed", {"no_answer"}),
    ("\\boxed{}", {"no_answer"}),
    ("\\boxed{\\frac{}{}}", {"malformed", "no_answer"}),
    ("\x00\x01\x02 \ud800 \\boxed{\\left(}", {"no_answer", "malformed"}),
    ("blah " * 20000 + "\\boxed{33}", {"correct"}),  # long: the end is kept
    ("{" * 5000 + "\\boxed{33", {"no_answer", "malformed"}),
])
def test_garbage_is_handled(verifier, completion, reasons):
    result = verifier.score(completion, "33")
    assert result.reason in reasons, result
    assert result.reason in REASONS
    assert result.score == (1.0 if result.reason == "correct" else 0.0)


def test_non_text_inputs(verifier):
    assert verifier.score(None, "33").reason == "no_answer"
    assert verifier.score("\\boxed{33}", 33).reason == "correct"  # an integer gold
    assert verifier.score("\\boxed{33}", "").reason == "bad_reference"
    assert verifier.score("\\boxed{33}", None).reason == "bad_reference"
    bad = verifier.score("\\boxed{33}", "\\boxed{")
    assert bad.reason == "bad_reference" and "gold" in bad.details["error"]


def test_timeout_stops_even_c_level_hangs(verifier):
    # Comparing a power tower never returns from sympy's C-level integer arithmetic: only killing
    # the worker stops it, and the verifier carries on with a fresh one.
    start = time.monotonic()
    result = verifier.score("\\boxed{9^{9^{9^{9}}}}", "33")
    assert result.reason == "timeout" and result.score == 0.0
    assert time.monotonic() - start < verifier.timeout + 3
    assert verifier.score("\\boxed{33}", "33").reason == "correct"


def test_works_from_threads_and_in_parallel(verifier):
    pairs = [(f"\\boxed{{{i}}}", str(i if i % 3 else i + 1)) for i in range(12)]
    with ThreadPoolExecutor(max_workers=4) as pool:
        got = list(pool.map(lambda p: verifier.score(*p).reason, pairs))
    assert got == ["wrong" if i % 3 == 0 else "correct" for i in range(12)]
    assert [r.reason for r in verifier.score_many([c for c, _ in pairs], [g for _, g in pairs])] == got
    assert threading.current_thread() is threading.main_thread()


def test_bad_arguments():
    with pytest.raises(ValueError, match="timeout"):
        MathVerifier(timeout=0)
    with pytest.raises(ValueError, match="workers"):
        MathVerifier(workers=0)
    with pytest.raises(ValueError, match="as many"):
        MathVerifier().score_many(["a"], [])


# -- adapters --------------------------------------------------------------------------------------


def test_trl_reward_signature(verifier):
    logged = {}
    completions = ["\\boxed{33}", [{"role": "assistant", "content": "so \\boxed{34}"}], "\\boxed{1}", "anything"]
    reward = rewards.make_math_reward(verifier)
    assert reward.__name__ == "math_reward"
    scores = reward(prompts=["p"] * 4, completions=completions, answer=["33", "33", None, "2"],
                    trainer_state=None, log_extra=lambda col, values: logged.setdefault(col, values), log_metric=print)
    assert scores == [1.0, 0.0, None, 0.0]
    assert logged["math_reason"] == ["correct", "wrong", "not_applicable", "no_answer"]
    with pytest.raises(ValueError, match="one per completion"):
        reward(prompts=["p"], completions=["x"], answer=["1", "2"])


def test_verl_reward_signature(monkeypatch, verifier):
    monkeypatch.setattr(rewards, "default_math_verifier", lambda: verifier)
    result = rewards.compute_score("aime", "\\boxed{033}", "33", extra_info={"index": 0})
    assert result == {"score": 1.0, "acc": 1.0, "reason": "correct"}
    assert rewards.compute_score("math", "\\boxed{[1, 2]}", "[1, 2]")["score"] == 1.0  # an interval, not tests
    assert rewards.compute_math_score("x", "\\boxed{2}", "3")["reason"] == "wrong"
    # The module also loads the way verl loads a custom reward file (verl.utils.import_utils.load_module):
    # by its path, as a module outside the package.
    spec = importlib.util.spec_from_file_location("custom_module_fade_rewards", rewards.__file__)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.compute_score("aime", "\\boxed{7}", "7")["reason"] == "correct"


@pytest.mark.parametrize("source", ["gsm8k_decoded", "unicode_math", "openai/gsm8k", "math", "aime2024", "mycodes"])
def test_verl_math_sources_whose_names_contain_code_are_scored_as_math(monkeypatch, verifier, source):
    # Any data_source containing "code" went to the code verifier: bad_reference, 0, for a right answer.
    monkeypatch.setattr(rewards, "default_math_verifier", lambda: verifier)
    assert rewards.compute_score(source, "so \\boxed{7}", "7") == {"score": 1.0, "acc": 1.0, "reason": "correct"}


def test_verl_data_sources_are_routed_as_verls_own_default_reward_routes_them(monkeypatch):
    # verl's default_compute_score, with each of its scorers replaced by one that says its kind,
    # next to fade's rule on the same data_source values (verl's own and common hub names).
    pytest.importorskip("verl")
    import types

    import verl.utils.reward_score as verl_scores

    kinds = {"prime_code": "code", "sandbox_fusion": "code", "gsm8k": "math", "math_reward": "math",
             "math_dapo": "math", "prime_math": "math", "geo3k": "math", "search_r1_like_qa_em": "other"}
    for name, kind in kinds.items():
        stub = types.SimpleNamespace(compute_score=lambda *args, kind=kind, **kwargs: {"kind": kind})
        monkeypatch.setattr(verl_scores, name, stub, raising=False)
    theirs_sources = [
        "openai/gsm8k",
        "lighteval/MATH",
        "DigitalLearningGmbH/MATH-lighteval",
        "HuggingFaceH4/MATH-500",
        "math_dapo",
        "math",
        "math_dapo_reasoning",
        "aime2024",
        "aime",
        "numina_aops_forum",
        "numina_synthetic_math",
        "numina_amc_aime",
        "numina_cn_k12",
        "numina_olympiads",
        "hiyouga/geometry3k",
        "codecontests",
        "apps",
        "codeforces",
        "taco",
    ]
    for source in theirs_sources:
        theirs = verl_scores.default_compute_score(source, "x", "1")["kind"]
        assert ("code" if rewards.names_code_dataset(source) else "math") == theirs, source
    for source in ["likaixin/TACO-verified", "deepmind/code_contests", "codeparrot/apps", "openai_humaneval",
                   "livecodebench/code_generation_lite", "evalplus/mbppplus", "open-r1/codeforces", "leetcode-hard"]:
        assert rewards.names_code_dataset(source), source
    for source in ["gsm8k_decoded", "unicode_math", "barcode_math", "encoded_aime", "numina_olympiads"]:
        assert not rewards.names_code_dataset(source), source


def test_testbed_file_task_scores_with_math_verify(tmp_path):
    pytest.importorskip("transformers")
    from fade.testbed.session import load_task
    from fade.testbed.trainer import TrainConfig

    data = tmp_path / "aime.jsonl"
    rows = [{"prompt": f"Problem {i}?", "answer": a, "split": "train"} for i, a in enumerate(["33", "\\frac{1}{2}"])]
    rows.append({"prompt": "Problem int?", "answer": 24, "split": "test"})
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    task = load_task(TrainConfig(out=str(tmp_path / "run"), data=str(data), verifier="math"))
    train = {p.answer: p for p in task.problems("train")}
    assert task.verify(train["33"], "The answer is \\boxed{033}").score == 1.0
    assert task.verify(train["\\frac{1}{2}"], "\\boxed{0.5}").reason == "correct"
    verdict = task.verify(train["33"], "\\boxed{34}")
    assert (verdict.score, verdict.reason, verdict.canonical) == (0.0, "wrong", None)
    (test_problem,) = task.problems("test")
    assert task.verify(test_problem, "\\boxed{24}").canonical == "24"
    # The trainer and evaluation judge whole batches in parallel: the same verdicts, in order.
    problems = [train["33"], train["\\frac{1}{2}"], train["33"], test_problem]
    texts = ["\\boxed{033}", "\\boxed{0.5}", "\\boxed{34}", "no answer here"]
    assert task.verify_many(problems, texts) == [task.verify(p, t) for p, t in zip(problems, texts)]
    with pytest.raises(ValueError, match="as many of each"):
        task.verify_many(problems, texts[:2])


def test_testbed_file_task_scores_code(tmp_path):
    pytest.importorskip("transformers")
    from fade.testbed.datasets import FileTask

    data = tmp_path / "code.jsonl"
    tests = json.dumps({"inputs": ["2\n"], "outputs": ["4\n"]})
    data.write_text(json.dumps({"prompt": "Square n.", "input_output": tests, "split": "train"}) + "\n")
    task = FileTask(data, verifier="code")
    (problem,) = task.problems("train")
    assert task.verify(problem, "```python\nn = int(input())\nprint(n * n)\n```").reason == "correct"
    assert task.verify(problem, "print(5)").reason == "wrong_answer"
    texts = ["```python\nn = int(input())\nprint(n * n)\n```", "print(5)", "raise ValueError(2)"]
    assert [v.reason for v in task.verify_many([problem] * 3, texts)] == ["correct", "wrong_answer", "runtime_error"]
    with pytest.raises(ValueError, match="the tests"):
        data.write_text(json.dumps({"prompt": "Square n."}) + "\n")
        FileTask(data, verifier="code")


def test_workers_respect_a_lower_address_space_limit_of_the_caller():
    # A caller whose hard RLIMIT_AS is below the worker's 4 GB: the worker must start, and keep
    # under the caller's limit (only root could raise it, and should not).
    import resource
    import subprocess
    import sys

    lowered = 3 << 30
    script = (
        "from fade.verifiers.math_answer import MathVerifier\n"
        "v = MathVerifier(timeout=5.0, workers=1)\n"
        "print(v.score('\\\\boxed{2}', '2').reason)\n"
        "w = v._idle[0]\n"
        "line = [l for l in open(f'/proc/{w.proc.pid}/limits') if l.startswith('Max address space')][0]\n"
        "print(line.split()[3], line.split()[4], w.memory_bytes)\n"
        "v.close()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (lowered, lowered)),
    )
    assert done.returncode == 0, done.stderr[-2000:]
    reason, soft, hard, reported = done.stdout.split()
    assert reason == "correct"
    assert int(soft) <= lowered and int(hard) <= lowered and int(reported) <= lowered


@pytest.mark.parametrize("completion, gold, reason, extracted", [
    # Boxes close together are one answer, their set: a hedge is wrong against a single gold ...
    ("\\boxed{3} \\boxed{7}", "7", "wrong", "3,7"),
    ("\\boxed{3} or \\boxed{7}", "7", "wrong", "3,7"),
    # ... and right against a gold with several answers.
    ("\\boxed{3} \\boxed{7}", "3, 7", "correct", "3,7"),
    ("\\boxed{3} and \\boxed{7}", "\\{3, 7\\}", "correct", "3,7"),
    # A box far from the others: the last one is the answer.
    ("First \\boxed{3}. That was a slip; redoing the whole computation with the right sign gives \\boxed{7}", "7",
     "correct", "7"),
    ("\\boxed{7}\\boxed{7}", "7", "correct", "7"),
])
def test_several_boxes_follow_the_documented_rule(verifier, completion, gold, reason, extracted):
    result = verifier.score(completion, gold)
    assert result.reason == reason
    assert result.details["extracted"].replace(" ", "") == extracted


# -- settings, the final-answer mode and memory --------------------------------------------------

TRUNCATED = "We have a = 3 and b = 7, so a^2 + b^2 = 9 + 49 = 58 and then we still need to divide by"


@pytest.mark.parametrize(
    "mode, completion, gold, reason",
    [
        ("any", TRUNCATED, "58", "correct"),  # math-verify falls back to the last expression
        ("final", TRUNCATED, "58", "no_answer"),
        ("boxed", TRUNCATED, "58", "no_answer"),
        ("final", "... so 58 / 2 = 29.\n\nThe final answer is $29$.", "29", "correct"),
        ("final", "Final answer: 29", "29", "correct"),
        ("boxed", "Final answer: 29", "29", "no_answer"),
        ("final", "We get \\boxed{29} since 58 / 2 = 29 and then", "29", "correct"),
        ("final", "We get \\boxed{29", "29", "no_answer"),  # a box cut off before it closes
        ("final", "\\boxed{3} \\boxed{7}", "3, 7", "correct"),  # boxes read together, as in "any"
        (
            "boxed",
            "first \\boxed{3}, and then, after a long and careful second look at every single step of the whole "
            "computation: \\boxed{7}",
            "7",
            "correct",
        ),
        (
            "boxed",
            "first \\boxed{3}, and after a second look: \\boxed{7}",
            "7",
            "wrong",
        ),  # within 70 with "and": one answer
    ],
)
def test_the_final_answer_mode_scores_a_truncated_output_zero(mode, completion, gold, reason):
    with MathVerifier(timeout=5.0, workers=1, answer_mode=mode) as v:
        assert v.score(completion, gold).reason == reason


def test_the_final_answer_line_is_configurable():
    with MathVerifier(timeout=5.0, workers=1, answer_mode="final", final_answer_pattern=r"(?m)^ANSWER:") as v:
        assert v.score("work...\nANSWER: 12", "12").reason == "correct"
        assert v.score("work...\nThe final answer is 12", "12").reason == "no_answer"


def test_math_verify_settings_are_honoured():
    # Each setting next to math-verify's own verify() on the same parsed answers.
    from math_verify import parse, verify

    cases = [
        ({"float_rounding": 2}, "\\boxed{3.14159}", "3.14"),
        ({"numeric_precision": 5}, "\\boxed{\\sqrt{2} + 10^{-10}}", "\\sqrt{2}"),
        ({"strict": False}, "\\boxed{y + 1}", "x + 1"),
        ({"allow_set_relation_comp": True}, "\\boxed{1 < x < 2}", "(1, 2)"),
    ]
    for settings, completion, gold in cases:
        with MathVerifier(timeout=5.0, workers=1) as default, MathVerifier(timeout=5.0, workers=1, **settings) as v:
            theirs_default = verify(parse(f"${gold}$"), parse(completion))
            theirs = verify(parse(f"${gold}$"), parse(completion), **settings)
            assert theirs != theirs_default, settings  # a case where the setting matters
            assert default.score(completion, gold).correct == theirs_default
            assert v.score(completion, gold).correct == theirs


@pytest.mark.parametrize("bad, match", [
    ({"answer_mode": "last"}, "answer_mode"), ({"final_answer_pattern": "("}, "final_answer_pattern"),
    ({"float_rounding": -1}, "float_rounding"), ({"numeric_precision": 0}, "numeric_precision"),
    ({"strict": "yes"}, "strict"), ({"allow_set_relation_comp": 1}, "allow_set_relation_comp"),
    ({"memory_mb": 1.5}, "memory_mb"),
])
def test_bad_math_settings_are_refused_at_construction(bad, match):
    with pytest.raises(ValueError, match=match):
        MathVerifier(**bad)


def test_a_memory_error_math_verify_swallows_is_memory_limit(monkeypatch):
    # math-verify catches the parser's exceptions, MemoryError included, and falls back to the raw
    # text ("malformed"); the check must say what happened.
    import math_verify.parser

    from fade.verifiers import math_answer

    real = math_verify.parser.parse_latex_cached

    def out_of_memory(latex):
        if "7" in latex:
            raise MemoryError
        return real(latex)

    monkeypatch.setattr(math_verify.parser, "parse_latex_cached", out_of_memory)
    assert math_answer._compare("\\boxed{\\frac{7}{2}}", "5", {})["reason"] in ("malformed", "wrong")
    answer = math_answer._judge("\\boxed{\\frac{7}{2}}", "5", 5.0)
    assert answer["reason"] == "memory_limit"
    assert math_answer._judge("\\boxed{\\frac{3}{2}}", "5", 5.0)["reason"] == "wrong"  # no memory error: as it was


def test_verl_reward_kwargs_are_math_settings_and_unknown_ones_are_refused():
    # verl passes custom_reward_function.reward_kwargs to compute_score as keyword arguments.
    final = {"answer_mode": "final", "timeout": 5.0}
    assert rewards.compute_score("math", TRUNCATED, "58", **final)["reason"] == "no_answer"
    assert rewards.compute_math_score("math", "Final answer: 58", "58", **final)["reason"] == "correct"
    assert rewards.compute_score("math", "\\boxed{y + 1}", "x + 1", strict=False)["score"] == 1.0
    assert rewards.compute_score("math", "\\boxed{y + 1}", "x + 1")["score"] == 0.0
    # What verl's reward managers add on their own is not a setting of this reward.
    assert rewards.compute_score("math", "\\boxed{7}", "7", reward_router_address=None)["score"] == 1.0
    with pytest.raises(ValueError, match=r"unknown reward_kwargs \['answer_modes'\].*answer_mode"):
        rewards.compute_score("math", "\\boxed{7}", "7", answer_modes="final")
    with pytest.raises(ValueError, match="answer_mode must be one of"):
        rewards.compute_math_score("math", "\\boxed{7}", "7", answer_mode="last")
    with pytest.raises(ValueError, match="code reward: it takes judge only"):
        rewards.compute_code_score("taco", "print(1)", json.dumps({"inputs": [""], "outputs": ["1"]}), timeout=3)


def test_fade_eval_takes_the_math_settings(capsys, tmp_path):
    from fade.cli import main

    samples = tmp_path / "s.jsonl"
    samples.write_text(json.dumps({"id": "t", "completion": TRUNCATED, "answer": "58"}) + "\n")
    runs = {}
    for name, flags in (("any", []), ("final", ["--answer-mode", "final"])):
        out = tmp_path / name
        assert main(["eval", str(samples), "--verifier", "math", "--k", "1", "--out", str(out), "--no-progress",
                     *flags]) == 0, capsys.readouterr().err
        runs[name] = json.loads((out / "report.json").read_text())
    assert runs["any"]["pass@k"]["pass@1"] == 1.0 and runs["final"]["pass@k"]["pass@1"] == 0.0
    assert runs["final"]["settings"]["answer_mode"] == "final" and runs["final"]["settings"]["strict"] is True
    # The settings are part of what a resumed run must share.
    code = main(["eval", str(samples), "--verifier", "math", "--out", str(tmp_path / "final"), "--no-progress"])
    assert code == 2 and "other settings" in capsys.readouterr().err
    code = main(["eval", str(samples), "--verifier", "math", "--out", str(tmp_path / "x"), "--no-progress",
                 "--final-answer-pattern", "ANSWER:"])
    assert code == 2 and "--answer-mode final only" in capsys.readouterr().err


# -- the answer's span: linear, under the timeout, the documented rule ----------------------------


def _line_events(call) -> int:
    """How many Python lines ``call()`` runs (deterministic, unlike its time)."""
    import sys

    count = 0

    def tracer(frame, event, arg):
        nonlocal count
        if event == "line":
            count += 1
        return tracer

    sys.settrace(tracer)
    try:
        call()
    finally:
        sys.settrace(None)
    return count


@pytest.fixture(scope="module")
def final_verifiers():
    with MathVerifier(timeout=5.0, workers=1, answer_mode="final") as final, \
            MathVerifier(timeout=5.0, workers=1, answer_mode="boxed") as boxed:
        yield {"final": final, "boxed": boxed}


@pytest.mark.parametrize("unit", ["\\boxed{", "\\fbox{", "\\boxed{x} and ", "{\\boxed{", "\\boxed{}}"])
def test_the_box_span_search_is_linear(unit):
    # The inputs ("\\boxed{" x 2857, "\\fbox{" x 3333) took seconds, quadratic in the
    # length; the work per character must not grow with the length.
    from fade.verifiers.math_answer import final_answer_span

    small, large = (_line_events(lambda n=n: final_answer_span(unit * n, "final")) for n in (500, 4000))
    assert large <= 8 * small * 1.5, (small, large)  # 8x the text: linear is about 8x, quadratic 64x


def test_the_span_search_runs_in_the_worker_under_the_timeout(monkeypatch):
    # The caller only hands the completion over: nothing about the answer is searched before the
    # worker's timer runs, so the timeout bounds the whole check.
    from fade.verifiers import math_answer

    def not_here(*args, **kwargs):
        raise AssertionError("the answer span was searched in the caller")

    monkeypatch.setattr(math_answer, "final_answer_span", not_here)
    with MathVerifier(timeout=1.0, workers=1, answer_mode="final") as v:
        assert v.score("\\boxed{" * 2857, "7").reason == "no_answer"
        assert v.score("\\fbox{" * 3333, "7").reason == "no_answer"
        assert v.score("so \\boxed{7}", "7").reason == "correct"


@pytest.mark.parametrize("completion, gold, reason", [
    # A box in an earlier math environment is an answer of its own: the last closed box counts.
    ("We get $x = \\boxed{5}$ for the first part. Then, adding 7, the final answer is $\\boxed{12}$.", "12", "correct"),
    ("$\\boxed{3}$, and after a second look: $\\boxed{7}$", "7", "correct"),
    # \fbox is a box.
    ("$\\fbox{9}$", "9", "correct"),
    ("\\fbox{9}", "9", "correct"),
    # Hedges stay one answer, in one environment or joined across them.
    ("$\\boxed{3}$ or $\\boxed{7}$", "7", "wrong"),
    ("$\\boxed{3}$ $\\boxed{7}$", "7", "wrong"),
    ("\\[\\boxed{3}\\] or \\[\\boxed{7}\\]", "3, 7", "correct"),
    ("\\fbox{3} or \\boxed{7}", "7", "wrong"),
    ("We get x = \\boxed{5} for the first part. Then, adding 7, the final answer is \\boxed{12}.", "12", "wrong"),
])
def test_the_final_modes_take_the_last_closed_box_as_documented(final_verifiers, completion, gold, reason):
    for mode, v in final_verifiers.items():
        assert v.score(completion, gold).reason == reason, mode


@pytest.mark.parametrize("bad, match", [
    ({"timeout": math.inf}, r"timeout must be .* at most 86400, got inf"),
    ({"timeout": 1e12}, r"timeout must be .* at most 86400, got 1000000000000.0"),
    ({"memory_mb": 2 ** 60}, r"memory_mb must be an integer >= 64 and at most \d+, got 1152921504606846976"),
])
def test_settings_no_worker_can_honour_are_refused_at_construction(bad, match):
    with pytest.raises(ValueError, match=match):
        MathVerifier(**bad)
    if "timeout" in bad:  # verl's reward_kwargs.timeout reaches the same check, before anything is scored
        with pytest.raises(ValueError, match=match):
            rewards.compute_score("math", "\\boxed{7}", "7", timeout=bad["timeout"])


# -- integers past Python's digit limit ------------------------------------------------------------

HUGE = "1" * 5001  # past sys.get_int_max_str_digits() (4300)


def _math_verify_unlimited(completion: str, gold: str) -> bool:
    """The installed math-verify's own verdict on the pair, with Python's digit limit lifted."""
    import sys

    from math_verify import ExprExtractionConfig, LatexExtractionConfig, parse, verify

    before = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(0)
    try:
        golds = parse(f"${gold}$", extraction_config=[LatexExtractionConfig(), ExprExtractionConfig()])
        preds = parse(
            completion, extraction_config=[LatexExtractionConfig(boxed_match_priority=0), ExprExtractionConfig()]
        )
        return bool(golds) and verify(golds, preds)
    finally:
        sys.set_int_max_str_digits(before)


def _huge_int(text: str) -> int:
    import sys

    sys.set_int_max_str_digits(0)
    try:
        return int(text)
    finally:
        sys.set_int_max_str_digits(4300)


def test_under_pythons_digit_limit_math_verify_finds_no_answer_in_a_huge_integer():
    # Why the workers lift the limit: math-verify (in a fresh process: it caches what it parsed)
    # catches int()'s refusal and finds no answer in such a gold at all.
    import subprocess
    import sys

    code = ("from math_verify import parse; import sys; assert sys.get_int_max_str_digits() == 4300; "
            f"print(sorted({{type(x).__name__ for x in parse('${HUGE}$')}}))")
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split() == [
        "[]"
    ]


@pytest.mark.parametrize("completion, gold, reason", [
    (f"\\boxed{{{HUGE}}}", HUGE, "correct"),
    (f"\\boxed{{0{HUGE}}}", HUGE, "correct"),
    (f"\\boxed{{{HUGE[:-1]}2}}", HUGE, "wrong"),
    ("\\boxed{3}", HUGE, "wrong"),
    (f"\\boxed{{{HUGE}}}", "3", "wrong"),
])
def test_an_integer_past_pythons_digit_limit_is_judged_by_value_as_math_verify_judges_it(
    verifier, completion, gold, reason
):
    assert _math_verify_unlimited(completion, gold) is (reason == "correct")
    assert verifier.score(completion, gold).reason == reason
    # A gold that is a Python int of that size (str() refuses it) and the verl entry point.
    assert verifier.score(completion, _huge_int(gold)).reason == reason
    assert rewards.compute_score("math", completion, _huge_int(gold), timeout=2.0)["reason"] == reason


def test_fade_eval_judges_integers_past_pythons_digit_limit(capsys, tmp_path):
    from fade.cli import main

    samples = tmp_path / "s.jsonl"
    samples.write_text("".join(json.dumps(row) + "\n" for row in (
        {"id": "a", "completion": f"so \\boxed{{{HUGE}}}", "answer": HUGE},
        {"id": "a", "completion": f"\\boxed{{{HUGE}2}}", "answer": HUGE})))
    out = tmp_path / "out"
    assert main(["eval", str(samples), "--verifier", "math", "--k", "1", "--out", str(out), "--no-progress"]) == 0, \
        capsys.readouterr().err
    reasons = [json.loads(line)["reason"] for line in (out / "scores.jsonl").read_text().splitlines()]
    assert sorted(reasons) == ["correct", "wrong"]
