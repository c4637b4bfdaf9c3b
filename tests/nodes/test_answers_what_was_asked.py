"""An answer says what the customer asked, and never our own note on why a draft went back.

Read on the real model (lab/reports/real-model-test): "ORD-10154 那两台显示器到哪了？" answered "防摔手机壳。" (true,
the order's item, but not where it is); "这单一共多少钱" answered "纯棉T恤。"; a regenerated answer that copied
the self-check's note ("The change is already done (its status is now cancelled); tell you it is done.").
"""

from __future__ import annotations

import json
import re
from typing import Any, cast

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig

import lg_harness.nodes  # noqa: F401 - registers the built-in variants
from lg_harness.core.design import load_design
from lg_harness.core.state import HarnessState, ToolCallRecord
from lg_harness.domains.shop import DOMAIN as SHOP
from lg_harness.llm.sim import SimChatModel
from lg_harness.nodes.base import BUILTIN_VARIANTS, NodeDeps
from lg_harness.nodes.customer_text import without_echoes
from lg_harness.nodes.render_answer import Voice, list_sentence
from lg_harness.tools.executor import ToolExecutor

CONFIG: RunnableConfig = {"configurable": {"thread_id": "t"}}


@pytest.fixture
def check(shop):
    registry = SHOP.registry()
    deps = NodeDeps(model=SimChatModel(faults="clean"), registry=registry, executor=ToolExecutor(registry),
                    domain=SHOP, design=load_design("harness"), resources={"shop": shop})
    return BUILTIN_VARIANTS.of("self_check")["grounded"](deps)


@pytest.fixture
def order(shop) -> dict:
    from lg_harness.domains.shop.backend import get_order_status
    from lg_harness.tools.context import ToolContext

    row = shop.query_one("SELECT id FROM orders WHERE user_id = 'U001' AND status = 'shipped' ORDER BY id")
    return get_order_status(ToolContext(user_id="U001", extras={"shop": shop}), row["id"])


def ran(name: str, args: dict[str, Any], result: dict[str, Any], user: str, reply: str, lang: str, **extra) -> HarnessState:
    """The state the self-check meets: the customer's message, the call and its result, the draft."""
    call = {"name": name, "args": args, "id": "call_1", "type": "tool_call"}
    messages = [HumanMessage(user, id="h1"), AIMessage("", tool_calls=[call], id="a1"),
                ToolMessage(json.dumps(result), tool_call_id="call_1", name=name, id="t1")]
    log: list[ToolCallRecord] = [{"name": name, "args": dict(args), "status": "ok", "result_digest": json.dumps(result)}]
    state: HarnessState = {"messages": messages, "reply": reply, "tool_log": log, "fact_card": {"language": lang}}
    return cast(HarnessState, {**state, **extra})


def looked_up(order: dict, question: str, reply: str, lang: str, **extra) -> HarnessState:
    return ran("get_order_status", {"order_id": order["order_id"]}, order, question, reply, lang, **extra)


def item_name(order: dict, lang: str) -> str:
    item = order["items"][0]
    return str(item.get("name_zh") if lang == "zh" and item.get("name_zh") else item["name"])


@pytest.mark.parametrize(("lang", "question"), [("zh", "{id} 那个东西到哪了？"), ("en", "where is {id} now?")])
def test_a_true_answer_that_leaves_out_what_was_asked_goes_back_then_is_written_from_the_result(
        check, order, lang, question):
    asked = question.format(id=order["order_id"])
    draft = item_name(order, lang) + ("。" if lang == "zh" else ".")
    first = check(looked_up(order, asked, draft, lang), CONFIG)
    assert first["check"]["ok"] is False
    assert "does not say what was asked" in first["check"]["problems"][0]
    last = check(looked_up(order, asked, draft, lang, turn_stats={"regenerations": 99}), CONFIG)
    assert last["check"]["ok"] is True
    assert ("已发货" if lang == "zh" else "shipped") in last["reply"]


def test_an_answer_that_says_what_was_asked_passes_as_it_is(check, order):
    asked = f"{order['order_id']} 到哪了？"
    draft = f"订单 {order['order_id']} 已发货，运单号 {order['tracking_no']}。"
    update = check(looked_up(order, asked, draft, "zh"), CONFIG)
    assert update["check"] == {"ok": True, "problems": []}


