"""What one model step is offered, before the design's filters set anything aside: listings, each a small
object that offers for the message or passes to the next, composed once from a design's knobs
(:func:`listings_for`), in the spirit of Pydantic AI's toolset wrappers.

- :class:`EveryTool` (``tool_offer: all``): every tool the role may use, on every call (a framework's default).
- :class:`RequestsInOrder`: a message of several requests offers the tools of the first one not served yet.
- :class:`UnsureCandidates` (``unsure_offer``): the intent step could not tell, so every candidate's tools.
- :class:`RouteTools`: the routed intent's tools.
- :class:`RelevantTools`: a domain of tools alone has one open task; its tools ranked by fit, capped.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from lg_harness.memory.context import request_now
from lg_harness.nodes.offer import relevant_offer

if TYPE_CHECKING:
    from lg_harness.core.knobs import Knobs
    from lg_harness.core.state import HarnessState
    from lg_harness.nodes.base import NodeDeps
    from lg_harness.tools.registry import ToolSpec


class ListingHost(Protocol):
    """What listings ask of the action step that runs them."""

    deps: NodeDeps

    def route_tools(self, intent: str | None, goal: list[str]) -> list[str]: ...


class Listing(Protocol):
    def __call__(self, host: ListingHost, state: HarnessState, role: str) -> Sequence[ToolSpec] | None: ...


class EveryTool:
    def __call__(self, host: ListingHost, state: HarnessState, role: str) -> Sequence[ToolSpec] | None:
        return host.deps.registry.offer(None, role)


@dataclass(frozen=True)
class RequestsInOrder:
    cap: int

    def __call__(self, host: ListingHost, state: HarnessState, role: str) -> Sequence[ToolSpec] | None:
        now = request_now(state)
        if now is None:
            return None
        asked = state.get("request_intents") or []
        groups = state.get("goal_groups") or [[] for _ in asked]
        goal = next((g for i, g in zip(asked, groups, strict=False) if i == now), [])
        return host.deps.registry.offer(host.route_tools(now, goal), role)[: self.cap]


@dataclass(frozen=True)
class UnsureCandidates:
    cap: int

    def __call__(self, host: ListingHost, state: HarnessState, role: str) -> Sequence[ToolSpec] | None:
        unsure = state.get("offer_intents") or []
        if not unsure:
            return None
        goal = state.get("goal_tools") or []
        names = list(dict.fromkeys(t for i in unsure for t in host.route_tools(i, goal)))
        return host.deps.registry.offer(names, role)[: self.cap]


@dataclass(frozen=True)
class RouteTools:
    cap: int

    def __call__(self, host: ListingHost, state: HarnessState, role: str) -> Sequence[ToolSpec] | None:
        if not host.deps.domain.intents:
            return None
        names = host.route_tools(state.get("intent"), state.get("goal_tools") or [])
        return host.deps.registry.offer(names, role)[: self.cap]


@dataclass(frozen=True)
class RelevantTools:
    cap: int

    def __call__(self, host: ListingHost, state: HarnessState, role: str) -> Sequence[ToolSpec] | None:
        # the tools the customer just confirmed a change of are always offered (the yes only runs them)
        confirmed = [c["name"] for c in (state.get("confirmed_change") or {}).get("calls") or []]
        return relevant_offer(state.get("messages") or [], host.deps.registry.offer(None, role), self.cap,
                              keep=confirmed, embedder=host.deps.embedder)


def listings_for(knobs: Knobs) -> tuple[Listing, ...]:
    """The design's listings, tried in order; the first that offers for the message decides."""
    if knobs.tool_offer == "all":  # registered once at start, every tool on every call
        return (EveryTool(),)
    cap = knobs.max_tools_offered
    unsure = (UnsureCandidates(max(knobs.unsure_offer, cap)),) if knobs.unsure_offer else ()
    return (RequestsInOrder(cap), *unsure, RouteTools(cap), RelevantTools(cap))


def listed(host: ListingHost, listings: Sequence[Listing], state: HarnessState, role: str) -> list[ToolSpec]:
    return list(next((tools for listing in listings if (tools := listing(host, state, role)) is not None), []))
