"""What one message gives back: ``SendResult``, built here and nowhere else.

``Harness.send``, ``finish``, ``complete`` and ``human_reply`` return it; the CLI's ``run --json`` and the
HTTP service print ``to_dict()``. It is frozen: a caller reads a message's outcome, it does not edit it.
``values`` is the whole graph state after the message, for callers that need more than the summary (the
evaluation reads the tool log and the pending change); it is left out of ``to_dict()``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, TypedDict


class ToolCallResult(TypedDict):
    """One tool call of the message, as the tool log records it (JSON-shaped: the CLI and service print it)."""

    id: str | None
    name: str | None
    args: dict[str, Any] | None
    status: str | None
    error_type: str | None
    error: str | None


@dataclass(frozen=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    model_calls: int = 0


@dataclass(frozen=True)
class SendResult:
    """One message's outcome on a thread: the reply, where the graph went, what it called and spent."""

    thread_id: str
    design: str
    domain: str
    reply: str
    phase: str | None
    path: list[str]
    intent: str | None
    slots: dict[str, Any]
    missing_slots: list[str]
    tool_calls: list[ToolCallResult]
    usage: Usage
    context: dict[str, int]
    handoff: dict[str, Any] | None
    waiting_for_human: bool
    checkpoint_id: str | None
    trace_id: str | None = None
    values: dict[str, Any] = field(default_factory=dict[str, Any], repr=False, compare=False)

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (``harness run --json``, the HTTP service): every field but ``values``."""
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "values"}
        out["tool_calls"] = [dict(c) for c in self.tool_calls]
        out["usage"] = dataclasses.asdict(self.usage)
        return out


def configurable(snapshot: Any) -> dict[str, Any]:
    """The ``configurable`` part of a snapshot's config (thread and checkpoint ids)."""
    found: dict[str, Any] = snapshot.config.get("configurable") or {}
    return found


def send_result(thread_id: str, design: str, domain: str, snapshot: Any, path: list[str], *,
                bot_ran: bool = True, reply: str | None = None, phase: str | None = None,
                waiting_for_human: bool | None = None, trace_id: str | None = None) -> SendResult:
    """The result of a message from the thread's saved state (``snapshot``: a LangGraph ``StateSnapshot``).

    ``bot_ran=False``: the bot did not run this message (the thread waits for, or is held by, a human), so
    the result carries no tool calls, usage or path of an earlier message; ``reply``, ``phase`` and
    ``waiting_for_human`` then say what the customer was told.
    """
    values: dict[str, Any] = snapshot.values
    stats: dict[str, Any] = values.get("turn_stats") or {}
    log: list[dict[str, Any]] = values.get("tool_log") or []
    calls = [ToolCallResult(id=r.get("id"), name=r.get("name"), args=r.get("args"), status=r.get("status"),
                            error_type=r.get("error_type"), error=r.get("error"))
             for r in log]
    usage = Usage(input_tokens=stats.get("input_tokens", 0), output_tokens=stats.get("output_tokens", 0),
                  model_calls=stats.get("model_calls", 0))
    if not bot_ran:
        calls, usage, path = [], Usage(), []
        values = {**values, "turn_stats": {}, "tool_log": []}  # the bot did nothing this turn
    return SendResult(
        thread_id=thread_id,
        design=design,
        domain=domain,
        reply=reply if reply is not None else (values.get("reply") or ""),
        phase=phase if phase is not None else values.get("phase"),
        path=list(path),
        intent=values.get("intent"),
        slots=values.get("slots") or {},
        missing_slots=values.get("missing_slots") or [],
        tool_calls=calls,
        usage=usage,
        context=values.get("context_account") or {},
        handoff=values.get("handoff"),
        waiting_for_human=waiting_for_human if waiting_for_human is not None else "human" in snapshot.next,
        checkpoint_id=configurable(snapshot).get("checkpoint_id"),
        trace_id=trace_id,
        values=values,
    )
