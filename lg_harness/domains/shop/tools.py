"""The shop's tools: plain functions ``(ctx, <model args>) -> dict`` over the seeded shop database (SQLite or Postgres).

The executor validates the model's arguments against the type hints (``Annotated`` + ``pydantic.Field``)
and passes a :class:`~tools.context.ToolContext` whose ``extras["shop"]`` is the :class:`ShopDB`.
Reading tools have ``changes_state = False``; changing tools are wrapped by :func:`changing`, which makes
them idempotent per ``ctx.idempotency_key``.
"""

import os
import re
from collections.abc import Callable
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import Field

from lg_harness.domains.shop.db import ShopDB
from lg_harness.obs.redact import default_redactor
from lg_harness.tools.backend import changes_once
from lg_harness.tools.context import ToolContext
from lg_harness.tools.entities import Entity
from lg_harness.tools.errors import BusinessError, NotFoundError, PermanentError

CURRENCY = "USD"
FIXED_NOW = datetime(2026, 11, 1, 12, 0, 0)

OrderId = Annotated[str, Entity("order"), Field(pattern=r"^ORD-\d{5}$", description="Order number, e.g. ORD-10042.")]
ProductId = Annotated[str, Entity("product"), Field(pattern=r"^P\d{4}$", description="Product id, e.g. P1001.")]
CouponCode = Annotated[str, Entity("coupon"), Field(pattern=r"^[A-Z0-9]{4,16}$",
                                                     description="Coupon code, e.g. WELCOME10.")]
OrderStatus = Literal["pending", "shipped", "delivered", "cancelled"]


def shop_now() -> datetime:
    """The shop's "now": fixed at 2026-11-01T12:00:00 unless env ``HARNESS_REAL_CLOCK=1``."""
    if os.environ.get("HARNESS_REAL_CLOCK") == "1":
        return datetime.now().replace(microsecond=0)
    return FIXED_NOW


def _now_iso() -> str:
    return shop_now().isoformat(timespec="seconds")


def shop_db(ctx: ToolContext) -> ShopDB:
    """The shop database the executor put in ``ctx.extras["shop"]``."""
    db = ctx.extras.get("shop")
    if not isinstance(db, ShopDB):
        raise PermanentError("The shop database is not available for this call (ctx.extras['shop'] is not set).")
    return db


# A changing tool runs in one transaction, at most once per ``ctx.idempotency_key``.
changing = changes_once(shop_db, shop_now)

# Free text a tool keeps in the shop (a complaint, a reason) is for staff to read: the customer's
# words stay, their contact details and card numbers are masked before they rest (the audit log's redactor);
# the thread's transcript keeps what was said.
at_rest = default_redactor


# ---------------------------------------------------------------------------------------------- helpers


def _owned_order(db: ShopDB, ctx: ToolContext, order_id: str) -> Any:
    """The order row if it exists and belongs to the ctx user; otherwise NotFoundError (no leak)."""
    row = db.query_one("SELECT * FROM orders WHERE id = ? AND user_id = ?", (order_id.strip().upper(), ctx.user_id))
    if row is None:
        raise NotFoundError(
            f"Order {order_id} was not found in your account. Check the order number (format ORD-12345) "
            "or use list_my_orders to see your orders.", phrase="error_order_not_found", order_id=order_id)
    return row


def _order_items(db: ShopDB, order_id: str) -> list[dict]:
    rows = db.query(
        "SELECT i.sku, i.qty, i.price, p.name, p.name_zh, v.color, v.size FROM order_items i "
        "JOIN variants v ON v.sku = i.sku JOIN products p ON p.id = v.product_id "
        "WHERE i.order_id = ? ORDER BY i.rowid",
        (order_id,),
    )
    return [dict(r) for r in rows]


def _user_role(db: ShopDB, ctx: ToolContext) -> str:
    row = db.query_one("SELECT role FROM users WHERE id = ?", (ctx.user_id,))
    return row["role"] if row else ctx.role


