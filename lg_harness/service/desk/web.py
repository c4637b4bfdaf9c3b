"""The desk's pages on the HTTP service: threads at ``/``, a thread, a message's trace, the handoff queue, the
design's graph and the operator figures, behind the service's own authentication (``service.desk.auth``).

A browser signs in once with a desk key (``/desk/login``), kept in an ``HttpOnly`` cookie; behind a proxy
that sets the desk header, no sign-in is needed. Pages are rendered on the server (``service.desk.pages``);
the buttons call the JSON routes with the page's CSRF token (``assets/desk.js``).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

from fastapi import Request

from lg_harness.service.desk import ops, pages
from lg_harness.service.desk.auth import (
    AGENT,
    COOKIE,
    SESSION_S,
    agent_of,
    csrf_token,
    desk_login_keys,
    new_session,
)

ASSETS = Path(__file__).with_name("assets")


def add_pages(app: Any, api: Any) -> None:
    from fastapi.staticfiles import StaticFiles

    app.mount("/desk/assets", StaticFiles(directory=ASSETS), name="desk-assets")
    _sign_in_routes(app, api)
    _reading_pages(app, api)
    _thread_pages(app, api)


def signed_in(api: Any, request: Any) -> dict[str, str] | Any:
    """The page frame's ``agent`` and ``csrf`` for a desk caller; else the response to send instead (the
    sign-in page, or a refusal for a customer's key)."""
    from fastapi import HTTPException
    from fastapi.responses import HTMLResponse, RedirectResponse

    try:
        user = api.caller(request)
    except HTTPException as exc:
        if exc.status_code == 401:
            return RedirectResponse("/desk/login", status_code=303)
        raise
    if user != AGENT:
        return HTMLResponse(pages.refused_page("This key is a customer's: the desk is for the people who run the "
                                               "agent and takes a key of HARNESS_DESK_KEYS."), status_code=403)
    session = request.cookies.get(COOKIE)
    return {"agent": agent_of(request), "csrf": csrf_token(session) if session else ""}


def _sign_in_routes(app: Any, api: Any) -> None:
    from fastapi.responses import HTMLResponse, RedirectResponse

    @app.get("/desk/login", include_in_schema=False)
    async def login_form() -> Any:
        return HTMLResponse(pages.login_page())

    @app.post("/desk/login", include_in_schema=False)
    async def login(request: Request) -> Any:
        key = (parse_qs((await request.body()).decode("utf-8", "replace")).get("key") or [""])[0].strip()
        s = api.settings
        if key not in desk_login_keys(s):
            problem = ("This key is a customer's; the desk takes a key of HARNESS_DESK_KEYS."
                       if key in s.api_keys else "Unknown key.")
            return HTMLResponse(pages.login_page(problem), status_code=401)
        done = RedirectResponse("/", status_code=303)
        done.set_cookie(COOKIE, new_session(key), max_age=SESSION_S, httponly=True, samesite="strict",
                        secure=request.url.scheme == "https", path="/")
        return done

    @app.post("/desk/logout", include_in_schema=False)
    async def logout() -> Any:
        done = RedirectResponse("/desk/login", status_code=303)
        done.delete_cookie(COOKIE, path="/")
        return done


def _reading_pages(app: Any, api: Any) -> None:
    from fastapi.responses import HTMLResponse, Response

    @app.get("/", include_in_schema=False)
    async def threads(request: Request, q: str = "") -> Any:
        if not isinstance(frame := signed_in(api, request), dict):
            return frame
        rows = await asyncio.to_thread(ops.threads, api.rt.harness, q)
        return HTMLResponse(pages.threads_page(rows, q, **frame))

    @app.get("/desk/handoffs", include_in_schema=False)
    async def handoffs(request: Request) -> Any:
        if not isinstance(frame := signed_in(api, request), dict):
            return frame
        return HTMLResponse(pages.handoffs_page(await asyncio.to_thread(ops.queue, api.rt.harness), **frame))

    @app.get("/desk/stats", include_in_schema=False)
    async def figures(request: Request) -> Any:
        if not isinstance(frame := signed_in(api, request), dict):
            return frame
        return HTMLResponse(pages.figures_page(await asyncio.to_thread(ops.figures, api.rt.harness), **frame))

    drawn: dict[str, Any] = {}  # the graph does not change while the service runs: draw it once

    def draw() -> dict[str, Any]:
        if not drawn:
            from lg_harness.graphs.draw import draw_png

            h = api.rt.harness
            topology = h.graph.get_graph()
            drawn.update(png=draw_png(topology, title=f"design: {h.design.name}"), mermaid=topology.draw_mermaid(),
                         design=h.design.name)
        return drawn

    @app.get("/desk/graph", include_in_schema=False)
    async def graph(request: Request) -> Any:
        if not isinstance(frame := signed_in(api, request), dict):
            return frame
        got = await asyncio.to_thread(draw)
        return HTMLResponse(pages.graph_page(got["design"], got["mermaid"], **frame))

    @app.get("/desk/graph.png", include_in_schema=False)
    async def graph_png(request: Request) -> Any:
        if not isinstance(frame := signed_in(api, request), dict):
            return frame
        return Response((await asyncio.to_thread(draw))["png"], media_type="image/png")


def _thread_pages(app: Any, api: Any) -> None:
    from fastapi.responses import HTMLResponse

    def missing(exc: ops.DeskError, frame: dict[str, str]) -> Any:
        return HTMLResponse(pages.page("Not found", f'<h1>Not found</h1><p class="error">{pages.esc(exc)}</p>',
                                       **frame), status_code=exc.status)

    @app.get("/desk/threads/{thread_id}", include_in_schema=False)
    async def thread(thread_id: str, request: Request) -> Any:
        if not isinstance(frame := signed_in(api, request), dict):
            return frame
        try:
            view = await asyncio.to_thread(ops.thread_view, api.rt.harness, thread_id)
        except ops.DeskError as exc:
            return missing(exc, frame)
        return HTMLResponse(pages.thread_page(view, **frame))

    @app.get("/desk/threads/{thread_id}/trace", include_in_schema=False)
    async def trace(thread_id: str, request: Request, turn: int | None = None) -> Any:
        if not isinstance(frame := signed_in(api, request), dict):
            return frame
        try:
            found = await asyncio.to_thread(ops.trace, api.rt.harness, thread_id, turn)
        except ops.DeskError as exc:
            return missing(exc, frame)
        return HTMLResponse(pages.trace_page(found, **frame))
