"""The parser every command shares: one-line usage errors, every default in the help, estimator specs.

Estimator specs, used by every command that takes an estimator, follow :mod:`fade.specs`:
``name`` or ``name:key=value,key2=value2``; values parse as bool (true/false), None
(none/null), int, float, or else stay strings.
"""

from __future__ import annotations

import argparse
from typing import Any

from fade.specs import SPEC_SYNTAX, format_value, merge_params, parse_params, parse_spec

__all__ = [
    "SPEC_HELP", "DefaultsHelpFormatter", "Parser", "UsageError", "check_workers", "estimator_flags", "estimator_label",
]

SPEC_HELP = f"An estimator spec is {SPEC_SYNTAX}."


class UsageError(Exception):
    """A mistake in the command line itself (argparse's complaints)."""


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors become one ``fade: error:`` line instead of usage + exit, and
    whose commands show every default (:class:`DefaultsHelpFormatter`)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", DefaultsHelpFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f"{message} (see '{self.prog} --help')")


class DefaultsHelpFormatter(argparse.HelpFormatter):
    """Shows every option's default: ``(default: X)`` unless its help already says it, ``off`` for a
    switch, ``(required)`` for a required option."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if action.required and action.option_strings and "(required)" not in text:
            return f"{text} (required)"
        if "(default" in text or action.default is argparse.SUPPRESS or action.required or not action.option_strings:
            return text
        if action.nargs == 0:
            return f"{text} (default: off)"
        return f"{text} (default: %(default)s)"


def estimator_label(name: str, params: dict[str, Any]) -> str:
    """``power(alpha=3)``: the name with the parameters the user gave."""
    if not params:
        return name
    return f"{name}({', '.join(f'{k}={format_value(v)}' for k, v in params.items())})"


def estimator_flags(spec: str, extra: str | dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """``--estimator SPEC`` and ``--estimator-args K=V,...`` (as text, or already parsed) as one (name, params)."""
    name, params = parse_spec(spec)
    if isinstance(extra, str):
        extra = parse_params(extra, where=f"--estimator-args {extra}")
    return name, merge_params(params, extra, where="--estimator and --estimator-args")


def check_workers(workers: int | None) -> None:
    """``--workers N``: None (the command's default) or at least 1."""
    if workers is not None and workers < 1:
        raise ValueError(f"--workers must be >= 1, got {workers}")
