"""Storage of the IT service desk: schema, connection handling and transactions."""

from __future__ import annotations

from typing import Any

from lg_harness.tools.backend import SeededDB

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


class HelpdeskDB(SeededDB):
    """The IT service desk on SQLite or Postgres, one code path for the tools (see ``SeededDB``)."""

    SCHEMA = SCHEMA
    SEED_TABLE = "employees"
    # Not judged as changes by a scenario's outcome (see SeededDB): the executor's idempotency records, the
    # log of identity checks, a handoff's queue entry and the ticket an escalation opens (the turn's
    # handoff check judges both), timestamps and the failed-login counter the account tools reset.
    BOOKKEEPING = {"idempotency": ("*",), "verifications": ("*",), "handoffs": ("*",),
                   "tickets": ("updated_at",), "accounts": ("failed_logins", "password_last_reset")}
    BOOKKEEPING_ROWS = {"tickets": {"category": "escalation"}}

    @classmethod
    def seed(cls, conn: Any, seed: int) -> None:
        from lg_harness.domains.helpdesk.seed import seed_helpdesk

        seed_helpdesk(conn, seed)
