"""The tool loop's counters (lg_harness/core/routing/counters.py): what a round adds, and that the brakes stop on it."""

from __future__ import annotations

import copy

from lg_harness.core.design import Knobs
from lg_harness.core.routing import counters
from lg_harness.core.routing.guards import quota_exceeded, stop_reason
from lg_harness.core.state import TurnStats

KNOBS = Knobs(max_rounds=3, turn_quota_tool_calls=4, message_deadline_s=30, no_progress_rounds=99)


def test_each_round_counts_one_more_and_leaves_the_other_counters():
    stats: TurnStats = {"rounds": 2, "model_calls": 3, "input_tokens": 500}
    assert counters.next_round(stats) == {"rounds": 3, "model_calls": 3, "input_tokens": 500}
    assert counters.next_round({}) == {"rounds": 1}  # a fresh message's first round


def test_every_call_counts_and_every_call_that_did_not_succeed_is_an_error():
    stats = counters.after_calls({"rounds": 1, "tool_calls": 2, "tool_errors": 1}, ["ok", "error", "ok"])
    assert stats == {"rounds": 1, "tool_calls": 5, "tool_errors": 2}
    assert counters.after_calls({}, []) == {"tool_calls": 0, "tool_errors": 0}


def test_a_failed_model_call_counts_its_attempts_but_not_another_round():
    before: TurnStats = {"rounds": 2, "model_calls": 1, "input_tokens": 100}
    failed: TurnStats = {"rounds": 0, "model_calls": 4, "input_tokens": 900}  # what the failed call's attempts counted
    assert counters.after_failed_call(before, failed) == {"rounds": 2, "model_calls": 4, "input_tokens": 900}


def test_time_is_charged_only_while_a_step_runs():
    # 12 s counted by earlier steps, this step ran from t=1000 to t=1003: a checkpoint's idle hours are not charged
    assert counters.spent({"elapsed_s": 12.0}, began=1000.0, now=1003.0) == 15.0
    assert counters.timed({"rounds": 1}, began=5.0, now=7.5) == {"rounds": 1, "elapsed_s": 2.5}
    assert counters.spent({}, began=10.0, now=9.0) == 0.0  # a clock that went back charges nothing


def test_the_counters_never_change_the_state_they_read():
    stats: TurnStats = {"rounds": 1, "tool_calls": 1, "tool_errors": 0, "elapsed_s": 1.0}
    frozen = copy.deepcopy(stats)
    counters.next_round(stats)
    counters.after_calls(stats, ["error"])
    counters.after_failed_call(stats, {"model_calls": 9})
    counters.timed(stats, 0.0, 5.0)
    assert stats == frozen


def test_the_brakes_stop_the_loop_on_what_the_counters_count():
    stats: TurnStats = {}
    for _ in range(KNOBS.max_rounds - 1):
        stats = counters.next_round(stats)
    assert stop_reason({"turn_stats": stats}, KNOBS) is None
    stats = counters.next_round(stats)
    assert stop_reason({"turn_stats": stats}, KNOBS) == "max rounds"

    calls = counters.after_calls({"rounds": 1}, ["ok"] * (KNOBS.turn_quota_tool_calls - 1))
    assert quota_exceeded({"turn_stats": calls}, KNOBS) is None
    calls = counters.after_calls(calls, ["error"])
    assert quota_exceeded({"turn_stats": calls}, KNOBS) == "tool calls per message"

    slow = counters.timed({"rounds": 1}, began=0.0, now=KNOBS.message_deadline_s)
    assert stop_reason({"turn_stats": slow}, KNOBS) == "quota: time per message"
