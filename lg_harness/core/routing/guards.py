"""Guards: the pure predicates the routing rules read (``lg_harness/core/routing/route.py``). State and knobs in, a fact out.

Each brake is a small predicate so it can be tested alone and reused: the rule after ``action`` asks
``stop_reason`` which brake fired, and the reply node asks the same function to word a partial answer. The counters the
brakes read are moved in one place, ``lg_harness/core/routing/counters.py``.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

from langchain_core.messages import AIMessage

from lg_harness.core.knobs import Knobs

if TYPE_CHECKING:  # the state schema loads LangGraph's graph; guards only read dicts (harness designs starts light)
    from lg_harness.core.state import HarnessState, ToolCallRecord


def _stats(state: HarnessState) -> dict[str, Any]:
    return dict(state.get("turn_stats") or {})


def busy(state: HarnessState) -> bool:
    """The model could not be reached: the node already sent the 'busy' reply (``check.retryable``)."""
    return bool((state.get("check") or {}).get("retryable", False))


def check_ok(state: HarnessState) -> bool:
    """The self-check passed the reply (or did not run)."""
    return bool((state.get("check") or {}).get("ok", True))


def regenerations(state: HarnessState) -> int:
    return _stats(state).get("regenerations") or 0


def answered_in_words(state: HarnessState) -> bool:
    """The model's last message is words, with no tool call: the next step is the reply."""
    messages = state.get("messages") or []
    last = messages[-1] if messages else None
    return isinstance(last, AIMessage) and not last.tool_calls


def _round_records(state: HarnessState, rnd: int) -> list[ToolCallRecord]:
    return [r for r in state.get("tool_log") or [] if r.get("round") == rnd]


def quota_exceeded(state: HarnessState, knobs: Knobs) -> str | None:
    """Which quota this message or this thread has used up, if any."""
    stats, totals = _stats(state), state.get("totals") or {}
    checks = [
        ("input tokens per message", stats.get("input_tokens", 0), knobs.turn_quota_input_tokens),
        ("tool calls per message", stats.get("tool_calls", 0), knobs.turn_quota_tool_calls),
        ("input tokens per thread", totals.get("input_tokens", 0) + stats.get("input_tokens", 0),
         knobs.session_quota_input_tokens),
        ("tool calls per thread", totals.get("tool_calls", 0) + stats.get("tool_calls", 0),
         knobs.session_quota_tool_calls),
        # stretched for a model slower than the deadlines assume (``pace``, from its measured speed)
        ("time per message", stats.get("elapsed_s", 0.0), knobs.message_deadline_s * stats.get("pace", 1.0)),
    ]
    return next((name for name, used, limit in checks if used >= limit), None)


def repeated_invalid_call(state: HarnessState) -> bool:
    """The same invalid call (same tool, same arguments) was made twice in this message."""
    sigs = [r.get("signature") for r in state.get("tool_log") or [] if r.get("error_type") == "validation"]
    return len(sigs) != len(set(sigs))


def uncertain_changes(state: HarnessState) -> list[ToolCallRecord]:
    """This message's changing calls that may have applied before a crash and are not run again
    (``tools.ledger``): a person has to check them."""
    return [r for r in state.get("tool_log") or [] if r.get("error_type") == "outcome_uncertain"]


def uncertain_change(state: HarnessState) -> bool:
    return bool(uncertain_changes(state))


def invalid_calls(state: HarnessState) -> int:
    """The most invalid calls any one tool got in this message: each tool gets its own repair tries (a tool
    set aside for a made-up figure is no failed repair of the next tool the model turns to)."""
    counts = Counter(r.get("name") for r in state.get("tool_log") or [] if r.get("error_type") == "validation")
    return max(counts.values(), default=0)


def invented_argument(state: HarnessState) -> bool:
    rnd = _stats(state).get("rounds", 0)
    return any(r.get("error_type") == "invented_argument" for r in _round_records(state, rnd))


def duplicate_blocked(state: HarnessState) -> bool:
    rnd = _stats(state).get("rounds", 0)
    return any(r.get("error_type") == "duplicate_call" for r in _round_records(state, rnd))


def goal_reached(state: HarnessState, knobs: Knobs) -> bool:
    """This message's tool log holds a successful call of a tool the task's route exists for (``goal_tools``,
    set with the intent): the next step is the answer, so the action step offers no tool (a grammar then
    admits only words). A small model offered the same tool again after its result mostly repeats the call
    (64 of 65 turns of Qwen2.5-Coder-0.5B), and the repeat stopped by a guard made it narrate the request
    instead of answering it."""
    worked = {r.get("name") for r in state.get("tool_log") or [] if r.get("status") == "ok"}
    groups = [set(g) for g in state.get("goal_groups") or [] if g]
    if groups:  # several requests in one message: each one's goal
        return knobs.answer_after_goal and all(g & worked for g in groups)
    goal = set(state.get("goal_tools") or ())
    return knobs.answer_after_goal and bool(goal & worked)


def no_progress(state: HarnessState, knobs: Knobs) -> bool:
    """The last N rounds brought nothing new: only empty, failed or duplicate results."""
    rnd = _stats(state).get("rounds", 0)
    if rnd < knobs.no_progress_rounds:
        return False
    for r in range(rnd - knobs.no_progress_rounds + 1, rnd + 1):
        records = _round_records(state, r)
        if any(x.get("status") == "ok" and not x.get("empty") for x in records):
            return False
    return True


def stop_reason(state: HarnessState, knobs: Knobs) -> str | None:
    """Why the tool loop must stop now, or None to let the model continue."""
    if (quota := quota_exceeded(state, knobs)) is not None:
        return f"quota: {quota}"
    if repeated_invalid_call(state):
        return "repeated invalid call"
    if duplicate_blocked(state):
        return "identical call repeated"
    if no_progress(state, knobs):
        return "no progress"
    if _stats(state).get("rounds", 0) >= knobs.max_rounds:
        return "max rounds"
    return None


def handoff_allowed(state: HarnessState) -> bool:
    """False once the user pinned "don't transfer me to a human" (asking for one now overrides it).

    The intent node reads the pinned constraints against the domain's words and sets ``handoff_blocked``.
    """
    return state.get("intent_kind") == "to-human" or not state.get("handoff_blocked")
