"""Routing: the routers (lg_harness/core/routing/routers.py) over the guards' predicates, every branch firing and not, and
pure; the hand-built agent's rules (lg_harness/core/routing/route.py, LIGHTWEIGHT_RULES) route every case the same."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.graph import END

from lg_harness.core.design import Knobs
from lg_harness.core.routing.route import LIGHTWEIGHT_RULES, NODES, next_node
from lg_harness.core.routing.rules import compile_rules
from lg_harness.domains.shop import DOMAIN as SHOP

KNOBS = Knobs(max_rounds=6, no_progress_rounds=2, validation_repairs=1, max_regenerations=1,
              unknown_intent_handoff=2, turn_quota_input_tokens=1000, turn_quota_tool_calls=10,
              session_quota_input_tokens=5000, session_quota_tool_calls=20, message_deadline_s=30)


def after_intent(state: dict, knobs: Knobs) -> str:
    return next_node("intent", state, knobs)


def after_collect(state: dict, knobs: Knobs) -> str:
    return next_node("collect", state, knobs)


def after_action(state: dict, knobs: Knobs) -> str:
    return next_node("action", state, knobs)


def after_self_check(state: dict, knobs: Knobs) -> str:
    return next_node("self_check", state, knobs)


def rec(name: str = "get_order_status", args: dict | None = None, *, status: str = "ok",
        error_type: str | None = None, rnd: int = 1, empty: bool = False) -> dict[str, Any]:
    args = {"order_id": "ORD-10001"} if args is None else args
    return {"id": f"call_{name}_{rnd}", "name": name, "args": args,
            "signature": name + ":" + json.dumps(args, sort_keys=True, separators=(",", ":")),
            "status": status, "error_type": error_type, "round": rnd, "empty": empty}


def call_msg(rnd: int = 1) -> list:
    call = {"name": "get_order_status", "args": {"order_id": "ORD-10001"}, "id": f"c{rnd}", "type": "tool_call"}
    return [AIMessage("", tool_calls=[call]), ToolMessage('{"order_id":"ORD-10001"}', tool_call_id=f"c{rnd}")]


def action_state(rounds: int = 1, log: list | None = None, **extra: Any) -> dict[str, Any]:
    """Right after an action round: the last message is a tool result, so the loop may continue."""
    return {"messages": [HumanMessage("where is ORD-10001"), *call_msg(rounds)], "intent": "order_status",
            "turn_stats": {"rounds": rounds, "input_tokens": 100, "tool_calls": len(log or [])},
            "tool_log": log if log is not None else [rec(rnd=rounds)], **extra}


# ------------------------------------------------------------------------------------------- the cases

INTENT_CASES = [
    ("human asks for a person", {"intent": "human"}, "handoff"),
    ("unknown, streak at the limit", {"intent": "unknown", "unknown_streak": KNOBS.unknown_intent_handoff}, "handoff"),
    ("unknown, streak below the limit", {"intent": "unknown", "unknown_streak": KNOBS.unknown_intent_handoff - 1},
     "reply"),
    ("greeting", {"intent": "greeting"}, "reply"),
    ("thanks", {"intent": "thanks", "unknown_streak": 0}, "reply"),
    ("task intent", {"intent": "order_status"}, "collect"),
    ("task intent, no streak key", {"intent": "return_order"}, "collect"),
    # a label the domain does not declare has nothing to run: it is answered, not routed to a task
    ("label the domain does not declare", {"intent": "warranty_claim"}, "reply"),
]

COLLECT_CASES = [
    ("slot missing", {"intent": "order_status", "missing_slots": ["order_id"]}, END),
    ("nothing missing", {"intent": "order_status", "missing_slots": []}, "action"),
    ("no missing_slots key", {"intent": "my_orders"}, "action"),
]

ACTION_CASES = [
    ("model unreachable: busy reply already out", action_state(check={"ok": True, "retryable": True}), END),
    ("model answered without tool calls",
     {**action_state(), "messages": [HumanMessage("hi"), *call_msg(), AIMessage("Order ORD-10001 is shipped.")]},
     "reply"),
    ("tool results in, nothing wrong: another round", action_state(), "action"),
    ("same invalid call twice",
     action_state(2, [rec(status="error", error_type="validation", rnd=1),
                      rec(status="error", error_type="validation", rnd=2)]), "handoff"),
    ("more invalid calls than repairs allow -> back to collect",
     action_state(1, [rec(args={"order_id": "10001"}, status="error", error_type="validation", rnd=1),
                      rec(args={"order_id": "ORD-1"}, status="error", error_type="validation", rnd=1)]), "collect"),
    ("one invalid call (a repair is still allowed)",
     action_state(1, [rec(args={"order_id": "10001"}, status="error", error_type="validation", rnd=1)]), "action"),
    ("invented argument this round", action_state(1, [rec(status="error", error_type="invented_argument")]),
     "collect"),
    ("invented argument in an earlier round only",
     action_state(2, [rec(status="error", error_type="invented_argument", rnd=1), rec(rnd=2)]), "action"),
    ("identical call blocked this round",
     action_state(2, [rec(rnd=1), rec(status="error", error_type="duplicate_call", rnd=2)]), "reply"),
    ("identical call blocked in an earlier round only",
     action_state(2, [rec(status="error", error_type="duplicate_call", rnd=1), rec(args={"order_id": "ORD-10002"},
                                                                               rnd=2)]), "action"),
    ("max rounds reached", action_state(KNOBS.max_rounds, [rec(rnd=r) for r in range(1, KNOBS.max_rounds + 1)]),
     "reply"),
    ("one round below max rounds",
     action_state(KNOBS.max_rounds - 1, [rec(args={"order_id": f"ORD-1000{r}"}, rnd=r)
                                         for r in range(1, KNOBS.max_rounds)]), "action"),
    ("no progress: the last N rounds brought nothing",
     action_state(KNOBS.no_progress_rounds, [rec(rnd=1, empty=True), rec(rnd=2, status="error",
                                                                          error_type="not_found")]), "reply"),
    ("progress in the window: one round had a new result",
     action_state(KNOBS.no_progress_rounds, [rec(rnd=1, empty=True), rec(rnd=2)]), "action"),
    ("per-message input token quota",
     {**action_state(), "turn_stats": {"rounds": 1, "input_tokens": KNOBS.turn_quota_input_tokens}}, "reply"),
    ("per-message input tokens just below quota",
     {**action_state(), "turn_stats": {"rounds": 1, "input_tokens": KNOBS.turn_quota_input_tokens - 1}}, "action"),
    ("per-message tool call quota",
     {**action_state(), "turn_stats": {"rounds": 1, "tool_calls": KNOBS.turn_quota_tool_calls}}, "reply"),
    ("per-thread token quota (earlier messages + this one)",
     {**action_state(), "totals": {"input_tokens": KNOBS.session_quota_input_tokens - 100}}, "reply"),
    ("per-thread tool call quota",
     {**action_state(), "totals": {"tool_calls": KNOBS.session_quota_tool_calls}}, "reply"),
    ("wall time per message",
     {**action_state(), "turn_stats": {"rounds": 1, "elapsed_s": KNOBS.message_deadline_s}}, "reply"),
]

SELF_CHECK_CASES = [
    ("check failed, regeneration left",
     {"intent": "order_status", "check": {"ok": False, "problems": ["x"]}, "turn_stats": {"regenerations": 0}},
     "reply"),
    ("check failed, regenerations used up",
     {"intent": "order_status", "check": {"ok": False, "problems": ["x"]},
      "turn_stats": {"regenerations": KNOBS.max_regenerations}}, "handoff"),
    ("check passed", {"intent": "order_status", "check": {"ok": True, "problems": []}}, END),
    ("no verdict at all", {"intent": "order_status"}, END),
    ("check passed on a complaint: a human follows up", {"intent": "complaint", "check": {"ok": True}}, "handoff"),
    ("check passed but the thread is over quota",
     {"intent": "order_status", "check": {"ok": True}, "totals": {"tool_calls": KNOBS.session_quota_tool_calls}},
     "handoff"),
]

def with_kind(state: dict[str, Any]) -> dict[str, Any]:
    """The state as the intent node leaves it: the domain's kind of the intent beside its name."""
    return {**state, "intent_kind": SHOP.kind(state["intent"])} if "intent" in state else state


