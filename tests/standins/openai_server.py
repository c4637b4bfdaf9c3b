"""A stand-in OpenAI-compatible server: ``POST /v1/chat/completions`` (JSON, and ``stream: true`` as
server-sent events) and ``GET /v1/models``, answered by the simulated model's brain.

Wire shapes follow the ``openai`` client's types (``openai/types/chat``): the request carries ``model``,
``messages`` (``system``/``developer``/``user`` with string or text-part content; ``assistant`` with
``tool_calls: [{"id", "type": "function", "function": {"name", "arguments": "<json string>"}}]``;
``tool`` with ``tool_call_id``), ``tools``, ``stream``, ``stream_options.include_usage``. A response is a
``ChatCompletion`` (``choices[0].message``, ``finish_reason`` ``"tool_calls"`` or ``"stop"``, ``usage``
with ``prompt_tokens``/``completion_tokens``/``total_tokens``); a stream is ``ChatCompletionChunk``
events: the role, text deltas, tool-call deltas (the first with ``id``, ``type`` and ``name``, then the
arguments string in pieces), the chunk with ``finish_reason``, a usage chunk with empty ``choices`` when
asked for, then ``data: [DONE]``.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Iterator
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from . import StandInServer, _Handler, brain_reply, text_pieces


def _content(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list):  # content parts
        return "".join(p.get("text", "") if isinstance(p, dict) else str(p) for p in value)
    return json.dumps(value, ensure_ascii=False)


def wire_to_messages(wire: list[dict[str, Any]]) -> list[BaseMessage]:
    out: list[BaseMessage] = []
    for m in wire:
        role = m.get("role")
        content = _content(m.get("content"))
        if role in ("system", "developer"):
            out.append(SystemMessage(content))
        elif role == "user":
            out.append(HumanMessage(content))
        elif role == "assistant":
            calls = []
            for tc in m.get("tool_calls") or []:
                fn = tc.get("function") or {}
                raw = fn.get("arguments") or "{}"
                args = json.loads(raw) if isinstance(raw, str) else dict(raw)
                calls.append({"name": fn.get("name", ""), "args": args, "id": tc.get("id"), "type": "tool_call"})
            out.append(AIMessage(content, tool_calls=calls))
        elif role == "tool":
            out.append(ToolMessage(content, tool_call_id=m.get("tool_call_id") or ""))
        else:
            raise ValueError(f"unsupported message role {role!r}")
    return out


def wire_tools(tools: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    out = []
    for t in tools or []:
        if t.get("type", "function") != "function":
            continue
        fn = dict(t.get("function") or {})
        fn.setdefault("parameters", {"type": "object", "properties": {}})
        out.append({"type": "function", "function": fn})
    return out


def wire_tool_calls(reply: AIMessage) -> list[dict[str, Any]]:
    return [{"id": c.get("id") or f"call_{i}", "type": "function",
             "function": {"name": c["name"], "arguments": json.dumps(c["args"], ensure_ascii=False)}}
            for i, c in enumerate(reply.tool_calls)]


class OpenAIStandIn(StandInServer):
    """``with OpenAIStandIn() as server: ChatOpenAI(base_url=server.base_url, api_key="x", ...)``."""

    name = "openai"
    models = ("gpt-4o-mini", "deepseek-chat")

    @property
    def base_url(self) -> str:
        return self.url + "/v1"

    def error_body(self, message: str) -> Any:
        return {"error": {"message": message, "type": "server_error", "param": None, "code": None}}

    def handle(self, handler: _Handler, method: str, path: str, body: Any) -> None:
        if not (handler.headers.get("Authorization") or "").startswith("Bearer "):
            handler.send_json(401, {"error": {"message": "missing API key", "type": "invalid_request_error",
                                              "param": None, "code": "invalid_api_key"}})
        elif path == "/v1/models" and method == "GET":
            handler.send_json(200, {"object": "list", "data": [
                {"id": m, "object": "model", "created": 0, "owned_by": "stand-in"} for m in self.models]})
        elif path == "/v1/chat/completions" and method == "POST":
            self._completions(handler, body or {})
        else:
            handler.send_json(404, {"error": {"message": f"{method} {path} not found (stand-in)",
                                              "type": "invalid_request_error", "param": None, "code": None}})

    def _completions(self, handler: _Handler, body: dict[str, Any]) -> None:
        model = body.get("model") or ""
        reply, prompt_tokens, completion_tokens = brain_reply(wire_to_messages(body.get("messages") or []),
                                                              wire_tools(body.get("tools")), self.context_window)
        calls = wire_tool_calls(reply)
        text = _content(reply.content)
        finish = "tool_calls" if calls else "stop"
        usage = {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                 "total_tokens": prompt_tokens + completion_tokens}
        created = int(time.time())
        digest = hashlib.sha1(json.dumps(body.get("messages"), sort_keys=True).encode()).hexdigest()[:24]
        completion_id = f"chatcmpl-{digest}"
        if not body.get("stream"):
            message: dict[str, Any] = {"role": "assistant", "content": text if (text or not calls) else None,
                                       "refusal": None}
            if calls:
                message["tool_calls"] = calls
            handler.send_json(200, {"id": completion_id, "object": "chat.completion", "created": created,
                                    "model": model, "system_fingerprint": "fp_standin",
                                    "choices": [{"index": 0, "message": message, "finish_reason": finish,
                                                 "logprobs": None}],
                                    "usage": usage})
            return
        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        head = {"id": completion_id, "object": "chat.completion.chunk", "created": created, "model": model,
                "system_fingerprint": "fp_standin"}
        handler.send_chunked("text/event-stream; charset=utf-8",
                             self._events(head, text, calls, finish, usage if include_usage else None))

    @staticmethod
    def _events(head: dict[str, Any], text: str, calls: list[dict[str, Any]], finish: str,
                usage: dict[str, int] | None) -> Iterator[bytes]:
        def event(choices: list[dict[str, Any]], **extra: Any) -> bytes:
            payload = {**head, "choices": choices, **extra}
            return b"data: " + json.dumps(payload, ensure_ascii=False).encode() + b"\n\n"

        def delta(d: dict[str, Any], finish_reason: str | None = None) -> list[dict[str, Any]]:
            return [{"index": 0, "delta": d, "finish_reason": finish_reason, "logprobs": None}]

        yield event(delta({"role": "assistant", "content": "", "refusal": None}))
        for piece in text_pieces(text):
            yield event(delta({"content": piece}))
        for index, call in enumerate(calls):
            yield event(delta({"tool_calls": [{"index": index, "id": call["id"], "type": "function",
                                               "function": {"name": call["function"]["name"], "arguments": ""}}]}))
            args = call["function"]["arguments"]
            step = max(1, len(args) // 3 + 1)  # arguments arrive as partial JSON, as from a real server
            for start in range(0, len(args), step):
                yield event(delta({"tool_calls": [{"index": index,
                                                   "function": {"arguments": args[start:start + step]}}]}))
        yield event(delta({}, finish))
        if usage is not None:
            yield event([], usage=usage)
        yield b"data: [DONE]\n\n"
