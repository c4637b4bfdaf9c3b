"""What a tool gets from the harness besides the model's arguments."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class ToolContext:
    """Per-call context injected by the executor; never part of a tool's JSON schema.

    ``idempotency_key`` is stable for one logical call (thread, message, tool and arguments), so a changing
    tool that is retried, or re-run after a resume from a checkpoint, applies its change once. ``ledger`` (a
    ``tools.ledger.ChangeLedger``) is where the executor records a changing call before it runs and settles
    it after; None runs changing tools unrecorded (the domain's ``changes_once`` alone then guards them).
    """

    user_id: str
    role: str = "customer"
    thread_id: str = ""
    idempotency_key: str = ""
    extras: dict[str, Any] = field(default_factory=dict)
    ledger: Any = None