def test_a_question_of_no_field_asks_nothing_of_the_draft(check, order):
    """"帮我看看 ORD-1" names no field: any true words about the order answer it."""
    update = check(looked_up(order, f"帮我看看 {order['order_id']}", f"{item_name(order, 'zh')}，已发货。", "zh"),
                   CONFIG)
    assert update["check"]["ok"] is True


def test_our_note_told_back_is_cut_and_the_answer_written_from_the_result(check, shop):
    from lg_harness.domains.shop.backend import cancel_order
    from lg_harness.tools.context import ToolContext

    row = shop.query_one("SELECT id FROM orders WHERE user_id = 'U001' AND status = 'pending' ORDER BY id")
    result = cancel_order(ToolContext(user_id="U001", extras={"shop": shop}), row["id"], "bought twice")
    note = "the change is already done (its status is now cancelled); tell the customer it is done"
    draft = f"You will cancel order {row['id']}. The change is already done (its status is now cancelled); tell you it is done."
    state = ran("cancel_order", {"order_id": row["id"]}, result, "yes", draft, "en",
                check={"ok": False, "problems": [note]}, turn_stats={"regenerations": 1})
    update = check(state, CONFIG)
    assert update["check"]["ok"] is True
    assert "tell you" not in update["reply"] and "already done" not in update["reply"]
    assert "cancelled" in update["reply"] and row["id"] in update["reply"]


def test_without_echoes_keeps_what_shares_no_run_of_words_with_the_notes():
    note = "it does not say what was asked (status); say it"
    assert without_echoes("Your order shipped yesterday.", [note]) == "Your order shipped yesterday."
    assert without_echoes("It does not say what was asked. Your order shipped.", [note]) == "Your order shipped."
    assert without_echoes("It does not say what was asked (status); say it", [note]) is None
    assert without_echoes("Anything at all.", []) == "Anything at all."


@pytest.mark.parametrize("n", [4, 5])
def test_a_short_list_is_named_in_full(n):
    items = [{"code": f"C{i}X", "description": f"offer {i}"} for i in range(n)]
    for lang in ("en", "zh"):
        text = list_sentence("coupons", items, Voice(lang), "which coupons can I claim?")
        assert all(f"C{i}X" in text for i in range(n)), text
        assert "more" not in text and "另有" not in text


def test_a_long_list_names_a_few_and_counts_the_rest():
    items = [{"code": f"C{i}X"} for i in range(9)]
    text = list_sentence("coupons", items, Voice("en"), "")
    assert "C0X" in text and "C8X" not in text and "and 6 more" in text


def test_which_colour_is_asked_of_a_products_variants(check, shop):
    """Real model, shop test 0040: "which colour does that come in?" answered "Your response was: Cherry Red
    Switch."; the colours are in the product's variants."""
    from lg_harness.domains.shop.backend import get_product
    from lg_harness.tools.context import ToolContext

    product = shop.query_one("SELECT product_id FROM variants GROUP BY product_id HAVING COUNT(DISTINCT color) > 1 "
                             "ORDER BY product_id")["product_id"]
    result = get_product(ToolContext(user_id="U001", extras={"shop": shop}), product)
    colours = {v["color"] for v in result["variants"]}
    asked = f"which colour does {result['name']} come in?"
    first = check(ran("get_product", {"product_id": product}, result, asked, f"It is the {result['name']}.", "en"),
                  CONFIG)
    assert first["check"]["ok"] is False
    last = check(ran("get_product", {"product_id": product}, result, asked, f"It is the {result['name']}.", "en",
                     turn_stats={"regenerations": 99}), CONFIG)
    assert colours <= set(re.findall(r"[A-Z][a-z]+", last["reply"])), last["reply"]


