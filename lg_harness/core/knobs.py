"""The policy knobs of a design: limits, budgets, timeouts and quotas; imports nothing of the graph.

Guards, the rule DSL and designs all read knobs, so they live below all three (``design -> dsl -> guards
-> knobs``, no cycle).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class Knobs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    max_rounds: int = Field(default=5, ge=1, description="tool rounds per user message before a partial answer")
    max_tools_offered: int = Field(default=3, ge=1, description="tools offered on one model call")
    window_messages: int = Field(default=24, ge=2, description="most messages a checkpoint keeps between turns")
    context_budget_tokens: int = Field(default=3000, ge=256, description="input tokens one model call may use")
    max_message_chars: int = Field(default=16_000, ge=1, description="longest user message accepted")
    identical_calls: Literal["block", "reuse", "allow"] = Field(
        default="block", description="a repeated identical tool call: blocked with a note, answered from the earlier "
        "result, or run again")
    no_progress_rounds: int = Field(default=3, ge=1, description="rounds with nothing new before the loop stops")
    max_regenerations: int = Field(default=1, ge=0, description="self-check retries before handoff")
    unknown_intent_handoff: int = Field(default=2, ge=1, description="turns in a row with no intent before handoff")
    validation_repairs: int = Field(default=1, ge=0, description="repair tries after an invalid tool call")
    align_entities: bool = Field(default=True, description="identifier arguments must come from the conversation")
    enforce_constraints: bool = Field(default=True, description="refuse tool calls a pinned constraint forbids")
    confirm_changes: bool = Field(default=False, description="before a state-changing tool runs, say what will change and "
                                  "wait for the user's explicit yes in their next message")
    normalize_args: bool = Field(default=True, description="rewrite identifier arguments to their canonical form "
                                 "and a respelled one-word value to the customer's spelling")
    executor: Literal["classified", "framework", "raw"] = Field(
        default="classified", description="tool execution: classified retries, a framework's blind retries, or none")
    tool_offer: Literal["routed", "all"] = Field(default="routed", description="tools of the routed intent, or every tool")
    unsure_offer: int = Field(default=0, ge=0, description="when the intent step is unsure (no keyword rule decided), offer "
                              "the tools of every candidate intent, up to this many; 0 offers the one guess's")
    tool_calling: Literal["native", "text"] = Field(
        default="native", description="native tool calls, or TOOL: lines parsed from text (models without tool calling)")
    clean_results: bool = Field(default=True, description="clean tool results before the model reads them")
    constrained_decoding: bool = Field(default=False, description="ask the provider for output that fits the step where it "
                                       "can (llama.cpp grammar, response_format, strict tools, Ollama format): the "
                                       "answer step words for the customer, the action step an offered call or words")
    answer_after_goal: bool = Field(default=False, description="once a call delivered what the task's route asked "
                                    "for, the next step is the answer: the model is not asked for another call")
    retry_declined_call: int = Field(default=0, ge=0, le=3, description="times a model that answers a task whose slots are "
                                     "all known without calling a tool is asked again to use the tools offered")
    answer_presentation: Literal["replay", "facts", "both"] = Field(
        default="replay", description="how results reach the answer step: replayed tool messages, the facts in words in a "
        "user turn, or both")
    stable_prefix: bool = Field(default=False, description="where a grammar holds a step to its tools (llama.cpp): a step "
                                "that must call, or may call again after a lookup, reads a prefix every such call "
                                "shares (the domain's instructions and every tool the customer may use), then who the "
                                "customer is, their message, its calls so far and the task; an answer from this "
                                "message's results reads the instructions, the task and this message only, not the "
                                "conversation; other steps as without it")
    clear_used_results: bool = Field(default=False, description="keep earlier turns' tool results as digests (ids and "
                                     "key fields) once answered; the latest successful one stays whole")
    normalize_input: bool = Field(default=True, description="strip invisible characters from user messages")
    logger: Literal["full", "opaque"] = Field(default="full", description="tool-call logs: everything, or status + duration")
    long_term_memory: bool = Field(default=True, description="recall and remember across sessions (needs a memory store)")
    wait_for_human: bool = Field(default=True, description="after a handoff, pause the thread until a human answers")
    model_timeout_s: float = Field(default=15.0, gt=0, description="deadline of one model call")
    message_deadline_s: float = Field(default=60.0, gt=0, description="wall time for one user message")
    turn_quota_input_tokens: int = Field(default=20_000, ge=1, description="input tokens per user message")
    turn_quota_tool_calls: int = Field(default=12, ge=1, description="tool calls per user message")
    session_quota_input_tokens: int = Field(default=400_000, ge=1, description="input tokens per thread")
    session_quota_tool_calls: int = Field(default=200, ge=1, description="tool calls per thread")


# The value that switches each feature knob off, for one-knob ablations (core.design.ablation). Knobs not
# listed (limits, deadlines, quotas, logging) have no "off": an ablation sets them back to their default.
KNOB_OFF: dict[str, Any] = {
    "align_entities": False,
    "enforce_constraints": False,
    "confirm_changes": False,
    "normalize_args": False,
    "normalize_input": False,
    "clean_results": False,
    "constrained_decoding": False,
    "retry_declined_call": 0,
    "answer_after_goal": False,
    "clear_used_results": False,
    "stable_prefix": False,
    "long_term_memory": False,
    "identical_calls": "allow",  # no interception of a repeated identical call
    "tool_offer": "all",  # no masking: every tool on every call
    "unsure_offer": 0,  # an unsure intent step routes to its one guess
    "validation_repairs": 0,
    "executor": "raw",  # no retries, errors passed through
}


def off_value(knob: str) -> Any:
    """What a one-knob ablation sets ``knob`` to: its off value, else its default."""
    if knob not in Knobs.model_fields:
        raise KeyError(knob)
    return KNOB_OFF[knob] if knob in KNOB_OFF else Knobs.model_fields[knob].default
