"""The world a scenario leaves behind: what changed in the domain's backends, and whether it was what the
customer asked for.

A call that "succeeded" says nothing about what it wrote: an order id in an address's city is a successful
call. So an evaluation cell snapshots every backend that can (``SeededDB.snapshot``) before the first
message and after each one, and keeps the differences in the run record; :func:`judge_outcome` compares
the end state with the scenario's ``outcome`` (``evals.scenario.Outcome``): every listed change must be
there with the listed values, and nothing else may change. Each backend declares its bookkeeping (tables,
columns and rows no customer asks for: idempotency records, timestamps, a handoff's queue entry), which is
never counted as a change, though a scenario that lists one still requires it. Nothing here knows a domain.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

Change = dict[str, Any]


class World:
    """Watches one cell's backends: the changes since the start, and since the last look."""

    def __init__(self, backends: Mapping[str, Any]) -> None:
        self.backends = {name: b for name, b in backends.items() if callable(getattr(b, "snapshot", None))}
        self.start = {name: b.snapshot() for name, b in self.backends.items()}
        self.last = dict(self.start)
        self.seen = {name: b.changes_made() for name, b in self.backends.items()}

    def turn_changes(self) -> list[Change]:
        """The changes since the previous call (or the start), bookkeeping included and flagged."""
        out: list[Change] = []
        for name, backend in self.backends.items():
            moved = backend.changes_made()
            if moved == self.seen[name] and moved >= 0:
                continue  # nothing was written through this connection: no snapshot needed
            self.seen[name] = moved
            now = backend.snapshot()
            out += diff(self.last[name], now, type(backend), name)
            self.last[name] = now
        return out

    def changes(self) -> list[Change]:
        """Every change from the start to the last look."""
        return [c for name, backend in self.backends.items()
                for c in diff(self.start[name], self.last[name], type(backend), name)]


# --------------------------------------------------------------------------------------------- the diff


def diff(before: Mapping[str, Any], after: Mapping[str, Any], declares: Any, backend: str = "") -> list[Change]:
    """Inserts, deletes and updates from one snapshot to the next. Each change names its ``table``,
    ``op``, ``key`` (the row's primary key), ``row`` (the row after, or before a delete) and, for an
    update, ``changed`` (column -> [old, new]); ``counted`` is False for the backend's bookkeeping."""
    out: list[Change] = []
    for table in sorted({*before["tables"], *after["tables"]}):
        old, new = before["tables"].get(table, {}), after["tables"].get(table, {})
        key_cols = after["keys"].get(table) or before["keys"].get(table) or []
        hidden = after.get("rowid", {}).get(table)
        for key in sorted({*old, *new}):
            change = _row_change(old.get(key), new.get(key), hidden)
            if change is None:
                continue
            row = change["row"]
            change.update(table=table, backend=backend,
                          key={c: row.get(c) for c in key_cols if c in row})
            columns = _bookkeeping_columns(change["table"], declares)
            if change["op"] == "update":
                mine = set(change["changed"])
                change["bookkeeping"] = sorted(mine if "*" in columns else mine & columns)
            change["counted"] = _counted(change, declares, columns)
            out.append(change)
    return out


def _row_change(old: Mapping[str, Any] | None, new: Mapping[str, Any] | None, hidden: str | None) -> Change | None:
    if old is None and new is not None:
        # the id SQLite assigned is nobody's value: an inserted row is judged on its other columns
        return {"op": "insert", "row": {k: v for k, v in new.items() if k != hidden}}
    if new is None and old is not None:
        return {"op": "delete", "row": dict(old)}
    changed = {k: [old[k], new[k]] for k in new if old.get(k) != new[k]}  # type: ignore[index, union-attr]
    return {"op": "update", "row": dict(new), "changed": changed} if changed else None  # type: ignore[arg-type]


def _bookkeeping_columns(table: str, declares: Any) -> set[str]:
    return set((getattr(declares, "BOOKKEEPING", {}) or {}).get(table, ()))


def _counted(change: Change, declares: Any, columns: set[str]) -> bool:
    """Whether a change is the world's (not bookkeeping): the backend class's ``BOOKKEEPING`` columns and
    ``BOOKKEEPING_ROWS``, see ``tools.backend.SeededDB``."""
    if "*" in columns:
        return False
    rows = (getattr(declares, "BOOKKEEPING_ROWS", {}) or {}).get(change["table"])
    if rows is not None and all(change["row"].get(k) == v for k, v in rows.items()):
        return False
    return change["op"] != "update" or bool(set(change["changed"]) - columns)


