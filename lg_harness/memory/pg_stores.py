"""The transcript store (with thread setup and the handoff queue) and the fact store on Postgres.

Same methods and behaviour as ``memory.transcript.TranscriptStore`` and ``memory.facts.FactStore`` (one
conformance suite runs on both: ``tests/service/test_store_conformance.py``), on a psycopg pool shared by every
thread of a worker, so several worker processes can use them at once. The tables come from
``service.pgdb``'s migrations.
"""

from __future__ import annotations

import json
import time
from datetime import datetime
from typing import Any

from lg_harness.memory.facts import CLAIM_EXPIRES_S, Clock, Fact, PendingWrite, to_epoch
from lg_harness.memory.transcript import READ_SQL, author_of, kept_on_branch, threads_sql

_FACT_COLUMNS = "id, user_id, key, value, confidence, source, created_at, updated_at, stale"


class PgTranscriptStore:
    """Every thread's transcript, the design/model/domain it last ran with, and the handoff queue."""

    def __init__(self, pool: Any, fences: Any = None) -> None:
        self.pool = pool
        self.fences = fences  # service.fencing.Fences: a worker that lost the thread's lease appends nothing

    def claim(self, thread_id: str, user_id: str) -> str:
        """Make ``user_id`` the thread's owner if it has none yet; return the owner either way."""
        with self.pool.connection() as conn:
            conn.execute("INSERT INTO owners VALUES (%s, %s, %s) ON CONFLICT (thread_id) DO NOTHING",
                         (thread_id, user_id, time.time()))
            return conn.execute("SELECT user_id FROM owners WHERE thread_id = %s", (thread_id,)).fetchone()["user_id"]

    def owner(self, thread_id: str) -> str | None:
        row = self._row("SELECT user_id FROM owners WHERE thread_id = %s", (thread_id,))
        return row["user_id"] if row else None

    def record_setup(self, thread_id: str, design: str, model: str | None, domain: str | None = None) -> None:
        with self.pool.connection() as conn:
            conn.execute("INSERT INTO threads (thread_id, design, model, updated_at, domain) VALUES (%s, %s, %s, %s, %s)"
                         " ON CONFLICT (thread_id) DO UPDATE SET design = EXCLUDED.design, model = EXCLUDED.model,"
                         " updated_at = EXCLUDED.updated_at, domain = EXCLUDED.domain",
                         (thread_id, design, model, time.time(), domain))

    def _row(self, sql: str, params: tuple[Any, ...]) -> dict[str, Any] | None:
        with self.pool.connection() as conn:
            return conn.execute(sql, params).fetchone()

    def setup(self, thread_id: str) -> tuple[str, str | None] | None:
        row = self._row("SELECT design, model FROM threads WHERE thread_id = %s", (thread_id,))
        return (row["design"], row["model"]) if row else None

    def domain_of(self, thread_id: str) -> str | None:
        row = self._row("SELECT domain FROM threads WHERE thread_id = %s", (thread_id,))
        return row["domain"] if row else None

    def threads(self, search: str = "", limit: int = 100, owner: str = "") -> list[dict]:
        params = (search.strip().lower(),) * 3 + (owner,) * 2 + (limit,)
        with self.pool.connection() as conn:
            rows = conn.execute(threads_sql("strpos({col}, %s) > 0", "%s"), params).fetchall()
        return [dict(r) for r in rows]

    def append(self, thread_id: str, turn: int, role: str, content: str, author: str | None = None,
               author_name: str | None = None) -> None:
        # Messages on one thread are serialised by its lease; the row lock on the thread's newest row is
        # for the rare writer outside it (a human's reply racing a message), so seq never collides.
        with self.pool.connection() as conn, conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"transcript:{thread_id}",))
            if self.fences is not None:
                self.fences.check(conn, thread_id)
            conn.execute("INSERT INTO transcript (thread_id, seq, turn, role, content, created_at, author, author_name)"
                         " VALUES (%s, (SELECT COALESCE(MAX(seq), 0) + 1 FROM transcript WHERE thread_id = %s), %s,"
                         " %s, %s, %s, %s, %s)",
                         (thread_id, thread_id, turn, role, content, time.time(), author_of(role, author),
                          author_name))

    def read(self, thread_id: str, *, every: bool = False) -> list[dict]:
        with self.pool.connection() as conn:
            rows = conn.execute(READ_SQL.format(mark="%s"), (thread_id, every)).fetchall()
        return [dict(r) for r in rows]

    def fork(self, thread_id: str, turn: int, *, mid_message: bool = False) -> None:
        with self.pool.connection() as conn, conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"transcript:{thread_id}",))
            rows = [dict(r) for r in conn.execute(READ_SQL.format(mark="%s"), (thread_id, False)).fetchall()]
            kept = set(kept_on_branch(rows, turn, mid_message))
            for row in rows:
                if row["seq"] not in kept:
                    conn.execute("UPDATE transcript SET forked_off = %s WHERE thread_id = %s AND seq = %s",
                                 (time.time(), thread_id, row["seq"]))

    def open_handoff(self, thread_id: str, ticket: str) -> None:
        with self.pool.connection() as conn:
            conn.execute("INSERT INTO handoffs VALUES (%s, %s, 'waiting', %s) ON CONFLICT DO NOTHING",
                         (thread_id, ticket, time.time()))

    def answer_handoff(self, thread_id: str) -> None:
        with self.pool.connection() as conn:
            conn.execute("UPDATE handoffs SET status = 'answered' WHERE thread_id = %s AND status = 'waiting'",
                         (thread_id,))

    def hold_handoff(self, thread_id: str) -> None:
        with self.pool.connection() as conn:
            conn.execute("UPDATE handoffs SET status = 'held' WHERE thread_id = %s AND status IN "
                         "('waiting', 'answered')", (thread_id,))

    def release_handoff(self, thread_id: str) -> bool:
        with self.pool.connection() as conn:
            cur = conn.execute("UPDATE handoffs SET status = 'released' WHERE thread_id = %s AND status = 'held'",
                               (thread_id,))
            return cur.rowcount > 0

    def held_handoffs(self) -> list[str]:
        with self.pool.connection() as conn:
            rows = conn.execute("SELECT thread_id FROM handoffs WHERE status = 'held' "
                                "GROUP BY thread_id ORDER BY MIN(created_at)").fetchall()
        return [r["thread_id"] for r in rows]

    def waiting_handoffs(self) -> list[str]:
        with self.pool.connection() as conn:
            rows = conn.execute("SELECT thread_id FROM handoffs WHERE status = 'waiting' "
                                "GROUP BY thread_id ORDER BY MIN(created_at)").fetchall()
        return [r["thread_id"] for r in rows]

    def close(self) -> None:
        """The pool belongs to the storage that opened it."""


