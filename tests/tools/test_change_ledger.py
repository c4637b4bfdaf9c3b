"""The change ledger: a changing call is recorded pending before it runs and settled after, so a change to an
outside system (not guarded by a domain backend's ``changes_once``) is applied once, never twice, and never
silently skipped when a crash lands between the tool and its settle.

The outside system is ``lab/lg_harness_lab/benchmarks/outside_pack.py``: a library desk whose ``renew_loan`` appends a line to a
file and ignores idempotency keys.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

import pytest

from lg_harness.graphs.app import Harness, Settings
from lg_harness.nodes.phrases import say
from lg_harness.obs.tracing import capture_spans
from lg_harness.tools.context import ToolContext
from lg_harness.tools.errors import ToolTimeoutError, TransientError
from lg_harness.tools.executor import RetryPolicy, ToolExecutor
from lg_harness.tools.ledger import LedgerEntry, SqliteLedger
from lg_harness.tools.registry import ToolRegistry
from lg_harness_lab.benchmarks.outside_pack import DOMAIN, DOMAIN_KEYED, renewals
from tests.support import change_key

NO_CONFIRM = "harness-no:confirm_changes"  # one message per change here; confirmation has its own tests
ASK = "Please renew BOOK-0042"
REPO = Path(__file__).resolve().parents[2]


# ------------------------------------------------------------------------------------------ executor


def counting(fail: BaseException | None = None) -> tuple[Any, list[str]]:
    """A changing tool that counts its runs (and raises ``fail`` if given)."""
    runs: list[str] = []

    def change(ctx: ToolContext, item: str) -> dict:
        runs.append(item)
        if fail is not None:
            raise fail
        return {"item": item, "n": len(runs)}

    return change, runs


def executor_with(tool: Any, *, idempotent: bool) -> ToolExecutor:
    registry = ToolRegistry()
    registry.register(tool, name="change", description="Change something.", changes_state=True,
                      idempotent=idempotent)
    return ToolExecutor(registry, RetryPolicy(backoff=()), sleep=lambda s: None)


def ctx(ledger: SqliteLedger, key: str = "t:1:change") -> ToolContext:
    return ToolContext(user_id="u", thread_id="t", idempotency_key=key, ledger=ledger)


def recorded(ledger: SqliteLedger, key: str) -> LedgerEntry:
    """The ledger's entry for ``key``, which the test expects there."""
    entry = ledger.get(key)
    assert entry is not None, f"no ledger entry {key!r}"
    return entry


CALL = {"id": "c1", "name": "change", "args": {"item": "a"}}


def test_a_settled_change_answers_from_the_record_without_running_again(tmp_path):
    (tool, runs), ledger = counting(), SqliteLedger(tmp_path / "l.sqlite")
    ex = executor_with(tool, idempotent=False)
    first = ex.run(CALL, ctx(ledger))
    again = ex.run({**CALL, "id": "fresh-id"}, ctx(ledger))
    assert len(runs) == 1 and first.status == again.status == "ok"
    assert again.result == first.result == {"item": "a", "n": 1}
    entry = recorded(ledger, "t:1:change")
    assert entry.status == "settled" and entry.result == {"item": "a", "n": 1} and entry.tool == "change"


def test_a_pending_change_of_a_tool_without_idempotency_is_never_run_again(tmp_path):
    (tool, runs), ledger = counting(), SqliteLedger(tmp_path / "l.sqlite")
    ledger.begin("t:1:change", "t", "change", {"item": "a"})  # a process died after this, maybe after the tool
    outcome = executor_with(tool, idempotent=False).run(CALL, ctx(ledger))
    assert runs == []
    assert outcome.status == "error" and outcome.error_type == "outcome_uncertain"
    assert outcome.record()["ledger_key"] == "t:1:change"
    assert recorded(ledger, "t:1:change").status == "pending", "still unknown: a person settles it"
    assert [e.key for e in ledger.pending("t")] == ["t:1:change"]


