"""The rule language's parser: the tokens of one line into a ``Rule``, every name checked as it goes.

Recursive descent, loosest binding first (``or``, ``and``, ``not``, comparison, operand); the grammar is in
``lg_harness/core/routing/rules.py``. A typo fails here, with its line and a suggestion, when the design loads.
"""

from __future__ import annotations

import difflib
from collections.abc import Collection
from dataclasses import dataclass
from dataclasses import field as dc_field
from typing import NamedTuple, NoReturn

from lg_harness.core.routing.errors import RuleSyntaxError
from lg_harness.core.routing.expr import FUNCTIONS, And, Call, Compare, Const, Expr, FieldRef, ListOf, Not, Or
from lg_harness.core.routing.tokens import KEYWORDS, Token

END = "END"  # LangGraph's end node, as the rules spell it

# Python spellings people reach for out of habit, answered with the rule language's own.
_PYTHON_CONSTANTS = {"True": "true", "False": "false", "None": "null"}


@dataclass(frozen=True, slots=True)
class Rule:
    """One compiled rule; ``condition`` None means unconditional. ``line`` is not part of equality."""

    source: str
    target: str
    condition: Expr | None
    line: int = dc_field(default=0, compare=False)

    def __str__(self) -> str:
        when = f" when {self.condition}" if self.condition is not None else ""
        return f"{self.source} -> {self.target}{when}"


def _describe(token: Token) -> str:
    return "end of line" if token.kind == "eol" else f"'{token.text}'"


def _suggest(name: str, known: Collection[str]) -> str:
    close = difflib.get_close_matches(name, list(known), n=1)
    return f"; did you mean '{close[0]}'?" if close else ""


class Context(NamedTuple):
    nodes: frozenset[str]
    fields: frozenset[str]


def _field_allowed(path: tuple[str, ...], fields: frozenset[str]) -> bool:
    if ".".join(path) in fields:
        return True
    return any(".".join(path[:i]) + ".*" in fields for i in range(1, len(path)))


def _conjoin(guard: Expr | None, condition: Expr | None) -> Expr | None:
    # Flattened, so `if a: x -> y when b` and `x -> y when a and b` compile to the same tree.
    parts = [part for expr in (guard, condition) if expr is not None
             for part in (expr.operands if isinstance(expr, And) else (expr,))]
    if not parts:
        return None
    return parts[0] if len(parts) == 1 else And(tuple(parts))


