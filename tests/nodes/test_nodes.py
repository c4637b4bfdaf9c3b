"""Each node alone: a hand-built state and a config in, the partial update out.

Nodes get the sim model, the shop registry, a real executor, the default design and the seeded shop in
tmp_path, exactly what ``build_graph`` gives them.
"""

# A node's update is a StateUpdate (every key optional): these tests read the keys they expect a node to write,
# and a missing one fails the test with KeyError, which is the check. Unknown keys and value types still are.
# pyright: reportTypedDictNotRequiredAccess=false

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any, Protocol, cast, runtime_checkable

import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    BaseMessage,
    HumanMessage,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import RunnableConfig
from langgraph.graph.message import add_messages
from pydantic import Field

import lg_harness.nodes  # noqa: F401 - registers the built-in variants
from lg_harness.core.design import load_design
from lg_harness.core.routing.route import next_node
from lg_harness.core.state import HarnessState, StateUpdate, UserInfo
from lg_harness.domains.shop import DOMAIN as SHOP
from lg_harness.domains.shop import nlu
from lg_harness.domains.shop.backend import claim_coupon
from lg_harness.llm.sim import SimChatModel
from lg_harness.nodes.base import BUILTIN_VARIANTS, NodeDeps
from lg_harness.nodes.phrases import say
from lg_harness.tools.executor import ToolExecutor

CONFIG: RunnableConfig = {"configurable": {"thread_id": "t"}}
U001: UserInfo = {"id": "U001", "role": "customer"}
ORDER_ID_RE = re.compile(r"ORD-\d{5}")


@pytest.fixture
def make_deps(shop):
    def build(model=None, registry=None, **knobs: Any) -> NodeDeps:
        design = load_design("harness")
        knobs = {"model_timeout_s": 120.0, **knobs}  # wall-clock deadline; a loaded CI box must not trip it
        for key, value in knobs.items():
            assert hasattr(design.knobs, key), key
            setattr(design.knobs, key, value)
        registry = registry or SHOP.registry()
        return NodeDeps(model=model or SimChatModel(faults="clean"), registry=registry,
                        executor=ToolExecutor(registry), domain=SHOP,
                        design=design, resources={"shop": shop})

    return build


def node(role: str, variant: str, deps: NodeDeps):
    return BUILTIN_VARIANTS.of(role)[variant](deps)


@runtime_checkable
class TwoStepAction(Protocol):
    """An action node that decides its calls when called and runs them in ``execute`` (``tool_loop``)."""

    def __call__(self, state: HarnessState, config: RunnableConfig) -> StateUpdate: ...

    def execute(self, state: HarnessState, config: RunnableConfig) -> StateUpdate: ...


def acted(deps: NodeDeps):
    """The action step as the graph runs it: ``action`` decides the calls, ``execute`` runs what it decided;
    one update, merged the way the graph's reducers merge them."""
    action = node("action", "tool_loop", deps)
    assert isinstance(action, TwoStepAction)

    def run(state: HarnessState, config: RunnableConfig) -> StateUpdate:
        decided = action(state, config)
        if not decided.get("planned_calls"):
            return decided
        ran = action.execute(apply(state, decided), config)
        return {**decided, **ran, "messages": [*decided["messages"], *ran["messages"]]}

    return run


def human(text: str, mid: str = "h1") -> HumanMessage:
    return HumanMessage(text, id=mid)


def tool_call(name: str, args: dict, cid: str = "call_1") -> dict:
    return {"name": name, "args": args, "id": cid, "type": "tool_call"}


def apply(state: HarnessState, update: Mapping[str, Any]) -> HarnessState:
    """Merge a node's update into the state the way the graph's reducers do (messages by id, rest replaced)."""
    merged: dict[str, Any] = dict(state)
    for key, value in update.items():
        if key == "messages":
            merged["messages"] = merged_messages(state.get("messages") or [], value)
        elif key in ("fact_card", "slots") and isinstance(value, dict):
            base = {} if value.get("__reset__") else dict(state.get(key) or {})
            base.update({k: v for k, v in value.items() if k != "__reset__"})
            merged[key] = {k: v for k, v in base.items() if v is not None}
        else:
            merged[key] = value
    return cast(HarnessState, merged)  # a node's update names state keys only, so the merge is a state


