"""Local stand-ins for model servers, driven by the simulated model's brain.

Each stand-in is a real HTTP server on 127.0.0.1 (an ephemeral port, stdlib ``http.server`` in a daemon
thread) that speaks a provider's wire protocol, so the real client libraries (``ollama`` /
``langchain-ollama``, ``openai`` / ``langchain-openai``) are exercised end to end without a network.
The answers come from the simulated model (``simlm``, fault-free): the wire messages and tool schemas are
converted to LangChain messages, the model answers, and the answer is converted back to the wire format.

Every request is recorded (``server.requests``: method, path, JSON body, headers with lower-case names) so tests can assert what the client really sent.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage


def brain_reply(messages: Sequence[BaseMessage], tools: list[dict[str, Any]],
                context_window: int = 4096) -> tuple[AIMessage, int, int]:
    """The simulated model's answer and (prompt tokens, completion tokens), as ``SimChatModel`` counts them.

    Like a real server, the input is cut to the context window (system kept, oldest turns dropped) first.
    """
    from lg_harness.llm.sim import SimChatModel

    model = SimChatModel(faults="clean", context_window=context_window)
    reply = (model.bind_tools(tools) if tools else model).invoke(list(messages))
    usage = reply.usage_metadata or {}
    prompt = int(usage.get("input_tokens", 0)) - int(reply.response_metadata.get("truncated_tokens", 0))
    return reply, prompt, int(usage.get("output_tokens", 0))


def text_pieces(text: str, size: int = 2) -> list[str]:
    """``text`` cut into pieces of ``size`` words (whitespace kept), as a server streams tokens."""
    if not text:
        return []
    words = text.split(" ")
    out = []
    for i in range(0, len(words), size):
        piece = " ".join(words[i:i + size])
        out.append(piece if i + size >= len(words) else piece + " ")
    return out


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        pass  # keep test output clean

    def _body(self) -> Any:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if not raw:
            return None
        try:
            return json.loads(raw)
        except ValueError:
            return raw.decode("utf-8", "replace")

    def _dispatch(self, method: str) -> None:
        body = self._body() if method == "POST" else None
        path = self.path.split("?", 1)[0]
        self.server.owner.record(method, path, body, {k.lower(): v for k, v in self.headers.items()})
        try:
            self.server.owner.handle(self, method, path, body)
        except Exception as err:  # noqa: BLE001 - a broken brain must show up as an HTTP error, not a hang
            self.server.owner.errors.append(f"{type(err).__name__}: {err}")
            self.send_json(500, self.server.owner.error_body(f"stand-in failed: {type(err).__name__}: {err}"))

    def do_GET(self) -> None:  # noqa: N802 - stdlib naming
        self._dispatch("GET")

    def do_POST(self) -> None:  # noqa: N802
        self._dispatch("POST")

    def do_HEAD(self) -> None:  # noqa: N802
        self._dispatch("HEAD")

    # -- responses

    def send_json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload, ensure_ascii=False).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)

    def send_chunked(self, content_type: str, pieces: Iterable[bytes]) -> None:
        """A streamed body in HTTP/1.1 chunked transfer encoding, flushed piece by piece."""
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Cache-Control", "no-cache")
        self.end_headers()
        for piece in pieces:
            if piece:
                self.wfile.write(f"{len(piece):X}\r\n".encode() + piece + b"\r\n")
                self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    owner: StandInServer


class StandInServer:
    """Base: start/stop, request recording; subclasses implement ``handle``."""

    name = "stand-in"

    def __init__(self, context_window: int = 4096) -> None:
        self.context_window = context_window
        self.requests: list[dict[str, Any]] = []
        self.errors: list[str] = []
        self._lock = threading.Lock()
        self._httpd: _Server | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle

    def start(self) -> StandInServer:
        self._httpd = _Server(("127.0.0.1", 0), _Handler)
        self._httpd.owner = self
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        name=f"{self.name}-server", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> StandInServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._httpd is not None, "server not started"
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    # -- recording

    def record(self, method: str, path: str, body: Any, headers: dict[str, str]) -> None:
        with self._lock:
            self.requests.append({"method": method, "path": path, "body": body, "headers": headers})

    def requests_to(self, path: str) -> list[dict[str, Any]]:
        with self._lock:
            return [r for r in self.requests if r["path"] == path]

    def clear(self) -> None:
        with self._lock:
            self.requests.clear()
            self.errors.clear()

    # -- to override

    def handle(self, handler: _Handler, method: str, path: str, body: Any) -> None:  # pragma: no cover
        raise NotImplementedError

    def error_body(self, message: str) -> Any:
        return {"error": message}
