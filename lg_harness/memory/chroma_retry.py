"""A Chroma collection whose calls survive the server's transient internal errors.

Under several writer processes a Chroma server (1.x) now and then answers a query or a write with
``InternalError: Error executing plan: Internal error: Error creating hnsw segment ...`` (its HNSW segment
being written as it is read); the same call a moment later succeeds. That one error used to fail the
whole message (HTTP 422 from ``harness serve``: 2 of 400 in the four-worker test once), although long-term
memory only adds context. Each call is retried a few times with a short pause; a write is safe to repeat
(ids are chosen by the caller, updates set values the caller computed). Other errors pass at once.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)

PAUSES = (0.1, 0.3, 1.0)  # seconds before the 2nd, 3rd and 4th try
_CALLS = ("add", "update", "upsert", "delete", "get", "query", "count", "peek")


def transient(exc: BaseException) -> bool:
    """A Chroma server's internal error, or the connection to it failing for a moment."""
    from chromadb.errors import InternalError

    if isinstance(exc, InternalError):
        return True
    names = {cls.__name__ for cls in type(exc).__mro__}
    return bool(names & {"TransportError", "RemoteProtocolError", "ConnectError", "ReadError"})


class RetryingCollection:
    """Wraps a ``chromadb`` collection; see the module docstring."""

    def __init__(self, collection: Any, sleep: Callable[[float], None] = time.sleep) -> None:
        self._collection = collection
        self._sleep = sleep

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._collection, name)
        if name not in _CALLS:
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            for pause in (*PAUSES, None):
                try:
                    return attr(*args, **kwargs)
                except Exception as exc:
                    if pause is None or not transient(exc):
                        raise
                    log.warning("chroma %s failed (%s: %s); trying again in %.1f s", name, type(exc).__name__,
                                str(exc)[:200], pause)
                    self._sleep(pause)
            raise AssertionError("unreachable")

        return call
