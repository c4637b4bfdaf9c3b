"""A seeded database for a domain's tools, and the wrapper that applies a change once per key.

Domain packs subclass ``SeededDB`` with their schema and seed function; their changing tools wrap
themselves with ``changes_once(backend_of)``, which stores each result under ``ctx.idempotency_key`` in the
backend's ``idempotency`` table in the same transaction as the change.

One code path for the tools, two engines under it: SQLite (a file in the data dir, or in-memory copies for
evaluation cells; ``SqliteEngine`` here) and Postgres (when the harness keeps its state there, so many
workers share one domain; ``tools.pg_backend``). Tools write portable SQL with ``?`` placeholders, read rows
by column name or index, and take new ids from ``INSERT ... RETURNING id``; the engines hold every dialect
difference.
"""

from __future__ import annotations

import functools
import json
import re
import sqlite3
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from lg_harness.errors import HarnessError
from lg_harness.tools.context import ToolContext
from lg_harness.tools.errors import ValidationError

IDEMPOTENCY_TABLE = """
CREATE TABLE IF NOT EXISTS idempotency (
    key TEXT PRIMARY KEY, tool TEXT NOT NULL, result_json TEXT NOT NULL, created_at TEXT NOT NULL
)"""

B = TypeVar("B", bound="SeededDB")
Params = tuple[Any, ...] | dict[str, Any]


class BackendPlace:
    """Where a domain opens its backends, given to ``Domain.open_resources``.

    Calling it with a file name gives that file in the data dir (``":memory:"`` without one), as the plain
    ``path_for`` function it replaces did; ``database_url`` is the harness's Postgres URL, or None when the
    harness keeps its state in files.
    """

    def __init__(self, path_for: Callable[[str], str], database_url: str | None = None) -> None:
        self.path_for = path_for
        self.database_url = database_url or None

    def __call__(self, name: str) -> str:
        return self.path_for(name)


class SqliteEngine:
    """One SQLite connection in autocommit mode; a change runs inside ``BEGIN IMMEDIATE`` ... ``COMMIT``.

    ``lock`` (re-entrant) is held by transactions and reads alike, so another thread never sees a half-done
    transaction of this connection; another process waits up to the busy timeout for the write lock.
    """

    dialect = "sqlite"

    def __init__(self, conn: sqlite3.Connection, path: str = ":memory:") -> None:
        self.conn = conn
        self.path = path
        self.lock = threading.RLock()

    @classmethod
    def connect(cls, path: str) -> SqliteEngine:
        if path != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        conn.row_factory = sqlite3.Row
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("PRAGMA busy_timeout = 30000")  # as every harness store: workers wait, they do not fail
        if path != ":memory:":
            conn.execute("PRAGMA journal_mode = WAL")
        return cls(conn, path)

    def prepare(self, schema: str, seed_table: str, seed: Callable[[Any], None]) -> None:
        with self.transaction() as conn:
            # executescript() would COMMIT the open transaction, so run the statements one by one.
            for statement in schema.split(";"):
                if statement.strip():
                    conn.execute(statement)
            if seed_table and conn.execute(f"SELECT COUNT(*) FROM {seed_table}").fetchone()[0] == 0:
                seed(conn)

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
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

    def execute(self, sql: str, params: Params = ()) -> sqlite3.Cursor:
        with self.lock:
            return self.conn.execute(sql, params)

    def query(self, sql: str, params: Params = ()) -> list[Any]:
        with self.lock:
            return self.conn.execute(sql, params).fetchall()

    def query_one(self, sql: str, params: Params = ()) -> Any:
        with self.lock:
            return self.conn.execute(sql, params).fetchone()

    def close(self) -> None:
        with self.lock:
            self.conn.close()


_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")