def merged_messages(left: Sequence[BaseMessage], right: Sequence[BaseMessage]) -> list[BaseMessage]:
    """``add_messages`` on message objects, whose result is messages (langgraph annotates it as any
    message-like value)."""
    merged = add_messages(list(left), list(right))
    assert isinstance(merged, list)
    messages = [m for m in merged if isinstance(m, BaseMessage)]
    assert len(messages) == len(merged), "add_messages returns message objects"
    return messages


def result_data(message: ToolMessage) -> dict:
    """The JSON payload of a tool result, whether sent bare or inside a labelled wrapper."""
    text = message.content
    assert isinstance(text, str), "a tool result is text"
    return json.loads(text[text.index("{"): text.rindex("}") + 1])


def order_status(shop, order_id: str) -> str:
    return shop.query_one("SELECT status FROM orders WHERE id = ?", (order_id,))["status"]


# ================================================================================================ intent

INTENT_VARIANTS = ("classifier", "llm", "hybrid")


def intent_cases(orders: dict[str, list[str]]) -> list[tuple[str, str, bool]]:
    """(message, intent, decided by a keyword phrase): a single keyword ("cancel", "退货") is only a candidate."""
    shipped = orders["shipped"][0]
    return [
        (f"Where is my order {shipped}?", "order_status", True),
        ("I want to cancel my order", "cancel_order", False),
        ("Do you have bluetooth headphones?", "product", True),
        ("I'd like to talk to a human please", "human", False),
        (f"我的订单 {shipped} 到哪了？", "order_status", True),
        ("我想退货", "return_order", False),
        ("有没有蓝牙耳机？", "product", False),
        ("有什么优惠券可以领？", "coupons", False),
        ("你好", "greeting", True),
    ]


@pytest.mark.parametrize("variant", INTENT_VARIANTS)
def test_intent_variants_recognise_english_and_chinese(make_deps, u001_orders, variant):
    intent_node = node("intent", variant, make_deps())
    for text, expected, phrase in intent_cases(u001_orders):
        state: HarnessState = {"messages": [human(text)], "user": U001}
        update = intent_node(state, CONFIG)
        assert update["intent"] == expected, (variant, text)
        assert update["turn"] == 1
        assert update["tool_log"] == [] and update["reply"] == ""
        calls = update["turn_stats"]["model_calls"]
        if variant == "llm":
            assert calls == 1, "the llm variant asks the model"
        elif variant == "hybrid":
            assert calls == (0 if phrase else 1), "hybrid asks the model where a single keyword only suggests"
        else:
            assert calls == 0, "the classifier never asks the model"


def test_hybrid_asks_the_model_only_when_the_classifier_is_unsure(make_deps, recording_sim_cls):
    model = recording_sim_cls()
    deps = make_deps(model=model)
    text = "今天天气怎么样"  # no shop keyword; Chinese, so no embedding guess either
    classifier = node("intent", "classifier", deps)({"messages": [human(text)], "user": U001}, CONFIG)
    assert classifier["intent"] == "unknown" and classifier["turn_stats"]["model_calls"] == 0
    hybrid = node("intent", "hybrid", deps)({"messages": [human(text)], "user": U001}, CONFIG)
    assert hybrid["turn_stats"]["model_calls"] == 1
    assert len(model.calls) == 1 and model.calls[0]["tools"] == []
    assert hybrid["intent"] in SHOP.intent_names()


@pytest.mark.parametrize("variant", INTENT_VARIANTS)
def test_intent_continues_the_open_task_when_the_message_only_answers_the_slot(make_deps, u001_orders, variant):
    order = u001_orders["delivered"][0]
    asked = say("ask_order_id", "en", SHOP)
    state: HarnessState = {
        "messages": [human("I want to return my order", "h1"), AIMessage(asked, id="a1"), human(order, "h2")],
        "user": U001, "turn": 1, "intent": "return_order", "missing_slots": ["order_id"], "slots": {},
        "fact_card": {"language": "en"}}
    update = node("intent", variant, make_deps())(state, CONFIG)
    assert update["intent"] == "return_order"
    assert "__reset__" not in (update.get("slots") or {}), "the open task's slots are kept"
    assert update["fact_card"]["last_order_id"] == order


