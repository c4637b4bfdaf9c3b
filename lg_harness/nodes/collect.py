"""Collect: fill the task's slots from this message and the fact card; ask for exactly what is missing.

Variant ``slots``: pattern extraction plus the fact card, so nothing the user already gave is asked again.
"""

from __future__ import annotations

import re
from typing import Any

from langchain_core.messages import AIMessage
from langchain_core.runnables import RunnableConfig

from lg_harness.core.domain import Domain
from lg_harness.core.state import HarnessState, StateUpdate
from lg_harness.memory.context import last_human_text
from lg_harness.nodes.base import NodeDeps, builtin_variant
from lg_harness.nodes.phrases import has_phrase, say
from lg_harness.nodes.render_answer import render_answer
from lg_harness.tools.text import language

# "the first one", "第一个": an ordinal that picks one of the mentions remembered in order.
_ORDINALS = {
    0: re.compile(r"\b(?:the\s+)?(?:first|1st|earliest|original)\s+(?:one|order|ticket|item|id|number)?|第一个|第一张|第一笔|最早那?个",
                  re.I),
    1: re.compile(r"\b(?:the\s+)?(?:second|2nd)\s+(?:one|order|ticket|item|id|number)?|第二个|第二张|第二笔", re.I),
    -1: re.compile(r"\b(?:the\s+)?(?:last|latest|most recent)\s+(?:one|order|ticket|item|id|number)|最后那?一?个|最近那?个",
                   re.I),
}


def ordinal_mention(text: str, mentions: list[str]) -> str | None:
    """The remembered mention an ordinal in ``text`` points at ("cancel the first one" -> the first id)."""
    for index, pattern in _ORDINALS.items():
        if pattern.search(text) and mentions and (index < len(mentions)):
            return mentions[index]
    return None


def slots_from_message(domain: Domain, intent: str | None, text: str) -> dict[str, Any]:
    """The latest mention of each slot's entity type, then the domain's free-text extractors."""
    mentioned = domain.entities_in(text)
    found: dict[str, Any] = {slot: mentioned[t.name][-1] for slot, t in domain.slot_entities().items()
                             if t.name in mentioned}
    for slot, extract in domain.slot_extractors.items():
        if (value := extract(intent, text)) is not None and value != "":
            found[slot] = value
    return found


def slots_from_facts(domain: Domain, card: dict[str, Any], text: str = "") -> dict[str, Any]:
    """Slots the fact card already answers: an ordinal reference first, else the latest mention."""
    found = {}
    for slot, t in domain.slot_entities().items():
        picked = ordinal_mention(text, card.get(f"{slot}s") or []) if t.remember else None
        if picked or (t.card and card.get(t.latest_key)):
            found[slot] = picked or card[t.latest_key]
    return found


def rejected_args(state: HarnessState) -> list[str]:
    """Arguments of this message's calls that failed validation or were invented by the model."""
    names: list[str] = []
    for r in state.get("tool_log") or []:
        if r.get("error_type") in ("validation", "invented_argument"):
            names += [a for a in (r.get("args") or {}) if a in (r.get("error") or "")]
    return list(dict.fromkeys(names))


@builtin_variant("collect", "slots")
class SlotCollect:
    def __init__(self, deps: NodeDeps) -> None:
        self.deps = deps

    def __call__(self, state: HarnessState, config: RunnableConfig) -> StateUpdate:
        domain = self.deps.domain
        intent = state.get("intent")
        text = last_human_text(state.get("messages") or [])
        # The fact card fills in first, then earlier slots of this task, then this message (most specific).
        needed = {name for group in domain.route(intent).required for name in group}
        card = state.get("fact_card") or {}
        facts = {k: v for k, v in slots_from_facts(domain, card, text).items() if k in needed}
        earlier = state.get("slots") or {}
        said = slots_from_message(domain, intent, text)
        if domain.follow_up and (carried := domain.follow_up(text, intent, earlier)) is not None:
            said.update(carried[1])  # a follow-up's slots keep the product under discussion
        slots = {**facts, **earlier, **said}
        missing = domain.missing_slots(intent, slots)
        if missing and not set(domain.route(intent).tools) & domain.changing_tools() and any(
                domain.kind(i) == "task" and not domain.missing_slots(i, {**slots, **slots_from_message(domain, i, text)})
                for i in state.get("offer_intents") or [] if i != intent):
            # Unsure between a lookup that needs an id and a task that needs none ("how many tickets have I got
            # open?"), or whose values this message gives (a knowledge-base question is its own query): the
            # offered tools decide; a call that lacks the id comes back here to ask for it. A change ("I want
            # to return an order") still asks which record first.
            missing = []
        if any(r.get("error_type") in ("validation", "invented_argument") for r in state.get("tool_log") or []):
            # Back from action: the model could not form a valid call, so ask the user instead of guessing.
            missing = rejected_args(state) or ["details"]
            slots.update({name: None for name in missing})
        update: StateUpdate = {"slots": slots, "missing_slots": missing, "phase": "collect"}
        if missing:
            lang = card.get("language") or language(text)
            key = f"ask_{missing[0]}"
            question = say(key if has_phrase(key, domain) else "ask_generic", lang, domain)
            # What this message's calls already found is said first: the first of two requests answered,
            # then the question the second one needs ("Ticket INC0012346: in progress. Which article?")
            found = [r for r in state.get("tool_log") or [] if r.get("status") == "ok"]
            told = render_answer(found, self.deps.registry, domain, text, lang) if found else None
            question = f"{told}{'' if lang == 'zh' else ' '}{question}" if told else question
            update.update(reply=question, messages=[AIMessage(question)])
        return update


@builtin_variant("collect", "none")
class NoCollect:
    """No slot gate: the model gets the request as it is and must ask or guess by itself."""

    def __init__(self, deps: NodeDeps) -> None:
        self.deps = deps

    def __call__(self, state: HarnessState, config: RunnableConfig) -> StateUpdate:
        return {"missing_slots": [], "phase": "collect"}