INTENT_CASES = [(label, with_kind(state), expected) for label, state, expected in INTENT_CASES]
COLLECT_CASES = [(label, with_kind(state), expected) for label, state, expected in COLLECT_CASES]
ACTION_CASES = [(label, with_kind(state), expected) for label, state, expected in ACTION_CASES]
SELF_CHECK_CASES = [(label, with_kind(state), expected) for label, state, expected in SELF_CHECK_CASES]

ALL_CASES = ([(after_intent, *c) for c in INTENT_CASES] + [(after_collect, *c) for c in COLLECT_CASES]
             + [(after_action, *c) for c in ACTION_CASES]
             + [(after_self_check, *c) for c in SELF_CHECK_CASES])


@pytest.mark.parametrize(("guard", "label", "state", "expected"), ALL_CASES,
                         ids=[f"{g.__name__}: {label}" for g, label, _, _ in ALL_CASES])
def test_guard_branch(guard, label, state, expected):
    assert guard(state, KNOBS) == expected


@pytest.mark.parametrize(("guard", "label", "state", "expected"), ALL_CASES,
                         ids=[f"{g.__name__}: {label}" for g, label, _, _ in ALL_CASES])
def test_guard_is_pure(guard, label, state, expected):
    before, knobs_before = copy.deepcopy(state), KNOBS.model_dump()
    first = guard(state, KNOBS)
    second = guard(copy.deepcopy(state), KNOBS)
    assert first == second == guard(state, KNOBS)
    assert state == before, "a guard must not change the state it reads"
    assert KNOBS.model_dump() == knobs_before, "nor the knobs"


