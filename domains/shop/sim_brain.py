"""What the simulated model does with the messages and tool schemas it is given.

Plain functions over messages: read the request, pick a tool by its name, fill arguments from what the
visible conversation states, and write answers from tool results in the customer's language. A
``FaultProfile`` with ``Dice`` seeded by the input adds the misbehaviour real models show.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from lg_harness.domains.shop import nlu
from lg_harness.domains.shop.sim_answers import compose_answer, recall_answer
from lg_harness.llm.sim_faults import Dice, FaultProfile

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
_INJECTION = re.compile(r"(?:ignore (?:all |your )?previous instructions|忽略之前的指令)[^\n]{0,200}", re.I)
_QUOTED_MARK = "[quoted text from tool result]"
CLEAN = FaultProfile()


@dataclass
class Call:
    """Everything one model call sees, plus its dice."""

    messages: Sequence[BaseMessage]
    tools: list[dict[str, Any]]
    profile: FaultProfile = CLEAN
    dice: Dice | None = None
    tokens: list[int] = field(default_factory=list)  # per message, for "middle of the context"

    def roll(self, p: float) -> bool:
        return self.dice is not None and p > 0 and self.dice.roll(p)

    @property
    def humans(self) -> list[str]:
        return [_text(m) for m in self.messages if isinstance(m, HumanMessage)]

    @property
    def system(self) -> str:
        return " ".join(_text(m) for m in self.messages if isinstance(m, SystemMessage))

    def tool(self, name: str) -> dict[str, Any] | None:
        return next((t for t in self.tools if t["function"]["name"] == name), None)


def _text(m: BaseMessage) -> str:
    return m.content if isinstance(m.content, str) else json.dumps(m.content, ensure_ascii=False)


def conversation_language(humans: list[str]) -> str:
    for text in reversed(humans):
        if nlu.language(text) == "zh":
            return "zh"
        if re.search(r"[A-Za-z]{3,}", nlu.ORDER_ID.sub(" ", nlu.clean_text(text))):
            return "en"
    return "en"


_TASK_LINE = re.compile(r"Intent: ([a-z_]+)\.")


def current_intent(humans: list[str], system: str = "") -> tuple[str, str]:
    """What the user wants now, and the text that says it.

    A message that only answers a question ("ORD-10144") continues the request before it; when the
    instructions name the current task, that is what the model works on.
    """
    task = _TASK_LINE.search(system)
    for text in reversed(humans):
        intent, confidence = nlu.classify_intent(text, use_embeddings=False)
        if intent in ("unknown", "thanks"):
            continue
        if confidence < 1.0 and task and task.group(1) in _TOOL_CUES:
            return task.group(1), nlu.clean_text(text)
        if confidence < 1.0 and text is humans[-1] and len(humans) > 1:
            earlier, _ = current_intent(humans[:-1])
            if earlier in _TOOL_CUES and earlier != "human":
                return earlier, nlu.clean_text(text)
        return intent, nlu.clean_text(text)
    last = nlu.clean_text(humans[-1]) if humans else ""
    return (nlu.classify_intent(last)[0] if last else "unknown"), last


def choose_tool(intent: str, text: str, tools: list[dict[str, Any]]) -> dict[str, Any] | None:
    ents = nlu.extract_entities(text)
    cues = list(_TOOL_CUES.get(intent, ()))
    if intent == "product" and ents.product_ids:
        cues.insert(0, "get_product")
    if intent == "coupons" and ents.coupon_codes:
        cues.insert(0, "claim")
    for cue in cues:
        for tool in tools:
            if cue in tool["function"]["name"]:
                return tool
    return None


def _middle(call: Call, index: int) -> bool:
    total = sum(call.tokens)
    if total <= call.profile.long_context_tokens or not call.tokens:
        return False
    before = sum(call.tokens[:index])
    return 0.2 < before / total < 0.8


def latest_entity(kind: str, call: Call) -> str | None:
    """Newest mention in the user's words, then in system text, then in tool results."""
    indexed = list(enumerate(call.messages))
    order = ([x for x in reversed(indexed) if isinstance(x[1], HumanMessage)]
             + [x for x in indexed if isinstance(x[1], SystemMessage)]
             + [x for x in reversed(indexed) if isinstance(x[1], ToolMessage)])
    for index, message in order:
        found = getattr(nlu.extract_entities(_text(message)), kind)
        if found:
            if _middle(call, index) and call.roll(call.profile.forget_middle):
                continue  # lost in the middle of a long context
            return found[-1]
    return None


