"""The project's error tree, and what an exception says about HTTP; imports nothing of the project.

Every error the harness raises on purpose is a ``HarnessError``, in one of two branches:

- ``UsageError``: the caller asked for something that cannot be done as asked (bad input, configuration or
  ids); fixing the call fixes it. The message says what was wrong and what to do.
- ``RunError``: a well-formed request failed while it ran (a tool, the model, storage, a lease); the same
  call may work later. Tool failures (``tools.errors.ToolError``), failed model calls
  (``nodes.base.ModelCallFailed``) and calls with an unknown outcome (``tools.executor.OutcomeUncertainError``)
  are run errors.

Catch ``HarnessError`` to report any of them to a user; catch a branch to decide what to do.
"""

from __future__ import annotations


class HarnessError(Exception):
    """A user-facing error: its message says what was wrong and what to do."""


class UsageError(HarnessError):
    """Bad input or configuration: the call cannot succeed as made."""


class RunError(HarnessError):
    """A well-formed call failed while running (a tool, the model, storage, a lease)."""


def status_code_of(exc: BaseException) -> int | None:
    """The HTTP status an exception carries on itself or on its ``response`` (httpx, requests, openai)."""
    for holder in (exc, getattr(exc, "response", None)):
        code = getattr(holder, "status_code", None)
        if isinstance(code, int):
            return code
    return None
