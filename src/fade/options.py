"""Command-line options declared on the config dataclasses: one source for each setting's flag, default and help.

A config field declared with :func:`option` carries its help text and, where needed, a metavar,
choices, a flag name, or a parser for flags whose text is not the value. :func:`add_options`
turns every field of a config dataclass into one argparse argument, in the fields' order, and
:func:`from_args` reads the parsed arguments back into the config. A field added to a config
with :func:`option` is a flag of every command built from it, with no edit to the command.

How a field becomes a flag:

- name: ``--field-name`` (underscores become hyphens), or ``flag=``; dest is the field's name;
- default: the field's (a ``default_factory`` is called); a field without one is a required flag;
- type: ``int``, ``float``, ``str``, or one of them ``| None``, is the flag's type; a ``bool``
  whose default is False is a switch ``--name``, one whose default is True a switch ``--no-name``
  that sets it False (its help says what the switch does: "no progress bar"); any other type
  needs ``parse``, a function from the flag's text to the value, applied by :func:`from_args`
  when the flag is given (the help then states the default in words: "(default: none)");
- ``cli=False``: no flag; :func:`from_args` leaves the field at its default.

The help is plain text (``%`` needs no escaping); the command's help formatter adds the default.
For example (a ``kw_only`` dataclass lets a required field stand where its flag belongs in the help)::

    @dataclass(kw_only=True)
    class TrainConfig:
        steps: int = option(400, "training steps", metavar="N")   # --steps N ... (default: 400)
        out: str = option(help="the run's folder", metavar="DIR")  # --out DIR ... (required)
        model: str | None = option(None, "a local policy (default: the shipped base)", metavar="DIR")
        progress: bool = option(True, "no progress bar")           # --no-progress ... (default: off)

    options.add_options(parser, TrainConfig)
    config = options.from_args(TrainConfig, parser.parse_args(argv))
"""

from __future__ import annotations

import argparse
import dataclasses
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["add_options", "flags", "from_args", "option"]

_KEY = "fade.option"  # the metadata key this module's fields carry


@dataclasses.dataclass(frozen=True)
class _Option:
    help: str
    metavar: str | None
    choices: tuple[Any, ...] | None
    flag: str | None
    parse: Callable[[str], Any] | None
    cli: bool


def option(
    default: Any = dataclasses.MISSING,
    help: str = "",
    *,
    default_factory: Callable[[], Any] | Any = dataclasses.MISSING,
    metavar: str | None = None,
    choices: typing.Iterable[Any] | None = None,
    flag: str | None = None,
    parse: Callable[[str], Any] | None = None,
    cli: bool = True,
) -> Any:
    """A dataclass field that is also a command-line flag (the module docstring has the rules)."""
    meta = _Option(help, metavar, None if choices is None else tuple(choices), flag, parse, cli)
    return dataclasses.field(default=default, default_factory=default_factory, metadata={_KEY: meta})


def _meta(config: type, f: dataclasses.Field) -> _Option:
    meta = f.metadata.get(_KEY)
    if meta is None:
        raise TypeError(f"{config.__name__}.{f.name} is not declared with fade.options.option(default, help): "
                        "every field of a command's config needs its help")
    return meta


def _default(f: dataclasses.Field) -> Any:
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return dataclasses.MISSING


def _scalar(hint: Any) -> Any:
    """``int``, ``float``, ``str`` or ``bool`` for a hint that is one of them, possibly ``| None``; else None."""
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        rest = [a for a in typing.get_args(hint) if a is not type(None)]
        hint = rest[0] if len(rest) == 1 else None
    return hint if hint in (int, float, str, bool) else None


def _flag(f: dataclasses.Field, meta: _Option) -> str:
    if meta.flag is not None:
        return meta.flag
    stem = f.name.replace("_", "-")
    return f"--no-{stem}" if _default(f) is True else f"--{stem}"


def flags(config: type) -> dict[str, str]:
    """Each field of ``config`` that has a flag, with its flag: ``--name-with-hyphens``, ``--no-...``
    for a bool that defaults to True, or the field's own ``flag``."""
    return {f.name: _flag(f, meta) for f in dataclasses.fields(config) if (meta := _meta(config, f)).cli}


def add_options(
    parser: argparse.ArgumentParser,
    config: type,
    *,
    after: Mapping[str, Callable[[argparse.ArgumentParser], Any]] | None = None,
) -> None:
    """Add one argument per field of the dataclass ``config`` to ``parser``, in the fields' order.

    ``after[name](parser)`` runs right after field ``name``'s flag is added, so that a command's
    flags that are not settings of its config (``--resume``) keep their place in the help.
    Raises TypeError for a field that is not an :func:`option`, has no help, or has a type no
    flag can carry without ``parse``.
    """
    hints = typing.get_type_hints(config)
    after = dict(after or {})
    for f in dataclasses.fields(config):
        meta = _meta(config, f)
        if meta.cli:
            _add(parser, config, f, meta, hints[f.name])
        if f.name in after:
            after.pop(f.name)(parser)
    if after:
        raise TypeError(f"{config.__name__} has no field(s) {sorted(after)} to add flags after")


def _add(parser: argparse.ArgumentParser, config: type, f: dataclasses.Field, meta: _Option, hint: Any) -> None:
    where = f"{config.__name__}.{f.name}"
    if not meta.help:
        raise TypeError(f"{where} has no help: option(default, help) says what its flag does")
    default = _default(f)
    kwargs: dict[str, Any] = {"dest": f.name, "help": meta.help.replace("%", "%%")}
    if meta.metavar is not None:
        kwargs["metavar"] = meta.metavar
    if meta.choices is not None:
        kwargs["choices"] = meta.choices
    kind = _scalar(hint)
    if meta.parse is not None:
        if "(default" not in meta.help and default is not dataclasses.MISSING:
            raise TypeError(f"{where} is parsed from text: its help must state the default in words, '(default: ...)'")
        kwargs["default"] = None  # not given: from_args keeps the field's default
    elif kind is bool:
        if default is dataclasses.MISSING:
            raise TypeError(f"{where} is a bool without a default: a switch needs one")
        kwargs.update(action="store_false" if default else "store_true", default=default)
        kwargs.pop("metavar", None)
    elif kind is None:
        raise TypeError(f"{where} has type {hint!r}, which no flag carries: give it parse=, a function from the "
                        "flag's text to the value")
    else:
        if kind is not str:
            kwargs["type"] = kind
        if default is not dataclasses.MISSING:
            kwargs["default"] = default
    if default is dataclasses.MISSING:
        kwargs["required"] = True
    parser.add_argument(_flag(f, meta), **kwargs)


def from_args(config: type, args: argparse.Namespace, **overrides: Any) -> Any:
    """The ``config`` that the parsed ``args`` describe: each field's flag value (parsed by the field's
    ``parse`` when given as text), the default for fields without a flag, and ``overrides`` last."""
    values: dict[str, Any] = {}
    for f in dataclasses.fields(config):
        meta = _meta(config, f)
        if f.name in overrides or not meta.cli or not hasattr(args, f.name):
            continue
        value = getattr(args, f.name)
        if meta.parse is not None:
            if value is None:
                continue
            value = meta.parse(value)
        values[f.name] = value
    return config(**values, **overrides)
