"""The OpenAI chat-completions wire format, both ways, as the simulated model reads and writes it.

Only what that format carries crosses: roles, text content, assistant tool calls (id, name, arguments
as a JSON string), a tool message's ``tool_call_id`` and content, and the tools' JSON schemas. Anything a
client library keeps beside it (LangChain's ``ToolMessage.status``, names of artifacts) never arrives.
"""

from __future__ import annotations

import json
import re
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage


def text(content: Any) -> str:
    """Text of a content field: a string, or the text parts of a list of content parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") if isinstance(p, dict) else str(p) for p in content)
    return "" if content is None else str(content)


def _arguments(raw: Any) -> dict[str, Any]:
    if isinstance(raw, dict):
        return raw
    try:
        value = json.loads(raw or "{}")
    except (TypeError, ValueError):
        return {"__unparsed__": str(raw)}
    return value if isinstance(value, dict) else {"__unparsed__": str(raw)}


def to_messages(wire: list[dict[str, Any]]) -> list[BaseMessage]:
    """Request messages as message objects (the brain's working form)."""
    out: list[BaseMessage] = []
    for m in wire:
        role, content = m.get("role"), text(m.get("content"))
        if role in ("system", "developer"):
            out.append(SystemMessage(content))
        elif role == "user":
            out.append(HumanMessage(content))
        elif role == "assistant":
            calls = [{"name": c["function"]["name"], "args": _arguments(c["function"].get("arguments")),
                      "id": c.get("id") or "", "type": "tool_call"} for c in m.get("tool_calls") or []]
            out.append(AIMessage(content, tool_calls=calls))
        elif role == "tool":
            out.append(ToolMessage(content, tool_call_id=m.get("tool_call_id") or ""))
        else:
            raise ValueError(f"unknown message role {role!r}: expected system, developer, user, assistant or tool")
    return out


def tool_call_json(name: str, args: dict[str, Any]) -> str:
    return json.dumps({"name": name, "arguments": args}, ensure_ascii=False)


def assistant_message(reply: AIMessage, *, native: bool, prefix: str = "") -> dict[str, Any]:
    """The brain's reply as a wire message: native ``tool_calls``, or (when the request carried no tool
    schemas) calls written in the text the way chat-tuned open models write them."""
    calls = reply.tool_calls
    broken = bool(reply.additional_kwargs.get("broken_json"))
    if not calls:
        return {"role": "assistant", "content": text(reply.content)}
    if not native:
        lines = [f"<tool_call>\n{tool_call_json(c['name'], c['args'])}\n</tool_call>" for c in calls]
        if broken:
            lines[0] = lines[0][: lines[0].rindex("}")]  # cut off: the model stopped mid-object
        return {"role": "assistant", "content": prefix + "\n".join(lines)}
    wire_calls = []
    for i, c in enumerate(calls):
        arguments = json.dumps(c["args"], ensure_ascii=False)
        if broken and i == 0:
            arguments = arguments[:-1]
        wire_calls.append({"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": arguments}})
    return {"role": "assistant", "content": text(reply.content) or None, "tool_calls": wire_calls}


_HEADING = re.compile(r"^\W*(?:available\s+)?(?:tools|functions)\b.*:?\s*$", re.I)
_LISTED = re.compile(r"^\s*[-*]\s+`?(\w+)`?\s*[:(—-]\s*(.*)$")
_ARG = re.compile(r"^\s{2,}[-*]?\s*`?(\w+)`?\s*\(([^)]*)\)")


def tools_in_text(system: str) -> list[dict[str, Any]]:
    """Tools a prompt describes in words, for a request that carries no schemas: JSON function schemas
    anywhere in it, else a bulleted listing under a heading that names tools or functions."""
    found = [t for t in _json_functions(system)]
    if found:
        return found
    tools: list[dict[str, Any]] = []
    lines = system.splitlines()
    start = next((i + 1 for i, line in enumerate(lines) if _HEADING.match(line.strip())), len(lines))
    for line in lines[start:]:
        if (m := _ARG.match(line)) and tools:
            params = tools[-1]["function"]["parameters"]
            params["properties"][m.group(1)] = {"description": m.group(2)}
            if re.search(r"\brequired\b", m.group(2)):
                params["required"].append(m.group(1))
        elif m := _LISTED.match(line):
            tools.append({"type": "function", "function": {"name": m.group(1), "description": m.group(2),
                                                           "parameters": {"properties": {}, "required": []}}})
    return tools


def _json_functions(textual: str) -> list[dict[str, Any]]:
    out, decoder, i = [], json.JSONDecoder(), 0
    while (i := textual.find("{", i)) != -1:
        try:
            value, end = decoder.raw_decode(textual, i)
        except ValueError:
            i += 1
            continue
        fn = value.get("function", value) if isinstance(value, dict) else None
        if isinstance(fn, dict) and isinstance(fn.get("name"), str) and isinstance(fn.get("parameters"), dict):
            out.append({"type": "function", "function": fn})
        i = end
    return out
