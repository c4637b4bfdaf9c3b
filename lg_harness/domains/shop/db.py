"""Storage of the demo shop: schema, connection handling and transactions."""

from __future__ import annotations

from typing import Any

from lg_harness.tools.backend import SeededDB

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


class ShopDB(SeededDB):
    """The demo shop on SQLite or Postgres, one code path for the tools (see ``SeededDB``)."""

    SCHEMA = SCHEMA
    SEED_TABLE = "products"
    # Not judged as changes by a scenario's outcome (see SeededDB): the executor's idempotency records, a
    # handoff's queue entry (the turn's handoff check judges it), timestamps, and the stock a cancellation
    # puts back (the order's own change is what the customer asked for).
    BOOKKEEPING = {"idempotency": ("*",), "handoffs": ("*",), "orders": ("updated_at",), "variants": ("stock",)}

    @classmethod
    def seed(cls, conn: Any, seed: int) -> None:
        from lg_harness.domains.shop.seed import seed_shop

        seed_shop(conn, seed)
