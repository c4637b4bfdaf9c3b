"""Intent: start the turn, update the fact card, and decide what the user wants.

Variants: ``classifier`` (keyword rules + MiniLM prototypes, no model call), ``llm`` (the model answers a
JSON classification prompt), ``hybrid`` (classifier first, the model only when the classifier is unsure).
"""

from __future__ import annotations

import json
import re
from typing import Any

from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.runnables import RunnableConfig

from graphs.routing import CONVERSATIONAL, missing_slots
from graphs.state import HarnessState
from llm import nlu
from memory.context import last_human_text, turn_upkeep
from memory.hooks import recall
from nodes.base import ModelCallFailed, NodeDeps, call_model, register_variant

CLASSIFY_PROMPT = (
    "Classify the customer's last message into one intent of: " + ", ".join(nlu.INTENTS) + ". "
    'Respond with JSON only: {"intent": "<intent>", "confidence": <0..1>}.'
)


def facts_from(text: str) -> dict[str, Any]:
    """What the user stated in this message, as fact-card updates."""
    ents = nlu.extract_entities(text)
    card: dict[str, Any] = {}
    if ents.order_ids:
        card["last_order_id"] = ents.order_ids[-1]
    if ents.product_ids:
        card["last_product_id"] = ents.product_ids[-1]
    if ents.emails:
        card["email"] = ents.emails[-1]
    if ents.phones:
        card["phone"] = ents.phones[-1]
    return card


def message_language(text: str) -> str | None:
    """The message's language, or None when it is only identifiers ("ORD-10001") and says nothing."""
    if nlu.language(text) == "zh":
        return "zh"
    bare = nlu.ORDER_ID.sub(" ", nlu.PRODUCT_ID.sub(" ", nlu.clean_text(text)))
    return "en" if re.search(r"[A-Za-z]{2,}", bare) else None


def start_turn(deps: NodeDeps, state: HarnessState) -> dict[str, Any]:
    """Per-message bookkeeping shared by every intent variant."""
    messages = state.get("messages") or []
    text = last_human_text(messages)
    card = facts_from(text)
    known_orders = (state.get("fact_card") or {}).get("order_ids", [])
    new_orders = nlu.extract_entities(text).order_ids
    if new_orders:
        card["order_ids"] = list(dict.fromkeys([*known_orders, *new_orders]))
        if not (state.get("fact_card") or {}).get("first_order_id"):
            card["first_order_id"] = new_orders[0]  # "what did I give you at the start?" outlives any window
    if lang := message_language(text):
        card["language"] = lang
    memory = deps.resources.get("memory")
    recalled = {}
    if memory is not None and deps.design.knobs.long_term_memory:
        recalled = recall(memory, (state.get("user") or {}).get("id", ""), text)
    previous = state.get("turn_stats") or {}
    totals = state.get("totals") or {}
    counted = ("model_calls", "input_tokens", "output_tokens", "tool_calls", "tool_errors")
    upkeep = turn_upkeep(state, deps.design, text)
    if "fact_card" in upkeep:  # compression's extracted entities, then this message's on top
        card = {**upkeep.pop("fact_card"), **card}
    return {
        **recalled,
        **upkeep,
        "totals": {k: totals.get(k, 0) + previous.get(k, 0) for k in counted},
        "turn": (state.get("turn") or 0) + 1,
        "phase": "intent",
        "fact_card": card,
        "tool_log": [],
        "reply": "",
        "check": {},
        "handoff": None,
        "turn_stats": {"rounds": 0, "model_calls": 0, "input_tokens": 0, "output_tokens": 0,
                       "tool_calls": 0, "tool_errors": 0, "regenerations": 0, "started_at": deps.clock()},
    }