@pytest.mark.parametrize("variant", INTENT_VARIANTS)
def test_intent_continues_the_open_task_for_a_chinese_slot_answer(make_deps, u001_orders, variant):
    """After '请提供一下订单号', the natural answer '订单号是 ORD-…' gives the order number: the return goes on.

    ('订单' is also an order-status keyword, but the message only answers the question that was asked.)
    """
    order = u001_orders["delivered"][0]
    state: HarnessState = {
        "messages": [human("我想退货", "h1"), AIMessage(say("ask_order_id", "zh", SHOP), id="a1"),
                     human(f"订单号是 {order}", "h2")],
        "user": U001, "turn": 1, "intent": "return_order", "missing_slots": ["order_id"], "slots": {},
        "fact_card": {"language": "zh"}}
    update = node("intent", variant, make_deps())(state, CONFIG)
    assert update["intent"] == "return_order"


def test_intent_switches_task_when_the_user_asks_something_new(make_deps):
    state: HarnessState = {
        "messages": [human("I want to return my order", "h1"), AIMessage("Which order?", id="a1"),
                     human("Actually, do you have bluetooth headphones?", "h2")],
        "user": U001, "turn": 1, "intent": "return_order", "missing_slots": ["order_id"],
        "slots": {"query": "stale"}}
    update = node("intent", "hybrid", make_deps())(state, CONFIG)
    assert update["intent"] == "product"
    assert update["slots"].get("__reset__") is True, "a new task starts with empty slots"


def test_intent_updates_the_fact_card_with_order_ids_and_language(make_deps, u001_orders):
    known, first, second = u001_orders["pending"][0], u001_orders["shipped"][0], u001_orders["delivered"][0]
    state: HarnessState = {
        "messages": [human(f"Where are {first} and {second}?")], "user": U001,
        "fact_card": {"order_ids": [known], "language": "zh"}}
    card = node("intent", "classifier", make_deps())(state, CONFIG)["fact_card"]
    assert card["last_order_id"] == second
    assert card["order_ids"] == [known, first, second]
    assert card["language"] == "en"
    # A bare identifier says nothing about the language: the card keeps the one it had.
    bare = node("intent", "classifier", make_deps())({"messages": [human(first)], "user": U001,
                                                      "fact_card": {"language": "zh"}}, CONFIG)["fact_card"]
    assert "language" not in bare and bare["last_order_id"] == first
    zh = node("intent", "classifier", make_deps())({"messages": [human(f"{first} 到哪了")], "user": U001},
                                                   CONFIG)["fact_card"]
    assert zh["language"] == "zh"


def test_intent_trims_working_messages_to_the_window_keeping_tool_pairs(make_deps):
    call = AIMessage("", tool_calls=[tool_call("get_order_status", {"order_id": "ORD-10001"}, "c1"),
                                     tool_call("get_order_status", {"order_id": "ORD-10002"}, "c2")], id="ai-call")
    messages = [human("hello", "h1"), AIMessage("Hi!", id="a1"), human("where are my two orders", "h2"), call,
                ToolMessage("{}", tool_call_id="c1", id="t1"), ToolMessage("{}", tool_call_id="c2", id="t2"),
                AIMessage("Both are on the way.", id="a2"), human("thanks", "h3")]
    keep = 4  # the plain cut would start on tool result t1 and orphan it
    update = node("intent", "classifier", make_deps(window_messages=keep))({"messages": messages, "user": U001},
                                                                            CONFIG)
    removed = {m.id for m in update["messages"] if isinstance(m, RemoveMessage)}
    assert removed == {"h1", "a1", "h2"}
    kept = merged_messages(messages, update["messages"])
    assert [m.id for m in kept] == ["ai-call", "t1", "t2", "a2", "h3"]
    assert isinstance(kept[0], AIMessage)
    ids_called = {c["id"] for c in kept[0].tool_calls}
    assert {m.tool_call_id for m in kept if isinstance(m, ToolMessage)} == ids_called
    # Under the window nothing is removed.
    short = node("intent", "classifier", make_deps(window_messages=20))({"messages": messages, "user": U001}, CONFIG)
    assert [m for m in short.get("messages", []) if isinstance(m, RemoveMessage)] == []


# ================================================================================================ collect


