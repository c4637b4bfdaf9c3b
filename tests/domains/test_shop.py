"""The demo shop: deterministic seed data and the tools against the real SQLite database."""

from __future__ import annotations

import inspect
import threading
import typing

import pydantic
import pytest

from lg_harness.domains.shop.backend import (
    CHANGING_TOOLS,
    SHOP_TOOLS,
    ShopDB,
    cancel_order,
    claim_coupon,
    file_complaint,
    get_order_status,
    get_product,
    list_coupons,
    list_my_orders,
    request_return,
    search_products,
    shop_now,
    transfer_to_human,
)
from lg_harness.tools.context import ToolContext
from lg_harness.tools.errors import BusinessError, NotFoundError, PermanentError, ValidationError

STATUSES = ("pending", "shipped", "delivered", "cancelled")


@pytest.fixture
def db(tmp_path):
    shop = ShopDB.open(tmp_path / "shop.db", seed=7)
    yield shop
    shop.close()


def ctx_for(db: ShopDB, user_id: str = "U001", key: str = "", thread_id: str = "t-1", role: str = "customer"):
    return ToolContext(user_id=user_id, role=role, thread_id=thread_id, idempotency_key=key, extras={"shop": db})


def scalar(db: ShopDB, sql: str, params: tuple = ()):
    return db.query_one(sql, params)[0]


def first_order(db: ShopDB, user_id: str, status: str) -> str:
    return scalar(db, "SELECT MIN(id) FROM orders WHERE user_id = ? AND status = ?", (user_id, status))


def dump(shop: ShopDB) -> list[str]:
    return list(shop.conn.iterdump())


# ------------------------------------------------------------------------------------------ seed data


def test_same_seed_gives_identical_rows_and_other_seed_differs(tmp_path):
    a, b, c = (ShopDB.open(tmp_path / f"{name}.db", seed=s) for name, s in (("a", 7), ("b", 7), ("c", 8)))
    try:
        assert dump(a) == dump(b)
        assert dump(a) != dump(c)
        assert scalar(c, "SELECT name FROM products WHERE id = 'P1001'") == "Wireless Bluetooth Headphones"
    finally:
        for shop in (a, b, c):
            shop.close()


def test_reopening_a_seeded_file_keeps_its_data(tmp_path):
    path = tmp_path / "shop.db"
    with ShopDB.open(path) as shop:
        cancel_order(ctx_for(shop), first_order(shop, "U001", "pending"))
        before = dump(shop)
    with ShopDB.open(path, seed=99) as shop:
        assert dump(shop) == before
        assert scalar(shop, "PRAGMA journal_mode") == "wal"


def test_counts(db):
    assert scalar(db, "SELECT COUNT(*) FROM products") >= 60
    assert scalar(db, "SELECT COUNT(DISTINCT category) FROM products") >= 8
    assert scalar(db, "SELECT COUNT(*) FROM products WHERE id NOT IN (SELECT product_id FROM variants)") == 0
    per_product = db.query("SELECT COUNT(*) AS n FROM variants GROUP BY product_id")
    assert all(2 <= r["n"] <= 6 for r in per_product)
    assert scalar(db, "SELECT COUNT(*) FROM variants WHERE stock = 0") > 0
    assert scalar(db, "SELECT COUNT(*) FROM variants WHERE sku NOT GLOB 'P[0-9][0-9][0-9][0-9]-*-*'") == 0
    assert scalar(db, "SELECT COUNT(*) FROM users") == 30
    roles = dict(db.query("SELECT role, COUNT(*) FROM users GROUP BY role"))
    assert set(roles) == {"customer", "vip"} and 4 <= roles["vip"] <= 8
    assert scalar(db, "SELECT COUNT(*) FROM orders") == 200
    assert [scalar(db, "SELECT MIN(id) FROM orders"), scalar(db, "SELECT MAX(id) FROM orders")] == [
        "ORD-10001", "ORD-10200"]
    statuses = dict(db.query("SELECT status, COUNT(*) FROM orders GROUP BY status"))
    assert set(statuses) == set(STATUSES) and min(statuses.values()) >= 30
    assert scalar(db, "SELECT COUNT(*) FROM coupons") >= 6