def _open_return(db: ShopDB, order_id: str) -> Any:
    return db.query_one(
        "SELECT * FROM returns WHERE order_id = ? AND status IN ('requested', 'approved') ORDER BY id LIMIT 1",
        (order_id,),
    )


# ---- the rules a change must pass: one function each, run by the tool and, before the customer is asked to
# confirm, by its precheck (``ToolSpec.precheck``), so an impossible change is refused at once


def _cancellable(db: ShopDB, ctx: ToolContext, order_id: str) -> Any:
    o = _owned_order(db, ctx, order_id)
    if o["status"] != "pending":
        hint = {
            "shipped": "it has already shipped and can no longer be cancelled; once it is delivered the user "
                       "can request a return",
            "delivered": "it has already been delivered; the user can request a return instead",
            "cancelled": "it is already cancelled; nothing more is needed",
        }[o["status"]]
        raise BusinessError(f"Order {o['id']} cannot be cancelled: {hint}.", phrase=f"error_cancel_{o['status']}",
                            order_id=o["id"])
    return o


def _returnable(db: ShopDB, ctx: ToolContext, order_id: str) -> Any:
    o = _owned_order(db, ctx, order_id)
    if o["status"] != "delivered":
        hint = {
            "pending": "it has not shipped yet; cancel it instead",
            "shipped": "it is still on the way; a return can be requested once it is delivered",
            "cancelled": "it was cancelled, so there is nothing to return",
        }[o["status"]]
        raise BusinessError(f"Order {o['id']} cannot be returned: {hint}.", phrase=f"error_return_{o['status']}",
                            order_id=o["id"])
    rma = _open_return(db, o["id"])
    if rma is not None:
        raise BusinessError(
            f"A return is already open for order {o['id']} (RMA-{rma['id']}, status {rma['status']}); "
            "no new request is needed, the user can follow up on that return.",
            phrase="error_return_open", order_id=o["id"], return_id=f"RMA-{rma['id']}", status=rma["status"])
    return o


def _claimable(db: ShopDB, ctx: ToolContext, code: str) -> Any:
    c = db.query_one("SELECT * FROM coupons WHERE code = ?", (code,))
    if c is None:
        raise NotFoundError(f"Coupon code {code} does not exist. Use list_coupons to see the codes the user can claim.",
                            phrase="error_coupon_unknown", code=code)
    if c["expires_at"] <= _now_iso():
        raise BusinessError(
            f"Coupon {code} expired on {c['expires_at'][:10]} and can no longer be claimed. "
            "Use list_coupons to see current offers.", phrase="error_coupon_expired", code=code,
            expired=c["expires_at"][:10])
    if c["vip_only"] and _user_role(db, ctx) != "vip":
        raise BusinessError(f"Coupon {code} is for VIP members only. Use list_coupons to see coupons the user can claim.",
                            phrase="error_coupon_vip", code=code)
    prior = db.query_one("SELECT claimed_at FROM user_coupons WHERE user_id = ? AND code = ?", (ctx.user_id, code))
    if prior is not None:
        raise BusinessError(
            f"Coupon {code} was already claimed on {prior['claimed_at'][:10]}; each coupon can be claimed once. "
            f"It applies automatically at checkout on orders of {c['min_total']:.2f} or more.",
            phrase="error_coupon_claimed", code=code, claimed=prior["claimed_at"][:10],
            min_total=f"{c['min_total']:.2f}")
    return c


# ---- search

_STOPWORDS = {
    "a", "an", "the", "and", "or", "for", "with", "of", "to", "in", "on", "my", "me", "i", "you", "do",
    "want", "need", "looking", "buy", "some", "any", "have", "sell", "show", "find", "please", "is", "are",
}
_STOP_CHARS = set("的了我想买个要有吗一是在和款些什么哪你们这那子")
_TOKEN = re.compile(r"[a-z0-9]+|[\u4e00-\u9fff]+")


