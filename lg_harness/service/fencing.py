"""Fencing tokens: a worker that lost a message's lease writes nothing more for it.

A worker can stall (a stop signal, a long GC pause, a frozen VM) past its lease's expiry; another worker
then takes the message over and finishes it. When the stalled one wakes up it must not write a second
checkpoint, transcript row, node event or outcome after the new holder's. Each claim of a message is one
generation: the queue row's ``attempts``, raised by every claim in the same transaction that hands over the
lease. The token of a claim is (message id, worker, attempt), and every commit point of the message checks
it *in the same transaction as its write*, locking the queue row (``FOR SHARE``) so that a takeover, which
updates that row, waits for the write in flight and then makes every later one fail:

* checkpoints and pending writes (``FencedPostgresSaver``),
* transcript rows and node events (``memory.pg_stores``, ``service.leases``),
* the message's outcome (``ThreadQueue.complete``: ``attempts`` must still be this claim's),
* a domain's changes, when its tables are on the same Postgres (``Fences.domain_guard``), so a stalled
  worker's late tool call cannot apply a change the new holder's run made, or chose not to make, again.

A write whose token no longer holds raises ``LeaseLost``; the graph stops there and the outcome the waiting
client gets is the new holder's. Writes outside a claimed message (the CLI on an embedded data dir, a test
that uses a store directly) carry no token and are not fenced.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from langgraph.checkpoint.postgres import PostgresSaver, _internal
from psycopg.rows import dict_row

from lg_harness.errors import RunError
from lg_harness.service.pgdb import SCHEMA

# Schema-qualified: a domain's tables on the same database check it from their own schema.
CHECK_SQL = (f"SELECT 1 AS held FROM {SCHEMA}.thread_queue WHERE id = %s AND worker = %s AND attempts = %s "
             "AND status = 'running' FOR SHARE")


class LeaseLost(RunError):
    """This worker's lease on the thread was taken over by another worker; its work on the message stops."""


@dataclass(frozen=True)
class Fence:
    message_id: int
    worker: str
    attempt: int


class Fences:
    """The tokens of the messages this process serves now, by thread (one message per thread at a time)."""

    def __init__(self) -> None:
        self._by_thread: dict[str, Fence] = {}
        self._lock = threading.Lock()

    @contextmanager
    def holding(self, thread_id: str, fence: Fence) -> Iterator[None]:
        with self._lock:
            previous = self._by_thread.get(thread_id)
            self._by_thread[thread_id] = fence
        try:
            yield
        finally:
            with self._lock:
                if self._by_thread.get(thread_id) == fence:
                    if previous is None:
                        del self._by_thread[thread_id]
                    else:
                        self._by_thread[thread_id] = previous

    def get(self, thread_id: str) -> Fence | None:
        with self._lock:
            return self._by_thread.get(thread_id)

    def check(self, conn: Any, thread_id: str, placeholder: str = "%s") -> None:
        """Inside the caller's transaction: raise ``LeaseLost`` unless this process's claim still holds."""
        fence = self.get(thread_id)
        if fence is None:
            return
        sql = CHECK_SQL.replace("%s", placeholder)
        if conn.execute(sql, (fence.message_id, fence.worker, fence.attempt)).fetchone() is None:
            raise LeaseLost(f"message {fence.message_id} on thread '{thread_id}' was taken over by another worker "
                            f"after this one ({fence.worker}) stalled past its lease; it stops here and the other "
                            "worker's outcome stands")

    def domain_guard(self) -> Any:
        """The check for a domain's changing tools whose tables are on the same Postgres (``ctx.extras
        ["commit_guard"]``, run by ``tools.backend.changes_once`` inside the change's own transaction)."""
        return lambda conn, thread_id: self.check(conn, thread_id, placeholder="?")


class FencedPostgresSaver(PostgresSaver):
    """LangGraph's ``PostgresSaver`` whose writes for a claimed message check its token in their transaction."""

    def __init__(self, conn: Any, fences: Fences, **kw: Any) -> None:
        super().__init__(conn, **kw)
        self.fences = fences
        self._writing = threading.local()

    def put(self, config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
        with self._fenced(config):
            return super().put(config, checkpoint, metadata, new_versions)

    def put_writes(self, config: Any, writes: Sequence[tuple[str, Any]], task_id: str, task_path: str = "") -> None:
        with self._fenced(config):
            super().put_writes(config, writes, task_id, task_path)

    @contextmanager
    def _fenced(self, config: Any) -> Iterator[None]:
        thread_id = str((config.get("configurable") or {}).get("thread_id") or "")
        self._writing.thread = thread_id if self.fences.get(thread_id) is not None else None
        try:
            yield
        finally:
            self._writing.thread = None

    @contextmanager
    def _cursor(self, *, pipeline: bool = False) -> Iterator[Any]:
        thread_id = getattr(self._writing, "thread", None)
        if thread_id is None:
            with super()._cursor(pipeline=pipeline) as cur:
                yield cur
            return
        with self.lock, _internal.get_connection(self.conn) as conn, conn.transaction(), \
                conn.cursor(binary=True, row_factory=dict_row) as cur:
            self.fences.check(conn, thread_id)
            yield cur
