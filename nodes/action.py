"""Action: one model call with the tools of the routed intent, then the tool calls it asked for.

Variant ``tool_loop``: tools masked by intent and role (at most ``max_tools_offered``), every call validated
before it runs, identical repeats intercepted, changing tools keyed for idempotency by thread and call id.
"""

from __future__ import annotations

import json
from typing import Any

from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.runnables import RunnableConfig

from graphs.routing import route_for
from graphs.state import HarnessState, ToolCallRecord
from memory.context import ASSEMBLERS
from nodes.base import ModelCallFailed, NodeDeps, call_model, register_variant, thread_id
from nodes.phrases import say
from tools.context import ToolContext
from tools.executor import ToolOutcome


def call_signature(name: str, args: dict[str, Any]) -> str:
    """Canonical form of a call: same tool and same arguments give the same signature."""
    return name + ":" + json.dumps(args, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def blocked(call: dict[str, Any]) -> ToolOutcome:
    return ToolOutcome(call_id=call.get("id") or "", name=call["name"], args=call.get("args") or {},
                       status="error", error_type="duplicate_call", exception="DuplicateCall",
                       error="identical call already made this turn; use its result above instead of calling again")


@register_variant("action", "tool_loop")
class ToolLoopAction:
    def __init__(self, deps: NodeDeps) -> None:
        self.deps = deps
        self.assemble = ASSEMBLERS[deps.design.variant("context")]

    def offered(self, state: HarnessState):
        role = (state.get("user") or {}).get("role", "customer")
        names = route_for(state.get("intent")).tools
        return self.deps.registry.offer(names, role)[: self.deps.design.knobs.max_tools_offered]

    def __call__(self, state: HarnessState, config: RunnableConfig) -> dict[str, Any]:
        stats = dict(state.get("turn_stats") or {})
        stats["rounds"] = stats.get("rounds", 0) + 1
        messages = self.assemble(state, self.deps.design.knobs.window_messages)
        try:
            ai, stats = call_model(self.deps, messages, stats, self.offered(state))  # type: ignore[arg-type]
        except ModelCallFailed:
            lang = (state.get("fact_card") or {}).get("language", "en")
            busy = say("busy", lang)
            return {"messages": [AIMessage(busy)], "reply": busy, "phase": "action", "turn_stats": stats,
                    "check": {"ok": True, "retryable": True}}
        outcomes = self.run_calls(state, ai, config)
        log = list(state.get("tool_log") or [])
        for o in outcomes:
            record = o.record()
            record["id"] = record.pop("call_id")
            log.append(ToolCallRecord(**record, signature=call_signature(o.name, o.args), round=stats["rounds"]))
        stats["tool_calls"] = stats.get("tool_calls", 0) + len(outcomes)
        stats["tool_errors"] = stats.get("tool_errors", 0) + sum(o.status != "ok" for o in outcomes)
        tool_messages = [ToolMessage(o.content(), tool_call_id=o.call_id, name=o.name,
                                     status="success" if o.status == "ok" else "error") for o in outcomes]
        return {"messages": [ai, *tool_messages], "tool_log": log, "turn_stats": stats, "phase": "action"}

    def run_calls(self, state: HarnessState, ai: AIMessage, config: RunnableConfig) -> list[ToolOutcome]:
        seen = {r["signature"] for r in state.get("tool_log") or [] if r.get("status") == "ok"}
        user = state.get("user") or {"id": "", "role": "customer"}
        thread = thread_id(config)

        def ctx_for(call: dict[str, Any]) -> ToolContext:
            return ToolContext(user_id=user["id"], role=user.get("role", "customer"), thread_id=thread,
                               idempotency_key=f"{thread}:{call.get('id')}", extras=self.deps.resources)

        fresh, results = [], {}
        for call in ai.tool_calls:
            if self.deps.design.knobs.block_identical_calls and call_signature(call["name"], call["args"]) in seen:
                results[call["id"]] = blocked(call)
            else:
                fresh.append(call)
        for outcome in self.deps.executor.run_many(fresh, ctx_for):
            results[outcome.call_id] = outcome
        return [results[c["id"]] for c in ai.tool_calls]
