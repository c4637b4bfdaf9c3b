"""Nothing runs that was not offered: a call to a tool outside this step's offer (intent, role, phase) is
refused where tools run, with an error the model can read, a span event and an audit row.

The offer is what the model was shown; an injected text (a product description, a tool result) can name
any tool, and a model may call it anyway.
"""

from __future__ import annotations

import json
import sqlite3

from langchain_core.messages import AIMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from lg_harness.graphs.app import Harness, Settings
from lg_harness.obs.tracing import capture_spans
from tests.support import ConfirmingUser, ScriptedModel, patient_design, u001_order


def test_an_injected_call_to_an_unoffered_destructive_tool_changes_nothing(tmp_path):
    model = ScriptedModel()
    with Harness(model, design=patient_design(), settings=Settings(data_dir=tmp_path)) as h:
        shop = h.resources["shop"]
        order = u001_order("pending", shop=shop)
        # The product question offers product tools only; the "description" told the model to cancel.
        model.calls = [{"name": "cancel_order", "args": {"order_id": order}, "id": "call_1", "type": "tool_call"}]
        with capture_spans() as exporter:
            result = h.send("inj", "Do you have bluetooth headphones?", "U001")
        assert result.intent == "product"
        [call] = result.tool_calls
        assert (call["name"], call["status"], call["error_type"]) == ("cancel_order", "error", "not_offered")
        assert call["error"] is not None
        assert "not available for this request" in call["error"] and "search_products" in call["error"]
        assert shop.query_one("SELECT status FROM orders WHERE id = ?", (order,))["status"] == "pending"
        assert shop.query_one("SELECT COUNT(*) FROM idempotency")[0] == 0
        events = [e for s in exporter.get_finished_spans() for e in s.events if e.name == "tool.refused"]
        assert events and events[0].attributes["tool"] == "cancel_order"
    with sqlite3.connect(tmp_path / "audit.sqlite") as conn:
        rows = conn.execute("SELECT name, status, output FROM calls WHERE kind = 'tool'").fetchall()
    # Audited as the harness's own block (the tool never ran), so it is not counted as a tool failure.
    assert [(r[0], r[1]) for r in rows] == [("cancel_order", "blocked")]
    assert json.loads(rows[0][2])["error"]["type"] == "not_offered"


def test_the_model_reads_the_refusal_and_the_offered_tools_still_run(tmp_path):
    model = ScriptedModel()
    with Harness(model, design=patient_design(), settings=Settings(data_dir=tmp_path)) as h:
        order = u001_order("shipped", shop=h.resources["shop"])
        model.calls = [
            {"name": "request_return", "args": {"order_id": order, "reason": "x"}, "id": "a", "type": "tool_call"},
            {"name": "get_order_status", "args": {"order_id": order}, "id": "b", "type": "tool_call"},
        ]
        result = h.send("mix", f"Where is my order {order}?", "U001")
        assert [(c["name"], c["status"]) for c in result.tool_calls] == [("request_return", "error"),
                                                                           ("get_order_status", "ok")]
        assert h.resources["shop"].query_one("SELECT COUNT(*) FROM returns WHERE order_id = ?", (order,))[0] == 0
        # the refusal is the harness's (never the customer's business); the answer step reads the lookup
        assert order in str(model.seen[-1][-1].content) and "not available" not in result.reply


def test_a_design_that_offers_every_tool_still_runs_them(tmp_path):
    """With ``tool_offer: all`` every tool is offered on every call, so none is refused."""
    model = ScriptedModel()
    with Harness(model, design=patient_design("harness-no:tool_offer"),
                 settings=Settings(data_dir=tmp_path)) as h:
        order = u001_order("shipped", shop=h.resources["shop"])
        model.calls = [{"name": "get_order_status", "args": {"order_id": order}, "id": "a", "type": "tool_call"}]
        result = h.send("all", f"Do you have bluetooth headphones like the ones in {order}?", "U001")
        assert [(c["name"], c["status"]) for c in result.tool_calls] == [("get_order_status", "ok")]


def test_a_change_route_does_not_offer_again_a_lookup_an_earlier_message_made_of_the_same_record():
    """"Where is ORD-10144?" then "I want to return it": the status lookup of that order is in the conversation,
    so the return's step offers the return alone (offered, a small model spends a round reading it again). A
    lookup of another order, or one that failed, does not count."""
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

    from lg_harness.core.state import HarnessState
    from lg_harness.domains.shop import DOMAIN
    from lg_harness.nodes.goal_stop import looked_up_before

    tools = DOMAIN.registry().offer(["get_order_status", "request_return"], "customer")

    def state(order: str, status: str = "success") -> HarnessState:
        return {"slots": {"order_id": "ORD-10144"}, "messages": [
            HumanMessage(f"Where is my order {order}?"),
            AIMessage("", tool_calls=[{"name": "get_order_status", "args": {"order_id": order}, "id": "c1"}]),
            ToolMessage("{}", tool_call_id="c1", status=status), AIMessage("It was delivered."),
            HumanMessage("I want to return it")]}

    assert looked_up_before(state("ORD-10144"), tools) == {"get_order_status"}
    assert looked_up_before(state("ORD-10185"), tools) == set()
    assert looked_up_before(state("ORD-10144", "error"), tools) == set()


