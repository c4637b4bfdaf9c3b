"""One recovery path: the HTTP worker that takes over a dead worker's message, ``harness resume --finish`` and
``Harness.finish`` complete a message the same way, and the transcript always ends with the reply the
customer got.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from lg_harness.service.http import ServiceSettings, Worker

TEXT = "where is my order ORD-10134?"


class Died(BaseException):
    """The worker process stopped here (nothing after this line ran)."""


@pytest.fixture
def runtime(tmp_path: Path):
    rt = Worker(ServiceSettings(data_dir=tmp_path, database_url=None, chroma_url=None, model="sim:clean",
                          lease_ttl=0.3, threads=1, api_keys={"k": "U001"}))
    yield rt
    rt.close()


def die_before_the_reply_is_recorded(rt: Worker, mid: int, monkeypatch: Any) -> None:
    """A worker claims ``mid``, runs it to its last checkpoint and dies as the transcript takes the reply."""
    h = rt.harness
    real = h.transcripts.append

    def append(thread: str, turn: int, role: str, content: str) -> None:
        if role == "assistant":
            raise Died()
        real(thread, turn, role, content)

    claim = rt.queue.claim()
    assert claim is not None and claim.id == mid
    monkeypatch.setattr(h.transcripts, "append", append)
    with pytest.raises(Died):
        rt._execute(claim)
    monkeypatch.setattr(h.transcripts, "append", real)
    assert h.state("t")["pending"] == [], "the graph ran to its end"
    time.sleep(0.4)  # the dead worker's lease expires


def test_a_worker_taking_over_a_message_that_ran_to_its_end_records_its_reply(runtime: Worker, monkeypatch: Any):
    mid = runtime.submit("t", "send", {"text": TEXT, "user_id": "U001", "role": None}, None)
    die_before_the_reply_is_recorded(runtime, mid, monkeypatch)
    claim = runtime.queue.claim()
    assert claim is not None and claim.recovered
    runtime.serve(claim)
    row = runtime.queue.get(mid)
    assert row is not None and row["status"] == "done", row
    told = runtime.harness.transcripts.read("t")
    assert [(r["role"], r["content"]) for r in told] == [("user", TEXT), ("assistant", row["result"]["reply"])]


def test_finish_after_the_same_crash_records_the_same_reply(runtime: Worker, monkeypatch: Any):
    mid = runtime.submit("t", "send", {"text": TEXT, "user_id": "U001", "role": None}, None)
    die_before_the_reply_is_recorded(runtime, mid, monkeypatch)
    done = runtime.harness.finish("t")
    told = runtime.harness.transcripts.read("t")
    assert [(r["role"], r["content"]) for r in told] == [("user", TEXT), ("assistant", done.reply)]
