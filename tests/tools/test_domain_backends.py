"""The bundled domains' tools on both engines: one conformance suite, run on SQLite and on Postgres.

The tools have one code path; ``tools.pg_backend`` translates it. Every rule a user relies on (a change
applies once per key, only for its owner, and a failed call changes nothing) must hold on both, and the
same calls must give the same results on both. Postgres-only: several workers opening and seeding the same
schema at once, and racing on the same change.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lg_harness.domains.helpdesk import DOMAIN as HELPDESK
from lg_harness.domains.helpdesk import HelpdeskDB
from lg_harness.domains.helpdesk import tools as desk
from lg_harness.domains.shop import DOMAIN as SHOP
from lg_harness.domains.shop import ShopDB
from lg_harness.domains.shop import tools as shop
from lg_harness.tools.backend import BackendPlace
from lg_harness.tools.context import ToolContext
from lg_harness.tools.errors import BusinessError, NotFoundError, ValidationError
from tests.engines import database_url, postgres_server  # noqa: F401

ENGINES = ("sqlite", pytest.param("postgres", marks=pytest.mark.postgres))


def _open(cls: type, engine: str, tmp_path: Path, request: pytest.FixtureRequest, name: str) -> Any:
    if engine == "sqlite":
        return cls.open(tmp_path / f"{name}.sqlite")
    return cls.open_postgres(request.getfixturevalue("database_url"), name)


@pytest.fixture(params=ENGINES)
def shop_db(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ShopDB]:
    db = _open(ShopDB, request.param, tmp_path, request, "shop")
    yield db
    db.close()


@pytest.fixture(params=ENGINES)
def desk_db(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[HelpdeskDB]:
    db = _open(HelpdeskDB, request.param, tmp_path, request, "helpdesk")
    yield db
    db.close()


def sctx(db: ShopDB, user: str = "U001", key: str = "", thread: str = "t1") -> ToolContext:
    return ToolContext(user_id=user, role="customer", thread_id=thread, idempotency_key=key, extras={"shop": db})


def dctx(db: HelpdeskDB, user: str = "E1001", role: str = "employee", key: str = "", thread: str = "t1") -> ToolContext:
    return ToolContext(user_id=user, role=role, thread_id=thread, idempotency_key=key, extras={"helpdesk": db})


def one(db: Any, sql: str, params: tuple = ()) -> Any:
    return db.query_one(sql, params)[0]


def an_order(db: ShopDB, user: str, status: str) -> str:
    return one(db, "SELECT MIN(id) FROM orders WHERE user_id = ? AND status = ?", (user, status))


# ------------------------------------------------------------------------------------------------ shop


@pytest.mark.slow
def test_cancel_applies_once_per_key_and_puts_the_stock_back_once(shop_db: ShopDB) -> None:
    order = an_order(shop_db, "U001", "pending")
    items = shop_db.query("SELECT sku, qty FROM order_items WHERE order_id = ? ORDER BY sku", (order,))
    stock = {r["sku"]: one(shop_db, "SELECT stock FROM variants WHERE sku = ?", (r["sku"],)) for r in items}
    first = shop.cancel_order(sctx(shop_db, key="t1:c1"), order, "changed my mind")
    again = shop.cancel_order(sctx(shop_db, key="t1:c1"), order, "changed my mind")
    assert first == again and first["status"] == "cancelled" and first["previous_status"] == "pending"
    assert one(shop_db, "SELECT status FROM orders WHERE id = ?", (order,)) == "cancelled"
    for r in items:
        assert one(shop_db, "SELECT stock FROM variants WHERE sku = ?", (r["sku"],)) == stock[r["sku"]] + r["qty"]
    assert one(shop_db, "SELECT COUNT(*) FROM idempotency WHERE tool = 'cancel_order'") == 1
    with pytest.raises(BusinessError, match="already cancelled"):  # a new key is a new request
        shop.cancel_order(sctx(shop_db, key="t1:c2"), order)
    with pytest.raises(ValidationError, match="already used by cancel_order"):
        shop.claim_coupon(sctx(shop_db, key="t1:c1"), "WELCOME10")


def test_a_return_opens_once_and_a_second_request_is_refused(shop_db: ShopDB) -> None:
    order = an_order(shop_db, "U001", "delivered")
    rma = shop.request_return(sctx(shop_db, key="t1:r1"), order, "wrong size")
    assert rma["return_id"] == f"RMA-{one(shop_db, 'SELECT id FROM returns WHERE order_id = ?', (order,))}"
    assert shop.request_return(sctx(shop_db, key="t1:r1"), order, "wrong size") == rma
    with pytest.raises(BusinessError, match="already open"):
        shop.request_return(sctx(shop_db, key="t1:r2"), order, "wrong size")
    assert one(shop_db, "SELECT COUNT(*) FROM returns WHERE order_id = ?", (order,)) == 1
    assert shop.get_order_status(sctx(shop_db), order)["open_return"] == {"return_id": rma["return_id"],
                                                                          "status": "requested"}


def test_a_coupon_is_claimed_once_and_a_failed_claim_stores_nothing(shop_db: ShopDB) -> None:
    code = next(c["code"] for c in shop.list_coupons(sctx(shop_db, "U002"))["available"])
    claimed = shop.claim_coupon(sctx(shop_db, "U002", key="t1:k1"), code)
    assert claimed["claimed"] is True and claimed["code"] == code
    assert code in {c["code"] for c in shop.list_coupons(sctx(shop_db, "U002"))["claimed"]}
    with pytest.raises(BusinessError, match="already claimed"):
        shop.claim_coupon(sctx(shop_db, "U002", key="t1:k2"), code)
    assert one(shop_db, "SELECT COUNT(*) FROM idempotency WHERE key = 't1:k2'") == 0  # the failure left no row
    with pytest.raises(NotFoundError):
        shop.claim_coupon(sctx(shop_db, "U002", key="t1:k3"), "NOSUCHCODE1")
    assert one(shop_db, "SELECT COUNT(*) FROM user_coupons WHERE user_id = 'U002' AND code = ?", (code,)) == 1


def test_one_handoff_row_per_waiting_thread_and_answering_closes_it(shop_db: ShopDB) -> None:
    first = shop.transfer_to_human(sctx(shop_db, key="h:1", thread="h"), "wants a person")
    again = shop.transfer_to_human(sctx(shop_db, key="h:2", thread="h"), "still wants a person")
    other = shop.transfer_to_human(sctx(shop_db, "U002", key="g:1", thread="g"), "needs help")
    assert again["ticket_id"] == first["ticket_id"] and again["already_waiting"] and not first["already_waiting"]
    assert other["ticket_id"] != first["ticket_id"] and other["queue_position"] == 2
    assert one(shop_db, "SELECT COUNT(*) FROM handoffs WHERE thread_id = 'h'") == 1
    shop_db.close_handoffs("h", "U001")
    assert one(shop_db, "SELECT status FROM handoffs WHERE thread_id = 'h'") == "answered"
    assert shop.transfer_to_human(sctx(shop_db, key="h:3", thread="h"), "again")["ticket_id"] != first["ticket_id"]


def test_a_user_sees_and_changes_only_their_own_orders(shop_db: ShopDB) -> None:
    theirs = an_order(shop_db, "U002", "pending")
    for call in (lambda: shop.get_order_status(sctx(shop_db), theirs),
                 lambda: shop.cancel_order(sctx(shop_db, key="t1:x"), theirs)):
        with pytest.raises(NotFoundError, match="not found in your account"):
            call()
    assert one(shop_db, "SELECT status FROM orders WHERE id = ?", (theirs,)) == "pending"
    assert one(shop_db, "SELECT COUNT(*) FROM idempotency") == 0
    mine = shop.list_my_orders(sctx(shop_db))
    assert mine["orders"] and mine["total_count"] == one(shop_db, "SELECT COUNT(*) FROM orders WHERE user_id = 'U001'")
    complaint = shop.file_complaint(sctx(shop_db, key="t1:f"), "The parcel arrived crushed.", mine["orders"][0]["order_id"])
    assert complaint["complaint_id"] == f"CMP-{one(shop_db, 'SELECT MAX(id) FROM complaints')}"


# -------------------------------------------------------------------------------------------- helpdesk


def test_helpdesk_comment_ticket_and_escalation_rows(desk_db: HelpdeskDB) -> None:
    comment = desk.add_ticket_comment(dctx(desk_db, key="t1:a"), "INC0012346", "still flickers")
    assert comment["comment_id"] == one(desk_db, "SELECT MAX(id) FROM ticket_comments")
    assert desk.add_ticket_comment(dctx(desk_db, key="t1:a"), "INC0012346", "still flickers") == comment
    assert one(desk_db, "SELECT COUNT(*) FROM ticket_comments WHERE body = 'still flickers'") == 1
    created = desk.create_ticket(dctx(desk_db, key="t1:b"), "Laptop does not boot", "high")
    assert created["ticket_id"] == "INC0012361"
    escalated = desk.escalate_to_technician(dctx(desk_db, key="t1:c"), "screen broken")
    assert escalated["ticket_id"] == "INC0012362" and not escalated["already_waiting"]
    assert desk.escalate_to_technician(dctx(desk_db, key="t1:d"), "please")["ticket_id"] == "INC0012362"
    assert one(desk_db, "SELECT COUNT(*) FROM handoffs WHERE thread_id = 't1'") == 1


def test_helpdesk_owner_and_identity_checks(desk_db: HelpdeskDB) -> None:
    with pytest.raises(NotFoundError):
        desk.get_ticket(dctx(desk_db), "INC0012337")  # E1002's
    with pytest.raises(NotFoundError):
        desk.add_ticket_comment(dctx(desk_db, key="t1:x"), "INC0012337", "mine now")
    assert desk.get_ticket(dctx(desk_db, "A9001", "agent"), "INC0012337")["owner_id"] == "E1002"
    with pytest.raises(BusinessError, match="verified first"):
        desk.reset_password(dctx(desk_db, "E1003", key="t1:p"), "E1003")
    with pytest.raises(BusinessError, match="does not match"):
        desk.verify_identity(dctx(desk_db, "E1003"), "E1003", "000000")
    pin = one(desk_db, "SELECT pin FROM employees WHERE id = 'E1003'")
    assert desk.verify_identity(dctx(desk_db, "E1003"), "E1003", pin)["verified"] is True
    reset = desk.reset_password(dctx(desk_db, "E1003", key="t1:p"), "E1003")
    assert reset["status"] == "reset" and one(desk_db, "SELECT must_change FROM accounts WHERE employee_id = 'E1003'") == 1
    with pytest.raises(BusinessError, match="(?i)only service-desk agents"):
        desk.unlock_account(dctx(desk_db, "E1001", "agent", key="t1:u"), "E1004")  # a role claim alone


# --------------------------------------------------------------------------------- the same on both


def _script(shop_db: ShopDB) -> list[Any]:
    """Reads and changes whose results depend on order, collation, numbers and ids."""
    out: list[Any] = []
    for call in (lambda: shop.search_products(sctx(shop_db), "bluetooth headphones", 10),
                 lambda: shop.search_products(sctx(shop_db), "蓝牙耳机"),
                 lambda: shop.get_product(sctx(shop_db), "P1001"),
                 lambda: shop.list_my_orders(sctx(shop_db), limit=50),
                 lambda: shop.list_coupons(sctx(shop_db, "U003")),
                 lambda: shop.get_order_status(sctx(shop_db), an_order(shop_db, "U001", "shipped")),
                 lambda: shop.cancel_order(sctx(shop_db, key="s:1"), an_order(shop_db, "U001", "pending")),
                 lambda: shop.request_return(sctx(shop_db, key="s:2"), an_order(shop_db, "U001", "delivered"), "x"),
                 lambda: shop.transfer_to_human(sctx(shop_db, key="s:3"), "a person")):
        out.append(call())
    return out


def test_the_same_calls_give_the_same_results_on_sqlite_and_postgres(tmp_path: Path, database_url: str) -> None:  # noqa: F811
    with ShopDB.open(tmp_path / "shop.sqlite") as lite, ShopDB.open_postgres(database_url, "shop") as pg:
        assert _script(lite) == _script(pg)
        dump = "SELECT * FROM {} ORDER BY 1, 2"
        for table in ("products", "variants", "users", "orders", "order_items", "coupons", "user_coupons"):
            assert [tuple(r) for r in lite.query(dump.format(table))] == \
                   [tuple(r)[:-1] for r in pg.query(dump.format(table))], table  # Postgres adds rowid last
    with HelpdeskDB.open(tmp_path / "desk.sqlite") as lite, HelpdeskDB.open_postgres(database_url, "helpdesk") as pg:
        for db in (lite, pg):
            desk.add_ticket_comment(dctx(db, key="k1"), "INC0012346", "more detail")
        calls = (lambda db: desk.list_my_tickets(dctx(db)), lambda db: desk.list_my_assets(dctx(db)),
                 lambda db: desk.get_ticket(dctx(db), "INC0012346"), lambda db: desk.search_kb(dctx(db), "vpn"))
        assert [c(lite) for c in calls] == [c(pg) for c in calls]


# ------------------------------------------------------------------------------------ Postgres only


def test_workers_opening_at_once_seed_the_schema_once(tmp_path: Path, database_url: str) -> None:  # noqa: F811
    opened: list[ShopDB] = []
    errors: list[BaseException] = []

    def open_one() -> None:
        try:
            opened.append(ShopDB.open_postgres(database_url, "shop"))
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    workers = [threading.Thread(target=open_one) for _ in range(6)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    try:
        assert errors == []
        with ShopDB.open(tmp_path / "shop.sqlite") as lite:
            for table in ("products", "orders", "users"):
                expected = one(lite, f"SELECT COUNT(*) FROM {table}")
                assert {one(db, f"SELECT COUNT(*) FROM {table}") for db in opened} == {expected}
    finally:
        for db in opened:
            db.close()


def test_workers_racing_on_one_change_apply_it_once(database_url: str) -> None:  # noqa: F811
    dbs = [ShopDB.open_postgres(database_url, "shop") for _ in range(4)]
    try:
        order = an_order(dbs[0], "U001", "pending")
        results: list[Any] = []
        barrier = threading.Barrier(len(dbs) * 2)

        def cancel(db: ShopDB, key: str) -> None:
            barrier.wait()
            try:
                results.append(shop.cancel_order(sctx(db, key=key), order))
            except BusinessError as exc:
                results.append(str(exc))

        # two keys (two messages asking), each raced by two workers (a retry and a takeover)
        threads = [threading.Thread(target=cancel, args=(db, key)) for db in dbs for key in ("m1:c", "m2:c")]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        applied = [r for r in results if isinstance(r, dict)]
        refused = [r for r in results if isinstance(r, str)]
        assert len(applied) + len(refused) == 8 and all("already cancelled" in r for r in refused)
        assert len(applied) == 4 and len({r["updated_at"] for r in applied}) == 1  # one key replays its result
        assert one(dbs[0], "SELECT COUNT(*) FROM idempotency WHERE tool = 'cancel_order'") == 1
    finally:
        for db in dbs:
            db.close()


def test_the_domain_opens_on_the_database_url_it_is_given(tmp_path: Path, database_url: str) -> None:  # noqa: F811
    for domain, name in ((SHOP, "shop"), (HELPDESK, "helpdesk")):
        assert domain.open_resources is not None
        opened = domain.open_resources(BackendPlace(lambda f: str(tmp_path / f), database_url))
        try:
            assert opened[name].dialect == "postgres" and opened[name].path is None
            assert domain.user(domain.default_user, opened) is not None
        finally:
            opened[name].close()
        assert not (tmp_path / f"{name}.sqlite").exists()
        files = domain.open_resources(BackendPlace(lambda f: str(tmp_path / f)))
        try:
            assert files[name].dialect == "sqlite" and Path(files[name].path) == tmp_path / f"{name}.sqlite"
        finally:
            files[name].close()
