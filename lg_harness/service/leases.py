"""Per-thread order across workers: a queue of messages per thread and one lease per thread, in SQL.

Every message is a row in ``thread_queue`` (its id is its place in arrival order). A worker serves a thread's
oldest open row only while it holds the thread's row in ``thread_leases``, taken atomically (an upsert that
only replaces an expired lease) and renewed every ``ttl / 3`` seconds while the message runs. No database
connection or lock is held through a model call: a worker that dies simply stops renewing, the lease expires
after ``ttl``, and the next worker to look takes it and finishes the message (``recovered`` on its claim).

Two kinds of rows share the queue:

* payload rows (``send``, ``finish``, ``human_reply``) carry everything needed to run them, so any worker
  may serve them, and one whose caller went away is still served;
* ``turn`` rows belong to a caller in this process that runs the message itself (``LeaseOrder.turn``, used by
  ``Harness.send`` from the CLI). While such a row waits, its caller keeps ``waiter_expires_at`` fresh; a
  row whose caller stopped doing so (it died) is abandoned by whoever finds it at the head.

What happens to a second message while one runs is the policy given to ``enqueue``: ``enqueue`` (default)
queues it, ``reject`` refuses it (``ThreadBusy``), ``interrupt`` asks the running message to stop at its next
node (its state so far stays in the checkpoint) and queues the new one.

The same SQL runs on SQLite (one data dir, one machine; ``BEGIN IMMEDIATE`` makes each step atomic) and on
Postgres (a transaction-scoped advisory lock per thread for the few statements of one step).
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lg_harness.errors import HarnessError, RunError
from lg_harness.service.fencing import Fence, Fences

OPEN = ("queued", "running")
TERMINAL = ("done", "failed", "cancelled", "abandoned")
PAYLOAD_KINDS = ("send", "finish", "human_reply")
POLICIES = ("enqueue", "reject", "interrupt")

_SQLITE_SCHEMA = """
CREATE TABLE IF NOT EXISTS thread_queue (id INTEGER PRIMARY KEY AUTOINCREMENT, thread_id TEXT NOT NULL,
    kind TEXT NOT NULL, payload TEXT NOT NULL, status TEXT NOT NULL, result TEXT, error TEXT, worker TEXT,
    attempts INTEGER NOT NULL DEFAULT 0, cancel INTEGER NOT NULL DEFAULT 0, turn_before INTEGER,
    waiter_expires_at REAL, created_at REAL NOT NULL, started_at REAL, finished_at REAL);
