"""Tool calling in plain text, for models without native tool calls.

The harness side: ``to_text_mode`` adds the calling instructions to the prompt, and ``from_text`` turns the
model's ``TOOL: name(...)`` lines into native tool calls (or a parse error the model gets to repair).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, SystemMessage

from lg_harness.tools.textcalls import TextCallParseError, format_tool_call_instructions, parse_tool_calls

PARSE_ERROR_TOOL = "unparsed_tool_call"  # stands for a call the harness could not read


def to_text_mode(messages: Sequence[BaseMessage], tools: Sequence[dict[str, Any]]) -> list[BaseMessage]:
    """The messages with the tool-calling instructions appended to the system message."""
    instructions = format_tool_call_instructions(list(tools))
    out = list(messages)
    if out and isinstance(out[0], SystemMessage):
        out[0] = SystemMessage(f"{out[0].content}\n\n{instructions}")
    else:
        out.insert(0, SystemMessage(instructions))
    return out


def from_text(reply: AIMessage, known: Sequence[str]) -> AIMessage:
    """Native tool calls from ``TOOL:`` lines; a malformed call becomes a call the executor rejects."""
    text = reply.text if isinstance(reply.text, str) else str(reply.content)
    try:
        calls = parse_tool_calls(text, known_tools=list(known))
        tool_calls = [{"name": c.name, "args": c.args, "id": _id(c.raw, i), "type": "tool_call"}
                      for i, c in enumerate(calls)]
    except TextCallParseError as err:
        tool_calls = [{"name": PARSE_ERROR_TOOL, "args": {"error": str(err)}, "id": _id(text, 0), "type": "tool_call"}]
    if not tool_calls:
        return reply
    return AIMessage("", tool_calls=tool_calls, usage_metadata=reply.usage_metadata,
                     response_metadata=reply.response_metadata)


def _id(raw: str, i: int) -> str:
    return "text_" + hashlib.sha1(f"{i}:{raw}".encode()).hexdigest()[:16]


def invalid_as_calls(reply: AIMessage) -> AIMessage:
    """Tool calls a provider could not parse (``invalid_tool_calls``: arguments that are not JSON) as calls
    the executor rejects, so the model hears what was wrong instead of the turn ending in silence."""
    bad = [{"name": PARSE_ERROR_TOOL, "args": {"error": f"arguments of {c.get('name') or 'a call'} are not valid JSON: "
                                               f"{(c.get('args') or '')[:200]}"},
            "id": c.get("id") or _id(str(c.get("args")), i), "type": "tool_call"}
           for i, c in enumerate(reply.invalid_tool_calls)]
    return reply.model_copy(update={"tool_calls": [*reply.tool_calls, *bad], "invalid_tool_calls": []})
