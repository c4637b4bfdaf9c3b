"""One-knob ablations of a design, and what any two designs differ in.

A feature is credited only against the same design without it: ``harness-no:<knob>`` is ``harness`` with
that one knob off (``core.knobs.KNOB_OFF``) or back to its default, ``harness-with:<role>=<variant>`` is
``harness`` with one part swapped. ``--ablations`` runs every knob ablation of ``harness`` plus the part
swaps the report's claims need (a plain time window, a full-history buffer, no self-check), so that each
claim row can compare two designs that differ in the claimed thing only.
"""

from __future__ import annotations

from typing import Any

from lg_harness.core.design import DEFAULT_VARIANTS, NO, WITH, Design, ablations, load_design
from lg_harness.errors import HarnessError

ABLATED = "harness"
# Part swaps run with --ablations: (role, variant) of a plainer design that one claim needs.
SWAPS = (("context", "window_summary"),  # recent turns + summary, no anchored window (nor recall layer)
         ("context", "full"),  # the full-history buffer: no window, summary, fact card or recall
         ("self_check", "off"))


def ablation_specs(base: str = ABLATED) -> list[str]:
    """Design specs of every knob ablation of ``base`` and of the part swaps that differ from it."""
    design = load_design(base)
    swaps = [f"{base}{WITH}{role}={variant}" for role, variant in SWAPS if design.variant(role) != variant]
    return [d.name for d in ablations(design)] + swaps


def parse(name: str) -> dict[str, Any] | None:
    """What a design name says it changed: ``{"base", "kind": "knob" | "part", "field", "value", "from"}``,
    or None for a name that is not an ablation or swap. ``value``/``from`` are None when unknown."""
    if NO in name:
        base, _, knob = name.rpartition(NO)
        kind, field = "knob", knob
    elif WITH in name:
        base, _, swap = name.rpartition(WITH)
        field, _, _ = swap.partition("=")
        kind = "part"
    else:
        return None
    before, after = resolve(base), resolve(name)
    read = (lambda d: getattr(d.knobs, field, None)) if kind == "knob" else (lambda d: d.variant(field))
    return {"base": base, "kind": kind, "field": field, "value": read(after) if after else None,
            "from": read(before) if before else None}


def resolve(name: str) -> Design | None:
    """The design a name stands for, or None when it is not a preset or spec (e.g. a design file's name)."""
    try:
        return load_design(name)
    except HarnessError:
        return None


def _routing(d: Design) -> str:
    rules = [line for line in (d.rules or "").splitlines() if line.strip() and not line.lstrip().startswith("#")]
    return f"{len(rules)} rules" if rules else "python routers"


def differences(a: Design, b: Design) -> list[str]:
    """Every part and knob in which ``b`` differs from ``a``, as ``field: a -> b``."""
    def part(d: Design, role: str) -> str | None:
        return d.variants.get(role, DEFAULT_VARIANTS.get(role))

    out = [f"{role}: {part(a, role)} -> {part(b, role)}" for role in sorted({*a.variants, *b.variants})
           if part(a, role) != part(b, role)]
    if (a.rules or None) != (b.rules or None):
        out.append(f"routing: {_routing(a)} -> {_routing(b)}")
    ka, kb = a.knobs.model_dump(), b.knobs.model_dump()
    return out + [f"{k}: {ka[k]!r} -> {kb[k]!r}" for k in ka if ka[k] != kb[k]]