class SeededDB:
    """A domain's database, seeded once when its ``SEED_TABLE`` is empty; the tools' one way to reach it.

    ``query``/``query_one`` read (inside a transaction of the calling thread: within it), ``execute`` runs a
    statement, ``transaction()`` runs a block in one transaction (commit on success, roll back on error, one
    writer at a time). Rows are read by column name or index, and ``dict(row)`` works on both engines.

    Subclasses set ``SCHEMA`` (SQLite's dialect, statements separated by ``;``, an ``idempotency`` table
    among them), ``SEED_TABLE`` and :meth:`seed`.
    """

    SCHEMA: ClassVar[str] = IDEMPOTENCY_TABLE
    SEED_TABLE: ClassVar[str] = ""
    # What an evaluation's outcome check (``evals.world``) does not count as a change to the world:
    # table -> columns (``"*"``: every column, so the whole table). A subclass adds its timestamps, counters
    # and logs. Such a change is never "extra"; a scenario that lists one still requires it.
    BOOKKEEPING: ClassVar[Mapping[str, tuple[str, ...]]] = {"idempotency": ("*",)}
    # Rows counted elsewhere (a handoff's own records are judged by the turn's handoff check):
    # table -> {column: value} a row must hold to be bookkeeping.
    BOOKKEEPING_ROWS: ClassVar[Mapping[str, Mapping[str, Any]]] = {}

    def __init__(self, engine: Any) -> None:
        # A bare SQLite connection (a copy a caller made itself) gets the SQLite engine.
        self.engine = SqliteEngine(engine) if isinstance(engine, sqlite3.Connection) else engine

    @property
    def dialect(self) -> str:
        return str(self.engine.dialect)

    @property
    def path(self) -> str | None:
        """The SQLite file (``":memory:"`` for a copy in memory); None on Postgres."""
        return getattr(self.engine, "path", None)

    @property
    def conn(self) -> sqlite3.Connection:
        """The SQLite connection (SQLite only: a dump or a backup of the file)."""
        if not isinstance(self.engine, SqliteEngine):
            raise HarnessError(f"{type(self).__name__} is on Postgres; it has no SQLite connection")
        return self.engine.conn

    @classmethod
    def seed(cls, conn: Any, seed: int) -> None:
        """Fill the empty tables (deterministically for one ``seed``); ``conn.execute``/``executemany``
        take ``?`` placeholders on both engines."""

    @classmethod
    def fresh_copy(cls: type[B], seed: int = 7) -> B:
        """A new in-memory copy of a per-process seeded template (evaluation cells each need one)."""
        template = _template(cls, seed)
        conn = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
        with template.engine.lock:
            template.conn.backup(conn)
        conn.row_factory = sqlite3.Row
        conn.execute("PRAGMA foreign_keys = ON")
        return cls(SqliteEngine(conn))

    @classmethod
    def open(cls: type[B], path: str | Path = ":memory:", seed: int = 7) -> B:
        """Open (creating if needed) the SQLite database at ``path``; seed it once if ``SEED_TABLE`` is empty."""
        db = cls(SqliteEngine.connect(str(path)))
        db._prepare(seed)
        return db

    @classmethod
    def open_postgres(cls: type[B], url: str, schema: str, seed: int = 7) -> B:
        """Open the database in schema ``schema`` of the Postgres at ``url``: created, and seeded once, by
        whichever of several workers starting at once comes first (the others find it ready)."""
        from lg_harness.tools.pg_backend import PostgresEngine

        if not _NAME.match(schema):
            raise HarnessError(f"a domain's Postgres schema is a lower-case SQL name, got '{schema}'")
        db = cls(PostgresEngine.connect(url, schema))
        try:
            db._prepare(seed)
        except BaseException:
            db.close()
            raise
        return db

    @classmethod
    def open_at(cls: type[B], place: BackendPlace | Callable[[str], str], name: str, seed: int = 7) -> B:
        """Open where the harness keeps its state: schema ``name`` on its Postgres when it has a database URL,
        else the file ``<name>.sqlite`` in its data dir."""
        url = getattr(place, "database_url", None)
        return cls.open_postgres(url, name, seed) if url else cls.open(place(f"{name}.sqlite"), seed)

    def _prepare(self, seed: int) -> None:
        self.engine.prepare(self.SCHEMA, self.SEED_TABLE, lambda conn: type(self).seed(conn, seed))

    @contextmanager
    def transaction(self) -> Iterator[Any]:
        """Run the block in one transaction; the yielded connection's ``execute`` takes ``?`` placeholders."""
        with self.engine.transaction() as conn:
            yield conn

    def execute(self, sql: str, params: Params = ()) -> Any:
        """Run one statement (inside this thread's open transaction, if any); returns its cursor."""
        return self.engine.execute(sql, params)

    def close_handoffs(self, thread_id: str, user_id: str) -> None:
        """Mark the thread's waiting handoffs answered (for backends with a ``handoffs`` table)."""
        with self.transaction() as conn:
            conn.execute("UPDATE handoffs SET status = 'answered' WHERE thread_id = ? AND user_id = ? "
                         "AND status = 'waiting'", (thread_id, user_id))

    def query(self, sql: str, params: Params = ()) -> list[Any]:
        return self.engine.query(sql, params)

    def query_one(self, sql: str, params: Params = ()) -> Any:
        return self.engine.query_one(sql, params)

    def close(self) -> None:
        self.engine.close()

    def changes_made(self) -> int:
        """Rows changed through this connection so far (SQLite's ``total_changes``; -1 where unknown):
        a snapshot is only worth taking when this moved."""
        conn = getattr(self.engine, "conn", None)
        return conn.total_changes if isinstance(conn, sqlite3.Connection) else -1

    def snapshot(self) -> dict[str, Any]:
        """Every table's rows keyed by primary key (by rowid without one), and each table's key columns:
        ``{"tables": {table: {key: row}}, "keys": {table: [columns]}, "rowid": {table: column}}``.

        ``rowid`` names a table's ``INTEGER PRIMARY KEY`` (SQLite assigns it: an inserted row is judged
        without it). SQLite only: evaluation cells run on in-memory copies.
        """
        tables: dict[str, dict[str, dict[str, Any]]] = {}
        keys: dict[str, list[str]] = {}
        rowid: dict[str, str] = {}
        names = [r[0] for r in self.query("SELECT name FROM sqlite_master WHERE type = 'table' "
                                          "AND name NOT LIKE 'sqlite_%' ORDER BY name")]
        for table in names:
            info = self.query(f'PRAGMA table_info("{table}")')
            pk = [r["name"] for r in sorted(info, key=lambda r: r["pk"]) if r["pk"]]
            if len(pk) == 1 and next(r["type"] for r in info if r["name"] == pk[0]).upper() == "INTEGER":
                rowid[table] = pk[0]
            keys[table] = pk or ["rowid"]
            cols = ", ".join(f'"{c}"' for c in keys[table]) if pk else "rowid"
            rows = self.query(f'SELECT {cols}, * FROM "{table}"')
            width = len(keys[table])
            tables[table] = {json.dumps(list(r[:width]), default=str): {k: r[k] for k in r.keys()[width:]}
                             for r in rows}
        return {"tables": tables, "keys": keys, "rowid": rowid}

    def __enter__(self: B) -> B:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@functools.lru_cache(maxsize=8)
