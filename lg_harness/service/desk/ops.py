"""The desk's operations on an open ``Harness``: one code path for the HTTP routes, the pages and the CLI.

A thread a customer handed off is *waiting* until a human answers it, then *held* by the human until they
release it back to the bot (``graphs.human_hold``). At the desk an agent may first *take* a waiting thread, so
colleagues see it is being handled; the first answer takes it too. Every action (take, answer, release, fork)
goes to the audit log under the agent's identity (``AuditLog.record_desk``), and who holds a thread is read
back from there: the last take or answer since the thread was last released or forked.

The queue shows personal data masked (``obs.audit.default_redactor``), held threads as much as waiting ones:
contact details reach the agent who answers through the thread itself.
"""

from __future__ import annotations

from typing import Any

from lg_harness.errors import UsageError
from lg_harness.obs.redact import default_redactor, redact_value

TAKES = ("take", "answer")  # after these the thread is the agent's
FREES = ("release", "fork")  # after these it is nobody's


class DeskError(UsageError):
    """A desk action that does not fit the thread's state (HTTP 409)."""

    status = 409


class UnknownThread(DeskError):
    """No such thread (HTTP 404)."""

    status = 404


# ----------------------------------------------------------------------------------------------- reading


def handoff_status(h: Any, thread_id: str) -> str | None:
    """``waiting`` (for a human), ``held`` (by one) or None (the bot has the thread)."""
    if thread_id in h.transcripts.waiting_handoffs():
        return "waiting"
    return "held" if thread_id in h.transcripts.held_handoffs() else None


def taken_by(h: Any, thread_id: str) -> str | None:
    """The agent who took or answered the thread since it was last released or forked (None: nobody)."""
    if h.audit is None:
        return None
    for action in reversed(h.audit.desk_actions(thread_id)):
        if action["action"] in TAKES:
            return action["agent"]
        if action["action"] in FREES:
            return None
    return None


def queue(h: Any) -> dict[str, list[dict[str, Any]]]:
    """The handoff queue as ``GET /handoffs`` and ``harness handoff list --json`` show it: threads waiting for
    a human and threads a human holds, oldest first, each with ``taken_by``; personal data masked."""
    waiting = redact_value(h.waiting_threads(), default_redactor)
    held = redact_value(h.held_threads(), default_redactor)
    for row in waiting + held:
        row["taken_by"] = taken_by(h, row["thread_id"])
    return {"waiting": waiting, "held": held}


def threads(h: Any, search: str = "", owner: str = "", limit: int = 100) -> list[dict[str, Any]]:
    """Threads by last activity: owner, domain, design, model, phase, turn, handoff status and who holds it.

    ``owner`` limits the list to one user's threads (what a customer may see); ``search`` matches the thread
    id or the owner."""
    waiting, held = set(h.transcripts.waiting_handoffs()), set(h.transcripts.held_handoffs())
    rows = []
    for row in h.transcripts.threads(search, limit, owner):
        values = h.graph.get_state(h.config(row["thread_id"])).values
        status = "waiting" if row["thread_id"] in waiting else "held" if row["thread_id"] in held else None
        rows.append({**row, "phase": values.get("phase"), "turn": int(values.get("turn") or 0),
                     "handoff": status, "taken_by": taken_by(h, row["thread_id"]) if status else None})
    return rows


def require_thread(h: Any, thread_id: str) -> None:
    if not h.thread_exists(thread_id):
        raise UnknownThread(f"unknown thread '{thread_id}'; the desk lists threads at / (harness handoff list)")


def message_traces(h: Any, thread_id: str) -> dict[int, str]:
    """Turn -> the trace id of the message (a later run of the same turn wins)."""
    if h.audit is None:
        return {}
    return {int(m["turn"]): m["trace_id"] for m in h.audit.messages(thread_id) if m.get("trace_id")}


def thread_view(h: Any, thread_id: str) -> dict[str, Any]:
    """Everything the thread page shows: owner and setup, where it stands, the transcript, its checkpoints
    (turn and message), each message's trace id, and what the desk did on it."""
    require_thread(h, thread_id)
    values = h.graph.get_state(h.config(thread_id)).values
    status = handoff_status(h, thread_id)
    setup = h.transcripts.setup(thread_id) or (None, None)
    return {"thread_id": thread_id, "owner": h.owner_of(thread_id, values), "design": setup[0], "model": setup[1],
            "domain": h.transcripts.domain_of(thread_id) or h.domain.name, "phase": values.get("phase"),
            "turn": int(values.get("turn") or 0), "handoff": status,
            "taken_by": taken_by(h, thread_id) if status else None,
            "transcript": h.transcripts.read(thread_id),
            "checkpoints": [c.__dict__ for c in h.history(thread_id)],
            "traces": message_traces(h, thread_id),
            "desk_actions": h.audit.desk_actions(thread_id) if h.audit is not None else []}


