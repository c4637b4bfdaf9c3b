"""Exact, per-user facts in SQLite: the "facts in SQL" half of long-term memory.

A fact is a (user_id, key) -> value pair such as ``("u1", "shipping_address") -> "12 Elm St"``.
Only confirmed, stable information belongs here: ``put`` requires the caller to say so with the
keyword-only ``confirmed`` flag, and ``confirmed=False`` writes nothing. The flag has no default on
purpose, so every call site states its decision instead of relying on a silent no-op.

History is never lost: when a key gets a different value, the old row is kept with ``stale=1`` and the
new row becomes current. ``mark_stale`` retires the current value without deleting it.
Values are stored as JSON, so strings, numbers, lists and dicts round-trip unchanged.

Beside the facts the same database keeps the rest of long-term memory's SQL state: how often each experience
helped (``add_hits``/``hits``: a row per record, not a metadata update in Chroma per hit) and what a message
asked to remember until it is written (``enqueue``/``claim``/``settle``, drained by ``memory.writer``).
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

Clock = Callable[[], float]
"""Returns the current time as epoch seconds; injected so tests are deterministic."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS facts (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id TEXT NOT NULL,
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    confidence REAL NOT NULL,
    source TEXT NOT NULL DEFAULT '',
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    stale INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS facts_user_key ON facts (user_id, key, stale);
CREATE TABLE IF NOT EXISTS experience_hits (
    user_id TEXT NOT NULL,
    record_id TEXT NOT NULL,
    hits INTEGER NOT NULL,
    PRIMARY KEY (user_id, record_id)
);
CREATE TABLE IF NOT EXISTS memory_pending (
    key TEXT PRIMARY KEY,
    user_id TEXT NOT NULL,
    payload TEXT NOT NULL,
    created_at REAL NOT NULL,
    claimed_at REAL
);
"""

_COLUMNS = "id, user_id, key, value, confidence, source, created_at, updated_at, stale"


def to_epoch(now: float | datetime | None, clock: Clock) -> float:
    """Epoch seconds from an explicit ``now`` (float or datetime), else from ``clock``."""
    if now is None:
        return float(clock())
    if isinstance(now, datetime):
        return now.timestamp()
    return float(now)


@dataclass(frozen=True)
class PendingWrite:
    """What one message asked long-term memory to keep, durable until ``settle``."""

    key: str  # the message it came from (thread and turn): enqueueing it again replaces it
    user_id: str
    payload: dict[str, Any]


# A claim older than this belongs to a writer that died: the next drain takes the row over.
CLAIM_EXPIRES_S = 60.0


@dataclass(frozen=True)
class Fact:
    """One version of a fact. ``stale`` versions are history, the newest non-stale one is current."""

    id: int
    user_id: str
    key: str
    value: Any
    confidence: float
    source: str
    created_at: float
    updated_at: float
    stale: bool


def _row_to_fact(row: tuple) -> Fact:
    rid, user_id, key, value, confidence, source, created_at, updated_at, stale = row
    return Fact(rid, user_id, key, json.loads(value), confidence, source, created_at, updated_at, bool(stale))


class FactStore:
    """Per-user exact facts with version history, in one SQLite file (or ``":memory:"``).

    Every method takes ``user_id`` and every query filters on it, so one user can never read or
    change another user's facts. Safe to share between threads (one connection behind a lock).

    Args:
        path: SQLite file (parent folders are created) or ``":memory:"``.
        clock: time source for ``created_at``/``updated_at`` when no ``now`` is passed.
    """

    def __init__(self, path: str | Path = ":memory:", *, clock: Clock = time.time) -> None:
        if str(path) != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        self._clock = clock
        self._lock = threading.Lock()
        # One connection shared by the graph's worker threads; the lock serialises access.
        self._db = sqlite3.connect(str(path), check_same_thread=False, timeout=30)  # several workers: wait, not fail
        if str(path) != ":memory:":
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")  # see graphs.storage: a killed process loses nothing
        self._db.executescript(_SCHEMA)
        self._db.commit()

    def put(
        self,
        user_id: str,
        key: str,
        value: Any,
        *,
        confirmed: bool,
        confidence: float = 1.0,
        source: str = "",
        now: float | datetime | None = None,
    ) -> Fact | None:
        """Store a confirmed fact and return the current version.

        The same value again refreshes ``updated_at`` and keeps the higher confidence (the first
        ``source`` stays: it says where the fact was first stated). A different value marks the old
        current row stale and inserts a new current row.

        Args:
            user_id: owner of the fact.
            key: fact name, e.g. ``"shipping_address"``.
            value: any JSON-serialisable value.
            confirmed: the caller's statement that this is confirmed, stable information;
                ``False`` writes nothing and returns ``None``.
            confidence: 0..1.
            source: where it came from, e.g. ``"thread-7/turn-3"``.
            now: timestamp override (epoch seconds or datetime).

        Returns:
            The current ``Fact`` after the write, or ``None`` when ``confirmed`` is false.
        """
        if not confirmed:
            return None
        ts = to_epoch(now, self._clock)
        encoded = json.dumps(value, sort_keys=True, ensure_ascii=False)
        with self._lock, self._db:
            current = self._current_row(user_id, key)
            if current is not None and current[3] == encoded:
                self._db.execute(
                    "UPDATE facts SET updated_at = MAX(updated_at, ?), confidence = MAX(confidence, ?) WHERE id = ?",
                    (ts, confidence, current[0]),
                )
                rid = current[0]
            else:
                self._retire(user_id, key, ts)
                rid = self._db.execute(
                    "INSERT INTO facts (user_id, key, value, confidence, source, created_at, updated_at)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (user_id, key, encoded, confidence, source, ts, ts),
                ).lastrowid
                if rid is None:  # sqlite3 sets it after every INSERT
                    raise RuntimeError("the new fact's INSERT gave no row id")
            return self._by_id(rid)

    def get(self, user_id: str, key: str) -> Fact | None:
        """The current (newest non-stale) version of ``key`` for ``user_id``, or ``None``."""
        with self._lock:
            row = self._current_row(user_id, key)
        return _row_to_fact(row) if row else None

    def value(self, user_id: str, key: str, default: Any = None) -> Any:
        """Shortcut for the current value of ``key``, or ``default``."""
        fact = self.get(user_id, key)
        return default if fact is None else fact.value

    def history(self, user_id: str, key: str) -> list[Fact]:
        """Every version of ``key`` for ``user_id``, oldest first (stale ones included)."""
        with self._lock:
            rows = self._db.execute(
                f"SELECT {_COLUMNS} FROM facts WHERE user_id = ? AND key = ? ORDER BY created_at, id",
                (user_id, key),
            ).fetchall()
        return [_row_to_fact(r) for r in rows]

    def mark_stale(self, user_id: str, key: str, *, now: float | datetime | None = None) -> bool:
        """Retire the current value of ``key`` (kept in history). Returns whether anything changed."""
        ts = to_epoch(now, self._clock)
        with self._lock, self._db:
            return self._retire(user_id, key, ts) > 0

    def all(self, user_id: str, *, include_stale: bool = False) -> list[Fact]:
        """The user's current facts sorted by key; with ``include_stale`` every version."""
        where = "user_id = ?" if include_stale else "user_id = ? AND stale = 0"
        with self._lock:
            rows = self._db.execute(
                f"SELECT {_COLUMNS} FROM facts WHERE {where} ORDER BY key, created_at, id", (user_id,)
            ).fetchall()
        return [_row_to_fact(r) for r in rows]

    def add_hits(self, user_id: str, record_ids: list[str], count: int = 1) -> None:
        """``count`` more hits for each of the user's experience records (ownership is checked by the caller)."""
        with self._lock, self._db:
            self._db.executemany(
                "INSERT INTO experience_hits VALUES (?, ?, ?) ON CONFLICT (user_id, record_id) "
                "DO UPDATE SET hits = hits + excluded.hits", [(user_id, rid, count) for rid in record_ids])

    def hits(self, user_id: str, record_ids: list[str]) -> dict[str, int]:
        """Hit counts of the user's records among ``record_ids`` (records never credited are left out)."""
        if not record_ids:
            return {}
        marks = ",".join("?" for _ in record_ids)
        with self._lock:
            rows = self._db.execute(f"SELECT record_id, hits FROM experience_hits WHERE user_id = ? AND record_id "
                                    f"IN ({marks})", (user_id, *record_ids)).fetchall()
        return dict(rows)

    def enqueue(self, key: str, user_id: str, payload: dict[str, Any]) -> None:
        """Keep what a message asked to remember until it is written; the same ``key`` again replaces it."""
        with self._lock, self._db:
            self._db.execute("INSERT OR REPLACE INTO memory_pending VALUES (?, ?, ?, ?, NULL)",
                             (key, user_id, json.dumps(payload, ensure_ascii=False), self._clock()))

    def claim(self, *, now: float | None = None, expires_s: float = CLAIM_EXPIRES_S) -> list[PendingWrite]:
        """Take every pending write no live writer holds, oldest first; ``settle`` them once written."""
        ts = time.time() if now is None else now
        with self._lock, self._db:
            rows = self._db.execute(
                "UPDATE memory_pending SET claimed_at = ? WHERE claimed_at IS NULL OR claimed_at < ? "
                "RETURNING key, user_id, payload, created_at", (ts, ts - expires_s)).fetchall()
        return [PendingWrite(k, u, json.loads(p)) for k, u, p, _ in sorted(rows, key=lambda r: (r[3], r[0]))]

    def settle(self, keys: list[str]) -> None:
        """The claimed writes are in long-term memory: forget them."""
        with self._lock, self._db:
            self._db.executemany("DELETE FROM memory_pending WHERE key = ?", [(k,) for k in keys])

    def close(self) -> None:
        """Close the SQLite connection (idempotent)."""
        with self._lock:
            self._db.close()

    def _current_row(self, user_id: str, key: str) -> tuple | None:
        return self._db.execute(
            f"SELECT {_COLUMNS} FROM facts WHERE user_id = ? AND key = ? AND stale = 0"
            " ORDER BY created_at DESC, id DESC LIMIT 1",
            (user_id, key),
        ).fetchone()

    def _retire(self, user_id: str, key: str, ts: float) -> int:
        # updated_at records when the row stopped being current.
        cur = self._db.execute(
            "UPDATE facts SET stale = 1, updated_at = MAX(updated_at, ?) WHERE user_id = ? AND key = ? AND stale = 0",
            (ts, user_id, key),
        )
        return cur.rowcount

    def _by_id(self, rid: int) -> Fact:
        row = self._db.execute(f"SELECT {_COLUMNS} FROM facts WHERE id = ?", (rid,)).fetchone()
        return _row_to_fact(row)
