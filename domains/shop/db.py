"""SQLite storage of the demo shop: schema, connection handling and transactions."""

from __future__ import annotations

import functools
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

SCHEMA = """
CREATE TABLE IF NOT EXISTS products (
    id TEXT PRIMARY KEY, name TEXT NOT NULL, name_zh TEXT NOT NULL,
    category TEXT NOT NULL, category_zh TEXT NOT NULL, brand TEXT NOT NULL,
    price REAL NOT NULL, description TEXT NOT NULL, description_zh TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS variants (
    sku TEXT PRIMARY KEY, product_id TEXT NOT NULL REFERENCES products(id),
    color TEXT NOT NULL, size TEXT NOT NULL, stock INTEGER NOT NULL CHECK (stock >= 0)
);
CREATE TABLE IF NOT EXISTS users (
    id TEXT PRIMARY KEY, name TEXT NOT NULL,
    role TEXT NOT NULL CHECK (role IN ('customer', 'vip')),
    email TEXT NOT NULL, phone TEXT NOT NULL, address TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS orders (
    id TEXT PRIMARY KEY, user_id TEXT NOT NULL REFERENCES users(id),
    status TEXT NOT NULL CHECK (status IN ('pending', 'shipped', 'delivered', 'cancelled')),
    created_at TEXT NOT NULL, total REAL NOT NULL,
    tracking_no TEXT, carrier TEXT, updated_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS order_items (
    order_id TEXT NOT NULL REFERENCES orders(id), sku TEXT NOT NULL REFERENCES variants(sku),
    qty INTEGER NOT NULL CHECK (qty > 0), price REAL NOT NULL,
    PRIMARY KEY (order_id, sku)
);
CREATE TABLE IF NOT EXISTS coupons (
    code TEXT PRIMARY KEY, description TEXT NOT NULL, description_zh TEXT NOT NULL,
    discount_pct INTEGER NOT NULL, min_total REAL NOT NULL,
    vip_only INTEGER NOT NULL DEFAULT 0, expires_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS user_coupons (
    user_id TEXT NOT NULL REFERENCES users(id), code TEXT NOT NULL REFERENCES coupons(code),
    claimed_at TEXT NOT NULL, PRIMARY KEY (user_id, code)
);
CREATE TABLE IF NOT EXISTS returns (
    id INTEGER PRIMARY KEY AUTOINCREMENT, order_id TEXT NOT NULL REFERENCES orders(id),
    user_id TEXT NOT NULL, reason TEXT NOT NULL, status TEXT NOT NULL, created_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS complaints (
    id INTEGER PRIMARY KEY AUTOINCREMENT, user_id TEXT NOT NULL, order_id TEXT,
    text TEXT NOT NULL, created_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS handoffs (
    id INTEGER PRIMARY KEY AUTOINCREMENT, user_id TEXT NOT NULL, thread_id TEXT NOT NULL,
    reason TEXT NOT NULL, created_at TEXT NOT NULL, status TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS idempotency (
    key TEXT PRIMARY KEY, tool TEXT NOT NULL, result_json TEXT NOT NULL, created_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS idx_variants_product ON variants(product_id);
CREATE INDEX IF NOT EXISTS idx_orders_user ON orders(user_id, created_at);
CREATE INDEX IF NOT EXISTS idx_returns_order ON returns(order_id);
"""


class ShopDB:
    """One SQLite connection shared by the tools.

    The connection is in autocommit mode; every change goes through :meth:`transaction`, which holds
    ``lock`` and wraps the statements in ``BEGIN IMMEDIATE`` ... ``COMMIT``. Reads take the same
    (re-entrant) lock so another thread never sees a half-done transaction of this connection.
    """

    def __init__(self, conn: sqlite3.Connection, path: str = ":memory:") -> None:
        self.conn = conn
        self.path = path
        self.lock = threading.RLock()

    @classmethod
    def fresh_copy(cls, seed: int = 7) -> ShopDB:
        """A new in-memory shop, copied from a per-process seeded template (evaluation cells each need one)."""
        template = _template(seed)
        conn = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
        with template.lock:
            template.conn.backup(conn)
        conn.row_factory = sqlite3.Row
        conn.execute("PRAGMA foreign_keys = ON")
        return cls(conn)

    @classmethod
    def open(cls, path: str | Path = ":memory:", seed: int = 7) -> ShopDB:
        """Open (creating if needed) the shop at ``path``; seed it once if it holds no products."""
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
            if conn.execute("SELECT COUNT(*) FROM products").fetchone()[0] == 0:
                from lg_harness.domains.shop.seed import seed_shop

                seed_shop(conn, seed)
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

    def __enter__(self) -> ShopDB:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@functools.lru_cache(maxsize=4)
def _template(seed: int) -> ShopDB:
    return ShopDB.open(":memory:", seed)


def _create_schema(conn: sqlite3.Connection) -> None:
    # executescript() would COMMIT the open transaction, so run the statements one by one.
    for statement in SCHEMA.split(";"):
        if statement.strip():
            conn.execute(statement)