CREATE INDEX IF NOT EXISTS thread_queue_open ON thread_queue (thread_id, id) WHERE status IN ('queued', 'running');
CREATE TABLE IF NOT EXISTS thread_leases (thread_id TEXT PRIMARY KEY, worker TEXT NOT NULL,
    message_id INTEGER NOT NULL, expires_at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS message_events (message_id INTEGER NOT NULL, seq INTEGER NOT NULL, event TEXT NOT NULL,
    PRIMARY KEY (message_id, seq));
"""


class ThreadBusy(RunError):
    """A message arrived while another runs on the thread, and the policy is ``reject``."""


def worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"


@dataclass
class Claim:
    """A message a worker now serves, with the thread's lease."""

    id: int
    thread_id: str
    kind: str
    payload: dict[str, Any]
    attempts: int
    recovered: bool  # an earlier worker started it and its lease expired
    turn_before: int | None


# ------------------------------------------------------------------------------------- the two engines


class _SqliteDb:
    now = "((julianday('now') - 2440587.5) * 86400.0)"

    def __init__(self, path: str | Path) -> None:
        self.conn = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None, timeout=30)
        self.conn.row_factory = sqlite3.Row
        if str(path) != ":memory:":
            self.conn.execute("PRAGMA journal_mode = WAL")
        # A finished row's text is masked in place: the space the original held is zeroed, not left free.
        self.conn.execute("PRAGMA secure_delete = ON")
        self.lock = threading.RLock()
        with self.lock:
            self.conn.executescript(_SQLITE_SCHEMA)

    @contextmanager
    def step(self, thread_id: str | None = None) -> Iterator[Any]:
        with self.lock:
            self.conn.execute("BEGIN IMMEDIATE")
            try:
                yield self
            except BaseException:
                self.conn.execute("ROLLBACK")
                raise
            self.conn.execute("COMMIT")

    def run(self, sql: str, params: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
        with self.lock:
            return [dict(r) for r in self.conn.execute(sql.replace("%s", "?"), params).fetchall()]

    def settling(self) -> Any:
        """Held while a finished row is stored and scrubbed: no reader of this process sees it done while its
        raw text is still in the write-ahead log."""
        return self.lock

    def scrub(self) -> None:
        """Fold the write-ahead log into the file and empty it: the WAL keeps every page as first written (a
        message's raw text) until a checkpoint overwrites it. A reader in another process may hold the log for
        a moment: wait at most a second, and the next finished message tries again."""
        with self.lock:
            self.conn.execute("PRAGMA busy_timeout = 1000")
            try:
                self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
            except sqlite3.OperationalError:
                pass
            finally:
                self.conn.execute("PRAGMA busy_timeout = 30000")

    def close(self) -> None:
        with self.lock:
            self.conn.close()


class _PgDb:
    now = "EXTRACT(EPOCH FROM clock_timestamp())::double precision"

    def __init__(self, pool: Any) -> None:
        self.pool = pool
        self._conn = threading.local()

    def settling(self) -> Any:
        return nullcontext()  # Postgres keeps no log of a row's old text for a reader to see

    @contextmanager
    def step(self, thread_id: str | None = None) -> Iterator[Any]:
        with self.pool.connection() as conn, conn.transaction():
            if thread_id is not None:
                conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"queue:{thread_id}",))
            self._conn.c = conn
            try:
                yield self
            finally:
                self._conn.c = None

    def run(self, sql: str, params: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
        conn = getattr(self._conn, "c", None)
        if conn is not None:
            cur = conn.execute(sql, params)
            return list(cur.fetchall()) if cur.description else []
        with self.pool.connection() as conn:
            cur = conn.execute(sql, params)
            return list(cur.fetchall()) if cur.description else []

    def scrub(self) -> None:
        """Postgres keeps an updated row's old version until VACUUM, and its WAL until recycled: an operator's
        matter (docs/privacy.md), not one statement per message."""

    def close(self) -> None:
        """The pool belongs to the storage that opened it."""


# ------------------------------------------------------------------------------------------- the queue


class ThreadQueue:
    """The per-thread message queue and leases (see the module docstring)."""

    def __init__(self, db: _SqliteDb | _PgDb, *, ttl: float = 30.0, worker: str | None = None,
                 fences: Fences | None = None) -> None:
        self.db = db
        self.ttl = float(ttl)
        self.worker = worker or worker_name()
        self.fences = fences if fences is not None else Fences()

    @classmethod
    def sqlite(cls, path: str | Path, **kw: Any) -> ThreadQueue:
        return cls(_SqliteDb(path), **kw)

    @classmethod
    def postgres(cls, pool: Any, **kw: Any) -> ThreadQueue:
        return cls(_PgDb(pool), **kw)

    def close(self) -> None:
        self.db.close()

    # -- arriving

    def enqueue(self, thread_id: str, kind: str, payload: dict[str, Any] | None = None, *,
                policy: str = "enqueue") -> int:
        """Add a message to the thread's queue; returns its id (its place in arrival order)."""
        if policy not in POLICIES:
            raise HarnessError(f"unknown policy '{policy}' for a message on a busy thread; use one of "
                               f"{', '.join(POLICIES)}")
        db = self.db
        dropped: list[dict[str, Any]] = []
        with db.step(thread_id):
            busy = db.run("SELECT id, status FROM thread_queue WHERE thread_id = %s AND status IN ('queued', "
                          "'running') ORDER BY id", (thread_id,))
            if busy and policy == "reject":
                raise ThreadBusy(f"thread '{thread_id}' is busy with message {busy[0]['id']}; send again when it "
                                 "has finished, or use the policy 'enqueue' (wait) or 'interrupt'")
            if busy and policy == "interrupt":
                db.run("UPDATE thread_queue SET cancel = 1 WHERE thread_id = %s AND status = 'running'", (thread_id,))
                dropped = db.run("SELECT id, payload FROM thread_queue WHERE thread_id = %s AND status = 'queued'",
                                 (thread_id,))
                for old in dropped:
                    db.run("UPDATE thread_queue SET status = 'cancelled', error = 'interrupted by a newer message', "
                           f"payload = %s, finished_at = {db.now} WHERE id = %s",
                           (json.dumps(at_rest(payload := json.loads(old["payload"]), ids_of(thread_id, payload)),
                                       ensure_ascii=False), old["id"]))
            waiter = f"{db.now} + {self.ttl}" if kind == "turn" else "NULL"
            row = db.run("INSERT INTO thread_queue (thread_id, kind, payload, status, created_at, waiter_expires_at) "
                         f"VALUES (%s, %s, %s, 'queued', {db.now}, {waiter}) RETURNING id",
                         (thread_id, kind, json.dumps(payload or {}, ensure_ascii=False)))
        if dropped:
            db.scrub()
        return int(row[0]["id"])

    # -- serving

    def claim(self, *, thread_id: str | None = None, message_id: int | None = None,
              kinds: tuple[str, ...] = PAYLOAD_KINDS) -> Claim | None:
        """Take the lease of a thread whose oldest open message this worker may serve, and that message.

        ``thread_id`` limits the search to one thread; ``message_id`` claims only that message (a ``turn``
        row's own caller). Returns None when nothing is free.
        """
        db = self.db
        where = " AND q.thread_id = %s" if thread_id is not None else ""
        candidates = db.run(
            "SELECT q.thread_id FROM thread_queue q WHERE q.status IN ('queued', 'running')"
            " AND q.id = (SELECT MIN(id) FROM thread_queue h WHERE h.thread_id = q.thread_id"
            " AND h.status IN ('queued', 'running'))"
            f" AND NOT EXISTS (SELECT 1 FROM thread_leases l WHERE l.thread_id = q.thread_id AND l.expires_at >= {db.now})"
            f"{where} ORDER BY q.id LIMIT 8", (thread_id,) if thread_id is not None else ())
        for cand in candidates:
            claim = self._take(cand["thread_id"], message_id, kinds)
            if claim is not None:
                return claim
        return None

    def _take(self, thread_id: str, message_id: int | None, kinds: tuple[str, ...]) -> Claim | None:
        db = self.db
        with db.step(thread_id):
            while True:
                head = db.run(f"SELECT *, COALESCE(waiter_expires_at < {db.now}, false) AS waiter_dead FROM "
                              "thread_queue WHERE thread_id = %s AND status IN ('queued', 'running') ORDER BY id LIMIT 1",
                              (thread_id,))
                if not head:
                    return None
                row = head[0]
                lease = db.run(f"SELECT worker, message_id, expires_at >= {db.now} AS live FROM thread_leases "
                               "WHERE thread_id = %s", (thread_id,))
                if lease and lease[0]["live"]:
                    return None
                if row["kind"] == "turn" and self._abandoned(row):
                    # Its caller died: waiting (heartbeat stopped) or running (lease expired). Nobody else can
                    # run it; the checkpoint keeps whatever it did.
                    db.run(f"UPDATE thread_queue SET status = 'abandoned', error = %s, finished_at = {db.now} "
                           "WHERE id = %s", (abandoned_note(thread_id), row["id"]))
                    db.run("DELETE FROM thread_leases WHERE thread_id = %s", (thread_id,))
                    continue
                if message_id is not None and row["id"] != message_id:
                    return None
                if row["kind"] not in kinds:
                    return None
                db.run("INSERT INTO thread_leases (thread_id, worker, message_id, expires_at) VALUES "
                       f"(%s, %s, %s, {db.now} + {self.ttl}) ON CONFLICT (thread_id) DO UPDATE SET worker = "
                       "EXCLUDED.worker, message_id = EXCLUDED.message_id, expires_at = EXCLUDED.expires_at",
                       (thread_id, self.worker, row["id"]))
                db.run(f"UPDATE thread_queue SET status = 'running', worker = %s, attempts = attempts + 1, "
                       f"started_at = COALESCE(started_at, {db.now}) WHERE id = %s", (self.worker, row["id"]))
                return Claim(id=int(row["id"]), thread_id=thread_id, kind=row["kind"],
                             payload=json.loads(row["payload"]), attempts=int(row["attempts"]) + 1,
                             recovered=row["status"] == "running", turn_before=row["turn_before"])

    def sweep(self) -> list[int]:
        """Mark abandoned every ``turn`` row whose caller died (a CLI process killed mid-message), on any thread,
        and free its lease; returns their ids. ``claim`` does the same for a thread it looks at; this is for
        threads nobody sends to again, whose open row would otherwise keep ``harness prune`` away."""
        db = self.db
        with db.step():
            dead = db.run("SELECT id, thread_id FROM thread_queue q WHERE kind = 'turn' AND ((status = 'running' AND "
                          "NOT EXISTS (SELECT 1 FROM thread_leases l WHERE l.thread_id = q.thread_id AND l.message_id = "
                          f"q.id AND l.expires_at >= {db.now})) OR (status = 'queued' AND waiter_expires_at < {db.now}))")
            for row in dead:
                db.run(f"UPDATE thread_queue SET status = 'abandoned', error = %s, finished_at = {db.now} WHERE id = %s",
                       (abandoned_note(row["thread_id"]), row["id"]))
                db.run(f"DELETE FROM thread_leases WHERE message_id = %s AND expires_at < {db.now}", (row["id"],))
        return [int(r["id"]) for r in dead]

    @staticmethod
    def _abandoned(row: dict[str, Any]) -> bool:
        # Running with no live lease: its holder is gone. Queued: its caller stopped keeping it fresh.
        return row["status"] == "running" or bool(row["waiter_dead"])

    def heartbeat(self, message_id: int) -> None:
        """A ``turn`` row's caller is still waiting for it."""
        self.db.run(f"UPDATE thread_queue SET waiter_expires_at = {self.db.now} + {self.ttl} WHERE id = %s",
                    (message_id,))

    def renew(self, claim: Claim) -> tuple[bool, bool]:
        """Extend the lease; returns (still held, asked to stop)."""
        db = self.db
        held = db.run(f"UPDATE thread_leases SET expires_at = {db.now} + {self.ttl} WHERE thread_id = %s AND "
                      "worker = %s AND message_id = %s RETURNING thread_id", (claim.thread_id, self.worker, claim.id))
        cancel = db.run("SELECT cancel FROM thread_queue WHERE id = %s", (claim.id,))
        return bool(held), bool(cancel and cancel[0]["cancel"])

    def cancelled(self, claim: Claim) -> bool:
        """Whether a newer message asked this one to stop (policy ``interrupt``)."""
        row = self.db.run("SELECT cancel FROM thread_queue WHERE id = %s", (claim.id,))
        return bool(row and row[0]["cancel"])

    def note_turn(self, claim: Claim, turn: int) -> None:
        """Record the thread's turn before the message ran (a later worker finishing it compares)."""
        self.db.run("UPDATE thread_queue SET turn_before = %s WHERE id = %s AND turn_before IS NULL", (turn, claim.id))
        claim.turn_before = claim.turn_before if claim.turn_before is not None else turn

    def complete(self, claim: Claim, status: str, result: Any = None, error: str | None = None) -> bool:
        """Store the outcome and free the thread; False if this worker had lost the message meanwhile."""
        db = self.db
        with db.settling():  # a reader sees the row done only once its text has left the log too
            with db.step(claim.thread_id):
                # Only this claim's generation: a worker that stalled past its lease and was taken over stores nothing.
                # The finished row keeps no typed personal data: the worker needed the text, nobody needs it now.
                ids = ids_of(claim.thread_id, claim.payload)
                payload, result, error = at_rest(claim.payload, ids), at_rest(result, ids), at_rest(error, ids)
                done = db.run(f"UPDATE thread_queue SET status = %s, payload = %s, result = %s, error = %s, finished_at = "
                              f"{db.now} WHERE id = %s AND worker = %s AND attempts = %s AND status = 'running' RETURNING id",
                              (status, json.dumps(payload, ensure_ascii=False, default=str),
                               json.dumps(result, ensure_ascii=False, default=str) if result is not None else None,
                               error, claim.id, self.worker, claim.attempts))
                db.run("DELETE FROM thread_leases WHERE thread_id = %s AND worker = %s AND message_id = %s",
                       (claim.thread_id, self.worker, claim.id))
            if done and claim.kind in PAYLOAD_KINDS:  # a turn row carries no text
                db.scrub()
        return bool(done)

    @contextmanager
    def holding(self, claim: Claim, on_cancel: threading.Event | None = None) -> Iterator[threading.Event]:
        """Renew the claim's lease in the background while the block runs; the event is set when asked to stop."""
        stop, cancel = threading.Event(), on_cancel or threading.Event()

        def renew() -> None:
            while not stop.wait(self.ttl / 3):
                try:
                    held, asked = self.renew(claim)
                except Exception:  # noqa: BLE001 - a blip; the next renewal tries again before expiry
                    continue
                if asked or not held:
                    cancel.set()

        beat = threading.Thread(target=renew, name=f"lease-{claim.thread_id}", daemon=True)
        beat.start()
        try:
            with self.fences.holding(claim.thread_id, Fence(claim.id, self.worker, claim.attempts)):
                yield cancel
        finally:
            stop.set()
            beat.join()

    # -- reading

    def get(self, message_id: int) -> dict[str, Any] | None:
        rows = self.db.run("SELECT * FROM thread_queue WHERE id = %s", (message_id,))
        return _decoded(rows[0]) if rows else None

    def statuses(self, ids: list[int]) -> dict[int, str]:
        if not ids:
            return {}
        marks = ", ".join("%s" for _ in ids)
        rows = self.db.run(f"SELECT id, status FROM thread_queue WHERE id IN ({marks})", tuple(ids))
        return {int(r["id"]): r["status"] for r in rows}

    def wait(self, message_id: int, timeout: float | None = None, poll: float = 0.02) -> dict[str, Any]:
        """Block until the message has an outcome; returns its row."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            row = self.get(message_id)
            if row is None:
                raise HarnessError(f"unknown message {message_id}")
            if row["status"] in TERMINAL:
                return row
            if deadline is not None and time.monotonic() > deadline:
                raise TimeoutError(f"message {message_id} is still {row['status']}")
            time.sleep(poll)

    def thread_rows(self, thread_id: str) -> list[dict[str, Any]]:
        return [_decoded(r) for r in self.db.run("SELECT * FROM thread_queue WHERE thread_id = %s ORDER BY id",
                                                 (thread_id,))]

    def depth(self) -> dict[str, int]:
        rows = self.db.run("SELECT status, COUNT(*) AS n FROM thread_queue GROUP BY status")
        return {r["status"]: int(r["n"]) for r in rows}

    # -- node events, for streaming a message that may run on another worker

    def add_event(self, claim: Claim, event: dict[str, Any]) -> None:
        """A node event of the claimed message, kept only while this claim still holds it (fencing)."""
        self.db.run("INSERT INTO message_events (message_id, seq, event) SELECT %s, (SELECT COALESCE(MAX(seq), 0) + 1 "
                    "FROM message_events WHERE message_id = %s), %s WHERE EXISTS (SELECT 1 FROM thread_queue WHERE "
                    "id = %s AND worker = %s AND attempts = %s AND status = 'running')",
                    (claim.id, claim.id, json.dumps(event, ensure_ascii=False, default=str), claim.id, self.worker,
                     claim.attempts))

    def events(self, message_id: int, after: int = 0) -> list[tuple[int, dict[str, Any]]]:
        rows = self.db.run("SELECT seq, event FROM message_events WHERE message_id = %s AND seq > %s ORDER BY seq",
                           (message_id, after))
        return [(int(r["seq"]), json.loads(r["event"])) for r in rows]


def at_rest(value: Any, ids: tuple[str, ...] = ()) -> Any:
    """What a finished queue row keeps of a payload, result or error: personal data masked (``obs.audit``'s
    redactor), except the reply the customer is owed, which ``GET /messages/{id}`` returns to them alone.
    Identifiers stay as they are (a client follows them back): the thread's and the caller's ids in ``ids``,
    and every value under an id key, also where a text quotes them."""
    from lg_harness.obs.redact import default_redactor, redact_value

    if isinstance(value, dict):
        masked = redact_value({k: v for k, v in value.items() if k != "reply"}, default_redactor, keep=ids)
        return {k: v if k == "reply" else masked[k] for k, v in value.items()}
    return redact_value(value, default_redactor, keep=ids)


def ids_of(thread_id: str, payload: dict[str, Any] | None) -> tuple[str, ...]:
    """The ids a message's row names, kept unmasked in all of it: its thread and the ids in its payload."""
    from lg_harness.obs.redact import id_values

    return (thread_id, *sorted(id_values(payload)))


def abandoned_note(thread_id: str) -> str:
    return (f"its caller stopped before it finished (the process died); the checkpoint keeps what it did: "
            f"harness resume --thread {thread_id} --finish completes it")


def _decoded(row: dict[str, Any]) -> dict[str, Any]:
    out = dict(row)
    for key in ("payload", "result"):
        if out.get(key) is not None:
            out[key] = json.loads(out[key])
    return out


# --------------------------------------------------------------------- the Harness's per-thread order


class LeaseOrder:
    """``ThreadOrder``'s contract (one message per thread at a time, in arrival order) across processes.

    ``turn`` queues a ``turn`` row, waits for it to reach the head, takes the lease and renews it while the
    caller runs its message. A worker that already holds a thread's lease for a claimed message runs it
    inside ``held``, and ``turn`` on that thread then goes straight through.
    """

    def __init__(self, queue: ThreadQueue, poll: float = 0.02) -> None:
        self.queue = queue
        self.poll = poll
        self._held = threading.local()

    @contextmanager
    def held(self, thread_id: str) -> Iterator[None]:
        previous = getattr(self._held, "thread", None)
        self._held.thread = thread_id
        try:
            yield
        finally:
            self._held.thread = previous

    @contextmanager
    def turn(self, thread_id: str) -> Iterator[None]:
        if getattr(self._held, "thread", None) == thread_id:
            yield
            return
        q = self.queue
        mid = q.enqueue(thread_id, "turn")
        beat_at = time.monotonic()
        claim = None
        while claim is None:
            claim = q.claim(thread_id=thread_id, message_id=mid, kinds=("turn",))
            if claim is None:
                if (row := q.get(mid)) is not None and row["status"] in TERMINAL:
                    raise HarnessError(f"message {mid} on thread '{thread_id}' was {row['status']} before it ran "
                                       f"({row.get('error') or 'see the queue'}); send it again")
                if time.monotonic() - beat_at > q.ttl / 3:
                    q.heartbeat(mid)
                    beat_at = time.monotonic()
                time.sleep(self.poll)
        ok = False
        try:
            with q.holding(claim), self.held(thread_id):
                yield
            ok = True
        finally:
            q.complete(claim, "done" if ok else "failed", error=None if ok else "the caller's run failed")
