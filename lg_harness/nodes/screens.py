"""What a call meets before it runs: screens, each a small object that answers a call in place of the tool
(not offered, forbidden by the customer, unreadable, repeated, invented, awaiting a yes) or lets it pass.

A design's screens are composed once from its knobs (:func:`screens_for`), in the spirit of Pydantic AI's
toolset wrappers, so the action step asks no knob per call: a design without entity alignment simply has no
``InventedArgument`` screen. The action step runs them in order; the first answer wins.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from lg_harness.core.knobs import Knobs
from lg_harness.llm.text_tools import PARSE_ERROR_TOOL
from lg_harness.memory.constraints import forbidden_tools
from lg_harness.memory.known_ids import copied_examples, invented_args, ungrounded_values, unsaid_names
from lg_harness.obs.tracing import span_event
from lg_harness.tools.executor import ToolOutcome

if TYPE_CHECKING:
    from lg_harness.core.domain import Domain
    from lg_harness.core.state import HarnessState
    from lg_harness.tools.registry import ToolRegistry


class ScreenHost(Protocol):
    """What screens ask of the action step that runs them."""

    def well_formed(self, call: Mapping[str, Any]) -> bool: ...
    def entity_args(self, name: str) -> dict[str, str]: ...
    def lookup_showing(self, args: list[str], caller: str, offered: frozenset[str] | None) -> str | None: ...
    def described(self, name: str) -> str: ...


@dataclass(frozen=True)
class Screening:
    """One round as screens read it: the state, the calls this message already made (by signature), the
    tools offered, whether the user's yes confirmed these calls, and the action step."""

    state: HarnessState
    done: Mapping[str, ToolOutcome]
    offered: frozenset[str] | None
    confirmed: bool
    host: ScreenHost


class Screen(Protocol):
    def __call__(self, s: Screening, call: Mapping[str, Any], sig: str) -> ToolOutcome | None: ...


def failed(call: Mapping[str, Any], error_type: str, exception: str, error: str) -> ToolOutcome:
    """The outcome a screen gives instead of running ``call``."""
    return ToolOutcome(call_id=call.get("id") or "", name=call["name"], args=call.get("args") or {},
                       status="error", error_type=error_type, exception=exception, error=error)


class NotOffered:
    """Masking is enforced where tools run, not only in what the model is shown: text in a result or a
    product description may name any tool, and the model may call it."""

    def __call__(self, s: Screening, call: Mapping[str, Any], sig: str) -> ToolOutcome | None:
        if s.offered is None or call["name"] in s.offered or call["name"] == PARSE_ERROR_TOOL:
            return None
        span_event("tool.refused", tool=call["name"], reason="not_offered")
        return failed(call, "not_offered", "ToolNotOffered",
                      f"{call['name']} is not available for this request; use only the tools offered "
                      f"({', '.join(sorted(s.offered))}) or answer the customer")


@dataclass(frozen=True)
class CustomerConstraints:
    """A tool the customer's pinned constraints forbid ("don't cancel anything") is not run."""

    words: Any

    def __call__(self, s: Screening, call: Mapping[str, Any], sig: str) -> ToolOutcome | None:
        rule = forbidden_tools(s.state.get("constraints") or [], self.words).get(call["name"])
        if rule is None:
            return None
        return failed(call, "constraint", "ConstraintViolation", f"the customer said: {rule} Do not call it.")


class Unreadable:
    """A text call the harness could not read: the model gets one repair try."""

    def __call__(self, s: Screening, call: Mapping[str, Any], sig: str) -> ToolOutcome | None:
        if call["name"] != PARSE_ERROR_TOOL:
            return None
        args: Mapping[str, Any] = call.get("args") or {}
        return failed(call, "validation", "TextCallParseError", str(args.get("error", "")))


class BlockRepeats:
    """The identical call again in one message is refused: asking again will not change the answer."""

    def __call__(self, s: Screening, call: Mapping[str, Any], sig: str) -> ToolOutcome | None:
        if sig not in s.done:
            return None
        return failed(call, "duplicate_call", "DuplicateCall",
                      "identical call already made for this message; use its result above")