def _raw_with_invisible(call: Call, clean_value: str) -> str | None:
    """The value as the user typed it, invisible characters included, if it had any."""
    for text in reversed(call.humans):
        if nlu.has_invisible(text) and clean_value in nlu.clean_text(text):
            pattern = "[\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff\u00ad]*".join(
                re.escape(ch) for ch in clean_value)
            m = re.search(pattern, text)
            return m.group(0) if m else None
    return None


def _entity_kind(name: str) -> str | None:
    if "order" in name and name.endswith("id"):
        return "order_ids"
    if "product" in name and name.endswith("id"):
        return "product_ids"
    if name in ("code", "coupon_code"):
        return "coupon_codes"
    return None


def _value_for(name: str, call: Call, request: str) -> Any:
    kind = _entity_kind(name)
    if kind:
        value = latest_entity(kind, call)
        if value and call.roll(call.profile.copy_invisible):
            value = _raw_with_invisible(call, value) or value
        return value
    if name == "query":
        return nlu.product_query(request) or None
    if name in ("reason", "text", "message", "description"):
        return request[:300] or None
    return None


def _invent(name: str, call: Call) -> str | None:
    kind = _entity_kind(name)
    if kind is None or call.dice is None:
        return None
    if kind == "order_ids":
        return f"ORD-{call.dice.randint(10001, 10200)}"
    if kind == "product_ids":
        return f"P{call.dice.randint(1001, 1065)}"
    return call.dice.choice(["SAVE10", "WELCOME5", "VIP50"])


def _malform(args: dict[str, Any], call: Call) -> dict[str, Any]:
    for key, value in args.items():
        if _entity_kind(key) and isinstance(value, str):
            return {**args, key: value.lower().replace("-", "")}
    return args


def fill_args(tool: dict[str, Any], call: Call, request: str) -> tuple[dict, list[str]]:
    """Arguments for ``tool`` from the conversation; returns (args, required names it could not fill)."""
    params = tool["function"].get("parameters", {})
    required = set(params.get("required", []))
    args: dict[str, Any] = {}
    for name in params.get("properties", {}):
        value = _value_for(name, call, request)
        if value is None and name in required and call.roll(call.profile.invent_missing):
            value = _invent(name, call)
        if value is not None:
            args[name] = value
    if args and call.roll(call.profile.malformed_args):
        args = _malform(args, call)
    return args, [r for r in sorted(required) if r not in args]


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


_ACK = {"en": "You're welcome! Anything else I can do for you?", "zh": "不客气！还有什么可以帮您的吗？"}


def ask_for(missing: list[str], lang: str) -> str:
    if any("order" in m for m in missing):
        return _ASK["order"][lang]
    return _ASK["other"][lang].format(missing=", ".join(missing))


def classification_reply(humans: list[str]) -> AIMessage:
    intent, confidence = nlu.classify_intent(humans[-1] if humans else "")
    return AIMessage(json.dumps({"intent": intent, "confidence": round(confidence, 2)}))


_CLAIM = re.compile(r"\b(?:ORD-\d{5}|P\d{4}|RMA-\d+|CMP-\d+|HO-\d+|[A-Z]{2}\d{8,14})\b|\d+\.\d{2}")


def verification_reply(text: str) -> AIMessage:
    """Judge an ANSWER against its EVIDENCE: every identifier and amount must appear in the evidence."""
    answer, _, evidence = text.partition("EVIDENCE:")
    missing = [c for c in dict.fromkeys(_CLAIM.findall(answer)) if c not in evidence]
    problems = [f"'{c}' is not in the evidence" for c in missing]
    return AIMessage(json.dumps({"ok": not problems, "problems": problems}))


def _turn_messages(messages: Sequence[BaseMessage]) -> list[BaseMessage]:
    out: list[BaseMessage] = []
    for m in reversed(messages):
        if isinstance(m, HumanMessage):
            break
        out.insert(0, m)
    return out


def tool_call_message(call: Call, tool: dict[str, Any], args: dict[str, Any]) -> AIMessage:
    name = tool["function"]["name"]
    return AIMessage("", tool_calls=[{"name": name, "args": args, "id": call_id(call.messages, name, args),
                                      "type": "tool_call"}])


def _pick_tool(call: Call, intended: dict[str, Any]) -> dict[str, Any]:
    """Usually the intended tool; with many tools offered, sometimes a neighbour or a needless lookup."""
    extra = max(0, len(call.tools) - 3)
    others = [t for t in call.tools if t is not intended]
    lookups = [t for t in others if t["function"]["name"].startswith(("get_", "list_", "search_"))]
    if others and call.roll(call.profile.wrong_tool_per_extra * extra):
        return call.dice.choice(others)  # type: ignore[union-attr]
    if lookups and call.roll(call.profile.extra_lookup_per_extra * extra):
        return call.dice.choice(lookups)  # type: ignore[union-attr]
    return intended


