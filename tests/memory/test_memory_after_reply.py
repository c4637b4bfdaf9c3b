"""Long-term memory is written after the reply, in batches, and nothing remembered is lost to a crash.

The reply of a message does not wait for the embedding and the stores: the graph records what to keep as one
durable row and the memory's writer thread writes it (``memory.writer``). A process that dies between the
reply and the write leaves the row, and the next harness on the data dir writes it when it opens.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading

import pytest

from lg_harness.graphs.app import Harness, Settings
from lg_harness.memory import writer as writer_module
from lg_harness.memory.facts import FactStore
from lg_harness.memory.longterm import LongTermMemory
from lg_harness.nodes import intent
from tests.support import patient_design

ASK = "Where is my order ORD-10134?"  # U001's own order: get_order_status succeeds, an outcome to remember


def memory(h: Harness) -> LongTermMemory:
    """The harness's long-term memory (the design these tests run keeps one)."""
    assert h.memory is not None, "long-term memory is on"
    return h.memory


def outcomes(h: Harness, user: str = "U001") -> list[str]:
    """The user's remembered outcomes, read straight from Chroma (not through the waiting read path)."""
    got = memory(h).experiences._col.get(where={"user_id": user}, include=["documents"])
    return list(got["documents"])


def pending_rows(h: Harness) -> int:
    return int(memory(h).facts._db.execute("SELECT COUNT(*) FROM memory_pending").fetchone()[0])


def test_the_reply_goes_out_before_long_term_memory_is_written(tmp_path, monkeypatch):
    release, started = threading.Event(), threading.Event()
    write = writer_module.write_batch

    def held_write(*args, **kwargs):
        started.set()
        release.wait(30)
        return write(*args, **kwargs)

    monkeypatch.setattr(writer_module, "write_batch", held_write)
    with Harness("sim:clean", design=patient_design(), settings=Settings(data_dir=tmp_path)) as h:
        result = h.send("t", ASK, "U001")
        assert "ORD-10134" in result.reply
        assert started.wait(30), "the writer starts once the reply is out"
        assert outcomes(h) == [] and pending_rows(h) == 1, "the reply came while the write was still to do"
        release.set()
        assert memory(h).writer.wait_idle(30)
        assert any("get_order_status" in o and "ORD-10134" in o for o in outcomes(h)), outcomes(h)
        assert pending_rows(h) == 0
        assert memory(h).facts.value("U001", "last_order_id") == "ORD-10134"


CRASH_AFTER_REPLY = textwrap.dedent("""
    import os, sys
    from lg_harness.graphs.app import Harness, Settings
    from lg_harness.memory.writer import MemoryWriter
    MemoryWriter.kick = lambda self: None  # the process dies before its writer gets to the row
    h = Harness("sim:clean", design="harness", settings=Settings(data_dir=sys.argv[1]))
    h.design.knobs.model_timeout_s = 120.0
    reply = h.send("t", sys.argv[2], "U001").reply
    print(reply, flush=True)
    os._exit(0)
""")


@pytest.mark.slow
def test_a_crash_between_the_reply_and_the_write_loses_nothing(tmp_path):
    done = subprocess.run([sys.executable, "-c", CRASH_AFTER_REPLY, str(tmp_path), ASK], capture_output=True,
                          text=True, timeout=240)
    assert done.returncode == 0, done.stderr
    assert "ORD-10134" in done.stdout, "the customer got the reply"
    facts = FactStore(tmp_path / "memory" / "facts.sqlite")
    try:
        assert facts._db.execute("SELECT COUNT(*) FROM memory_pending").fetchone()[0] == 1, "kept, not written"
        assert facts.value("U001", "last_order_id") is None
    finally:
        facts.close()
    with Harness("sim:clean", design=patient_design(),
                 settings=Settings(data_dir=tmp_path)) as h:  # opening recovers what was left
        assert pending_rows(h) == 0
        assert any("get_order_status" in o and "ORD-10134" in o for o in outcomes(h)), outcomes(h)
        assert memory(h).facts.value("U001", "last_order_id") == "ORD-10134"


def test_a_writer_that_died_mid_write_is_taken_over_after_its_claim_expires(tmp_path):
    facts = FactStore(tmp_path / "facts.sqlite", clock=lambda: 100.0)
    try:
        facts.enqueue("t:1", "u1", {"outcomes": ["a"], "facts": [], "hits": []})
        [first] = facts.claim(now=1000.0)
        assert facts.claim(now=1001.0) == [], "a live writer's claim is not taken"
        [again] = facts.claim(now=1000.0 + 61)
        assert again == first
        facts.enqueue("t:1", "u1", {"outcomes": ["b"], "facts": [], "hits": []})  # the message finished again
        [replaced] = facts.claim(now=1000.0 + 62)
        assert replaced.payload["outcomes"] == ["b"], "one row per message, the newest wins"
        facts.settle([replaced.key])
        assert facts.claim(now=5000.0) == []
    finally:
        facts.close()


def test_messages_with_nothing_to_remember_write_nothing(tmp_path, monkeypatch):
    with Harness("sim:clean", design=patient_design(), settings=Settings(data_dir=tmp_path)) as h:
        h.send("t", ASK, "U001")
        assert memory(h).writer.wait_idle(30)
        enqueued = []
        put = memory(h).facts.enqueue
        monkeypatch.setattr(memory(h).facts, "enqueue", lambda *a, **k: (enqueued.append(a), put(*a, **k)))
        for text in ("thanks", "ok", "great, thank you"):
            h.send("t", text, "U001")
        assert enqueued == [], "small talk with the language already known gives memory nothing"


def test_hit_counts_are_sql_rows_not_chroma_metadata_updates(tmp_path, monkeypatch):
    with Harness("sim:clean", design=patient_design(), settings=Settings(data_dir=tmp_path)) as h:
        h.send("t", ASK, "U001")
        assert memory(h).writer.wait_idle(30)
        [rid] = [r.id for r in memory(h).experiences.all("U001")]
        updates = []
        update = memory(h).experiences._col.update
        monkeypatch.setattr(memory(h).experiences._col, "update", lambda **k: (updates.append(k), update(**k)))
        h.send("t", ASK, "U001")  # recalls the first outcome and succeeds again: a hit for it
        assert memory(h).writer.wait_idle(30)
        assert not any("hits" in m for u in updates for m in u.get("metadatas") or []), updates
        assert memory(h).facts.hits("U001", [rid]) == {rid: 1}
        assert memory(h).experiences.get("U001", rid).hits == 1


def test_a_message_naming_an_order_recalls_that_order_without_embedding_the_message(tmp_path, monkeypatch):
    with Harness("sim:clean", design=patient_design(), settings=Settings(data_dir=tmp_path)) as h:
        for order in ("ORD-10134", "ORD-10144", "ORD-10147"):  # U001's own orders: three outcomes remembered
            h.send("earlier", f"Where is my order {order}?", "U001")
        assert memory(h).writer.wait_idle(30)
        assert len(outcomes(h)) == 3, outcomes(h)

        def no_embedding(*args, **kwargs):
            raise AssertionError("a message that names an order is recalled by the name")

        monkeypatch.setattr(intent, "message_vector", no_embedding)
        result = h.send("later", "Where is my order ORD-10144?", "U001")
        assert "ORD-10144" in result.reply
        recalled = h.state("later")["values"]["recalled"]
        assert len(recalled) == 1 and "ORD-10144" in recalled[0] and "delivered" in recalled[0], recalled
