"""The full transcript of every thread, kept outside the checkpoints.

Checkpoints carry only the working set so they stay small; this table keeps every user message and
reply for ``/history``, audits and summaries. (langchain-community's SQL history would do, but the package
announces it is being sunset, and it pulls SQLAlchemy's asyncio extra for a two-column table.)

Each row says who wrote it (``author``: the ``customer``, the ``bot``, or a ``human`` at the desk, whose name is
``author_name``) and which customer message it belongs to (``turn``: a customer message and every answer to it
share one number). A fork leaves the rows after the checkpoint off the thread's branch (``forked_off``): they
are kept, but ``read`` shows the branch the thread continues on.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path

from lg_harness.errors import UsageError

BUSY_TIMEOUT_S = 30.0  # as the checkpointer, the audit log and the change ledger
AUTHORS = ("customer", "bot", "human")  # who writes a transcript row
ROW_COLUMNS = ("seq", "turn", "role", "author", "author_name", "content", "created_at")
READ_SQL = ("SELECT seq, turn, role, author, author_name, content, created_at FROM transcript WHERE thread_id = {mark}"
            " AND ({mark} OR forked_off IS NULL) ORDER BY seq")


def author_of(role: str, author: str | None = None) -> str:
    """Who wrote a row: as given, else the customer for a user row and the bot for a reply."""
    if author is not None and author not in AUTHORS:
        raise UsageError(f"author must be one of {', '.join(AUTHORS)}, got '{author}'")
    return author or ("customer" if role == "user" else "bot")


def author_label(row: dict) -> str:
    """How a row's author is shown: ``customer``, ``bot``, or the human's name with ``(human)``. A reply
    recorded before authors were kept shows as ``assistant``: it may be the bot's or a human's."""
    if row.get("author") == "human":
        return f"{row['author_name']} (human)" if row.get("author_name") else "human"
    return row.get("author") or row["role"]


def kept_on_branch(rows: list[dict], turn: int, mid_message: bool) -> list[int]:
    """The seqs a fork to message ``turn`` keeps: the rows up to that message, and with ``mid_message`` (the
    checkpoint is inside it) only its customer message, not the answers the old branch gave it."""
    return [r["seq"] for r in rows if r["turn"] < turn or (r["turn"] == turn and (not mid_message or
                                                                                  r["role"] == "user"))]

# The desk's thread list (SQLite and Postgres differ only in the substring test ``has`` and the placeholder).
THREAD_COLUMNS = ("thread_id", "owner", "design", "model", "domain", "last_at")
THREADS_SQL = ("SELECT t.thread_id, o.user_id AS owner, t.design, t.model, t.domain, COALESCE((SELECT MAX(x.created_at) "
               "FROM transcript x WHERE x.thread_id = t.thread_id), t.updated_at) AS last_at FROM threads t LEFT JOIN "
               "owners o ON o.thread_id = t.thread_id WHERE ({mark} = '' OR {has_id} OR {has_owner}) "
               "AND ({mark} = '' OR o.user_id = {mark}) "
               "ORDER BY last_at DESC, t.thread_id LIMIT {mark}")


def threads_sql(has: str, mark: str) -> str:
    """``THREADS_SQL`` for a driver: ``has`` tests that ``{col}`` contains the search (a placeholder)."""
    return THREADS_SQL.format(mark=mark, has_id=has.format(col="lower(t.thread_id)"),
                              has_owner=has.format(col="lower(COALESCE(o.user_id, ''))"))


# Stores made before authors: a customer's row is the customer's; a reply stays unknown (NULL, shown as
# ``assistant``), since nothing in the row tells the bot's from a human's. Postgres: migration 10 (service.pgdb).
MIGRATE_AUTHORS = """
ALTER TABLE transcript ADD COLUMN author TEXT;
ALTER TABLE transcript ADD COLUMN author_name TEXT;
ALTER TABLE transcript ADD COLUMN forked_off REAL;
UPDATE transcript SET author = 'customer' WHERE role = 'user';
"""


class TranscriptStore:
    def __init__(self, path: str | Path = ":memory:") -> None:
        # Every worker on a data dir writes here on every message: WAL lets readers run beside the writer, and
        # a writer waits its turn (up to BUSY_TIMEOUT_S) instead of failing with "database is locked" after
        # sqlite3's default 5 s, which 12 writers on a busy machine outlast (the soak, lab/lg_harness_lab/benchmarks/bench_chaos).
        self.conn = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None, timeout=BUSY_TIMEOUT_S)
        if str(path) != ":memory:":
            self.conn.execute("PRAGMA journal_mode = WAL")
            self.conn.execute("PRAGMA synchronous = NORMAL")  # four commits a message: see graphs.storage
        self.lock = threading.Lock()
        # One transaction for the whole schema: processes opening a new data dir together would otherwise
        # race between reading the columns and adding one ("duplicate column name: domain").
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            self._create_schema()
            self.conn.execute("COMMIT")
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise

    def _create_schema(self) -> None:
        self.conn.execute(
            "CREATE TABLE IF NOT EXISTS transcript (thread_id TEXT NOT NULL, seq INTEGER NOT NULL, "
            "turn INTEGER NOT NULL, role TEXT NOT NULL, content TEXT NOT NULL, created_at REAL NOT NULL, "
            "PRIMARY KEY (thread_id, seq))"
        )
        if "author" not in {row[1] for row in self.conn.execute("PRAGMA table_info(transcript)")}:
            for statement in filter(str.strip, MIGRATE_AUTHORS.split(";")):  # in the schema's transaction
                self.conn.execute(statement)
        # The design and model each thread last ran with, so finishing a stopped message needs no guessing.
        self.conn.execute(
            "CREATE TABLE IF NOT EXISTS threads (thread_id TEXT PRIMARY KEY, design TEXT NOT NULL, "
            "model TEXT, updated_at REAL NOT NULL, domain TEXT)"
        )
        if "domain" not in {row[1] for row in self.conn.execute("PRAGMA table_info(threads)")}:
            self.conn.execute("ALTER TABLE threads ADD COLUMN domain TEXT")  # stores made before domains
        # Who a thread belongs to, from its first message on: kept apart from checkpoints so a lost or forked
        # checkpoint never hands the thread to whoever writes next.
        self.conn.execute("CREATE TABLE IF NOT EXISTS owners (thread_id TEXT PRIMARY KEY, user_id TEXT NOT NULL, "
                          "created_at REAL NOT NULL)")
        # Threads waiting for a human, whatever the domain's own ticket system (if it has one) recorded.
        self.conn.execute(
            "CREATE TABLE IF NOT EXISTS handoffs (thread_id TEXT NOT NULL, ticket TEXT NOT NULL, "
            "status TEXT NOT NULL, created_at REAL NOT NULL, PRIMARY KEY (thread_id, ticket))"
        )

    def _rows(self, sql: str, params: tuple = ()) -> list[tuple]:
        # One connection serves every thread of a worker. A SELECT still stepping in one thread keeps a read
        # snapshot open on it, and SQLite refuses another thread's write on that connection at once ("database
        # is locked", no busy wait) when another process wrote since: so reads take the lock and finish too.
        with self.lock:
            return self.conn.execute(sql, params).fetchall()

    def claim(self, thread_id: str, user_id: str) -> str:
        """Make ``user_id`` the thread's owner if it has none yet; return the owner either way."""
        with self.lock:
            self.conn.execute("INSERT OR IGNORE INTO owners VALUES (?, ?, ?)", (thread_id, user_id, time.time()))
            return self.conn.execute("SELECT user_id FROM owners WHERE thread_id = ?", (thread_id,)).fetchone()[0]

    def owner(self, thread_id: str) -> str | None:
        rows = self._rows("SELECT user_id FROM owners WHERE thread_id = ?", (thread_id,))
        return rows[0][0] if rows else None

    def record_setup(self, thread_id: str, design: str, model: str | None, domain: str | None = None) -> None:
        """Note the design (preset name or file), model spec and domain spec a message on the thread runs with."""
        with self.lock:
            self.conn.execute("INSERT OR REPLACE INTO threads (thread_id, design, model, updated_at, domain) "
                              "VALUES (?, ?, ?, ?, ?)", (thread_id, design, model, time.time(), domain))

    def setup(self, thread_id: str) -> tuple[str, str | None] | None:
        """(design, model spec or None when the model was passed as an object) the thread last ran with."""
        rows = self._rows("SELECT design, model FROM threads WHERE thread_id = ?", (thread_id,))
        return (rows[0][0], rows[0][1]) if rows else None

    def domain_of(self, thread_id: str) -> str | None:
        """The domain spec the thread last ran with (None: passed as an object, or recorded before domains)."""
        rows = self._rows("SELECT domain FROM threads WHERE thread_id = ?", (thread_id,))
        return rows[0][0] if rows else None

    def threads(self, search: str = "", limit: int = 100, owner: str = "") -> list[dict]:
        """Threads by last activity, newest first: thread_id, owner, design, model, domain, last_at (epoch
        seconds); ``search`` keeps those whose id or owner contains it (any case), ``owner`` one user's."""
        params = (search.strip().lower(),) * 3 + (owner,) * 2 + (limit,)
        rows = self._rows(threads_sql("instr({col}, ?) > 0", "?"), params)
        return [dict(zip(THREAD_COLUMNS, r, strict=True)) for r in rows]

    def append(self, thread_id: str, turn: int, role: str, content: str, author: str | None = None,
               author_name: str | None = None) -> None:
        """Add a row: ``turn`` is the customer message it belongs to; ``author`` who wrote it (default: the
        customer for a user row, the bot for a reply), ``author_name`` a human's name."""
        with self.lock:
            self.conn.execute(
                "INSERT INTO transcript (thread_id, seq, turn, role, content, created_at, author, author_name) "
                "VALUES (?, (SELECT COALESCE(MAX(seq), 0) + 1 FROM transcript WHERE thread_id = ?), ?, ?, ?, ?, ?, ?)",
                (thread_id, thread_id, turn, role, content, time.time(), author_of(role, author), author_name),
            )

    def read(self, thread_id: str, *, every: bool = False) -> list[dict]:
        """The thread's rows in order, on the branch it continues on (``every``: those a fork left too)."""
        rows = self._rows(READ_SQL.format(mark="?"), (thread_id, every))
        return [dict(zip(ROW_COLUMNS, r, strict=True)) for r in rows]

    def fork(self, thread_id: str, turn: int, *, mid_message: bool = False) -> None:
        """The thread goes on from message ``turn`` (``kept_on_branch``): later rows leave its branch."""
        with self.lock:
            rows = [dict(zip(ROW_COLUMNS, r, strict=True))
                    for r in self.conn.execute(READ_SQL.format(mark="?"), (thread_id, False)).fetchall()]
            kept = set(kept_on_branch(rows, turn, mid_message))
            gone = [(time.time(), thread_id, r["seq"]) for r in rows if r["seq"] not in kept]
            self.conn.executemany("UPDATE transcript SET forked_off = ? WHERE thread_id = ? AND seq = ?", gone)

    def open_handoff(self, thread_id: str, ticket: str) -> None:
        """Queue the thread for a human (once per ticket)."""
        with self.lock:
            self.conn.execute("INSERT INTO handoffs VALUES (?, ?, 'waiting', ?) "
                              "ON CONFLICT (thread_id, ticket) DO UPDATE SET status = 'waiting'",
                              (thread_id, ticket, time.time()))

    def answer_handoff(self, thread_id: str) -> None:
        with self.lock:
            self.conn.execute("UPDATE handoffs SET status = 'answered' WHERE thread_id = ? AND status = 'waiting'",
                              (thread_id,))

    def hold_handoff(self, thread_id: str) -> None:
        """A human answered: the thread stays with them (its messages go to them) until released."""
        with self.lock:
            self.conn.execute("UPDATE handoffs SET status = 'held' WHERE thread_id = ? AND status IN "
                              "('waiting', 'answered')", (thread_id,))

    def release_handoff(self, thread_id: str) -> bool:
        """The human hands the thread back to the bot; False when no human held it."""
        with self.lock:
            cur = self.conn.execute("UPDATE handoffs SET status = 'released' WHERE thread_id = ? AND status = 'held'",
                                    (thread_id,))
        return cur.rowcount > 0

    def held_handoffs(self) -> list[str]:
        """Threads a human holds, oldest first."""
        rows = self._rows("SELECT thread_id FROM handoffs WHERE status = 'held' "
                          "GROUP BY thread_id ORDER BY MIN(created_at)")
        return [r[0] for r in rows]

    def waiting_handoffs(self) -> list[str]:
        """Threads queued for a human, oldest first."""
        rows = self._rows("SELECT thread_id FROM handoffs WHERE status = 'waiting' "
                          "GROUP BY thread_id ORDER BY MIN(created_at)")
        return [r[0] for r in rows]

    def close(self) -> None:
        self.conn.close()
