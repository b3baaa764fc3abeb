"""What the commands print: a rich console sized for pipes, numbers as tables show them, strict JSON."""

from __future__ import annotations

import math
from typing import Any

__all__ = ["console", "fmt", "json_safe"]


def json_safe(x: Any) -> Any:
    """NaN and inf become null so the output is strict JSON."""
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, dict):
        return {k: json_safe(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [json_safe(v) for v in x]
    return x


def console():
    from rich.console import Console

    out = Console()
    # Piped or captured output gets a fixed width so that tables do not wrap their headers.
    return out if out.is_terminal else Console(width=140)


def fmt(x: float) -> str:
    return "nan" if x != x else f"{x:.4f}"
