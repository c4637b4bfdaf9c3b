"""The transition-rule DSL: parsing, evaluation, compile errors, safety, and driving a LangGraph graph."""

from __future__ import annotations

import ast
import builtins
import dataclasses
import itertools
import json
import operator
import typing
from pathlib import Path
from typing import Annotated

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from typing_extensions import TypedDict

import lg_harness.core.routing.rules as rules_module
from lg_harness.core.design import Knobs
from lg_harness.core.routing.errors import RuleRuntimeError, RuleSyntaxError
from lg_harness.core.routing.expr import And, Call, Compare, Const, Expr, FieldRef, ListOf, Not, Or
from lg_harness.core.routing.facts import KNOB_FIELDS, KNOWN_FIELDS, STATE_FIELDS, facts_from_state
from lg_harness.core.routing.route import LIGHTWEIGHT_RULES, ROUTED
from lg_harness.core.routing.route import NODES as DEFAULT_NODES
from lg_harness.core.routing.rules import RuleSet, compile_rules
from lg_harness.errors import HarnessError

NODES = set(DEFAULT_NODES)
DEFAULT = compile_rules(LIGHTWEIGHT_RULES, NODES)
ABC = frozenset({"a", "b", "c", "n", "s", "xs", "d", "d.*"})


def cond(expr: str, fields=ABC) -> Expr:
    """The condition tree of ``collect -> action when <expr>``."""
    condition = compile_rules(f"collect -> action when {expr}", NODES, fields).rules[0].condition
    assert condition is not None, "a rule with `when` has a condition"
    return condition


def holds(expr: str, fields=ABC, **facts) -> bool:
    rules = compile_rules(f"collect -> action when {expr}\ncollect -> END", NODES, fields)
    return rules.route("collect", facts) == "action"


def ref(*path: str) -> FieldRef:
    return FieldRef(path)


# ------------------------------------------------------------------------------------------ parsing


def test_rule_forms_sources_targets_and_line_numbers():
    text = """
# a comment line, then a blank one

collect -> action when missing_slots == 0   # trailing comment
collect -> END when missing_slots > 0
if user.role == "vip": reply -> handoff
if user.role == "vip": action -> reply when rounds >= 2
action -> action
"""
    rules = compile_rules(text, NODES)
    assert rules.sources == {"collect", "reply", "action"}
    assert [r.line for r in rules.rules] == [4, 5, 6, 7, 8]
    assert [(r.source, r.target) for r in rules.rules] == [
        ("collect", "action"), ("collect", "END"), ("reply", "handoff"), ("action", "reply"), ("action", "action")]
    assert rules.rules[0].condition == Compare("==", ref("missing_slots"), Const(0))
    vip = Compare("==", ref("user", "role"), Const("vip"))
    assert rules.rules[2].condition == vip
    assert rules.rules[3].condition == And((vip, Compare(">=", ref("rounds"), Const(2))))
    assert rules.rules[4].condition is None
    assert rules.targets("collect") == ["action", END]
    assert rules.targets("action") == ["reply", "action"]
    assert rules.is_total("action") and not rules.is_total("collect")


def test_if_prefix_is_the_same_as_when_and():
    a = compile_rules('if user.role == "vip" and rounds > 1: action -> reply when busy', NODES)
    b = compile_rules('action -> reply when user.role == "vip" and rounds > 1 and busy', NODES)
    assert a == b
    assert compile_rules("if busy: action -> reply", NODES) == compile_rules("action -> reply when busy", NODES)


