"""Amounts a reply states, written with their currency ("131.0" -> "131.00 USD").

A tool result's fractional numbers are amounts in the domain's currency (``Domain.currency``; a domain
without one is left alone). A reply that copies such a number bare gets it with two decimals and the
currency; a number already written with a currency code or sign is left as it is.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import Any

_CURRENCY_NEAR = re.compile(r"^\s?(?:[A-Z]{3}\b|[$€£¥元]|美元|欧元|英镑|日元|港元|人民币)")  # "112.49 美元" has one


def _floats(results: Sequence[Any]) -> set[float]:
    out: set[float] = set()

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)
        elif isinstance(node, float):
            out.add(node)

    for r in results:
        walk(r)
    return out


def _forms(value: float) -> Iterable[str]:
    """How a model copies the number: as the result printed it, or with two decimals."""
    return dict.fromkeys((repr(value), f"{value:.2f}", f"{value:g}" if value != int(value) else repr(value)))


@lru_cache(maxsize=4096)
def _amount_pattern(form: str) -> re.Pattern[str]:
    # One per number a result holds: compiled once, not on every reply that mentions it.
    return re.compile(rf"(?<![\d.$€£¥]){re.escape(form)}(?![\d])(?!\.\d)")


def with_currency(text: str, results: Sequence[Any], currency: str) -> str:
    if not currency or not text:
        return text
    for value in sorted(_floats(results), key=lambda v: -len(repr(v))):
        for form in _forms(value):
            pattern = _amount_pattern(form)

            def add(m: re.Match[str], value: float = value) -> str:
                rest = m.string[m.end():]
                return m.group(0) if _CURRENCY_NEAR.match(rest) else f"{value:.2f} {currency}"

            text = pattern.sub(add, text)
    return text
