"""SQLite storage of the IT service desk: schema, connection handling and transactions."""

from __future__ import annotations

import functools
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

SCHEMA = """
CREATE TABLE IF NOT EXISTS employees (
    id TEXT PRIMARY KEY, name TEXT NOT NULL, role TEXT NOT NULL CHECK (role = 'employee'),
    department TEXT NOT NULL, email TEXT NOT NULL, phone TEXT NOT NULL, pin TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS agents (
    id TEXT PRIMARY KEY, name TEXT NOT NULL, role TEXT NOT NULL CHECK (role = 'agent'),
    team TEXT NOT NULL, email TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS accounts (
    employee_id TEXT PRIMARY KEY REFERENCES employees(id), username TEXT NOT NULL,
    locked INTEGER NOT NULL DEFAULT 0, failed_logins INTEGER NOT NULL DEFAULT 0,
    password_last_reset TEXT NOT NULL, must_change INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS tickets (
    id TEXT PRIMARY KEY, owner_id TEXT NOT NULL REFERENCES employees(id), assignee_id TEXT REFERENCES agents(id),
    status TEXT NOT NULL CHECK (status IN ('new', 'in_progress', 'resolved', 'closed')),
    priority TEXT NOT NULL CHECK (priority IN ('low', 'medium', 'high', 'critical')),
    category TEXT NOT NULL, short_description TEXT NOT NULL, created_at TEXT NOT NULL, updated_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS ticket_comments (
    id INTEGER PRIMARY KEY AUTOINCREMENT, ticket_id TEXT NOT NULL REFERENCES tickets(id),
    author_id TEXT NOT NULL, body TEXT NOT NULL, created_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS assets (
    id TEXT PRIMARY KEY, kind TEXT NOT NULL CHECK (kind IN ('laptop', 'monitor', 'phone')),
    model TEXT NOT NULL, serial TEXT NOT NULL, employee_id TEXT REFERENCES employees(id),
    status TEXT NOT NULL CHECK (status IN ('in_use', 'in_repair', 'in_stock', 'retired')),
    assigned_at TEXT, warranty_until TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS access_requests (
    id TEXT PRIMARY KEY, employee_id TEXT NOT NULL REFERENCES employees(id), system TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('pending', 'approved', 'rejected')),
    reason TEXT NOT NULL, created_at TEXT NOT NULL, decided_at TEXT
);
CREATE TABLE IF NOT EXISTS kb_articles (
    id TEXT PRIMARY KEY, title TEXT NOT NULL, title_zh TEXT, category TEXT NOT NULL,
    audience TEXT NOT NULL CHECK (audience IN ('all', 'agent')), body TEXT NOT NULL, updated_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS verifications (
    id INTEGER PRIMARY KEY AUTOINCREMENT, thread_id TEXT NOT NULL, employee_id TEXT NOT NULL,
    verified_by TEXT NOT NULL, ok INTEGER NOT NULL, created_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS handoffs (
    id INTEGER PRIMARY KEY AUTOINCREMENT, user_id TEXT NOT NULL, thread_id TEXT NOT NULL,
    ticket_id TEXT NOT NULL, reason TEXT NOT NULL, created_at TEXT NOT NULL, status TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS idempotency (
    key TEXT PRIMARY KEY, tool TEXT NOT NULL, result_json TEXT NOT NULL, created_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS idx_tickets_owner ON tickets(owner_id, created_at);
CREATE INDEX IF NOT EXISTS idx_assets_employee ON assets(employee_id);
CREATE INDEX IF NOT EXISTS idx_requests_employee ON access_requests(employee_id);
CREATE INDEX IF NOT EXISTS idx_verifications_thread ON verifications(thread_id, employee_id);
"""


class HelpdeskDB:
    """One SQLite connection shared by the helpdesk tools (same shape as the shop's ``ShopDB``).

    The connection is in autocommit mode; every change goes through :meth:`transaction`, which holds
    ``lock`` and wraps the statements in ``BEGIN IMMEDIATE`` ... ``COMMIT``. Reads take the same
    (re-entrant) lock so another thread never sees a half-done transaction of this connection.
    """

    def __init__(self, conn: sqlite3.Connection, path: str = ":memory:") -> None:
        self.conn = conn
        self.path = path
        self.lock = threading.RLock()

    @classmethod
    def fresh_copy(cls, seed: int = 7) -> HelpdeskDB:
        """A new in-memory service desk, copied from a per-process seeded template (one per evaluation cell)."""
        template = _template(seed)
        conn = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
        with template.lock:
            template.conn.backup(conn)
        conn.row_factory = sqlite3.Row
        conn.execute("PRAGMA foreign_keys = ON")
        return cls(conn)

    @classmethod
    def open(cls, path: str | Path = ":memory:", seed: int = 7) -> HelpdeskDB:
        """Open (creating if needed) the service desk at ``path``; seed it once if it holds no employees."""
        path = str(path)
        if path != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        conn.row_factory = sqlite3.Row
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("PRAGMA busy_timeout = 5000")
        if path != ":memory:":
            conn.execute("PRAGMA journal_mode = WAL")
        db = cls(conn, path)
        with db.transaction():
            _create_schema(conn)
            if conn.execute("SELECT COUNT(*) FROM employees").fetchone()[0] == 0:
                from lg_harness.domains.helpdesk.seed import seed_helpdesk

                seed_helpdesk(conn, seed)
        return db

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """Hold the lock and run the block in one transaction: commit on success, roll back on error."""
        with self.lock:
            if self.conn.in_transaction:  # nested use: the outer block commits
                yield self.conn
                return
            self.conn.execute("BEGIN IMMEDIATE")
            try:
                yield self.conn
            except BaseException:
                self.conn.execute("ROLLBACK")
                raise
            self.conn.execute("COMMIT")

    def query(self, sql: str, params: tuple[Any, ...] | dict[str, Any] = ()) -> list[sqlite3.Row]:
        with self.lock:
            return self.conn.execute(sql, params).fetchall()

    def query_one(self, sql: str, params: tuple[Any, ...] | dict[str, Any] = ()) -> sqlite3.Row | None:
        with self.lock:
            return self.conn.execute(sql, params).fetchone()

    def close(self) -> None:
        with self.lock:
            self.conn.close()

    def __enter__(self) -> HelpdeskDB:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@functools.lru_cache(maxsize=4)
def _template(seed: int) -> HelpdeskDB:
    return HelpdeskDB.open(":memory:", seed)


def _create_schema(conn: sqlite3.Connection) -> None:
    # executescript() would COMMIT the open transaction, so run the statements one by one.
    for statement in SCHEMA.split(";"):
        if statement.strip():
            conn.execute(statement)