def test_a_pending_change_of_an_idempotent_tool_runs_again_with_the_same_key(tmp_path):
    keys: list[str] = []

    def keyed(c: ToolContext, item: str) -> dict:
        keys.append(c.idempotency_key)
        return {"item": item}

    registry = ToolRegistry()
    registry.register(keyed, name="change", description="Change.", changes_state=True, idempotent=True)
    ledger = SqliteLedger(tmp_path / "l.sqlite")
    ledger.begin("t:1:change", "t", "change", {"item": "a"})
    outcome = ToolExecutor(registry).run(CALL, ctx(ledger))
    assert outcome.status == "ok" and keys == ["t:1:change"]
    entry = recorded(ledger, "t:1:change")
    assert entry.status == "settled" and entry.attempts == 2


def test_a_failed_change_may_run_again_and_a_timed_out_one_stays_uncertain(tmp_path):
    ledger = SqliteLedger(tmp_path / "l.sqlite")
    failing, _ = counting(fail=TransientError("backend 503"))
    assert executor_with(failing, idempotent=False).run(CALL, ctx(ledger)).status == "error"
    assert recorded(ledger, "t:1:change").status == "failed"
    working, runs = counting()
    assert executor_with(working, idempotent=False).run(CALL, ctx(ledger)).status == "ok" and len(runs) == 1

    timing_out, timed = counting(fail=ToolTimeoutError("no answer in 10 s"))
    ex = executor_with(timing_out, idempotent=False)
    assert ex.run(CALL, ctx(ledger, "t:2:change")).error_type == "timeout"
    assert recorded(ledger, "t:2:change").status == "pending", "a timed-out attempt may still commit"
    assert ex.run(CALL, ctx(ledger, "t:2:change")).error_type == "outcome_uncertain" and len(timed) == 1


def test_two_identical_calls_at_once_apply_once(tmp_path):
    ledger, gate = SqliteLedger(tmp_path / "l.sqlite"), threading.Event()
    applied = []

    def slow(c: ToolContext, item: str) -> dict:
        gate.wait(0.2)
        applied.append(item)
        return {"item": item}

    registry = ToolRegistry()
    registry.register(slow, name="change", description="Change.", changes_state=True, idempotent=False)
    outcomes = ToolExecutor(registry).run_many([{**CALL, "id": "a"}, {**CALL, "id": "b"}], lambda c: ctx(ledger))
    assert applied == ["a"] and [o.status for o in outcomes] == ["ok", "ok"]


# ------------------------------------------------------------------------------------------ harness


def test_an_outside_change_replayed_after_a_fork_is_applied_once(tmp_path):
    # every step saved: the fork goes back to the step before the call was decided
    with Harness("sim:clean", domain=DOMAIN, design=NO_CONFIRM,
                 settings=Settings(data_dir=tmp_path, durability="sync")) as h:
        done = h.send("t", ASK, "reader-1")
        assert [(c["name"], c["status"]) for c in done.tool_calls] == [("renew_loan", "ok")]
        before = next(c for c in reversed(h.history("t")) if c.next == ["action"])
        again = h.finish("t", before.checkpoint_id)  # the message runs its action again, with fresh call ids
        assert [(c["name"], c["status"]) for c in again.tool_calls] == [("renew_loan", "ok")]
        assert again.phase == "done" and "renewed" in again.reply
    assert len(renewals(tmp_path)) == 1


def crash_between_tool_and_settle(data_dir: Path, domain: str, design: str = NO_CONFIRM,
                                  durability: str = "exit") -> subprocess.CompletedProcess:
    """A process that dies (``os._exit``, no cleanup) right after the tool returned, before the ledger settles."""
    script = textwrap.dedent(f"""
        import os
        from lg_harness.graphs.app import Harness, Settings
        from lg_harness_lab.benchmarks import outside_pack
        from lg_harness.tools.ledger import SqliteLedger
        SqliteLedger.settle = lambda self, key, result: os._exit(137)
        with Harness("sim:clean", outside_pack.{domain}, {design!r},
                     Settings(data_dir={str(data_dir)!r}, durability={durability!r})) as h:
            h.send("t", {ASK!r}, "reader-1")
        """)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, env=env)