@pytest.mark.parametrize(("expr", "tree"), [
    ("1", Const(1)),
    ("2.5", Const(2.5)),
    ("1e3", Const(1000.0)),
    ("-3", Const(-3)),
    ('"str"', Const("str")),
    ("'str'", Const("str")),
    (r'"a \"q\" \\ \n"', Const('a "q" \\ \n')),
    (r"'it\'s'", Const("it's")),
    ('"a#b"', Const("a#b")),
    ("true", Const(True)),
    ("false", Const(False)),
    ("null", Const(None)),
    ("[]", ListOf(())),
    ('[1, "x", null, [true],]', ListOf((Const(1), Const("x"), Const(None), ListOf((Const(True),))))),
    ("a", ref("a")),
    ("d.e.f", ref("d", "e", "f")),
    ("a == 1", Compare("==", ref("a"), Const(1))),
    ("a != 1", Compare("!=", ref("a"), Const(1))),
    ("a < 1", Compare("<", ref("a"), Const(1))),
    ("a <= 1", Compare("<=", ref("a"), Const(1))),
    ("a > 1", Compare(">", ref("a"), Const(1))),
    ("a>=-1", Compare(">=", ref("a"), Const(-1))),
    ('s in ["x", "y"]', Compare("in", ref("s"), ListOf((Const("x"), Const("y"))))),
    ("s not in xs", Compare("not in", ref("s"), ref("xs"))),
    ("not a", Not(ref("a"))),
    ("not not a", Not(Not(ref("a")))),
    ("not a == b", Not(Compare("==", ref("a"), ref("b")))),
    ("a and b", And((ref("a"), ref("b")))),
    ("a or b or c", Or((ref("a"), ref("b"), ref("c")))),
    ("a or b and c", Or((ref("a"), And((ref("b"), ref("c")))))),
    ("a and b or c", Or((And((ref("a"), ref("b"))), ref("c")))),
    ("(a or b) and c", And((Or((ref("a"), ref("b"))), ref("c")))),
    ("not a and b", And((Not(ref("a")), ref("b")))),
    ("not (a and b)", Not(And((ref("a"), ref("b"))))),
    ("(a == b) == c", Compare("==", Compare("==", ref("a"), ref("b")), ref("c"))),
    ("len(xs) > 2", Compare(">", Call("len", (ref("xs"),)), Const(2))),
    ('lower(s) == "vip"', Compare("==", Call("lower", (ref("s"),)), Const("vip"))),
    ('contains(xs, "x")', Call("contains", (ref("xs"), Const("x")))),
])
def test_expression_trees(expr, tree):
    parsed = cond(expr)
    assert parsed == tree
    # The tree prints back as text that parses to the same tree.
    assert cond(str(parsed)) == tree


def test_trees_are_immutable_and_hashable():
    tree = cond("a or b and c")
    assert isinstance(tree, Or)
    with pytest.raises(dataclasses.FrozenInstanceError):
        tree.operands = ()  # pyright: ignore[reportAttributeAccessIssue]  (frozen: the test checks it is refused)
    assert hash(tree) == hash(cond("a or (b and c)"))
    rules = compile_rules(LIGHTWEIGHT_RULES, NODES)
    with pytest.raises(AttributeError):
        rules.extra = 1  # pyright: ignore[reportAttributeAccessIssue]  (no such slot: the test checks it is refused)


def test_keywords_inside_dotted_names_and_strings_are_plain_text():
    assert cond("d.in == 'and or not'") == Compare("==", ref("d", "in"), Const("and or not"))


# ------------------------------------------------------------------------------------------ evaluation


@pytest.mark.parametrize(("a", "b", "c"), list(itertools.product([True, False], repeat=3)))
def test_precedence_matches_python(a, b, c):
    facts = {"a": a, "b": b, "c": c}
    assert holds("a or b and c", **facts) == (a or (b and c))
    assert holds("a and b or c", **facts) == ((a and b) or c)
    assert holds("not a or b", **facts) == ((not a) or b)
    assert holds("not (a or b) and c", **facts) == ((not (a or b)) and c)
    assert holds("(a or b) and c", **facts) == ((a or b) and c)


@pytest.mark.parametrize(("expr", "facts", "expected"), [
    ('s in ["x", "y"]', {"s": "x"}, True),
    ('s in ["x", "y"]', {"s": "z"}, False),
    ('s not in ["x", "y"]', {"s": "z"}, True),
    ('s not in ["x", "y"]', {"s": None}, True),
    ('"ip" in s', {"s": "vip"}, True),
    ("s in xs", {"s": "k", "xs": {"k": 1}}, True),
    ("s in xs", {"s": "k", "xs": None}, False),
    ("s not in xs", {"s": "k", "xs": None}, True),
    ("n in [1, 2.0, 3]", {"n": 2}, True),
    ("n == 2", {"n": 2.0}, True),
    ("n != null", {"n": 0}, True),
    ("n == null", {"n": None}, True),
    ("n > 1", {"n": None}, False),
    ("n <= 1", {"n": None}, False),
    ("n >= -1.5", {"n": -1}, True),
    ('s < "b"', {"s": "a"}, True),
    ("xs == [1, 2]", {"xs": [1, 2]}, False),  # a list fact is not equal to the tuple a literal evaluates to
    ("len(xs) == 2", {"xs": [1, 2]}, True),
    ("len(d.missing) == 0", {"d": {}}, True),
    ('lower(s) == "vip"', {"s": "VIP"}, True),
    ("lower(s) == null", {"s": None}, True),
    ('contains(xs, "a")', {"xs": ["a", "b"]}, True),
    ('contains(s, "ip")', {"s": "vip"}, True),
    ('contains(xs, "a")', {"xs": None}, False),
    ("a", {"a": 0}, False),
    ("a", {"a": "x"}, True),
    ("not xs", {"xs": []}, True),
])
def test_evaluation(expr, facts, expected):
    assert holds(expr, **facts) is expected