def test_orders_are_consistent(db):
    bad_totals = db.query(
        "SELECT o.id FROM orders o WHERE ABS(o.total - (SELECT SUM(qty * price) FROM order_items i "
        "WHERE i.order_id = o.id)) > 0.01"
    )
    assert bad_totals == []
    items = db.query("SELECT COUNT(*) AS n FROM order_items GROUP BY order_id")
    assert len(items) == 200 and all(1 <= r["n"] <= 3 for r in items)
    for o in db.query("SELECT * FROM orders"):
        shipped = o["status"] in ("shipped", "delivered")
        assert (o["tracking_no"] is not None) == shipped and (o["carrier"] is not None) == shipped
        assert o["created_at"] <= o["updated_at"] <= shop_now().isoformat()


def test_u001_is_the_demo_customer(db):
    user = db.query_one("SELECT * FROM users WHERE id = 'U001'")
    assert (user["name"], user["role"]) == ("Alex Chen", "customer")
    assert scalar(db, "SELECT role FROM users WHERE id = 'U002'") == "vip"
    orders = db.query("SELECT id, status FROM orders WHERE user_id = 'U001' ORDER BY id")
    assert {o["status"] for o in orders} == set(STATUSES)
    assert orders[0]["status"] == "shipped"


# ---------------------------------------------------------------------------------------- read tools


@pytest.mark.parametrize("query", ["bluetooth headphones", "headphones", "Headphones", "蓝牙耳机", "耳机"])
def test_search_finds_headphones(db, query):
    out = search_products(ctx_for(db), query)
    assert out["query"] == query
    assert out["results"][0]["product_id"] == "P1001"
    assert set(out["results"][0]) >= {"product_id", "name", "name_zh", "price", "in_stock"}
    assert len(out["results"]) <= 5


def test_search_other_products_and_limits(db):
    assert search_products(ctx_for(db), "跑步鞋")["results"][0]["name"] == "Running Shoes"
    assert search_products(ctx_for(db), "down jacket")["results"][0]["name_zh"] == "羽绒服"
    assert len(search_products(ctx_for(db), "耳机", max_results=2)["results"]) == 2
    assert search_products(ctx_for(db), "xyzzy")["results"] == []


def test_search_reports_stock(db):
    with db.transaction() as conn:
        conn.execute("UPDATE variants SET stock = 0 WHERE product_id = 'P1001'")
    assert search_products(ctx_for(db), "蓝牙耳机")["results"][0]["in_stock"] is False


def test_get_product(db):
    out = get_product(ctx_for(db), "P1001")
    assert out["name"] == "Wireless Bluetooth Headphones" and out["description"]
    assert 2 <= len(out["variants"]) <= 6
    assert all(v["sku"].startswith("P1001-") and v["stock"] >= 0 for v in out["variants"])
    with pytest.raises(NotFoundError):
        get_product(ctx_for(db), "P9999")


def test_get_order_status_returns_the_real_row(db):
    oid = first_order(db, "U001", "shipped")
    out = get_order_status(ctx_for(db), oid)
    row = db.query_one("SELECT * FROM orders WHERE id = ?", (oid,))
    assert out["status"] == "shipped" == row["status"]
    assert (out["tracking_no"], out["carrier"], out["total"]) == (row["tracking_no"], row["carrier"], row["total"])
    assert out["items"] and all(i["name"] and i["qty"] >= 1 for i in out["items"])


def test_other_users_order_looks_not_found(db):
    other = first_order(db, "U002", "pending") or scalar(db, "SELECT MIN(id) FROM orders WHERE user_id = 'U002'")
    with pytest.raises(NotFoundError) as mine:
        get_order_status(ctx_for(db), other)
    with pytest.raises(NotFoundError) as missing:
        get_order_status(ctx_for(db), "ORD-99999")
    assert str(mine.value).replace(other, "X") == str(missing.value).replace("ORD-99999", "X")
    pending_other = scalar(db, "SELECT MIN(id) FROM orders WHERE user_id != 'U001' AND status = 'pending'")
    with pytest.raises(NotFoundError):
        cancel_order(ctx_for(db), pending_other)
    assert scalar(db, "SELECT status FROM orders WHERE id = ?", (pending_other,)) == "pending"


