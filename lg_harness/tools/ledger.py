"""The change ledger: every state-changing call is recorded ``pending`` before it runs and ``settled`` after.

A domain's own backend can make its changes exactly once (``tools.backend.changes_once`` keeps the key in
the same transaction as the change). A tool that calls an outside system cannot: the harness only knows
whether it *started* the call. So the executor writes the call's key (thread, the user message it serves,
tool, a hash of the canonical arguments: ``nodes.action``; the same call hashes to the same key, and no key
holds what the customer wrote) to this ledger before the tool runs, and its result after.
When the same call comes again (a message finished after a crash, re-sent, retried):

- ``settled``: the stored result is the answer; the tool does not run again.
- ``pending`` (the process died between the tool and the settle, or a non-idempotent attempt timed out):
  a tool that honours the idempotency key (``idempotent=True``) runs again with the same key; any other
  tool does not run: whether its change happened is unknown, so a person has to look (``outcome_uncertain``).
- ``failed`` (the tool answered with an error: nothing was applied): it may run again.

A person who answers a handoff has checked the pending changes it listed: ``resolve`` settles them as
checked (``graphs.app.Harness.human_reply``), so nothing runs them again.

The ledger also keeps each **decided** set of calls (``decide``): the action node records a model answer that
holds a change before the change runs, under the thread, the message, the round and the message's text
(``nodes.action``). Asked again after a crash, the node takes that answer instead of asking the model, which
would word its arguments differently and so make a new change (``docs/reliability.md``).

Two backends with one behaviour (``tests/service/test_store_conformance.py``): a SQLite file in the data dir (in
memory without one) and the table ``change_ledger`` on Postgres (``service.pgdb`` migration 6).
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from lg_harness.obs.redact import default_redactor, redact_value

PENDING, SETTLED, FAILED = "pending", "settled", "failed"
CHECKED = {"checked_by_person": True}  # the stored result of a pending change a person resolved
LEDGER_RESOURCE = "change_ledger"  # the graph resource that carries a harness's ledger to the action node

SQLITE_SCHEMA = """
CREATE TABLE IF NOT EXISTS change_ledger (key TEXT PRIMARY KEY, thread_id TEXT NOT NULL, tool TEXT NOT NULL,
    args TEXT NOT NULL, status TEXT NOT NULL, result TEXT, error_type TEXT, error TEXT,
    attempts INTEGER NOT NULL DEFAULT 1, created_at REAL NOT NULL, settled_at REAL)"""
DECIDED_SCHEMA = """
CREATE TABLE IF NOT EXISTS decided_calls (key TEXT PRIMARY KEY, thread_id TEXT NOT NULL, calls TEXT NOT NULL,
    created_at REAL NOT NULL)"""
_COLUMNS = "key, thread_id, tool, args, status, result, error_type, error, attempts, created_at, settled_at"


@dataclass(frozen=True)
class LedgerEntry:
    """One recorded change: what was called, and how far it got."""

    key: str
    thread_id: str
    tool: str
    args: dict[str, Any]
    status: str  # pending | settled | failed
    result: Any = None
    error_type: str | None = None
    error: str | None = None
    attempts: int = 1
    created_at: float = 0.0
    settled_at: float | None = None

    @classmethod
    def from_row(cls, row: Any) -> LedgerEntry:
        r = dict(row)
        return cls(key=r["key"], thread_id=r["thread_id"], tool=r["tool"], args=json.loads(r["args"]),
                   status=r["status"], result=json.loads(r["result"]) if r["result"] is not None else None,
                   error_type=r["error_type"], error=r["error"], attempts=int(r["attempts"]),
                   created_at=float(r["created_at"]), settled_at=r["settled_at"])

    def public(self) -> dict[str, Any]:
        """What a handoff payload or an operator view carries (no stored result)."""
        return {"key": self.key, "thread_id": self.thread_id, "tool": self.tool, "args": self.args,
                "status": self.status, "attempts": self.attempts, "created_at": self.created_at}


class ChangeLedger(Protocol):
    def begin(self, key: str, thread_id: str, tool: str, args: dict[str, Any]) -> LedgerEntry | None:
        """Record ``key`` as pending, unless the ledger already knows it.

        Returns None when the call should run now (new, or an earlier attempt failed), else the earlier entry:
        ``settled`` (answer with its result) or ``pending`` (it may have applied; its attempts now count this
        one)."""
        ...

    def settle(self, key: str, result: Any) -> None: ...

    def fail(self, key: str, error_type: str | None, error: str | None) -> None: ...

    def get(self, key: str) -> LedgerEntry | None: ...

    def pending(self, thread_id: str | None = None) -> list[LedgerEntry]: ...

    def resolve(self, keys: list[str]) -> int:
        """A person checked these pending changes (answering the handoff that listed them): settle them as
        checked, so nothing runs them again and the operator view no longer lists them. Returns how many."""
        ...

    def decide(self, key: str, thread_id: str, decision: dict[str, Any]) -> dict[str, Any]:
        """Record ``decision`` (the calls a model answer asked for) under ``key`` unless one is recorded
        already; returns the decision that stands, the first one recorded."""
        ...

    def decision(self, key: str) -> dict[str, Any] | None:
        """The decision recorded under ``key``, if any."""
        ...

    def forget(self, thread_ids: list[str]) -> int:
        """Delete the settled and failed changes and the decided calls of deleted threads (``harness prune``);
        pending changes stay, a person has to check them. Returns how many rows went."""
        ...

    def close(self) -> None: ...


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


def args_at_rest(args: dict[str, Any]) -> str:
    """A change's arguments as the ledger keeps them: ids as they are (the person who checks a pending change
    finds the order or the ticket), contact details and card numbers masked. Nothing runs a call again from
    these (a decided call keeps its own arguments); the key says which call it was (a hash, never the text)."""
    return _json(redact_value(args, default_redactor))


class SqliteLedger:
    """The ledger in one SQLite file (WAL, a busy timeout: several processes on one data dir share it)."""

    def __init__(self, path: str | Path = ":memory:", *, clock: Any = time.time, busy_timeout_s: float = 30.0) -> None:
        self.clock = clock
        self.lock = threading.Lock()
        self.conn = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None, timeout=busy_timeout_s)
        self.conn.row_factory = sqlite3.Row
        if str(path) != ":memory:":
            self.conn.execute("PRAGMA journal_mode = WAL")
        self.conn.execute(SQLITE_SCHEMA)
        self.conn.execute(DECIDED_SCHEMA)

    def begin(self, key: str, thread_id: str, tool: str, args: dict[str, Any]) -> LedgerEntry | None:
        with self.lock:
            self.conn.execute("BEGIN IMMEDIATE")  # read and write as one step against other processes
            try:
                row = self.conn.execute(f"SELECT {_COLUMNS} FROM change_ledger WHERE key = ?", (key,)).fetchone()
                earlier = LedgerEntry.from_row(row) if row is not None else None
                if earlier is None:
                    self.conn.execute("INSERT INTO change_ledger (key, thread_id, tool, args, status, created_at) "
                                      "VALUES (?, ?, ?, ?, ?, ?)", (key, thread_id, tool, args_at_rest(args), PENDING,
                                                                    self.clock()))
                elif earlier.status != SETTLED:
                    self.conn.execute("UPDATE change_ledger SET status = ?, attempts = attempts + 1, error_type = NULL,"
                                      " error = NULL WHERE key = ?", (PENDING, key))
                self.conn.execute("COMMIT")
            except BaseException:
                self.conn.execute("ROLLBACK")
                raise
        return None if earlier is None or earlier.status == FAILED else earlier

    def settle(self, key: str, result: Any) -> None:
        with self.lock:
            self.conn.execute("UPDATE change_ledger SET status = ?, result = ?, settled_at = ? WHERE key = ?",
                              (SETTLED, _json(result), self.clock(), key))

    def fail(self, key: str, error_type: str | None, error: str | None) -> None:
        with self.lock:
            self.conn.execute("UPDATE change_ledger SET status = ?, error_type = ?, error = ?, settled_at = ? "
                              "WHERE key = ?", (FAILED, error_type, error, self.clock(), key))

    def get(self, key: str) -> LedgerEntry | None:
        with self.lock:
            row = self.conn.execute(f"SELECT {_COLUMNS} FROM change_ledger WHERE key = ?", (key,)).fetchone()
        return LedgerEntry.from_row(row) if row is not None else None

    def pending(self, thread_id: str | None = None) -> list[LedgerEntry]:
        sql = f"SELECT {_COLUMNS} FROM change_ledger WHERE status = ?"
        params: tuple[Any, ...] = (PENDING,)
        if thread_id is not None:
            sql, params = sql + " AND thread_id = ?", (PENDING, thread_id)
        with self.lock:
            rows = self.conn.execute(sql + " ORDER BY created_at, key", params).fetchall()
        return [LedgerEntry.from_row(r) for r in rows]

    def resolve(self, keys: list[str]) -> int:
        with self.lock:
            return sum(self.conn.execute("UPDATE change_ledger SET status = ?, result = ?, settled_at = ? WHERE key = ?"
                                         " AND status = ?", (SETTLED, _json(CHECKED), self.clock(), key, PENDING)
                                         ).rowcount for key in keys)

    def decide(self, key: str, thread_id: str, decision: dict[str, Any]) -> dict[str, Any]:
        with self.lock:
            self.conn.execute("INSERT INTO decided_calls (key, thread_id, calls, created_at) VALUES (?, ?, ?, ?) "
                              "ON CONFLICT (key) DO NOTHING", (key, thread_id, _json(decision), self.clock()))
            row = self.conn.execute("SELECT calls FROM decided_calls WHERE key = ?", (key,)).fetchone()
        return json.loads(row["calls"])

    def decision(self, key: str) -> dict[str, Any] | None:
        with self.lock:
            row = self.conn.execute("SELECT calls FROM decided_calls WHERE key = ?", (key,)).fetchone()
        return json.loads(row["calls"]) if row is not None else None

    def forget(self, thread_ids: list[str]) -> int:
        marks = ",".join("?" for _ in thread_ids)
        with self.lock:
            gone = self.conn.execute(f"DELETE FROM change_ledger WHERE status != ? AND thread_id IN ({marks})",
                                     (PENDING, *thread_ids)).rowcount
            return gone + self.conn.execute(f"DELETE FROM decided_calls WHERE thread_id IN ({marks})",
                                            tuple(thread_ids)).rowcount

    def close(self) -> None:
        with self.lock:
            self.conn.close()


class PgLedger:
    """The ledger in Postgres (table ``change_ledger``, migration 6), on the harness's pool."""

    def __init__(self, pool: Any, *, clock: Any = time.time) -> None:
        self.pool = pool
        self.clock = clock

    def begin(self, key: str, thread_id: str, tool: str, args: dict[str, Any]) -> LedgerEntry | None:
        with self.pool.connection() as conn, conn.transaction():
            fresh = conn.execute("INSERT INTO change_ledger (key, thread_id, tool, args, status, created_at) VALUES "
                                 "(%s, %s, %s, %s, %s, %s) ON CONFLICT (key) DO NOTHING RETURNING key",
                                 (key, thread_id, tool, args_at_rest(args), PENDING, self.clock())).fetchone()
            if fresh is not None:
                return None
            # the row lock makes a concurrent begin of the same key wait for this one's verdict
            row = conn.execute(f"SELECT {_COLUMNS} FROM change_ledger WHERE key = %s FOR UPDATE", (key,)).fetchone()
            earlier = LedgerEntry.from_row(row)
            if earlier.status != SETTLED:
                conn.execute("UPDATE change_ledger SET status = %s, attempts = attempts + 1, error_type = NULL, "
                             "error = NULL WHERE key = %s", (PENDING, key))
        return None if earlier.status == FAILED else earlier

    def settle(self, key: str, result: Any) -> None:
        with self.pool.connection() as conn:
            conn.execute("UPDATE change_ledger SET status = %s, result = %s, settled_at = %s WHERE key = %s",
                         (SETTLED, _json(result), self.clock(), key))

    def fail(self, key: str, error_type: str | None, error: str | None) -> None:
        with self.pool.connection() as conn:
            conn.execute("UPDATE change_ledger SET status = %s, error_type = %s, error = %s, settled_at = %s "
                         "WHERE key = %s", (FAILED, error_type, error, self.clock(), key))

    def get(self, key: str) -> LedgerEntry | None:
        with self.pool.connection() as conn:
            row = conn.execute(f"SELECT {_COLUMNS} FROM change_ledger WHERE key = %s", (key,)).fetchone()
        return LedgerEntry.from_row(row) if row is not None else None

    def pending(self, thread_id: str | None = None) -> list[LedgerEntry]:
        sql = f"SELECT {_COLUMNS} FROM change_ledger WHERE status = %s"
        params: tuple[Any, ...] = (PENDING,)
        if thread_id is not None:
            sql, params = sql + " AND thread_id = %s", (PENDING, thread_id)
        with self.pool.connection() as conn:
            rows = conn.execute(sql + " ORDER BY created_at, key", params).fetchall()
        return [LedgerEntry.from_row(r) for r in rows]

    def resolve(self, keys: list[str]) -> int:
        with self.pool.connection() as conn:
            return sum(conn.execute("UPDATE change_ledger SET status = %s, result = %s, settled_at = %s WHERE key = %s"
                                    " AND status = %s", (SETTLED, _json(CHECKED), self.clock(), key, PENDING)
                                    ).rowcount for key in keys)

    def decide(self, key: str, thread_id: str, decision: dict[str, Any]) -> dict[str, Any]:
        with self.pool.connection() as conn:
            conn.execute("INSERT INTO decided_calls (key, thread_id, calls, created_at) VALUES (%s, %s, %s, %s) "
                         "ON CONFLICT (key) DO NOTHING", (key, thread_id, _json(decision), self.clock()))
            row = conn.execute("SELECT calls FROM decided_calls WHERE key = %s", (key,)).fetchone()
        return json.loads(row["calls"])

    def decision(self, key: str) -> dict[str, Any] | None:
        with self.pool.connection() as conn:
            row = conn.execute("SELECT calls FROM decided_calls WHERE key = %s", (key,)).fetchone()
        return json.loads(row["calls"]) if row is not None else None

    def forget(self, thread_ids: list[str]) -> int:
        with self.pool.connection() as conn:
            gone = conn.execute("DELETE FROM change_ledger WHERE status != %s AND thread_id = ANY(%s)",
                                (PENDING, thread_ids)).rowcount
            return gone + conn.execute("DELETE FROM decided_calls WHERE thread_id = ANY(%s)", (thread_ids,)).rowcount

    def close(self) -> None:
        """The pool belongs to the stores that opened it."""