def _stem(word: str) -> str:
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 4 and word.endswith(("ches", "shes", "xes", "sses")):
        return word[:-2]
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


def _word_hit(token: str, text: str) -> bool:
    words = [_stem(w) for w in re.findall(r"[a-z0-9]+", text.lower())]
    if len(token) >= 4:
        return any(w.startswith(token) for w in words)
    return token in words


def _latin_score(token: str, p: Any) -> float:
    stem = _stem(token)
    for field, weight in (("name", 3.0), ("category", 2.0), ("brand", 2.0), ("description", 1.0)):
        if _word_hit(stem, p[field]):
            return weight
    return 0.0


def _cjk_score(run: str, p: Any) -> float:
    fields = (("name_zh", 3.0), ("category_zh", 2.0), ("description_zh", 1.0))
    for field, weight in fields:
        if run in p[field]:
            return 2 * weight
    bigrams = {run[i : i + 2] for i in range(len(run) - 1)}
    score = sum(weight / 2 for b in bigrams for field, weight in fields if b in p[field])
    if score:
        return score
    chars = set(run) - _STOP_CHARS
    return sum(0.5 for c in chars for field, _ in fields[:2] if c in p[field])


def _score(tokens: list[str], p: Any) -> float:
    scores = [_cjk_score(t, p) if t[0] >= "\u4e00" else _latin_score(t, p) for t in tokens]
    matched = sum(1 for s in scores if s > 0)
    return sum(scores) + (2.0 if matched == len(tokens) and len(tokens) > 1 else 0.0)


# ------------------------------------------------------------------------------------------------ tools


def search_products(
    ctx: ToolContext,
    query: Annotated[str, Field(min_length=1, max_length=200, description="What the user is looking for.")],
    max_results: Annotated[int, Field(ge=1, le=20, description="How many products to return.")] = 5,
) -> dict:
    """Search the catalogue by keywords in English or Chinese. Use it when the user looks for a kind of
    product, a brand or a product name and you need product ids, prices or availability. Do not use it
    when you already have the product id (use get_product), or for orders.

    Args:
        query: Keywords in English or Chinese, e.g. "bluetooth headphones" or "蓝牙耳机".
        max_results: Maximum number of products to return (1-20).
    """
    db = shop_db(ctx)
    tokens = _TOKEN.findall(query.lower())
    # a lone letter ("I'm" -> i, m) or a filler word says nothing about the product
    tokens = [t for t in tokens if t not in _STOPWORDS and (len(t) > 1 or t >= "\u4e00")] or tokens
    products = db.query(
        "SELECT p.*, (SELECT COALESCE(SUM(stock), 0) FROM variants v WHERE v.product_id = p.id) AS stock "
        "FROM products p ORDER BY p.id"
    )
    scored = [(_score(tokens, p), p) for p in products] if tokens else []
    top = max((s for s, _ in scored), default=0.0)
    # weak partial matches only count when nothing matches well: with a product that matches every word, one
    # that matches a single word ("headphones" in a gaming headset's category) is not what was asked for
    scored = sorted((sp for sp in scored if sp[0] > 0 and sp[0] >= 0.5 * top), key=lambda sp: (-sp[0], sp[1]["id"]))
    results = [
        {"product_id": p["id"], "name": p["name"], "name_zh": p["name_zh"], "brand": p["brand"],
         "price": p["price"], "in_stock": p["stock"] > 0}
        for _, p in scored[:max_results]
    ]
    out: dict[str, Any] = {"query": query, "results": results}
    if not results:
        out["note"] = "No products matched. Try fewer or more general words, in English or Chinese."
    return out


