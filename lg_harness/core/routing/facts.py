"""The facts a rule may name: taken from the graph state, the guards' predicates and the design's knobs.

The guards' facts (``stop_reason``, ``quota_exceeded``, ...) come from the guards' own functions, so a rule
and a node that asks a guard never disagree; they walk the tool log, so they are computed only when a rule
reads them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, cast

from pydantic import BaseModel

from lg_harness.core.knobs import Knobs
from lg_harness.core.routing import guards

if TYPE_CHECKING:  # the state schema loads LangGraph's graph; facts only read dicts (as the guards do)
    from lg_harness.core.state import HarnessState

_COUNTERS = ("rounds", "tool_calls", "tool_errors", "model_calls", "input_tokens", "output_tokens",
             "regenerations")
# Facts a rule may name, besides the knobs. Keep in step with facts_from_state (a test checks it).
STATE_FIELDS: frozenset[str] = frozenset({
    "intent", "intent_kind", "intent_confidence", "phase", "turn", "missing_slots", "slots", "user", "turn_stats", "totals",
    *_COUNTERS, "unknown_streak", "check_ok", "busy", "last_ai_has_no_tool_calls",
    "quota_exceeded", "repeated_invalid_call", "invalid_calls", "invented_argument", "duplicate_blocked",
    "no_progress", "stop_reason", "handoff_allowed", "uncertain_change", "goal_reached",
})
KNOB_FIELDS: frozenset[str] = frozenset(Knobs.model_fields)
# Dict-valued facts whose members rules may reach with dots (``user.role``, ``slots.order_id``).
NESTED_FIELDS: tuple[str, ...] = ("slots", "totals", "turn_stats", "user")
# A name ending in ``.*`` admits any dotted path below it; that is how a field set says "this is a dict".
KNOWN_FIELDS: frozenset[str] = STATE_FIELDS | KNOB_FIELDS | {f"{name}.*" for name in NESTED_FIELDS}


def knobs_snapshot(knobs: Knobs | Mapping[str, Any] | None) -> Knobs:
    """The design's knobs as a ``Knobs`` of their own (defaults when None), so a router stays pure."""
    if knobs is None:
        return Knobs()
    if isinstance(knobs, Knobs):
        return knobs.model_copy(deep=True)  # a snapshot: later edits of the design do not move routes
    if isinstance(knobs, BaseModel):
        return Knobs.model_validate(knobs.model_dump())
    return Knobs.model_validate(dict(knobs))


# Facts taken from the guards' own predicates, so the DSL and the Python routers never disagree on them.
# They walk the tool log, so they are computed only when a rule reads them.
_DERIVED: Mapping[str, Callable[[HarnessState, Knobs], Any]] = {
    "quota_exceeded": guards.quota_exceeded,
    "repeated_invalid_call": lambda state, knobs: guards.repeated_invalid_call(state),
    "invalid_calls": lambda state, knobs: guards.invalid_calls(state),
    "invented_argument": lambda state, knobs: guards.invented_argument(state),
    "duplicate_blocked": lambda state, knobs: guards.duplicate_blocked(state),
    "no_progress": guards.no_progress,
    "goal_reached": guards.goal_reached,
    "stop_reason": guards.stop_reason,
    "handoff_allowed": lambda state, knobs: guards.handoff_allowed(state),
    "uncertain_change": lambda state, knobs: guards.uncertain_change(state),
}


class _LazyFacts(Mapping[str, Any]):
    """The facts of one routing decision: plain values up front, derived ones on first read."""

    __slots__ = ("_base", "_cache", "_knobs", "_state")

    def __init__(self, base: dict[str, Any], state: Mapping[str, Any], knobs: Knobs) -> None:
        # The graph state, read by the guards as a HarnessState: every key of it is optional and read with .get
        self._state = cast("HarnessState", state)
        self._base, self._knobs, self._cache = base, knobs, {}

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
    guarded = cast("HarnessState", state)
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
        "check_ok": guards.check_ok(guarded),
        "busy": guards.busy(guarded),
        "last_ai_has_no_tool_calls": guards.answered_in_words(guarded),
    }


def lazy_facts(state: Mapping[str, Any], knobs: Knobs, knob_values: Mapping[str, Any]) -> _LazyFacts:
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
    knobs = knobs if isinstance(knobs, Knobs) else knobs_snapshot(knobs)
    return dict(lazy_facts(state, knobs, knobs.model_dump()))
