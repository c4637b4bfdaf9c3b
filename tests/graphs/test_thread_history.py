"""The history read from the saver alone (``graphs.thread_history``) is LangGraph's own history.

``harness history`` lists checkpoints without compiling a graph, so it decides the steps due after each
checkpoint itself. Here it is compared, field by field, with ``get_state_history`` of the compiled graph on
threads that went everywhere a thread goes: plain messages, a step that crashed, a handoff waiting for a
person and answered, and a fork.
"""

from __future__ import annotations

import pytest

from lg_harness.errors import HarnessError
from lg_harness.graphs.app import Harness, Settings
from lg_harness.graphs.thread_history import read_history
from lg_harness.memory.messages import last_human_text
from lg_harness.nodes.reply import ModelReply
from tests.support import patient_design


def langgraph_history(h: Harness, thread: str) -> list[tuple]:
    history = []
    for s in h.graph.get_state_history(h.config(thread)):
        assert s.metadata is not None and "configurable" in s.config, s  # every stored step has both
        history.append((s.config["configurable"]["checkpoint_id"], int(s.metadata.get("step", -1)),
                        str(s.values.get("phase") or "-"), s.created_at, list(s.next),
                        (s.parent_config or {}).get("configurable", {}).get("checkpoint_id"),
                        int(s.values.get("turn") or 0), last_human_text(s.values.get("messages") or [])))
    return history


def ours(h: Harness, thread: str) -> list[tuple]:
    return [(c.checkpoint_id, c.step, c.phase, c.created_at, c.next, c.parent_id, c.turn, c.message)
            for c in read_history(h.checkpointer, thread)]


def play(h: Harness, monkeypatch: pytest.MonkeyPatch) -> None:
    h.send("t", "Where is my order ORD-10134?", "U001")
    h.send("t", "thanks", "U001")
    reply = ModelReply.__call__
    crashed: list[int] = []

    def crash_once(self, state, *args):
        if not crashed:
            crashed.append(1)
            raise RuntimeError("disk full")
        return reply(self, state, *args)

    monkeypatch.setattr(ModelReply, "__call__", crash_once)
    with pytest.raises(HarnessError):
        h.send("t", "Do you sell wireless bluetooth headphones?", "U001")
    h.finish("t")
    h.send("t", "I want to talk to a human agent right now", "U001")
    if h.waiting_threads():
        h.human_reply("t", "Hello, I am here to help.")
    first_end = [c for c in h.history("t") if c.turn == 1 and not c.next][0]
    h.fork("t", first_end.checkpoint_id)
    h.send("t", "Show me my orders please", "U001")


@pytest.mark.parametrize("where", ["sqlite", "memory"])
def test_history_without_the_graph_is_langgraphs_history(tmp_path, monkeypatch, where):
    # every step saved, so the history has steps, forks and a human wait to read
    with Harness("sim:clean", design=patient_design(),
                 settings=Settings(data_dir=tmp_path if where == "sqlite" else None, durability="sync")) as h:
        play(h, monkeypatch)
        expected = langgraph_history(h, "t")
        assert len(expected) > 20 and any(row[4] == ["human"] for row in expected), "the thread went everywhere"
        assert ours(h, "t") == expected
