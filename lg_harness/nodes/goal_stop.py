"""What the tool loop stops offering, composed once from the design (in the spirit of the call screens,
``lg_harness/nodes/screens.py``): filters that set tools aside for the next model step, and the goal stop.

Always on: a tool called with a value no one gave waits until another call works, and a search or list is not
offered when the message names the record a lookup takes. With ``answer_after_goal`` (``harness``) the
:class:`GoalStop` joins them: once the route's call delivered, nothing is offered and the next step is the
answer; a lookup on the way to a change, or one that read what it could, is not offered again; a tool refused
with a reason that names another tool on offer waits until another call works. A small model
offered the same tool after its result mostly repeats the call (64 of 65 turns of Qwen2.5-Coder-0.5B before
the goal stop; 12 of 13 steps where a lookup that worked was still offered).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from langchain_core.messages import AIMessage, ToolMessage

from lg_harness.core.knobs import Knobs
from lg_harness.core.routing.guards import goal_reached
from lg_harness.memory.context import last_human_text, split_turn

if TYPE_CHECKING:
    from lg_harness.core.domain import Domain
    from lg_harness.core.state import HarnessState
    from lg_harness.tools.executor import ToolOutcome
    from lg_harness.tools.registry import ToolRegistry

# What two texts share, in any language: Latin words of three letters or more, and Chinese characters.
_UNITS = re.compile(r"[a-z0-9]{3,}|[\u4e00-\u9fff]")
_COMMON = frozenset({"the", "and", "you", "your", "for", "with", "have", "has", "are", "was", "can", "how", "what",
                     "does", "any", "not"})


def _units(text: str) -> set[str]:
    return {u for u in _UNITS.findall(text.lower()) if u not in _COMMON}


def _strings(value: Any) -> str:
    if isinstance(value, Mapping):
        return " ".join(_strings(v) for v in value.values())  # pyright: ignore[reportUnknownVariableType]
    if isinstance(value, list | tuple):
        return " ".join(_strings(v) for v in value)  # pyright: ignore[reportUnknownVariableType]
    return value if isinstance(value, str) else ""


def in_customer_order(result: Any, text: str) -> Any:
    """``result`` with each list of records it holds put in order of how much of ``text`` (the customer's
    words) each record holds; ties keep the tool's order. A search ranks by the query the model wrote, and a
    small model writes a poor one ("家" for "你们家有空气炸锅卖不？") and then reads the first hit."""
    words = _units(text)
    if not words:
        return result

    def order(items: list[Any]) -> list[Any]:
        if len(items) < 2 or not all(isinstance(i, Mapping) for i in items):
            return items
        return sorted(items, key=lambda i: -len(words & _units(_strings(i))))

    if isinstance(result, list):
        return order(result)  # pyright: ignore[reportUnknownArgumentType]
    if isinstance(result, Mapping):
        return {k: order(v) if isinstance(v, list) else v for k, v in result.items()}  # pyright: ignore
    return result


@dataclass(frozen=True)
class Step:
    """One model step as the filters read it: the state, the records its message names by kind."""

    state: HarnessState
    named: Mapping[str, list[str]]

    def worked(self) -> set[str]:
        return {str(r.get("name")) for r in self.state.get("tool_log") or [] if r.get("status") == "ok"}


class SetAside(Protocol):
    """Names of ``tools`` not to offer this step. ``settles``: its asides may leave nothing to offer, and then
    the next step is the answer (other filters never empty the offer: something callable is kept)."""

    settles: bool

    def __call__(self, step: Step, tools: Sequence[Any]) -> set[str]: ...


def waiting(step: Step, fails: Callable[[Mapping[str, Any]], bool]) -> set[str]:
    """The tools whose last call since a call that worked failed as ``fails(record)`` says: they wait until
    another call works."""
    aside: set[str] = set()
    for r in step.state.get("tool_log") or []:
        if r.get("status") == "ok":
            aside.clear()
        elif fails(r):
            aside.add(str(r.get("name")))
    return aside


class MadeUpValues:
    """A tool called with a value no one gave (a figure, or an id a lookup on offer would show) waits until
    another call works, while another tool can serve: offered again, a small model repeats the same call (a
    conversion of a time nobody named; a renewal of a loan id it made up)."""

    settles = False

    def __call__(self, step: Step, tools: Sequence[Any]) -> set[str]:
        def made_up(r: Mapping[str, Any]) -> bool:
            return r.get("error_type") == "validation" and r.get("exception") in ("UngroundedValue", "InventedArgument")

        return waiting(step, made_up)


class RefusedUntilNamed:
    """A tool refused with a reason that names another tool on offer ("Identity must be verified first: ... call
    verify_identity") waits until another call works: the tool said what comes first. Offered again beside every
    other tool, the 0.5B model called ``request_access`` twice and never ``verify_identity``
    (``lab/reports/real-model-kept-prefix-dev-helpdesk``)."""

    settles = False

    def __call__(self, step: Step, tools: Sequence[Any]) -> set[str]:
        names = {t.name for t in tools}

        def names_another(r: Mapping[str, Any]) -> bool:
            said = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", str(r.get("error") or "")))
            return r.get("error_type") == "business" and bool(said & (names - {r.get("name")}))

        return waiting(step, names_another)


@dataclass(frozen=True)
class SearchWhenNamed:
    """The message names a record a lookup takes ("does P1001 have noise cancelling?"): the search or list that
    would only find its id is not offered; a small model otherwise searches and answers from the hits."""

    domain: Domain
    settles = False

    def __call__(self, step: Step, tools: Sequence[Any]) -> set[str]:
        mentioned = set(step.named)
        kinds = {t.name: set(self.domain.tool_entities(t).values()) for t in tools if not t.changes_state}
        if mentioned and any(mentioned & k for k in kinds.values()):
            return {name for name, k in kinds.items() if not k}
        return set()


def looked_up_before(state: HarnessState, tools: Sequence[Any]) -> set[str]:
    """The reading tools among ``tools`` that worked in an earlier message with arguments the task's slots all
    hold (the same record)."""
    slots = state.get("slots") or {}
    history, _ = split_turn(state.get("messages") or [])
    worked = {m.tool_call_id for m in history if isinstance(m, ToolMessage) and m.status == "success"}
    reads = {t.name for t in tools if not t.changes_state}
    return {c["name"] for m in history if isinstance(m, AIMessage) for c in m.tool_calls
            if c["name"] in reads and c.get("id") in worked and c["args"]
            and all(slots.get(k) == v for k, v in c["args"].items())}


def needs_nothing(spec: Any) -> bool:
    """A tool every argument of which is optional: the customer's own list (``list_my_tickets``), not a search."""
    return not any(f.is_required() for f in spec.args_model.model_fields.values())


@dataclass(frozen=True)
class PrerequisitesDone:
    """A lookup on the way to a change delivered: the change comes next, not the same lookup again; nor a
    lookup an earlier message made of the very record in hand (its status asked, then a return of it)."""

    settles = False

    def __call__(self, step: Step, tools: Sequence[Any]) -> set[str]:
        goal = {t.name for t in tools if t.name in set(step.state.get("goal_tools") or ()) and t.changes_state}
        done = step.worked()
        if not goal - done:
            return set()
        aside = {t.name for t in tools if t.name in done and t.name not in goal and not t.changes_state}
        return aside | looked_up_before(step.state, [t for t in tools if t.name not in goal])


@dataclass(frozen=True)
class GoalStop:
    """The route's call delivered, or a lookup read what it could: the next step is the answer."""

    domain: Domain
    registry: ToolRegistry
    knobs: Knobs
    settles = True

    def __call__(self, step: Step, tools: Sequence[Any]) -> set[str]:
        return self.read_enough(step, tools)

    def read_enough(self, step: Step, tools: Sequence[Any]) -> set[str]:
        """The reading tools that worked in this message and have read every record the message names of their
        kinds ("compare P1001 and P1002": the second product is still to read)."""
        seen: dict[str, set[str]] = {}
        for r in step.state.get("tool_log") or []:
            if r.get("status") == "ok":
                seen.setdefault(str(r.get("name")), set()).update(str(v) for v in (r.get("args") or {}).values())
        out: set[str] = set()
        for t in tools:
            if t.changes_state or t.name not in seen:
                continue
            wanted = {v for kind in self.domain.tool_entities(t).values() for v in step.named.get(kind, ())}
            if wanted <= seen[t.name]:
                out.add(t.name)
        return out

    def is_search(self, name: str) -> bool:
        """A lookup that takes free text no entity type names (a query): its hits are for the model to pick."""
        spec = self.registry.get(name)
        if spec is None or spec.changes_state:
            return False
        ids = self.domain.tool_entities(spec)
        return any(f.is_required() and f.annotation is str and arg not in ids
                   for arg, f in spec.args_model.model_fields.items())

    def ranked(self, outcome: ToolOutcome, state: HarnessState) -> ToolOutcome:
        """A search's hits in the order of the customer's words (the next step picks one of them by its id)."""
        if outcome.status != "ok" or not self.is_search(outcome.name):
            return outcome
        return dataclasses.replace(outcome, result=in_customer_order(
            outcome.result, last_human_text(state.get("messages") or [])))

    def refused_for_good(self, step: Step, goal: set[str]) -> bool:
        """The request's one goal tool said no on the merits ("Coupon code SUMMER25 does not exist"), naming no
        other tool to call first, and did not work later: that is the outcome, for the answer to tell with its
        reason. Offered on, the real model called the other candidates' lookups with made-up ids and the
        customer was asked for an order number about a coupon (shop test 0027)."""
        if len(step.state.get("request_intents") or []) > 1:
            return False  # several requests: each one's own goal decides (guards.goal_reached)
        names = set(self.registry.names())
        worked = step.worked()
        for r in step.state.get("tool_log") or []:
            if r.get("name") not in goal or r.get("name") in worked or r.get("error_type") != "business":
                continue
            said = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", str(r.get("error") or "")))
            if not said & (names - {r.get("name")}):
                return True
        return False

    def delivered(self, step: Step) -> bool:
        """The route's call delivered (``guards.goal_reached``) and, where it reads, has read every record of
        its kinds the message names. Or the route only reads, the message names none of its records, and the
        customer's own list came back ("how many tickets do I have?"): a lookup of one record would need an id
        the model picks from the list."""
        worked = step.worked()
        goal = [s for n in step.state.get("goal_tools") or () if (s := self.registry.get(n)) is not None]
        if self.refused_for_good(step, {s.name for s in goal}):
            return True
        if not goal_reached(step.state, self.knobs):
            kinds = {k for s in goal for k in self.domain.tool_entities(s).values()}
            lists = [s for n in worked if (s := self.registry.get(n)) is not None and not s.changes_state]
            return (bool(goal) and not any(s.changes_state for s in goal) and not set(step.named) & kinds
                    and any(needs_nothing(s) for s in lists))
        reads = [s for s in goal if s.name in worked and not s.changes_state]
        return {s.name for s in reads} <= self.read_enough(step, reads)


def set_aside_for(knobs: Knobs, domain: Domain, registry: ToolRegistry) -> tuple[SetAside, ...]:
    """The filters a design's knobs ask for."""
    filters: list[SetAside] = [MadeUpValues(), SearchWhenNamed(domain)]
    if knobs.answer_after_goal:
        filters += [PrerequisitesDone(), RefusedUntilNamed(), GoalStop(domain, registry, knobs)]
    return tuple(filters)


def step_of(state: HarnessState, domain: Domain) -> Step:
    return Step(state, domain.entities_in(last_human_text(state.get("messages") or [])))


def kept(step: Step, tools: Sequence[Any], filters: Sequence[SetAside]) -> list[Any]:
    """``tools`` less what the filters set aside; when that leaves nothing, nothing if a settling filter set
    something aside (the answer is next), else ``tools`` (something callable stays)."""
    aside: set[str] = set()
    settled = False
    for f in filters:
        names = f(step, tools)
        aside |= names
        settled = settled or (f.settles and bool(names))
    left = [t for t in tools if t.name not in aside]
    return left if left or settled else list(tools)