def test_a_count_is_a_number_not_money_and_must_be_told(check, shop):
    """Real model: "我账户里被取消的订单一共有几个？" answered "状态是已取消，总额数量是1.00 美元。" (a count as dollars)
    and before that "状态是已取消。" (no count at all)."""
    from lg_harness.domains.shop.tools import list_my_orders
    from lg_harness.tools.context import ToolContext

    assert Voice("zh", currency="USD").value("total_count", 3) == "3"
    assert Voice("zh", currency="USD").label("total_count") == "总数"
    result = list_my_orders(ToolContext(user_id="U001", extras={"shop": shop}), status="cancelled")
    n = result["total_count"]
    asked = "我账户里被取消的订单一共有几个？"
    first = check(ran("list_my_orders", {"status": "cancelled"}, result, asked, "状态是已取消。", "zh"), CONFIG)
    assert first["check"]["ok"] is False
    told = check(ran("list_my_orders", {"status": "cancelled"}, result, asked, f"您一共有 {n} 个已取消的订单。", "zh"),
                 CONFIG)
    assert told["check"]["ok"] is True
    last = check(ran("list_my_orders", {"status": "cancelled"}, result, asked, "状态是已取消。", "zh",
                     turn_stats={"regenerations": 99}), CONFIG)
    assert re.search(rf"(?<!\d){n}(?!\d)", last["reply"]) and "美元" not in last["reply"], last["reply"]


@pytest.fixture
def helpdesk_check(tmp_path):
    from lg_harness.core.domain import load_domain

    helpdesk = load_domain("helpdesk")
    registry = helpdesk.registry()
    deps = NodeDeps(model=SimChatModel(faults="clean"), registry=registry, executor=ToolExecutor(registry),
                    domain=helpdesk, design=load_design("harness"), resources={})
    return BUILTIN_VARIANTS.of("self_check")["grounded"](deps)


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_after_a_change_the_answer_gives_its_new_number_and_asks_no_yes_again(helpdesk_check, lang):
    """Real model, helpdesk test 0014: after the ticket was opened the answer was the confirmation question
    again ("您已确认：我将新建工单：…。回复“是”继续，回复“不”则不做任何更改。"), without the new ticket's number the
    customer had asked for; the customer's yes then met "no change is waiting"."""
    result = {"ticket_id": "INC0012361", "status": "new", "priority": "medium",
              "short_description": "Headset has no sound on the laptop"}
    if lang == "zh":
        asked, draft = "是的，请办理。", "您已确认：我将新建工单：“耳机没声音”。回复“是”继续，回复“不”则不做任何更改。"
    else:
        asked, draft = "yes, go ahead", ('You confirmed: I will open a ticket: "Headset has no sound". Reply yes to '
                                         'go ahead, or no to leave everything as it is.')
    first = helpdesk_check(ran("create_ticket", {"short_description": "x"}, result, asked, draft, lang), CONFIG)
    assert first["check"]["ok"] is False  # sent back (why depends on what is left once the question goes)
    last = helpdesk_check(ran("create_ticket", {"short_description": "x"}, result, asked, draft, lang,
                              turn_stats={"regenerations": 99}), CONFIG)
    assert "INC0012361" in last["reply"], last["reply"]
    assert "回复“是”" not in last["reply"] and "Reply yes" not in last["reply"]


def test_when_an_order_was_placed_is_its_creation_date(check, order):
    """Real model, shop held-out 0024: "when did I even place that one?" answered with the order's status."""
    asked = f"actually just leave it as is. when did I even place {order['order_id']}?"
    first = check(looked_up(order, asked, f"The order status for order {order['order_id']} is shipped.", "en"), CONFIG)
    assert first["check"]["ok"] is False
    day = int(order["created_at"][8:10])
    told = check(looked_up(order, asked, f"You placed it on {order['created_at'][:10]}.", "en"), CONFIG)
    assert told["check"]["ok"] is True
    last = check(looked_up(order, asked, "It is shipped.", "en", turn_stats={"regenerations": 99}), CONFIG)
    assert str(day) in last["reply"] and order["created_at"][:4] in last["reply"], last["reply"]


def test_a_question_the_record_answers_shows_no_list_of_its_items(shop):
    """Real model, shop held-out 0042: "有没有空气炸锅卖？多少钱一个" was answered with every variant's stock
    and "112.49 USD 美元"; the product's own price and stock answer it."""
    from lg_harness.domains.shop.backend import get_product
    from lg_harness.nodes.money import with_currency
    from lg_harness.nodes.render_answer import render_answer
    from lg_harness.tools.context import ToolContext

    product = shop.query_one("SELECT product_id FROM variants GROUP BY product_id HAVING COUNT(*) > 2 "
                             "ORDER BY product_id")["product_id"]
    result = get_product(ToolContext(user_id="U001", extras={"shop": shop}), product)
    records = [{"name": "get_product", "status": "ok", "result": json.dumps(result)}]
    text = render_answer(records, SHOP.registry(), SHOP, f"有没有{result['name_zh']}卖？多少钱一个", "zh") or ""
    assert f"{result['price']:.2f}" in text and "variants" not in text and result["variants"][0]["sku"] not in text
    assert with_currency(f"价格是{result['price']:.2f} 美元", [result], "USD") == f"价格是{result['price']:.2f} 美元"


