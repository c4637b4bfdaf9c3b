"""The rule language: compile a design's transition rules into conditional-edge functions.

A design can state its routing as text instead of Python, so the rules travel with the design file, can be
diffed and A/B-tested, and still compile to plain conditional-edge functions::

    # one rule per line; rules of one source are tried in file order, the first that holds wins
    collect -> END when missing_slots > 0
    collect -> action
    action -> reply when last_ai_has_no_tool_calls or rounds >= max_rounds
    if user.role == "vip": reply -> priority_reply
    action -> action                      # unconditional fallback

Grammar (one ``rule`` per line; ``#`` starts a comment; blank lines are ignored)::

    rule       := [ "if" expr ":" ] NAME "->" NAME [ "when" expr ]
    expr       := conj ( "or" conj )*
    conj       := neg ( "and" neg )*
    neg        := "not" neg | comparison
    comparison := operand [ cmp_op operand ]          # not chained: write `a < b and b < c`
    cmp_op     := "==" | "!=" | "<" | "<=" | ">" | ">=" | "in" | "not" "in"
    operand    := NUMBER | "-" NUMBER | STRING | "true" | "false" | "null"
                | "[" [ expr ( "," expr )* [ "," ] ] "]"
                | FUNC "(" [ expr ( "," expr )* ] ")"   # FUNC: len, lower, contains
                | FIELD                                  # NAME ( "." NAME )*
                | "(" expr ")"

``if C: a -> b when D`` means ``a -> b when C and D``; ``END`` is LangGraph's end node. The text is
tokenized and parsed by hand into an immutable tree of small node classes that an evaluator walks over a
read-only mapping of facts (:func:`facts_from_state`): nothing in the text is ever handed to Python's
``eval``/``exec``/``compile``, attribute access does not exist (``user.role`` is a mapping lookup), and only
the whitelisted functions can be called. Every name is checked when the rules compile, so a typo fails
when the design loads, with the line number, not in the middle of a conversation.

The parts, each its own module: ``tokens`` (the tokenizer), ``parser`` (tokens into ``Rule`` values),
``expr`` (the tree and its evaluator), ``facts`` (what a rule may name); this module compiles and routes.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from typing import Any, Literal

from langgraph.constants import END as LANGGRAPH_END

from lg_harness.core.knobs import Knobs
from lg_harness.core.routing.errors import EvalError, RuleRuntimeError, RuleSyntaxError
from lg_harness.core.routing.expr import FieldRef
from lg_harness.core.routing.facts import KNOWN_FIELDS, knobs_snapshot, lazy_facts
from lg_harness.core.routing.parser import END, Context, Parser, Rule
from lg_harness.core.routing.tokens import tokenize_line


def _resolve(target: str) -> str:
    return LANGGRAPH_END if target == END else target



def _lookup(path: tuple[str, ...], facts: Mapping[str, Any]) -> Any:
    try:
        return FieldRef(path).evaluate(facts)
    except EvalError:
        return "<missing>"


def _check_reachable(rules: list[Rule]) -> None:
    fallback: dict[str, int] = {}
    for rule in rules:
        if rule.source in fallback:
            raise RuleSyntaxError(rule.line, f"unreachable rule: '{rule.source}' already has an unconditional "
                                  f"rule on line {fallback[rule.source]}", token=rule.source)
        if rule.condition is None:
            fallback[rule.source] = rule.line


class RuleSet:
    """Compiled transition rules: per source node, the rules in file order. Immutable.

    Build one with :func:`compile_rules`. Equality compares the rules themselves (source, target and
    condition tree, in order), so comments, spacing and ``if``-versus-``when`` spelling do not matter.
    """

    __slots__ = ("_by_source", "_fields", "_nodes", "_rules", "_text")

    def __init__(self, text: str, rules: tuple[Rule, ...], nodes: frozenset[str], fields: frozenset[str]) -> None:
        self._text = text
        self._rules = rules
        self._nodes = nodes
        self._fields = fields
        by_source: dict[str, list[Rule]] = {}
        for rule in rules:
            by_source.setdefault(rule.source, []).append(rule)
        self._by_source = {source: tuple(group) for source, group in by_source.items()}

    @property
    def text(self) -> str:
        """The rule text as written (comments included): what a design stores."""
        return self._text

    @property
    def rules(self) -> tuple[Rule, ...]:
        """Every rule, in file order."""
        return self._rules

    @property
    def sources(self) -> frozenset[str]:
        """The nodes that have at least one rule."""
        return frozenset(self._by_source)

    def _rules_of(self, source: str) -> tuple[Rule, ...]:
        if source not in self._by_source:
            raise RuleRuntimeError(f"no rules for '{source}' (sources: {', '.join(sorted(self._by_source))})")
        return self._by_source[source]

    def targets(self, source: str) -> list[str]:
        """The nodes ``source`` may route to, in rule order, END as LangGraph's ``"__end__"``.

        Args:
            source: a node that has rules.

        Returns:
            A list usable as ``path_map`` of ``StateGraph.add_conditional_edges``.
        """
        return list(dict.fromkeys(_resolve(rule.target) for rule in self._rules_of(source)))

    def is_total(self, source: str) -> bool:
        """Whether ``source`` ends with an unconditional rule, so routing it can never fail."""
        return self._rules_of(source)[-1].condition is None

    def match(self, source: str, facts: Mapping[str, Any]) -> Rule:
        """The first rule of ``source`` whose condition holds over ``facts``.

        Raises:
            RuleRuntimeError: no rule matched, or a condition compared incompatible values.
        """
        rules = self._rules_of(source)
        for rule in rules:
            try:
                if rule.condition is None or rule.condition.evaluate(facts):
                    return rule
            except EvalError as err:
                raise RuleRuntimeError(f"line {rule.line} ({rule}): {err}") from err
        paths = dict.fromkeys(path for rule in rules if rule.condition for path in rule.condition.refs())
        values = ", ".join(f"{'.'.join(path)}={_lookup(path, facts)!r}" for path in paths)
        lines = ", ".join(str(rule.line) for rule in rules)
        raise RuleRuntimeError(f"no rule for '{source}' matched (lines {lines}) and it has no unconditional "
                               f"rule; facts: {values}")

    def route(self, source: str, facts: Mapping[str, Any]) -> str:
        """The node to go to after ``source``; END is LangGraph's ``"__end__"``."""
        return _resolve(self.match(source, facts).target)

    def router(self, source: str, knobs: Knobs | Mapping[str, Any] | None = None) -> Callable[[Any], str]:
        """A conditional-edge function for ``source``, for ``StateGraph.add_conditional_edges``.

        Args:
            source: a node that has rules (checked now, not at the first message).
            knobs: the design's knobs (defaults when None); copied now, so the router stays pure.

        Returns:
            ``state -> next node``. Its return annotation is the ``Literal`` of :meth:`targets`, so LangGraph
            can draw the edges even without a path map.
        """
        targets = self.targets(source)
        frozen_knobs = knobs_snapshot(knobs)
        knob_values = frozen_knobs.model_dump()

        def route(state: Any) -> str:
            # Same facts as facts_from_state, but the tool-log ones are computed only if a rule reads them.
            return self.route(source, lazy_facts(state, frozen_knobs, knob_values))

        route.__name__ = route.__qualname__ = f"route_after_{source}"
        # Real objects rather than strings: LangGraph resolves the hint to find the path map.
        route.__annotations__ = {"return": Literal[tuple(targets)]}
        return route

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready form that :meth:`from_dict` compiles back to an equal rule set."""
        data: dict[str, Any] = {"text": self._text, "nodes": sorted(self._nodes)}
        if self._fields != KNOWN_FIELDS:
            data["fields"] = sorted(self._fields)
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RuleSet:
        """Compile the form :meth:`to_dict` wrote."""
        return compile_rules(data["text"], data["nodes"], data.get("fields", KNOWN_FIELDS))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RuleSet):
            return NotImplemented
        return self._rules == other._rules

    def __hash__(self) -> int:
        return hash(self._rules)

    def __str__(self) -> str:
        """The rules in canonical form, one per line (compiles back to an equal rule set)."""
        return "\n".join(str(rule) for rule in self._rules)

    def __repr__(self) -> str:
        counts = ", ".join(f"{source}: {len(rules)}" for source, rules in self._by_source.items())
        return f"RuleSet({len(self._rules)} rules; {counts})"


def compile_rules(text: str, nodes: Collection[str], fields: Collection[str] = KNOWN_FIELDS) -> RuleSet:
    """Parse and check rule text.

    Args:
        text: the rules, one per line.
        nodes: the graph's node names; ``END`` is always a valid target (LangGraph's ``"__end__"`` in
            ``nodes`` is ignored: the rules spell it ``END``).
        fields: the facts rules may read; ``"name.*"`` allows dotted paths below ``name``.

    Returns:
        The compiled :class:`RuleSet`.

    Raises:
        RuleSyntaxError: the first problem found, naming its line and token.
    """
    context = Context(frozenset(nodes) - {LANGGRAPH_END, END}, frozenset(fields))
    rules: list[Rule] = []
    for number, raw in enumerate(text.split("\n"), start=1):
        tokens = tokenize_line(raw.rstrip("\r"), number)
        if tokens[0].kind != "eol":
            rules.append(Parser(tokens, context).rule())
    _check_reachable(rules)
    return RuleSet(text, tuple(rules), context.nodes, context.fields)
