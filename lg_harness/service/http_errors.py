"""One shape for every error the HTTP service answers: ``{"code": ..., "message": ..., "hint": ...}``.

``code`` is a word a client can branch on (``unknown``-style ids stay in ``message``), ``message`` says what was
wrong in one line, ``hint`` what to do about it. Every 4xx and 5xx takes it: FastAPI's ``HTTPException`` and
validation errors, the harness's own errors, the desk's refusals, the ``Doorman``'s refusals before a body is
read, a message that failed or was cancelled (with its ``message_id``), and anything unexpected (500). Before
this, the service answered ``{"detail": ...}``, FastAPI's validation text and ``{"error": ...}`` by turns.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# The code of a status when the raiser named none.
CODES = {400: "invalid_request", 401: "unauthenticated", 403: "forbidden", 404: "not_found",
         405: "method_not_allowed", 409: "conflict", 413: "body_too_large", 422: "invalid_request",
         500: "internal", 503: "unavailable"}

HINTS = {
    "invalid_request": "fix the request as the message says; every route and its body are described at /docs",
    "unauthenticated": "send Authorization: Bearer <key> with a key the service knows (HARNESS_API_KEYS for "
                       "customers, HARNESS_DESK_KEYS for the desk)",
    "forbidden": "use a key allowed to do this: the desk's routes take a desk key (HARNESS_DESK_KEYS), /metrics "
                 "and /readyz an ops key (HARNESS_OPS_KEYS) or the desk's",
    "not_found": "check the id: GET /threads lists your threads, and a message id is the message_id a send "
                 "returned",
    "no_route": "the routes are listed at /docs",
    "method_not_allowed": "the routes and their methods are listed at /docs",
    "conflict": "see where the thread stands (GET /threads/<id>/state) and try again",
    "thread_busy": "wait for the thread's current message and send again, or send with \"policy\": \"enqueue\" to "
                   "queue yours behind it",
    "desk_conflict": "see who has the thread: GET /handoffs",
    "cancelled": "a newer message on the thread interrupted this one: the newer message's reply answers the "
                 "customer",
    "message_failed": "the thread keeps what was saved (GET /threads/<id>/state): send the message again, or "
                      "finish it with POST /threads/<id>/finish",
    "model_unavailable": "send the message again once the model answers; the message is kept on the thread",
    "body_too_large": "send a shorter message or split it (the cap is HARNESS_MAX_BODY_BYTES)",
    "not_ready": "check the store the message names (the database, the Chroma server), then GET /readyz again",
    "unavailable": "try again in a moment; GET /readyz says whether the stores answer",
    "internal": "try again; if it goes on, the service's log has the cause",
}


def error_body(status: int, message: Any, *, code: str | None = None, hint: str | None = None,
               **extra: Any) -> dict[str, Any]:
    """The one error shape: ``code`` (from the status when not given), ``message`` in one line, ``hint``
    (the code's when not given), and whatever ``extra`` names (a failed message's ``message_id``)."""
    code = code or CODES.get(status, "internal" if status >= 500 else "invalid_request")
    text = " ".join(str(message).split()) or code.replace("_", " ")
    return {"code": code, "message": text, "hint": hint or HINTS.get(code, HINTS["invalid_request"]), **extra}


def error_response(status: int, message: Any, *, headers: Mapping[str, str] | None = None, **given: Any) -> Any:
    from fastapi.responses import JSONResponse

    return JSONResponse(error_body(status, message, **given), status_code=status,
                        headers=dict(headers) if headers else None)


def one_line(exc: Any) -> str:
    """FastAPI's list of validation errors (a ``RequestValidationError``) as one line: where, and what was
    wrong."""
    parts = []
    for err in exc.errors()[:3]:
        where = ".".join(str(p) for p in err.get("loc") or () if p != "body") or "body"
        parts.append(f"{where}: {err.get('msg', 'invalid')}")
    return "; ".join(parts).replace("\n", " ") or "invalid request"


def install_error_handlers(app: Any) -> None:
    """Route every error the app raises to ``error_response`` (the harness's own errors have their handler in
    ``service.http.create_app``, the desk's in ``service.desk.api``)."""
    from fastapi import Request
    from fastapi.exceptions import RequestValidationError
    from starlette.exceptions import HTTPException

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, exc: HTTPException) -> Any:
        status = exc.status_code
        if status in (404, 405) and request.scope.get("route") is None:  # no route, or not this method
            verb = "no route" if status == 404 else f"{request.method} is not allowed on"
            return error_response(status, f"{verb} {request.url.path}", headers=exc.headers,
                                  code="no_route" if status == 404 else "method_not_allowed")
        return error_response(status, exc.detail, headers=exc.headers)

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> Any:
        return error_response(422, one_line(exc), code="invalid_request")

    @app.exception_handler(Exception)
    async def unexpected(request: Request, exc: Exception) -> Any:
        return error_response(500, f"the service failed on this request ({type(exc).__name__})")