@pytest.mark.slow
@pytest.mark.parametrize("durability", ["exit", "sync"])
def test_a_crash_between_an_outside_change_and_its_settle_never_applies_it_twice_nor_skips_it(tmp_path, durability):
    """With ``exit`` (the default) the crash left nothing of the message but its user row, and finishing runs
    it from its start; with ``sync`` finishing resumes at the step the crash stopped."""
    died = crash_between_tool_and_settle(tmp_path, "DOMAIN", durability=durability)
    assert died.returncode == 137, died.stderr
    assert len(renewals(tmp_path)) == 1, "the tool ran before the crash"

    with Harness("sim:clean", domain=DOMAIN, design=NO_CONFIRM,
                 settings=Settings(data_dir=tmp_path, durability=durability)) as h, \
            capture_spans() as exporter:
        finished = h.finish("t")
        assert len(renewals(tmp_path)) == 1, "finishing the message did not renew a second time"
        assert finished.handoff is not None
        # not silently skipped either: the customer is told it is being checked, and a person gets the call
        ticket = finished.handoff["ticket"]
        assert finished.reply == say("change_checking", "en", h.domain, ticket=ticket)
        assert finished.waiting_for_human and "renew_loan" not in finished.reply
        [pending] = finished.handoff["uncertain_changes"]
        assert pending["tool"] == "renew_loan" and pending["args"] == {"book_id": "BOOK-0042"}
        assert pending["ledger_key"] == change_key("t", 1, "renew_loan", {"book_id": "BOOK-0042"})
        assert "crash" in finished.handoff["reason"]
        assert [w["thread_id"] for w in h.waiting_threads()] == ["t"]
        assert [e.status for e in h.stores.ledger.pending("t")] == ["pending"]
        audited = [r for r in h.audit.export() if r.get("kind") == "tool" and r.get("name") == "renew_loan"]
        assert [r["error_type"] for r in audited][-1:] == ["OutcomeUncertainError"]
        events = {e.name for span in exporter.get_finished_spans() for e in span.events}
        assert {"change.uncertain", "change.uncertain.handoff"} <= events
        # a further message while a person checks does not run it either
        h.send("t", ASK, "reader-1")
        assert len(renewals(tmp_path)) == 1
        # the person checks the outside system and answers: the change is settled as checked, never run again
        h.human_reply("t", "I checked: your loan of BOOK-0042 was renewed once.")
        assert h.stores.ledger.pending() == []
        assert h.stores.ledger.get(pending["ledger_key"]).result == {"checked_by_person": True}
        if durability == "sync":  # a step of the message to replay from
            before = next(c for c in reversed(h.history("t")) if c.next == ["action"])
            h.finish("t", before.checkpoint_id)  # even a replay of that message answers from the record
    assert len(renewals(tmp_path)) == 1


@pytest.mark.slow
def test_a_crash_before_the_settle_of_an_idempotent_outside_change_runs_it_again_with_its_key(tmp_path):
    died = crash_between_tool_and_settle(tmp_path, "DOMAIN_KEYED")
    assert died.returncode == 137, died.stderr
    with Harness("sim:clean", domain=DOMAIN_KEYED, design=NO_CONFIRM,
                 settings=Settings(data_dir=tmp_path)) as h:
        finished = h.finish("t")
        assert finished.phase == "done" and not finished.waiting_for_human, finished.reply
        [entry] = [h.stores.ledger.get(r["ledger_key"]) for r in finished.values["tool_log"] if r.get("ledger_key")]
        assert entry.status == "settled" and entry.attempts == 2
    [line] = renewals(tmp_path)  # the outside system saw the same key twice and applied it once
    assert line["key"] == change_key("t", 1, "renew_loan", {"book_id": "BOOK-0042"})


def test_a_chinese_customer_hears_about_the_check_in_chinese(tmp_path):
    with Harness("sim:clean", domain=DOMAIN, design=NO_CONFIRM, settings=Settings(data_dir=tmp_path)) as h:
        h.stores.ledger.begin(change_key("t", 1, "renew_loan", {"book_id": "BOOK-0042"}), "t", "renew_loan",
                              {"book_id": "BOOK-0042"})
        # a Chinese request for the same renewal, with the ledger already holding its start
        result = h.send("t", "请帮我 renew BOOK-0042", "reader-1")
    assert result.handoff is not None
    assert result.waiting_for_human and result.reply == say("change_checking", "zh", DOMAIN,
                                                                    ticket=result.handoff["ticket"])
    assert renewals(tmp_path) == []
