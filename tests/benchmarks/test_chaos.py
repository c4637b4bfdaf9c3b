"""The chaos benchmark's machinery on a few crash points (the full run is ``harness bench chaos``).

A forked child dies at a checkpoint or transcript write or at one of the change ledger's points, with a model
that rewords its arguments on every call; recovery in fresh processes (``harness resume --finish``, or a new
HTTP worker on Postgres) must leave the change applied exactly once, the last message answered and every reply
the user got in the transcript.
"""

from __future__ import annotations

import pytest

from lg_harness_lab.benchmarks.bench_chaos import Crash, Setup, order_inversions, run_setup, soak
from tests.engines import postgres_server  # noqa: F401

FIVE = ("applied_twice", "lost", "unanswered", "unrecoverable", "reply_missing")
# A transcript write and the ledger's points, with every step saved (sync) or a message saved at its end (exit,
# the default): with sync a checkpoint early in the request and one after the changing step; with exit the
# first message's save, before and after it.
LEDGER = [Crash("transcript", 2, False, "transcript 2 before"), Crash("transcript", 1, True, "transcript 1 after"),
          Crash("decided", label="decided"), Crash("recorded", label="recorded"), Crash("ran", label="ran")]
POINTS = {"sync": [Crash("checkpoint", 2, False, "checkpoint 2 before"),
                   Crash("checkpoint", 9, True, "checkpoint 9 after"), *LEDGER],
          "exit": [Crash("checkpoint", 1, False, "checkpoint 1 before"),
                   Crash("checkpoint", 1, True, "checkpoint 1 after"), *LEDGER]}


def zeros(figures: dict) -> None:
    assert tuple(figures[k] for k in FIVE) == (0,) * 5, figures["problems"]


@pytest.mark.slow
@pytest.mark.parametrize("durability", ["exit", "sync"])
@pytest.mark.parametrize("confirm", [True, False], ids=["confirm on", "confirm off"])
@pytest.mark.parametrize("domain", ["shop", "helpdesk"])
def test_crashes_with_a_rewording_model_recover_exactly_once(domain, confirm, durability):
    points = POINTS[durability]
    figures = run_setup(Setup(domain, "sqlite", confirm, durability), points=points, log=lambda s: None)
    assert figures["runs"] == len(points) and figures["crashes"] >= len(points) - 1, figures
    zeros(figures)
    # an idempotent change crashed before its settle runs again with its key: nobody needs to check it
    assert figures["to_person_applied"] == figures["to_person_not_applied"] == 0


@pytest.mark.parametrize(("confirm", "durability"), [(True, "exit"), (False, "exit"), (True, "sync")],
                         ids=["confirm on", "confirm off", "confirm on, sync"])
@pytest.mark.slow
def test_the_http_worker_on_postgres_killed_and_taken_over_recovers_exactly_once(postgres_server, confirm,  # noqa: F811
                                                                                  durability):
    saved = Crash("checkpoint", 12, True, "checkpoint 12 after") if durability == "sync" else \
        Crash("checkpoint", 1, True, "checkpoint 1 after")
    figures = run_setup(Setup("shop", "postgres", confirm, durability), url=postgres_server, log=lambda s: None,
                        points=[saved, Crash("ran", label="ran"), Crash("transcript", 2, False, "transcript 2 before"),
                                Crash("recorded", label="rec")])
    assert figures["crashes"] >= 3, figures
    zeros(figures)


@pytest.mark.slow
@pytest.mark.parametrize("durability", ["exit", "sync"])
def test_an_outside_change_that_is_not_idempotent_is_applied_once_or_checked_by_a_person(durability):
    figures = run_setup(Setup("library", "sqlite", True, durability), points=POINTS[durability][1:2] + LEDGER[-1:],
                        log=lambda s: None)
    assert figures["runs"] == 2 and figures["crashes"] == 2, figures
    zeros(figures)
    assert figures["to_person_applied"] >= 1, "the crash between the tool and its settle goes to a person"


@pytest.mark.slow
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