@pytest.mark.parametrize(("intent", "text", "lang", "slot", "phrase"), [
    ("order_status", "Where is my order?", "en", "order_id", "ask_order_id"),
    ("order_status", "我的快递到哪了？", "zh", "order_id", "ask_order_id"),
    ("return_order", "I want to return my order", "en", "order_id", "ask_order_id"),
    ("cancel_order", "我要取消订单", "zh", "order_id", "ask_order_id"),
    ("product", "有没有？", "zh", "query", "ask_query"),
])
def test_collect_asks_exactly_for_the_missing_slot_in_the_users_language(make_deps, intent, text, lang, slot, phrase):
    state: HarnessState = {
        "messages": [human(text)], "user": U001, "intent": intent, "slots": {}, "fact_card": {}}
    update = node("collect", "slots", make_deps())(state, CONFIG)
    assert update["missing_slots"] == [slot]
    assert update["reply"] == say(phrase, lang, SHOP)
    assert nlu.language(update["reply"]) == lang
    [question] = update["messages"]
    assert isinstance(question, AIMessage) and question.content == update["reply"]
    assert question.tool_calls == [], "collect never calls a tool"
    assert "tool_log" not in update


def test_collect_fills_the_slot_from_the_fact_card(make_deps, u001_orders):
    order = u001_orders["delivered"][0]
    state: HarnessState = {
        "messages": [human("I want to return it")], "user": U001, "intent": "return_order", "slots": {},
        "fact_card": {"last_order_id": order, "language": "en"}}
    update = node("collect", "slots", make_deps())(state, CONFIG)
    assert update["slots"]["order_id"] == order
    assert update["missing_slots"] == []
    assert "messages" not in update and not update.get("reply"), "nothing to ask"


def test_collect_prefers_the_id_in_this_message_over_the_fact_card(make_deps, u001_orders):
    old, new = u001_orders["shipped"][0], u001_orders["delivered"][0]
    state: HarnessState = {
        "messages": [human(f"and {new}?")], "user": U001, "intent": "order_status", "slots": {},
        "fact_card": {"last_order_id": old}}
    update = node("collect", "slots", make_deps())(state, CONFIG)
    assert update["slots"]["order_id"] == new and update["missing_slots"] == []


def test_collect_does_not_borrow_facts_the_task_does_not_need(make_deps, u001_orders):
    state: HarnessState = {
        "messages": [human("do you have mechanical keyboards?")], "user": U001, "intent": "product",
        "slots": {}, "fact_card": {"last_order_id": u001_orders["shipped"][0]}}
    update = node("collect", "slots", make_deps())(state, CONFIG)
    assert "order_id" not in update["slots"]
    assert update["slots"]["query"] == "mechanical keyboards" and update["missing_slots"] == []


# ================================================================================================ action


def action_state(text: str, intent: str, user: UserInfo | None = None,
                 fact_card: dict[str, Any] | None = None) -> HarnessState:
    return {"messages": [human(text)], "user": user or U001, "intent": intent, "turn": 1, "slots": {},
            "fact_card": fact_card or {}, "tool_log": [],
            "turn_stats": {"rounds": 0, "model_calls": 0, "input_tokens": 0, "output_tokens": 0, "tool_calls": 0}}


@pytest.mark.parametrize(("intent", "text"), [
    ("order_status", "Where is my order?"), ("product", "do you have bluetooth headphones?"),
    ("coupons", "any coupons for me?"), ("my_orders", "show my orders"), ("complaint", "I want to complain"),
])
def test_action_offers_only_the_routed_intents_tools(make_deps, recording_sim_cls, intent, text):
    model = recording_sim_cls()
    deps = make_deps(model=model)
    acted(deps)(action_state(text, intent), CONFIG)
    offered = model.calls[0]["tools"]
    expected = [n for n in SHOP.route(intent).tools][: deps.design.knobs.max_tools_offered]
    assert offered == expected
    assert len(offered) <= deps.design.knobs.max_tools_offered


def test_action_offers_at_most_max_tools_offered(make_deps, recording_sim_cls):
    model = recording_sim_cls()
    routes = {i.name: i.route for i in SHOP.intents}
    widest = max(routes, key=lambda i: len(routes[i].tools))
    assert len(routes[widest].tools) >= 2
    acted(make_deps(model=model, max_tools_offered=1))(
        action_state("hello", widest), CONFIG)
    assert model.calls[0]["tools"] == [routes[widest].tools[0]]


def test_action_filters_tools_by_the_users_role(make_deps, recording_sim_cls):
    registry = SHOP.registry()
    registry.register(claim_coupon, roles={"vip"})
    offered = {}
    for role in ("customer", "vip"):
        model = recording_sim_cls()
        acted(make_deps(model=model, registry=registry))(
            action_state("any coupons?", "coupons", {"id": "U001", "role": role}), CONFIG)
        offered[role] = model.calls[0]["tools"]
    assert offered["customer"] == ["list_coupons"]
    assert offered["vip"] == ["list_coupons", "claim_coupon"]


