"""The math and code rewards with the signatures TRL and verl call.

TRL (``GRPOTrainer(reward_funcs=[math_reward])``): a reward function receives ``prompts``,
``completions`` (strings, or chat message lists whose last message's ``content`` is the answer)
and every other dataset column as a keyword argument holding one value per completion. The
gold answer is read from the first of the columns ``answer``, ``gold``, ``ground_truth``,
``solution`` that is present; tests from any of the columns :mod:`fade.verifiers.testcases` reads
(``tests``, ``public_test_cases``/``private_test_cases`` with ``metadata``, ``input_output``,
``public_tests``/``private_tests``/``generated_tests``). A row with no gold answer or tests gets
``None`` (TRL's "not applicable"). When TRL passes ``log_extra``, the reasons are logged to its
completions table as the column ``math_reason`` or ``code_reason``.

verl (``custom_reward_function.path=pkg://fade.verifiers.rewards custom_reward_function.name=compute_score``,
or the path of this file): ``compute_score(data_source, solution_str, ground_truth, extra_info)``
returns ``{"score", "acc", "reason"}``; verl takes ``score`` as the reward and logs the other keys.
It scores code when ``extra_info["verifier"] == "code"``, when ``data_source`` names a code
dataset (one of its words, split at every character that is not an ASCII letter or digit, is
one of :data:`CODE_SOURCES`), or when ``ground_truth`` reads as tests (verl's own ``{"inputs",
"outputs", "fn_name"}`` JSON included); math otherwise. ``compute_math_score`` and ``compute_code_score`` fix the
choice.

Imports are absolute because verl may load this file by its path, outside its package.
"""

from __future__ import annotations

import atexit
import re
import threading
from collections.abc import Callable, Sequence
from typing import Any

from fade.verifiers.code_exec import CodeVerifier, default_code_verifier
from fade.verifiers.math_answer import MathVerifier, default_math_verifier
from fade.verifiers.result import VerifierResult
from fade.verifiers.testcases import CHECK_FIELDS, TEST_FIELDS, parse_tests

__all__ = [
    "GOLD_COLUMNS",
    "code_reward",
    "compute_code_score",
    "compute_math_score",
    "compute_score",
    "make_code_reward",
    "make_math_reward",
    "math_reward",
]

#: Dataset columns that hold a math problem's gold answer, in the order they are looked for.
GOLD_COLUMNS = ("answer", "gold", "ground_truth", "solution")
#: Words that make a verl ``data_source`` name a code dataset: one of the source's words (its runs
#: of ASCII letters and digits, case ignored) must be one of these. So "taco", "likaixin/TACO-verified",
#: "deepmind/code_contests" and "openai_humaneval" are code, and "gsm8k_decoded" or "unicode_math",
#: which only contain the letters "code", are not. verl's own code sources (codecontests, apps,
#: codeforces, taco) are among them.
CODE_SOURCES = ("code", "taco", "apps", "codecontests", "codeforces", "livecodebench", "leetcode", "primeintellect",
                "humaneval", "humanevalplus", "mbpp", "mbppplus", "evalplus")
_SOURCE_WORD = re.compile(r"[a-z0-9]+")


