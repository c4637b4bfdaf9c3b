"""Error taxonomy shared by tools, the executor and the graph.

Each class names how the harness should react, so the executor can decide on retries without parsing text.
The original exception is kept on ``__cause__`` for logs.
"""

from __future__ import annotations


class HarnessError(Exception):
    """A user-facing error: its message says what was wrong and what to do."""


class ToolError(Exception):
    """Base of every failure a tool call can end in."""

    error_type = "tool_error"
    retryable = False


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


class RateLimitedError(ToolError):
    """429: wait what the backend says, then retry once."""

    error_type = "rate_limited"
    retryable = True

    def __init__(self, message: str, retry_after: float = 1.0) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class PermanentError(ToolError):
    """The backend cannot serve this call at all: use a fallback."""

    error_type = "permanent"
