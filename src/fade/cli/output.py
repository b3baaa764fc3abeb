"""What the commands print: a rich console sized for pipes, and numbers as tables show them (strict JSON
is :func:`fade.jsonl.json_safe`'s)."""

from __future__ import annotations

__all__ = ["console", "fmt"]


def console():
    from rich.console import Console

    out = Console()
    # Piped or captured output gets a fixed width so that tables do not wrap their headers.
    return out if out.is_terminal else Console(width=140)


def fmt(x: float) -> str:
    return "nan" if x != x else f"{x:.4f}"