def test_action_executes_the_call_and_logs_it(make_deps, shop, u001_orders):
    order = u001_orders["shipped"][0]
    update = acted(make_deps())(action_state(f"Where is {order}?", "order_status"), CONFIG)
    ai, result = update["messages"]
    assert isinstance(ai, AIMessage)
    assert [(c["name"], c["args"]) for c in ai.tool_calls] == [("get_order_status", {"order_id": order})]
    assert isinstance(result, ToolMessage) and result.tool_call_id == ai.tool_calls[0]["id"]
    data = result_data(result)
    assert data["order_id"] == order and data["status"] == order_status(shop, order)
    [record] = update["tool_log"]
    assert record["id"] == ai.tool_calls[0]["id"]
    assert (record["name"], record["args"], record["status"]) == ("get_order_status", {"order_id": order}, "ok")
    assert record["error_type"] is None and record["round"] == 1
    assert order in record["signature"] and record["signature"].startswith("get_order_status")
    stats = update["turn_stats"]
    assert (stats["rounds"], stats["model_calls"], stats["tool_calls"], stats["tool_errors"]) == (1, 1, 1, 0)
    assert stats["input_tokens"] > 0


def test_action_changing_tool_changes_the_shop(make_deps, shop, u001_orders):
    order = u001_orders["pending"][0]
    update = acted(make_deps(confirm_changes=False))(
        action_state(f"Please cancel {order}", "cancel_order"), CONFIG)
    assert [(r["name"], r["args"]["order_id"], r["status"]) for r in update["tool_log"]] == [
        ("cancel_order", order, "ok")]
    assert order_status(shop, order) == "cancelled"
    held = acted(make_deps())(action_state(f"Please cancel {u001_orders['pending'][1]}",
                                                                 "cancel_order"), CONFIG)
    assert [r["error_type"] for r in held["tool_log"]] == ["needs_confirmation"] and held["pending_change"]
    assert order_status(shop, u001_orders["pending"][1]) == "pending", "confirm_changes (on in harness) waits"


@pytest.mark.parametrize(("status", "text", "tool"), [
    ("shipped", "Where is {order}?", "get_order_status"),      # first call succeeded
    ("shipped", "I want to return {order}", "request_return"),  # first call failed (not delivered yet)
])
def test_action_blocks_an_identical_call_on_the_second_try(make_deps, shop, u001_orders, monkeypatch, status,
                                                           text, tool):
    """The same tool with the same arguments twice in one message: the second try is intercepted, whether the
    first one succeeded or failed (a failed call repeated unchanged fails the same way). Tried with the lookup
    still offered: harness itself stops offering a lookup that worked (tests/nodes/test_offered_tools.py)."""
    deps = make_deps(answer_after_goal=False)
    action = acted(deps)
    order = u001_orders[status][0]
    intent = "order_status" if tool == "get_order_status" else "return_order"
    state = action_state(text.format(order=order), intent)
    first = action(state, CONFIG)
    [record] = first["tool_log"]
    assert (record["name"], record["args"]["order_id"]) == (tool, order)

    executed = []
    real_run = deps.executor.run
    monkeypatch.setattr(deps.executor, "run", lambda call, ctx: executed.append(call) or real_run(call, ctx))
    # Same message, the model asks for exactly the same call again.
    again = action({**state, "tool_log": first["tool_log"], "turn_stats": first["turn_stats"]}, CONFIG)
    second = again["tool_log"][-1]
    assert (second["name"], second["args"]) == (record["name"], record["args"])
    assert executed == [], f"the repeated {tool} call ran again"
    assert second["status"] != "ok" and second["error_type"] == "duplicate_call"
    assert len(again["tool_log"]) == 2 and again["tool_log"][0] == record
    note = again["messages"][-1]
    assert isinstance(note, ToolMessage) and note.status == "error"


class Scripted(BaseChatModel):
    """A model that answers with the given messages in order (to put a specific tool call on the table)."""

    replies: list = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools, **kwargs):
        return self

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        return ChatResult(generations=[ChatGeneration(message=self.replies.pop(0))])