def _fact(row: dict[str, Any]) -> Fact:
    return Fact(row["id"], row["user_id"], row["key"], json.loads(row["value"]), row["confidence"], row["source"],
                row["created_at"], row["updated_at"], bool(row["stale"]))


class PgFactStore:
    """Per-user exact facts with version history (see ``memory.facts.FactStore`` for the contract)."""

    def __init__(self, pool: Any, *, clock: Clock = time.time) -> None:
        self.pool = pool
        self._clock = clock

    def put(self, user_id: str, key: str, value: Any, *, confirmed: bool, confidence: float = 1.0,
            source: str = "", now: float | datetime | None = None) -> Fact | None:
        if not confirmed:
            return None
        ts = to_epoch(now, self._clock)
        encoded = json.dumps(value, sort_keys=True, ensure_ascii=False)
        with self.pool.connection() as conn, conn.transaction():
            # Two workers may write one user's key at once (two of the user's threads); one at a time.
            conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"fact:{user_id}\x1f{key}",))
            current = self._current(conn, user_id, key)
            if current is not None and current["value"] == encoded:
                conn.execute("UPDATE facts SET updated_at = GREATEST(updated_at, %s), "
                             "confidence = GREATEST(confidence, %s) WHERE id = %s", (ts, confidence, current["id"]))
                rid = current["id"]
            else:
                self._retire(conn, user_id, key, ts)
                rid = conn.execute("INSERT INTO facts (user_id, key, value, confidence, source, created_at, updated_at)"
                                   " VALUES (%s, %s, %s, %s, %s, %s, %s) RETURNING id",
                                   (user_id, key, encoded, confidence, source, ts, ts)).fetchone()["id"]
            return _fact(conn.execute(f"SELECT {_FACT_COLUMNS} FROM facts WHERE id = %s", (rid,)).fetchone())

    def get(self, user_id: str, key: str) -> Fact | None:
        with self.pool.connection() as conn:
            row = self._current(conn, user_id, key)
        return _fact(row) if row else None

    def value(self, user_id: str, key: str, default: Any = None) -> Any:
        fact = self.get(user_id, key)
        return default if fact is None else fact.value

    def history(self, user_id: str, key: str) -> list[Fact]:
        with self.pool.connection() as conn:
            rows = conn.execute(f"SELECT {_FACT_COLUMNS} FROM facts WHERE user_id = %s AND key = %s "
                                "ORDER BY created_at, id", (user_id, key)).fetchall()
        return [_fact(r) for r in rows]

    def mark_stale(self, user_id: str, key: str, *, now: float | datetime | None = None) -> bool:
        ts = to_epoch(now, self._clock)
        with self.pool.connection() as conn, conn.transaction():
            return self._retire(conn, user_id, key, ts) > 0

    def all(self, user_id: str, *, include_stale: bool = False) -> list[Fact]:
        where = "user_id = %s" if include_stale else "user_id = %s AND stale = 0"
        with self.pool.connection() as conn:
            rows = conn.execute(f"SELECT {_FACT_COLUMNS} FROM facts WHERE {where} ORDER BY key, created_at, id",
                                (user_id,)).fetchall()
        return [_fact(r) for r in rows]

    def add_hits(self, user_id: str, record_ids: list[str], count: int = 1) -> None:
        with self.pool.connection() as conn, conn.transaction():
            for rid in record_ids:
                conn.execute("INSERT INTO experience_hits VALUES (%s, %s, %s) ON CONFLICT (user_id, record_id) "
                             "DO UPDATE SET hits = experience_hits.hits + EXCLUDED.hits", (user_id, rid, count))

    def hits(self, user_id: str, record_ids: list[str]) -> dict[str, int]:
        if not record_ids:
            return {}
        with self.pool.connection() as conn:
            rows = conn.execute("SELECT record_id, hits FROM experience_hits WHERE user_id = %s AND "
                                "record_id = ANY(%s)", (user_id, list(record_ids))).fetchall()
        return {r["record_id"]: r["hits"] for r in rows}

    def enqueue(self, key: str, user_id: str, payload: dict[str, Any]) -> None:
        with self.pool.connection() as conn:
            conn.execute("INSERT INTO memory_pending VALUES (%s, %s, %s, %s, NULL) ON CONFLICT (key) DO UPDATE SET "
                         "user_id = EXCLUDED.user_id, payload = EXCLUDED.payload, created_at = EXCLUDED.created_at, "
                         "claimed_at = NULL", (key, user_id, json.dumps(payload, ensure_ascii=False), self._clock()))

    def claim(self, *, now: float | None = None, expires_s: float = CLAIM_EXPIRES_S) -> list[PendingWrite]:
        ts = time.time() if now is None else now
        with self.pool.connection() as conn:
            rows = conn.execute("UPDATE memory_pending SET claimed_at = %s WHERE claimed_at IS NULL OR claimed_at < %s "
                                "RETURNING key, user_id, payload, created_at", (ts, ts - expires_s)).fetchall()
        rows.sort(key=lambda r: (r["created_at"], r["key"]))
        return [PendingWrite(r["key"], r["user_id"], json.loads(r["payload"])) for r in rows]

    def settle(self, keys: list[str]) -> None:
        with self.pool.connection() as conn:
            conn.execute("DELETE FROM memory_pending WHERE key = ANY(%s)", (list(keys),))

    def close(self) -> None:
        """The pool belongs to the storage that opened it."""

    @staticmethod
    def _current(conn: Any, user_id: str, key: str) -> dict[str, Any] | None:
        return conn.execute(f"SELECT {_FACT_COLUMNS} FROM facts WHERE user_id = %s AND key = %s AND stale = 0"
                            " ORDER BY created_at DESC, id DESC LIMIT 1", (user_id, key)).fetchone()

    @staticmethod
    def _retire(conn: Any, user_id: str, key: str, ts: float) -> int:
        cur = conn.execute("UPDATE facts SET stale = 1, updated_at = GREATEST(updated_at, %s) WHERE user_id = %s "
                           "AND key = %s AND stale = 0", (ts, user_id, key))
        return cur.rowcount