def _template(cls: type[SeededDB], seed: int) -> SeededDB:
    return cls.open(":memory:", seed)

def changes_once(backend_of: Callable[[ToolContext], SeededDB], now: Callable[[], datetime]
                 ) -> Callable[[Callable[..., dict]], Callable[..., dict]]:
    """Decorator factory: run a changing tool in one transaction, at most once per ``ctx.idempotency_key``.

    With the harness's ``commit_guard`` in ``ctx.extras`` and the tables on its Postgres, the change commits
    only while this worker still holds the message (``service.fencing``). A key already stored returns the
    stored result and changes nothing (a key used by another tool is a
    ``ValidationError``); otherwise the change and its idempotency row commit together. A failing call
    stores nothing. The wrapped tool gets ``changes_state = True`` and ``idempotent = True``.
    """

    def wrap(fn: Callable[..., dict]) -> Callable[..., dict]:
        @functools.wraps(fn)
        def wrapper(ctx: ToolContext, *args: Any, **kwargs: Any) -> dict:
            db = backend_of(ctx)
            key = ctx.idempotency_key
            with db.transaction() as conn:
                guard = ctx.extras.get("commit_guard")
                if guard is not None and db.dialect == "postgres":  # on the harness's own database
                    guard(conn, ctx.thread_id)  # raises if another worker took this message over
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