def test_dotted_fields_read_nested_mappings_and_missing_members_are_null():
    text = """
action -> handoff when user.role == "vip" and slots.order_id != null
action -> reply when turn_stats.rounds >= max_rounds
action -> action
"""
    rules = compile_rules(text, NODES)
    facts = {"user": {"id": "U1", "role": "vip"}, "slots": {"order_id": "A1"}, "turn_stats": {"rounds": 1},
             "max_rounds": 5}
    assert rules.route("action", facts) == "handoff"
    assert rules.route("action", {**facts, "slots": {}}) == "action"
    assert rules.route("action", {**facts, "user": {"role": "customer"}, "turn_stats": {"rounds": 5}}) == "reply"


def test_evaluation_short_circuits_left_to_right():
    # The right side would raise (string ordered against a number) but is never reached.
    assert holds("a or s > 1", a=True, s="x")
    assert not holds("a and s > 1", a=False, s="x")
    with pytest.raises(RuleRuntimeError, match="line 1"):
        holds("a or s > 1", a=False, s="x")


def test_no_matching_rule_is_a_clear_runtime_error():
    rules = compile_rules("collect -> action when missing_slots == 0\n\ncollect -> reply when busy", NODES)
    with pytest.raises(RuleRuntimeError) as err:
        rules.route("collect", {"missing_slots": 2, "busy": False})
    message = str(err.value)
    assert "no rule for 'collect' matched" in message and "lines 1, 3" in message
    assert "missing_slots=2" in message and "busy=False" in message
    assert isinstance(err.value, HarnessError)


@pytest.mark.parametrize(("expr", "facts", "fragment"), [
    ("s > 1", {"s": "x"}, "cannot compare a string with a number using '>'"),
    ("a < 1", {"a": True}, "cannot compare a bool with a number"),
    ("n in 3", {"n": 1}, "'in' needs a list, string or mapping"),
    ("n in s", {"n": 1, "s": "abc"}, "'in' a string needs a string"),
    ("len(n) > 0", {"n": 5}, "len() of a number"),
    ("lower(n) == 'x'", {"n": 5}, "lower() of a number"),
    ("xs in d", {"xs": [1], "d": {"k": 1}}, "cannot look up a list in a mapping"),
    ("a", {}, "no fact 'a'"),
])
def test_type_errors_name_the_rule_line(expr, facts, fragment):
    rules = compile_rules(f"\n\ncollect -> action when {expr}\ncollect -> END", NODES, ABC)
    with pytest.raises(RuleRuntimeError) as err:
        rules.route("collect", facts)
    assert str(err.value).startswith("line 3 (collect -> action when ")
    assert fragment in str(err.value)


def test_unknown_source_fails_when_asked_and_router_fails_when_built():
    rules = compile_rules("collect -> action", NODES)
    for call in (lambda: rules.route("reply", {}), lambda: rules.targets("reply"), lambda: rules.router("reply")):
        with pytest.raises(RuleRuntimeError, match=r"no rules for 'reply' \(sources: collect\)"):
            call()


def test_end_maps_to_langgraph_end():
    rules = compile_rules("collect -> END", NODES)
    assert rules.route("collect", {}) == END == "__end__"
    assert rules.targets("collect") == ["__end__"]
    assert rules.match("collect", {}).target == "END"


# ------------------------------------------------------------------------------------------ compile errors


