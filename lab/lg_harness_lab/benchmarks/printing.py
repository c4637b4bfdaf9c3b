"""How every benchmark prints its figures: the table, then notes, then the targets met or not."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def print_report(figures: dict[str, Any], table: Callable[[dict[str, Any]], str],
                 notes: Callable[[dict[str, Any]], list[str]], targets: Callable[[dict[str, Any]], list[str]]) -> None:
    print(table(figures))
    for section in (notes(figures), targets(figures)):
        print()
        print("\n".join(section))
