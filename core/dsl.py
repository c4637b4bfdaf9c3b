"""A small, safe rule language for a design's transition rules.

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
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import dataclass
from dataclasses import field as dc_field
from typing import Any, ClassVar, Literal, NamedTuple, NoReturn

from langchain_core.messages import AIMessage
from langgraph.constants import END as LANGGRAPH_END
from lg_harness.core import guards
from lg_harness.core.knobs import Knobs
from pydantic import BaseModel

from lg_harness.errors import HarnessError

END = "END"

DEFAULT_NODES: tuple[str, ...] = ("intent", "collect", "action", "reply", "self_check", "handoff")

_COUNTERS = ("rounds", "tool_calls", "tool_errors", "model_calls", "input_tokens", "output_tokens",
             "regenerations")
# Facts a rule may name, besides the knobs. Keep in step with facts_from_state (a test checks it).
STATE_FIELDS: frozenset[str] = frozenset({
    "intent", "intent_kind", "intent_confidence", "phase", "turn", "missing_slots", "slots", "user", "turn_stats", "totals",
    *_COUNTERS, "unknown_streak", "check_ok", "busy", "last_ai_has_no_tool_calls",
    "quota_exceeded", "repeated_invalid_call", "invalid_calls", "invented_argument", "duplicate_blocked",
    "no_progress", "stop_reason", "handoff_allowed", "uncertain_change",
})
KNOB_FIELDS: frozenset[str] = frozenset(Knobs.model_fields)
# Dict-valued facts whose members rules may reach with dots (``user.role``, ``slots.order_id``).
NESTED_FIELDS: tuple[str, ...] = ("slots", "totals", "turn_stats", "user")
# A name ending in ``.*`` admits any dotted path below it; that is how a field set says "this is a dict".
KNOWN_FIELDS: frozenset[str] = STATE_FIELDS | KNOB_FIELDS | {f"{name}.*" for name in NESTED_FIELDS}


class RuleSyntaxError(HarnessError):
    """Rules that do not compile: the message names the line and the offending token.

    Attributes:
        line: 1-based line number in the rule text.
        token: the offending token's text, or None at the end of a line.
    """

    def __init__(self, line: int, message: str, token: str | None = None) -> None:
        super().__init__(f"line {line}: {message}")
        self.line = line
        self.token = token


class RuleRuntimeError(HarnessError):
    """Rules that compiled but cannot decide: no rule matched, or a comparison of incompatible values."""


class _EvalError(Exception):
    """Raised inside the evaluator; ``RuleSet`` adds the rule's line before it reaches the user."""


# ------------------------------------------------------------------------------------------ expressions


