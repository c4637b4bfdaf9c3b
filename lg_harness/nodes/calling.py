"""How a design asks the model for a step, chosen once from its knobs (``calling_for``): tools bound natively,
decoding held to the step where the provider can (``constrained_decoding``: a grammar, a JSON schema, a
format), or tool calls written as ``TOOL:`` lines in text for a model without native calls (``tool_calling:
text``). ``call_model`` (``lg_harness/nodes/base.py``) asks the design's way and reads the reply back through it."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from langchain_core.messages import AIMessage, BaseMessage

from lg_harness.core.knobs import Knobs
from lg_harness.llm.decoding import Step, constrain
from lg_harness.llm.text_tools import from_text, to_text_mode
from lg_harness.tools.registry import ToolSpec


@dataclass(frozen=True)
class Prepared:
    """The model bound for one call, the messages it reads, and how its reply is read back."""

    model: Any
    messages: list[BaseMessage]
    finish: Callable[[AIMessage], AIMessage] | None = None


class Calling(Protocol):
    def prepare(self, model: Any, messages: Sequence[BaseMessage], tools: Sequence[ToolSpec], step: Step | None,
                shown: Sequence[ToolSpec], schema: dict[str, Any] | None) -> Prepared: ...


class NativeCalls:
    """The offered tools bound as the provider's own tool calling; free decoding."""

    def prepare(self, model: Any, messages: Sequence[BaseMessage], tools: Sequence[ToolSpec], step: Step | None,
                shown: Sequence[ToolSpec], schema: dict[str, Any] | None) -> Prepared:
        bound = model.bind_tools([t.json_schema() for t in tools]) if tools else model
        return Prepared(bound, list(messages))


class HeldToStep(NativeCalls):
    """Decoding that fits the step where the provider can (``llm.decoding.constrain``); a call without a step
    is a native one."""

    def prepare(self, model: Any, messages: Sequence[BaseMessage], tools: Sequence[ToolSpec], step: Step | None,
                shown: Sequence[ToolSpec], schema: dict[str, Any] | None) -> Prepared:
        if step is None:
            return super().prepare(model, messages, tools, step, shown, schema)
        held = constrain(model, step, [t.json_schema() for t in tools], [t.json_schema() for t in shown], schema)
        return Prepared(held.runnable, list(messages), held.finish)


@dataclass(frozen=True)
class TextCalls:
    """A model without native tool calls reads the tools' instructions and writes ``TOOL:`` lines, read back
    as calls; a call with no tools goes the ``inner`` way."""

    inner: Calling

    def prepare(self, model: Any, messages: Sequence[BaseMessage], tools: Sequence[ToolSpec], step: Step | None,
                shown: Sequence[ToolSpec], schema: dict[str, Any] | None) -> Prepared:
        if not tools:
            return self.inner.prepare(model, messages, tools, step, shown, schema)
        names = [t.name for t in tools]
        return Prepared(model, to_text_mode(messages, [t.json_schema() for t in tools]),
                        lambda reply: from_text(reply, names))


def calling_for(knobs: Knobs) -> Calling:
    """The design's way of asking: held to the step with ``constrained_decoding``, in text with
    ``tool_calling: text`` (which takes precedence where tools are offered)."""
    calling: Calling = HeldToStep() if knobs.constrained_decoding else NativeCalls()
    return TextCalls(calling) if knobs.tool_calling == "text" else calling
