"""``harness stats``: the operator's view of a data dir (or database), with no personal data in it.

An operator watching a running harness needs to know whether it is healthy and what waits for a person,
not what customers said. So this view holds:

- health: the audit log's figures (input tokens per message, tool failure rate, model calls per message,
  task completion, p99 latency), each flagged against its threshold (``AuditLog.stats``);
- the harness's own stops, counted apart from tool failures: calls held for the customer's yes and calls
  blocked before they ran (a repeat, a tool not offered, an invented argument; ``AuditLog.harness_stops``);
- the queue: the threads waiting for a human (oldest first) and those a human holds;
- uncertain changes: changing calls a crash left ``pending`` in the change ledger (``tools.ledger``), which
  a person must check in the system they change before anyone runs them again: thread, tool, attempts,
  age, and the arguments masked.

Counts and identifiers only: no transcript text, and every argument goes through the audit log's redactor
(``obs.audit.default_redactor``), so emails, phones and addresses never reach the operator's screen.
Conversations are read by their owner (``harness history``) and a waiting one by the human agent who takes
it (``harness handoff list`` shows it masked).
"""

from __future__ import annotations

import time
from typing import Any

from lg_harness.obs.redact import default_redactor, redact_value


def operator_view(stores: Any, thread_id: str | None = None, *, now: float | None = None) -> dict[str, Any]:
    """Health, queue and uncertain changes of the opened ``stores`` (``graphs.storage.Stores``)."""
    now = time.time() if now is None else now
    rows = stores.audit.stats(thread_id=thread_id) if stores.audit is not None else []
    stops = (stores.audit.harness_stops(thread_id) if stores.audit is not None
             else {"held": 0, "blocked": 0, "by_class": {}})
    waiting = stores.transcripts.waiting_handoffs()
    held = stores.transcripts.held_handoffs()
    if thread_id is not None:
        waiting, held = [t for t in waiting if t == thread_id], [t for t in held if t == thread_id]
    pending = stores.ledger.pending(thread_id) if stores.ledger is not None else []
    uncertain = [{"thread_id": e.thread_id, "tool": e.tool, "attempts": e.attempts,
                  "age_s": round(max(now - e.created_at, 0.0), 1),
                  "args": redact_value(e.args, default_redactor)} for e in pending]
    return {
        "stats": rows,
        "harness_stops": stops,
        "queue": {"waiting_for_human": len(waiting), "held_by_human": len(held),
                  "uncertain_changes": len(uncertain), "waiting_threads": waiting, "held_threads": held},
        "uncertain_changes": uncertain,
    }


def as_json(view: dict[str, Any]) -> dict[str, Any]:
    return {**view, "stats": [r.__dict__ if hasattr(r, "__dict__") else r._asdict() for r in view["stats"]]}


def queue_table(view: dict[str, Any]) -> Any:
    from rich.table import Table

    q = view["queue"]
    table = Table("waiting for a human", "held by a human", "uncertain changes", title="queue")
    table.add_row(str(q["waiting_for_human"]), str(q["held_by_human"]), str(q["uncertain_changes"]),
                  style="red" if q["uncertain_changes"] else None)
    return table


def stops_table(view: dict[str, Any]) -> Any:
    """Calls the harness itself held or blocked: not tool failures, so not in the failure rate."""
    from rich.table import Table

    stops = view["harness_stops"]
    table = Table("held (awaiting the customer's yes)", "blocked (before they ran)", "by class",
                  title="tool calls the harness stopped itself (not counted as tool failures)")
    table.add_row(str(stops["held"]), str(stops["blocked"]),
                  ", ".join(f"{k} {n}" for k, n in stops["by_class"].items()) or "-")
    return table


def uncertain_table(view: dict[str, Any]) -> Any:
    """The changes a person must check before anyone runs them again (arguments masked)."""
    import json

    from rich.table import Table
    from rich.text import Text

    table = Table("thread", "tool", "attempts", "age (s)", "arguments (masked)",
                  title="uncertain changes: check each in the system it changes, then answer the thread "
                        "(harness handoff reply)")
    for u in view["uncertain_changes"]:
        table.add_row(u["thread_id"], u["tool"], str(u["attempts"]), f"{u['age_s']:g}",
                      Text(json.dumps(u["args"], ensure_ascii=False)))  # the customer's values: text, not markup
    return table
