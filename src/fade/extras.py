"""The extras of pyproject.toml that parts of fade need: whether one is installed, and the line
that installs one.

Every "is this installed" question is :func:`installed` (the module is found without importing
it, so asking costs nothing); the command line refuses a command whose extra is missing
(:func:`fade.cli.extras.require_extras`), and ``fade analyze`` reads its dumps with pyarrow where
it is installed. Where an extra's package is missing, the message names :func:`install_line`.
Standard library only.
"""

from __future__ import annotations

__all__ = ["EXTRAS", "install_line", "installed", "missing"]

#: The extras of pyproject.toml that commands need, each with the modules whose presence says it
#: is installed.
EXTRAS: dict[str, tuple[str, ...]] = {
    "testbed": ("transformers", "tokenizers", "safetensors"),
    "math": ("math_verify",),
    "analyze": ("pyarrow",),
}


def installed(module: str) -> bool:
    """Whether ``module`` (a top-level name) can be imported, found without importing it."""
    from importlib.util import find_spec

    return find_spec(module) is not None


def missing(extra: str) -> list[str]:
    """The modules of ``extra`` (a key of :data:`EXTRAS`) that are not installed."""
    return [module for module in EXTRAS[extra] if not installed(module)]


def install_line(extra: str) -> str:
    """The pip command that adds ``extra`` to this fade: to the installed distribution when there
    is one (pip reads the extra from its metadata), else from the repository's root."""
    from importlib.metadata import PackageNotFoundError, distribution

    try:
        distribution("fade-rl")
    except PackageNotFoundError:
        return f"pip install -e '.[{extra}]' (from the fade repository's root)"
    return f"pip install 'fade-rl[{extra}]'"
