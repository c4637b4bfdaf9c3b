"""How a step's prompt is laid out, chosen once from the design (``layout_for``): the design knob ``stable_prefix``.

- ``AsAssembled``: every step reads the context as ``memory.context.build_context`` assembles it (the instructions
  with the customer, the task and the memory, then the conversation), and its prompt lists the tools it is offered.
- ``KeptPrefix``: where a grammar holds a step to its offered tools (llama.cpp), a step that must call, or may call
  again after this message's lookup, lists every tool the customer may use and reads the instructions, who the
  customer is, their message, its calls so far and the task (``memory.context.must_call_messages``): every such
  call of every thread starts with the same tokens, and a step after a lookup extends its call's prompt. An answer
  from this message's results lists no tool (with every tool listed the 0.5B model wrote the call again as text,
  ``lab/reports/bench-local``) and reads the instructions, the task and this message (``memory.context.answer_messages``):
  what is new since the thread's last answer, after the prefix they share. Other steps read the context as assembled.
"""

from __future__ import annotations

from typing import Any, Protocol

from langchain_core.messages import ToolMessage
from langchain_core.runnables import RunnableConfig

from lg_harness.core.state import HarnessState, acting_user
from lg_harness.llm.decoding import holds_tools_by_grammar
from lg_harness.memory.context import answer_messages, build_context, must_call_messages, turn_messages
from lg_harness.nodes.base import NodeDeps
from lg_harness.tools.registry import ToolSpec


def answers_results(state: HarnessState) -> bool:
    """Whether this message has tool results (for an answer to word, or a further call to build on)."""
    return any(isinstance(m, ToolMessage) for m in turn_messages(state.get("messages") or []))


class Layout(Protocol):
    """A design's prompt layout (``layout_for``)."""

    def step(self, state: HarnessState, config: RunnableConfig | None, assembled: list[Any], may_call: bool
             ) -> tuple[list[Any], list[ToolSpec]]:
        """An action step's messages (``assembled``: the context as assembled) and the tools its prompt lists
        beyond the offered ones; ``may_call``: it is offered tools and must call or has a lookup to build on."""
        ...

    def answer(self, state: HarnessState) -> tuple[list[Any], bool]:
        """An answer step's messages from this message's results, and whether its results stay replayed before
        a facts turn (so a regeneration extends the rejected answer's prompt)."""
        ...


class AsAssembled:
    """The context as assembled for every step; the prompt lists the offered tools only."""

    def __init__(self, deps: NodeDeps) -> None:
        self.deps = deps

    def step(self, state: HarnessState, config: RunnableConfig | None, assembled: list[Any], may_call: bool
             ) -> tuple[list[Any], list[ToolSpec]]:
        return assembled, []

    def answer(self, state: HarnessState) -> tuple[list[Any], bool]:
        deps = self.deps
        return build_context(state, deps.design, deps.domain, strategies=deps.strategies)[0], False


class KeptPrefix:
    """The prefix kept for the engine's saved states (see the module doc)."""

    def __init__(self, deps: NodeDeps) -> None:
        self.deps = deps

    def every_tool(self, state: HarnessState, config: RunnableConfig | None) -> list[ToolSpec]:
        """All the tools the acting user's role may use, in the registry's order: the same for every such prompt."""
        return self.deps.registry.offer(None, acting_user(state, config).get("role", "customer"))

    def step(self, state: HarnessState, config: RunnableConfig | None, assembled: list[Any], may_call: bool
             ) -> tuple[list[Any], list[ToolSpec]]:
        deps = self.deps
        if may_call:
            return (must_call_messages(state, deps.design, deps.domain, deps.strategies),
                    self.every_tool(state, config))
        if answers_results(state):
            return answer_messages(state, deps.design, deps.domain, deps.strategies), []
        return assembled, []

    def answer(self, state: HarnessState) -> tuple[list[Any], bool]:
        deps = self.deps
        return answer_messages(state, deps.design, deps.domain, deps.strategies), True


def layout_for(deps: NodeDeps) -> Layout:
    """``KeptPrefix`` with the knob ``stable_prefix`` where the provider holds a step to its tools by grammar
    (``llm.decoding``: listing every tool is safe only where the step cannot call the others), else
    ``AsAssembled``."""
    if deps.design.knobs.stable_prefix and holds_tools_by_grammar(deps.model):
        return KeptPrefix(deps)
    return AsAssembled(deps)