class ReReadingModel(ScriptedModel):
    """A small model's habit: whenever ``tool`` is offered it calls it again, with ``args``; otherwise it
    answers from the results. Records the tools bound per call."""

    tool: str = ""
    args: dict = {}
    bound: list[list[str]] = []

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        names = [t["function"]["name"] if "function" in t else t.get("name") for t in kwargs.get("tools") or []]
        self.bound.append(names)
        self.calls = [{"name": self.tool, "args": self.args, "id": f"c{len(self.bound)}", "type": "tool_call"}]
        if self.tool in names:
            return ChatResult(generations=[ChatGeneration(message=AIMessage("", tool_calls=list(self.calls)))])
        return super()._generate(messages, stop, run_manager, tools=None)


def test_a_lookup_that_worked_is_not_offered_again_in_the_same_message(tmp_path):
    """"How many open tickets do I have?": the list worked, so the next step does not offer the list again
    (a small model offered it repeats the identical call, 12 of 13 times on the real model); the answer comes
    from the one result."""
    model = ReReadingModel(tool="list_my_tickets", args={}, bound=[])
    with Harness(model, domain="helpdesk", design=patient_design(),
                 settings=Settings(data_dir=tmp_path)) as h:
        r = h.send("count", "How many open tickets do I have?", "E1001")
    assert [(c["name"], c["status"]) for c in r.values["tool_log"]] == [("list_my_tickets", "ok")]
    assert "list_my_tickets" in model.bound[0]
    assert all("list_my_tickets" not in names for names in model.bound[1:]), model.bound
    assert r.reply and not r.waiting_for_human


def test_a_lookup_stays_offered_while_the_message_names_a_record_it_has_not_read(tmp_path):
    """"Compare P1001 and P1002": one product read, the other still to read, so the product lookup stays."""
    model = ReReadingModel(tool="get_product", args={"product_id": "P1001"}, bound=[])
    with Harness(model, design=patient_design(), settings=Settings(data_dir=tmp_path)) as h:
        h.send("two", "What is the difference between P1001 and P1002?", "U001")
    assert len(model.bound) >= 2 and "get_product" in model.bound[1], model.bound


class FirstChoiceModel(ScriptedModel):
    """Calls the first of ``prefers`` it is offered (a small model's favourite tool), with ``args`` per tool."""

    prefers: list[str] = []
    args: dict = {}
    bound: list[list[str]] = []

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        names = [t["function"]["name"] if "function" in t else t.get("name") for t in kwargs.get("tools") or []]
        self.bound.append(names)
        tool = next((t for t in self.prefers if t in names), None)
        if tool is None:
            return super()._generate(messages, stop, run_manager, tools=None)
        call = {"name": tool, "args": dict(self.args[tool]), "id": f"c{len(self.bound)}", "type": "tool_call"}
        return ChatResult(generations=[ChatGeneration(message=AIMessage("", tool_calls=[call]))])


def test_a_tool_refused_with_a_reason_naming_another_tool_waits_for_it(tmp_path):
    """"Identity must be verified first: ... call verify_identity": the refused tool is not offered again until
    another call works, so a model that prefers the refused tool calls the one the refusal named, then the
    change goes through (the 0.5B model, shown every tool, called ``request_access`` twice and never
    ``verify_identity``)."""
    model = FirstChoiceModel(prefers=["request_access", "verify_identity"], bound=[], args={
        "request_access": {"system": "vpn", "reason": "a new project"},
        "verify_identity": {"employee_id": "E1001", "pin": "258176"}})
    with Harness(model, domain="helpdesk", design=patient_design(),
                 settings=Settings(data_dir=tmp_path)) as h:
        user = ConfirmingUser(h)
        r = user.send("acc", "I need VPN access for a new project. I'm E1001, PIN 258176.", "E1001")
        # refused, verified, put to the customer, and run on their yes
        names = [(c["name"], c["error_type"]) for c in r.tool_calls]
        assert names == [("request_access", "business"), ("verify_identity", None),
                         ("request_access", "needs_confirmation"), ("request_access", None)], names
        assert "request_access" not in model.bound[1] and "verify_identity" in model.bound[1], model.bound
        rows = h.resources["helpdesk"].query("SELECT system, status FROM access_requests WHERE employee_id = 'E1001' AND system = 'vpn'")
        assert [tuple(r) for r in rows] == [("vpn", "pending")]
        assert r.reply
