"""Replies state only what tools returned (issue 17, item 3): the self-check checks the facts a draft
states against this message's tool results, domain-generally, and corrects a draft that contradicts them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage

from lg_harness.core.claims import Claim, equals
from lg_harness.core.domain import Domain, load_domain
from lg_harness.graphs.app import Harness, Settings
from lg_harness.nodes.fact_check import contradictions, corrected
from lg_harness_lab.evals.metrics import cell_metrics
from lg_harness_lab.evals.scenario import Scenario, Turn
from tests.support import patient_design

SHOP = load_domain("shop")
TRACKER = {"product_id": "P1022", "name": "Fitness Tracker Band", "name_zh": "健身手环", "brand": "Xiaomi",
           "price": 71.99, "currency": "USD", "in_stock": True,
           "variants": [{"sku": "P1022-BLK-OS", "color": "Black", "size": "OS", "stock": 0},
                        {"sku": "P1022-BLU-OS", "color": "Blue", "size": "OS", "stock": 7}]}
ORDER = {"order_id": "ORD-10134", "status": "shipped", "created_at": "2026-10-26T14:32:00", "total": 288.49,
         "currency": "USD", "tracking_no": "YT331190068578",
         "items": [{"name": "Wireless Bluetooth Headphones", "sku": "P1001-BLK-OS", "qty": 2, "price": 131.0}]}


def problems(draft: str, *results: Any, domain: Domain = SHOP) -> list[str]:
    return [c.problem for c in contradictions(draft, list(results), domain.claims, domain.currency)]


@pytest.mark.parametrize("draft", [
    "Yes, the Fitness Tracker Band is in stock in black.",       # stock per variant
    "The Fitness Tracker Band is available in Black.",
    "健身手环 Black 有货。",
    "The Fitness Tracker Band is out of stock.",                 # the product as a whole is in stock
    "The Fitness Tracker Band costs 75.00 USD.",                 # price
])
def test_false_product_facts_are_found(draft: str) -> None:
    assert problems(draft, TRACKER), draft


@pytest.mark.parametrize("draft", [
    "Your order ORD-10134 has been delivered.",                  # status
    "Order id: ORD-10134; Status: delivered; Total: 288.49 USD.",
    "Order id: ORD-10134; Tracking no: YT000000000000.",         # an id in a Label: value pair
    "Your order ORD-10134 was placed on 2026-10-20.",            # a date
    "Your order ORD-10134 came to 199.00 USD.",                  # an amount
    "订单编号：ORD-10134；创建时间：2026-10-29T14:32:00。",        # the date of a date-time, under a Chinese label
    # an item's price told as the whole (real model, shop test 0005: "it cost them $90.49 altogether")
    "You bought the Wireless Bluetooth Headphones and it cost you $131.00 altogether.",
    "这单一共 131.00 美元。",
])
def test_false_order_facts_are_found(draft: str) -> None:
    assert problems(draft, ORDER), draft


@pytest.mark.parametrize("draft,result", [
    ("The Fitness Tracker Band is in stock in Blue, 71.99 USD.", TRACKER),
    ("The Fitness Tracker Band is out of stock in black.", TRACKER),
    ("Order id: ORD-10134; Status: shipped; Created at: 2026-10-26T14:32:00; Total: 288.49 USD.", ORDER),
    ("ORD-10134 is on the way; a return can be requested once it is delivered.", ORDER),  # a conditional
    ("ORD-10134 is not delivered yet.", ORDER),
    ("Wireless Bluetooth Headphones · 131.0 · P1001-BLK-OS · 2", ORDER),
    ("订单编号：ORD-10134；创建时间：2026-10-26T14:32:00。", ORDER),
    ("The headphones were 131.00 USD each; 288.49 USD altogether.", ORDER),
])
def test_true_facts_pass(draft: str, result: dict) -> None:
    assert problems(draft, result) == []


def test_a_contradicted_clause_is_replaced_by_what_the_result_says() -> None:
    draft = "Yes, the Fitness Tracker Band is in stock in black. It costs 71.99 USD."
    fixed = corrected(draft, contradictions(draft, [TRACKER], SHOP.claims, SHOP.currency))
    assert "out of stock" in fixed and "in stock in black" not in fixed and "71.99" in fixed
    assert problems(fixed, TRACKER) == []


def test_the_check_is_domain_general() -> None:
    """A domain the core has never seen: its records and its one claim word are all the check needs."""
    garden = Domain(name="garden", claims=(Claim(("blooming", "in flower"), ("phase",), equals("bloom")),))
    plants = {"plants": [{"plant": "Moonflower", "phase": "seed"}, {"plant": "Sunrose", "phase": "bloom"}]}
    assert problems("The Moonflower is blooming.", plants, domain=garden)
    assert problems("The Sunrose is blooming.", plants, domain=garden) == []
    assert problems("Plant: Moonflower; Phase: bloom", plants, domain=garden)  # Label: value, no claim needed


def test_a_clause_about_another_identifier_is_not_judged_by_the_one_record_looked_up() -> None:
    """A reply quoting a tool error about an earlier request ("REQ0001210 ... approved") is about that
    request, not about the ticket the message created; the same words about the ticket itself still fail."""
    helpdesk = load_domain("helpdesk")
    ticket = {"ticket_id": "INC0012361", "status": "new", "short_description": "Confluence access"}
    quoted = "There is already an access request REQ0001210 for confluence with status approved."
    assert problems(quoted, ticket, domain=helpdesk) == []
    assert problems("Your ticket INC0012361 is approved.", ticket, domain=helpdesk)
    assert problems("Your ticket is approved.", ticket, domain=helpdesk)  # the only record, named by nothing


class Scripted(GenericFakeChatModel):
    """Answers in the order given; offered tools are ignored (the script already names its calls)."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> Scripted:
        return self


