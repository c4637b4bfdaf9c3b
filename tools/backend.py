"""A seeded SQLite backend for a domain's tools, and the wrapper that applies a change once per key.

Domain packs subclass ``SeededSQLite`` with their schema and seed function; their changing tools wrap
themselves with ``changes_once(backend_of)``, which stores each result under ``ctx.idempotency_key`` in the
backend's ``idempotency`` table in the same transaction as the change.
"""

from __future__ import annotations

import functools
import json
import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from lg_harness.tools.context import ToolContext
from lg_harness.tools.errors import ValidationError

IDEMPOTENCY_TABLE = """
CREATE TABLE IF NOT EXISTS idempotency (
    key TEXT PRIMARY KEY, tool TEXT NOT NULL, result_json TEXT NOT NULL, created_at TEXT NOT NULL
)"""

B = TypeVar("B", bound="SeededSQLite")


class SeededSQLite:
    """One SQLite connection shared by a domain's tools, seeded once when its ``SEED_TABLE`` is empty.

    The connection is in autocommit mode; every change goes through :meth:`transaction`, which holds
    ``lock`` and wraps the statements in ``BEGIN IMMEDIATE`` ... ``COMMIT``. Reads take the same
    (re-entrant) lock so another thread never sees a half-done transaction of this connection.

    Subclasses set ``SCHEMA`` (statements separated by ``;``, an ``idempotency`` table among them),
    ``SEED_TABLE`` and :meth:`seed`.
    """

    SCHEMA: ClassVar[str] = IDEMPOTENCY_TABLE
    SEED_TABLE: ClassVar[str] = ""

    def __init__(self, conn: sqlite3.Connection, path: str = ":memory:") -> None:
        self.conn = conn
        self.path = path
        self.lock = threading.RLock()

    @classmethod
    def seed(cls, conn: sqlite3.Connection, seed: int) -> None:
        """Fill the empty tables (deterministically for one ``seed``)."""

    @classmethod
    def fresh_copy(cls: type[B], seed: int = 7) -> B:
        """A new in-memory copy of a per-process seeded template (evaluation cells each need one)."""
        template = _template(cls, seed)
        conn = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
        with template.lock:
            template.conn.backup(conn)
        conn.row_factory = sqlite3.Row
        conn.execute("PRAGMA foreign_keys = ON")
        return cls(conn)

    @classmethod
    def open(cls: type[B], path: str | Path = ":memory:", seed: int = 7) -> B:
        """Open (creating if needed) the database at ``path``; seed it once if ``SEED_TABLE`` is empty."""
        path = str(path)
        if path != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        conn.row_factory = sqlite3.Row
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("PRAGMA busy_timeout = 30000")  # as every harness store: workers wait, they do not fail
        if path != ":memory:":
            conn.execute("PRAGMA journal_mode = WAL")
        db = cls(conn, path)
        with db.transaction():
            # executescript() would COMMIT the open transaction, so run the statements one by one.
            for statement in cls.SCHEMA.split(";"):
                if statement.strip():
                    conn.execute(statement)
            if cls.SEED_TABLE and conn.execute(f"SELECT COUNT(*) FROM {cls.SEED_TABLE}").fetchone()[0] == 0:
                cls.seed(conn, seed)
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

    def close_handoffs(self, thread_id: str, user_id: str) -> None:
        """Mark the thread's waiting handoffs answered (for backends with a ``handoffs`` table)."""
        with self.transaction() as conn:
            conn.execute("UPDATE handoffs SET status = 'answered' WHERE thread_id = ? AND user_id = ? "
                         "AND status = 'waiting'", (thread_id, user_id))

    def query(self, sql: str, params: tuple[Any, ...] | dict[str, Any] = ()) -> list[sqlite3.Row]:
        with self.lock:
            return self.conn.execute(sql, params).fetchall()

    def query_one(self, sql: str, params: tuple[Any, ...] | dict[str, Any] = ()) -> sqlite3.Row | None:
        with self.lock:
            return self.conn.execute(sql, params).fetchone()

    def close(self) -> None:
        with self.lock:
            self.conn.close()

    def __enter__(self: B) -> B:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@functools.lru_cache(maxsize=8)
def _template(cls: type[SeededSQLite], seed: int) -> SeededSQLite:
    return cls.open(":memory:", seed)


def changes_once(backend_of: Callable[[ToolContext], SeededSQLite], now: Callable[[], datetime]
                 ) -> Callable[[Callable[..., dict]], Callable[..., dict]]:
    """Decorator factory: run a changing tool in one transaction, at most once per ``ctx.idempotency_key``.

    A key already stored returns the stored result and changes nothing (a key used by another tool is a
    ``ValidationError``); otherwise the change and its idempotency row commit together. A failing call
    stores nothing. The wrapped tool gets ``changes_state = True`` and ``idempotent = True``.
    """

    def wrap(fn: Callable[..., dict]) -> Callable[..., dict]:
        @functools.wraps(fn)
        def wrapper(ctx: ToolContext, *args: Any, **kwargs: Any) -> dict:
            db = backend_of(ctx)
            key = ctx.idempotency_key
            with db.transaction() as conn:
                if key:
                    row = conn.execute("SELECT tool, result_json FROM idempotency WHERE key = ?", (key,)).fetchone()
                    if row is not None:
                        if row["tool"] != fn.__name__:
                            raise ValidationError(
                                f"Idempotency key {key!r} was already used by {row['tool']}, not {fn.__name__}.")
                        return json.loads(row["result_json"])
                result_json = json.dumps(fn(ctx, *args, **kwargs), ensure_ascii=False, sort_keys=True)
                if key:
                    conn.execute("INSERT INTO idempotency (key, tool, result_json, created_at) VALUES (?, ?, ?, ?)",
                                 (key, fn.__name__, result_json, now().isoformat(timespec="seconds")))
            return json.loads(result_json)

        wrapper.changes_state = True  # type: ignore[attr-defined]
        wrapper.idempotent = True  # type: ignore[attr-defined]  # it honours ctx.idempotency_key
        return wrapper

    return wrap