def continue_or_switch(state: HarnessState, intent: str, confidence: float, text: str) -> str:
    """Keep the open task when the message only answers its question ("ORD-10001" after "which order?")."""
    previous = state.get("intent")
    waiting = state.get("missing_slots") or []
    # Generic order talk ("订单号是 ORD-10144") answering the question is not a new request.
    if not previous or not waiting or (confidence >= 1.0 and intent != "order_status"):
        return intent
    ents = nlu.extract_entities(text)
    answers = ("order_id" in waiting and ents.order_ids) or ("query" in waiting and nlu.product_query(text))
    return previous if answers else intent


def finish(state: HarnessState, update: dict[str, Any], intent: str, confidence: float) -> dict[str, Any]:
    text = last_human_text(state.get("messages") or [])
    intent = continue_or_switch(state, intent, confidence, text)
    same_task = intent == state.get("intent") and bool(state.get("missing_slots"))
    update.update(intent=intent, intent_confidence=confidence)
    if not same_task:
        update["slots"] = {"__reset__": True}
        if intent not in CONVERSATIONAL:
            human = next((m for m in reversed(state.get("messages") or []) if isinstance(m, HumanMessage)), None)
            update["task_anchor_id"] = human.id if human is not None else None
    streak = (state.get("unknown_streak") or 0) + 1 if intent == "unknown" else 0
    update["unknown_streak"] = streak
    update["missing_slots"] = missing_slots(intent, {} if not same_task else state.get("slots") or {})
    return update


@register_variant("intent", "classifier")
class ClassifierIntent:
    def __init__(self, deps: NodeDeps) -> None:
        self.deps = deps

    def __call__(self, state: HarnessState, config: RunnableConfig) -> dict[str, Any]:
        update = start_turn(self.deps, state)
        intent, confidence = nlu.classify_intent(last_human_text(state.get("messages") or []))
        return finish(state, update, intent, confidence)


def parse_intent_json(text: str) -> tuple[str, float]:
    match = re.search(r"\{.*\}", text or "", re.S)
    try:
        data = json.loads(match.group(0)) if match else {}
    except json.JSONDecodeError:
        data = {}
    intent = data.get("intent") if data.get("intent") in nlu.INTENTS else "unknown"
    try:
        confidence = float(data.get("confidence", 0.5))
    except (TypeError, ValueError):
        confidence = 0.5
    return intent, min(max(confidence, 0.0), 0.99)


@register_variant("intent", "llm")
class LLMIntent:
    def __init__(self, deps: NodeDeps) -> None:
        self.deps = deps

    def classify(self, state: HarnessState, update: dict[str, Any]) -> tuple[str, float]:
        text = last_human_text(state.get("messages") or [])
        try:
            reply, update["turn_stats"] = call_model(
                self.deps, [SystemMessage(CLASSIFY_PROMPT), HumanMessage(text)], update["turn_stats"])
        except ModelCallFailed:
            return "unknown", 0.0
        return parse_intent_json(reply.text)

    def __call__(self, state: HarnessState, config: RunnableConfig) -> dict[str, Any]:
        update = start_turn(self.deps, state)
        intent, confidence = self.classify(state, update)
        return finish(state, update, intent, confidence)


@register_variant("intent", "hybrid")
class HybridIntent(LLMIntent):
    def __call__(self, state: HarnessState, config: RunnableConfig) -> dict[str, Any]:
        update = start_turn(self.deps, state)
        intent, confidence = nlu.classify_intent(last_human_text(state.get("messages") or []))
        if intent == "unknown":
            intent, confidence = self.classify(state, update)
        return finish(state, update, intent, confidence)


@register_variant("intent", "passthrough")
class PassthroughIntent:
    """No classification: every message goes to the tool loop as one open task (a framework's default agent)."""

    def __init__(self, deps: NodeDeps) -> None:
        self.deps = deps

    def __call__(self, state: HarnessState, config: RunnableConfig) -> dict[str, Any]:
        update = start_turn(self.deps, state)
        update.update(intent="open", intent_confidence=0.0, unknown_streak=0, missing_slots=[],
                      slots={"__reset__": True})
        return update
