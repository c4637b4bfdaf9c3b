"""Designs: which variant each part uses, plus the policy knobs. A design is data.

Users write their own as YAML or TOML (same fields) or as a ``Design`` object.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any, TypedDict

import yaml
from pydantic import BaseModel, ConfigDict, Field, field_serializer, field_validator

from lg_harness.core.design_sources import design_source, design_sources
from lg_harness.core.knobs import Knobs, off_value
from lg_harness.core.parts import is_part, part_name
from lg_harness.core.routing.route import LIGHTWEIGHT_RULES, NODES, design_rules
from lg_harness.errors import HarnessError

# What a design chooses a variant for: each node of the graph (core.routing.route.NODES, the one list of them),
# and the working-context strategy its nodes assemble model calls with (a memory strategy, not a node).
ROLES = (*NODES, "context")


class Design(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    description: str = ""
    # role -> a registered variant's name, or the variant itself as a Python object (core.parts.Part)
    variants: dict[str, Any] = Field(default_factory=dict)
    knobs: Knobs = Field(default_factory=Knobs)
    rules: str | None = Field(default=None, description="transition rules in the rule DSL (lg_harness/core/routing/rules.py); "
                                      "nodes they have no rules for keep the routers of lg_harness/core/routing/routers.py")
    source: str | None = Field(default=None, exclude=True, description="the .py design file it was loaded from "
                               "(path.py:ATTR), where another process loads it again to rebuild its Python parts")

    @field_validator("variants")
    @classmethod
    def _names_or_parts(cls, value: dict[str, Any]) -> dict[str, Any]:
        for role, variant in value.items():
            if not isinstance(variant, str) and not is_part(variant):
                raise ValueError(f"variant of '{role}' must be a registered name or an object with a name and "
                                 f"build(deps) (core.parts.Part), not {type(variant).__name__}")
        return value

    @field_serializer("variants")
    def _named(self, value: dict[str, Any]) -> dict[str, str]:
        return {role: part_name(v) for role, v in value.items()}

    def variant(self, role: str) -> str:
        """The name of ``role``'s variant (a ``Part``'s own name)."""
        return part_name(self.part(role))

    def part(self, role: str) -> Any:
        """``role``'s variant as the design holds it: a registered name, or a ``Part``."""
        return self.variants.get(role, DEFAULT_VARIANTS[role])


DEFAULT_VARIANTS = {
    "intent": "hybrid",
    "collect": "slots",
    "action": "tool_loop",
    "reply": "model",
    "self_check": "grounded",
    "handoff": "ticket",
    "context": "hybrid",
}

def _preset(name: str, description: str, variants: dict[str, str], rules: str | None = None,
            **knobs: Any) -> Design:
    return Design(name=name, description=description, variants={**DEFAULT_VARIANTS, **variants},
                  knobs=Knobs(**knobs), rules=rules)


class _Quotas(TypedDict):
    """The quota knobs by name (so ``**NO_QUOTAS`` is known to fill only them, never ``rules``)."""

    turn_quota_input_tokens: int
    turn_quota_tool_calls: int
    session_quota_input_tokens: int
    session_quota_tool_calls: int


# Designs from before quotas existed: limits high enough never to fire.
NO_QUOTAS: _Quotas = {"turn_quota_input_tokens": 10**9, "turn_quota_tool_calls": 10**6,
                      "session_quota_input_tokens": 10**12, "session_quota_tool_calls": 10**9}