class Parser:
    """Recursive descent over the tokens of one line; checks every name against the context as it goes."""

    def __init__(self, tokens: list[Token], context: Context) -> None:
        self.tokens = tokens
        self.pos = 0
        self.context = context

    # -- token helpers

    def peek(self, ahead: int = 0) -> Token:
        return self.tokens[min(self.pos + ahead, len(self.tokens) - 1)]

    def advance(self) -> Token:
        token = self.peek()
        self.pos += 1
        return token

    def previous(self) -> Token:
        return self.tokens[self.pos - 1]

    def at_keyword(self, word: str, ahead: int = 0) -> bool:
        token = self.peek(ahead)
        return token.kind == "name" and token.text == word

    def at_punct(self, text: str) -> bool:
        token = self.peek()
        return token.kind == "punct" and token.text == text

    def fail(self, message: str, token: Token | None = None) -> NoReturn:
        token = token or self.peek()
        raise RuleSyntaxError(token.line, message, token=token.text if token.kind != "eol" else None)

    def expect_punct(self, text: str, what: str) -> None:
        if not self.at_punct(text):
            self.fail(f"expected '{text}' {what}, got {_describe(self.peek())}")
        self.advance()

    # -- rules

    def rule(self) -> Rule:
        guard = None
        if self.at_keyword("if"):
            self.advance()
            guard = self.expression()
            self.expect_punct(":", "after the if-condition")
        source = self.state("a source state")
        if self.peek().kind != "arrow":
            self.fail(f"expected '->' after '{source.text}', got {_describe(self.peek())}")
        self.advance()
        target = self.state("a target state after '->'")
        condition = None
        if self.at_keyword("when"):
            self.advance()
            condition = self.expression()
        if self.peek().kind != "eol":
            expected = "an operator" if condition is not None else "'when'"
            self.fail(f"expected {expected} or end of line after {_describe(self.previous())}, "
                      f"got {_describe(self.peek())}")
        return Rule(source.text, target.text, _conjoin(guard, condition), line=source.line)

    def state(self, what: str) -> Token:
        token = self.peek()
        if token.kind != "name" or token.text in KEYWORDS:
            self.fail(f"expected {what}, got {_describe(token)}")
        self.advance()
        is_source = what.startswith("a source")
        if is_source and token.text == END:
            self.fail("END cannot be a source state", token)
        known = self.context.nodes if is_source else self.context.nodes | {END}
        if token.text not in known:
            listing = ", ".join([*sorted(self.context.nodes), END])
            self.fail(f"unknown state '{token.text}' (known: {listing}){_suggest(token.text, known)}", token)
        return token

    # -- expressions, loosest binding first

    def expression(self) -> Expr:
        operands = [self.conjunction()]
        while self.at_keyword("or"):
            self.advance()
            operands.append(self.conjunction())
        return operands[0] if len(operands) == 1 else Or(tuple(operands))

    def conjunction(self) -> Expr:
        operands = [self.negation()]
        while self.at_keyword("and"):
            self.advance()
            operands.append(self.negation())
        return operands[0] if len(operands) == 1 else And(tuple(operands))

    def negation(self) -> Expr:
        if self.at_keyword("not"):
            self.advance()
            return Not(self.negation())
        return self.comparison()

    def comparison_op(self) -> str | None:
        token = self.peek()
        if token.kind == "op":
            self.advance()
            return token.text
        if self.at_keyword("in"):
            self.advance()
            return "in"
        if self.at_keyword("not"):
            if not self.at_keyword("in", ahead=1):
                self.fail(f"expected 'in' after 'not', got {_describe(self.peek(1))}", self.peek(1))
            self.pos += 2
            return "not in"
        return None

    def comparison(self) -> Expr:
        left = self.operand()
        op = self.comparison_op()
        if op is None:
            return left
        expr = Compare(op, left, self.operand())
        token = self.peek()
        if token.kind == "op" or self.at_keyword("in") or self.at_keyword("not"):
            self.fail(f"chained comparison at {_describe(token)}; combine comparisons with 'and'")
        return expr

    def operand(self) -> Expr:
        token = self.peek()
        if token.kind in ("number", "string"):
            self.advance()
            return Const(token.value)
        if token.kind == "minus":
            return self.negative_number()
        if self.at_punct("("):
            self.advance()
            inner = self.expression()
            self.expect_punct(")", f"after {_describe(self.previous())}")
            return inner
        if self.at_punct("["):
            return self.list_literal()
        if token.kind == "name":
            return self.name_operand(token)
        self.fail(f"expected a value after {_describe(self.previous())}, got {_describe(token)}")

    def negative_number(self) -> Const:
        self.advance()
        token = self.peek()
        if token.kind != "number":
            self.fail(f"expected a number after '-', got {_describe(token)}")
        self.advance()
        return Const(-token.value)

    def list_literal(self) -> ListOf:
        self.advance()
        items: list[Expr] = []
        while not self.at_punct("]"):
            items.append(self.expression())
            if self.at_punct(","):
                self.advance()
            elif not self.at_punct("]"):
                self.fail(f"expected ',' or ']' in a list, got {_describe(self.peek())}")
        self.advance()
        return ListOf(tuple(items))

    def name_operand(self, token: Token) -> Expr:
        constants = {"true": True, "false": False, "null": None}
        if token.text in constants:
            self.advance()
            return Const(constants[token.text])
        if token.text in KEYWORDS:
            self.fail(f"expected a value after {_describe(self.previous())}, got '{token.text}'")
        if self.peek(1).kind == "punct" and self.peek(1).text == "(":
            return self.call(token)
        self.advance()
        return self.field(token)

    def call(self, token: Token) -> Call:
        if token.text not in FUNCTIONS:
            known = ", ".join(sorted(FUNCTIONS))
            self.fail(f"unknown function '{token.text}' (known: {known})", token)
        self.pos += 2
        args: list[Expr] = []
        while not self.at_punct(")"):
            args.append(self.expression())
            if self.at_punct(","):
                self.advance()
            elif not self.at_punct(")"):
                self.fail(f"expected ',' or ')' in the arguments of {token.text}(), got {_describe(self.peek())}")
        self.advance()
        arity = FUNCTIONS[token.text].arity
        if len(args) != arity:
            self.fail(f"{token.text}() takes {arity} argument{'s' if arity != 1 else ''}, got {len(args)}", token)
        return Call(token.text, tuple(args))

    def field(self, token: Token) -> FieldRef:
        path = tuple(token.text.split("."))
        fields = self.context.fields
        if any(part.startswith("__") for part in path):
            self.fail(f"unknown field '{token.text}' (names starting with '__' are not allowed)", token)
        if _field_allowed(path, fields):
            return FieldRef(path)
        if path[0] in fields:
            nested = ", ".join(sorted(name[:-2] for name in fields if name.endswith(".*")))
            self.fail(f"unknown field '{token.text}': '{path[0]}' has no members (dotted access works "
                      f"below: {nested})", token)
        if token.text in _PYTHON_CONSTANTS:
            self.fail(f"unknown field '{token.text}'; did you mean '{_PYTHON_CONSTANTS[token.text]}'?", token)
        plain = [name for name in fields if not name.endswith(".*")]
        self.fail(f"unknown field '{token.text}'{_suggest(token.text, plain)}", token)