def get_product(ctx: ToolContext, product_id: ProductId) -> dict:
    """Get one product's details: description, price and every variant (color/size) with its stock. Use it
    when the user asks about a specific product you have the id of (from search_products or an order). Do
    not use it to search by name (use search_products).

    Args:
        product_id: The product id, e.g. P1001.
    """
    db = shop_db(ctx)
    pid = product_id.strip().upper()
    p = db.query_one("SELECT * FROM products WHERE id = ?", (pid,))
    if p is None:
        raise NotFoundError(f"Product {product_id} does not exist. Use search_products to find the product id.",
                            phrase="error_product_not_found", product_id=product_id)
    variants = [dict(v) for v in db.query(
        "SELECT sku, color, size, stock FROM variants WHERE product_id = ? ORDER BY rowid", (pid,)
    )]
    return {
        "product_id": pid, "name": p["name"], "name_zh": p["name_zh"], "category": p["category"],
        "category_zh": p["category_zh"], "brand": p["brand"], "price": p["price"], "currency": CURRENCY,
        "description": p["description"], "description_zh": p["description_zh"],
        "in_stock": any(v["stock"] > 0 for v in variants), "variants": variants,
    }


def get_order_status(ctx: ToolContext, order_id: OrderId) -> dict:
    """Get the status of one of the user's orders: items, total, tracking number and carrier, dates, and
    any open return. Use it when the user asks where an order is or what it contains and you know the
    order number. Do not use it to list orders (use list_my_orders) or to change an order.

    Args:
        order_id: The order number, e.g. ORD-10042.
    """
    db = shop_db(ctx)
    o = _owned_order(db, ctx, order_id)
    rma = _open_return(db, o["id"])
    return {
        "order_id": o["id"], "status": o["status"], "created_at": o["created_at"], "updated_at": o["updated_at"],
        "total": o["total"], "currency": CURRENCY, "tracking_no": o["tracking_no"], "carrier": o["carrier"],
        "items": [{"name": i["name"], "name_zh": i["name_zh"], "sku": i["sku"], "qty": i["qty"], "price": i["price"]}
                  for i in _order_items(db, o["id"])],
        "open_return": {"return_id": f"RMA-{rma['id']}", "status": rma["status"]} if rma else None,
    }


def list_my_orders(
    ctx: ToolContext,
    status: Annotated[OrderStatus | None, Field(description="Only orders with this status.")] = None,
    limit: Annotated[int, Field(ge=1, le=50, description="Maximum number of orders to return.")] = 10,
) -> dict:
    """List the user's own orders, newest first, optionally only one status. Use it when the user asks
    about "my orders", or refers to an order without giving its number. Do not use it when you know the
    order number (use get_order_status).

    Args:
        status: Only orders with this status: pending, shipped, delivered or cancelled; omit for all.
        limit: Maximum number of orders to return (1-50).
    """
    db = shop_db(ctx)
    where, params = "user_id = ?", [ctx.user_id]
    if status:
        where += " AND status = ?"
        params.append(status)
    total = db.query_one(f"SELECT COUNT(*) FROM orders WHERE {where}", tuple(params))[0]
    rows = db.query(
        f"SELECT id, status, created_at, total FROM orders WHERE {where} ORDER BY created_at DESC, id DESC LIMIT ?",
        (*params, limit),
    )
    orders = [
        {"order_id": r["id"], "status": r["status"], "created_at": r["created_at"], "total": r["total"],
         "items": [{"name": i["name"], "qty": i["qty"]} for i in _order_items(db, r["id"])]}
        for r in rows
    ]
    return {"status": status, "orders": orders, "total_count": total}


@changing
def cancel_order(
    ctx: ToolContext,
    order_id: OrderId,
    reason: Annotated[str, Field(max_length=500, description="Why the user cancels, in their words.")] = "",
) -> dict:
    """Cancel one of the user's orders that has not shipped yet (status pending); the full amount is
    refunded. Use it only when the user clearly asks to cancel a specific order. Do not use it for
    shipped or delivered orders (suggest request_return once delivered) or to change an order.

    Args:
        order_id: The order number to cancel, e.g. ORD-10042.
        reason: The user's reason for cancelling, if they gave one.
    """
    db = shop_db(ctx)
    o = _cancellable(db, ctx, order_id)
    now = _now_iso()
    db.execute("UPDATE orders SET status = 'cancelled', updated_at = ? WHERE id = ?", (now, o["id"]))
    for item in _order_items(db, o["id"]):  # put the reserved stock back
        db.execute("UPDATE variants SET stock = stock + ? WHERE sku = ?", (item["qty"], item["sku"]))
    return {"order_id": o["id"], "status": "cancelled", "previous_status": "pending", "refund_amount": o["total"],
            "currency": CURRENCY, "reason": at_rest(reason), "updated_at": now}  # the result rests too


