"""The judge's own reading of false facts (``evals.false_facts``, issue 45): by value, against the records the
conversation's tools returned, with no code of the harness's self-check."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from lg_harness.core.domain import load_domain
from lg_harness_lab.evals.false_facts import false_facts
from lg_harness_lab.evals.reply_quality import counts

ROOT = Path(__file__).resolve().parents[2]
SHOP = load_domain("shop")
ORDER = {"order_id": "ORD-10086", "status": "cancelled", "created_at": "2026-10-03T09:40:00", "total": 92.98,
         "currency": "USD", "items": [{"name": "Aluminium Laptop Stand", "qty": 2, "price": 38.99},
                                      {"name": "Yoga Mat", "qty": 1, "price": 15.0}]}
OTHER = {"order_id": "ORD-10072", "status": "delivered", "tracking_no": "SF9523542041", "total": 418.96}
CANCELLED = {"order_id": "ORD-10193", "previous_status": "pending", "status": "cancelled", "refund_amount": 181.49}
PENDING = {"order_id": "ORD-10193", "status": "pending", "total": 181.49}
RETURN = {"return_id": "RMA-1", "order_id": "ORD-10116", "status": "requested"}
COUPON = {"code": "VIP15", "claimed": True, "discount_pct": 15, "min_total": 50.0}
TWO_ORDERS = {"orders": [{"order_id": "ORD-10053", "status": "cancelled", "created_at": "2026-09-05T01:17:00"},
                         {"order_id": "ORD-10003", "status": "cancelled", "created_at": "2026-08-03T09:55:00"}]}
TICKET = {"ticket_id": "INC0012310", "status": "new", "short_description": "Cannot open the Sales shared drive"}
DELIVERED = {"order_id": "ORD-10116", "status": "delivered", "total": 116.0,
             "items": [{"name": "Travel Duffel Bag", "qty": 2, "price": 58.0}]}


@pytest.mark.parametrize("reply, seen, lang", [
    # a committed layered reply (gen-correction-en-0001): the harness's fact check passed it
    ("Order ORD-10086: the status: delivered. Order ORD-10072: the status: delivered.", [ORDER, OTHER], "en"),
    ("订单 ORD-10086 已签收。", [ORDER], "zh"),
    ("Your refund for ORD-10193 is 99.99 USD.", [CANCELLED], "en"),
    ("Order ORD-10086 was placed on 5 October 2026.", [ORDER], "en"),
    ("ORD-10193 is still pending.", [PENDING, CANCELLED], "en"),  # the newer record says cancelled
    ("VIP15: the min total is 61.0.", [COUPON], "en"),  # a field stated by its label, no currency
    ("VIP15：Min total是54.0。", [COUPON], "zh"),
    # a committed layered reply (tg-shop-0007): the other order's date, which the results hold, on this one
    ("Order ORD-10003: the status is cancelled, the created at: 2026-09-05T01:17:00.", [TWO_ORDERS], "en"),
    ("Ticket INC0012310: the status is closed.", [TICKET], "en"),  # a status no claim of the domain names
])
def test_a_statement_the_records_contradict_is_false(reply, seen, lang):
    assert false_facts(reply, seen, lang, SHOP)


@pytest.mark.parametrize("reply, seen, lang", [
    ("Order ORD-10086 is cancelled; it cost 92.98 USD.", [ORDER], "en"),
    ("订单 ORD-10193：状态是已取消，原状态是待发货，退款金额是181.49 美元。", [PENDING, CANCELLED], "zh"),
    ("您已取消订单 ORD-10193。", [PENDING, CANCELLED], "zh"),  # the order after its cancellation counts
    # the return's status beside its delivered order: a record of another kind names the order
    ("Delivered order ORD-10116: the status is requested, the return ID is RMA-1.", [DELIVERED, RETURN], "en"),
    ("Two duffel bags at 58.00 USD each: 116.00 USD.", [DELIVERED], "en"),
    ("The stand cost 77.98 USD for two.", [ORDER], "en"),  # a price times a quantity
    ("ORD-10086 cannot be shipped: it was cancelled on 3 October.", [ORDER], "en"),  # negated, and a true date
    ("Your orders from October 2026 are listed below.", [ORDER], "en"),  # "October 2026" is not the 20th
    ("VIP15: the min total is 50.00 USD, 15% off.", [COUPON], "en"),
    ("Ticket INC0012310: the status is new, the short description is: the Sales drive will not open.", [TICKET], "en"),
    ("The status is in_progress.", [{"ticket_id": "INC0012328", "status": "in_progress"}], "en"),
])
def test_a_statement_the_records_bear_out_is_not_false(reply, seen, lang):
    assert false_facts(reply, seen, lang, SHOP) == []


def test_the_judge_sees_what_the_harness_self_check_let_through():
    """The harness's own fact check (what the judge used before) passes the committed false reply; the judge's
    reading fails it, and fails none of the replies that check wrongly flagged (a previous status, a newer
    record)."""
    from lg_harness.nodes.fact_check import contradictions

    false = "Order ORD-10086: the status: delivered. Order ORD-10072: the status: delivered."
    assert not contradictions(false, [ORDER, OTHER], SHOP.claims, SHOP.currency, "")
    assert false_facts(false, [ORDER, OTHER], "en", SHOP)
    right = "订单 ORD-10193：状态是已取消，原状态是待发货。"
    assert contradictions(right, [CANCELLED], SHOP.claims, SHOP.currency, "")
    assert false_facts(right, [CANCELLED], "zh", SHOP) == []


def test_a_refusal_s_amounts_and_dates_are_not_judged_without_its_reason():
    """A reply relaying a refusal ("expired on 2026-09-30") states what the refusal said, which run records do
    not keep: its dates are not counted false. A status about a record still is."""
    turns = [{"reply": "Sorry, SUMMER25 expired on 2026-09-30.",
              "tool_calls": [{"name": "claim_coupon", "status": "error", "result": None}]},
             {"reply": "SUMMER25 expired on 2026-09-30. Order ORD-10086 is delivered.",
              "tool_calls": [{"name": "get_order_status", "status": "ok", "result": ORDER}]}]
    assert counts(turns, SHOP, SHOP.registry().names(), ["claim SUMMER25", "and ORD-10086?"])["false_facts"] == [1, 1]


def test_the_false_fact_reader_imports_nothing_of_the_harness():
    tree = ast.parse((ROOT / "lab" / "lg_harness_lab" / "evals" / "false_facts.py").read_text(encoding="utf-8"))
    imported = [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    assert not [m for m in imported if m.startswith("lg_harness.")], imported