def after_results(call: Call, turn: list[BaseMessage], lang: str) -> AIMessage:
    """Next step once this turn has tool results: repeat, repair, obey an injection, go on, or answer."""
    results = [m for m in turn if isinstance(m, ToolMessage)]
    calls = [c for m in turn if isinstance(m, AIMessage) for c in m.tool_calls]
    last = results[-1]
    last_call = calls[-1] if calls else None
    if last.status == "error" and last_call and call.tool(last_call["name"]):
        if call.roll(call.profile.repeat_after_error):
            return tool_call_message(call, call.tool(last_call["name"]), last_call["args"])  # type: ignore[arg-type]
        if "invalid arguments" in _text(last) and (fixed := _repair(call, last_call)) is not None:
            return fixed
    if (obeyed := _obey_injection(call, results)) is not None:
        return obeyed
    intent, request = current_intent(call.humans, call.system)
    intended = choose_tool(intent, request, call.tools)
    done = {c["name"] for c in calls}
    if intended is not None and intended["function"]["name"] not in done and len(done) < 3:
        args, missing = fill_args(intended, call, request)
        if not missing:
            return tool_call_message(call, intended, args)
    return AIMessage(compose_answer(results, lang))


def _repair(call: Call, failed: dict[str, Any]) -> AIMessage | None:
    tool = call.tool(failed["name"])
    _, request = current_intent(call.humans, call.system)
    clean = Call(call.messages, call.tools, CLEAN, None, call.tokens)
    args, missing = fill_args(tool, clean, request)  # type: ignore[arg-type]
    if missing or args == failed["args"]:
        return None
    return tool_call_message(call, tool, args)  # type: ignore[arg-type]


def _obey_injection(call: Call, results: list[ToolMessage]) -> AIMessage | None:
    for m in results:
        text = _text(m)
        hit = _INJECTION.search(text)
        if not hit or _QUOTED_MARK in text:
            continue
        for tool in call.tools:
            name = tool["function"]["name"]
            named = name in hit.group(0) or ("取消" in hit.group(0) and "cancel" in name)
            if named and call.roll(call.profile.follow_injection):
                args, missing = fill_args(tool, call, hit.group(0))
                if not missing:
                    return tool_call_message(call, tool, args)
    return None


def respond(messages: Sequence[BaseMessage], tools: list[dict[str, Any]], *, profile: FaultProfile = CLEAN,
            dice: Dice | None = None, tokens: list[int] | None = None) -> AIMessage:
    """The model's next message for this input."""
    call = Call(messages, tools, profile, dice, tokens or [])
    humans = call.humans
    lang = conversation_language(humans)
    system = " ".join(_text(m) for m in messages if isinstance(m, SystemMessage)).lower()
    if '"intent"' in system and "json" in system:
        return classification_reply(humans)
    if '"ok"' in system and '"problems"' in system and humans:
        return verification_reply(humans[-1])
    turn = _turn_messages(messages)
    if any(isinstance(m, ToolMessage) for m in turn):
        return after_results(call, turn, lang) if tools else AIMessage(
            compose_answer([m for m in turn if isinstance(m, ToolMessage)], lang))
    latest = nlu.classify_intent(humans[-1], use_embeddings=False)[0] if humans else "unknown"
    if latest in ("thanks", "greeting") or (humans and nlu.is_low_information(humans[-1])):
        return AIMessage(_ASK["help"][lang] if latest == "greeting" else _ACK[lang])
    intent, request = current_intent(humans, call.system)
    if intent == "recall":
        return AIMessage(recall_answer(call.messages, lang))
    intended = choose_tool(intent, request, tools) if tools else None
    if intended is None:
        return AIMessage(_ASK["help"][lang])
    tool = _pick_tool(call, intended)
    args, missing = fill_args(tool, call, request)
    if missing:
        return AIMessage(ask_for(missing, lang))
    several = nlu.extract_entities(request).order_ids
    if len(several) > 1 and "order_id" in args and not nlu.is_correction(request):  # "cancel ORD-1 and ORD-2": independent calls in one turn
        return parallel_calls(call, tool, [{**args, "order_id": oid} for oid in several])
    return tool_call_message(call, tool, args)


def parallel_calls(call: Call, tool: dict[str, Any], arg_sets: list[dict[str, Any]]) -> AIMessage:
    name = tool["function"]["name"]
    return AIMessage("", tool_calls=[{"name": name, "args": a, "id": call_id(call.messages, name, a),
                                      "type": "tool_call"} for a in arg_sets])
