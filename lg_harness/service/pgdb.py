"""Postgres for harness state: one connection pool per process and versioned schema migrations.

Every table the harness keeps (checkpoints through LangGraph's ``PostgresSaver``, transcripts, facts, the
audit log, the handoff queue, per-thread message queue and leases, the change ledger) lives in the schema ``harness`` of the
database the URL names, so the harness shares a database without touching anyone else's tables.

Migrations are numbered; ``migrate`` applies the ones a database has not seen, in order, recording each in
``harness.migrations``. Several workers starting at once is normal, so the whole step (LangGraph's own
migrations included) runs under an advisory lock held for those few statements: one worker migrates, the others wait
a moment and find nothing to do.
"""

from __future__ import annotations

import time
from typing import Any

from lg_harness.tools.pg_backend import open_pg_pool

SCHEMA = "harness"
_MIGRATE_LOCK = 0x4C474853  # an arbitrary constant key for pg_advisory_lock: "LGHS"

# (version, what it adds, SQL). Append only: a released migration never changes.
MIGRATIONS: list[tuple[int, str, str]] = [
    (1, "transcripts, thread setup and the handoff queue", """
CREATE TABLE transcript (thread_id TEXT NOT NULL, seq INTEGER NOT NULL, turn INTEGER NOT NULL, role TEXT NOT NULL,
    content TEXT NOT NULL, created_at DOUBLE PRECISION NOT NULL, PRIMARY KEY (thread_id, seq));
CREATE TABLE threads (thread_id TEXT PRIMARY KEY, design TEXT NOT NULL, model TEXT,
    updated_at DOUBLE PRECISION NOT NULL, domain TEXT);
CREATE TABLE handoffs (thread_id TEXT NOT NULL, ticket TEXT NOT NULL, status TEXT NOT NULL,
    created_at DOUBLE PRECISION NOT NULL, PRIMARY KEY (thread_id, ticket));
"""),
    (2, "facts", """
CREATE TABLE facts (id BIGSERIAL PRIMARY KEY, user_id TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL,
    confidence DOUBLE PRECISION NOT NULL, source TEXT NOT NULL DEFAULT '', created_at DOUBLE PRECISION NOT NULL,
    updated_at DOUBLE PRECISION NOT NULL, stale INTEGER NOT NULL DEFAULT 0);
CREATE INDEX facts_user_key ON facts (user_id, key, stale);
"""),
    (3, "audit log", """
CREATE TABLE calls (id BIGSERIAL PRIMARY KEY, ts TEXT NOT NULL, thread_id TEXT, turn INTEGER, trace_id TEXT,
    kind TEXT NOT NULL CHECK (kind IN ('model', 'tool')), name TEXT, input TEXT, output TEXT, input_tokens INTEGER,
    output_tokens INTEGER, duration_ms DOUBLE PRECISION, status TEXT NOT NULL, error_type TEXT);
CREATE INDEX calls_by_message ON calls (thread_id, turn);
CREATE TABLE messages (id BIGSERIAL PRIMARY KEY, ts TEXT NOT NULL, thread_id TEXT NOT NULL, turn INTEGER NOT NULL,
    trace_id TEXT, completed INTEGER NOT NULL, rounds INTEGER, latency_ms DOUBLE PRECISION, input_tokens INTEGER);
CREATE INDEX messages_by_thread ON messages (thread_id, turn);
"""),
    (4, "per-thread message queue, leases and node events", """
CREATE TABLE thread_queue (id BIGSERIAL PRIMARY KEY, thread_id TEXT NOT NULL, kind TEXT NOT NULL,
    payload TEXT NOT NULL, status TEXT NOT NULL, result TEXT, error TEXT, worker TEXT, attempts INTEGER NOT NULL
    DEFAULT 0, cancel INTEGER NOT NULL DEFAULT 0, turn_before INTEGER, waiter_expires_at DOUBLE PRECISION,
    created_at DOUBLE PRECISION NOT NULL, started_at DOUBLE PRECISION, finished_at DOUBLE PRECISION);
CREATE INDEX thread_queue_open ON thread_queue (thread_id, id) WHERE status IN ('queued', 'running');
CREATE TABLE thread_leases (thread_id TEXT PRIMARY KEY, worker TEXT NOT NULL, message_id BIGINT NOT NULL,
    expires_at DOUBLE PRECISION NOT NULL);
CREATE TABLE message_events (message_id BIGINT NOT NULL, seq INTEGER NOT NULL, event TEXT NOT NULL,
    PRIMARY KEY (message_id, seq));
"""),
    (5, "thread owners", """
CREATE TABLE owners (thread_id TEXT PRIMARY KEY, user_id TEXT NOT NULL, created_at DOUBLE PRECISION NOT NULL);
"""),
    (6, "change ledger", """
CREATE TABLE change_ledger (key TEXT PRIMARY KEY, thread_id TEXT NOT NULL, tool TEXT NOT NULL, args TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('pending', 'settled', 'failed')), result TEXT, error_type TEXT,
    error TEXT, attempts INTEGER NOT NULL DEFAULT 1, created_at DOUBLE PRECISION NOT NULL,
    settled_at DOUBLE PRECISION);
CREATE INDEX change_ledger_pending ON change_ledger (thread_id) WHERE status = 'pending';
"""),
    (7, "the desk's actions", """
CREATE TABLE desk_actions (id BIGSERIAL PRIMARY KEY, ts TEXT NOT NULL, agent TEXT NOT NULL, action TEXT NOT NULL,
    thread_id TEXT NOT NULL, detail TEXT);
CREATE INDEX desk_actions_by_thread ON desk_actions (thread_id, id);
"""),
    (8, "experience hit counts and pending long-term memory writes", """
CREATE TABLE experience_hits (user_id TEXT NOT NULL, record_id TEXT NOT NULL, hits INTEGER NOT NULL,
    PRIMARY KEY (user_id, record_id));
CREATE TABLE memory_pending (key TEXT PRIMARY KEY, user_id TEXT NOT NULL, payload TEXT NOT NULL,
    created_at DOUBLE PRECISION NOT NULL, claimed_at DOUBLE PRECISION);
"""),
    (9, "decided calls", """
CREATE TABLE decided_calls (key TEXT PRIMARY KEY, thread_id TEXT NOT NULL, calls TEXT NOT NULL,
    created_at DOUBLE PRECISION NOT NULL);
CREATE INDEX decided_calls_by_thread ON decided_calls (thread_id);
"""),
    # A customer's row is the customer's; a reply recorded before stays unknown (NULL): nothing in the row
    # tells the bot's from a human's (as memory.transcript.MIGRATE_AUTHORS on SQLite).
    (10, "transcript authors and fork branches", """
ALTER TABLE transcript ADD COLUMN author TEXT;
ALTER TABLE transcript ADD COLUMN author_name TEXT;
ALTER TABLE transcript ADD COLUMN forked_off DOUBLE PRECISION;
UPDATE transcript SET author = 'customer' WHERE role = 'user';
"""),
]


