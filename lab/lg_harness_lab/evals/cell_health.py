"""Which finished cells are results, and when a comparison should stop because the model is not there.

A cell whose run crashed, or in which the model never answered a message, is recorded (it fails its
scenario like any other failure) but never reused by a later run of the same comparison: once the model
is up, rerunning the command measures those cells again. A comparison whose first cells all met a model
that answered no call at all stops early instead of filling the report with zeros.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from lg_harness.errors import HarnessError

# How many freshly run cells must all have met a silent model before the comparison stops.
EARLY_CELLS = 4


def failed(record: Mapping[str, Any]) -> bool:
    """A crashed cell, or one in which some message got no answer from the model."""
    return bool(record.get("crash")) or any(t.get("model_failed") for t in record.get("turns") or [])


def model_silent(record: Mapping[str, Any]) -> bool:
    """The model answered no call of the cell, and some message failed for it (a greeting needs no model)."""
    turns = record.get("turns") or []
    return any(t.get("model_failed") for t in turns) and not any(t.get("model_calls") for t in turns)


def first_error(record: Mapping[str, Any]) -> str:
    return next((str(t["error"]) for t in record.get("turns") or [] if t.get("error")), "") or str(record.get("crash"))


def check_early(fresh: Sequence[Mapping[str, Any]], model: str, cells_path: Any) -> None:
    """Raise once the first ``EARLY_CELLS`` cells of this run all met a model that answered nothing."""
    if len(fresh) != EARLY_CELLS or not all(model_silent(r) for r in fresh):
        return
    raise HarnessError(f"stopped early: model '{model}' answered no call in the first {EARLY_CELLS} cells "
                       f"({first_error(fresh[0])}); those cells are recorded as failed in {cells_path} and will "
                       "run again: start the model, then run the same command")
