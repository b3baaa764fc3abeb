"""Estimator specs: one grammar for naming an estimator with its parameters in text.

A spec is ``NAME`` or ``NAME:KEY=VALUE[,KEY=VALUE...]`` (``:`` also separates the pairs, as in
``power:alpha=3:k=2``). Values parse as true/false, none, int, float, else the string itself.
The command line (``--estimator``, ``--estimators``), the sweep's presets, the engine examples
and the reports all read and write specs through this module, so a spec means the same thing
everywhere: :func:`parse_spec` reads one, :func:`format_spec` writes one in canonical form
(parameters sorted, numbers written so they read back equal), :func:`identity` says which
estimator it denotes once defaults are filled in, and :func:`estimator_from_spec` builds it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from .registry import Estimator, bind, estimator, spec

__all__ = [
    "SPEC_SYNTAX",
    "estimator_from_spec",
    "format_spec",
    "format_value",
    "identity",
    "merge_params",
    "parse_params",
    "parse_spec",
    "parse_value",
    "split_specs",
]

#: The grammar in one sentence, for help texts and error messages.
SPEC_SYNTAX = (
    "NAME or NAME:KEY=VALUE[,KEY=VALUE...] (':' also separates pairs), e.g. power:alpha=3, "
    "asym_grpo:delta=0.5, passk:k=8, grpo:eps=1e-4,std=population; values parse as true/false, none, "
    "int, float, else string"
)

_PAIR_SEPARATORS = re.compile(r"[,:]")


def parse_value(text: str) -> Any:
    """A parameter value written in text: bool, None, int, float, or the string itself."""
    s = text.strip()
    low = s.lower()
    if low in ("true", "false"):
        return low == "true"
    if low in ("none", "null"):
        return None
    try:
        return int(s)
    except ValueError:
        pass
    try:
        return float(s)
    except ValueError:
        return s


def parse_params(text: str, *, where: str | None = None) -> dict[str, Any]:
    """``k=v,k2=v2`` (``,`` or ``:`` between pairs) as a dict of parsed values.

    ``where`` names the text the pairs came from in error messages (the whole spec, a flag).
    """
    out: dict[str, Any] = {}
    for item in _PAIR_SEPARATORS.split(text):
        if not item.strip():
            continue
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key or not key.isidentifier():
            raise ValueError(f"bad parameter {item.strip()!r} in {where or text!r}: expected KEY=VALUE")
        if key in out:
            raise ValueError(f"parameter {key!r} given twice in {where or text!r}")
        out[key] = parse_value(value)
    return out


def parse_spec(text: str, *, what: str = "estimator") -> tuple[str, dict[str, Any]]:
    """``NAME:KEY=VALUE,...`` as (name, params). The name is not looked up here.

    ``what`` names the kind of thing the spec denotes in error messages ("estimator", "policy loss").
    """
    if not isinstance(text, str):
        article = "an" if what[:1] in "aeiou" else "a"
        raise ValueError(f"{article} {what} spec must be a string ({SPEC_SYNTAX}), got {text!r}")
    name, _, rest = text.strip().partition(":")
    name = name.strip()
    if not name or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
        raise ValueError(f"bad {what} spec {text!r}: expected {SPEC_SYNTAX}")
    return name, parse_params(rest, where=text.strip())


def format_value(value: Any) -> str:
    """A value as a spec writes it: the shortest text that parses back to an equal value."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "none"
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"a spec parameter must be finite, got {value!r}")
        short = f"{value:g}"  # 0.0001, 1e-06; whole floats keep their point ("3.0"), so they read back as floats
        return short if isinstance(parse_value(short), float) and float(short) == value else repr(value)
    return str(value)


def format_spec(name: str, params: Mapping[str, Any] | None = None) -> str:
    """The canonical spec of (name, params): ``name`` or ``name:k=v:k2=v2``, keys sorted.

    ``parse_spec(format_spec(n, p)) == (n, p)``, types included, for the values a spec can hold
    (ints, floats, bools, None and strings that do not read as another type).
    """
    params = dict(params or {})
    for key, value in params.items():
        if isinstance(value, str) and (_PAIR_SEPARATORS.search(value) or "=" in value or parse_value(value) != value):
            raise ValueError(f"parameter {key}={value!r} cannot be written in a spec: it would not read back")
    return ":".join([name, *(f"{k}={format_value(v)}" for k, v in sorted(params.items()))])


def merge_params(base: Mapping[str, Any], extra: Mapping[str, Any], *, where: str = "") -> dict[str, Any]:
    """``base`` and ``extra`` together; a key in both with different values is an error."""
    clash = sorted(k for k in set(base) & set(extra) if base[k] != extra[k])
    if clash:
        pairs = ", ".join(f"{k}={base[k]!r} and {k}={extra[k]!r}" for k in clash)
        raise ValueError(f"parameter(s) given twice with different values{' in ' + where if where else ''}: {pairs}")
    return {**base, **extra}


def identity(name: str, params: Mapping[str, Any] | None = None) -> tuple[str, tuple[tuple[str, Any], ...]]:
    """What an estimator is, whatever the spec leaves to defaults: its name and every parameter.

    ``asym_grpo`` and ``asym_grpo:delta=0.5`` are the same estimator and get the same identity
    (whole numbers compare as floats, so ``alpha=3`` is ``alpha=3.0``). Unknown names and
    parameters raise ValueError listing the accepted ones.
    """
    merged = bind(f"estimator {name!r}", spec(name).defaults, dict(params or {}))
    return name, tuple(
        sorted((k, float(v) if isinstance(v, int) and not isinstance(v, bool) else v) for k, v in merged.items())
    )


def split_specs(text: str, *, option: str = "--estimators") -> list[str]:
    """A comma-separated list of specs, each whole: ``grpo:eps=1e-4,scale=batch,dr_grpo`` is
    ``["grpo:eps=1e-4,scale=batch", "dr_grpo"]``, as a piece with ``=`` but no ``:`` is a parameter
    of the spec before it. ``option`` names the flag the list came from in errors."""
    specs: list[str] = []
    for piece in (p.strip() for p in text.split(",")):
        if not piece:
            raise ValueError(f"{option} {text!r} has an empty spec: expected SPEC,SPEC,...")
        if "=" in piece and ":" not in piece:
            if not specs:
                raise ValueError(f"{option} {text!r} starts with a parameter {piece!r}: expected a spec NAME[:K=V,...]")
            specs[-1] += ("," if ":" in specs[-1] else ":") + piece
        else:
            specs.append(piece)
    return specs


def estimator_from_spec(text: str, **params: Any) -> Estimator:
    """Build the estimator a spec names; ``params`` add to the spec's (a clash is an error).

    ``fade.estimator_from_spec("power:alpha=3")`` is ``fade.estimator("power", alpha=3)``.
    Errors (bad syntax, unknown name or parameter, a value out of range) are ValueErrors that
    quote the spec.
    """
    name, given = parse_spec(text)
    try:
        return estimator(name, **merge_params(given, params))
    except ValueError as exc:
        raise ValueError(f"estimator spec {text!r}: {exc}") from None
