"""What a reply may claim about a tool result, as a domain declares it (the fact check reads these).

A ``Claim`` is a phrase a reply uses to state a fact ("in stock", "delivered", "已发货") and the test a
result field must pass for the phrase to be true. The core finds which record of this message's tool
results a sentence is about (by the record's own values: names, ids, colours) and checks the phrase
against that record; the domain says only which words mean what.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Claim:
    """Phrases (any language) stating one fact, the result keys it is about, and when it holds.

    Attributes:
        words: The phrases, matched case-insensitively; the longest phrase of all claims wins where two
            overlap ("out of stock" before "in stock", "not available" before "available").
        fields: Result keys the fact is read from (the first one a record has).
        holds: The field's value -> whether the phrase is true of it.
        says: How a corrected reply states the fact when this claim holds (default: its first word).
    """

    words: tuple[str, ...]
    fields: tuple[str, ...]
    holds: Callable[[Any], bool]
    says: str = ""

    @property
    def statement(self) -> str:
        return self.says or self.words[0]

    def true_of(self, value: Any) -> bool:
        """``holds``, False where its test was written for another kind of value (a number's test on a word)."""
        try:
            return bool(self.holds(value))
        except Exception:  # noqa: BLE001 - a domain's test meeting a value it was not written for
            return False


def equals(value: str) -> Callable[[Any], bool]:
    """A test for a categorical field: the value, compared case- and separator-insensitively."""
    want = value.lower().replace("_", " ")
    return lambda v: isinstance(v, str) and v.lower().replace("_", " ") == want


def positive(v: Any) -> bool:
    return bool(v) and not (isinstance(v, int | float) and v <= 0)


def none_left(v: Any) -> bool:
    return not positive(v)
