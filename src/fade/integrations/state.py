"""An estimator's state saved beside an engine's checkpoint and restored on resume.

Both engine integrations keep the estimator in the trainer's process, so its state (FADE's
solve-rate and entropy EMAs, H*, step) is not in the engine's checkpoint: they write it as
``fade_estimator.json`` into each checkpoint folder, atomically, and read it back when the
engine resumes from that folder. The file names the estimator, so a run resumed with another
one is refused instead of loading a state of the wrong shape; an unreadable file is refused by
name instead of surfacing as a JSON traceback from deep inside the engine.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import fade
from fade.atomic import write_json_atomic

__all__ = ["STATE_FILE", "load_estimator_state", "save_estimator_state"]

#: The estimator's state inside each checkpoint folder (TRL's ``checkpoint-N``, verl's ``global_step_N``).
STATE_FILE = "fade_estimator.json"

_REQUIRED = ("estimator", "state")


def save_estimator_state(est: fade.Estimator, folder: str | Path, **extra: Any) -> Path:
    """Write ``est``'s name, parameters and state, then the JSON values ``extra`` (what the engine
    needs back on resume), to ``folder/fade_estimator.json`` atomically; returns the file's path."""
    path = Path(folder) / STATE_FILE
    write_json_atomic(path, {"estimator": est.name, "params": est.params, "state": est.state_dict(), **extra})
    return path


def load_estimator_state(est: fade.Estimator, folder: str | Path) -> dict[str, Any] | None:
    """Restore ``est``'s state from ``folder/fade_estimator.json`` and return everything the file
    holds (the extras saved with it included); None, with ``est`` untouched, when there is no file.

    Raises ValueError naming the file when it is not a JSON object with ``estimator`` and
    ``state``, when it holds another estimator's state, or when ``est`` refuses the state.
    """
    path = Path(folder) / STATE_FILE
    if not path.exists():
        return None
    try:
        saved = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        raise ValueError(f"{path} is not a readable fade estimator state ({err})") from None
    if not isinstance(saved, dict) or any(key not in saved for key in _REQUIRED):
        what = f"an object with keys {sorted(saved)}" if isinstance(saved, dict) else f"a JSON {type(saved).__name__}"
        raise ValueError(
            f"{path} is not a fade estimator state: it holds {what}, expected an object with {list(_REQUIRED)}"
        )
    if saved["estimator"] != est.name:
        raise ValueError(f"{path} holds the state of estimator {saved['estimator']!r}, but this run uses {est.name!r}")
    if not isinstance(saved["state"], dict):
        raise ValueError(f"{path}: 'state' is a JSON {type(saved['state']).__name__}, expected an object")
    try:
        est.load_state_dict(saved["state"])
    except (ValueError, TypeError, KeyError) as err:
        raise ValueError(f"{path}: {err}") from None
    return saved