def test_list_my_orders(db):
    out = list_my_orders(ctx_for(db))
    own = scalar(db, "SELECT COUNT(*) FROM orders WHERE user_id = 'U001'")
    assert out["total_count"] == own == len(out["orders"])
    dates = [o["created_at"] for o in out["orders"]]
    assert dates == sorted(dates, reverse=True)
    delivered = list_my_orders(ctx_for(db), status="delivered", limit=1)
    assert len(delivered["orders"]) == 1 and delivered["orders"][0]["status"] == "delivered"
    assert list_my_orders(ctx_for(db, "U999"))["orders"] == []


def test_missing_shop_is_a_permanent_error():
    with pytest.raises(PermanentError):
        get_product(ToolContext(user_id="U001"), "P1001")


# ------------------------------------------------------------------------------------ changing tools


def test_cancel_pending_order_restores_stock(db):
    oid = first_order(db, "U001", "pending")
    items = db.query("SELECT sku, qty FROM order_items WHERE order_id = ?", (oid,))
    stock = {i["sku"]: scalar(db, "SELECT stock FROM variants WHERE sku = ?", (i["sku"],)) for i in items}
    out = cancel_order(ctx_for(db), oid, reason="changed my mind")
    assert out["status"] == "cancelled" and out["refund_amount"] == scalar(db, "SELECT total FROM orders WHERE id = ?", (oid,))
    row = db.query_one("SELECT status, updated_at FROM orders WHERE id = ?", (oid,))
    assert (row["status"], row["updated_at"]) == ("cancelled", shop_now().isoformat(timespec="seconds"))
    for i in items:
        assert scalar(db, "SELECT stock FROM variants WHERE sku = ?", (i["sku"],)) == stock[i["sku"]] + i["qty"]


@pytest.mark.parametrize("status", ["shipped", "delivered", "cancelled"])
def test_cancel_refuses_orders_that_are_not_pending(db, status):
    oid = first_order(db, "U001", status)
    with pytest.raises(BusinessError) as err:
        cancel_order(ctx_for(db, key=f"k-{status}"), oid)
    assert not isinstance(err.value, NotFoundError) and oid in str(err.value)
    assert scalar(db, "SELECT status FROM orders WHERE id = ?", (oid,)) == status
    assert scalar(db, "SELECT COUNT(*) FROM idempotency") == 0  # a failed call stores nothing


def test_cancel_is_idempotent_per_key(db):
    oid = first_order(db, "U001", "pending")
    sku, qty = db.query_one("SELECT sku, qty FROM order_items WHERE order_id = ?", (oid,))
    stock = scalar(db, "SELECT stock FROM variants WHERE sku = ?", (sku,))
    first = cancel_order(ctx_for(db, key="thread-1:call-1"), oid)
    with db.transaction() as conn:  # mark the row so a second real change would be visible
        conn.execute("UPDATE orders SET updated_at = 'marker' WHERE id = ?", (oid,))
    again = cancel_order(ctx_for(db, key="thread-1:call-1"), oid)
    assert again == first
    assert scalar(db, "SELECT updated_at FROM orders WHERE id = ?", (oid,)) == "marker"
    assert scalar(db, "SELECT stock FROM variants WHERE sku = ?", (sku,)) == stock + qty
    assert scalar(db, "SELECT COUNT(*) FROM idempotency WHERE key = 'thread-1:call-1'") == 1
    with pytest.raises(BusinessError, match="already cancelled"):
        cancel_order(ctx_for(db, key="thread-1:call-2"), oid)


def test_idempotency_key_of_another_tool_is_rejected(db):
    claim_coupon(ctx_for(db, key="k"), "WELCOME10")
    with pytest.raises(ValidationError):
        cancel_order(ctx_for(db, key="k"), first_order(db, "U001", "pending"))


