"""What the model's arguments go through before screens see them: rewrites, each a small object, composed once
from a design's knobs (:func:`rewrites_for`), in the spirit of Pydantic AI's toolset wrappers. A design
without ``normalize_args`` simply has none, and its calls reach the screens as the model wrote them.

- :class:`CanonicalIds`: an identifier in its entity type's canonical form ("ord10134" -> "ORD-10134").
- :class:`CustomerSpelling`: a one-word free-text argument respelled as the customer wrote it
  (``memory.known_ids.customer_spelling``: "Lisbon" for the model's "Lisboa").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from lg_harness.memory.known_ids import customer_spelling

if TYPE_CHECKING:
    from lg_harness.core.domain import Domain
    from lg_harness.core.knobs import Knobs
    from lg_harness.core.state import HarnessState


class Rewrite(Protocol):
    def __call__(self, args: dict[str, Any], entity_args: dict[str, str], state: HarnessState) -> dict[str, Any]: ...


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

    def __call__(self, args: dict[str, Any], entity_args: dict[str, str], state: HarnessState) -> dict[str, Any]:
        return canonical_args(args, entity_args, self.domain)


class CustomerSpelling:
    def __call__(self, args: dict[str, Any], entity_args: dict[str, str], state: HarnessState) -> dict[str, Any]:
        return customer_spelling(args, state, entity_args)


def rewrites_for(knobs: Knobs, domain: Domain) -> tuple[Rewrite, ...]:
    """The design's rewrites, in the order they run."""
    return (CanonicalIds(domain), CustomerSpelling()) if knobs.normalize_args else ()


def rewritten(args: dict[str, Any], rewrites: tuple[Rewrite, ...], entity_args: dict[str, str],
              state: HarnessState) -> dict[str, Any]:
    for rewrite in rewrites:
        args = rewrite(args, entity_args, state)
    return args