# Each preset rebuilds a system from the write-ups as a choice of variants and knobs (DESIGN.md, Designs).
PRESETS: dict[str, Design] = {d.name: d for d in (
    _preset("naive", "The first customer-service bot: an LLM intent label, then every tool always exposed, "
            "the full history, the model loops freely and tool errors go back to it raw.",
            {"intent": "llm", "collect": "none", "self_check": "off", "context": "full"},
            tool_offer="all", executor="raw", identical_calls="allow", align_entities=False,
            validation_repairs=20, max_rounds=8, no_progress_rounds=8, unknown_intent_handoff=99,
            clean_results=False, normalize_input=False, normalize_args=False, long_term_memory=False, enforce_constraints=False, **NO_QUOTAS),
    _preset("framework-default", "A heavyweight agent framework with its defaults: one ReAct loop, full "
            "history buffer, tools registered once at start, every tool error wrapped in one type and "
            "retried blindly 3 times, one total duration in the logs.",
            {"intent": "passthrough", "collect": "none", "self_check": "off", "context": "full"},
            tool_offer="all", executor="framework", identical_calls="allow", align_entities=False,
            validation_repairs=20, max_rounds=15, no_progress_rounds=15, unknown_intent_handoff=99,
            clean_results=False, normalize_args=False, long_term_memory=False, logger="opaque", enforce_constraints=False, **NO_QUOTAS),
    _preset("custom-lightweight", "The hand-built lightweight agent: short/medium/long-term memory with "
            "summaries, classified errors, tools chosen per role and intent at run time, transition rules "
            "in a small DSL, phase-timed tool logs.",
            {"intent": "classifier", "self_check": "off", "context": "window_summary"}, LIGHTWEIGHT_RULES,
            identical_calls="allow", align_entities=False, normalize_args=False,
            max_tools_offered=4, enforce_constraints=False, **NO_QUOTAS),
    _preset("state-machine", "The customer-service bot after its rework: intent/collect/action/reply states, "
            "per-state tool masking, schema validation with one repair then back to collect, max rounds, "
            "identical-call interception, fact card, recent turns plus a rolling summary.",
            {"intent": "classifier", "self_check": "off", "context": "window_summary"},
            align_entities=False, normalize_args=False, long_term_memory=False, clean_results=False, enforce_constraints=False, **NO_QUOTAS),
    _preset("layered", "The 2026 rework: five-layer context with budgets, anchored window, compression at "
            "70%, dual memory (facts in SQL, experiences in vectors), four termination guards, result "
            "cleaning, parallel calls with ids, quotas, self-check.",
            {"intent": "classifier", "context": "anchored_summary"}, align_entities=False, normalize_args=False),
    _preset("harness", "This project's best: local intent rules, unsure ones offering every candidate's tools (the "
            "variant `hybrid` asks the model instead; on Qwen 0.5B it names fewer requests right, "
            "lab/reports/intent-probe), slots from the fact "
            "card, masked tools, canonical, validated and entity-aligned arguments, classified retries, cleaned "
            "results, layered context (anchored window, summary, fact card) with compression, dual memory, "
            "guards, a grounded self-check, decoding constrained to each step, another try for a declined call, "
            "and an explicit yes before any change, checked first; on an engine whose grammar holds a step to its "
            "tools, prompts laid out for a prefix the engine keeps (docs/performance.md).",
            {"intent": "classifier"}, context_budget_tokens=1300, clear_used_results=True, confirm_changes=True,
            constrained_decoding=True, retry_declined_call=2, answer_presentation="facts", unsure_offer=6,
            answer_after_goal=True, stable_prefix=True),
)}


# A design spec that changes one thing of another design: ``harness-no:normalize_args`` (that knob off, see
# core.knobs.KNOB_OFF) or ``harness-with:context=full`` (that role's variant swapped).
NO, WITH = "-no:", "-with:"


def ablation(design: Design, knob: str) -> Design:
    """``design`` with just ``knob`` switched off (or back to its default), named ``<name>-no:<knob>``."""
    try:
        value = off_value(knob)
    except KeyError:
        raise HarnessError(f"unknown knob '{knob}'; knobs: {', '.join(Knobs.model_fields)}") from None
    knobs = design.knobs.model_copy(update={knob: value})
    return design.model_copy(deep=True, update={
        "name": f"{design.name}{NO}{knob}", "knobs": knobs,
        "description": f"{design.name} with {knob} = {value!r} (one-knob ablation)"})