def trace(h: Any, thread_id: str, turn: int | None = None) -> dict[str, Any]:
    """The spans of one message (``turn``; default the latest) as the ``file`` exporter wrote them."""
    from lg_harness.obs.render import load_trace

    require_thread(h, thread_id)
    traces = message_traces(h, thread_id)
    turn = max(traces, default=None) if turn is None else turn
    trace_id = traces.get(turn) if turn is not None else None
    spans = load_trace(h.data_dir, trace_id=trace_id) if trace_id and h.data_dir is not None else []
    calls = [{k: c[k] for k in ("name", "input", "output", "status", "error_type", "duration_ms")}
             for c in (h.audit.export(thread_id) if h.audit is not None and turn is not None else [])
             if c["kind"] == "tool" and c["turn"] == turn]  # masked, as the audit log keeps them
    return {"thread_id": thread_id, "turn": turn, "trace_id": trace_id, "turns": sorted(traces), "spans": spans,
            "tool_calls": calls}


def figures(h: Any) -> dict[str, Any]:
    """The operator figures of ``harness stats --json`` (no personal data)."""
    from lg_harness.obs.operator_view import as_json, operator_view

    return as_json(operator_view(h.stores))


# ----------------------------------------------------------------------------------------------- acting


def _record(h: Any, agent: str, action: str, thread_id: str, detail: Any = None) -> None:
    if h.audit is not None:
        h.audit.record_desk(agent, action, thread_id, detail)


def _with_human(h: Any, thread_id: str) -> str:
    require_thread(h, thread_id)
    status = handoff_status(h, thread_id)
    if status is None:
        raise DeskError(f"thread '{thread_id}' is not waiting for or held by a human; the queue: harness handoff list")
    return status


def check_holder(h: Any, agent: str, thread_id: str) -> str:
    """The thread's handoff status, if ``agent`` may act on it (nobody else took it); else ``DeskError``."""
    status = _with_human(h, thread_id)
    holder = taken_by(h, thread_id)
    if holder is not None and holder != agent:
        raise DeskError(f"thread '{thread_id}' is taken by {holder}; they answer it, or release it back to the bot")
    return status


def take(h: Any, agent: str, thread_id: str) -> dict[str, Any]:
    """Take a waiting or held thread: colleagues see it is yours; its customer's messages come to you."""
    status = check_holder(h, agent, thread_id)
    _record(h, agent, "take", thread_id)
    return {"thread_id": thread_id, "status": status, "taken_by": agent}


def answer(h: Any, agent: str, thread_id: str, text: str) -> dict[str, Any]:
    """The agent's answer to the customer (``Harness.human_reply``); the thread stays with them until
    released."""
    check_holder(h, agent, thread_id)
    result = h.human_reply(thread_id, text, agent).to_dict()
    _record(h, agent, "answer", thread_id, text)
    return result


def release(h: Any, agent: str, thread_id: str, *, supervisor: bool = False) -> dict[str, Any]:
    """Hand a held thread back to the bot; the customer's next message goes to it. Only the agent who holds
    it releases it, or a supervisor (``HARNESS_DESK_SUPERVISORS``; the CLI, which opens the data dir itself)."""
    require_thread(h, thread_id)
    if handoff_status(h, thread_id) != "held":
        raise DeskError(f"thread '{thread_id}' is not held by a human (answer it first); the queue: "
                        "harness handoff list")
    holder = taken_by(h, thread_id)
    if holder is not None and holder != agent and not supervisor:
        raise DeskError(f"thread '{thread_id}' is held by {holder}: they release it, or a supervisor does "
                        "(HARNESS_DESK_SUPERVISORS)")
    result = h.release(thread_id)
    _record(h, agent, "release", thread_id)
    return result


def note_fork(h: Any, agent: str, thread_id: str, checkpoint_id: str) -> None:
    """A fork by the desk: recorded, and it frees the thread (the fork is from before any human took it)."""
    _record(h, agent, "fork", thread_id, {"checkpoint_id": checkpoint_id})