def test_action_does_not_call_a_malformed_id_the_customer_gave_invented(make_deps, shop, u001_orders):
    """'ord10134' for the customer's 'ORD-10134' is a formatting slip (repairable), not an invented id:
    the loop must not fall back to asking the customer for an order number they already gave."""
    order = u001_orders["shipped"][0]
    malformed = order.lower().replace("-", "")
    model = Scripted(replies=[AIMessage("", tool_calls=[tool_call("get_order_status", {"order_id": malformed})])])
    deps = make_deps(model=model)
    state = action_state(f"Where is my order {order}?", "order_status", fact_card={"last_order_id": order})
    update = acted(deps)(state, CONFIG)
    [record] = update["tool_log"]
    assert record["error_type"] != "invented_argument", record
    assert next_node("action", apply(state, update), deps.design.knobs) == "action", \
        "a repairable call gets its repair round instead of a question to the customer"


def test_action_flags_an_id_nobody_gave_as_invented(make_deps, shop, u001_orders):
    order = u001_orders["shipped"][0]
    other = shop.query_one("SELECT id FROM orders WHERE user_id != 'U001' ORDER BY id")["id"]
    model = Scripted(replies=[AIMessage("", tool_calls=[tool_call("get_order_status", {"order_id": other})])])
    deps = make_deps(model=model)
    state = action_state("Where is my order?", "order_status", fact_card={"last_order_id": order})
    update = acted(deps)(state, CONFIG)
    [record] = update["tool_log"]
    assert record["status"] != "ok" and record["error_type"] == "invented_argument"
    assert next_node("action", apply(state, update), deps.design.knobs) == "collect"


# ================================================================================================ reply


def looked_up(shop, order: str, text: str) -> list[AnyMessage]:
    from lg_harness.domains.shop.backend import get_order_status
    from lg_harness.tools.context import ToolContext

    data = get_order_status(ToolContext(user_id="U001", extras={"shop": shop}), order)
    return [human(text, "h1"), AIMessage("", tool_calls=[tool_call("get_order_status", {"order_id": order})], id="a1"),
            ToolMessage(json.dumps(data), tool_call_id="call_1", name="get_order_status", id="t1")]


def test_reply_passes_the_models_closing_text(make_deps, recording_sim_cls, shop, u001_orders):
    order = u001_orders["shipped"][0]
    closing = f"Order {order} is {order_status(shop, order)}."
    model = recording_sim_cls()
    state: HarnessState = {
        "messages": [*looked_up(shop, order, f"where is {order}"), AIMessage(closing, id="a2")],
        "user": U001, "intent": "order_status", "check": {}, "turn_stats": {"model_calls": 1}}
    update = node("reply", "model", make_deps(model=model))(state, CONFIG)
    assert update["reply"] == closing
    assert model.calls == [], "no second model call for an answer that is already there"


def test_reply_regenerates_with_the_self_check_feedback(make_deps, recording_sim_cls, shop, u001_orders):
    order = u001_orders["shipped"][0]
    invented = "ORD-99999"
    assert shop.query_one("SELECT 1 FROM orders WHERE id = ?", (invented,)) is None
    problem = f"'{invented}' does not come from a tool result or the customer"
    model = recording_sim_cls()
    state: HarnessState = {
        "messages": [*looked_up(shop, order, f"where is {order}"),
                     AIMessage(f"Order {invented} is shipped.", id="bad")],
        "user": U001, "intent": "order_status", "reply": f"Order {invented} is shipped.",
        "check": {"ok": False, "problems": [problem]}, "turn_stats": {"model_calls": 1, "regenerations": 0}}
    update = node("reply", "model", make_deps(model=model))(state, CONFIG)
    [call] = model.calls
    seen = call["messages"]
    assert any(isinstance(m, SystemMessage) and problem in m.content for m in seen), "the feedback reaches the model"
    assert all(invented not in str(m.content) or isinstance(m, SystemMessage) for m in seen), \
        "the rejected answer is not fed back as the assistant's own words"
    assert [m.id for m in update["messages"] if isinstance(m, RemoveMessage)] == ["bad"]
    assert order in update["reply"] and invented not in update["reply"]
    assert update["turn_stats"]["regenerations"] == 1


def test_reply_greets_in_the_users_language_without_the_model(make_deps, recording_sim_cls):
    model = recording_sim_cls()
    for lang in ("en", "zh"):
        state: HarnessState = {
            "messages": [human("你好" if lang == "zh" else "hello")], "user": U001, "intent": "greeting",
            "intent_kind": "conversational",
            "fact_card": {"language": lang}}
        update = node("reply", "model", make_deps(model=model))(state, CONFIG)
        assert update["reply"] and nlu.language(update["reply"]) == lang
    assert model.calls == []


