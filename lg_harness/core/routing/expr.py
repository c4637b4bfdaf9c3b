"""The rule language's expression tree and its evaluator.

Nodes are small frozen dataclasses; ``evaluate`` walks them over a read-only mapping of facts. Attribute
access does not exist (``user.role`` is a mapping lookup) and only the functions in ``FUNCTIONS`` can be
called: nothing here hands text to Python's ``eval``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, NamedTuple

from lg_harness.core.routing.errors import EvalError


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
            raise EvalError(f"no fact '{head}' (facts_from_state provides every known field)")
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
    raise EvalError(f"len() of a {_type_name(value)}")


def _lower(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value.lower() if value is not None else None
    raise EvalError(f"lower() of a {_type_name(value)}")


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
        raise EvalError(f"cannot compare a {_type_name(left)} with a {_type_name(right)} using '{op}'")
    return {"<": left < right, "<=": left <= right, ">": left > right, ">=": left >= right}[op]


def _membership(item: Any, container: Any) -> bool:
    if container is None:
        return False
    if isinstance(container, str):
        if not isinstance(item, str):
            raise EvalError(f"'in' a string needs a string on the left, got a {_type_name(item)}")
        return item in container
    if not isinstance(container, list | tuple | set | frozenset | Mapping):
        raise EvalError(f"'in' needs a list, string or mapping on the right, got a {_type_name(container)}")
    try:
        return item in container
    except TypeError as err:  # an unhashable key looked up in a mapping
        raise EvalError(f"cannot look up a {_type_name(item)} in a mapping") from err


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
