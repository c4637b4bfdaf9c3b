"""The chaos benchmark's machinery on a few crash points (the full run is ``harness bench chaos``).

A forked child dies at a checkpoint write or by SIGKILL; recovery in fresh processes must leave the change
applied exactly once and the last message answered.
"""

from __future__ import annotations

import pytest
from lg_harness.benchmarks.bench_chaos import order_inversions, run_domain, soak


@pytest.mark.parametrize("domain", ["shop", "helpdesk"])
def test_crashes_at_checkpoint_writes_recover_exactly_once(domain):
    # early (the request's first steps), in the changing message's tool step, and late (after the yes)
    figures = run_domain(domain, random_kills=3, points=[2, 9, 16, 22], log=lambda s: None)
    assert figures["runs"] == 12 and figures["crashes"] >= 10, figures  # 4 x 2 writes, the settle, 3 random
    assert (figures["applied_twice"], figures["lost"], figures["unanswered"], figures["unrecoverable"]) == \
        (0, 0, 0, 0), figures["problems"]
    # an idempotent change crashed before its settle runs again with its key: nobody needs to check it
    assert figures["to_person_applied"] == figures["to_person_not_applied"] == 0


def test_an_outside_change_that_is_not_idempotent_is_applied_once_or_checked_by_a_person():
    figures = run_domain("library", random_kills=2, points=[3, 8], log=lambda s: None)
    assert figures["runs"] == 7 and figures["crashes"] >= 5, figures
    assert (figures["applied_twice"], figures["lost"], figures["unanswered"], figures["unrecoverable"]) == \
        (0, 0, 0, 0), figures["problems"]
    assert figures["to_person_applied"] >= 1, "the crash between the tool and its settle goes to a person"


def test_the_soak_serves_every_message_in_order():
    figures = soak(processes=2, threads=2, minutes=0.1, log=lambda s: None)
    assert figures["messages_served"] > 0 and figures["failures"] == 0, figures
    assert figures["order_inversions"] == 0


def test_an_interleaved_transcript_counts_as_inverted(tmp_path):
    import sqlite3

    from lg_harness.memory.transcript import TranscriptStore

    store = TranscriptStore(tmp_path / "t.sqlite")
    for turn, (role, text) in enumerate([("user", "p0w0#0"), ("user", "p0w1#0"), ("assistant", "a"),
                                         ("assistant", "b"), ("user", "p0w0#2"), ("assistant", "c"),
                                         ("user", "p0w0#1"), ("assistant", "d")]):
        store.append("shared", turn, role, f"message {text}")
    store.close()
    assert sqlite3.connect(tmp_path / "t.sqlite").execute("SELECT COUNT(*) FROM transcript").fetchone()[0] == 8
    assert order_inversions(tmp_path / "t.sqlite") == 2  # one unanswered before the next, one out of order
