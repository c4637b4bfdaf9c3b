"""The audit log on Postgres: ``AuditLog``'s recording, export and stats on a psycopg pool.

Only how a row is written and read changes; the tables come from ``service.pgdb``'s migrations, the
queries and their results are ``AuditLog``'s (one conformance suite runs on both backends).
"""

from __future__ import annotations

import threading
from typing import Any

from lg_harness.obs.audit import AuditLog
from lg_harness.obs.redact import Redactor, default_redactor


class PgAuditLog(AuditLog):
    def __init__(self, pool: Any, redactor: Redactor = default_redactor) -> None:  # noqa: D107
        self.pool = pool
        self.path = None
        self.redactor = redactor
        self._lock = threading.Lock()  # unused: the pool hands each call its own connection

    def close(self) -> None:
        """The pool belongs to the storage that opened it."""

    def _insert(self, table: str, row: dict[str, Any]) -> int:
        cols = ", ".join(row)
        marks = ", ".join("%s" for _ in row)
        with self.pool.connection() as conn:
            got = conn.execute(f"INSERT INTO {table} ({cols}) VALUES ({marks}) RETURNING id", tuple(row.values()))
            return int(got.fetchone()["id"])

    MARK = "%s"

    def _fetch(self, sql: str, params: list[Any]) -> list[Any]:
        with self.pool.connection() as conn:
            return conn.execute(sql, params).fetchall()
