"""A stand-in Ollama server: ``POST /api/chat`` (NDJSON streaming and single JSON), ``/api/tags``,
``/api/show``, ``/api/version``, answered by the simulated model's brain.

Wire shapes follow the ``ollama`` python client (``ollama/_types.py``): the request carries ``model``,
``messages`` (``role``, ``content``, ``tool_calls: [{"function": {"name", "arguments": {...}}}]``; tool
results as ``role: "tool"`` with no call id, because ``Message`` drops ``tool_call_id``), ``tools``
(``[{"type": "function", "function": {"name", "description", "parameters"}}]``), ``stream``, ``options``.
A response (or each streamed line) is a ``ChatResponse``: ``model``, ``created_at``, ``message``
(``role``, ``content``, ``tool_calls``), ``done``; the last one adds ``done_reason`` and the counts
(``prompt_eval_count``, ``eval_count``) and durations in nanoseconds.

As a real Ollama does, tool calls arrive in one streamed line of their own (before the final ``done``
line), and text arrives in small pieces.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from . import StandInServer, _Handler, brain_reply, text_pieces


def _now() -> str:
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


def _content(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def _arguments(value: Any) -> dict[str, Any]:
    if isinstance(value, dict):
        return value
    if isinstance(value, str) and value.strip():
        parsed = json.loads(value)
        return parsed if isinstance(parsed, dict) else {}
    return {}


def wire_to_messages(wire: list[dict[str, Any]]) -> list[BaseMessage]:
    """Ollama chat messages to LangChain messages.

    Ollama's wire format has no tool-call ids, so calls get positional ids and each ``tool`` message is
    paired with the oldest call of the preceding assistant message that has no result yet (by
    ``tool_name`` when the client sends one).
    """
    out: list[BaseMessage] = []
    pending: list[dict[str, str]] = []  # calls waiting for a result: {"id", "name"}
    for n, m in enumerate(wire):
        role = m.get("role")
        content = _content(m.get("content"))
        if role == "system":
            out.append(SystemMessage(content))
        elif role == "user":
            out.append(HumanMessage(content))
        elif role == "assistant":
            calls = []
            for k, tc in enumerate(m.get("tool_calls") or []):
                fn = tc.get("function") or {}
                call = {"name": fn.get("name", ""), "args": _arguments(fn.get("arguments")),
                        "id": tc.get("id") or f"ollama_{n}_{k}", "type": "tool_call"}
                calls.append(call)
            pending = [{"id": c["id"], "name": c["name"]} for c in calls]
            out.append(AIMessage(content, tool_calls=calls))
        elif role == "tool":
            wanted = m.get("tool_name")
            match = next((p for p in pending if wanted and p["name"] == wanted), pending[0] if pending else None)
            if match is not None:
                pending.remove(match)
            call_id = m.get("tool_call_id") or (match["id"] if match else f"ollama_orphan_{n}")
            name = wanted or (match["name"] if match else None)
            out.append(ToolMessage(content, tool_call_id=call_id, name=name))
        else:
            raise ValueError(f"unsupported message role {role!r}")
    return out


def wire_tools(tools: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    """Ollama ``tools`` to the OpenAI-style tool dicts the brain reads (they are the same shape)."""
    out = []
    for t in tools or []:
        fn = dict(t.get("function") or {})
        fn.setdefault("parameters", {"type": "object", "properties": {}})
        out.append({"type": t.get("type") or "function", "function": fn})
    return out


def message_to_wire(reply: AIMessage) -> dict[str, Any]:
    msg: dict[str, Any] = {"role": "assistant", "content": _content(reply.content)}
    if reply.tool_calls:
        msg["tool_calls"] = [{"function": {"name": c["name"], "arguments": c["args"]}} for c in reply.tool_calls]
    return msg


class OllamaStandIn(StandInServer):
    """``with OllamaStandIn() as server: ChatOllama(base_url=server.url, ...)``."""

    name = "ollama"
    models = ("qwen2.5:7b", "llama3.1:8b")

    def error_body(self, message: str) -> Any:
        return {"error": message}

    def handle(self, handler: _Handler, method: str, path: str, body: Any) -> None:
        if path in ("/", "") and method in ("GET", "HEAD"):
            data = b"Ollama is running"
            handler.send_response(200)
            handler.send_header("Content-Type", "text/plain; charset=utf-8")
            handler.send_header("Content-Length", str(len(data)))
            handler.end_headers()
            if method == "GET":
                handler.wfile.write(data)
        elif path == "/api/version":
            handler.send_json(200, {"version": "0.0.0-standin"})
        elif path == "/api/tags":
            handler.send_json(200, {"models": [self._model_card(m) for m in self.models]})
        elif path == "/api/show" and method == "POST":
            name = (body or {}).get("model") or (body or {}).get("name") or ""
            handler.send_json(200, {"modelfile": f"FROM {name}", "parameters": "", "template": "{{ .Prompt }}",
                                    "details": self._model_card(name)["details"],
                                    "model_info": {"general.architecture": "sim"},
                                    "capabilities": ["completion", "tools"]})
        elif path == "/api/chat" and method == "POST":
            self._chat(handler, body or {})
        else:
            handler.send_json(404, {"error": f"{method} {path} not found (stand-in)"})

    @staticmethod
    def _model_card(name: str) -> dict[str, Any]:
        return {"name": name, "model": name, "modified_at": "2025-01-01T00:00:00Z", "size": 0,
                "digest": "0" * 64, "details": {"format": "gguf", "family": "sim", "families": ["sim"],
                                                "parameter_size": "0B", "quantization_level": "none"}}

    def _chat(self, handler: _Handler, body: dict[str, Any]) -> None:
        started = time.perf_counter_ns()
        model = body.get("model") or ""
        window = int((body.get("options") or {}).get("num_ctx") or self.context_window)
        reply, prompt_tokens, completion_tokens = brain_reply(wire_to_messages(body.get("messages") or []),
                                                              wire_tools(body.get("tools")), window)
        message = message_to_wire(reply)
        elapsed = max(time.perf_counter_ns() - started, 1)
        final = {"model": model, "created_at": _now(), "done": True,
                 "done_reason": "stop", "total_duration": elapsed, "load_duration": 0,
                 "prompt_eval_count": prompt_tokens, "prompt_eval_duration": elapsed // 2,
                 "eval_count": completion_tokens, "eval_duration": elapsed // 2}
        if body.get("stream", True) is False:  # the client's default (no "stream" key) is a stream
            handler.send_json(200, {**final, "message": message})
            return
        handler.send_chunked("application/x-ndjson", self._lines(model, message, final))

    @staticmethod
    def _lines(model: str, message: dict[str, Any], final: dict[str, Any]) -> Iterator[bytes]:
        def line(payload: dict[str, Any]) -> bytes:
            return json.dumps(payload, ensure_ascii=False).encode() + b"\n"

        for piece in text_pieces(message["content"]):
            yield line({"model": model, "created_at": _now(),
                        "message": {"role": "assistant", "content": piece}, "done": False})
        if message.get("tool_calls"):
            yield line({"model": model, "created_at": _now(),
                        "message": {"role": "assistant", "content": "", "tool_calls": message["tool_calls"]},
                        "done": False})
        yield line({**final, "created_at": _now(), "message": {"role": "assistant", "content": ""}})
