"""Designs: which variant each part uses, plus the policy knobs. A design is data.

Users write their own as YAML or TOML (same fields) or as a ``Design`` object.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field

from tools.errors import HarnessError

ROLES = ("intent", "collect", "action", "reply", "self_check", "handoff", "context")


class Knobs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    max_rounds: int = Field(5, ge=1, description="tool rounds per user message before a partial answer")
    max_tools_offered: int = Field(3, ge=1, description="tools offered on one model call")
    window_messages: int = Field(12, ge=2, description="working messages kept between turns")
    max_message_chars: int = Field(16_000, ge=1, description="longest user message accepted")
    identical_calls: Literal["block", "reuse", "allow"] = Field(
        "block", description="a repeated identical tool call: blocked with a note, answered from the earlier "
        "result, or run again")
    no_progress_rounds: int = Field(3, ge=1, description="rounds with nothing new before the loop stops")
    max_regenerations: int = Field(1, ge=0, description="self-check retries before handoff")
    unknown_intent_handoff: int = Field(2, ge=1, description="turns in a row with no intent before handoff")
    validation_repairs: int = Field(1, ge=0, description="repair tries after an invalid tool call")
    align_entities: bool = Field(True, description="identifier arguments must come from the conversation")
    long_term_memory: bool = Field(True, description="recall and remember across sessions (needs a memory store)")
    wait_for_human: bool = Field(True, description="after a handoff, pause the thread until a human answers")
    model_timeout_s: float = Field(15.0, gt=0, description="deadline of one model call")
    message_deadline_s: float = Field(60.0, gt=0, description="wall time for one user message")
    turn_quota_input_tokens: int = Field(20_000, ge=1, description="input tokens per user message")
    turn_quota_tool_calls: int = Field(12, ge=1, description="tool calls per user message")
    session_quota_input_tokens: int = Field(400_000, ge=1, description="input tokens per thread")
    session_quota_tool_calls: int = Field(200, ge=1, description="tool calls per thread")


class Design(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    description: str = ""
    variants: dict[str, str] = Field(default_factory=dict)
    knobs: Knobs = Field(default_factory=Knobs)
    rules: str | None = Field(None, description="transition rules in the rule DSL (graphs/dsl.py); "
                              "edges they do not cover use the Python guards")

    def variant(self, role: str) -> str:
        return self.variants.get(role, DEFAULT_VARIANTS[role])


DEFAULT_VARIANTS = {
    "intent": "hybrid",
    "collect": "slots",
    "action": "tool_loop",
    "reply": "model",
    "self_check": "grounded",
    "handoff": "ticket",
    "context": "window",
}

PRESETS: dict[str, Design] = {
    "harness": Design(
        name="harness",
        description="This project's best: local intent rules with model fallback, slot collection from the "
        "fact card, masked tools, validated and classified tool calls, grounded self-check.",
        variants=dict(DEFAULT_VARIANTS),
    ),
}


def load_design(name_or_path: str | Path) -> Design:
    """A preset by name, or a design file (.yaml/.yml/.toml/.json)."""
    key = str(name_or_path)
    if key in PRESETS:
        return PRESETS[key].model_copy(deep=True)
    path = Path(key)
    if not path.suffix:
        raise HarnessError(f"unknown design '{key}'; presets: {', '.join(PRESETS)}; or give a .yaml/.toml file")
    if not path.is_file():
        raise HarnessError(f"design file not found: {path}")
    try:
        text = path.read_text(encoding="utf-8")
        data: Any = tomllib.loads(text) if path.suffix == ".toml" else yaml.safe_load(text)
        return Design.model_validate(data)
    except (OSError, ValueError, yaml.YAMLError) as err:
        raise HarnessError(f"cannot read design {path}: {err}") from err
