"""What the model's arguments go through before screens see them: rewrites, each a small object, composed once
from a design's knobs (:func:`rewrites_for`), in the spirit of Pydantic AI's toolset wrappers. A design
without ``normalize_args`` simply has none, and its calls reach the screens as the model wrote them.

- :class:`CanonicalIds`: an identifier in its entity type's canonical form ("ord10134" -> "ORD-10134").
- :class:`CustomerSpelling`: a one-word free-text argument respelled as the customer wrote it
  (``memory.known_ids.customer_spelling``: "Lisbon" for the model's "Lisboa").
- :class:`CleanFreeText`: a change's free text without internals or the tool's own description.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from lg_harness.memory.known_ids import customer_spelling
from lg_harness.memory.messages import last_human_text
from lg_harness.nodes.customer_text import customer_safe, without_echoes

if TYPE_CHECKING:
    from lg_harness.core.domain import Domain
    from lg_harness.core.knobs import Knobs
    from lg_harness.core.state import HarnessState
    from lg_harness.tools.registry import ToolRegistry


class Rewrite(Protocol):
    def __call__(self, name: str, args: dict[str, Any], entity_args: dict[str, str],
                 state: HarnessState) -> dict[str, Any]: ...


def canonical_args(args: dict[str, Any], entity_args: dict[str, str], domain: Domain) -> dict[str, Any]:
    """Entity arguments in their type's canonical form ("ord10134" -> "ORD-10134"), lists item by item.

    Only a value that is unambiguously one identifier is rewritten; anything else is left for validation.
    """
    out = dict(args)
    for key, value in args.items():
        entity = domain.entity_type(entity_args.get(key, ""))
        if entity is None:
            continue
        if isinstance(value, str):
            out[key] = entity.canonicalize(value) or value
        elif isinstance(value, list):
            out[key] = [(entity.canonicalize(v) or v) if isinstance(v, str) else v for v in value]
    return out


@dataclass(frozen=True)
class CanonicalIds:
    domain: Domain

    def __call__(self, name: str, args: dict[str, Any], entity_args: dict[str, str],
                 state: HarnessState) -> dict[str, Any]:
        return canonical_args(args, entity_args, self.domain)


class CustomerSpelling:
    def __call__(self, name: str, args: dict[str, Any], entity_args: dict[str, str],
                 state: HarnessState) -> dict[str, Any]:
        return customer_spelling(args, state, entity_args)


@dataclass(frozen=True)
class CleanFreeText:
    """What a change records in words is for the people who read it: a free-text argument of a changing tool
    loses the clauses that name tools, harness notes or "the customer", and those copied from the tool's own
    description; with nothing left, the customer's own message stands in. On the real model a complaint
    was filed as "...the customer is unhappy... Do not use this tool for cancellations or returns (use those
    tools), or when the user asks for a human now (use transfer_to_human)"."""

    registry: ToolRegistry

    def __call__(self, name: str, args: dict[str, Any], entity_args: dict[str, str],
                 state: HarnessState) -> dict[str, Any]:
        spec = self.registry.get(name)
        if spec is None or not spec.changes_state:
            return args
        out = dict(args)
        for key, value in args.items():
            if key in entity_args or not isinstance(value, str) or len(value.split()) < 4 and len(value) < 12:
                continue
            kept = customer_safe(value, self.registry.names())
            kept = without_echoes(kept, [spec.description]) if kept else None
            if kept != value:
                out[key] = kept or last_human_text(state.get("messages") or []) or value
        return out


def rewrites_for(knobs: Knobs, domain: Domain, registry: ToolRegistry) -> tuple[Rewrite, ...]:
    """The design's rewrites, in the order they run."""
    return (CanonicalIds(domain), CustomerSpelling(), CleanFreeText(registry)) if knobs.normalize_args else ()


def rewritten(name: str, args: dict[str, Any], rewrites: tuple[Rewrite, ...], entity_args: dict[str, str],
              state: HarnessState) -> dict[str, Any]:
    for rewrite in rewrites:
        args = rewrite(name, args, entity_args, state)
    return args