@changing
def request_return(
    ctx: ToolContext,
    order_id: OrderId,
    reason: Annotated[str, Field(min_length=1, max_length=500, description="Why the user returns the order.")],
) -> dict:
    """Open a return (RMA) for one of the user's delivered orders. Use it when the user wants to send back
    or get a refund for an order that has arrived. Do not use it for orders that are pending (use
    cancel_order) or still on the way, and do not call it again for an order with an open return.

    Args:
        order_id: The delivered order to return, e.g. ORD-10042.
        reason: The user's reason for the return, e.g. "wrong size" or "arrived damaged".
    """
    db = shop_db(ctx)
    o = _returnable(db, ctx, order_id)
    now = _now_iso()
    rma_id = db.execute(
        "INSERT INTO returns (order_id, user_id, reason, status, created_at) VALUES (?, ?, ?, 'requested', ?) "
        "RETURNING id", (o["id"], ctx.user_id, at_rest(reason), now),
    ).fetchone()[0]
    return {"return_id": f"RMA-{rma_id}", "order_id": o["id"], "status": "requested", "created_at": now,
            "next_step": "Pack the items; a prepaid return label is sent by email once the return is approved."}


def list_coupons(ctx: ToolContext) -> dict:
    """List the coupons the user can claim now (not expired, VIP-only ones only for VIP members) and the
    coupons the user has already claimed. Use it when the user asks about discounts, promotions or
    coupons. Do not use it to claim a coupon (use claim_coupon).
    """
    db = shop_db(ctx)
    vip = _user_role(db, ctx) == "vip"
    claimed = db.query(
        "SELECT c.code, c.description, c.discount_pct, c.min_total, c.expires_at, u.claimed_at FROM user_coupons u "
        "JOIN coupons c ON c.code = u.code WHERE u.user_id = ? ORDER BY u.claimed_at, c.code",
        (ctx.user_id,),
    )
    claimed_codes = {c["code"] for c in claimed}
    available = db.query(
        "SELECT code, description, description_zh, discount_pct, min_total, vip_only, expires_at FROM coupons "
        "WHERE expires_at > ? AND (vip_only = 0 OR ? = 1) ORDER BY code",
        (_now_iso(), int(vip)),
    )
    return {
        "available": [dict(c, vip_only=bool(c["vip_only"])) for c in available if c["code"] not in claimed_codes],
        "claimed": [dict(c) for c in claimed],
    }


@changing
def claim_coupon(ctx: ToolContext, code: CouponCode) -> dict:
    """Claim a coupon code for the user's account; it then applies at checkout when the order total reaches
    the coupon's minimum. Use it when the user asks to claim or add a specific coupon code. Do not use it
    to look up which coupons exist (use list_coupons).

    Args:
        code: The coupon code in capitals, e.g. WELCOME10.
    """
    db = shop_db(ctx)
    code = code.strip().upper()
    c = _claimable(db, ctx, code)
    now = _now_iso()
    db.execute("INSERT INTO user_coupons (user_id, code, claimed_at) VALUES (?, ?, ?)", (ctx.user_id, code, now))
    return {"code": code, "claimed": True, "discount_pct": c["discount_pct"], "min_total": c["min_total"],
            "expires_at": c["expires_at"], "claimed_at": now}


