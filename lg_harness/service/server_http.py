"""Bodies the LangGraph server's own routes cannot take, refused with a 422 before they reach them.

``langgraph.json`` mounts this app (``"http": {"app": ..., "middleware_order": "auth_first"}``): its middleware
runs on every route of the server, after the auth hook has let the caller in, and on the runtime's own
unauthenticated developer routes, which it closes (``CLOSED``). The property-based fuzzer
(``tests/service/test_fuzz_doors.py``) found requests that ``langgraph-api``'s in-memory runtime answers with a 500: a
store search with no namespace prefix, a search by ``values`` on a thread that has none, an ``after_seconds``
too large for a date, a cron with no schedule, an offset or limit too large for an integer. Each is a client's
mistake, so it gets a 4xx that says what to send instead; nothing here decides who may do what (that is
``lg_harness/service/server_auth.py``).
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from starlette.applications import Starlette

from lg_harness.service.http_guard import refuse

MAX_DELAY_S = 365 * 24 * 3600  # a run may wait a year at most
MAX_PAGE = 10_000  # offsets and limits beyond this are no page a client needs
_CRONS = re.compile(r"^/(threads/[^/]+/)?runs/crons$")


def _bounded(name: str, value: Any, low: float, high: float) -> str | None:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and low <= value <= high
    return None if ok or value is None else f"'{name}' must be a number from {low:g} to {high:g}"


def problem(method: str, path: str, body: Any) -> str | None:
    """What is wrong with a JSON body for this route, in one line (None: nothing this module checks)."""
    docs = body if isinstance(body, list) else [body]
    for doc in docs:
        if not isinstance(doc, dict):
            continue
        found = (_bounded("after_seconds", doc.get("after_seconds"), 0, MAX_DELAY_S)
                 or _bounded("offset", doc.get("offset"), 0, MAX_PAGE) or _bounded("limit", doc.get("limit"), 0, MAX_PAGE))
        if found:
            return found
        if method == "POST" and path == "/store/items/search" and not isinstance(doc.get("namespace_prefix"), list):
            return "a store search needs 'namespace_prefix', a list of strings (e.g. [\"notes\"])"
        if method == "POST" and path in ("/threads/search", "/threads/count") and doc.get("values"):
            return "threads are searched by ids, metadata or status, not by 'values'"
        if method == "POST" and _CRONS.match(path) and not (isinstance(doc.get("schedule"), str) and doc["schedule"].strip()):
            return "a cron needs 'schedule', a cron expression such as \"0 9 * * *\""
    return None


# The in-memory runtime's own routes for its developers, served with no authentication at all: a raw read of any
# thread (/internal/debug/thread/{id}), a wipe of every store (/internal/truncate) and deploying the project
# (/deploy). The door fuzzer reached them once the server listed them; a server customers reach has neither.
CLOSED = ("/internal/", "/deploy")


class BodyRules:
    """ASGI middleware: a JSON body ``problem`` finds is answered 422 with ``{code, message, hint}``."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"].startswith(CLOSED):
            # "detail" too: the shape the LangGraph server's own errors have
            return await refuse(scope, receive, send, 404, "no such route", code="no_route",
                                hint="see /docs for the routes of this server", detail="no such route")
        if scope["type"] != "http" or scope["method"] not in ("POST", "PUT", "PATCH"):
            return await self.app(scope, receive, send)
        chunks, more = [], True
        while more:
            message = await receive()
            chunks.append(message.get("body", b""))
            more = message.get("more_body", False)
        raw = b"".join(chunks)
        try:
            body = json.loads(raw) if raw.strip() else None
        except ValueError:
            body = None  # the route's own validation answers malformed JSON
        found = problem(scope["method"], scope["path"], body)
        if found:
            return await refuse(scope, receive, send, 422, found, hint="fix the request body and send it again",
                                detail=found)

        sent = False

        async def replay() -> Any:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": raw, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


app = Starlette()
app.add_middleware(BodyRules)
