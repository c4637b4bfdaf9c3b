"""Two workers on one Postgres, in one process so a stall can be placed exactly (as a SIGSTOP would).

* A worker stalls in the middle of a message past its lease; another takes the message over and finishes it.
  When the stalled one wakes it writes nothing more: no checkpoint, transcript row, node event or outcome,
  so the client gets one reply and the thread's order holds (``service.fencing``).
* A worker dies after the transcript took a message but before its first checkpoint; the worker that
  finishes it leaves the message in the transcript once.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.runnables import RunnableConfig

from lg_harness.service.http import ServiceSettings, Worker
from tests.engines import database_url, postgres_server  # noqa: F401

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

TTL = 1.0
TEXT = "where is my order ORD-10134?"


@pytest.fixture
def workers(tmp_path: Path, database_url: str) -> Iterator[Any]:  # noqa: F811
    made: list[Worker] = []

    def make(name: str) -> Worker:
        rt = Worker(ServiceSettings(data_dir=tmp_path / name, database_url=database_url, chroma_url=None,
                              model="sim:clean", lease_ttl=TTL, threads=1, api_keys={"k": "U001"}))
        made.append(rt)
        return rt

    yield make
    for rt in made:
        rt.close()


def payload(text: str = TEXT) -> dict[str, Any]:
    return {"text": text, "user_id": "U001", "role": None}


def written(rt: Worker, thread: str, mid: int) -> tuple[Any, ...]:
    """Everything a worker writes for a message: transcript, checkpoints, node events, the queue row."""
    h = rt.harness
    transcript = [(r["role"], r["content"]) for r in h.transcripts.read(thread)]
    checkpoints = [checkpoint_id(c.config) for c in h.checkpointer.list(h.config(thread))]
    events = rt.queue.events(mid)
    row = rt.queue.get(mid)
    assert row is not None, f"no queue row {mid}"
    return transcript, checkpoints, events, {k: v for k, v in row.items() if k != "payload"}


def checkpoint_id(config: RunnableConfig) -> str:
    assert "configurable" in config, config
    return config["configurable"]["checkpoint_id"]


def test_a_stalled_worker_taken_over_writes_nothing_more_and_the_client_gets_one_reply(workers: Any) -> None:
    a, b = workers("a"), workers("b")
    mid = a.submit("t", "send", payload(), None)
    claim = a.queue.claim()
    assert claim is not None and claim.id == mid
    stalled, wake = threading.Event(), threading.Event()
    served_update, renew = a.harness.on_update, a.queue.renew

    def stall_after_first_node(thread: str, update: dict[str, Any]) -> None:
        served_update(thread, update)
        if not stalled.is_set():
            stalled.set()
            wake.wait()  # the whole worker is frozen here ...

    def frozen_renew(c: Any) -> Any:
        if stalled.is_set():
            wake.wait()  # ... its lease renewal too, as under SIGSTOP
        return renew(c)

    a.harness.on_update, a.queue.renew = stall_after_first_node, frozen_renew
    serving = threading.Thread(target=a.serve, args=(claim,))
    serving.start()
    assert stalled.wait(60)
    b.start()
    row = b.queue.wait(mid, timeout=120)
    assert row["status"] == "done" and row["worker"] == b.queue.worker and row["attempts"] == 2
    before = written(b, "t", mid)
    assert before[0] == [("user", TEXT), ("assistant", row["result"]["reply"])]

    wake.set()  # the stalled worker wakes up and carries on with the message it no longer holds
    serving.join(120)
    assert not serving.is_alive()
    assert written(b, "t", mid) == before  # not a row, checkpoint, event or outcome more
    assert a.metrics.served == {"cancelled": 1} or a.metrics.served == {"failed": 1}
    state = b.harness.graph.get_state(b.harness.config("t")).values
    assert state["turn"] == 1 and state["reply"] == row["result"]["reply"]

    nxt = b.queue.wait(b.submit("t", "send", payload("thanks"), None), timeout=120)  # the thread goes on in order
    assert nxt["status"] == "done"
    assert [r["role"] for r in b.harness.transcripts.read("t")] == ["user", "assistant"] * 2
    assert b.harness.graph.get_state(b.harness.config("t")).values["turn"] == 2


def test_a_message_whose_worker_died_before_its_first_checkpoint_is_in_the_transcript_once(workers: Any) -> None:
    a, b = workers("a"), workers("b")
    mid = a.submit("d", "send", payload(), None)
    claim = a.queue.claim()
    assert claim is not None
    # What worker a did before it died: noted the turn, took the thread, recorded the message. No checkpoint.
    a.queue.note_turn(claim, 0)
    a.harness.transcripts.claim("d", "U001")
    a.harness.transcripts.append("d", 1, "user", TEXT)
    assert b.harness.checkpointer.get_tuple(b.harness.config("d")) is None
    b.start()
    row = b.queue.wait(mid, timeout=120)
    assert row["status"] == "done" and row["attempts"] == 2 and "ORD-10134" in row["result"]["reply"]
    assert [(r["role"], r["content"]) for r in b.harness.transcripts.read("d")] == [
        ("user", TEXT), ("assistant", row["result"]["reply"])]
    assert b.harness.graph.get_state(b.harness.config("d")).values["turn"] == 1


def test_a_change_commits_only_while_its_worker_holds_the_message(tmp_path: Path, database_url: str) -> None:  # noqa: F811
    import time

    from lg_harness.domains.shop import ShopDB
    from lg_harness.domains.shop.tools import cancel_order
    from lg_harness.service.fencing import Fence, LeaseLost
    from lg_harness.service.leases import ThreadQueue
    from lg_harness.service.pgdb import migrate, open_pool
    from lg_harness.tools.context import ToolContext

    pool = open_pool(database_url)
    migrate(pool)
    shop = ShopDB.open_postgres(database_url, "shop")
    a, b = ThreadQueue.postgres(pool, ttl=0.3), ThreadQueue.postgres(pool, ttl=30)
    try:
        mid = a.enqueue("c", "send", payload("please cancel my order ORD-10185"))
        stale = a.claim()
        assert stale is not None and stale.id == mid

        def cancel(queue: ThreadQueue, claim: Any, key: str) -> dict:
            ctx = ToolContext(user_id="U001", thread_id="c", idempotency_key=key,
                              extras={"shop": shop, "commit_guard": queue.fences.domain_guard()})
            with queue.fences.holding("c", Fence(claim.id, queue.worker, claim.attempts)):
                return cancel_order(ctx, "ORD-10185")

        time.sleep(0.5)  # a's lease expires while it stalls; b takes the message over
        fresh = b.claim()
        assert fresh is not None and fresh.id == mid and fresh.recovered
        with pytest.raises(LeaseLost, match="taken over"):  # a wakes and makes its (differently keyed) call
            cancel(a, stale, "c:call-from-a")
        assert shop.query_one("SELECT status FROM orders WHERE id = 'ORD-10185'")[0] == "pending"
        assert shop.query_one("SELECT COUNT(*) FROM idempotency")[0] == 0
        assert cancel(b, fresh, "c:call-from-b")["status"] == "cancelled"  # the holder's change goes through
        assert shop.query_one("SELECT COUNT(*) FROM idempotency")[0] == 1
    finally:
        shop.close()
        pool.close()
