"""The extras of pyproject.toml that commands need: whether they are installed, and the line that installs one."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["EXTRAS", "import_testbed", "install_line", "require_extras"]

#: The extras of pyproject.toml that commands need, each with the modules whose presence says it
#: is installed (looked up without importing them, so the check costs nothing).
EXTRAS: dict[str, tuple[str, ...]] = {
    "testbed": ("transformers", "tokenizers", "safetensors"),
    "math": ("math_verify",),
    "analyze": ("pyarrow",),
}


def install_line(extra: str) -> str:
    """The pip command that adds ``extra`` to this fade: to the installed distribution when there
    is one (pip reads the extra from its metadata), else from the repository's root."""
    from importlib.metadata import PackageNotFoundError, distribution

    try:
        distribution("fade-rl")
    except PackageNotFoundError:
        return f"pip install -e '.[{extra}]' (from the fade repository's root)"
    return f"pip install 'fade-rl[{extra}]'"


def require_extras(command: str, extras: Sequence[str]) -> None:
    """Raise ValueError naming the first of ``extras`` that is not installed, with its install line."""
    from importlib.util import find_spec

    for extra in extras:
        missing = [module for module in EXTRAS[extra] if find_spec(module) is None]
        if missing:
            raise ValueError(
                f"{command} needs the '{extra}' extra, which is not installed ({', '.join(missing)} missing): "
                f"{install_line(extra)}"
            )


def import_testbed():
    """The testbed's pretrain and trainer modules, or a ValueError naming the extra that is missing."""
    try:
        from fade import testbed  # noqa: F401
        from fade.testbed import pretrain, trainer
    except ImportError as exc:
        raise ValueError(
            f"the testbed cannot be imported ({exc}); it needs the 'testbed' extra: {install_line('testbed')}"
        ) from None
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # fade draws its own bar; per-file load/save bars are noise
    return pretrain, trainer