def _quote(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t")
    return f'"{escaped}"'


def _type_name(value: Any) -> str:
    names = {type(None): "null", bool: "bool", int: "number", float: "number", str: "string"}
    if isinstance(value, Mapping):
        return "mapping"
    if isinstance(value, list | tuple):
        return "list"
    return names.get(type(value), type(value).__name__)


class Expr:
    """Base of the expression tree. Nodes are frozen dataclasses: compiled rules cannot be altered."""

    __slots__ = ()
    # Binding strength, used only to print the tree back as text with the parentheses it needs.
    precedence: ClassVar[int] = 5

    def evaluate(self, facts: Mapping[str, Any]) -> Any:
        """The value of this expression over ``facts``."""
        raise NotImplementedError

    def refs(self) -> Iterator[tuple[str, ...]]:
        """The field paths this expression reads, for error messages."""
        yield from ()

    def _wrap(self, child: Expr, min_precedence: int) -> str:
        return f"({child})" if child.precedence < min_precedence else str(child)


@dataclass(frozen=True, slots=True)
class Const(Expr):
    """A literal: number, string, true, false or null."""

    value: int | float | str | bool | None

    def evaluate(self, facts: Mapping[str, Any]) -> Any:
        return self.value

    def __str__(self) -> str:
        if self.value is None:
            return "null"
        if isinstance(self.value, bool):
            return "true" if self.value else "false"
        if isinstance(self.value, str):
            return _quote(self.value)
        return repr(self.value)


@dataclass(frozen=True, slots=True)
class ListOf(Expr):
    """A list literal; its items may be any expression."""

    items: tuple[Expr, ...]

    def evaluate(self, facts: Mapping[str, Any]) -> tuple[Any, ...]:
        return tuple(item.evaluate(facts) for item in self.items)

    def refs(self) -> Iterator[tuple[str, ...]]:
        for item in self.items:
            yield from item.refs()

    def __str__(self) -> str:
        return "[" + ", ".join(str(item) for item in self.items) + "]"


@dataclass(frozen=True, slots=True)
class FieldRef(Expr):
    """A fact by name; dotted parts are mapping lookups (a missing member is null), never attributes."""

    path: tuple[str, ...]

    def evaluate(self, facts: Mapping[str, Any]) -> Any:
        head = self.path[0]
        if head not in facts:
            raise _EvalError(f"no fact '{head}' (facts_from_state provides every known field)")
        value = facts[head]
        for part in self.path[1:]:
            value = value.get(part) if isinstance(value, Mapping) else None
        return value

    def refs(self) -> Iterator[tuple[str, ...]]:
        yield self.path

    def __str__(self) -> str:
        return ".".join(self.path)


def _len(value: Any) -> int:
    if value is None:
        return 0  # a missing slot or member has no length rather than breaking the route
    if isinstance(value, str | list | tuple | Mapping):
        return len(value)
    raise _EvalError(f"len() of a {_type_name(value)}")


def _lower(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value.lower() if value is not None else None
    raise _EvalError(f"lower() of a {_type_name(value)}")


def _contains(container: Any, item: Any) -> bool:
    return _membership(item, container)


class _Function(NamedTuple):
    arity: int
    impl: Callable[..., Any]


# The whole callable surface of the language. Nothing else can be called.
FUNCTIONS: Mapping[str, _Function] = {
    "len": _Function(1, _len),
    "lower": _Function(1, _lower),
    "contains": _Function(2, _contains),
}


@dataclass(frozen=True, slots=True)
class Call(Expr):
    """A call of a whitelisted function (arity checked at compile time)."""

    name: str
    args: tuple[Expr, ...]

    def evaluate(self, facts: Mapping[str, Any]) -> Any:
        return FUNCTIONS[self.name].impl(*(arg.evaluate(facts) for arg in self.args))

    def refs(self) -> Iterator[tuple[str, ...]]:
        for arg in self.args:
            yield from arg.refs()

    def __str__(self) -> str:
        return f"{self.name}(" + ", ".join(str(arg) for arg in self.args) + ")"


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _order(op: str, left: Any, right: Any) -> bool:
    if left is None or right is None:
        return False  # a missing value meets no threshold, as in SQL
    if not (_is_number(left) and _is_number(right)) and not (isinstance(left, str) and isinstance(right, str)):
        raise _EvalError(f"cannot compare a {_type_name(left)} with a {_type_name(right)} using '{op}'")
    return {"<": left < right, "<=": left <= right, ">": left > right, ">=": left >= right}[op]


def _membership(item: Any, container: Any) -> bool:
    if container is None:
        return False
    if isinstance(container, str):
        if not isinstance(item, str):
            raise _EvalError(f"'in' a string needs a string on the left, got a {_type_name(item)}")
        return item in container
    if not isinstance(container, list | tuple | set | frozenset | Mapping):
        raise _EvalError(f"'in' needs a list, string or mapping on the right, got a {_type_name(container)}")
    try:
        return item in container
    except TypeError as err:  # an unhashable key looked up in a mapping
        raise _EvalError(f"cannot look up a {_type_name(item)} in a mapping") from err


@dataclass(frozen=True, slots=True)
class Compare(Expr):
    """One comparison: ``== != < <= > >= in`` or ``not in``."""

    precedence: ClassVar[int] = 4
    op: str
    left: Expr
    right: Expr

    def evaluate(self, facts: Mapping[str, Any]) -> bool:
        left, right = self.left.evaluate(facts), self.right.evaluate(facts)
        if self.op == "==":
            return left == right
        if self.op == "!=":
            return left != right
        if self.op == "in":
            return _membership(left, right)
        if self.op == "not in":
            return not _membership(left, right)
        return _order(self.op, left, right)

    def refs(self) -> Iterator[tuple[str, ...]]:
        yield from self.left.refs()
        yield from self.right.refs()

    def __str__(self) -> str:
        return f"{self._wrap(self.left, 5)} {self.op} {self._wrap(self.right, 5)}"


@dataclass(frozen=True, slots=True)
class Not(Expr):
    """Boolean negation (of the operand's truthiness)."""

    precedence: ClassVar[int] = 3
    operand: Expr

    def evaluate(self, facts: Mapping[str, Any]) -> bool:
        return not self.operand.evaluate(facts)

    def refs(self) -> Iterator[tuple[str, ...]]:
        yield from self.operand.refs()

    def __str__(self) -> str:
        return f"not {self._wrap(self.operand, 3)}"


@dataclass(frozen=True, slots=True)
class And(Expr):
    """True when every operand is truthy; stops at the first that is not."""

    precedence: ClassVar[int] = 2
    operands: tuple[Expr, ...]

    def evaluate(self, facts: Mapping[str, Any]) -> bool:
        return all(operand.evaluate(facts) for operand in self.operands)

    def refs(self) -> Iterator[tuple[str, ...]]:
        for operand in self.operands:
            yield from operand.refs()

    def __str__(self) -> str:
        return " and ".join(self._wrap(operand, 3) for operand in self.operands)


@dataclass(frozen=True, slots=True)
class Or(Expr):
    """True when any operand is truthy; stops at the first that is."""

    precedence: ClassVar[int] = 1
    operands: tuple[Expr, ...]

    def evaluate(self, facts: Mapping[str, Any]) -> bool:
        return any(operand.evaluate(facts) for operand in self.operands)

    def refs(self) -> Iterator[tuple[str, ...]]:
        for operand in self.operands:
            yield from operand.refs()

    def __str__(self) -> str:
        return " or ".join(self._wrap(operand, 2) for operand in self.operands)


# ------------------------------------------------------------------------------------------ tokenizer


class Token(NamedTuple):
    """One lexical token. ``kind``: name, number, string, op, arrow, minus, punct or eol."""

    kind: str
    text: str
    value: Any
    line: int
    column: int


# Python spellings people reach for out of habit, answered with the rule language's own.
_PYTHON_CONSTANTS = {"True": "true", "False": "false", "None": "null"}
KEYWORDS = frozenset({"if", "when", "and", "or", "not", "in", "true", "false", "null"})
COMPARISONS = frozenset({"==", "!=", "<", "<=", ">", ">="})
_OPERATOR_HINTS = {"=": "==", "&&": "and", "&": "and", "||": "or", "|": "or", "!": "not", "=>": ">= or ->",
                   "=<": "<=", "<>": "!="}
_NUMBER = re.compile(r"\d+(?:\.\d+)?(?:[eE][+-]?\d+)?", re.ASCII)
# '-' is its own token so that `x>=-1` reads as `x >= -1`, and `->` is matched before it.
_SCANNER = re.compile(r"""
    (?P<space>\s+)
  | (?P<comment>\#.*)
  | (?P<number>\d+(?:\.\d+)?(?:[eE][+-]?\d+)?[A-Za-z0-9_.]*)
  | (?P<name>[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)
  | (?P<arrow>->)
  | (?P<minus>-)
  | (?P<op>[=!<>~&|+*/%^@]+)
  | (?P<punct>[()\[\],:])
""", re.VERBOSE | re.ASCII)
_ESCAPES = {"\\": "\\", '"': '"', "'": "'", "n": "\n", "t": "\t"}
_CLOSERS = {")": "(", "]": "["}
_BRACKET_NAMES = {"(": "parentheses", "[": "brackets"}


def _scan_string(text: str, start: int, line: int) -> tuple[Token, int]:
    quote, pos, chars = text[start], start + 1, []
    while pos < len(text) and text[pos] != quote:
        if text[pos] == "\\":
            escape = text[pos + 1:pos + 2]
            if escape not in _ESCAPES:
                raise RuleSyntaxError(line, f"unknown escape '\\{escape}' in string {text[start:pos + 2]}",
                                      token=text[start:pos + 2])
            chars.append(_ESCAPES[escape])
            pos += 2
        else:
            chars.append(text[pos])
            pos += 1
    if pos >= len(text):
        raise RuleSyntaxError(line, f"unterminated string {text[start:].rstrip()}", token=text[start:])
    return Token("string", text[start:pos + 1], "".join(chars), line, start), pos + 1


def _number_token(text: str, line: int, column: int) -> Token:
    if not _NUMBER.fullmatch(text):
        raise RuleSyntaxError(line, f"bad number '{text}'", token=text)
    value = float(text) if any(c in text for c in ".eE") else int(text)
    if isinstance(value, float) and not math.isfinite(value):
        raise RuleSyntaxError(line, f"number out of range '{text}'", token=text)
    return Token("number", text, value, line, column)


def _op_token(text: str, line: int, column: int) -> Token:
    if text not in COMPARISONS:
        hint = _OPERATOR_HINTS.get(text)
        suffix = f" (did you mean '{hint}'?)" if hint else ""
        raise RuleSyntaxError(line, f"unknown operator '{text}'{suffix}", token=text)
    return Token("op", text, text, line, column)


def _make_token(kind: str, text: str, line: int, column: int) -> Token:
    if kind == "number":
        return _number_token(text, line, column)
    if kind == "op":
        return _op_token(text, line, column)
    return Token(kind, text, text, line, column)


def _track_brackets(token: Token, stack: list[Token]) -> None:
    if token.kind != "punct":
        return
    if token.text in _BRACKET_NAMES:
        stack.append(token)
    elif token.text in _CLOSERS:
        opener = _CLOSERS[token.text]
        if not stack:
            raise RuleSyntaxError(token.line, f"unbalanced {_BRACKET_NAMES[opener]}: unexpected '{token.text}' "
                                  f"at column {token.column + 1}", token=token.text)
        if stack[-1].text != opener:
            last = stack[-1]
            raise RuleSyntaxError(token.line, f"unbalanced {_BRACKET_NAMES[last.text]}: '{last.text}' at column "
                                  f"{last.column + 1} closed by '{token.text}'", token=token.text)
        stack.pop()


def tokenize_line(text: str, line: int) -> list[Token]:
    """The tokens of one line of rule text, ending with an ``eol`` token.

    Args:
        text: the line, without its line break.
        line: its 1-based number, for error messages.

    Raises:
        RuleSyntaxError: an unknown operator or character, a bad number, an unterminated string, or
            unbalanced parentheses or brackets.
    """
    tokens: list[Token] = []
    brackets: list[Token] = []
    pos = 0
    while pos < len(text):
        if text[pos] in "\"'":
            token, pos = _scan_string(text, pos, line)
        else:
            match = _SCANNER.match(text, pos)
            if match is None:
                raise RuleSyntaxError(line, f"unexpected character {text[pos]!r}", token=text[pos])
            pos = match.end()
            if match.lastgroup in ("space", "comment"):
                continue
            token = _make_token(match.lastgroup or "", match.group(), line, match.start())
        _track_brackets(token, brackets)
        tokens.append(token)
    if brackets:
        opener = brackets[-1]
        raise RuleSyntaxError(line, f"unbalanced {_BRACKET_NAMES[opener.text]}: '{opener.text}' at column "
                              f"{opener.column + 1} is never closed", token=opener.text)
    tokens.append(Token("eol", "", None, line, len(text)))
    return tokens


# ------------------------------------------------------------------------------------------ parser


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


class _Context(NamedTuple):
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


class _Parser:
    """Recursive descent over the tokens of one line; checks every name against the context as it goes."""

    def __init__(self, tokens: list[Token], context: _Context) -> None:
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


# ------------------------------------------------------------------------------------------ rule sets


def _resolve(target: str) -> str:
    return LANGGRAPH_END if target == END else target


def _knobs_model(knobs: Knobs | Mapping[str, Any] | None) -> Knobs:
    if knobs is None:
        return Knobs()
    if isinstance(knobs, Knobs):
        return knobs.model_copy(deep=True)  # a snapshot: later edits of the design do not move routes
    if isinstance(knobs, BaseModel):
        return Knobs.model_validate(knobs.model_dump())
    return Knobs.model_validate(dict(knobs))


def _lookup(path: tuple[str, ...], facts: Mapping[str, Any]) -> Any:
    try:
        return FieldRef(path).evaluate(facts)
    except _EvalError:
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
            except _EvalError as err:
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
        frozen_knobs = _knobs_model(knobs)
        knob_values = frozen_knobs.model_dump()

        def route(state: Any) -> str:
            # Same facts as facts_from_state, but the tool-log ones are computed only if a rule reads them.
            return self.route(source, _lazy_facts(state, frozen_knobs, knob_values))

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
    context = _Context(frozenset(nodes) - {LANGGRAPH_END, END}, frozenset(fields))
    rules: list[Rule] = []
    for number, raw in enumerate(text.split("\n"), start=1):
        tokens = tokenize_line(raw.rstrip("\r"), number)
        if tokens[0].kind != "eol":
            rules.append(_Parser(tokens, context).rule())
    _check_reachable(rules)
    return RuleSet(text, tuple(rules), context.nodes, context.fields)


# ------------------------------------------------------------------------------------------ facts


def _last_ai_has_no_tool_calls(messages: list[Any]) -> bool:
    last = messages[-1] if messages else None
    return isinstance(last, AIMessage) and not last.tool_calls


# Facts taken from the guards' own predicates, so the DSL and the Python routers never disagree on them.
# They walk the tool log, so they are computed only when a rule reads them.
_DERIVED: Mapping[str, Callable[[Mapping[str, Any], Knobs], Any]] = {
    "quota_exceeded": guards.quota_exceeded,
    "repeated_invalid_call": lambda state, knobs: guards.repeated_invalid_call(state),
    "invalid_calls": lambda state, knobs: guards.invalid_calls(state),
    "invented_argument": lambda state, knobs: guards.invented_argument(state),
    "duplicate_blocked": lambda state, knobs: guards.duplicate_blocked(state),
    "no_progress": guards.no_progress,
    "stop_reason": guards.stop_reason,
    "handoff_allowed": lambda state, knobs: guards.handoff_allowed(state),
    "uncertain_change": lambda state, knobs: guards.uncertain_change(state),
}


class _LazyFacts(Mapping[str, Any]):
    """The facts of one routing decision: plain values up front, derived ones on first read."""

    __slots__ = ("_base", "_cache", "_knobs", "_state")

    def __init__(self, base: dict[str, Any], state: Mapping[str, Any], knobs: Knobs) -> None:
        self._base, self._state, self._knobs, self._cache = base, state, knobs, {}

    def __getitem__(self, key: str) -> Any:
        if key in self._base:
            return self._base[key]
        if key not in self._cache:
            self._cache[key] = _DERIVED[key](self._state, self._knobs)  # KeyError for an unknown name
        return self._cache[key]

    def __iter__(self) -> Iterator[str]:
        yield from self._base
        yield from _DERIVED

    def __len__(self) -> int:
        return len(self._base) + len(_DERIVED)


def _plain_facts(state: Mapping[str, Any]) -> dict[str, Any]:
    stats = dict(state.get("turn_stats") or {})
    check = state.get("check") or {}
    user = dict(state.get("user") or {})
    return {
        "intent": state.get("intent"),
        "intent_kind": state.get("intent_kind"),
        "intent_confidence": state.get("intent_confidence"),
        "phase": state.get("phase"),
        "turn": state.get("turn") or 0,
        "missing_slots": len(state.get("missing_slots") or ()),
        "slots": dict(state.get("slots") or {}),
        "user": {"id": user.get("id"), "role": user.get("role"), **user},
        "turn_stats": stats,
        "totals": dict(state.get("totals") or {}),
        **{name: stats.get(name) or 0 for name in _COUNTERS},
        "unknown_streak": state.get("unknown_streak") or 0,
        "check_ok": bool(check.get("ok", True)),
        "busy": bool(check.get("retryable", False)),
        "last_ai_has_no_tool_calls": _last_ai_has_no_tool_calls(state.get("messages") or []),
    }


def _lazy_facts(state: Mapping[str, Any], knobs: Knobs, knob_values: Mapping[str, Any]) -> _LazyFacts:
    return _LazyFacts({**_plain_facts(state), **knob_values}, state, knobs)


def facts_from_state(state: Mapping[str, Any], knobs: Knobs | Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The values rules read, from the graph state and the design's knobs.

    Args:
        state: the graph state (a ``HarnessState``); absent keys read as empty or zero.
        knobs: the design's knobs (defaults when None); each knob is a fact under its own name.

    Returns:
        Every name in ``STATE_FIELDS`` and ``KNOB_FIELDS``. Counters are ints, ``missing_slots`` is the
        number of missing slots, ``check_ok``/``busy``/``last_ai_has_no_tool_calls`` are bools, and
        ``quota_exceeded``/``stop_reason`` are the guards' reasons (a string) or None.
    """
    knobs = knobs if isinstance(knobs, Knobs) else _knobs_model(knobs)
    return dict(_lazy_facts(state, knobs, knobs.model_dump()))