@pytest.mark.parametrize(("text", "line", "token", "fragment"), [
    ("collect -> action\n\naction -> reply when rounds =~ 2", 3, "=~", "unknown operator '=~'"),
    ("collect -> action when rounds = 2", 1, "=", "unknown operator '=' (did you mean '=='?)"),
    ("collect -> action when busy && check_ok", 1, "&&", "unknown operator '&&' (did you mean 'and'?)"),
    ("collect -> action when rounds <> 2", 1, "<>", "unknown operator '<>'"),
    ("collect -> action when rounds + 1 > 2", 1, "+", "unknown operator '+'"),
    ("collect -> action when rounds > $x", 1, "$", "unexpected character '$'"),
    ("collect -> action\ncollect -> acton", 2, "acton",
     "unknown state 'acton' (known: action, collect, handoff, intent, reply, self_check, END); "
     "did you mean 'action'?"),
    ("nowhere -> action", 1, "nowhere", "unknown state 'nowhere'"),
    ("END -> action", 1, "END", "END cannot be a source state"),
    ("collect\n\n\naction -> reply when rounds_x > 1", 1, None, "expected '->' after 'collect', got end of line"),
    ("collect -> action\n\n\naction -> reply when rounds_x > 1", 4, "rounds_x",
     "unknown field 'rounds_x'; did you mean 'rounds'?"),
    ("collect -> action when rounds.x > 1", 1, "rounds.x", "'rounds' has no members"),
    ("collect -> action when True", 1, "True", "unknown field 'True'; did you mean 'true'?"),
    ("collect action", 1, "action", "expected '->' after 'collect', got 'action'"),
    ("collect -> ", 1, None, "expected a target state after '->', got end of line"),
    ("-> action", 1, "->", "expected a source state, got '->'"),
    ("collect -> action reply", 1, "reply", "expected 'when' or end of line after 'action', got 'reply'"),
    ("collect -> action when rounds 2", 1, "2", "expected an operator or end of line after 'rounds', got '2'"),
    ("collect -> action when", 1, None, "expected a value after 'when', got end of line"),
    ("collect -> action when rounds >", 1, None, "expected a value after '>', got end of line"),
    ("collect -> action when rounds > and", 1, "and", "expected a value after '>', got 'and'"),
    ("collect -> action when intent not ['x']", 1, "[", "expected 'in' after 'not', got '['"),
    ("collect -> action when 1 < rounds < 3", 1, "<", "chained comparison"),
    ("collect -> action when - rounds", 1, "rounds", "expected a number after '-', got 'rounds'"),
    ("collect -> action when rounds > 2abc", 1, "2abc", "bad number '2abc'"),
    ("collect -> action when rounds > 1.2.3", 1, "1.2.3", "bad number '1.2.3'"),
    ('\ncollect -> action when user.role == "vip', 2, '"vip', 'unterminated string "vip'),
    ("collect -> action when intent == 'human", 1, "'human", "unterminated string 'human"),
    (r'collect -> action when intent == "a\q"', 1, r'"a\q', "unknown escape '\\q'"),
    ("collect -> action when (rounds > 1", 1, "(", "unbalanced parentheses: '(' at column 24 is never closed"),
    ("collect -> action when rounds > 1)", 1, ")", "unbalanced parentheses: unexpected ')'"),
    ("collect -> action when ((rounds > 1) or busy", 1, "(", "unbalanced parentheses"),
    ("collect -> action when intent in ['x'", 1, "[", "unbalanced brackets"),
    ("collect -> action when (intent in ['x')]", 1, ")", "'[' at column 35 closed by ')'"),
    ("collect -> action when ()", 1, ")", "expected a value after '(', got ')'"),
    ("collect -> action when intent in ['x' 'y']", 1, "'y'", "expected ',' or ']' in a list, got ''y''"),
    ("collect -> action when len(slots, 1) > 0", 1, "len", "len() takes 1 argument, got 2"),
    ("collect -> action when contains(slots) ", 1, "contains", "contains() takes 2 arguments, got 1"),
    ("collect -> action when upper(intent) == 'X'", 1, "upper", "unknown function 'upper' (known: contains, len, lower)"),
    ("if busy collect -> END", 1, "collect", "expected ':' after the if-condition, got 'collect'"),
    ("collect -> action when busy:", 1, ":", "expected an operator or end of line after 'busy', got ':'"),
    ("collect -> action\ncollect -> END when busy", 2, "collect",
     "unreachable rule: 'collect' already has an unconditional rule on line 1"),
])
def test_compile_errors_name_line_and_token(text, line, token, fragment):
    with pytest.raises(RuleSyntaxError) as err:
        compile_rules(text, NODES)
    assert str(err.value).startswith(f"line {line}: ")
    assert fragment in str(err.value)
    assert (err.value.line, err.value.token) == (line, token)
    assert isinstance(err.value, HarnessError)


