"""What the model's arguments go through before screens see them: rewrites, each a small object, composed once
from a design's knobs (:func:`rewrites_for`), in the spirit of Pydantic AI's toolset wrappers. A design
without ``normalize_args`` simply has none, and its calls reach the screens as the model wrote them.

- :class:`CanonicalIds`: an identifier in its entity type's canonical form ("ord10134" -> "ORD-10134").
- :class:`CustomerSpelling`: a one-word free-text argument respelled as the customer wrote it
  (``memory.known_ids.customer_spelling``: "Lisbon" for the model's "Lisboa").
- :class:`CleanFreeText`: a change's free text without internals or the tool's own description.
- :class:`UnsaidFilter`: a lookup's optional filter the customer never asked for is dropped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from langchain_core.messages import HumanMessage

from lg_harness.memory.context import request_now
from lg_harness.memory.known_ids import customer_spelling
from lg_harness.memory.messages import last_human_text
from lg_harness.nodes.answer_words import ZH_VALUES
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
            if key in entity_args or not isinstance(value, str) or (len(value.split()) < 4 and len(value) < 12):
                continue
            kept = customer_safe(value, self.registry.names())
            kept = without_echoes(kept, [spec.description]) if kept else None
            if kept != value:
                out[key] = kept or last_human_text(state.get("messages") or []) or value
        return out


# A value said to be counted in, not filtered by ("cancelled ones included", "including cancelled", "包括已取消的").
_INCLUDED = re.compile(r"\binclud(?:ed|ing|e)\b|\bas well\b|\btoo\b|包括|包含|也算|也要")


def _around(text: str, form: str, span: int = 25) -> str:
    at = text.find(form)
    return text[max(0, at - span):at + len(form) + span]


def _enum(prop: dict[str, Any]) -> list[str]:
    """The values an argument's schema allows, where it lists them (directly or in an ``anyOf`` branch)."""
    found = list(prop.get("enum") or [])
    for branch in prop.get("anyOf") or []:
        found += list(branch.get("enum") or [])
    return [str(v) for v in found]


@dataclass(frozen=True)
class UnsaidFilter:
    """A lookup's optional filter set to a value the customer never said is dropped: "我到现在一共提过几个工单啊？"
    (how many tickets have I filed?) was listed with ``status: new`` and answered "0". A value counts as said
    in any form the customer may use: as written, with spaces for underscores, in Chinese
    (``answer_words.ZH_VALUES``) or in the domain's words for it (its claims)."""

    registry: ToolRegistry
    domain: Domain

    def said(self, value: str, text: str) -> bool:
        """Said as a filter: "cancelled ones included" / "包括已取消的" asks for every record, those too."""
        forms = {value, value.replace("_", " "), ZH_VALUES.get(value.lower(), "")}
        forms |= {w for c in self.domain.claims if c.true_of(value) for w in c.words}
        forms |= {f[1:] for f in forms if f.startswith("已") and len(f) > 2}  # 已解决: 已经解决, 被取消 say it too
        return any(f and f.casefold() in text and not _INCLUDED.search(_around(text, f.casefold())) for f in forms)

    def __call__(self, name: str, args: dict[str, Any], entity_args: dict[str, str],
                 state: HarnessState) -> dict[str, Any]:
        spec = self.registry.get(name)
        if spec is None or spec.changes_state:
            return args
        params = spec.json_schema()["function"]["parameters"]
        required = set(params.get("required") or [])
        text = " ".join(m.text for m in state.get("messages") or [] if isinstance(m, HumanMessage)).casefold()
        return {k: v for k, v in args.items()
                if k in required or not isinstance(v, str) or v not in _enum(params["properties"].get(k) or {})
                or self.said(v, text)}


@dataclass(frozen=True)
class RequestsOwnIds:
    """Of a message's several requests, the one now due takes the record its own words name: "ORD-10132 快递单号
    多少？顺便把 ORD-10083 那顶帐篷退了" looked up ORD-10083 for the tracking number the first part asked of
    ORD-10132. Only an id another part names is replaced, and only by the one id of that kind this part names."""

    domain: Domain

    def __call__(self, name: str, args: dict[str, Any], entity_args: dict[str, str],
                 state: HarnessState) -> dict[str, Any]:
        now, asked, parts = request_now(state), state.get("request_intents") or [], state.get("request_parts") or []
        if now is None or len(parts) != len(asked) or now not in asked:
            return args
        own = asked.index(now)
        named = [self.domain.entities_in(p) for p in parts]
        out = dict(args)
        for arg, kind in entity_args.items():
            mine = named[own].get(kind, [])
            value = out.get(arg)
            if (len(mine) == 1 and isinstance(value, str) and value != mine[0]
                    and any(value in n.get(kind, []) for j, n in enumerate(named) if j != own)):
                out[arg] = mine[0]
        return out


def rewrites_for(knobs: Knobs, domain: Domain, registry: ToolRegistry) -> tuple[Rewrite, ...]:
    """The design's rewrites, in the order they run."""
    if not knobs.normalize_args:
        return ()
    return (CanonicalIds(domain), RequestsOwnIds(domain), CustomerSpelling(), CleanFreeText(registry),
            UnsaidFilter(registry, domain))


def rewritten(name: str, args: dict[str, Any], rewrites: tuple[Rewrite, ...], entity_args: dict[str, str],
              state: HarnessState) -> dict[str, Any]:
    for rewrite in rewrites:
        args = rewrite(name, args, entity_args, state)
    return args