def test_request_return(db):
    oid = first_order(db, "U001", "delivered")
    first = request_return(ctx_for(db, key="r1"), oid, reason="wrong size")
    assert first["return_id"].startswith("RMA-") and first["status"] == "requested"
    assert request_return(ctx_for(db, key="r1"), oid, reason="wrong size") == first
    rows = db.query("SELECT * FROM returns WHERE order_id = ?", (oid,))
    assert len(rows) == 1 and (rows[0]["status"], rows[0]["user_id"]) == ("requested", "U001")
    assert f"RMA-{rows[0]['id']}" == first["return_id"]
    with pytest.raises(BusinessError, match="already open"):
        request_return(ctx_for(db, key="r2"), oid, reason="wrong size")
    assert get_order_status(ctx_for(db), oid)["open_return"]["return_id"] == first["return_id"]


@pytest.mark.parametrize("status", ["pending", "shipped", "cancelled"])
def test_return_needs_a_delivered_order(db, status):
    with pytest.raises(BusinessError):
        request_return(ctx_for(db), first_order(db, "U001", status), reason="no longer needed")
    assert scalar(db, "SELECT COUNT(*) FROM returns") == 0


def test_list_coupons_by_role(db):
    customer = {c["code"] for c in list_coupons(ctx_for(db))["available"]}
    vip = {c["code"] for c in list_coupons(ctx_for(db, "U002", role="vip"))["available"]}
    assert "WELCOME10" in customer and "VIP15" not in customer and "SUMMER25" not in customer
    assert {"VIP15", "WELCOME10"} <= vip and "SUMMER25" not in vip


def test_claim_coupon(db):
    out = claim_coupon(ctx_for(db, key="c1"), "WELCOME10")
    assert out["claimed"] is True and out["code"] == "WELCOME10"
    assert claim_coupon(ctx_for(db, key="c1"), "WELCOME10") == out
    assert scalar(db, "SELECT COUNT(*) FROM user_coupons WHERE user_id = 'U001'") == 1
    listed = list_coupons(ctx_for(db))
    assert [c["code"] for c in listed["claimed"]] == ["WELCOME10"]
    assert "WELCOME10" not in {c["code"] for c in listed["available"]}
    with pytest.raises(BusinessError, match="already claimed"):
        claim_coupon(ctx_for(db, key="c2"), "WELCOME10")


def test_claim_coupon_refusals(db):
    with pytest.raises(BusinessError, match="VIP"):
        claim_coupon(ctx_for(db), "VIP15")
    with pytest.raises(BusinessError, match="expired"):
        claim_coupon(ctx_for(db), "SUMMER25")
    with pytest.raises(NotFoundError):
        claim_coupon(ctx_for(db), "NOSUCHCODE")
    assert scalar(db, "SELECT COUNT(*) FROM user_coupons WHERE user_id = 'U001'") == 0
    assert claim_coupon(ctx_for(db, "U002", role="vip"), "VIP15")["claimed"] is True


