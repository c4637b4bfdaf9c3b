"""The desk's JSON routes on the HTTP service, the pages (``service.desk.web``) and Swagger UI at ``/docs``.

The routes are the ones the pages' scripts call and ``harness handoff`` mirrors (one code path:
``service.desk.ops``): the thread list, a thread's live transcript (server-sent events) and a message's trace,
take and release a handoff (answer is ``POST /handoffs/{id}/reply`` beside ``GET /handoffs``), the operator
figures. A customer sees only their own threads; the rest is the desk's.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from fastapi import Request

from lg_harness.service.desk import ops
from lg_harness.service.desk.auth import AGENT, agent_of
from lg_harness.service.thread_names import public_id

LIVE_POLL_S = 0.4  # how often the live transcript looks for new rows
LIVE_SPAN_S = 25.0  # one live response lasts this long; the browser's EventSource reconnects from the last id


def add_desk(app: Any, api: Any) -> None:
    """Register the desk's routes, pages and local Swagger UI on ``app`` (``service.http.create_app``)."""
    from lg_harness.service.desk.web import add_pages
    from lg_harness.service.http_errors import error_response

    @app.exception_handler(ops.DeskError)
    async def desk_error(request: Any, exc: ops.DeskError) -> Any:
        return error_response(exc.status, exc, code="desk_conflict" if exc.status == 409 else None)

    _thread_routes(app, api)
    _handoff_routes(app, api)
    _docs(app)
    add_pages(app, api)


def desk_dependency(api: Any) -> Any:
    """A FastAPI dependency: the desk agent's name, or 403 for anyone else."""
    from fastapi import Depends, HTTPException

    def desk(request: Request, user: str = Depends(api.caller)) -> str:
        if user != AGENT:
            raise HTTPException(403, "only the desk may do this (it signs in with a key of HARNESS_DESK_KEYS)")
        return agent_of(request)

    return desk


def _thread_routes(app: Any, api: Any) -> None:
    from fastapi import Depends
    from fastapi.responses import StreamingResponse

    desk = desk_dependency(api)

    @app.get("/threads", summary="Threads by last activity (a customer sees only their own); `q` searches the "
             "thread id or the user")
    async def thread_list(q: str = "", limit: int = 100, user: str = Depends(api.caller)) -> Any:
        owner = "" if user == AGENT else user
        rows = await asyncio.to_thread(ops.threads, api.rt.harness, q, owner, max(1, min(limit, 500)))
        return {"threads": [{**r, "thread_id": public_id(user, r["thread_id"])} for r in rows]}

    @app.get("/threads/{thread_id}/live", summary="The transcript as it grows (server-sent events: `message` "
             "rows with their `seq` as event id, `status` when the thread's phase or handoff changes)")
    async def live(thread_id: str, request: Request, after: int = 0, user: str = Depends(api.caller)) -> Any:
        tid = await asyncio.to_thread(api.thread_for, thread_id, user)
        await asyncio.to_thread(ops.require_thread, api.rt.harness, tid)
        last = request.headers.get("last-event-id", "")
        start = int(last) if last.isdigit() else after
        return StreamingResponse(live_events(api.rt.harness, tid, start, request),
                                 media_type="text/event-stream", headers={"Cache-Control": "no-store"})

    @app.get("/threads/{thread_id}/trace", summary="One message's spans (`turn`; default the latest), as "
             "`harness trace --json`")
    async def thread_trace(thread_id: str, turn: int | None = None, user: str = Depends(api.caller)) -> Any:
        tid = await asyncio.to_thread(api.thread_for, thread_id, user)
        found = await asyncio.to_thread(ops.trace, api.rt.harness, tid, turn)
        return {**found, "thread_id": thread_id} if "thread_id" in found else found

    @app.get("/stats", summary="Operator figures, as `harness stats --json` (no personal data)")
    async def stats(agent: str = Depends(desk)) -> Any:
        return await asyncio.to_thread(ops.figures, api.rt.harness)


def _handoff_routes(app: Any, api: Any) -> None:
    from fastapi import Depends

    desk = desk_dependency(api)

    @app.post("/handoffs/{thread_id}/take", summary="Take a waiting or held thread (as `harness handoff take`)")
    async def take(thread_id: str, agent: str = Depends(desk)) -> Any:
        return await asyncio.to_thread(ops.take, api.rt.harness, agent, thread_id)

    @app.post("/handoffs/{thread_id}/release", summary="Hand a held thread back to the bot (as `harness handoff "
              "release`)")
    async def release(thread_id: str, agent: str = Depends(desk)) -> Any:
        return await asyncio.to_thread(ops.release, api.rt.harness, agent, thread_id,
                                       supervisor=agent in api.settings.desk_supervisors)


def _docs(app: Any) -> None:
    """Swagger UI from the ``fastapi-offline`` package's copy of its assets: ``/docs`` works offline."""
    import fastapi_offline
    from fastapi.openapi.docs import get_swagger_ui_html
    from fastapi.staticfiles import StaticFiles

    app.mount("/docs/assets", StaticFiles(directory=Path(fastapi_offline.__file__).parent / "static"),
              name="docs-assets")

    @app.get("/docs", include_in_schema=False)
    async def docs() -> Any:
        return get_swagger_ui_html(openapi_url=app.openapi_url, title="lg-harness - Swagger UI",
                                   swagger_js_url="/docs/assets/swagger-ui-bundle.js",
                                   swagger_css_url="/docs/assets/swagger-ui.css",
                                   swagger_favicon_url="/docs/assets/favicon.png")


def live_status(h: Any, thread_id: str) -> dict[str, Any]:
    values = h.graph.get_state(h.config(thread_id)).values
    status = ops.handoff_status(h, thread_id)
    return {"phase": values.get("phase"), "turn": int(values.get("turn") or 0), "handoff": status,
            "taken_by": ops.taken_by(h, thread_id) if status else None}


async def live_events(h: Any, thread_id: str, after: int, request: Any) -> AsyncIterator[str]:
    """New transcript rows and status changes for ``LIVE_SPAN_S`` seconds (the client then reconnects)."""
    yield "retry: 1000\n\n"
    shown: dict[str, Any] | None = None
    deadline = time.monotonic() + LIVE_SPAN_S
    while time.monotonic() < deadline and not await request.is_disconnected():
        rows = await asyncio.to_thread(h.transcripts.read, thread_id)
        for row in (r for r in rows if r["seq"] > after):
            after = row["seq"]
            yield f"id: {after}\nevent: message\ndata: {json.dumps(row, ensure_ascii=False)}\n\n"
        status = await asyncio.to_thread(live_status, h, thread_id)
        if status != shown:
            shown = status
            yield f"event: status\ndata: {json.dumps(status, ensure_ascii=False)}\n\n"
        await asyncio.sleep(LIVE_POLL_S)
