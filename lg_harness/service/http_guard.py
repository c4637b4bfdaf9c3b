"""The HTTP service's doors: every bad request gets a 4xx with one line saying what was wrong, never a 500.

``install`` puts the ``Doorman`` in front (bodies capped before they are read, a credential before any body
is parsed) and adds to the app a check every route passes first (``guard``: the ids in the path, and the JSON
body: no unpaired surrogates, which no store can keep, and no field that would say who the caller is or what
role they have: those come from the key or the proxy, and from the domain's record of the user) and handlers
that answer every error in one shape (``service.http_errors``), FastAPI's validation errors in one line.
"""

from __future__ import annotations

import json
from typing import Any

from fastapi import HTTPException, Request

from lg_harness.errors import HarnessError
from lg_harness.graphs.thread_ids import check_thread_id
from lg_harness.service.desk.auth import identify
from lg_harness.service.http_errors import error_response, install_error_handlers

IDENTITY_FIELDS = ("user_id", "user", "role")  # who the caller is comes from authentication, never the body
MAX_ID = 2**63 - 1  # the largest row id either database stores


def unknown_thread(thread_id: str) -> HTTPException:
    """The one answer for a thread that does not exist and for another user's thread."""
    return HTTPException(404, f"unknown thread '{thread_id}': none of your threads has this id")


def _surrogate(value: Any) -> str | None:
    """The first string in a JSON value that holds an unpaired surrogate, if any."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return value
        return None
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        if (found := _surrogate(key) if isinstance(key, str) else None) or (found := _surrogate(item)):
            return found
    return None


def check_path(params: dict[str, Any]) -> None:
    if "thread_id" in params:
        try:
            check_thread_id(params["thread_id"])
        except HarnessError as err:
            raise HTTPException(400, str(err)) from None
    if "message_id" in params:
        raw = str(params["message_id"])
        if not raw.isdigit() or int(raw) > MAX_ID:
            # repr: a newline or control character in the path stays visible and the reason stays one line
            raise HTTPException(404, f"unknown message {raw[:40]!r}: message ids are the numbers the service "
                                "returned as message_id")


async def check_body(request: Request) -> None:
    raw = await request.body()
    if not raw:
        return
    try:
        doc = json.loads(raw)
    except ValueError:
        return  # FastAPI's own parsing answers it (a validation error, one line below)
    if _surrogate(doc) is not None:
        raise HTTPException(400, "the request holds an unpaired surrogate (a lone \\ud800-\\udfff escape); "
                                 "send valid UTF-8 text")
    claimed = [f for f in IDENTITY_FIELDS if isinstance(doc, dict) and f in doc]
    if claimed:
        raise HTTPException(403, f"'{claimed[0]}' is not a request field: who you are comes from your key, and "
                                 "your role from the domain's record of you")


async def guard(request: Request) -> None:
    """Run before every route: ids in the path, then the body."""
    check_path(request.path_params)
    if request.method in ("POST", "PUT", "PATCH"):
        await check_body(request)


DEFAULT_MAX_BODY = 1 << 20  # 1 MiB: a message is at most a few thousand characters (knob max_message_chars)
# The routes that read a credential from the body itself, or end a session: they cannot authenticate first.
OPEN_POSTS = ("/desk/login", "/desk/logout")


class BodyTooLarge(Exception):
    pass


async def refuse(scope: Any, receive: Any, send: Any, status: int, message: str, **given: Any) -> None:
    """Answer from ASGI middleware, before any route, in the service's one error shape."""
    await error_response(status, message, **given)(scope, receive, send)


class Doorman:
    """ASGI middleware in front of every route: a body larger than the cap is refused (413) before it is read,
    from its Content-Length or as it streams in, and a request that carries a body must present a credential
    this service knows before any of it is read or parsed (401/403): nobody makes the service buffer or parse
    megabytes without a key."""

    def __init__(self, app: Any, settings: Any) -> None:
        self.app, self.settings, self.cap = app, settings, settings.max_body_bytes

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] not in ("POST", "PUT", "PATCH"):
            return await self.app(scope, receive, send)
        from starlette.requests import Request

        request = Request(scope)
        length = request.headers.get("content-length", "")
        if length.isdigit() and int(length) > self.cap:
            return await refuse(scope, receive, send, 413, self.too_large())
        if scope["path"] not in OPEN_POSTS and (refusal := self.unknown_caller(request)) is not None:
            return await refuse(scope, receive, send, *refusal)
        seen, started = 0, False

        async def counted() -> Any:
            nonlocal seen
            message = await receive()
            seen += len(message.get("body", b"")) if message["type"] == "http.request" else 0
            if seen > self.cap:
                raise BodyTooLarge
            return message

        async def sending(message: Any) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, counted, sending)
        except BodyTooLarge:
            if not started:
                await refuse(scope, receive, send, 413, self.too_large())

    def too_large(self) -> str:
        return (f"the request body is over {self.cap:,} bytes (HARNESS_MAX_BODY_BYTES); send a shorter message "
                "or split it")

    def unknown_caller(self, request: Any) -> tuple[int, str] | None:
        from fastapi import HTTPException

        try:
            if identify(self.settings, request) is None:
                return 401, "authenticate with Authorization: Bearer <key> before sending a body"
        except HTTPException as exc:
            return exc.status_code, str(exc.detail)
        return None



def install(app: Any, settings: Any) -> None:
    from fastapi import Depends

    app.add_middleware(Doorman, settings=settings)
    app.router.dependencies.append(Depends(guard))
    install_error_handlers(app)  # validation errors among them, as one line
