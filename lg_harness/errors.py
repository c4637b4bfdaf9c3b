"""The project's root error type, and what an exception says about HTTP; imports nothing of the project."""

from __future__ import annotations


class HarnessError(Exception):
    """A user-facing error: its message says what was wrong and what to do."""


def status_code_of(exc: BaseException) -> int | None:
    """The HTTP status an exception carries on itself or on its ``response`` (httpx, requests, openai)."""
    for holder in (exc, getattr(exc, "response", None)):
        code = getattr(holder, "status_code", None)
        if isinstance(code, int):
            return code
    return None
