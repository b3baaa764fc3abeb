"""The extras a command needs: a command refused, in one line, when one is missing; the testbed
imported or the extra it lacks named. What is installed, and the line that installs it, is
:mod:`fade.extras`'s."""

from __future__ import annotations

from collections.abc import Sequence

from fade.extras import install_line, missing

__all__ = ["import_testbed", "require_extras"]


def require_extras(command: str, extras: Sequence[str]) -> None:
    """Raise ValueError naming the first of ``extras`` that is not installed, with its install line."""
    for extra in extras:
        absent = missing(extra)
        if absent:
            raise ValueError(
                f"{command} needs the '{extra}' extra, which is not installed ({', '.join(absent)} missing): "
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