def test_extra_nodes_and_fields_can_be_allowed():
    text = "reply -> priority_reply when vip_score > 3 and crm.tier.name == 'gold'"
    with pytest.raises(RuleSyntaxError, match="unknown state 'priority_reply'"):
        compile_rules(text, NODES)
    rules = compile_rules(text, NODES | {"priority_reply"}, KNOWN_FIELDS | {"vip_score", "crm.*"})
    assert rules.route("reply", {"vip_score": 4, "crm": {"tier": {"name": "gold"}}}) == "priority_reply"
    # LangGraph's own spelling of the end in the node list changes nothing: rules say END.
    assert compile_rules("reply -> END", [*NODES, END]).targets("reply") == [END]


# ------------------------------------------------------------------------------------------ no Python runs


@pytest.mark.parametrize("expr", [
    "__import__('os').system('true')",
    "__import__",
    "user.__class__",
    "slots.__dict__ == null",
    "eval('1')",
    "exec('x = 1')",
    "compile('1', 'f', 'eval')",
    "open('/etc/passwd')",
    "getattr(user, 'role')",
    "().__class__",
    "user.role.__len__()",
    "lambda: 1",
    "[x for x in slots]",
    "rounds; import os",
    "f'{rounds}'",
    "`id`",
])
def test_python_in_rules_is_rejected_at_compile_time(expr):
    with pytest.raises(RuleSyntaxError, match="^line 1: "):
        compile_rules(f"collect -> action when {expr}", NODES)


def test_rules_never_reach_eval_exec_or_compile(monkeypatch):
    def forbidden(*args, **kwargs):
        raise AssertionError("the DSL called eval/exec/compile")

    for name in ("eval", "exec", "compile"):
        monkeypatch.setattr(builtins, name, forbidden)
    rules = compile_rules(LIGHTWEIGHT_RULES + "\nreply -> END when contains(lower(user.role), 'v')", NODES)
    router = rules.router("action", Knobs())
    assert router({"messages": [AIMessage("done")]}) == "reply"
    assert rules.route("reply", facts_from_state({"user": {"id": "U1", "role": "VIP"}})) == END


def test_dotted_access_is_a_mapping_lookup_never_an_attribute():
    class Sneaky:
        role = "vip"

    rules = compile_rules('collect -> action when user.role == "vip"\ncollect -> END', NODES)
    assert rules.route("collect", {"user": Sneaky()}) == END
    assert rules.route("collect", {"user": {"role": "vip"}}) == "action"