BY_GUARD = {after_intent: "intent", after_collect: "collect", after_action: "action", after_self_check: "self_check"}


@pytest.mark.parametrize(("guard", "label", "state", "expected"), ALL_CASES,
                         ids=[f"{g.__name__}: {label}" for g, label, _, _ in ALL_CASES])
def test_the_hand_built_agents_rules_route_as_the_routers_do(guard, label, state, expected):
    """custom-lightweight states its routes in the rule language; they are the routers' routes."""
    rules = compile_rules(LIGHTWEIGHT_RULES, NODES)
    assert next_node(BY_GUARD[guard], state, KNOBS, own=rules) == expected


def test_the_graph_reads_its_edges_from_the_routers_literals():
    """A router's return annotation is its edges: each Literal member is an edge of the built graph, and
    the graph has no other conditional edge out of that node (execute and handoff aside)."""
    from lg_harness.core.design import load_design
    from lg_harness.core.routing import routers
    from lg_harness.graphs.builder import build_graph
    from lg_harness.llm.sim import SimChatModel

    graph = build_graph(load_design("harness"), SimChatModel()).get_graph()
    for source, router in routers.ROUTERS.items():
        out = {e.target for e in graph.edges if e.source == source}
        expected = set(routers.targets(router))  # no memory given, so a self-check's END is the graph's END
        extra = {"execute"} if source == "action" else set()
        assert out == expected | extra, (source, out)


def test_guard_targets_exist_in_the_graph():
    """Every value a guard can return is an edge of the built graph (no dangling route)."""
    from lg_harness.core.design import load_design
    from lg_harness.graphs.builder import build_graph
    from lg_harness.llm.sim import SimChatModel

    graph = build_graph(load_design("harness"), SimChatModel()).get_graph()
    edges = {(e.source, e.target) for e in graph.edges}
    by_guard = {"after_intent": "intent", "after_collect": "collect", "after_action": "action",
                "after_self_check": "self_check"}
    for guard, _label, _state, expected in ALL_CASES:
        assert (by_guard[guard.__name__], expected) in edges, (guard.__name__, expected)


def test_knobs_decide_the_limits():
    """The same state routes differently under different knobs: the limits are not hard-coded."""
    state = action_state(3, [rec(args={"order_id": f"ORD-1000{r}"}, rnd=r) for r in (1, 2, 3)])
    assert after_action(state, Knobs(max_rounds=3, no_progress_rounds=3)) == "reply"
    assert after_action(state, Knobs(max_rounds=4, no_progress_rounds=3)) == "action"
    unknown = with_kind({"intent": "unknown", "unknown_streak": 2})
    assert after_intent(unknown, Knobs(unknown_intent_handoff=2)) == "handoff"
    assert after_intent(unknown, Knobs(unknown_intent_handoff=3)) == "reply"
    failed = {"check": {"ok": False, "problems": ["x"]}, "turn_stats": {"regenerations": 1}}
    assert after_self_check(failed, Knobs(max_regenerations=1)) == "handoff"
    assert after_self_check(failed, Knobs(max_regenerations=2)) == "reply"


@pytest.mark.parametrize(("old", "new"), [
    ("unknown_streak >= unknown_intent_handoff", "unknown_streak > unknown_intent_handoff"),
    ('intent -> reply when intent_kind == "conversational"', 'intent -> reply when intent_kind == "task"'),
    ('intent_kind == "escalate"', 'intent_kind == "to-human"'),
    ("missing_slots > 0", "missing_slots > 1"),
    ("invalid_calls > validation_repairs", "invalid_calls >= validation_repairs"),
    ("action -> END when busy", "action -> reply when busy"),
    ("action -> handoff when repeated_invalid_call and handoff_allowed\n", ""),
    ("stop_reason != null", 'stop_reason == "max rounds"'),
    ("regenerations < max_regenerations", "regenerations <= max_regenerations"),
    (" or quota_exceeded != null", ""),
])
def test_the_cases_catch_a_wrong_rule(old, new):
    """Every rule is pinned by a case above: changing one makes at least one expected route come out wrong."""
    assert old in LIGHTWEIGHT_RULES
    mutant = compile_rules(LIGHTWEIGHT_RULES.replace(old, new), NODES)
    wrong = [label for guard, label, state, expected in ALL_CASES
             if next_node(BY_GUARD[guard], state, KNOBS, own=mutant) != expected]
    assert wrong
