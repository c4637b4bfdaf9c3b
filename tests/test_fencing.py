"""Two workers on one Postgres, in one process so a stall can be placed exactly (as a SIGSTOP would).

* A worker stalls in the middle of a message past its lease; another takes the message over and finishes it.
  When the stalled one wakes it writes nothing more: no checkpoint, transcript row, node event or outcome,
  so the client gets one reply and the thread's order holds (``graphs.fencing``).
* A worker dies after the transcript took a message but before its first checkpoint; the worker that
  finishes it leaves the message in the transcript once.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from lg_harness.graphs.service import Runtime, Settings

from tests.engines import database_url, postgres_server  # noqa: F401

TTL = 1.0
TEXT = "where is my order ORD-10134?"


@pytest.fixture
def workers(tmp_path: Path, database_url: str) -> Iterator[Any]:  # noqa: F811
    made: list[Runtime] = []

    def make(name: str) -> Runtime:
        rt = Runtime(Settings(data_dir=tmp_path / name, database_url=database_url, chroma_url=None,
                              model="sim:clean", lease_ttl=TTL, threads=1, api_keys={"k": "U001"}))
        made.append(rt)
        return rt

    yield make
    for rt in made:
        rt.close()


def payload(text: str = TEXT) -> dict[str, Any]:
    return {"text": text, "user_id": "U001", "role": None}


def written(rt: Runtime, thread: str, mid: int) -> tuple[Any, ...]:
    """Everything a worker writes for a message: transcript, checkpoints, node events, the queue row."""
    h = rt.harness
    return ([(r["role"], r["content"]) for r in h.transcripts.read(thread)],
            [c.config["configurable"]["checkpoint_id"] for c in h.checkpointer.list(h.config(thread))],
            rt.queue.events(mid), {k: v for k, v in rt.queue.get(mid).items() if k != "payload"})


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
