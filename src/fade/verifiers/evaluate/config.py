"""What ``fade eval`` takes and what it returns: :class:`EvalConfig`, its check (every setting
refused in one line before anything is read or written) and the settings its scores depend on,
and :class:`EvalOutcome`."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..code_exec import CodeVerifier
from ..judges import JUDGES
from ..math_answer import MathVerifier
from ..sandbox import Limits

__all__ = ["VERIFIERS", "EvalConfig", "EvalOutcome", "check_config"]

VERIFIERS = ("math", "code")


@dataclass
class EvalConfig:
    """Everything ``fade eval`` takes."""

    samples: str
    out: str
    verifier: str
    ks: tuple[int, ...] = (1, 10, 100)
    problems: str | None = None
    workers: int | None = None
    timeout: float = 5.0  # math: seconds per sample
    math: dict[str, Any] = field(default_factory=dict)  # math: MathVerifier's answer_mode and math-verify settings
    limits: Limits | dict[str, Any] | None = None  # code: per-test limits, or fields replacing each judge's defaults
    judge: str = "auto"  # code: the judging profile, or "auto" (from each problem's format)
    float_tolerance: float = 1e-6
    limit: int | None = None  # score at most this many new samples, then stop
    compare: tuple[str, ...] = ()  # earlier output folders to draw on the same pass@k plot
    label: str | None = None
    progress: bool = True

    def math_verifier(self, workers: int = 1) -> MathVerifier:
        """The math verifier these settings describe (validated; its workers start on first use)."""
        return MathVerifier(timeout=self.timeout, workers=workers, **self.math)

    def settings(self) -> dict[str, Any]:
        """What the scores depend on; a resumed run must have the same."""
        if self.verifier == "math":
            return {"verifier": "math", "timeout": self.timeout, **self.math_verifier().settings()}
        limits = (
            self.limits.to_dict() if isinstance(self.limits, Limits) else {"judge_defaults_with": self.limits or {}}
        )
        return {"verifier": "code", "judge": self.judge, "limits": limits,
                "float_tolerance": self.float_tolerance}


@dataclass
class EvalOutcome:
    """What a run did: whether every sample is scored, how many it scored, the report once
    complete, the files it wrote, and the reports of ``config.compare`` (read and checked before
    anything was scored), to be drawn beside this run's."""

    complete: bool
    scored_now: int
    total: int
    remaining: int
    report: dict[str, Any] | None
    written: list[Path]
    compared: list[dict[str, Any]] = field(default_factory=list)


def check_config(config: EvalConfig) -> tuple[int, ...]:
    """Refuse every bad setting of ``config`` with one line, before anything is read or written;
    returns the k values."""
    if config.verifier not in VERIFIERS:
        raise ValueError(f"unknown verifier {config.verifier!r}: expected one of {', '.join(VERIFIERS)}")
    ks = tuple(config.ks)
    if not ks or any(isinstance(k, bool) or not isinstance(k, int) or k < 1 for k in ks):
        raise ValueError(f"k values must be positive integers, got {list(ks)}")
    if config.limit is not None and (
        isinstance(config.limit, bool) or not isinstance(config.limit, int) or config.limit < 0
    ):
        raise ValueError(f"limit must be a non-negative integer, got {config.limit!r}")
    workers = config.workers
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
        raise ValueError(f"workers must be a positive integer, got {workers!r}")
    if config.verifier == "math":
        config.math_verifier()  # its timeout and math-verify settings (no worker starts here)
        return ks
    if isinstance(config.limits, dict):
        Limits(**config.limits)
    if config.judge != "auto" and config.judge not in JUDGES:
        raise ValueError(f"unknown judge {config.judge!r}: expected auto or one of {', '.join(JUDGES)}")
    CodeVerifier(limits=config.limits, workers=workers, float_tolerance=config.float_tolerance, judge=config.judge)
    return ks