def test_a_complaint_is_filed_without_the_tools_own_instructions():
    """Real model, shop held-out 0022: the complaint text held the tool's description ("Do not use this tool
    for cancellations or returns (use those tools), or when the user asks for a human now (use
    transfer_to_human).") and "the customer", and the confirmation quoted it."""
    from lg_harness.nodes.rewrites import CleanFreeText

    registry = SHOP.registry()
    spec = registry.get("file_complaint")
    assert spec is not None and spec.changes_state
    copied = next(s for s in re.split(r"(?<=\.)\s+", spec.description) if len(s.split()) >= 6)
    state: HarnessState = {"messages": [HumanMessage("我要投诉你们的客服，电话打了三次都没人接", id="h1")]}
    args = {"text": f"The customer is unhappy with the phone support. {copied}"}
    out = CleanFreeText(registry)("file_complaint", args, {}, state)
    assert copied not in out["text"] and "customer" not in out["text"] and "phone support" in out["text"]
    only_copied = CleanFreeText(registry)("file_complaint", {"text": copied}, {}, state)
    assert only_copied["text"] == "我要投诉你们的客服，电话打了三次都没人接"
    # a clean text is left as it is
    assert CleanFreeText(registry)("file_complaint", {"text": "Nobody answered the phone three times."}, {}, state) \
        == {"text": "Nobody answered the phone three times."}


@pytest.mark.parametrize(("said", "kept"), [
    ("我到现在一共提过几个工单啊？", False),  # held-out helpdesk 0006: status "new" made up, "总数是0"
    ("我有几个工单已经解决了？", True),
    ("how many of my tickets are resolved?", True),
    ("how many tickets have I filed?", False),
])
def test_a_filter_no_one_asked_for_is_dropped(said, kept):
    from lg_harness.core.domain import load_domain
    from lg_harness.nodes.rewrites import UnsaidFilter

    helpdesk = load_domain("helpdesk")
    state: HarnessState = {"messages": [HumanMessage(said, id="h1")]}
    status = "resolved" if kept or "提过" not in said else "new"
    out = UnsaidFilter(helpdesk.registry(), helpdesk)("list_my_tickets", {"status": status}, {}, state)
    assert ("status" in out) is kept


@pytest.mark.parametrize(("lang", "question", "told"), [
    ("zh", "{name}多少钱？是哪个牌子的？", "价格是{price}美元。"),
    ("en", "how much is the {name}? and which brand makes it?", "It costs {price} USD."),
])
def test_each_question_of_a_message_needs_its_answer(check, shop, lang, question, told):
    """Real model, shop test 0039: "你们家扫地机器人多少钱？是哪个牌子的？" answered with the price alone; one asked
    field told does not answer the other question."""
    from lg_harness.domains.shop.backend import get_product
    from lg_harness.tools.context import ToolContext

    product = shop.query_one("SELECT id FROM products WHERE brand IS NOT NULL AND brand != '' ORDER BY id")["id"]
    result = get_product(ToolContext(user_id="U001", extras={"shop": shop}), product)
    asked = question.format(name=result.get("name_zh") if lang == "zh" else result["name"])
    draft = told.format(price=f"{result['price']:.2f}")
    first = check(ran("get_product", {"product_id": product}, result, asked, draft, lang), CONFIG)
    assert first["check"]["ok"] is False and "brand" in first["check"]["problems"][0].lower() or "品牌" in \
        first["check"]["problems"][0], first["check"]
    both = check(ran("get_product", {"product_id": product}, result, asked, f"{draft} {result['brand']}", lang), CONFIG)
    assert both["check"]["ok"] is True, both["check"]
    last = check(ran("get_product", {"product_id": product}, result, asked, draft, lang,
                     turn_stats={"regenerations": 99}), CONFIG)
    assert result["brand"] in last["reply"] and f"{result['price']:.2f}" in last["reply"], last["reply"]


