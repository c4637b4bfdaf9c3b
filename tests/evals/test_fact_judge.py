"""The judge of asked facts (issue 45): each example the issue found, judged by value, and how the old
substring expectations judged the same reply (the old judge is ``evals.metrics.judge_turn``)."""

from __future__ import annotations

import pytest

from lg_harness.core.domain import load_domain
from lg_harness_lab.evals.fact_judge import claims_change, dates, judge_goal, numbers, states
from lg_harness_lab.evals.metrics import judge_turn

SHOP, HELPDESK = load_domain("shop"), load_domain("helpdesk")


def old_judge(reply: str, **expect) -> bool:
    return judge_turn({"reply": reply, "tool_calls": [], "path": ["reply"]}, expect, domain=SHOP)["passed"]


def record(*replies: str, world: list | None = None) -> dict:
    return {"turns": [{"reply": r, "world": world or []} for r in replies]}


def test_a_list_showing_one_of_six_orders_with_a_false_total_fails() -> None:
    orders = ["ORD-10134", "ORD-10135", "ORD-10136", "ORD-10137", "ORD-10138", "ORD-10139"]
    reply = "You have these orders: ORD-10134 (shipped). Total: 1 order, 99.00 USD."
    told = [{"kind": "id", "value": o} for o in orders] + [{"kind": "count", "value": 6},
                                                          {"kind": "amount", "value": 612.40}]
    verdict = judge_goal(record(reply), told, "en", SHOP)
    assert not verdict["passed"] and sum(f["told"] for f in verdict["facts"]) == 1
    assert old_judge(reply, reply_contains_any=orders), "the old judge passed it"


def test_a_reset_claimed_but_never_made_fails_even_where_nothing_may_change() -> None:
    reply = "Done! Your password has been reset; you can sign in now."
    tools = [t.name for t in HELPDESK.registry().specs() if t.changes_state]
    verdict = judge_goal(record(reply, world=[]), [], "en", HELPDESK, tools)
    assert not verdict["passed"] and verdict["claimed_changes"] == [reply]
    made = judge_goal(record(reply, world=[{"table": "credentials", "op": "update"}]), [], "en", HELPDESK, tools)
    assert made["passed"], "a reset the backend shows may be announced"
    assert old_judge(reply, no_changes=True), "the old judge passed it: no change happened"


def test_an_english_reply_with_a_chinese_status_word_has_not_told_an_english_customer() -> None:
    reply = "Your order ORD-10171 is 已发货."
    fact = {"kind": "status", "value": "shipped", "record": "ORD-10171"}
    assert not states(fact, reply, "en", SHOP)
    assert states(fact, "您的订单 ORD-10171 已发货。", "zh", SHOP)
    assert states(fact, "Your order ORD-10171 has shipped.", "en", SHOP)
    assert old_judge(reply, reply_contains_any=["shipped", "已发货"]), "the old judge passed it"


def test_a_ticket_status_without_the_id_the_customer_typed_is_an_answer() -> None:
    reply = "Your ticket is in progress: an engineer is looking at it."
    assert judge_goal(record(reply), [{"kind": "status", "value": "in_progress", "record": "INC0012346"}], "en",
                      HELPDESK)["passed"]
    assert not old_judge(reply, reply_contains=["INC0012346"]), "the old judge failed it"


def test_coupons_with_the_right_discounts_but_no_codes_answer_a_question_about_discounts() -> None:
    reply = "There are five coupons: 10% off, 15% off, 20% off, 5% off and 30% off (minimum spend 500.00 USD)."
    told = [{"kind": "amount", "value": v} for v in (10, 15, 20, 5, 30)]
    assert judge_goal(record(reply), told, "en", SHOP)["passed"]
    assert not old_judge(reply, reply_contains=["SAVE10", "HOLIDAY30"]), "the old judge failed it"


