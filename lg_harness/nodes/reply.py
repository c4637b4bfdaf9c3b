"""Reply: the final answer of the turn.

Variant ``model``: the model's own closing text when it ended the tool loop; otherwise one model call
without tools to answer from what the turn found (after a guard stop, for chit-chat, or to regenerate
an answer the self-check rejected).
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage, RemoveMessage
from langchain_core.runnables import RunnableConfig

from lg_harness.core.routing.guards import stop_reason
from lg_harness.core.state import HarnessState, StateUpdate, TurnStats
from lg_harness.memory.context import build_context, last_ai, last_human_text
from lg_harness.nodes.base import ModelCallFailed, NodeDeps, builtin_variant, call_model
from lg_harness.nodes.fact_check import results_of
from lg_harness.nodes.phrases import has_phrase, say
from lg_harness.nodes.presentation import present
from lg_harness.nodes.prompt_layout import layout_for
from lg_harness.obs.tracing import span_event

FINAL_NOTE = "Answer the customer now using only the tool results above. Do not call tools."
STOPPED_NOTE = ("The tool loop was stopped ({reason}). Tell the customer what was done so far, from the tool "
                "results above, and what is still open. Do not call tools.")
REGENERATE_NOTE = ("Your previous answer was rejected: {problems}. Answer again using only facts from the "
                   "tool results and the customer's messages.")


def turn_results(state: HarnessState) -> list[tuple[str, Any]]:
    """(tool name, parsed result) of this message's successful calls."""
    out = []
    for record in state.get("tool_log") or []:
        value = results_of([record])
        if value:
            out.append((str(record.get("name")), value[0]))  # every logged call has its name
    return out


def lang_of(state: HarnessState) -> str:
    return (state.get("fact_card") or {}).get("language") or "en"


def own_words(text: str) -> StateUpdate:
    """A reply in the harness's (or the domain's) own words: nothing in it came from the model, so the
    self-check has nothing to ground (an article id a domain's phrase names is the domain's, not invented)."""
    return {"reply": text, "messages": [AIMessage(text)], "phase": "reply", "check": {"ok": True, "own_words": True}}


@builtin_variant("reply", "model")
class ModelReply:
    def __init__(self, deps: NodeDeps) -> None:
        self.deps = deps
        self.layout = layout_for(deps)

    def __call__(self, state: HarnessState, config: RunnableConfig) -> StateUpdate:
        intent = state.get("intent") or ""
        # A conversational intent the domain (or the core) has a phrase for is answered without the model.
        if state.get("intent_kind") == "conversational" and has_phrase(intent, self.deps.domain):
            return own_words(say(intent, lang_of(state), self.deps.domain))
        refused = state.get("refused") or {}
        if refused and refused.get("turn") == state.get("turn"):  # a task this user's role cannot do
            key = f"refuse_{intent}"
            return own_words(say(key if has_phrase(key, self.deps.domain) else "not_for_role", lang_of(state),
                                 self.deps.domain))
        messages = state.get("messages") or []
        check = state.get("check") or {}
        ai = last_ai(messages)
        if not check.get("problems") and ai is not None and not ai.tool_calls and ai is messages[-1] and ai.text.strip():
            return {"reply": ai.text, "phase": "reply"}
        return self.generate(state, check)

    def generate(self, state: HarnessState, check: dict[str, Any]) -> StateUpdate:
        stats: TurnStats = TurnStats(**(state.get("turn_stats") or {}))  # a copy
        messages = state.get("messages") or []
        removals: list[Any] = []
        reason = stop_reason(state, self.deps.design.knobs)
        if reason and not check.get("problems"):  # once per stop, not again for a regenerated answer
            span_event("guard.stop", reason=reason, rounds=(state.get("turn_stats") or {}).get("rounds", 0))
        # A repeat of a call that worked stops the loop, but nothing is missing: the answer is the answer, not an
        # account of what was done so far (which small models turn into a narration of the request).
        repeat_of_success = reason == "identical call repeated" and all(
            r.get("status") == "ok" or r.get("error_type") == "duplicate_call" for r in state.get("tool_log") or [])
        note = STOPPED_NOTE.format(reason=reason) if reason and not repeat_of_success else FINAL_NOTE
        if check.get("problems"):
            stats["regenerations"] = stats.get("regenerations", 0) + 1
            note = REGENERATE_NOTE.format(problems="; ".join(check["problems"]))
            rejected = last_ai(messages)
            if rejected is not None and not rejected.tool_calls and rejected.id is not None:  # stored: it has one
                removals.append(RemoveMessage(id=rejected.id))
                state = {**state, "messages": [m for m in messages if m.id != rejected.id]}
        context = self.answer_context(state, note)
        try:
            ai, stats = call_model(self.deps, context, stats, step="answer")
            text = ai.text or say("ask_generic", lang_of(state), self.deps.domain)
        except ModelCallFailed as err:
            stats = {**stats, **err.stats}
            text = say("busy", lang_of(state), self.deps.domain)
        if not last_human_text(messages):
            text = text or say("greeting", lang_of(state), self.deps.domain)
        return {"reply": text, "messages": [*removals, AIMessage(text)], "turn_stats": stats, "phase": "reply"}

    def answer_context(self, state: HarnessState, note: str) -> list[Any]:
        """The answer step's messages, with this message's results presented as the design says
        (``answer_presentation``, ``nodes.presentation``): in words, the closing note is the request to reply."""
        variant = self.deps.design.knobs.answer_presentation
        results = turn_results(state)
        if results:
            # the design's layout (nodes.prompt_layout); where the results stay replayed, the facts turn comes
            # after them, so a regeneration extends the rejected answer's prompt and reads only what follows
            context, replayed = self.layout.answer(state)
            variant = "both" if replayed and variant == "facts" else variant
        else:
            context, _ = build_context(state, self.deps.design, self.deps.domain, strategies=self.deps.strategies)
        notes = [note] if variant == "replay" or note != FINAL_NOTE or not results else []
        return present(context, notes, variant, results, lang_of(state), self.deps.registry, self.deps.domain)