class ReuseRepeats:
    """The identical call again in one message gets the earlier outcome, without running the tool."""

    def __call__(self, s: Screening, call: Mapping[str, Any], sig: str) -> ToolOutcome | None:
        if sig not in s.done:
            return None
        return dataclasses.replace(s.done[sig], call_id=call.get("id") or "", attempts=0, timings_ms={"reused": 1.0})


class InventedIds:
    """An identifier argument no one gave and no result showed: a lookup on offer that shows it is named (the
    model's repair try), else the customer is asked."""

    def __call__(self, s: Screening, call: Mapping[str, Any], sig: str) -> ToolOutcome | None:
        if not s.host.well_formed(call):
            return None
        bad = invented_args(call, s.state, s.host.entity_args(call["name"]))
        if not bad:
            return None
        if (lookup := s.host.lookup_showing(bad, call["name"], s.offered)) is not None:
            # an id a lookup on offer shows (a loan id, by the member's email)
            return failed(call, "validation", "InventedArgument",
                          f"{', '.join(bad)} not given by the customer or found in any result; call {lookup} "
                          "first: it shows them")
        return failed(call, "invented_argument", "InventedArgument",
                      f"{', '.join(bad)} not given by the customer or found in any result; ask the customer")


class UngroundedFigures:
    """A figure or a name no one wrote: the model's repair try, with the tools offered (another tool may not
    need it: "what time is it" is the current time, not a conversion of a time nobody gave; "UTC" for "the
    time in Tokyo" is another place than the one asked about)."""

    def __call__(self, s: Screening, call: Mapping[str, Any], sig: str) -> ToolOutcome | None:
        if not s.host.well_formed(call):
            return None
        ids = s.host.entity_args(call["name"])
        made_up = ungrounded_values(call, s.state, ids)
        args: Mapping[str, Any] = call.get("args") or {}
        if made_up:
            return failed(call, "validation", "UngroundedValue",
                          "; ".join(f"{k}: {args[k]!r} was not said by the customer or found in any result"
                                    for k in made_up) + "; call a tool whose arguments the customer gave, or ask")
        if copied := copied_examples(call, s.state, s.host.described(call["name"]), ids):
            # the tool's own example ("printer shows offline"), not the request: the same tool with the
            # customer's words is the repair, so it stays on offer
            return failed(call, "validation", "UnsaidName",
                          "; ".join(f"{k}: {args[k]!r} is the tool's own example, not what the customer asked"
                                    for k in copied) + "; use the customer's words")
        if names := unsaid_names(call, s.state, ids):
            # the same tool with the value they named is the repair: it is not set aside (``goal_stop``)
            return failed(call, "validation", "UnsaidName",
                          "; ".join(f"{k}: {args[k]!r} is not what the customer named ({', '.join(said)})"
                                    for k, said in names.items()) + "; use a value for what they named")
        return None


@dataclass(frozen=True)
class AwaitYes:
    """A change is put to the customer before it runs (the handoff tool aside: asking for a human is its own
    consent). Only a well-formed call is put to them: a malformed one gets its repair try first."""

    registry: ToolRegistry
    handoff_tool: str | None

    def wants(self, call: Mapping[str, Any]) -> bool:
        spec = self.registry.get(call["name"])
        return spec is not None and spec.changes_state and call["name"] != self.handoff_tool

    def __call__(self, s: Screening, call: Mapping[str, Any], sig: str) -> ToolOutcome | None:
        if s.confirmed or not self.wants(call) or not s.host.well_formed(call):
            return None
        return failed(call, "needs_confirmation", "AwaitingConfirmation",
                      "not run yet: the customer is asked to confirm this change first")


def screens_for(knobs: Knobs, domain: Domain, registry: ToolRegistry) -> tuple[Screen, ...]:
    """The screens a design's knobs ask for, in the order they are tried."""
    screens: list[Screen] = [NotOffered()]
    if knobs.enforce_constraints:
        screens.append(CustomerConstraints(domain.constraint_words))
    screens.append(Unreadable())
    repeats = {"block": BlockRepeats, "reuse": ReuseRepeats}.get(knobs.identical_calls)
    if repeats is not None:
        screens.append(repeats())
    if knobs.align_entities:
        screens += [InventedIds(), UngroundedFigures()]
    if knobs.confirm_changes:
        screens.append(AwaitYes(registry, domain.handoff.tool))
    return tuple(screens)
