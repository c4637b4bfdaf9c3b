"""What became of a tool call, as the harness counts it: ``ok``, ``held``, ``blocked`` or ``error``.

Outcomes the harness gave a tool call without running it, by the harness's own error type
(``nodes.action``'s screen): a change waiting for the customer's yes is *held*; a repeat, a tool not offered,
one the customer forbade or an argument nobody gave is *blocked*. Neither is a tool failing, so the audit
stores them under these statuses, the failure rate leaves them out, and the logs and the CLI name them so.
"""

from __future__ import annotations

HARNESS_STOPS = {"needs_confirmation": "held", "duplicate_call": "blocked", "not_offered": "blocked",
                 "constraint": "blocked", "invented_argument": "blocked"}


def call_outcome(status: str | None, error_type: str | None) -> str:
    """``ok``, ``held``, ``blocked`` (the harness stopped the call itself) or ``error`` (the tool failed)."""
    if (status or "ok") in ("ok", "success"):
        return "ok"
    return HARNESS_STOPS.get(error_type or "", "error")
