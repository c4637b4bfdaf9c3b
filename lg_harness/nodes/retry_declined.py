"""Another try when the model answers a ready task without calling a tool (design knob ``retry_declined_call``,
composed once as a ``Declines`` part: ``AskAgain`` or ``TakeTheAnswer``).

Small models answer some requests they have every value for with "Sorry, I can't help with that" and no
call: 15% of tool-choice probes on Qwen2.5-Coder-0.5B (``skip_call`` in ``sim/simlm/fitted.yaml``). When the
routed intent is a task, every slot it needs is known, its tools are offered and nothing has run yet this
message, such an answer is not the customer's answer: the model is asked again (up to ``retry_declined_call`` times),
with a note that the request needs one of the tools offered. Its last answer stands, call or not. Two
tries more leave 0.15**3 = 0.3% of such messages declined, against 15% with none.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage

from lg_harness.core.knobs import Knobs
from lg_harness.core.state import HarnessState, TurnStats
from lg_harness.memory.known_ids import ungrounded_values
from lg_harness.nodes.base import NodeDeps, call_model
from lg_harness.obs.tracing import span_event
from lg_harness.tools.registry import ToolSpec

USE_THE_TOOLS = ("The customer's request needs one of the tools offered, and everything it needs is in the "
                 "conversation: call it now instead of answering.",
                 "Do not apologise or ask: the values are known. Reply with the tool call only.",
                 "Make the tool call for the customer's request now.")


class Declines(Protocol):
    """What a design does when the model answers a ready task without a call (``declines_for``)."""

    def ready(self, state: HarnessState, deps: NodeDeps, ai: AIMessage | None = None) -> bool: ...

    def call(self, deps: NodeDeps, state: HarnessState, messages: Sequence[BaseMessage], stats: TurnStats,
             tools: Sequence[ToolSpec], shown: Sequence[ToolSpec] = ()) -> tuple[AIMessage, TurnStats]: ...


class TakeTheAnswer:
    """The model's answer stands, call or not, and no step is held to calling (a design without the retry)."""

    def ready(self, state: HarnessState, deps: NodeDeps, ai: AIMessage | None = None) -> bool:
        return False

    def call(self, deps: NodeDeps, state: HarnessState, messages: Sequence[BaseMessage], stats: TurnStats,
             tools: Sequence[ToolSpec], shown: Sequence[ToolSpec] = ()) -> tuple[AIMessage, TurnStats]:
        return call_model(deps, messages, stats, tools, step="action", shown=shown)


@dataclass(frozen=True)
class AskAgain:
    """A declined ready task is asked again, up to ``times`` more (see the module doc)."""

    times: int

    def ready(self, state: HarnessState, deps: NodeDeps, ai: AIMessage | None = None) -> bool:
        """A routed task with every slot known and nothing run yet this message. A domain of tools alone has
        no slots to say a task is ready: there, an answer that states a figure no one gave ("上海现在是14:30"
        with no call) is the sign the model answered from memory instead of looking it up."""
        if not deps.domain.intents:  # figures only the customer's own words can back: nothing worked yet
            said = {"messages": [m for m in state.get("messages") or [] if isinstance(m, HumanMessage)]}
            return (ai is not None and not any(r.get("status") == "ok" for r in state.get("tool_log") or [])
                    and bool(ungrounded_values({"args": {"reply": ai.text}}, said)))
        return (not state.get("tool_log") and state.get("intent_kind") in ("task", "escalate")
                and not state.get("missing_slots") and bool(deps.domain.route(state.get("intent")).tools))

    def call(self, deps: NodeDeps, state: HarnessState, messages: Sequence[BaseMessage], stats: TurnStats,
             tools: Sequence[ToolSpec], shown: Sequence[ToolSpec] = ()) -> tuple[AIMessage, TurnStats]:
        """The action step's model call; a declined ready task is asked again. A ready task's first try must
        call where the provider can hold it to that (a grammar with no words branch): no decline, no answer
        from memory, and no second call to ask again."""
        step = "call" if tools and self.ready(state, deps) else "action"
        ai, stats = call_model(deps, messages, stats, tools, step=step, shown=shown)
        if ai.tool_calls or not tools or not self.ready(state, deps, ai):
            return ai, stats
        for attempt in range(self.times):
            span_event("action.retry_declined", intent=str(state.get("intent") or ""), attempt=attempt + 1)
            notes = [SystemMessage(n) for n in USE_THE_TOOLS[: attempt + 1]]
            ai, stats = call_model(deps, [*messages, *notes], stats, tools, step="action", shown=shown)
            if ai.tool_calls:
                break
        return ai, stats


def declines_for(knobs: Knobs) -> Declines:
    """``AskAgain`` with knob ``retry_declined_call`` above 0, else ``TakeTheAnswer``."""
    return AskAgain(knobs.retry_declined_call) if knobs.retry_declined_call > 0 else TakeTheAnswer()
