"""The ledger of what fade touches inside an engine: one record per name of verl or TRL that fade
rebinds, writes, overrides or reads although the engine does not offer it as a hook.

Each :class:`Touch` names the engine's module and attribute (``Class.method`` for a method), the
parameters fade relies on where the target is a function, what fade does there and why.
:func:`resolve` finds the target in the installed engine and checks it, so an engine upgrade that
moves, removes or changes one of them fails in one place, with one line naming the engine's
version, the module and the attribute, instead of somewhere inside a run. verl's ledger is
``fade.integrations.verl.patches`` (``PATCHES``, ``OVERRIDES``), TRL's is
``fade.integrations.trl.PRIVATE``; ``tests/test_engine_patches.py`` checks every entry against the
installed engines.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import inspect
from dataclasses import dataclass
from typing import Any

__all__ = ["KINDS", "EngineMismatch", "Touch", "installed_version", "mismatch", "resolve"]

#: What fade does with a target:
#: ``wrap``: rebinds a module's function to fade's, which calls the engine's own (same parameters);
#: ``value``: overwrites a module constant; ``entry``: writes one key of a module's registry dict;
#: ``override``: a fade subclass overrides the method (same parameters);
#: ``call``: calls a private method with keywords (those parameters must exist);
#: ``attribute``: reads or mutates a private instance attribute the class's code sets.
KINDS = ("wrap", "value", "entry", "override", "call", "attribute")

#: The kinds whose fade function stands in for the engine's and so takes exactly its parameters.
_SAME_PARAMETERS = ("wrap", "override")

_VERBS = {"wrap": "wraps", "value": "overwrites", "entry": "writes to", "override": "overrides", "call": "calls",
          "attribute": "reads"}


class EngineMismatch(RuntimeError):
    """The installed engine no longer has a name, or a signature, that fade relies on."""


@dataclass(frozen=True)
class Touch:
    """One name inside an engine that fade relies on, and what fade does with it."""

    engine: str
    module: str
    attribute: str
    kind: str
    replacement: str
    why: str
    #: Parameter names of the engine's function fade relies on (``wrap``/``override``: exactly
    #: these, in order; ``call``: at least these); None for a target that is not a function.
    params: tuple[str, ...] | None = None
    #: The engine version the entry was checked against.
    checked: str = ""

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"ledger entry {self.where}: kind must be one of {', '.join(KINDS)}, got {self.kind!r}")

    @property
    def where(self) -> str:
        return f"{self.module}.{self.attribute}"


def installed_version(engine: str) -> str:
    """The installed version of ``engine`` (its distribution's), or ``"not installed"``."""
    try:
        return importlib.metadata.version(engine)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def mismatch(touch: Touch, problem: str) -> EngineMismatch:
    """The one-line error for ``touch``: the engine's version, the place, ``problem``, and why fade needs it."""
    return EngineMismatch(
        f"{touch.engine} {installed_version(touch.engine)}: {touch.where} {problem}; fade {_VERBS[touch.kind]} it "
        f"({touch.why}) and was checked against {touch.engine} {touch.checked}"
    )


def resolve(touch: Touch) -> Any:
    """The engine's object at ``touch``'s place, checked: it exists, a function has the parameters
    fade relies on, a registry is a dict, an instance attribute is set in the class's code.
    Anything else raises :class:`EngineMismatch` in one line."""
    try:
        target: Any = importlib.import_module(touch.module)
    except ImportError as exc:
        raise mismatch(touch, f"cannot be imported ({exc})") from None
    parts = touch.attribute.split(".")
    if touch.kind == "attribute":
        owner = target
        for part in parts[:-1]:
            owner = getattr(owner, part, None)
            if owner is None:
                raise mismatch(touch, f"is missing: {touch.module} has no {'.'.join(parts[:-1])}")
        try:
            source = inspect.getsource(owner)
        except (OSError, TypeError):
            raise mismatch(touch, "has no readable source") from None
        if f"self.{parts[-1]}" not in source:
            raise mismatch(touch, f"is missing: {'.'.join(parts[:-1])} never sets self.{parts[-1]}")
        return owner
    for i, part in enumerate(parts):
        if not hasattr(target, part):
            raise mismatch(touch, f"is missing ({touch.module} has no {'.'.join(parts[: i + 1])})")
        target = getattr(target, part)
    if touch.kind == "entry" and not isinstance(target, dict):
        raise mismatch(touch, f"is a {type(target).__name__}, not the registry dict fade writes to")
    if touch.params is not None:
        if not callable(target):
            raise mismatch(touch, f"is a {type(target).__name__}, not a function")
        have = tuple(p for p in inspect.signature(target).parameters if p != "self")
        if touch.kind in _SAME_PARAMETERS and have != touch.params:
            raise mismatch(touch, f"takes ({', '.join(have)}), not ({', '.join(touch.params)})")
        missing = [p for p in touch.params if p not in have]
        if missing:
            raise mismatch(touch, f"takes ({', '.join(have)}), without {', '.join(missing)}")
    return target
