"""``harness prune``: retention for threads idle longer than a cut-off, on either backend.

A thread's last activity is when its last message ran (the ``threads`` table). By default an idle thread is
deleted: its checkpoints (the saver's own ``prune(strategy="delete")`` on Postgres, ``delete_thread`` on
SQLite), transcript, handoff rows, finished queue rows and node events, and audit rows. With
``keep_latest`` the thread stays resumable and readable: only checkpoints other than each namespace's latest
go (``PostgresSaver.prune(strategy="keep_latest")``; on SQLite the same rule in SQL, since ``SqliteSaver`` has
no ``prune`` and keeps whole checkpoints, so no blob outlives its checkpoint). Facts are per user, not per
thread, and are kept.
"""

from __future__ import annotations

import re
import sqlite3
import time
from pathlib import Path
from typing import Any

from lg_harness.tools.errors import HarnessError

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_age(text: str) -> float:
    """Seconds in ``30d``, ``12h``, ``90m``, ``45s`` or ``2w``."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*", text or "")
    if not match:
        raise HarnessError(f"--older-than takes a number and a unit (s, m, h, d, w), e.g. 30d; got '{text}'")
    return float(match.group(1)) * _UNITS[match.group(2)]


def prune(harness: Any, older_than_s: float, *, keep_latest: bool = False, now: float | None = None) -> dict[str, Any]:
    """Prune the threads of ``harness``'s stores idle for more than ``older_than_s`` seconds; returns counts."""
    cutoff = (now if now is not None else time.time()) - older_than_s
    stores = harness.stores
    if stores.backend == "postgres":
        return _prune_postgres(stores, cutoff, keep_latest)
    if harness.data_dir is None:
        raise HarnessError("nothing to prune: this harness keeps its state in memory")
    return _prune_sqlite(harness, Path(harness.data_dir), cutoff, keep_latest)


def _result(threads: list[str], before: int, after: int, keep_latest: bool) -> dict[str, Any]:
    return {"strategy": "keep_latest" if keep_latest else "delete", "threads": len(threads),
            "thread_ids": threads, "checkpoints_before": before, "checkpoints_after": after}


def _prune_postgres(stores: Any, cutoff: float, keep_latest: bool) -> dict[str, Any]:
    pool, saver = stores.pool, stores.checkpointer
    stores.queue.sweep()  # a message whose CLI died stays open until someone looks; prune looks at every thread
    with pool.connection() as conn:
        threads = [r["thread_id"] for r in conn.execute(
            "SELECT thread_id FROM threads WHERE updated_at < %s AND NOT EXISTS (SELECT 1 FROM thread_queue q "
            "WHERE q.thread_id = threads.thread_id AND q.status IN ('queued', 'running')) ORDER BY thread_id",
            (cutoff,)).fetchall()]
        before = _count_pg(conn, threads)
    if threads:
        saver.prune(threads, strategy="keep_latest" if keep_latest else "delete")
    with pool.connection() as conn, conn.transaction():
        after = _count_pg(conn, threads)
        if threads:
            ids = (threads,)
            conn.execute("DELETE FROM message_events WHERE message_id IN (SELECT id FROM thread_queue WHERE "
                         "thread_id = ANY(%s) AND status NOT IN ('queued', 'running'))", ids)
            conn.execute("DELETE FROM thread_queue WHERE thread_id = ANY(%s) AND status NOT IN ('queued', 'running')",
                         ids)
            if not keep_latest:
                for table in ("transcript", "handoffs", "calls", "messages", "threads"):
                    conn.execute(f"DELETE FROM {table} WHERE thread_id = ANY(%s)", ids)
    return _result(threads, before, after, keep_latest)


def _count_pg(conn: Any, threads: list[str]) -> int:
    row = conn.execute("SELECT COUNT(*) AS n FROM checkpoints WHERE thread_id = ANY(%s)", (threads,)).fetchone()
    return int(row["n"])


def _prune_sqlite(harness: Any, data_dir: Path, cutoff: float, keep_latest: bool) -> dict[str, Any]:
    transcripts = harness.transcripts.conn
    threads = [r[0] for r in transcripts.execute("SELECT thread_id FROM threads WHERE updated_at < ? "
                                                 "ORDER BY thread_id", (cutoff,)).fetchall()]
    saver = harness.stores.checkpointer
    conn: sqlite3.Connection = saver.conn

    def count() -> int:
        marks = ",".join("?" for _ in threads)
        return int(conn.execute(f"SELECT COUNT(*) FROM checkpoints WHERE thread_id IN ({marks})",
                                threads).fetchone()[0]) if threads else 0

    before = count()
    for thread in threads:
        if keep_latest:
            with saver.lock, conn:
                keep = "(SELECT MAX(checkpoint_id) FROM checkpoints WHERE thread_id = ? GROUP BY checkpoint_ns)"
                conn.execute(f"DELETE FROM writes WHERE thread_id = ? AND checkpoint_id NOT IN {keep}", (thread, thread))
                conn.execute(f"DELETE FROM checkpoints WHERE thread_id = ? AND checkpoint_id NOT IN {keep}",
                             (thread, thread))
        else:
            saver.delete_thread(thread)
    after = count()
    if threads and not keep_latest:
        marks = ",".join("?" for _ in threads)
        with harness.transcripts.lock:
            for table in ("transcript", "handoffs", "threads"):
                transcripts.execute(f"DELETE FROM {table} WHERE thread_id IN ({marks})", threads)
        if harness.audit is not None:
            with harness.audit._lock, harness.audit._conn as audit:
                for table in ("calls", "messages"):
                    audit.execute(f"DELETE FROM {table} WHERE thread_id IN ({marks})", threads)
    queue_file = data_dir / "queue.sqlite"
    if threads and queue_file.exists():
        marks = ",".join("?" for _ in threads)
        with sqlite3.connect(queue_file, timeout=30) as queue:
            queue.execute(f"DELETE FROM message_events WHERE message_id IN (SELECT id FROM thread_queue WHERE "
                          f"thread_id IN ({marks}) AND status NOT IN ('queued', 'running'))", threads)
            queue.execute(f"DELETE FROM thread_queue WHERE thread_id IN ({marks}) AND status NOT IN "
                          "('queued', 'running')", threads)
        queue.close()
    return _result(threads, before, after, keep_latest)
