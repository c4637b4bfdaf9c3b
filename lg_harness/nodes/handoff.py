"""Handoff: pass the conversation to a human with a ticket, a reason and what is known.

Variant ``ticket``: opens a ticket through the domain's handoff tool (``Domain.handoff``; validated,
idempotent per thread and turn) and tells the user. A domain without one gets a ticket from the harness's
own handoff queue (the thread id and turn), which ``harness handoff list`` shows either way.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from langchain_core.messages import AIMessage
from langchain_core.runnables import RunnableConfig
from langgraph.types import interrupt

from lg_harness.core.design import Knobs
from lg_harness.core.routing.guards import quota_exceeded, repeated_invalid_call, uncertain_changes
from lg_harness.core.state import HarnessState, StateUpdate, acting_user
from lg_harness.nodes.base import NodeDeps, builtin_variant, thread_id
from lg_harness.nodes.phrases import say
from lg_harness.obs.tracing import span_event
from lg_harness.tools.context import ToolContext


def handoff_reason(state: HarnessState, knobs: Knobs) -> str:
    if uncertain_changes(state):
        return "a change may have been applied before a crash (its result was never recorded): check it"
    if state.get("intent_kind") == "to-human":
        return "customer asked for a human"
    if state.get("intent_kind") == "escalate":
        return str(state.get("intent") or "escalation")
    if repeated_invalid_call(state):
        return "the same invalid tool call was made twice"
    if (quota := quota_exceeded(state, knobs)) is not None:
        return f"quota exhausted: {quota}"
    if problems := (state.get("check") or {}).get("problems"):
        return "answer failed self-check: " + "; ".join(problems)
    if (state.get("unknown_streak") or 0) > 0:
        return "intent not understood repeatedly"
    return "guard stop"


@builtin_variant("handoff", "ticket")
class TicketHandoff:
    def __init__(self, deps: NodeDeps) -> None:
        self.deps = deps

    def __call__(self, state: HarnessState, config: RunnableConfig) -> StateUpdate:
        user = acting_user(state, config) or {"id": "", "role": "customer"}
        thread = thread_id(config)
        reason = handoff_reason(state, self.deps.design.knobs)
        span_event("handoff", reason=reason)
        ticket = self.open_ticket(state, user, thread, reason, step_key(config))
        uncertain = uncertain_changes(state)
        # Whether the change happened is unknown: the customer hears that it is being checked, not "done".
        text = say("change_checking" if uncertain else "handoff", (state.get("fact_card") or {}).get("language")
                   or "en", self.deps.domain, ticket=str(ticket))
        reply = state.get("reply")
        answered = (not uncertain and (state.get("check") or {}).get("ok") and state.get("phase") == "done"
                    and reply)
        if answered:  # e.g. a complaint was recorded first: keep that answer and add the handoff notice
            text = f"{reply}\n{text}"
        # The human needs what the customer pinned ("don't call me") as much as the facts.
        payload = {"reason": reason, "ticket": ticket, "fact_card": state.get("fact_card") or {},
                   "constraints": list(state.get("constraints") or []), "summary": state.get("summary") or ""}
        if uncertain:  # what the human must check in the system it changes before anyone runs it again
            payload["uncertain_changes"] = [{"tool": r.get("name"), "args": r.get("args") or {},
                                             "ledger_key": r.get("ledger_key")} for r in uncertain]
            span_event("change.uncertain.handoff", tools=",".join(str(r.get("name")) for r in uncertain))
        return {"reply": text, "messages": [AIMessage(text)], "phase": "handoff", "handoff": payload}


    def open_ticket(self, state: HarnessState, user: Mapping[str, Any], thread: str, reason: str,
                    step: str = "") -> str:
        """The ticket id from the domain's handoff tool, or the harness's own when the domain has none."""
        spec = self.deps.domain.handoff
        turn = state.get("turn", 0)
        if spec.tool is None:
            return f"{thread}#{turn}" + (f".{step}" if step else "")
        ctx = ToolContext(user_id=user["id"], role=user.get("role", "customer"), thread_id=thread,
                          idempotency_key=f"{thread}:handoff:{turn}:{step}", extras=self.deps.resources)
        outcome = self.deps.executor.run({"id": f"handoff-{turn}", "name": spec.tool,
                                          "args": {spec.reason_arg: reason[:500]}}, ctx)
        return str((outcome.result or {}).get(spec.ticket_key, "pending")) if outcome.status == "ok" else "pending"


def step_key(config: RunnableConfig) -> str:
    """The checkpoint this step runs from, shortened: the same when a crashed step runs again (one ticket),
    new after a fork (the forked thread's handoff is a new one, not the ticket a human already answered)."""
    checkpoint = ((config.get("configurable") or {}).get("checkpoint_map") or {}).get("") or ""
    return str(checkpoint).replace("-", "")[-8:]


def wait_for_human(state: HarnessState, config: RunnableConfig) -> StateUpdate:
    """Pause the thread until a human answers (``harness handoff reply``); the answer becomes the reply."""
    answer = interrupt(state.get("handoff") or {})
    text = str(answer.get("text") if isinstance(answer, dict) else answer)
    return {"reply": text, "messages": [AIMessage(text, name="human_agent")], "phase": "done",
            "handoff": {**(state.get("handoff") or {}), "answered": True}}