# ================================================================================================ self_check


def test_self_check_rejects_an_invented_order_id(make_deps, shop, u001_orders):
    order = u001_orders["shipped"][0]
    invented = "ORD-99999"
    state: HarnessState = {
        "messages": looked_up(shop, order, f"where is {order}"), "fact_card": {"last_order_id": order},
        "reply": f"Order {invented} is shipped."}
    update = node("self_check", "grounded", make_deps())(state, CONFIG)
    assert update["check"]["ok"] is False
    assert any(invented in p for p in update["check"]["problems"])


def test_self_check_rejects_an_invented_amount(make_deps, shop, u001_orders):
    order = u001_orders["shipped"][0]
    state: HarnessState = {
        "messages": looked_up(shop, order, f"where is {order}"), "reply": f"Order {order} costs 12345.67."}
    update = node("self_check", "grounded", make_deps())(state, CONFIG)
    assert update["check"]["ok"] is False and any("12345.67" in p for p in update["check"]["problems"])


def test_self_check_passes_a_grounded_reply(make_deps, shop, u001_orders):
    order = u001_orders["shipped"][0]
    row = shop.query_one("SELECT status, tracking_no, total FROM orders WHERE id = ?", (order,))
    reply = f"Order {order} is {row['status']} (tracking {row['tracking_no']}); total {row['total']:.2f}."
    state: HarnessState = {"messages": looked_up(shop, order, f"where is {order}"), "reply": reply}
    update = node("self_check", "grounded", make_deps())(state, CONFIG)
    assert update["check"] == {"ok": True, "problems": []}
    assert update["phase"] == "done"
    # An id the customer stated is grounded by their own words, even without a tool result.
    other = u001_orders["delivered"][0]
    own = node("self_check", "grounded", make_deps())(
        {"messages": [human(f"I mean {other}")], "reply": f"Let me check {other}."}, CONFIG)
    assert own["check"]["ok"] is True


def test_an_answer_without_a_lookup_reaches_the_customer_in_their_language(make_deps, u001_orders):
    """A recall answered from the conversation, in English to a Chinese customer: sent back once, then said
    in Chinese by the harness with what the answer named; never an English reply to a Chinese customer."""
    order = u001_orders["pending"][0]
    state: HarnessState = {
        "messages": [human(f"帮我查{order}"), AIMessage("...", id="a1"), human("我最开始给你的订单号是多少？"),
                     AIMessage(f"The first order ID is {order}.", id="a2")],
        "reply": f"The first order ID is {order}.", "fact_card": {"language": "zh"}}
    first = node("self_check", "grounded", make_deps())(state, CONFIG)
    assert first["check"]["ok"] is False and "Chinese" in first["check"]["problems"][0]
    again: HarnessState = {**state, "turn_stats": {"regenerations": 99}}
    final = node("self_check", "grounded", make_deps())(again, CONFIG)
    assert final["check"]["ok"] is True and order in final["reply"]
    assert nlu.language(final["reply"]) == "zh" and "first" not in final["reply"]


# ================================================================================================ handoff


def handoffs_for(shop, thread: str) -> list:
    return shop.query("SELECT id, reason, status FROM handoffs WHERE thread_id = ? ORDER BY id", (thread,))


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_handoff_opens_one_ticket_per_turn_even_if_run_twice(make_deps, shop, lang):
    thread = f"t-{lang}"
    config: RunnableConfig = {"configurable": {"thread_id": thread}}
    text = "我要转人工" if lang == "zh" else "I want a human"
    state: HarnessState = {
        "messages": [human(text)], "user": U001, "intent": "human", "turn": 3,
        "fact_card": {"language": lang}}
    handoff = node("handoff", "ticket", make_deps())
    first = handoff(state, config)
    second = handoff(state, config)  # e.g. re-run after a resume
    rows = handoffs_for(shop, thread)
    assert len(rows) == 1 and rows[0]["status"] == "waiting" and rows[0]["reason"]
    ticket = f"HO-{rows[0]['id']}"
    for update in (first, second):
        assert update["handoff"] is not None and update["handoff"]["ticket"] == ticket
        assert ticket in update["reply"]
        assert nlu.language(update["reply"]) == lang
        assert update["phase"] == "handoff"
