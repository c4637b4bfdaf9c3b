"""``harness prune``: retention for threads idle longer than a cut-off, on either backend.

A thread's last activity is when its last message ran (the ``threads`` table). By default an idle thread is
deleted: its checkpoints (the saver's own ``prune(strategy="delete")`` on Postgres, ``delete_thread`` on
SQLite), transcript, handoff rows, finished queue rows and node events, and audit rows. With
``keep_latest`` the thread stays resumable and readable: only checkpoints other than each namespace's latest
go (``PostgresSaver.prune(strategy="keep_latest")``; on SQLite the same rule in SQL, since ``SqliteSaver`` has
no ``prune`` and keeps whole checkpoints, so no blob outlives its checkpoint). Facts are per user, not per
thread, and are kept; of the change ledger a deleted thread's settled and failed changes and its decided calls
go, its pending ones (a person has to check them) stay.

The safety catch: a thread waiting for a human, or held by one, is kept whatever its age unless
``include_human`` says otherwise (the person may answer tomorrow); ``plan`` says what a prune would delete
without deleting it (``harness prune --dry-run``), and the CLI asks before deleting on a terminal.
"""

from __future__ import annotations

import re
import sqlite3
import time
from pathlib import Path
from typing import Any

from lg_harness.errors import HarnessError

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_age(text: str) -> float:
    """Seconds in ``30d``, ``12h``, ``90m``, ``45s`` or ``2w``."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*", text or "")
    if not match:
        raise HarnessError(f"--older-than takes a number and a unit (s, m, h, d, w), e.g. 30d; got '{text}'")
    return float(match.group(1)) * _UNITS[match.group(2)]


def plan(harness: Any, older_than_s: float, *, include_human: bool = False, now: float | None = None
         ) -> dict[str, list[str]]:
    """What a prune would delete (``thread_ids``) and the idle threads it keeps for a human
    (``kept_for_a_human``: waiting for one or held by one), deleting nothing."""
    cutoff = (now if now is not None else time.time()) - older_than_s
    if harness.stores.backend != "postgres" and harness.data_dir is None:
        raise HarnessError("nothing to prune: this harness keeps its state in memory")
    idle = _idle_postgres(harness.stores, cutoff) if harness.stores.backend == "postgres" else _idle_sqlite(harness, cutoff)
    human = set(harness.transcripts.waiting_handoffs()) | set(harness.transcripts.held_handoffs())
    kept = [] if include_human else [t for t in idle if t in human]
    return {"thread_ids": [t for t in idle if t not in kept], "kept_for_a_human": kept}


def prune(harness: Any, older_than_s: float, *, keep_latest: bool = False, include_human: bool = False,
          now: float | None = None) -> dict[str, Any]:
    """Prune the threads of ``harness``'s stores idle for more than ``older_than_s`` seconds (threads waiting
    for or held by a human only with ``include_human``); returns counts and what was kept."""
    planned = plan(harness, older_than_s, include_human=include_human, now=now)
    threads = planned["thread_ids"]
    if harness.stores.backend == "postgres":
        report = _prune_postgres(harness.stores, threads, keep_latest)
    else:
        report = _prune_sqlite(harness, Path(harness.data_dir), threads, keep_latest)
    if threads and not keep_latest and harness.stores.ledger is not None:
        harness.stores.ledger.forget(threads)
    return {**report, "kept_for_a_human": planned["kept_for_a_human"]}


def _result(threads: list[str], before: int, after: int, keep_latest: bool) -> dict[str, Any]:
    return {"strategy": "keep_latest" if keep_latest else "delete", "threads": len(threads),
            "thread_ids": threads, "checkpoints_before": before, "checkpoints_after": after}


def _idle_postgres(stores: Any, cutoff: float) -> list[str]:
    stores.queue.sweep()  # a message whose CLI died stays open until someone looks; prune looks at every thread
    with stores.pool.connection() as conn:
        return [r["thread_id"] for r in conn.execute(
            "SELECT thread_id FROM threads WHERE updated_at < %s AND NOT EXISTS (SELECT 1 FROM thread_queue q "
            "WHERE q.thread_id = threads.thread_id AND q.status IN ('queued', 'running')) ORDER BY thread_id",
            (cutoff,)).fetchall()]


def _idle_sqlite(harness: Any, cutoff: float) -> list[str]:
    return [r[0] for r in harness.transcripts.conn.execute("SELECT thread_id FROM threads WHERE updated_at < ? "
                                                           "ORDER BY thread_id", (cutoff,)).fetchall()]


def _prune_postgres(stores: Any, threads: list[str], keep_latest: bool) -> dict[str, Any]:
    pool, saver = stores.pool, stores.checkpointer
    with pool.connection() as conn:
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


def _prune_sqlite(harness: Any, data_dir: Path, threads: list[str], keep_latest: bool) -> dict[str, Any]:
    transcripts = harness.transcripts.conn
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
