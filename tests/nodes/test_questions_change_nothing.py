"""A question about records is not a request to change them (issue 41).

Real model, shop test goals: "我账户里被取消的订单一共有几个？" (how many of my orders were cancelled?) went to the
cancel task and was asked for an order number twice; "What is the total number of orders on my account,
including cancelled ones?" too; "what's the minimum spend for HOLIDAY30?" was answered with a claim to
confirm.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from lg_harness.core.design import load_design
from lg_harness.core.domain import load_domain
from lg_harness.graphs.app import Harness, Settings
from lg_harness.nodes.asking import asks_without_change, change_intents
from lg_harness.nodes.classify import described_intents

SHOP = load_domain("shop")
HELPDESK = load_domain("helpdesk")


def test_the_tasks_that_exist_to_change_are_read_from_the_domain():
    assert change_intents(SHOP, SHOP.registry()) == {"cancel_order", "return_order"}
    # coupons lists and claims: a question about coupons may still go there
    assert "coupons" not in change_intents(SHOP, SHOP.registry())
    assert {"reset_password", "request_access", "unlock_account"} <= change_intents(HELPDESK, HELPDESK.registry())


@pytest.mark.parametrize(("text", "asks"), [
    ("我账户里被取消的订单一共有几个？", True),
    ("帮我数一下我有多少个已取消的订单", True),
    ("What is the total number of orders on my account, including cancelled ones?", True),
    ("Why was ORD-10001 cancelled?", True),
    ("what's the minimum spend for HOLIDAY30?", True),
    ("Can I cancel ORD-10001?", False),  # a request, politely
    ("帮我取消 ORD-10001 好吗？", False),
    ("这个可以退吗？", False),
    ("能退货吗？", False),
    ("how do I return it?", False),
    ("ORD-10001 取消了吗？", False),  # no question word: left to the rules as before
    ("cancel ORD-10001", False),
])
def test_a_question_names_a_change_only_as_a_request(text, asks):
    assert asks_without_change(SHOP, SHOP.registry(), text) is asks


def test_a_count_or_a_list_is_the_intent_whose_description_says_so():
    assert described_intents(SHOP, "我账户里被取消的订单一共有几个？") == ["my_orders"]
    assert described_intents(SHOP, "how many orders have I placed?") == ["my_orders"]
    assert described_intents(HELPDESK, "我现在有几个工单？") == ["my_tickets"]
    assert described_intents(SHOP, "where is ORD-10001?") == []


@pytest.mark.parametrize("text", ["我账户里被取消的订单一共有几个？",
                                  "What is the total number of orders on my account, including cancelled ones?"])
def test_a_count_of_cancelled_orders_lists_them_and_asks_for_no_order_number(tmp_path: Path, text):
    with Harness("sim:clean", domain="shop", design=load_design("harness"),
                 settings=Settings(data_dir=tmp_path)) as h:
        r = h.send("t", text, "U001")
    assert r.intent not in ("cancel_order", "return_order") and r.missing_slots == []
    assert [c["name"] for c in r.tool_calls] == ["list_my_orders"]
    assert "ORD-" in r.reply


def test_a_polite_request_to_cancel_is_still_a_cancel(tmp_path: Path):
    with Harness("sim:clean", domain="shop", design=load_design("harness"),
                 settings=Settings(data_dir=tmp_path)) as h:
        pending = h.resources["shop"].query_one(
            "SELECT id FROM orders WHERE user_id = 'U001' AND status = 'pending' ORDER BY id")["id"]
        r = h.send("t", f"Can I cancel {pending}?", "U001")
    assert r.intent == "cancel_order" and pending in r.reply