@changing
def file_complaint(
    ctx: ToolContext,
    text: Annotated[str, Field(min_length=5, max_length=2000, description="The complaint in the user's words.")],
    order_id: Annotated[str | None, Field(pattern=r"^ORD-\d{5}$", description="Related order, if any.")] = None,
) -> dict:
    """Record a formal complaint for the customer care team, optionally about one of the user's orders. Use
    it when the user is unhappy and explicitly wants to complain or leave a formal complaint. Do not use
    it for cancellations or returns (use those tools), or when the user asks for a human now (use
    transfer_to_human).

    Args:
        text: The complaint, summarised faithfully in the user's words.
        order_id: The order the complaint is about, e.g. ORD-10042; omit if none.
    """
    db = shop_db(ctx)
    oid = _owned_order(db, ctx, order_id)["id"] if order_id else None
    now = _now_iso()
    complaint_id = db.execute(
        "INSERT INTO complaints (user_id, order_id, text, created_at) VALUES (?, ?, ?, ?) RETURNING id",
        (ctx.user_id, oid, at_rest(text), now),
    ).fetchone()[0]
    return {"complaint_id": f"CMP-{complaint_id}", "order_id": oid, "created_at": now,
            "next_step": "Customer care reviews complaints and replies by email within 2 business days."}


@changing
def transfer_to_human(
    ctx: ToolContext,
    reason: Annotated[str, Field(min_length=1, max_length=500, description="Why a human agent is needed.")],
) -> dict:
    """Hand the conversation over to a human agent and open a waiting ticket. Use it when the user asks for
    a human, when the request is outside what the tools can do, or after repeated failures. Do not use it
    for things a tool can do directly. If this conversation already waits for an agent, the same ticket is
    returned.

    Args:
        reason: A one-sentence summary of what the user needs, for the human agent.
    """
    db = shop_db(ctx)
    waiting = None
    if ctx.thread_id:
        waiting = db.query_one(
            "SELECT id, created_at FROM handoffs WHERE user_id = ? AND thread_id = ? AND status = 'waiting' "
            "ORDER BY id LIMIT 1",
            (ctx.user_id, ctx.thread_id),
        )
    if waiting is None:
        now = _now_iso()
        ticket = db.execute(
            "INSERT INTO handoffs (user_id, thread_id, reason, created_at, status) VALUES (?, ?, ?, ?, 'waiting') "
            "RETURNING id", (ctx.user_id, ctx.thread_id, at_rest(reason), now),
        ).fetchone()[0]
        created_at = now
    else:
        ticket, created_at = waiting["id"], waiting["created_at"]
    position = db.query_one("SELECT COUNT(*) FROM handoffs WHERE status = 'waiting' AND id <= ?", (ticket,))[0]
    return {"ticket_id": f"HO-{ticket}", "status": "waiting", "queue_position": position, "created_at": created_at,
            "already_waiting": waiting is not None}


# Prechecks: the same rules, nothing changed.
cancel_order.precheck = lambda ctx, order_id, reason="": _cancellable(shop_db(ctx), ctx, order_id)  # type: ignore[attr-defined]
request_return.precheck = lambda ctx, order_id, reason="": _returnable(shop_db(ctx), ctx, order_id)  # type: ignore[attr-defined]
claim_coupon.precheck = lambda ctx, code: _claimable(shop_db(ctx), ctx, code.strip().upper())  # type: ignore[attr-defined]
file_complaint.precheck = (  # type: ignore[attr-defined]
    lambda ctx, text, order_id=None: _owned_order(shop_db(ctx), ctx, order_id) if order_id else None)

for _fn in (search_products, get_product, get_order_status, list_my_orders, list_coupons):
    _fn.changes_state = False  # type: ignore[attr-defined]

SHOP_TOOLS: list[Callable[..., dict]] = [
    search_products, get_product, get_order_status, list_my_orders, cancel_order,
    request_return, list_coupons, claim_coupon, file_complaint, transfer_to_human,
]
CHANGING_TOOLS: set[str] = {fn.__name__ for fn in SHOP_TOOLS if fn.changes_state}  # type: ignore[attr-defined]
