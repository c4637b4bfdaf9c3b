"""A simulated model that never says the same thing twice: ``reword[:<sim options>]`` (e.g. ``reword:clean``).

Real models asked the same question again (a message finished after a crash, a retried round) reword their
free text: the complaint they file says "arrived damaged (noted f5faed)" the first time and "(noted b1f531)"
the next, and each answer carries a fresh tool-call id. This model is the sim with exactly that added to every
answer: each free-text string argument (a string property of the tool's schema with no ``enum``, ``pattern``
or ``format``, holding more than one word) gets a random tag, and every tool call a random id, drawn from the
operating system's randomness so that two processes never agree. A harness that keys a change by its
arguments and asks the model again after a crash would apply it twice; ``harness bench chaos`` plays it.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from lg_harness.llm.sim import SimChatModel

_FIXED = {"enum", "pattern", "format"}  # a property with any of these holds a value, not words


def free_text_fields(tool: dict[str, Any]) -> set[str]:
    """The properties of an OpenAI tool schema that hold free text (no enum, pattern or format)."""
    props = ((tool.get("function") or {}).get("parameters") or {}).get("properties") or {}
    out = set()
    for name, schema in props.items():
        options = [schema, *(schema.get("anyOf") or [])]
        if any(s.get("type") == "string" for s in options) and not any(_FIXED & set(s) for s in options):
            out.add(name)
    return out


def reworded(call: Mapping[str, Any], free: set[str]) -> dict[str, Any]:
    """``call`` with a fresh id and every free-text argument tagged anew."""
    args = {k: (f"{v} (noted {secrets.token_hex(3)})" if k in free and isinstance(v, str) and len(v.split()) > 1
                else v) for k, v in (call.get("args") or {}).items()}
    return {**call, "args": args, "id": f"call_{secrets.token_hex(6)}"}


class RewordingSimChatModel(SimChatModel):
    """The sim, rewording its free-text arguments and renaming its calls on every answer."""

    model_name: str = "sim-reword"

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None, run_manager: Any = None,
                  **kwargs: Any) -> ChatResult:
        result = super()._generate(messages, stop, run_manager, **kwargs)
        message = result.generations[0].message
        if not isinstance(message, AIMessage) or not message.tool_calls:
            return result
        schemas = {(t.get("function") or {}).get("name"): t for t in kwargs.get("tools") or []}
        calls = [reworded(c, free_text_fields(schemas.get(c["name"]) or {})) for c in message.tool_calls]
        return ChatResult(generations=[ChatGeneration(message=message.model_copy(update={"tool_calls": calls}))])
