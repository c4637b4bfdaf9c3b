"""One conformance suite for the stores, run on both backends: embedded SQLite files and a real PostgreSQL.

Transcripts and the handoff queue, facts, the audit log, the per-thread queue and leases, migrations, and
the harness end to end (checkpoints, history, fork, state) must behave the same on either.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langgraph.types import Durability

from lg_harness.errors import HarnessError, UsageError
from lg_harness.memory.transcript import author_label
from lg_harness.service.leases import LeaseOrder, ThreadBusy, ThreadQueue
from tests.engines import chroma_server, database_url, postgres_server  # noqa: F401 - fixtures

pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")


class Backend:
    def __init__(self, kind: str, tmp: Path, url: str | None) -> None:
        self.kind, self.tmp, self.url = kind, tmp, url
        self.pool = None
        self._closers: list[Any] = []
        if url:
            from langgraph.checkpoint.postgres import PostgresSaver

            from lg_harness.service.pgdb import migrate, open_pool

            self.pool = open_pool(url)
            migrate(self.pool, PostgresSaver(self.pool))

    def _keep(self, store: Any) -> Any:
        self._closers.append(store)
        return store

    def transcripts(self) -> Any:
        from lg_harness.memory.pg_stores import PgTranscriptStore
        from lg_harness.memory.transcript import TranscriptStore

        return self._keep(PgTranscriptStore(self.pool) if self.pool else TranscriptStore(self.tmp / "t.sqlite"))

    def facts(self, clock: Any = time.time) -> Any:
        from lg_harness.memory.facts import FactStore
        from lg_harness.memory.pg_stores import PgFactStore

        return self._keep(PgFactStore(self.pool, clock=clock) if self.pool else FactStore(self.tmp / "f.sqlite",
                                                                                          clock=clock))

    def audit(self) -> Any:
        from lg_harness.obs.audit import AuditLog
        from lg_harness.obs.pg_audit import PgAuditLog

        return self._keep(PgAuditLog(self.pool) if self.pool else AuditLog.in_dir(self.tmp))

    def queue(self, worker: str, ttl: float = 30.0) -> ThreadQueue:
        if self.pool:
            return ThreadQueue.postgres(self.pool, ttl=ttl, worker=worker)
        return self._keep(ThreadQueue.sqlite(self.tmp / "queue.sqlite", ttl=ttl, worker=worker))

    def ledger(self) -> Any:
        from lg_harness.tools.ledger import PgLedger, SqliteLedger

        return self._keep(PgLedger(self.pool) if self.pool else SqliteLedger(self.tmp / "ledger.sqlite"))

    def close(self) -> None:
        for store in reversed(self._closers):
            store.close()
        if self.pool:
            self.pool.close()


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    url = request.getfixturevalue("database_url") if request.param == "postgres" else None
    b = Backend(request.param, tmp_path, url)
    yield b
    b.close()


# ------------------------------------------------------------------------------------- transcripts


@pytest.mark.slow
def test_transcript_keeps_every_message_in_order_per_thread(backend: Backend) -> None:
    t = backend.transcripts()
    t.append("a", 1, "user", "hello")
    t.append("b", 1, "user", "other thread")
    t.append("a", 1, "assistant", "hi!")
    t.append("a", 2, "user", "where is it?")
    rows = t.read("a")
    assert [(r["seq"], r["turn"], r["role"], r["content"]) for r in rows] == [
        (1, 1, "user", "hello"), (2, 1, "assistant", "hi!"), (3, 2, "user", "where is it?")]
    assert [r["content"] for r in t.read("b")] == ["other thread"]
    assert t.read("nobody") == []


def test_the_transcript_says_who_wrote_each_row_and_keeps_it_as_written(backend: Backend) -> None:
    t = backend.transcripts()
    t.append("a", 1, "user", "我要找人工")
    t.append("a", 1, "assistant", "I've passed this conversation to a human colleague.")
    t.append("a", 1, "assistant", "您好，我是客服小王。请问还有什么问题？", author="human", author_name="wang")
    rows = t.read("a")
    assert [(r["author"], r["author_name"]) for r in rows] == [("customer", None), ("bot", None), ("human", "wang")]
    assert rows[2]["content"] == "您好，我是客服小王。请问还有什么问题？" and rows[2]["role"] == "assistant"
    assert [author_label(r) for r in rows] == ["customer", "bot", "wang (human)"]
    with pytest.raises(UsageError, match="author must be one of"):
        t.append("a", 1, "assistant", "hi", author="alice")


def test_a_fork_leaves_the_old_branch_off_the_transcript(backend: Backend) -> None:
    t = backend.transcripts()
    for turn, role, text in ((1, "user", "q1"), (1, "assistant", "a1"), (2, "user", "q2"), (2, "assistant", "a2"),
                             (3, "user", "q3"), (3, "assistant", "a3")):
        t.append("a", turn, role, text)
    t.fork("a", 2, mid_message=True)  # back into message 2: its question stays, its answer goes
    assert [r["content"] for r in t.read("a")] == ["q1", "a1", "q2"]
    t.append("a", 2, "assistant", "a2 again")
    t.fork("a", 1)  # back to the end of message 1
    assert [r["content"] for r in t.read("a")] == ["q1", "a1"]
    assert [r["content"] for r in t.read("a", every=True)] == ["q1", "a1", "q2", "a2", "q3", "a3", "a2 again"]
    t.append("a", 2, "user", "q2 on the new branch")
    assert [(r["seq"], r["content"]) for r in t.read("a")][-1] == (8, "q2 on the new branch")


def test_a_transcript_from_before_authors_is_migrated(backend: Backend, monkeypatch: pytest.MonkeyPatch) -> None:
    """Rows written before authors: the customer's are the customer's, a reply is unknown (the bot's or a
    human's: nothing in the row says), shown as ``assistant``; new rows get authors."""
    old_rows = (("a", 1, 1, "user", "hello", 1.0), ("a", 2, 1, "assistant", "hi", 2.0))
    if backend.pool is None:
        import sqlite3

        conn = sqlite3.connect(backend.tmp / "t.sqlite")
        conn.execute("CREATE TABLE transcript (thread_id TEXT NOT NULL, seq INTEGER NOT NULL, turn INTEGER NOT NULL,"
                     " role TEXT NOT NULL, content TEXT NOT NULL, created_at REAL NOT NULL, PRIMARY KEY (thread_id, "
                     "seq))")
        conn.executemany("INSERT INTO transcript VALUES (?, ?, ?, ?, ?, ?)", old_rows)
        conn.commit()
        conn.close()
    else:
        from lg_harness.service import pgdb

        with backend.pool.connection() as conn:  # back to the schema of migration 9, with rows in it
            conn.execute("DROP TABLE transcript")
            conn.execute("CREATE TABLE transcript (thread_id TEXT NOT NULL, seq INTEGER NOT NULL, turn INTEGER NOT "
                         "NULL, role TEXT NOT NULL, content TEXT NOT NULL, created_at DOUBLE PRECISION NOT NULL, "
                         "PRIMARY KEY (thread_id, seq))")
            for row in old_rows:
                conn.execute("INSERT INTO transcript VALUES (%s, %s, %s, %s, %s, %s)", row)
            conn.execute(f"DELETE FROM {pgdb.SCHEMA}.migrations WHERE version >= 10")
        assert pgdb.migrate(backend.pool)[0] == 10
    t = backend.transcripts()
    t.append("a", 2, "user", "again")
    rows = t.read("a")
    assert [(r["content"], r["author"], author_label(r)) for r in rows] == [
        ("hello", "customer", "customer"), ("hi", None, "assistant"), ("again", "customer", "customer")]


def test_thread_setup_is_the_last_one_recorded(backend: Backend) -> None:
    t = backend.transcripts()
    assert t.setup("a") is None and t.domain_of("a") is None
    t.record_setup("a", "harness", "sim", "shop")
    t.record_setup("a", "naive", None, "helpdesk")
    assert t.setup("a") == ("naive", None)
    assert t.domain_of("a") == "helpdesk"


def test_handoff_queue_oldest_first_once_per_ticket(backend: Backend) -> None:
    t = backend.transcripts()
    t.open_handoff("a", "T1")
    time.sleep(0.01)
    t.open_handoff("b", "T2")
    t.open_handoff("a", "T1")  # the same ticket again changes nothing
    assert t.waiting_handoffs() == ["a", "b"]
    t.answer_handoff("a")
    assert t.waiting_handoffs() == ["b"]


def test_a_human_holds_a_thread_until_released(backend: Backend) -> None:
    t = backend.transcripts()
    t.open_handoff("a", "T1")
    t.hold_handoff("a")  # the human answered: no longer waiting, held
    assert t.waiting_handoffs() == [] and t.held_handoffs() == ["a"]
    assert t.release_handoff("a") is True
    assert t.held_handoffs() == [] and t.release_handoff("a") is False


def test_the_desk_lists_threads_by_last_activity_and_searches_id_or_owner(backend: Backend) -> None:
    t = backend.transcripts()
    for thread, owner in (("order-a", "U001"), ("order-b", "U002"), ("chat-c", "U001")):
        t.claim(thread, owner)
        t.record_setup(thread, "harness", "sim", "shop")
        t.append(thread, 1, "user", "hi")
        time.sleep(0.01)
    t.append("order-a", 2, "user", "again")  # the newest activity
    rows = t.threads()
    assert [r["thread_id"] for r in rows] == ["order-a", "chat-c", "order-b"]
    assert rows[0]["owner"] == "U001" and rows[0]["design"] == "harness" and rows[0]["domain"] == "shop"
    assert rows[0]["last_at"] > rows[1]["last_at"]
    assert [r["thread_id"] for r in t.threads("ORDER")] == ["order-a", "order-b"]
    assert [r["thread_id"] for r in t.threads("u002")] == ["order-b"]
    assert [r["thread_id"] for r in t.threads(owner="U001")] == ["order-a", "chat-c"]
    assert [r["thread_id"] for r in t.threads("order", owner="U001")] == ["order-a"]
    assert len(t.threads(limit=1)) == 1 and t.threads("%") == []


def test_concurrent_appends_on_one_thread_never_collide(backend: Backend) -> None:
    t = backend.transcripts()

    def write(k: int) -> None:
        for i in range(10):
            t.append("x", 1, "user", f"{k}-{i}")

    workers = [threading.Thread(target=write, args=(k,)) for k in range(4)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    rows = t.read("x")
    assert sorted(r["content"] for r in rows) == sorted(f"{k}-{i}" for k in range(4) for i in range(10))
    assert [r["seq"] for r in rows] == list(range(1, 41))


# ----------------------------------------------------------------------------------------- facts


def test_facts_confirmed_only_versioned_and_per_user(backend: Backend) -> None:
    f = backend.facts()
    assert f.put("u1", "address", "1 Elm St", confirmed=False) is None
    assert f.get("u1", "address") is None
    first = f.put("u1", "address", "1 Elm St", confirmed=True, confidence=0.6, source="t1/1", now=100.0)
    again = f.put("u1", "address", "1 Elm St", confirmed=True, confidence=0.9, source="t2/5", now=200.0)
    assert again.id == first.id and again.confidence == 0.9 and again.source == "t1/1" and again.updated_at == 200.0
    new = f.put("u1", "address", {"street": "2 Oak Ave"}, confirmed=True, now=300.0)
    assert new.id != first.id and f.value("u1", "address") == {"street": "2 Oak Ave"}
    history = f.history("u1", "address")
    assert [h.stale for h in history] == [True, False]
    assert f.get("u2", "address") is None and f.all("u2") == []
    f.put("u1", "language", "en", confirmed=True, now=300.0)
    assert [x.key for x in f.all("u1")] == ["address", "language"]
    assert len(f.all("u1", include_stale=True)) == 3
    assert f.mark_stale("u1", "language", now=400.0) is True
    assert f.mark_stale("u1", "language", now=400.0) is False
    assert f.get("u1", "language") is None


def test_memory_hits_and_pending_writes_per_user(backend: Backend) -> None:
    f = backend.facts(clock=lambda: 50.0)
    assert f.hits("u1", ["a", "b"]) == {}
    f.add_hits("u1", ["a", "b"])
    f.add_hits("u1", ["a"], count=2)
    f.add_hits("u2", ["a"])
    assert f.hits("u1", ["a", "b", "c"]) == {"a": 3, "b": 1} and f.hits("u2", ["a"]) == {"a": 1}
    f.enqueue("t:1", "u1", {"outcomes": ["x"], "facts": [["language", "en", "user"]], "hits": ["a"]})
    f.enqueue("t:2", "u2", {"outcomes": [], "facts": [], "hits": []})
    f.enqueue("t:1", "u1", {"outcomes": ["y"], "facts": [], "hits": []})  # the same message again replaces it
    taken = f.claim(now=1000.0)
    assert [(w.key, w.user_id, w.payload["outcomes"]) for w in taken] == [("t:1", "u1", ["y"]), ("t:2", "u2", [])]
    assert f.claim(now=1001.0) == [], "claimed rows are not handed out twice"
    assert [w.key for w in f.claim(now=1000.0 + 61)] == ["t:1", "t:2"], "a dead writer's claim expires"
    f.settle(["t:1", "t:2"])
    assert f.claim(now=5000.0) == []


# ----------------------------------------------------------------------------------------- audit


def test_audit_records_exports_redacted_and_computes_stats(backend: Backend) -> None:
    a = backend.audit()
    a.record_model("sim", [{"role": "user", "content": "call me at +1 415-555-0100"}], {"content": "ok"},
                   input_tokens=100, output_tokens=5, duration_ms=12.0, thread_id="t", turn=1)
    a.record_tool("get_order", {"order_id": "O1"}, {"status": "shipped"}, duration_ms=3.0, thread_id="t", turn=1)
    a.record_tool("get_order", {"order_id": "O2"}, {"error": "x"}, status="error", error_type="Timeout",
                  thread_id="t", turn=1)
    a.record_message("t", 1, completed=True, rounds=1, latency_ms=900.0, input_tokens=100)
    rows = a.export(thread_id="t")
    assert [r["kind"] for r in rows] == ["model", "tool", "tool"]
    assert "415-555-0100" not in str(rows[0]["input"]) and "[phone]" in str(rows[0]["input"])
    # Masked at rest (issue 15): no original is kept on either backend, so even an unredacted export has none.
    assert "415-555-0100" not in str(a.export(thread_id="t", redact=False)[0]["input"])
    assert a.export(thread_id="other") == []
    stats = {s.metric: s.value for s in a.stats()}
    assert stats["tool failure rate"] == 0.5
    assert stats["input tokens / message (mean)"] == 100
    assert stats["task completion"] == 1.0
    assert len(a.messages("t")) == 1


def test_audit_keeps_the_desk_actions_under_the_agents_name_masked(backend: Backend) -> None:
    a = backend.audit()
    a.record_desk("alice", "take", "t")
    a.record_desk("alice", "answer", "t", "I have your number, 415-555-0100")
    a.record_desk("bob", "fork", "u", {"checkpoint_id": "c1"})
    rows = a.desk_actions("t")
    assert [(r["agent"], r["action"]) for r in rows] == [("alice", "take"), ("alice", "answer")]
    assert rows[1]["detail"] == "I have your number, [phone]" and rows[0]["detail"] is None
    assert [r["detail"] for r in a.desk_actions() if r["thread_id"] == "u"] == [{"checkpoint_id": "c1"}]


# ----------------------------------------------------------------------------- queue and leases


def stored(queue: ThreadQueue, message_id: int) -> dict[str, Any]:
    """The row of a message the queue was given (kept whatever its status)."""
    row = queue.get(message_id)
    assert row is not None, message_id
    return row


def test_queue_serves_a_thread_in_arrival_order_one_at_a_time(backend: Backend) -> None:
    q1, q2 = backend.queue("w1"), backend.queue("w2")
    ids = [q1.enqueue("t", "send", {"text": f"m{i}"}) for i in range(3)]
    other = q2.enqueue("u", "send", {"text": "elsewhere"})
    first = q1.claim(thread_id="t")
    assert first is not None and first.id == ids[0] and first.payload == {"text": "m0"} and not first.recovered
    assert q2.claim(thread_id="t") is None  # the thread is leased
    got = q2.claim()
    assert got is not None and got.id == other  # another thread is free
    assert q1.complete(first, "done", {"reply": "r0"})
    second = q2.claim(thread_id="t")
    assert second is not None and second.id == ids[1]
    assert q2.complete(second, "done", {"reply": "r1"})
    row = stored(q1, ids[0])
    assert row["status"] == "done" and row["result"] == {"reply": "r0"} and row["worker"] == "w1"


def test_dead_workers_lease_expires_and_another_finishes_the_message(backend: Backend) -> None:
    dead, alive = backend.queue("dead", ttl=1.0), backend.queue("alive", ttl=1.0)
    mid = dead.enqueue("t", "send", {"text": "hi"})
    claim = dead.claim()
    assert claim is not None
    dead.note_turn(claim, 4)
    assert alive.claim() is None  # still leased
    time.sleep(1.3)  # the dead worker never renews
    again = alive.claim()
    assert again is not None and again.id == mid and again.recovered and again.attempts == 2
    assert again.turn_before == 4
    assert not dead.complete(claim, "done", {"reply": "late"})  # the lost worker cannot store an outcome
    assert alive.complete(again, "done", {"reply": "ok"})
    assert stored(alive, mid)["result"] == {"reply": "ok"} and stored(alive, mid)["worker"] == "alive"


def test_renewal_keeps_the_lease_while_the_message_runs(backend: Backend) -> None:
    q, other = backend.queue("w1", ttl=0.6), backend.queue("w2", ttl=0.6)
    q.enqueue("t", "send", {})
    claim = q.claim()
    assert claim is not None
    with q.holding(claim) as cancel:
        time.sleep(1.5)  # longer than the ttl: only renewal keeps it
        assert other.claim() is None
        assert not cancel.is_set()
    assert q.complete(claim, "done", {})


def test_busy_policies_reject_and_interrupt(backend: Backend) -> None:
    q = backend.queue("w1")
    running = q.enqueue("t", "send", {"text": "one"})
    claim = q.claim()
    assert claim is not None
    waiting = q.enqueue("t", "send", {"text": "two"})
    with pytest.raises(ThreadBusy, match="busy"):
        q.enqueue("t", "send", {"text": "three"}, policy="reject")
    assert [r["payload"]["text"] for r in q.thread_rows("t")] == ["one", "two"]  # the rejected one is not kept
    newest = q.enqueue("t", "send", {"text": "four"}, policy="interrupt")
    held, asked = q.renew(claim)
    assert held and asked  # the running message is asked to stop at its next node
    assert stored(q, waiting)["status"] == "cancelled"
    assert stored(q, newest)["status"] == "queued"
    with pytest.raises(HarnessError, match="policy"):
        q.enqueue("t", "send", {}, policy="later")
    q.complete(claim, "cancelled", error="interrupted")
    assert stored(q, running)["status"] == "cancelled"
    last = q.claim(thread_id="t")
    assert last is not None and last.id == newest


def test_lease_order_runs_callers_in_arrival_order_across_queues(backend: Backend) -> None:
    orders = [LeaseOrder(backend.queue(f"w{i}")) for i in range(3)]
    log: list[tuple[str, str]] = []
    started = []

    def caller(k: int) -> None:
        with orders[k % 3].turn("t"):
            log.append(("in", str(k)))
            time.sleep(0.05)
            log.append(("out", str(k)))

    for k in range(6):
        t = threading.Thread(target=caller, args=(k,))
        t.start()
        started.append(t)
        # Arrival order 0..5: caller k has queued its turn before k+1 starts (a fixed sleep was not enough
        # on a loaded machine, and the test then checked the scheduler instead of the order).
        deadline = time.monotonic() + 30
        while len(orders[0].queue.thread_rows("t")) < k + 1 and time.monotonic() < deadline:
            time.sleep(0.005)
    for t in started:
        t.join()
    assert log == [x for k in range(6) for x in (("in", str(k)), ("out", str(k)))]


def test_a_turn_whose_waiting_caller_died_is_abandoned_not_blocking(backend: Backend) -> None:
    q = backend.queue("w1", ttl=0.5)
    q.enqueue("t", "turn")  # a caller that never comes back for it
    later = q.enqueue("t", "send", {"text": "hi"})
    time.sleep(0.8)
    claim = q.claim()
    assert claim is not None and claim.id == later
    assert q.thread_rows("t")[0]["status"] == "abandoned"


# ------------------------------------------------------------------------------------ change ledger


def test_ledger_records_pending_then_settled_and_answers_a_repeat_from_the_record(backend: Backend) -> None:
    ledger, key, thread = backend.ledger(), f"k-{uuid.uuid4().hex}", f"t-{uuid.uuid4().hex}"
    assert ledger.begin(key, thread, "renew", {"id": "B-1"}) is None, "new: run it"
    [pending] = ledger.pending(thread)
    assert (pending.key, pending.status, pending.tool, pending.args, pending.attempts) == \
        (key, "pending", "renew", {"id": "B-1"}, 1)
    again = ledger.begin(key, thread, "renew", {"id": "B-1"})
    assert again.status == "pending" and again.attempts == 1, "started before and never settled"
    assert ledger.get(key).attempts == 2
    ledger.settle(key, {"status": "renewed", "名": "续借"})
    assert ledger.pending(thread) == []
    done = ledger.begin(key, thread, "renew", {"id": "B-1"})
    assert done.status == "settled" and done.result == {"status": "renewed", "名": "续借"}
    assert ledger.get(key).attempts == 2, "a settled call is answered, not attempted"


def test_ledger_lets_a_failed_change_run_again(backend: Backend) -> None:
    ledger, key, thread = backend.ledger(), f"k-{uuid.uuid4().hex}", f"t-{uuid.uuid4().hex}"
    ledger.begin(key, thread, "renew", {})
    ledger.fail(key, "transient", "backend 503")
    failed = ledger.get(key)
    assert (failed.status, failed.error_type, failed.error) == ("failed", "transient", "backend 503")
    assert ledger.begin(key, thread, "renew", {}) is None, "nothing was applied: run it"
    assert ledger.get(key).status == "pending" and ledger.get(key).error is None
    assert ledger.pending(f"other-{thread}") == [] and [e.key for e in ledger.pending(thread)] == [key]


def test_ledger_settles_the_changes_a_person_checked(backend: Backend) -> None:
    ledger, thread = backend.ledger(), f"t-{uuid.uuid4().hex}"
    checked, other = f"k-{uuid.uuid4().hex}", f"k-{uuid.uuid4().hex}"
    ledger.begin(checked, thread, "renew", {})
    ledger.begin(other, thread, "renew", {"id": 2})
    assert ledger.resolve([checked]) == 1 and ledger.resolve([checked]) == 0
    assert ledger.get(checked).status == "settled" and ledger.get(checked).result == {"checked_by_person": True}
    assert [e.key for e in ledger.pending(thread)] == [other], "only what the person was shown"


def test_ledger_keeps_the_first_decision_and_prune_forgets_all_but_pending_changes(backend: Backend) -> None:
    ledger, thread = backend.ledger(), f"t-{uuid.uuid4().hex}"
    first = {"content": "", "emitted": [{"text": "a"}], "calls": [{"name": "file", "args": {"text": "a"}, "id": "1"}]}
    assert ledger.decision(f"{thread}:1:1:x") is None
    assert ledger.decide(f"{thread}:1:1:x", thread, first) == first
    again = {**first, "calls": [{"name": "file", "args": {"text": "a, reworded"}, "id": "2"}]}
    assert ledger.decide(f"{thread}:1:1:x", thread, again) == first, "the first decision stands"
    assert ledger.decision(f"{thread}:1:1:x") == first
    ledger.begin(f"{thread}:done", thread, "file", {})
    ledger.settle(f"{thread}:done", {"ok": 1})
    ledger.begin(f"{thread}:open", thread, "file", {})
    assert ledger.forget([thread]) == 2
    assert ledger.decision(f"{thread}:1:1:x") is None and ledger.get(f"{thread}:done") is None
    assert [e.key for e in ledger.pending(thread)] == [f"{thread}:open"], "a person still has to check it"


def test_ledger_begins_a_key_once_when_many_workers_race(backend: Backend) -> None:
    key, thread = f"k-{uuid.uuid4().hex}", f"t-{uuid.uuid4().hex}"
    ledgers = [backend.ledger() for _ in range(6)]  # one per worker: separate connections
    verdicts: list[Any] = []
    start = threading.Barrier(len(ledgers))

    def race(ledger: Any) -> None:
        start.wait()
        verdicts.append(ledger.begin(key, thread, "renew", {}))

    workers = [threading.Thread(target=race, args=(led,)) for led in ledgers]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert sum(v is None for v in verdicts) == 1, "exactly one worker may run the change"
    assert ledgers[0].get(key).attempts == len(ledgers)


def test_harness_applies_an_outside_change_once_when_a_fork_replays_it(backend: Backend) -> None:
    from lg_harness.graphs.app import Harness, Settings
    from lg_harness_lab.benchmarks.outside_pack import DOMAIN, renewals

    data, thread = backend.tmp / "data", f"lib-{uuid.uuid4().hex[:8]}"
    # every step saved: the fork goes back into the message, to the step before the call was decided
    with Harness("sim:clean", domain=DOMAIN, design="harness-no:confirm_changes",
                 settings=Settings(data_dir=data, database_url=backend.url, durability="sync")) as h:
        h.send(thread, "Please renew BOOK-0042", "reader-1")
        before = next(c for c in reversed(h.history(thread)) if c.next == ["action"])
        replayed = h.finish(thread, before.checkpoint_id)
        assert replayed.phase == "done" and [c["status"] for c in replayed.tool_calls] == ["ok"]
        keys = [r["ledger_key"] for r in replayed.values["tool_log"] if r.get("ledger_key")]
        assert [h.stores.ledger.get(k).status for k in keys] == ["settled"]
    assert len(renewals(data)) == 1


# ------------------------------------------------------------------------------------ the harness


@pytest.mark.parametrize("durability", ["exit", "sync"])
def test_harness_checkpoints_history_fork_and_state(backend: Backend, durability: Durability) -> None:
    from lg_harness.graphs.app import Harness, Settings

    with Harness("sim:clean", design="harness",
                 settings=Settings(data_dir=backend.tmp / "data", database_url=backend.url,
                                   durability=durability)) as h:
        first = h.send("t1", "where is my order ORD-10134?", "U001")
        assert "ORD-10134" in first.reply
        second = h.send("t1", "thanks", "U001")
        assert second.phase == "done"
        history = h.history("t1")
        # exit saves each message's end; sync every step, and keeps them for the last two messages
        assert len(history) == 2 if durability == "exit" else len(history) >= 4
        turns = [r["turn"] for r in h.transcripts.read("t1") if r["role"] == "user"]
        assert turns == [1, 2]
        earlier = next(c for c in history if c.checkpoint_id == first.checkpoint_id)
        h.fork("t1", earlier.checkpoint_id)
        assert h.state("t1")["values"]["turn"] == 1
        with pytest.raises(HarnessError, match="unknown thread 't1'"):
            h.send("t1", "hi", user_id="U002")
        assert h.audit.messages("t1")
    with Harness("sim:clean", design="harness",
                 settings=Settings(data_dir=backend.tmp / "data", database_url=backend.url)) as again:
        assert again.state("t1")["values"]["turn"] == 1  # what one process wrote, the next one reads


# ------------------------------------------------------------------------------------ migrations


def test_migrations_are_versioned_and_run_once_even_concurrently(database_url: str) -> None:  # noqa: F811
    from langgraph.checkpoint.postgres import PostgresSaver

    from lg_harness.service.pgdb import MIGRATIONS, migrate, open_pool, schema_version

    pool = open_pool(database_url)
    try:
        applied: list[list[int]] = []
        errors: list[BaseException] = []

        def start() -> None:
            try:
                applied.append(migrate(pool, PostgresSaver(pool)))
            except BaseException as exc:  # noqa: BLE001 - collected for the assertion
                errors.append(exc)

        workers = [threading.Thread(target=start) for _ in range(4)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        assert not errors
        assert sorted(applied, key=len) == [[], [], [], [v for v, _, _ in MIGRATIONS]]
        assert schema_version(pool) == MIGRATIONS[-1][0]
        assert migrate(pool) == []
    finally:
        pool.close()


# ------------------------------------------------------------------------------------------ retention


def test_prune_keep_latest_then_delete_only_idle_threads(backend: Backend) -> None:
    from lg_harness.graphs.app import Harness, Settings
    from lg_harness.service.prune import prune

    # every step saved, so keep_latest has steps to drop
    with Harness("sim:clean", design="harness",
                 settings=Settings(data_dir=backend.tmp / "data", database_url=backend.url,
                                   durability="sync")) as h:
        h.send("old", "where is my order ORD-10134?", "U001")
        h.send("old", "thanks", "U001")
        time.sleep(0.05)
        cutoff = time.time()
        time.sleep(0.05)
        h.send("new", "hello", "U001")
        new_history = len(h.history("new"))
        old_turn = h.state("old")["values"]["turn"]
        assert len(h.history("old")) > 2

        kept = prune(h, 60, keep_latest=True, now=cutoff + 60)
        assert kept["thread_ids"] == ["old"] and kept["strategy"] == "keep_latest"
        assert kept["checkpoints_before"] > kept["checkpoints_after"] == 1
        assert len(h.history("old")) == 1
        assert h.state("old")["values"]["turn"] == old_turn  # still resumable, state intact
        assert len(h.transcripts.read("old")) == 4
        assert h.send("old", "thanks again", "U001").phase == "done"
        assert len(h.history("new")) == new_history

        deleted = prune(h, 60, now=time.time() + 61)
        assert set(deleted["thread_ids"]) == {"old", "new"} and deleted["checkpoints_after"] == 0
        assert not h.thread_exists("old") and h.transcripts.read("old") == [] and h.audit.messages("old") == []


def test_prune_age_is_checked() -> None:
    from lg_harness.service.prune import parse_age

    assert parse_age("30d") == 30 * 86400 and parse_age("12h") == 43200 and parse_age("90m") == 5400
    with pytest.raises(HarnessError, match="e.g. 30d"):
        parse_age("30 days")


# ---------------------------------------------------------------------------------- experiences


@pytest.fixture(params=["embedded", "server"])
def chroma_client(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    import uuid

    from lg_harness.graphs.storage import chroma_client as http_client

    if request.param == "embedded":
        import chromadb
        from chromadb.config import Settings

        client = chromadb.PersistentClient(path=str(tmp_path / "chroma"), settings=Settings(anonymized_telemetry=False))
    else:
        client = http_client(request.getfixturevalue("chroma_server"))
    yield client, f"exp-{uuid.uuid4().hex[:8]}"


def test_batched_experience_writes_equal_one_by_one(chroma_client: Any) -> None:
    from lg_harness.memory.experiences import ExperienceStore

    client, name = chroma_client
    texts = ["get_order_status(order_id=ORD-1) succeeded: status=shipped",
             "get_order_status(order_id=ORD-1) succeeded: status=shipped",  # a duplicate inside the batch
             "the customer prefers email over phone",
             "the customer does not prefer email over phone"]  # a conflict with the one before
    one = ExperienceStore(client=client, collection=name + "a", clock=lambda: 1000.0)
    many = ExperienceStore(client=client, collection=name + "b", clock=lambda: 1000.0)
    one.add("u1", "the customer prefers email over phone", kind="outcome")  # already known to both
    many.add("u1", "the customer prefers email over phone", kind="outcome")
    ids_one = [one.add("u1", t, kind="outcome", confidence=0.9) for t in texts]
    ids_many = many.add_many("u1", texts, kind="outcome", confidence=0.9)
    assert ids_many == ids_one
    assert ids_many[0] == ids_many[1] and ids_many[2] not in ids_many[:2]

    def shape(store: ExperienceStore) -> list[tuple[Any, ...]]:
        return sorted((e.id, e.text, e.mentions, e.confidence, e.conflicts_with) for e in store.all("u1"))

    assert shape(many) == shape(one)
    assert many.add_many("u1", []) == []
    assert many.all("u2") == []