def counted(changes: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    return [c for c in changes if c.get("counted", True)]


# ------------------------------------------------------------------------------------------- judging


def value_matches(expected: Any, actual: Any) -> bool:
    """A scenario's value against the stored one: a literal (strings compared after trimming, numbers
    numerically) or a matcher ``{any: true}``, ``{contains: text}``, ``{one_of: [...]}``."""
    if isinstance(expected, Mapping):
        if "any" in expected:
            present = actual is not None and str(actual).strip() != ""
            return present == bool(expected["any"])
        if "contains" in expected:
            return actual is not None and str(expected["contains"]).casefold() in str(actual).casefold()
        if "one_of" in expected:
            return any(value_matches(option, actual) for option in expected["one_of"])
        raise ValueError(f"unknown value matcher {dict(expected)}; use any, contains or one_of")
    if isinstance(expected, bool | int | float) and not isinstance(expected, str):
        number = _number(actual)
        return number is not None and math.isclose(float(expected), number, rel_tol=1e-9, abs_tol=1e-9)
    if expected is None:
        return actual is None
    return actual is not None and str(expected).strip() == str(actual).strip()


def _number(value: Any) -> float | None:
    if isinstance(value, bool | int | float):
        return float(value)
    try:
        return float(str(value).strip())
    except (TypeError, ValueError):
        return None


def _fits(expected: Any, actual: Mapping[str, Any]) -> bool:
    """Whether one actual change is what one expected change describes."""
    if expected.table != actual["table"] or expected.op != actual["op"]:
        return False
    row = actual["row"]
    if expected.op == "insert":
        return all(value_matches(v, row.get(k)) for k, v in (expected.row or {}).items())
    if not all(value_matches(v, row.get(k)) for k, v in (expected.key or {}).items()):
        return False
    if expected.op == "delete":
        return True
    wanted = expected.set or {}
    if not all(value_matches(v, row.get(k)) for k, v in wanted.items()):
        return False
    # no other column of the row may change, bookkeeping aside (an uncounted change changed only that)
    return set(actual.get("changed", {})) <= set(wanted) | set(actual.get("bookkeeping") or ())


def judge_outcome(changes: Sequence[Mapping[str, Any]], outcome: Any) -> dict[str, Any]:
    """Whether the world ended as ``outcome`` says: each expected change matched by its own actual change,
    and every counted change matched by one.

    Returns:
        ``passed``, ``missing`` (expected changes not found, as written), ``wrong`` (counted changes no
        expectation accounts for: extra writes and writes with the wrong values; an ``allowed`` change of the
        outcome is not wrong) and ``matched``.
    """
    expected = list(outcome.changes)
    actual = list(changes)
    pairs = _assign(expected, actual)
    missing = [e.model_dump(exclude_none=True) for i, e in enumerate(expected) if i not in pairs]
    left = [c for j, c in enumerate(actual) if j not in set(pairs.values()) and c.get("counted", True)]
    tolerated = set(_assign(list(getattr(outcome, "allowed", None) or []), left).values())
    wrong = [_brief(c) for j, c in enumerate(left) if j not in tolerated]
    return {"passed": not missing and not wrong, "missing": missing, "wrong": wrong, "matched": len(pairs)}


def _assign(expected: Sequence[Any], actual: Sequence[Mapping[str, Any]]) -> dict[int, int]:
    """A maximum matching of expected to actual changes (Kuhn's augmenting paths; the lists are short)."""
    fits = [[j for j, a in enumerate(actual) if _fits(e, a)] for e in expected]
    owner: dict[int, int] = {}

    def place(i: int, seen: set[int]) -> bool:
        for j in fits[i]:
            if j in seen:
                continue
            seen.add(j)
            if j not in owner or place(owner[j], seen):
                owner[j] = i
                return True
        return False

    for i in range(len(expected)):
        place(i, set())
    return {i: j for j, i in owner.items()}


def _brief(change: Mapping[str, Any]) -> dict[str, Any]:
    out = {"table": change["table"], "op": change["op"], "key": change.get("key")}
    if change["op"] == "update":
        out["changed"] = change.get("changed")
    else:
        out["row"] = change.get("row")
    return out