def test_a_command_to_the_system_is_not_an_answer(helpdesk_check):
    """Real model, helpdesk test 0003 and 0015: "Mark the ticket as resolved." and "Mark the device ID as
    LT-04205." after a lookup of the customer's tickets and devices: a status word in it is no answer."""
    result = {"tickets": [{"ticket_id": "INC0012352", "status": "in_progress", "priority": "high",
                           "short_description": "Printer on floor 3 jams"}], "total_count": 1}
    asked = "What's the status and priority of my ticket about the floor 3 printer?"
    first = helpdesk_check(ran("list_my_tickets", {}, result, asked, "Mark the ticket as resolved.", "en"), CONFIG)
    assert first["check"]["ok"] is False
    last = helpdesk_check(ran("list_my_tickets", {}, result, asked, "Mark the ticket as resolved.", "en",
                              turn_stats={"regenerations": 99}), CONFIG)
    assert "INC0012352" in last["reply"] and "in progress" in last["reply"], last["reply"]


@pytest.mark.parametrize(("lang", "draft"), [
    ("en", "You need to cancel the order with the order ID {id}, as it is now pending. It is cancelled now."),
    ("zh", "您需要取消订单 {id}，状态是已取消。"),
])
def test_a_change_made_is_not_told_as_the_customers_to_do(check, shop, lang, draft):
    """Real model, shop test 0011: after the customer's yes the cancellation went through and the answer was
    "You need to cancel the order with the order ID ORD-10162, …": told back as theirs to do."""
    from lg_harness.domains.shop.backend import cancel_order
    from lg_harness.tools.context import ToolContext

    row = shop.query_one("SELECT id FROM orders WHERE user_id = 'U001' AND status = 'pending' ORDER BY id")
    result = cancel_order(ToolContext(user_id="U001", extras={"shop": shop}), row["id"], "bought twice")
    text = draft.format(id=row["id"])
    first = check(ran("cancel_order", {"order_id": row["id"]}, result, "yes", text, lang), CONFIG)
    assert first["check"]["ok"] is False and "already done" in first["check"]["problems"][0], first["check"]
    told = check(ran("cancel_order", {"order_id": row["id"]}, result, "yes",
                     f"Order {row['id']} is cancelled." if lang == "en" else f"订单 {row['id']} 已取消。", lang), CONFIG)
    assert told["check"]["ok"] is True, told["check"]


@pytest.mark.parametrize(("text", "kept"), [
    ("how many orders have I placed with you guys in total? cancelled ones included", {}),
    ("我一共下过几单？包括已取消的", {}),
    ("how many of my orders were cancelled?", {"status": "cancelled"}),
    ("我被取消的订单有几个", {"status": "cancelled"}),
])
def test_a_status_counted_in_is_no_filter(text, kept):
    """Real model, shop test 0007: "how many orders … in total? cancelled ones included" listed the cancelled
    orders only and answered 2."""
    from lg_harness.nodes.rewrites import UnsaidFilter

    f = UnsaidFilter(SHOP.registry(), SHOP)
    assert f("list_my_orders", {"status": "cancelled"}, {}, {"messages": [HumanMessage(text)]}) == kept


@pytest.mark.parametrize(("lang", "draft"), [
    ("zh", "您需要查看订单编号为{id}，状态为已发货。"),
    ("en", "You need to find the order with the ID {id}, which is shipped."),
    ("en", "Your message was found in one order: {id} (shipped)."),
])
def test_a_lookup_told_back_with_its_facts_inside_is_written_again(check, order, lang, draft):
    """Real model, helpdesk heldout: "您需要查看工单编号为INC0012327，状态为新建…" and "You need to find the latest ticket
    with the ID INC0012346, which is in progress…": the request told back, the facts inside it."""
    text = draft.format(id=order["order_id"])
    asked = f"{order['order_id']} 到哪了？" if lang == "zh" else f"where is {order['order_id']}?"
    first = check(looked_up(order, asked, text, lang), CONFIG)
    assert first["check"]["ok"] is False
    last = check(looked_up(order, asked, text, lang, turn_stats={"regenerations": 99}), CONFIG)
    assert not last["reply"].startswith(("您需要", "You need", "Your message")), last["reply"]
    assert order["order_id"] in last["reply"]
