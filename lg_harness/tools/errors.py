"""Error taxonomy shared by tools, the executor and the graph.

Each class names how the harness should react, so the executor can decide on retries without parsing text.
The original exception is kept on ``__cause__`` for logs. Exceptions that are not ours (``TimeoutError``,
``ConnectionError``, an HTTP client's 429/5xx...) are mapped onto the same names by :func:`classify`.
"""

from __future__ import annotations

import email.utils
import errno
import math
import re
import socket
from datetime import UTC, datetime
from typing import Any

from lg_harness.errors import RunError, status_code_of


class ToolError(RunError):
    """Base of every failure a tool call can end in.

    The message is written for the model (it may name tools and say what to try next). ``phrase`` names
    the domain phrase that tells the customer the same thing in their language, filled with ``values``;
    a reply that quotes the message shows the customer that phrase instead (``nodes.customer_text``).
    """

    error_type = "tool_error"
    retryable = False

    def __init__(self, message: str = "", *, phrase: str | None = None, **values: Any) -> None:
        super().__init__(message)
        self.phrase = phrase
        self.phrase_values = {k: str(v) for k, v in values.items()}


class ValidationError(ToolError):
    """Arguments do not fit the tool's schema (wrong type, pattern, missing field, unknown tool)."""

    error_type = "validation"


class BusinessError(ToolError):
    """The call was well formed but the shop refuses it (order not found, not cancellable...)."""

    error_type = "business"


class NotFoundError(BusinessError):
    """The referenced entity does not exist or does not belong to the user."""

    error_type = "not_found"


class TransientError(ToolError):
    """A network blip or 5xx: retry with backoff."""

    error_type = "transient"
    retryable = True


class ToolTimeoutError(TransientError):
    """The tool did not answer within its deadline."""

    error_type = "timeout"


class MalformedPayloadError(TransientError):
    """The backend answered with something that is not data (an HTML error page, a cut payload)."""

    error_type = "malformed"


class RateLimitedError(ToolError):
    """429: wait what the backend says, then retry once."""

    error_type = "rate_limited"
    retryable = True
    status_code = 429

    def __init__(self, message: str, retry_after: float = 1.0) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class PermanentError(ToolError):
    """The backend cannot serve this call at all: use a fallback."""

    error_type = "permanent"


class ToolExecutionFailed(ToolError):
    """The one error a heavyweight framework wraps every tool failure into (the original class is lost)."""

    error_type = "tool_execution_failed"


# ------------------------------------------------------------------------------------ classification

# Error types the executor retries with backoff, and the ones it never retries.
TRANSIENT_TYPES = frozenset({"transient", "timeout", "malformed"})
FINAL_TYPES = frozenset({"validation", "business", "not_found", "internal", "tool_execution_failed"})

# errno values that mean "the network hiccupped", as opposed to a local OSError such as a missing file.
_NETWORK_ERRNOS = frozenset(
    getattr(errno, name) for name in (
        "ECONNREFUSED", "ECONNRESET", "ECONNABORTED", "ETIMEDOUT", "EHOSTUNREACH", "EHOSTDOWN",
        "ENETUNREACH", "ENETDOWN", "ENETRESET", "EPIPE", "EAI_AGAIN",
    ) if hasattr(errno, name)
)
# Client libraries (httpx, openai, requests, aiohttp) do not subclass the builtin TimeoutError /
# ConnectionError, so their classes are recognised by name to avoid importing any of them.
_TIMEOUT_NAMES = ("Timeout",)
_NETWORK_NAMES = ("ConnectError", "ConnectionError", "NetworkError", "TransportError", "RemoteProtocolError",
                  "ServerDisconnected", "ClientConnector")  # substrings: openai's APIConnectionError too
# SQLite's "database is locked" / "database table is locked", Postgres' lock timeouts.
_LOCKED = re.compile(r"\b(?:database|table)\b.*\bis locked\b|\block (?:wait )?timeout\b|could not obtain lock", re.I)
_VALIDATION_STATUS = frozenset({400, 413, 414, 415, 422})
_NOT_FOUND_STATUS = frozenset({404, 410})


def _seconds(value: float) -> float | None:
    """A usable wait: "nan" or "inf" parse as floats but name no wait, so they count as unsaid."""
    return max(value, 0.0) if math.isfinite(value) else None


def _parse_retry_after(value: Any) -> float | None:
    """Seconds from a Retry-After value: a number of seconds or an HTTP date."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return _seconds(float(value))
    if not isinstance(value, str) or not value.strip():
        return None
    try:
        return _seconds(float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max((when - datetime.now(UTC)).total_seconds(), 0.0)


def retry_after_of(exc: BaseException) -> float | None:
    """How long the backend asked us to wait: ``retry_after`` or a ``Retry-After`` header, else None."""
    seconds = _parse_retry_after(getattr(exc, "retry_after", None))
    if seconds is not None:
        return seconds
    for holder in (exc, getattr(exc, "response", None)):
        headers = getattr(holder, "headers", None)
        if headers is None:
            continue
        try:
            value = headers.get("Retry-After") or headers.get("retry-after")
        except AttributeError:
            continue
        seconds = _parse_retry_after(value)
        if seconds is not None:
            return seconds
    return None


def _classify_status(code: int) -> str | None:
    if code == 429:
        return "rate_limited"
    if code == 408:
        return "timeout"  # the server gave up waiting for us: as retryable as our own deadline
    if code >= 500:
        return "transient"
    if code in _VALIDATION_STATUS:
        return "validation"
    if code in _NOT_FOUND_STATUS:
        return "not_found"
    if code >= 400:
        return "business"
    return None


def _class_names(exc: BaseException) -> list[str]:
    return [cls.__name__ for cls in type(exc).__mro__]


def classify(exc: BaseException) -> str:
    """The error type (how the harness reacts) of any exception a tool call raised.

    Our own ``ToolError`` classes say it themselves. Otherwise: an HTTP ``status_code`` (429 rate_limited,
    408 timeout, 5xx transient, 400/422 validation, 404 not_found, other 4xx business), then timeouts and
    network failures (builtin classes, socket errnos, or client-library class names) as timeout/transient,
    pydantic validation errors as validation, LangChain's ``ToolException`` as business. Anything else is
    ``internal``: a bug in the tool, never retried.
    """
    if isinstance(exc, ToolError):
        return exc.error_type
    code = status_code_of(exc)
    kind = _classify_status(code) if code is not None else None
    if kind:
        return kind
    names = _class_names(exc)
    if isinstance(exc, TimeoutError) or any(t in n for n in names for t in _TIMEOUT_NAMES):
        return "timeout"
    if isinstance(exc, ConnectionError) or any(t in n for n in names for t in _NETWORK_NAMES):
        return "transient"
    if isinstance(exc, socket.gaierror) or (isinstance(exc, OSError) and exc.errno in _NETWORK_ERRNOS):
        return "transient"
    if "OperationalError" in names and _LOCKED.search(str(exc)):
        return "transient"  # another writer holds the database: the same call works once it lets go
    if "ValidationError" in names:  # pydantic's, raised by a tool re-validating its own input
        return "validation"
    if "ToolException" in names:  # LangChain's "tell the model what went wrong"
        return "business"
    return "internal"