def test_concurrent_claims_apply_once(db):
    outcomes: list[str] = []

    def claim(n: int) -> None:
        try:
            claim_coupon(ctx_for(db, key=f"k{n}"), "SAVE20")
            outcomes.append("ok")
        except BusinessError:
            outcomes.append("refused")

    threads = [threading.Thread(target=claim, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(outcomes) == ["ok"] + ["refused"] * 7
    assert scalar(db, "SELECT COUNT(*) FROM user_coupons WHERE user_id = 'U001' AND code = 'SAVE20'") == 1


def test_file_complaint(db):
    oid = first_order(db, "U001", "delivered")
    out = file_complaint(ctx_for(db, key="f1"), "The parcel arrived late and damaged.", order_id=oid)
    assert out["complaint_id"].startswith("CMP-") and out["order_id"] == oid
    assert file_complaint(ctx_for(db, key="f1"), "The parcel arrived late and damaged.", order_id=oid) == out
    assert scalar(db, "SELECT COUNT(*) FROM complaints") == 1
    second = file_complaint(ctx_for(db, key="f2"), "Support never answered my email.")
    assert second["complaint_id"] != out["complaint_id"] and second["order_id"] is None
    assert scalar(db, "SELECT COUNT(*) FROM complaints") == 2
    with pytest.raises(NotFoundError):
        file_complaint(ctx_for(db, key="f3"), "Someone else's order.", order_id=first_order(db, "U002", "delivered"))
    assert scalar(db, "SELECT COUNT(*) FROM complaints") == 2


def test_transfer_to_human(db):
    out = transfer_to_human(ctx_for(db, key="h1", thread_id="thread-A"), "wants to talk to a person")
    assert out["ticket_id"].startswith("HO-") and out["status"] == "waiting"
    assert transfer_to_human(ctx_for(db, key="h1", thread_id="thread-A"), "wants to talk to a person") == out
    row = db.query_one("SELECT * FROM handoffs")
    assert (row["user_id"], row["thread_id"], row["status"]) == ("U001", "thread-A", "waiting")
    assert scalar(db, "SELECT COUNT(*) FROM handoffs") == 1
    same_thread = transfer_to_human(ctx_for(db, key="h2", thread_id="thread-A"), "asks again")
    assert same_thread["ticket_id"] == out["ticket_id"] and same_thread["already_waiting"] is True
    other = transfer_to_human(ctx_for(db, key="h3", thread_id="thread-B"), "another conversation")
    assert other["ticket_id"] != out["ticket_id"] and other["queue_position"] == 2
    assert scalar(db, "SELECT COUNT(*) FROM handoffs") == 2


# ----------------------------------------------------------------------------------- tool contracts


def model_args(fn) -> dict:
    hints = typing.get_type_hints(fn, include_extras=True)
    params = list(inspect.signature(fn).parameters.values())[1:]
    return {p.name: (hints[p.name], ... if p.default is inspect.Parameter.empty else p.default) for p in params}


def test_tool_list_and_flags():
    names = [fn.__name__ for fn in SHOP_TOOLS]
    assert names == ["search_products", "get_product", "get_order_status", "list_my_orders", "cancel_order",
                     "request_return", "list_coupons", "claim_coupon", "file_complaint", "transfer_to_human"]
    changing = {"cancel_order", "request_return", "claim_coupon", "file_complaint", "transfer_to_human"}
    assert changing == CHANGING_TOOLS
    assert all(fn.changes_state == (fn.__name__ in CHANGING_TOOLS) for fn in SHOP_TOOLS)


@pytest.mark.parametrize("fn", SHOP_TOOLS, ids=lambda fn: fn.__name__)
def test_tool_signature_and_docstring(fn):
    params = list(inspect.signature(fn).parameters)
    assert params[0] == "ctx"
    doc = inspect.getdoc(fn)
    assert doc is not None
    assert "do not use" in " ".join(doc.split("\n\n")[0].split()).lower()  # when to use it, and when not
    args = model_args(fn)
    if args:
        assert "Args:" in doc and all(f"    {name}: " in doc for name in args)
    schema = pydantic.create_model(f"{fn.__name__}_args", **args).model_json_schema()
    assert set(schema.get("properties", {})) == set(args)


@pytest.mark.parametrize(
    ("fn", "bad"),
    [(get_order_status, {"order_id": "ORD-1"}), (get_product, {"product_id": "p1001"}),
     (claim_coupon, {"code": "welcome10"}), (search_products, {"query": "x", "max_results": 0}),
     (list_my_orders, {"status": "lost"}), (file_complaint, {"text": "late order", "order_id": "123"})],
)
def test_argument_constraints(fn, bad):
    model = pydantic.create_model("Args", **model_args(fn))
    with pytest.raises(pydantic.ValidationError):
        model(**bad)


def test_shop_now_is_fixed_unless_real_clock(monkeypatch):
    monkeypatch.delenv("HARNESS_REAL_CLOCK", raising=False)
    assert shop_now().isoformat() == "2026-11-01T12:00:00"
    monkeypatch.setenv("HARNESS_REAL_CLOCK", "1")
    assert shop_now().isoformat() != "2026-11-01T12:00:00"