@pytest.mark.parametrize("path", sorted(Path(rules_module.__file__).parent.glob("*.py")), ids=lambda p: p.name)
def test_module_source_has_no_dynamic_code_paths(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    banned = {"eval", "exec", "compile", "__import__", "getattr", "setattr", "globals", "locals", "vars"}
    called = {node.func.id for node in ast.walk(tree) if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)}
    assert not called & banned
    imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import | ast.ImportFrom)
                for alias in node.names} | {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert not imported & {"importlib", "pickle", "marshal", "ast", "subprocess", "os"}


# ------------------------------------------------------------------------------------------ rule sets


def test_equality_ignores_layout_and_comments_and_serialises():
    a = compile_rules(LIGHTWEIGHT_RULES, NODES)
    b = compile_rules("\n\n" + LIGHTWEIGHT_RULES.replace(" when ", "   when   ") + "# the end\n", NODES)
    assert a == b and hash(a) == hash(b)
    assert a != compile_rules(LIGHTWEIGHT_RULES.replace("max_regenerations", "2"), NODES)
    assert a != "not a rule set"
    assert compile_rules(str(a), NODES) == a
    data = json.loads(json.dumps(a.to_dict()))
    assert data == {"text": LIGHTWEIGHT_RULES, "nodes": sorted(NODES)}
    again = RuleSet.from_dict(data)
    assert again == a and again.text == LIGHTWEIGHT_RULES
    custom = compile_rules("reply -> END when vip", NODES, {"vip"})
    assert RuleSet.from_dict(custom.to_dict()) == custom
    assert repr(a) == "RuleSet(16 rules; intent: 4, collect: 2, action: 7, self_check: 3)"


def test_known_fields_match_the_facts():
    facts = facts_from_state({}, Knobs())
    assert set(facts) == STATE_FIELDS | KNOB_FIELDS
    assert not STATE_FIELDS & KNOB_FIELDS  # a knob must never shadow a state fact
    assert set(Knobs().model_dump()) == KNOB_FIELDS
    assert {"user.*", "slots.*", "turn_stats.*"} <= KNOWN_FIELDS


def test_facts_from_state():
    state = {
        "intent": "order_status", "phase": "action", "missing_slots": ["order_id", "query"],
        "slots": {"order_id": "A1"}, "unknown_streak": None, "user": {"id": "U7", "role": "vip"},
        "turn_stats": {"rounds": 2, "tool_calls": 3, "tool_errors": 1, "model_calls": 4, "input_tokens": 900,
                       "regenerations": 1},
        "check": {"ok": False, "retryable": True},
        "messages": [HumanMessage("hi"), AIMessage("", tool_calls=[{"name": "t", "args": {}, "id": "1"}])],
    }
    facts = facts_from_state(state, Knobs(max_rounds=7))
    assert facts["missing_slots"] == 2 and facts["slots"] == {"order_id": "A1"}
    assert (facts["rounds"], facts["tool_calls"], facts["tool_errors"]) == (2, 3, 1)
    assert (facts["model_calls"], facts["input_tokens"], facts["regenerations"]) == (4, 900, 1)
    assert facts["unknown_streak"] == 0 and facts["user"] == {"id": "U7", "role": "vip"}
    assert (facts["check_ok"], facts["busy"], facts["last_ai_has_no_tool_calls"]) == (False, True, False)
    assert facts["max_rounds"] == 7 and facts["stop_reason"] is None
    empty = facts_from_state({"check": None, "messages": [AIMessage("done")]})
    assert (empty["check_ok"], empty["busy"], empty["last_ai_has_no_tool_calls"]) == (True, False, True)
    assert empty["user"] == {"id": None, "role": None} and empty["max_rounds"] == Knobs().max_rounds
    assert facts_from_state({}, {"max_rounds": 3})["max_rounds"] == 3


def test_router_snapshots_knobs_and_declares_its_targets():
    rules = compile_rules(LIGHTWEIGHT_RULES, NODES)
    knobs = Knobs(max_rounds=3)
    router = rules.router("action", knobs)
    state = {"messages": [AIMessage("", tool_calls=[{"name": "t", "args": {}, "id": "1"}])],
             "turn_stats": {"rounds": 2}}
    assert router(state) == "action"
    knobs.max_rounds = 1  # editing the design afterwards does not change a built router
    assert router(state) == "action"
    assert rules.router("action", {"max_rounds": 2})(state) == "reply"
    assert router.__name__ == "route_after_action"
    hint = typing.get_type_hints(router)["return"]
    assert typing.get_origin(hint) is typing.Literal
    assert list(typing.get_args(hint)) == rules.targets("action") == [END, "reply", "handoff", "collect", "action"]



def test_dsl_routers_drive_a_langgraph_graph():
    class RunState(TypedDict, total=False):
        intent_kind: str | None
        missing_slots: list[str]
        messages: Annotated[list, add_messages]
        check: dict
        visited: Annotated[list[str], operator.add]

    def visit(name: str):
        def node(state: RunState) -> dict:
            update: dict = {"visited": [name]}
            if name == "action":
                update["messages"] = [AIMessage("here you are")]
            return update
        return node

    def build(route_for, path_map: bool):
        graph = StateGraph(RunState)
        for name in DEFAULT_NODES:
            graph.add_node(name, visit(name))
        graph.add_edge(START, "intent")
        for source in ROUTED:
            targets = DEFAULT.targets(source)
            graph.add_conditional_edges(source, route_for(source), targets if path_map else None)
        graph.add_edge("reply", "self_check")
        graph.add_edge("handoff", END)
        return graph.compile()

    knobs = Knobs()
    # The router's Literal annotation alone gives LangGraph the same edges as an explicit path map.
    bare = build(lambda source: DEFAULT.router(source, knobs), path_map=False)
    mapped = build(lambda source: DEFAULT.router(source, knobs), path_map=True)
    edges = {(e.source, e.target) for e in bare.get_graph().edges}
    assert edges == {(e.source, e.target) for e in mapped.get_graph().edges}
    assert ("action", "collect") in edges and ("self_check", "__end__") in edges
    expected = {
        ("task", ()): ["intent", "collect", "action", "reply", "self_check"],
        ("task", ("x",)): ["intent", "collect"],
        ("to-human", ()): ["intent", "handoff"],
        ("conversational", ()): ["intent", "reply", "self_check"],
        ("escalate", ()): ["intent", "collect", "action", "reply", "self_check", "handoff"],
    }
    for (kind, missing), path in expected.items():
        start: RunState = {"intent_kind": kind, "missing_slots": list(missing)}
        assert bare.invoke(start.copy())["visited"] == mapped.invoke(start.copy())["visited"] == path, kind
