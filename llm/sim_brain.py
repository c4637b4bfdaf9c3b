"""What the simulated model does with the messages and tool schemas it is given.

Plain functions over messages: read the request, pick a tool by its name and description, fill arguments
from what the conversation states, and write answers from tool results in the customer's language.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from llm import nlu
from llm.sim_answers import compose_answer

# Words in a tool's name that fit each intent, best first.
_TOOL_CUES: dict[str, tuple[str, ...]] = {
    "order_status": ("order_status", "track", "status"),
    "my_orders": ("list_my_orders", "my_orders", "orders"),
    "cancel_order": ("cancel",),
    "return_order": ("return",),
    "product": ("search_product", "search", "product"),
    "coupons": ("list_coupons", "coupon"),
    "complaint": ("complaint", "complain"),
    "human": ("human", "transfer", "handoff"),
}


def _text(m: BaseMessage) -> str:
    return m.content if isinstance(m.content, str) else json.dumps(m.content, ensure_ascii=False)


def _humans(messages: Sequence[BaseMessage]) -> list[str]:
    return [nlu.clean_text(_text(m)) for m in messages if isinstance(m, HumanMessage)]


def current_intent(humans: list[str]) -> tuple[str, str]:
    """The intent of the latest human message that has one, and that message's text."""
    for text in reversed(humans):
        intent, _ = nlu.classify_intent(text, use_embeddings=False)
        if intent not in ("unknown", "thanks"):
            return intent, text
    last = humans[-1] if humans else ""
    return nlu.classify_intent(last)[0] if last else "unknown", last


def choose_tool(intent: str, text: str, tools: list[dict[str, Any]]) -> dict[str, Any] | None:
    names = {t["function"]["name"]: t for t in tools}
    ents = nlu.extract_entities(text)
    cues = list(_TOOL_CUES.get(intent, ()))
    if intent == "product" and ents.product_ids:
        cues.insert(0, "get_product")
    if intent == "coupons" and ents.coupon_codes:
        cues.insert(0, "claim")
    for cue in cues:
        for name, tool in names.items():
            if cue in name:
                return tool
    return None


def latest_entity(kind: str, messages: Sequence[BaseMessage]) -> str | None:
    """Newest mention in the user's words, then in system text, then in tool results."""
    humans = [_text(m) for m in messages if isinstance(m, HumanMessage)]
    systems = [_text(m) for m in messages if isinstance(m, SystemMessage)]
    results = [_text(m) for m in messages if isinstance(m, ToolMessage)]
    for source in (list(reversed(humans)), systems, list(reversed(results))):
        for text in source:
            found = getattr(nlu.extract_entities(text), kind)
            if found:
                return found[-1]
    return None


def fill_args(tool: dict[str, Any], messages: Sequence[BaseMessage], request: str) -> tuple[dict, list[str]]:
    """Arguments for ``tool`` from the conversation; returns (args, required names it could not fill)."""
    params = tool["function"].get("parameters", {})
    required = set(params.get("required", []))
    args: dict[str, Any] = {}
    for name in params.get("properties", {}):
        value = _value_for(name, messages, request)
        if value is not None:
            args[name] = value
    return args, [r for r in sorted(required) if r not in args]


def _value_for(name: str, messages: Sequence[BaseMessage], request: str) -> Any:
    if "order" in name and name.endswith("id"):
        return latest_entity("order_ids", messages)
    if "product" in name and name.endswith("id"):
        return latest_entity("product_ids", messages)
    if name in ("code", "coupon_code"):
        return latest_entity("coupon_codes", messages)
    if name == "query":
        return nlu.product_query(request) or None
    if name in ("reason", "text", "message", "description"):
        return request[:300] or None
    return None


def call_id(messages: Sequence[BaseMessage], name: str, args: dict[str, Any]) -> str:
    digest = hashlib.sha1()
    for m in messages:
        digest.update(_text(m).encode())
    digest.update(json.dumps([name, args], sort_keys=True, ensure_ascii=False).encode())
    return "call_" + digest.hexdigest()[:16]


_ASK = {
    "order": {"en": "Which order is it? Please give me the order number (like ORD-12345).",
              "zh": "请问是哪个订单？请告诉我订单号（如 ORD-12345）。"},
    "other": {"en": "Could you give me a few more details ({missing})?", "zh": "请再提供一些信息（{missing}）。"},
    "help": {"en": "How can I help you with your order or our products?", "zh": "请问有什么可以帮您？"},
}


def ask_for(missing: list[str], lang: str) -> str:
    if any("order" in m for m in missing):
        return _ASK["order"][lang]
    return _ASK["other"][lang].format(missing=", ".join(missing))


def classification_reply(humans: list[str]) -> AIMessage:
    intent, confidence = nlu.classify_intent(humans[-1] if humans else "")
    return AIMessage(json.dumps({"intent": intent, "confidence": round(confidence, 2)}))


def _turn_results(messages: Sequence[BaseMessage]) -> list[ToolMessage]:
    out: list[ToolMessage] = []
    for m in reversed(messages):
        if isinstance(m, HumanMessage):
            break
        if isinstance(m, ToolMessage):
            out.insert(0, m)
    return out


def respond(messages: Sequence[BaseMessage], tools: list[dict[str, Any]]) -> AIMessage:
    """The model's next message for this input."""
    humans = _humans(messages)
    lang = nlu.language(humans[-1]) if humans else "en"
    system = " ".join(_text(m) for m in messages if isinstance(m, SystemMessage)).lower()
    if '"intent"' in system and "json" in system:
        return classification_reply(humans)
    results = _turn_results(messages)
    if results:
        return AIMessage(compose_answer(results, lang))
    intent, request = current_intent(humans)
    tool = choose_tool(intent, request, tools) if tools else None
    if tool is None:
        return AIMessage(_ASK["help"][lang])
    args, missing = fill_args(tool, messages, request)
    if missing:
        return AIMessage(ask_for(missing, lang))
    name = tool["function"]["name"]
    return AIMessage("", tool_calls=[{"name": name, "args": args, "id": call_id(messages, name, args),
                                      "type": "tool_call"}])