def completion_text(completion: Any) -> str:
    """The text of a completion: a string, or the content of a chat list's last message."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, dict):
        completion = [completion]
    if isinstance(completion, Sequence) and completion and isinstance(completion[-1], dict):
        content = completion[-1].get("content", "")
        if isinstance(content, list):  # multimodal parts: keep the text ones
            return "".join(part.get("text", "") for part in content if isinstance(part, dict))
        return content if isinstance(content, str) else str(content)
    return ""


def _column(kwargs: dict[str, Any], names: Sequence[str], n: int) -> list[Any]:
    for name in names:
        values = kwargs.get(name)
        if values is not None:
            if len(values) != n:
                raise ValueError(
                    f"column {name!r} has {len(values)} values for {n} completions: expected one per completion"
                )
            return list(values)
    return [None] * n


def _log(kwargs: dict[str, Any], column: str, results: list[VerifierResult | None]) -> None:
    log_extra = kwargs.get("log_extra")
    if callable(log_extra):
        log_extra(column, [r.reason if r is not None else "not_applicable" for r in results])


def make_math_reward(verifier: MathVerifier | None = None) -> Callable[..., list[float | None]]:
    """A TRL reward function scoring math answers with ``verifier`` (default: the shared one)."""

    def math_reward(prompts: list, completions: list, **kwargs: Any) -> list[float | None]:
        v = verifier or default_math_verifier()
        golds = _column(kwargs, GOLD_COLUMNS, len(completions))
        rows = [i for i, g in enumerate(golds) if g is not None]
        scored = v.score_many([completion_text(completions[i]) for i in rows], [golds[i] for i in rows])
        results: list[VerifierResult | None] = [None] * len(completions)
        for i, r in zip(rows, scored):
            results[i] = r
        _log(kwargs, "math_reason", results)
        return [r.score if r is not None else None for r in results]

    return math_reward


def make_code_reward(verifier: CodeVerifier | None = None) -> Callable[..., list[float | None]]:
    """A TRL reward function running programs against each row's tests with ``verifier``. It never
    raises on a program: nothing a program does reaches the verdict's channels, and a failure of
    the machine itself scores 0 with reason "error" (logged) rather than stopping training."""

    def code_reward(prompts: list, completions: list, **kwargs: Any) -> list[float | None]:
        v = verifier or default_code_verifier()
        n = len(completions)
        keys = [k for k in (*TEST_FIELDS, *CHECK_FIELDS, "metadata") if kwargs.get(k) is not None]
        columns = {k: _column(kwargs, (k,), n) for k in keys}
        tests = [{k: columns[k][i] for k in keys if columns[k][i] is not None} for i in range(n)]
        for i, row in enumerate(tests):
            # A HumanEval row's program is its prompt and the completion: TRL passes the prompt apart.
            if "entry_point" in row and "prompt" not in row and i < len(prompts) and isinstance(prompts[i], str):
                row["prompt"] = prompts[i]
        rows = [i for i in range(n) if any(k in tests[i] for k in TEST_FIELDS)]
        scored = v.score_many(
            [completion_text(completions[i]) for i in rows], [tests[i] for i in rows], errors="result"
        )
        results: list[VerifierResult | None] = [None] * n
        for i, r in zip(rows, scored):
            results[i] = r
        _log(kwargs, "code_reason", results)
        return [r.score if r is not None else None for r in results]

    return code_reward


#: TRL reward functions with the shared default verifiers.
math_reward = make_math_reward()
code_reward = make_code_reward()


def _verl_dict(result: VerifierResult) -> dict[str, Any]:
    return {"score": result.score, "acc": float(result.correct), "reason": result.reason}


#: The math settings verl's ``custom_reward_function.reward_kwargs`` may pass (MathVerifier's arguments).
MATH_SETTINGS = ("timeout", "answer_mode", "final_answer_pattern", "float_rounding", "numeric_precision", "strict",
                 "allow_set_relation_comp")
# What verl's reward managers add to reward_kwargs on their own (a reward model's router): not
# settings of these rewards, which use no reward model.
_VERL_EXTRAS = ("reward_router_address", "reward_model_tokenizer")
_math_verifiers: dict[tuple, MathVerifier] = {}
_math_lock = threading.Lock()


def _math_verifier(kwargs: dict[str, Any]) -> MathVerifier:
    """The shared default verifier, or one per distinct set of settings in ``kwargs``; any other
    keyword is refused (a setting is never ignored)."""
    unknown = sorted(k for k in kwargs if k not in MATH_SETTINGS and k not in _VERL_EXTRAS)
    if unknown:
        raise ValueError(
            f"unknown reward_kwargs {unknown} for fade's math reward: expected some of {list(MATH_SETTINGS)}"
        )
    settings = {k: kwargs[k] for k in MATH_SETTINGS if k in kwargs}
    if not settings:
        return default_math_verifier()
    key = tuple(sorted(settings.items()))
    with _math_lock:
        if key not in _math_verifiers:
            verifier = MathVerifier(**settings)
            atexit.register(verifier.close)
            _math_verifiers[key] = verifier
        return _math_verifiers[key]


def _settings_refused(exc: ValueError) -> ValueError:
    # verl calls the reward in its reward workers: the line must say the whole run is misconfigured.
    return ValueError(
        f"the run's reward settings are invalid (verl: reward.custom_reward_function.reward_kwargs): {exc}"
    )


def compute_math_score(data_source: Any, solution_str: str, ground_truth: Any, extra_info: dict | None = None,
                       **kwargs: Any) -> dict[str, Any]:
    """verl's reward signature, always scoring a math answer. Keyword arguments (verl's
    ``custom_reward_function.reward_kwargs``) are MathVerifier's settings, :data:`MATH_SETTINGS`:
    e.g. ``+custom_reward_function.reward_kwargs.answer_mode=final``."""
    try:
        verifier = _math_verifier(kwargs)
    except ValueError as exc:
        raise _settings_refused(exc) from None
    return _verl_dict(verifier.score(solution_str, ground_truth))


_code_verifiers: dict[str, CodeVerifier] = {}
_code_lock = threading.Lock()


def _code_verifier(judge: str) -> CodeVerifier:
    with _code_lock:
        if judge not in _code_verifiers:
            _code_verifiers[judge] = CodeVerifier(judge=judge)
        return _code_verifiers[judge]


def compute_code_score(data_source: Any, solution_str: str, ground_truth: Any, extra_info: dict | None = None,
                       **kwargs: Any) -> dict[str, Any]:
    """verl's reward signature, always running the program against ``ground_truth``'s tests (with
    the default limits: ``make_code_reward`` takes a configured verifier)."""
    unknown = sorted(k for k in kwargs if k not in _VERL_EXTRAS and k != "judge")
    if unknown:
        raise _settings_refused(
            ValueError(f"unknown reward_kwargs {unknown} for fade's code reward: it takes judge only")
        )
    try:
        verifier = default_code_verifier() if kwargs.get("judge", "auto") == "auto" else _code_verifier(kwargs["judge"])
    except ValueError as exc:
        raise _settings_refused(exc) from None
    return _verl_dict(verifier.score_many([solution_str], [ground_truth], errors="result")[0])


def names_code_dataset(data_source: Any) -> bool:
    """Whether a verl ``data_source`` names a code dataset: one of its words is in :data:`CODE_SOURCES`."""
    return any(word in CODE_SOURCES for word in _SOURCE_WORD.findall(str(data_source or "").lower()))


def _is_code(data_source: Any, ground_truth: Any, extra_info: dict | None) -> bool:
    choice = (extra_info or {}).get("verifier") if isinstance(extra_info, dict) else None
    if choice in ("math", "code"):
        return choice == "code"
    if names_code_dataset(data_source):
        return True
    if isinstance(ground_truth, (int, float)):
        return False
    if isinstance(ground_truth, str) and not ground_truth.lstrip().startswith(("{", "[")):
        return False
    try:
        parse_tests(ground_truth)
    except ValueError:
        return False
    return True


def compute_score(data_source: Any, solution_str: str, ground_truth: Any, extra_info: dict | None = None,
                  **kwargs: Any) -> dict[str, Any]:
    """verl's custom reward function: code or math, chosen as the module docstring says."""
    unknown = sorted(k for k in kwargs if k not in _VERL_EXTRAS and k not in MATH_SETTINGS and k != "judge")
    if unknown:
        raise _settings_refused(ValueError(f"unknown reward_kwargs {unknown} for fade's reward: expected some of "
                                           f"{[*MATH_SETTINGS, 'judge']}"))
    if _is_code(data_source, ground_truth, extra_info):
        return compute_code_score(data_source, solution_str, ground_truth, extra_info,
                                  **{k: v for k, v in kwargs.items() if k == "judge" or k in _VERL_EXTRAS})
    return compute_math_score(data_source, solution_str, ground_truth, extra_info,
                              **{k: v for k, v in kwargs.items() if k != "judge"})


def check_settings(name: str, kwargs: dict[str, Any]) -> None:
    """Refuse, as the first call of the verl reward function ``name`` (compute_score,
    compute_math_score or compute_code_score) would, ``reward_kwargs`` it cannot honour; scores
    nothing and starts no worker (fade's verl trainer calls it before a run starts)."""
    extras = {k: v for k, v in kwargs.items() if k not in _VERL_EXTRAS}
    known = {"compute_score": (*MATH_SETTINGS, "judge"), "compute_math_score": MATH_SETTINGS,
             "compute_code_score": ("judge",)}[name]
    unknown = sorted(k for k in extras if k not in known)
    if unknown:
        raise _settings_refused(
            ValueError(f"unknown reward_kwargs {unknown} for fade's {name}: expected some of {list(known)}")
        )
    try:
        MathVerifier(**{k: v for k, v in extras.items() if k in MATH_SETTINGS})
        if extras.get("judge", "auto") != "auto":
            CodeVerifier(judge=extras["judge"])
    except ValueError as exc:
        raise _settings_refused(exc) from None
