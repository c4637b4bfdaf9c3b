"""The fault of an answer that misstates one value of a tool result (profile key ``misstate_result``).

Small models do it measurably: given a result and the question, the answer says another stock level, a
neighbouring status, a shifted date or a rounded amount. Here one value the answer would state is changed
before the answer is written, chosen by the call's dice among those whose change shows in the words:

- a count or quantity (an integer): a few more;
- an amount (a decimal number): a few percent more;
- a date or time (ISO text): a few days later;
- a state (a text value): another value the same key has elsewhere in the results, or that a tool's
  schema lists for a parameter of that name, else another common state word ("shipped" for "delivered").

Identifiers, names and flags are left alone: those are copied, not restated. Everything is read from the
result's shape and the offered tool schemas, as a model reads them; nothing names a domain.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime, timedelta
from typing import Any

from simlm.args import ZH_VALUE, prop_schema, result_data
from simlm.faults import Dice

_ID_KEY = re.compile(r"(?:^|_)(?:id|ids|no|number|code|ref|sku|serial|tracking\w*|phone|email|pin)$", re.I)
_ISO = re.compile(r"^(\d{4}-\d{2}-\d{2})(T\d{2}:\d{2}(?::\d{2})?)?$")
_WORDY = re.compile(r"\s")  # free text (a description, a comment) is not a state

Path = tuple[Any, ...]


def _leaves(data: Any, path: Path = ()) -> Iterator[tuple[Path, Any]]:
    if isinstance(data, dict):
        for key, value in data.items():
            yield from _leaves(value, (*path, key))
    elif isinstance(data, list):
        for i, value in enumerate(data):
            yield from _leaves(value, (*path, i))
    else:
        yield path, data


def _key(path: Path) -> str:
    return next((str(p) for p in reversed(path) if isinstance(p, str)), "")


def _states(contents: Sequence[Any], tools: Sequence[dict[str, Any]]) -> dict[str, set[str]]:
    """Text values by key: what each key holds across the results, and what the schemas allow for it."""
    out: dict[str, set[str]] = {}
    for data in contents:
        for path, value in _leaves(data):
            if isinstance(value, str) and value and not _WORDY.search(value):
                out.setdefault(_key(path), set()).add(value)
    for tool in tools:
        props = ((tool.get("function") or {}).get("parameters") or {}).get("properties") or {}
        for name, prop in props.items():
            options = [o for o in prop_schema(prop).get("enum") or [] if isinstance(o, str)]
            out.setdefault(name, set()).update(options)
    return out


def _wrong(path: Path, value: Any, states: dict[str, set[str]], dice: Dice) -> Any:
    """Another value for this leaf, or None when it is not one an answer restates in its own words."""
    key = _key(path)
    if not key or _ID_KEY.search(key) or isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        return value + dice.randint(1, 3)
    if isinstance(value, float):
        return round(value * (1 + dice.randint(5, 25) / 100) + (0 if value else dice.randint(1, 20)), 2)
    if not isinstance(value, str):
        return None
    if m := _ISO.match(value):
        fmt = "%Y-%m-%d" + ("T%H:%M:%S" if m.group(2) and m.group(2).count(":") == 2 else "T%H:%M" if m.group(2) else "")
        try:
            return (datetime.strptime(value, fmt) + timedelta(days=dice.randint(1, 5))).strftime(fmt)
        except ValueError:
            return None
    others = sorted(states.get(key, set()) - {value})
    if not others and value.lower() in ZH_VALUE:  # a common state word: a neighbouring one of the same words
        others = sorted(set(ZH_VALUE) - {value.lower(), "canceled"})
    return dice.choice(others) if others and not _WORDY.search(value) else None


def _set(data: Any, path: Path, value: Any) -> Any:
    out = copy.deepcopy(data)
    node = out
    for step in path[:-1]:
        node = node[step]
    node[path[-1]] = value
    return out


def misstate(contents: list[str], tools: Sequence[dict[str, Any]], dice: Dice,
             render: Callable[[list[str]], str]) -> list[str]:
    """``contents`` with one value changed that ``render`` (the answer written from them) then states."""
    parsed = [result_data(c) for c in contents]
    states = _states([p for p in parsed if isinstance(p, dict | list)], tools)
    options = [(i, path, value) for i, data in enumerate(parsed) if isinstance(data, dict | list)
               for path, value in _leaves(data) if path]
    for j in range(len(options) - 1, 0, -1):  # shuffled by the call's dice
        k = dice.randint(0, j)
        options[j], options[k] = options[k], options[j]
    said = render(contents)
    for i, path, value in options:
        new = _wrong(path, value, states, dice)
        if new is None or new == value:
            continue
        changed = [*contents]
        changed[i] = json.dumps(_set(parsed[i], path, new), ensure_ascii=False)
        if render(changed) != said:
            return changed
    return contents
