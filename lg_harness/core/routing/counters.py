"""The tool loop's counters: what each round of a message adds to ``turn_stats``, read by the brakes.

``guards.stop_reason`` stops the loop on ``rounds`` (``max_rounds``), and ``quota_exceeded`` on
``tool_calls`` and ``elapsed_s``; these functions are the one place the tool loop moves them, so what is
counted sits beside what is checked (the intent node sets them all to zero as a message starts). Each
returns a new dict: a node's update replaces ``turn_stats`` wholesale (``lg_harness/core/state.py``), and the state it
read is never changed.
"""

from __future__ import annotations

from collections.abc import Iterable

from lg_harness.core.state import TurnStats


def next_round(stats: TurnStats) -> TurnStats:
    """The counters as a new round of the tool loop starts: one more round."""
    new = stats.copy()
    new["rounds"] = stats.get("rounds", 0) + 1
    return new


def after_failed_call(stats: TurnStats, failed: TurnStats) -> TurnStats:
    """The counters after a model call that failed for good: what the failed call counted (its attempts'
    tokens and time), but still the round it was in."""
    new = stats.copy()
    new.update(failed)
    new["rounds"] = stats.get("rounds", 0)
    return new


def after_calls(stats: TurnStats, statuses: Iterable[str]) -> TurnStats:
    """The counters after a round's tool calls ran: every call counts, and every one that did not succeed
    is also an error (refused, failed or answered from an earlier call's error)."""
    statuses = list(statuses)
    new = stats.copy()
    new["tool_calls"] = stats.get("tool_calls", 0) + len(statuses)
    new["tool_errors"] = stats.get("tool_errors", 0) + sum(s != "ok" for s in statuses)
    return new


def spent(stats: TurnStats, began: float, now: float) -> float:
    """The message's time so far: what earlier steps counted plus this step's own. Each step adds only the time
    it ran, so a message finished or forked later (after a crash, or from an old checkpoint) is not charged
    for the hours it sat in a checkpoint."""
    return float(stats.get("elapsed_s") or 0.0) + max(now - began, 0.0)


def timed(stats: TurnStats, began: float, now: float) -> TurnStats:
    """The counters with this step's running time added to ``elapsed_s`` (see :func:`spent`)."""
    new = stats.copy()
    new["elapsed_s"] = spent(stats, began, now)
    return new