def test_a_status_stated_wrong_about_the_record_is_a_false_fact() -> None:
    fact = {"kind": "status", "value": "shipped", "record": "ORD-10171"}
    verdict = judge_goal(record("Order ORD-10171 was delivered yesterday. ORD-10171 has shipped."), [fact], "en",
                         SHOP)
    assert not verdict["passed"] and verdict["false"] == ["order ord-10171 was delivered yesterday"]
    assert judge_goal(record("Order ORD-10171 has shipped; ORD-10150 was delivered."), [fact], "en", SHOP)["passed"]


@pytest.mark.parametrize(("fact", "reply", "lang"), [
    ({"kind": "id", "value": "ORD-10171"}, "your order ord 10171 is on its way", "en"),
    ({"kind": "amount", "value": 1299.0}, "The total is 1,299.00 USD.", "en"),
    ({"kind": "amount", "value": 78.98}, "退款金额为78.98美元。", "zh"),
    ({"kind": "count", "value": 3}, "You have three open tickets.", "en"),
    ({"kind": "count", "value": 3}, "您有三张优惠券。", "zh"),
    ({"kind": "date", "value": "2026-11-03"}, "It should arrive on November 3.", "en"),
    ({"kind": "date", "value": "2026-11-03"}, "预计2026年11月3日送达。", "zh"),
    ({"kind": "date", "value": "2026-10-25"}, "INC0012349 是 2026 年 10 月 25 日 提的。", "zh"),  # spaced, as Qwen writes it
    ({"kind": "status", "value": "shipped"}, "您购买的不粘锅煎锅已经发货。", "zh"),  # 已经 is 已
    ({"kind": "name", "value": "JD Logistics"}, "The carrier is jd logistics.", "en"),
])
def test_values_are_found_however_a_reply_writes_them(fact, reply, lang) -> None:
    assert states(fact, reply, lang, SHOP)


@pytest.mark.parametrize(("fact", "reply"), [
    ({"kind": "id", "value": "ORD-1017"}, "order ORD-10171"),
    ({"kind": "amount", "value": 78.98}, "refund 78.99 USD"),
    ({"kind": "date", "value": "2026-11-03"}, "on November 13"),
    ({"kind": "status", "value": "shipped", "record": "ORD-1"}, "it has not shipped yet"),
])
def test_near_misses_are_not_the_value(fact, reply) -> None:
    assert not states(fact, reply, "en", SHOP)


def test_numbers_and_dates_are_parsed() -> None:
    assert 1299.0 in numbers("1,299.00") and 20.0 in numbers("twenty")
    assert (None, 11, 3) in dates("3rd of November") and (2026, 11, 3) in dates("2026-11-03")


def test_a_past_tense_claim_of_a_change_is_read_from_the_tools_own_names() -> None:
    assert claims_change("Your order has been cancelled.", ["cancel"])
    assert claims_change("I've filed your complaint.", ["file"])
    assert not claims_change("Shall I cancel the order?", ["cancel"])
    assert not claims_change("You can reset it yourself from the portal.", ["reset"])


def test_a_records_own_date_is_not_a_claimed_change() -> None:
    # A real-model reply about an access request (helpdesk held-out 0035) was failed for "claiming" a creation.
    assert not claims_change("The request was created at 1 November 2026, 07:00.", ["create"])
    assert not claims_change("It was updated on 24 October.", ["update"])
    assert claims_change("Your ticket was created.", ["create"])
    assert claims_change("Your ticket was created, it is INC0012361.", ["create"])
    assert claims_change("The ticket has been created at last.", ["create"])


def test_a_date_right_after_chinese_characters_is_read() -> None:
    # The sim's and the real model's Chinese replies put ISO dates straight after a character: "保修到是2026-11-25".
    assert (2026, 11, 25) in dates("Asset LT-04219：Warranty until是2026-11-25，Under warranty：是。")
    assert (2026, 11, 25) in dates("保修到2026-11-25")
    assert (None, 11, 3) in dates("到期日是nov 3") and not dates("12026-11-25")
