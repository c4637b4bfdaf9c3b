"""Tools from an MCP server, through LangChain's MCP integration (``langchain-mcp-adapters``).

``mcp_tools("python server.py")`` (a command: the server over stdio) or ``mcp_tools("http://host:8000/mcp")``
(streamable HTTP) opens one session to the server, kept open on a background event loop for as long as the
process runs, and returns the server's tools as LangChain tools for ``Domain(tools=...)``. Each carries the
server's JSON schema as its ``args_schema`` (validated on our side before every call: ``tools.json_schema``)
and the server's annotations as its ``metadata`` (``readOnlyHint``, ``destructiveHint``, ``idempotentHint``:
``tools.registry`` reads which tools change the world from them). A call goes through the adapters' tool over
the shared session; an error the server reports comes back as a ``ToolException`` (the executor's
``business`` class), a result as the JSON it holds, else its text.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import json
import shlex
import threading
from collections.abc import Mapping
from concurrent.futures import Future
from typing import Any

from langchain_core.tools import BaseTool, StructuredTool, ToolException

from lg_harness.errors import UsageError

DEFAULT_TIMEOUT_S = 60.0


def connection_for(target: str | Mapping[str, Any]) -> dict[str, Any]:
    """An adapters connection for ``target``: an ``http(s)://`` URL (streamable HTTP), a command line (stdio),
    or a connection dict as ``langchain-mcp-adapters`` takes it (passed through)."""
    if isinstance(target, Mapping):
        return dict(target)
    text = target.strip()
    if text.startswith(("http://", "https://")):
        return {"transport": "streamable_http", "url": text}
    argv = shlex.split(text)
    if not argv:
        raise UsageError("an MCP server needs a command (stdio) or an http(s):// URL")
    return {"transport": "stdio", "command": argv[0], "args": argv[1:]}


class McpSession:
    """One session to an MCP server, held open by a task on a background event loop.

    The MCP client's streams are bound to the task that opened them, so one task opens the session, keeps
    it and closes it; tool calls from any thread are scheduled on the same loop.
    """

    def __init__(self, connection: dict[str, Any], timeout: float = DEFAULT_TIMEOUT_S) -> None:
        self.connection, self.timeout = connection, timeout
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="mcp-session", daemon=True)
        self._thread.start()
        self._opened: Future[Any] = Future()
        self._closing: asyncio.Event | None = None
        self._task = asyncio.run_coroutine_threadsafe(self._hold(), self._loop)
        try:
            self.server_name, self.tools = self._opened.result(timeout)
        except BaseException:
            self.close()
            raise
        atexit.register(self.close)

    async def _hold(self) -> None:
        from langchain_mcp_adapters.sessions import create_session
        from langchain_mcp_adapters.tools import load_mcp_tools

        self._closing = asyncio.Event()
        try:
            async with create_session(self.connection) as session:  # type: ignore[arg-type]
                info = await session.initialize()
                tools = await load_mcp_tools(session)
                self._opened.set_result((info.serverInfo.name, tools))
                await self._closing.wait()
        except BaseException as err:  # noqa: BLE001 - handed to the thread that waits for the session
            if not self._opened.done():
                self._opened.set_exception(err)
            else:
                raise

    def call(self, tool: BaseTool, args: dict[str, Any]) -> Any:
        """Run ``tool`` (one of ``self.tools``) on the session's loop; its result, or ``ToolException``."""
        call = {"type": "tool_call", "name": tool.name, "args": args, "id": "mcp-call"}
        message = asyncio.run_coroutine_threadsafe(tool.ainvoke(call), self._loop).result(self.timeout)
        text = _text(message.content)
        if getattr(message, "status", "success") == "error":
            raise ToolException(text or f"{tool.name} failed")
        artifact = getattr(message, "artifact", None) or {}
        try:
            return json.loads(text)
        except ValueError:
            return artifact.get("structured_content") if artifact.get("structured_content") is not None else text

    def close(self) -> None:
        """End the session (the server process of a stdio session exits) and stop the loop."""
        if self._loop.is_closed():
            return
        atexit.unregister(self.close)
        if self._closing is not None:
            self._loop.call_soon_threadsafe(self._closing.set)
        # closing: a session that failed to open, or whose server died, has nothing left to end
        with contextlib.suppress(BaseException):
            self._task.result(5)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)
        self._loop.close()


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(b.get("text", "") if isinstance(b, dict) else str(b) for b in content or ())


def _wrapped(session: McpSession, tool: BaseTool) -> StructuredTool:
    """A synchronous LangChain tool with ``tool``'s name, description, schema and annotations that calls it
    over ``session`` (the executor runs it under its own deadline)."""

    def run(**kwargs: Any) -> Any:
        return session.call(tool, kwargs)

    if tool.args_schema is None:  # never: the adapter gives every tool the server's input schema
        raise UsageError(f"MCP tool {tool.name!r} has no args schema")
    return StructuredTool(name=tool.name, description=tool.description or "", args_schema=tool.args_schema,
                          func=run, metadata=dict(tool.metadata or {}))


class McpTools(list):
    """The tools of one server (a list), and its session: ``close()`` ends it (else the process's exit does);
    ``with mcp_tools(...) as tools:`` closes it at the end of the block."""

    def __init__(self, tools: list[StructuredTool], session: McpSession) -> None:
        super().__init__(tools)
        self.session = session

    def close(self) -> None:
        self.session.close()

    def __enter__(self) -> McpTools:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def mcp_tools(target: str | Mapping[str, Any], *, timeout: float = DEFAULT_TIMEOUT_S) -> McpTools:
    """The tools of the MCP server at ``target`` (a command line, an ``http(s)://`` URL or an adapters
    connection dict), as LangChain tools for ``Domain(tools=...)``.

    Raises:
        ConnectionError: The server could not be started or reached, or did not list its tools in time.
    """
    connection = connection_for(target)
    try:
        session = McpSession(connection, timeout)
    except Exception as err:  # noqa: BLE001 - one clear message for every way a server fails to answer
        raise ConnectionError(f"MCP server {target!r} did not answer ({type(err).__name__}: {err})") from err
    tools = [_wrapped(session, t) for t in session.tools]
    for t in tools:
        t.metadata = {**(t.metadata or {}), "mcp_server": session.server_name}
    return McpTools(tools, session)


__all__ = ["McpSession", "McpTools", "connection_for", "mcp_tools"]
