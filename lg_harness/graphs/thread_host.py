"""What the parts of the front door that work on threads need of it (``graphs.recovery``, ``graphs.human_hold``).

A ``Protocol``, so those parts name what they use without importing ``graphs.app`` (whose ``Harness`` builds
them): no import cycle, type-only ones included, and a test can hand them a smaller host.
"""

from __future__ import annotations

from typing import Any, Protocol

from lg_harness.core.domain import Domain
from lg_harness.graphs.result import SendResult


class ThreadHost(Protocol):
    """A harness's threads: the graph, the stores beside it, and how a message runs on it."""

    domain: Domain
    graph: Any          # the compiled StateGraph (get_state, update_state)
    transcripts: Any    # graphs.storage's transcript store
    stores: Any         # graphs.storage.Stores (its change ledger)
    order: Any          # per-thread ordering of messages (``order.turn(thread_id)``)
    resources: dict[str, Any]

    def config(self, thread_id: str, checkpoint_id: str | None = None) -> Any: ...

    def state(self, thread_id: str, checkpoint_id: str | None = None) -> dict[str, Any]: ...

    def fork(self, thread_id: str, checkpoint_id: str) -> str: ...

    def thread_exists(self, thread_id: str) -> bool: ...

    def require_thread(self, thread_id: str) -> None: ...

    def user(self, user_id: str | None, role: str | None = None) -> dict[str, str]: ...

    def check_message(self, text: str, *, as_typed: bool = False) -> str: ...

    def result(self, thread_id: str, snapshot: Any, path: list[str], **given: Any) -> SendResult: ...

    def run_graph(self, thread_id: str, graph_input: Any, turn: int, user_id: str | None = None, *,
                  human: str | None = None) -> SendResult: ...
