"""The ``fade`` command line: look at advantage estimators and measure batches of rollouts.

Each command is one module of this package with ``add(subparsers)``, which declares its flags,
and ``run(args)``, which does the work; :data:`COMMANDS` lists them in the order ``fade --help``
shows. A command whose settings are a config dataclass (``fade train``: TrainConfig) declares no
flag by hand: :mod:`fade.options` makes one per field, with the field's default and help.

A command names the extras it needs (``needs``, from its arguments), and :func:`main` checks that
they are installed before any work starts (:data:`EXTRAS`). User mistakes (unknown estimator, bad
parameter, unreadable file, malformed input, a missing extra) surface as one line
``fade: error: ...`` on stderr and exit status 2; the core signals them with ValueError, so that
is what :func:`main` catches, together with OSError and argument errors. A command that leaves
resumable work names what an interrupt (Ctrl-C) leaves intact (``interrupted``, from its
arguments): :func:`main` prints it on one line and exits with status 130.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from fade.extras import EXTRAS, install_line

from . import analyze, atlas, calibrate, compare, decompose, demo, pretrain, sweep, train
from . import eval as eval_command
from .atlas import DEFAULT_ATLAS_ESTIMATORS
from .extras import require_extras
from .parsing import Parser, UsageError

__all__ = ["COMMANDS", "DEFAULT_ATLAS_ESTIMATORS", "EXTRAS", "build_parser", "install_line", "main", "require_extras"]

#: The commands, in the order ``fade --help`` lists them.
COMMANDS = (atlas, decompose, analyze, pretrain, calibrate, train, eval_command, sweep, compare, demo)


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="fade",
        description="Advantage estimators for RL with verifiable rewards: their gradient mass, and FADE.",
    )
    from fade import __version__

    parser.add_argument("--version", action="version", version=f"fade {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for command in COMMANDS:
        command.add(sub)
    return parser


def interrupted(args: argparse.Namespace | None) -> int:
    """Ctrl-C during a command: one line saying what is intact and how to go on, exit status 130.
    Re-raises for a command that leaves nothing to resume."""
    then = getattr(args, "interrupted", None)
    if then is None:
        raise  # the KeyboardInterrupt being handled
    print(f"fade: interrupted; {then(args)}", file=sys.stderr)
    return 130


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``fade`` command line; returns the exit status (2 for user mistakes, 130 when interrupted)."""
    parser = build_parser()
    args = None
    try:
        args = parser.parse_args(argv)
        if args.command is None:
            names = ", ".join(sub for sub in parser._subparsers._group_actions[0].choices)  # type: ignore[union-attr]
            raise UsageError(f"choose a command: {names} (see 'fade --help')")
        needs = getattr(args, "needs", None)
        if needs is not None:
            verifier = getattr(args, "verifier", None)
            require_extras(f"fade {args.command}" + (f" --verifier {verifier}" if verifier else ""), needs(args))
        return int(args.func(args))
    except KeyboardInterrupt:
        return interrupted(args)
    except SystemExit as exc:  # --help and --version
        return exc.code if isinstance(exc.code, int) else 0
    except (UsageError, ValueError, OSError) as exc:
        message = " ".join(str(exc).split()) or type(exc).__name__
        print(f"fade: error: {message}", file=sys.stderr)
        return 2