def with_variant(design: Design, role: str, variant: Any) -> Design:
    """``design`` with just one role's variant swapped (a registered name, or a ``core.parts.Part``), named
    ``<name>-with:<role>=<variant>``."""
    if role not in ROLES:
        raise HarnessError(f"unknown role '{role}'; roles: {', '.join(ROLES)}")
    name = part_name(variant)
    swapped = design.model_copy(deep=True, update={
        "name": f"{design.name}{WITH}{role}={name}",
        "description": f"{design.name} with the {role} variant {name!r} (one-part swap)"})
    swapped.variants = {**swapped.variants, role: variant}  # the part itself, not a deep copy of it
    return swapped


def ablations(design: Design) -> list[Design]:
    """One design per knob whose value differs from its off value (or default), with just that knob set back."""
    return [ablation(design, k) for k in Knobs.model_fields if getattr(design.knobs, k) != off_value(k)]


def python_design(key: str) -> Design | None:
    """A design defined in Python: ``path/to/file.py[:ATTR]`` (default ``DESIGN``), a ``Design`` value whose
    parts may be Python objects (``core.parts``); None when ``key`` names no .py file."""
    import re

    named = re.fullmatch(r"(.+\.py)(?::(\w+))?", key)
    if named is None:
        return None
    path, attr = Path(named.group(1)), named.group(2) or "DESIGN"
    if not path.is_file():
        raise HarnessError(f"design file not found: {path}")
    import hashlib
    import importlib.util
    import sys

    # one module name per file, the same in every process (hash() of a str is salted per process)
    name = f"_harness_design_{hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:16]}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise HarnessError(f"{path} cannot be imported as Python")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and pickling look a module's classes up by its name
    spec.loader.exec_module(module)
    found = getattr(module, attr, None)
    if not isinstance(found, Design):
        raise HarnessError(f"{path} has no Design named {attr}: define DESIGN = Design(...) or "
                           f"with_variant(PRESETS[...], role, YourPart()), or give path.py:NAME")
    return found.model_copy(update={"source": f"{path}:{attr}"})


def load_design(name_or_path: str | Path) -> Design:
    """A preset by name, a design file (.yaml/.yml/.toml/.json), ``<design>-no:<knob>`` /
    ``<design>-with:<role>=<variant>`` (one knob or one part of a design changed), or ``<prefix>:<name>`` from
    a registered source (``core.design_sources``), e.g. ``peer:<framework>``, a real framework's agent."""
    key = str(name_or_path)
    if key in PRESETS:
        return PRESETS[key].model_copy(deep=True)
    source = design_source(key)  # e.g. peer: a real framework's row (lg_harness_lab.peers); runs only in compare
    if source is not None:
        return source(key)
    if NO in key:
        base, _, knob = key.rpartition(NO)
        return ablation(load_design(base), knob)
    if WITH in key:
        base, _, swap = key.rpartition(WITH)
        role, sep, variant = swap.partition("=")
        if not sep or not variant:
            raise HarnessError(f"'{key}': write <design>-with:<role>=<variant>")
        return with_variant(load_design(base), role, variant)
    if (found := python_design(key)) is not None:
        return found
    path = Path(key)
    if not path.suffix:
        sources = ", ".join(f"{prefix}:<name>" for prefix in design_sources()) or "none registered (pip install -e .)"
        raise HarnessError(f"unknown design '{key}'; presets: {', '.join(PRESETS)}; from packages: {sources}; "
                           "or give a .yaml/.toml file")
    if not path.is_file():
        raise HarnessError(f"design file not found: {path}")
    try:
        text = path.read_text(encoding="utf-8")
        data: Any = tomllib.loads(text) if path.suffix == ".toml" else yaml.safe_load(text)
        design = Design.model_validate(data)
    except (OSError, ValueError, yaml.YAMLError) as err:
        from lg_harness.core.design_errors import design_file_error

        raise HarnessError(design_file_error(path, err, Design)) from err
    design_rules(design.rules)  # a typo in the rules fails when the design loads
    return design