def _call(name: str, **args: Any) -> AIMessage:
    return AIMessage("", tool_calls=[{"name": name, "args": args, "id": f"call-{name}", "type": "tool_call"}])


def test_the_harness_corrects_a_reply_that_contradicts_the_tool_result(tmp_path: Path) -> None:
    """The issue's case: black stock is 0 and the model says "in stock"; it says so again when asked to
    answer once more, and the customer reads what the tool returned."""
    wrong = "Yes, the Fitness Tracker Band is in stock in black."
    model = Scripted(messages=iter([_call("search_products", query="Fitness Tracker Band"),
                                    _call("get_product", product_id="P1022"), AIMessage(wrong), AIMessage(wrong)]))
    with Harness(model, design=patient_design(), settings=Settings(data_dir=tmp_path)) as h:
        r = h.send("t", "Is the Fitness Tracker Band available in black?", "U001")
    assert [c["name"] for c in r.tool_calls if c["status"] == "ok"] == ["search_products", "get_product"]
    assert "in stock in black" not in r.reply
    assert "out of stock" in r.reply.lower() and "black" in r.reply.lower()
    assert not r.waiting_for_human


def test_false_facts_metric_counts_contradicted_replies() -> None:
    scenario = Scenario(id="ff", turns=[Turn(user="Where is ORD-10134?"), Turn(user="And now?")])
    call = {"name": "get_order_status", "args": {"order_id": "ORD-10134"}, "status": "ok", "result": ORDER}
    record = {"cell": "x|ff|0", "design": "x", "domain": "shop", "seed": 0, "turns": [
        {"index": 0, "reply": "ORD-10134 has been delivered.", "tool_calls": [call], "path": ["action"]},
        {"index": 1, "reply": "ORD-10134 has shipped.", "tool_calls": [call], "path": ["action"]}]}
    counts = cell_metrics(record, scenario)["counts"]
    assert counts["false_facts"] == [1, 2]
    assert counts["internal_text"] == [0, 2]


def test_a_result_pasted_back_as_json_is_internal_text_not_a_false_fact() -> None:
    """The local model answers a result by pasting it (lab/reports/calibration): the reply states exactly what
    the result says, so it counts once, as internal text, even where clause splitting would pair a list
    row's Chinese status with another row."""
    import json

    listing = {"tickets": [  # as `naive` pasted it on the helpdesk split (lab/reports/compare-split-helpdesk)
        {"ticket_id": "INC0012346", "status": "in_progress", "status_zh": "处理中", "priority": "high",
         "short_description": "Laptop screen flickers after waking from sleep", "updated_at": "2026-10-24T19:05:00"},
        {"ticket_id": "INC0012308", "status": "closed", "status_zh": "已关闭", "priority": "high",
         "short_description": "Need Visio installed for process diagrams", "updated_at": "2026-09-28T18:28:00"}]}
    scenario = Scenario(id="pd", turns=[Turn(user="我的工单有哪些？")])
    call = {"name": "list_my_tickets", "args": {}, "status": "ok", "result": listing}
    record = {"cell": "x|pd|0", "design": "x", "domain": "helpdesk", "seed": 0, "turns": [
        {"index": 0, "reply": json.dumps(listing, ensure_ascii=False, separators=(",", ":")), "tool_calls": [call], "path": ["action"]}]}
    counts = cell_metrics(record, scenario)["counts"]
    assert counts["false_facts"] == [0, 1] and counts["internal_text"] == [1, 1]
