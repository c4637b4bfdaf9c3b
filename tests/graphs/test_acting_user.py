"""Tools act for the run's authenticated caller, never for a user written into the state.

On the LangGraph server a customer could once write another customer's id and a confirmed change into a
thread's state and run it (issue 40). The server's auth hook now refuses such writes
(``tests/service/test_langgraph_server.py``); here the graph's own check is tested alone, as the server would run it:
a run whose ``configurable.langgraph_auth_user_id`` is not the state's user runs no tool at all.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from lg_harness.core.design import load_design
from lg_harness.core.domain import load_domain
from lg_harness.core.state import NotTheOwner, acting_user
from lg_harness.graphs.builder import build_graph
from lg_harness.llm.factory import make_model
from lg_harness.service import server


@pytest.fixture()
def shop_graph(tmp_path: Path):
    pack = load_domain("shop")
    resources = server.backends_for(pack, tmp_path)
    graph = build_graph(load_design("harness"), make_model("sim:clean", domain=pack), InMemorySaver(),
                        domain=pack, resources=resources)
    try:
        yield graph, resources["shop"]
    finally:
        server.reset()


def pending_order(shop, user: str) -> str:
    return shop.query_one("SELECT id FROM orders WHERE user_id = ? AND status = 'pending' ORDER BY id", (user,))["id"]


def planted_cancel(order: str) -> dict:
    """What the attacker wrote: the victim as the thread's user, and a confirmed cancel of the victim's order."""
    call = {"name": "cancel_order", "args": {"order_id": order}, "id": "planted", "type": "tool_call"}
    return {"user": {"id": "U001", "role": "customer"},
            "planned_calls": {"round": 1, "calls": [call], "emitted": [{"order_id": order}], "confirmed": True}}


def test_a_planted_change_runs_for_nobody_when_the_caller_is_not_the_threads_user(shop_graph):
    graph, shop = shop_graph
    order = pending_order(shop, "U001")
    config = {"configurable": {"thread_id": "planted"}}
    graph.update_state(config, planted_cancel(order), as_node="action")
    as_b = {"configurable": {"thread_id": "planted", "langgraph_auth_user_id": "U002"}}
    with pytest.raises(NotTheOwner, match="authenticated caller"):
        graph.invoke(None, as_b)
    assert shop.query_one("SELECT status FROM orders WHERE id = ?", (order,))["status"] == "pending"


def test_the_callers_own_message_on_their_own_thread_runs(shop_graph):
    graph, _ = shop_graph
    config = {"configurable": {"thread_id": "mine", "langgraph_auth_user_id": "U001"}}
    out = graph.invoke({"messages": [("user", "Where is my order ORD-10134?")],
                        "user": {"id": "U001", "role": "customer"}}, config)
    assert [c["name"] for c in out["tool_log"]] == ["get_order_status"]


def test_a_message_under_someone_elses_id_is_refused_before_anything_runs(shop_graph):
    graph, _ = shop_graph
    config = {"configurable": {"thread_id": "forged", "langgraph_auth_user_id": "U002"}}
    with pytest.raises(NotTheOwner):
        graph.invoke({"messages": [("user", "Show me all my orders")], "user": {"id": "U001", "role": "customer"}},
                     config)
    assert not graph.get_state(config).values.get("tool_log")


def test_the_desk_acts_on_a_customers_thread_for_that_customer():
    state = {"user": {"id": "U001", "role": "customer"}}
    assert acting_user(state, {"configurable": {"langgraph_auth_user_id": "@agent"}})["id"] == "U001"
    assert acting_user(state, {})["id"] == "U001"  # no authenticated caller: a program of the operator's own
    with pytest.raises(NotTheOwner):
        acting_user({"user": {}}, {"configurable": {"langgraph_auth_user_id": "U002"}})
