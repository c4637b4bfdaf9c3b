"""Self-check: before the reply leaves, it must be true, grounded and meant for the customer.

Every variant that checks rewrites internal text away (tool names, harness notes, "the user") and checks
the facts the draft states against this message's tool results (``fact_check``): a contradicted draft is
regenerated once, then corrected from the results. Variant ``grounded``: identifiers of the domain's grounded entity types (``EntityType.ground``) and amounts
in the reply must appear in this turn's tool results, the fact card or the user's own words. ``off`` passes everything (for designs
that rebuild harnesses without a check).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from lg_harness.core.state import HarnessState
from lg_harness.memory.context import turn_messages
from lg_harness.nodes.base import NodeDeps, register_variant
from lg_harness.nodes.customer_text import (
    customer_safe,
    errors_in_customer_words,
    only_data,
    outcome_phrase,
    results_in_words,
)
from lg_harness.nodes.fact_check import contradictions, corrected, results_of
from lg_harness.nodes.money import with_currency
from lg_harness.tools.entities import EntityType

_AMOUNT = re.compile(r"(?<![\d.])\d+\.\d{2}(?![\d])")


def grounding_text(state: HarnessState) -> str:
    messages = state.get("messages") or []
    parts = [json.dumps(state.get("fact_card") or {}, ensure_ascii=False)]
    parts += [str(m.content) for m in messages if isinstance(m, HumanMessage)]
    # Error results count too: quoting a tool's own error text is grounded.
    parts += [str(m.content) for m in turn_messages(messages) if isinstance(m, ToolMessage)]
    return "\n".join(parts)


def ungrounded_claims(reply: str, evidence: str, entity_types: Sequence[EntityType] = ()) -> list[str]:
    """Identifiers and amounts the reply states that the evidence does not hold (as written or canonically)."""
    grounded = [t for t in entity_types if t.ground]
    claims: list[str] = []
    for t in grounded:
        stated = t.find(reply or "")
        known = set(t.find(evidence)) if stated else set()
        claims += [c for c in stated if c not in evidence and c not in known]
    amounts = [a for a in _AMOUNT.findall(reply or "") if a not in evidence]
    if amounts:  # "131.00" is grounded by a result's 131.0: compare as numbers
        known = {round(float(n), 2) for n in re.findall(r"\d+(?:\.\d+)?", evidence)}
        claims += [a for a in amounts if round(float(a), 2) not in known]
    return list(dict.fromkeys(claims))


NO_WORDS = "it was a tool call or raw data, not an answer in words for the customer"


def customer_draft(state: HarnessState, deps: NodeDeps, *, may_regenerate: bool) -> tuple[str, list[str]]:
    """The draft as the customer may read it, and the contradictions to regenerate for (if allowed).

    Quoted tool errors are told in the customer's words and language, internal text is rewritten away
    (``customer_text``), amounts get the domain's currency (``money``);
    facts the tool results contradict
    (``fact_check``) are sent back for one more answer while regenerations are left, then corrected in
    place from the results. A draft with no words for the customer after calls that worked is sent back
    too, then replaced by the results in plain words.
    """
    draft = state.get("reply") or ""
    log = state.get("tool_log") or []
    lang = (state.get("fact_card") or {}).get("language") or "en"
    # JSON alone (a call, or a result pasted back) is answered from the results in words, not flattened.
    names = deps.registry.names()
    text = None if only_data(draft) else customer_safe(errors_in_customer_words(draft, log, lang, deps.domain), names)
    results = results_of(log)
    # A repeat the executor turned away (the model asking again for what it has) is not a failure.
    worked = bool(results) and all(r.get("status") == "ok" or r.get("error_type") == "duplicate_call" for r in log)
    if text is None and worked and may_regenerate:
        # Small models often answer a result by asking for the same call again (written as text, since the
        # answer step offers no tools): one more try for words before the plain-facts fallback.
        return draft, [NO_WORDS]
    if text is None:
        text = (results_in_words(results, names) if worked else None) or outcome_phrase(log, lang, deps.domain)
    text = with_currency(text, results, deps.domain.currency)
    found = contradictions(text, results, deps.domain.claims, deps.domain.currency, grounding_text(state))
    if found and may_regenerate:
        return draft, [c.problem for c in found]
    if found:
        text = corrected(text, found) or outcome_phrase(log, lang, deps.domain)
    return text, []


def replaced(state: HarnessState, text: str) -> dict[str, Any]:
    """The update that makes ``text`` the reply (and the last answer in the messages), if it changed."""
    if text == (state.get("reply") or ""):
        return {}
    messages = state.get("messages") or []
    last = messages[-1] if messages else None
    update: dict[str, Any] = {"reply": text}
    if isinstance(last, AIMessage) and not last.tool_calls and last.id:
        update["messages"] = [AIMessage(text, id=last.id)]  # same id: the reducer replaces the draft
    return update


def regenerations_left(state: HarnessState, deps: NodeDeps) -> bool:
    return (state.get("turn_stats") or {}).get("regenerations", 0) < deps.design.knobs.max_regenerations


@register_variant("self_check", "grounded")
class GroundedCheck:
    def __init__(self, deps: NodeDeps) -> None:
        self.deps = deps

    def __call__(self, state: HarnessState, config: RunnableConfig) -> dict[str, Any]:
        text, wrong = customer_draft(state, self.deps, may_regenerate=regenerations_left(state, self.deps))
        if wrong:
            return {"check": {"ok": False, "problems": wrong, "facts": True}, "phase": "self_check"}
        missing = ungrounded_claims(text, grounding_text(state), self.deps.domain.all_entity_types())
        problems = [f"'{c}' does not come from a tool result or the customer" for c in missing]
        return {"check": {"ok": not problems, "problems": problems}, "phase": "self_check" if problems else "done",
                **replaced(state, text)}


@register_variant("self_check", "off")
class NoCheck:
    def __init__(self, deps: NodeDeps) -> None:
        self.deps = deps

    def __call__(self, state: HarnessState, config: RunnableConfig) -> dict[str, Any]:
        return {"check": {"ok": True, "problems": []}, "phase": "done"}


VERIFY_PROMPT = (
    "You check an assistant's answer before it is sent. Every identifier (reference numbers, ids, codes) "
    "and amount in the ANSWER must appear in the EVIDENCE (tool results, the customer's words, known "
    'facts). Respond with JSON only: {"ok": true|false, "problems": ["..."]}.'
)


def parse_verdict(text: str) -> dict[str, Any]:
    """The model's verdict; anything unreadable counts as a pass with a note (the check must not block)."""
    match = re.search(r"\{.*\}", text or "", re.S)
    try:
        data = json.loads(match.group(0)) if match else {}
    except json.JSONDecodeError:
        data = {}
    if not isinstance(data.get("ok"), bool):
        return {"ok": True, "problems": [], "note": "unreadable verdict"}
    problems = [str(p) for p in data.get("problems") or []] if not data["ok"] else []
    return {"ok": data["ok"] or not problems, "problems": problems}


@register_variant("self_check", "model")
class ModelCheck:
    """For real LLMs: the model itself judges whether the answer is grounded (one extra call)."""

    def __init__(self, deps: NodeDeps) -> None:
        self.deps = deps

    def __call__(self, state: HarnessState, config: RunnableConfig) -> dict[str, Any]:
        from langchain_core.messages import HumanMessage as Human
        from langchain_core.messages import SystemMessage
        from lg_harness.nodes.base import ModelCallFailed, call_model

        prompt = f"ANSWER:\n{state.get('reply') or ''}\n\nEVIDENCE:\n{grounding_text(state)}"
        stats = dict(state.get("turn_stats") or {})
        try:
            verdict_msg, stats = call_model(self.deps, [SystemMessage(VERIFY_PROMPT), Human(prompt)], stats)
            check = parse_verdict(verdict_msg.text)
        except ModelCallFailed:
            check = {"ok": True, "problems": [], "note": "model unavailable"}
        text, _ = customer_draft(state, self.deps, may_regenerate=False)
        return {"check": check, "turn_stats": stats, "phase": "done" if check["ok"] else "self_check",
                **(replaced(state, text) if check["ok"] else {})}
