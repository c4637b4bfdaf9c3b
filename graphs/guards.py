"""Guards: pure conditional-edge functions. State (and the design's knobs) in, the next node out."""

from __future__ import annotations

from typing import Literal

from langchain_core.messages import AIMessage
from langgraph.graph import END

from graphs.design import Knobs
from graphs.routing import CONVERSATIONAL, HANDOFF_INTENTS
from graphs.state import HarnessState


def after_intent(state: HarnessState, knobs: Knobs) -> Literal["collect", "reply", "handoff"]:
    intent = state.get("intent")
    if intent in HANDOFF_INTENTS:
        return "handoff"
    if (state.get("unknown_streak") or 0) >= knobs.unknown_intent_handoff:
        return "handoff"
    if intent in CONVERSATIONAL:
        return "reply"
    return "collect"


def after_collect(state: HarnessState, knobs: Knobs) -> Literal["action", "__end__"]:
    return END if state.get("missing_slots") else "action"


def after_action(state: HarnessState, knobs: Knobs) -> Literal["action", "reply", "__end__"]:
    if (state.get("check") or {}).get("retryable"):
        return END  # the model was unreachable: the 'busy' reply already went out
    messages = state.get("messages") or []
    last = messages[-1] if messages else None
    if isinstance(last, AIMessage) and not last.tool_calls:
        return "reply"
    if (state.get("turn_stats") or {}).get("rounds", 0) >= knobs.max_rounds:
        return "reply"
    return "action"


def after_self_check(state: HarnessState, knobs: Knobs) -> Literal["reply", "handoff", "__end__"]:
    check = state.get("check") or {}
    if check.get("ok", True):
        return END
    if (state.get("turn_stats") or {}).get("regenerations", 0) < knobs.max_regenerations:
        return "reply"
    return "handoff"
