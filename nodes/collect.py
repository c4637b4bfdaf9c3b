"""Collect: fill the task's slots from this message and the fact card; ask for exactly what is missing.

Variant ``slots``: pattern extraction plus the fact card, so nothing the user already gave is asked again.
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage
from langchain_core.runnables import RunnableConfig

from graphs.routing import missing_slots, route_for
from graphs.state import HarnessState
from llm import nlu
from memory.context import last_human_text
from nodes.base import NodeDeps, register_variant
from nodes.phrases import say

_QUESTIONS = {"order_id": "ask_order_id", "query": "ask_query", "product_id": "ask_query", "code": "ask_coupon",
              "coupon_code": "ask_coupon"}


def slots_from_message(intent: str | None, text: str) -> dict[str, Any]:
    ents = nlu.extract_entities(text)
    found: dict[str, Any] = {}
    if ents.order_ids:
        found["order_id"] = ents.order_ids[-1]
    if ents.product_ids:
        found["product_id"] = ents.product_ids[-1]
    if ents.coupon_codes:
        found["coupon_code"] = ents.coupon_codes[-1]
    if intent == "product" and (query := nlu.product_query(text)):
        found["query"] = query
    return found


def slots_from_facts(card: dict[str, Any]) -> dict[str, Any]:
    found = {}
    if card.get("last_order_id"):
        found["order_id"] = card["last_order_id"]
    if card.get("last_product_id"):
        found["product_id"] = card["last_product_id"]
    return found


def rejected_args(state: HarnessState) -> list[str]:
    """Arguments of this message's calls that failed validation or were invented by the model."""
    names: list[str] = []
    for r in state.get("tool_log") or []:
        if r.get("error_type") in ("validation", "invented_argument"):
            names += [a for a in (r.get("args") or {}) if a in (r.get("error") or "")]
    return list(dict.fromkeys(names))


@register_variant("collect", "slots")
class SlotCollect:
    def __init__(self, deps: NodeDeps) -> None:
        self.deps = deps

    def __call__(self, state: HarnessState, config: RunnableConfig) -> dict[str, Any]:
        intent = state.get("intent")
        text = last_human_text(state.get("messages") or [])
        # The fact card fills in first, then earlier slots of this task, then this message (most specific).
        needed = {name for group in route_for(intent).required for name in group}
        facts = {k: v for k, v in slots_from_facts(state.get("fact_card") or {}).items() if k in needed}
        slots = {**facts, **(state.get("slots") or {}),
                 **slots_from_message(intent, text)}
        missing = missing_slots(intent, slots)
        if any(r.get("error_type") in ("validation", "invented_argument") for r in state.get("tool_log") or []):
            # Back from action: the model could not form a valid call, so ask the user instead of guessing.
            missing = rejected_args(state) or ["details"]
            slots.update({name: None for name in missing})
        update: dict[str, Any] = {"slots": slots, "missing_slots": missing, "phase": "collect"}
        if missing:
            lang = (state.get("fact_card") or {}).get("language") or nlu.language(text)
            question = say(_QUESTIONS.get(missing[0], "ask_generic"), lang)
            update.update(reply=question, messages=[AIMessage(question)])
        return update


@register_variant("collect", "none")
class NoCollect:
    """No slot gate: the model gets the request as it is and must ask or guess by itself."""

    def __init__(self, deps: NodeDeps) -> None:
        self.deps = deps

    def __call__(self, state: HarnessState, config: RunnableConfig) -> dict[str, Any]:
        return {"missing_slots": [], "phase": "collect"}