def open_pool(url: str, *, max_size: int = 8) -> Any:
    """A psycopg pool for ``url`` whose connections see the ``harness`` schema first, in autocommit mode
    with dict rows (what ``PostgresSaver`` requires; the harness stores open transactions explicitly)."""
    from psycopg.rows import dict_row

    return open_pg_pool(url, name="harness", max_size=max_size, row_factory=dict_row, search_path=SCHEMA)


def migrate(pool: Any, checkpointer: Any | None = None) -> list[int]:
    """Apply the migrations this database lacks (and the checkpointer's own ``setup``); returns the versions
    applied now. Safe to call from many workers at once: the first holds an advisory lock for the few
    statements, the others wait for it and find nothing left to do."""
    applied: list[int] = []
    with pool.connection() as conn:
        # Wait with try-lock and sleep, not inside a blocking statement: LangGraph's migrations build indexes
        # CONCURRENTLY, which wait for every open transaction, a blocked lock call included (a deadlock).
        while not conn.execute("SELECT pg_try_advisory_lock(%s) AS got", (_MIGRATE_LOCK,)).fetchone()["got"]:
            time.sleep(0.1)
        try:
            conn.execute(f"CREATE SCHEMA IF NOT EXISTS {SCHEMA}")
            conn.execute(f"CREATE TABLE IF NOT EXISTS {SCHEMA}.migrations (version INTEGER PRIMARY KEY, "
                         "name TEXT NOT NULL, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())")
            done = {r["version"] for r in conn.execute(f"SELECT version FROM {SCHEMA}.migrations").fetchall()}
            for version, name, sql in MIGRATIONS:
                if version in done:
                    continue
                with conn.transaction():  # a migration applies whole or not at all
                    for statement in sql.split(";"):
                        if statement.strip():
                            conn.execute(statement)
                    conn.execute(f"INSERT INTO {SCHEMA}.migrations (version, name) VALUES (%s, %s)",
                                 (version, name))
                applied.append(version)
            if checkpointer is not None:  # LangGraph's own migrations are not safe to run concurrently
                checkpointer.setup()
        finally:
            conn.execute("SELECT pg_advisory_unlock(%s)", (_MIGRATE_LOCK,))
    return applied


def schema_version(pool: Any) -> int:
    with pool.connection() as conn:
        row = conn.execute(f"SELECT COALESCE(MAX(version), 0) AS v FROM {SCHEMA}.migrations").fetchone()
    return int(row["v"])
