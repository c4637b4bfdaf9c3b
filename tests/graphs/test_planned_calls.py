"""A decided call is state: a crash between deciding a change and saving what it did never asks the model again.

The model here (``reword:clean``, ``lg_harness/llm/reword.py``) rewords its free text and renames its calls on every
answer, as real models do, so a change keyed by its arguments would get a new key if the model were asked
again. The crash is played by deleting what the interrupted step would not have saved: every checkpoint after
``keep`` and every pending write from ``keep`` on (the step that was running saved nothing).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from lg_harness.graphs.app import Harness, Settings
from tests.support import patient_design

COMPLAINT = "I want to file a complaint: the parcel for ORD-10134 arrived damaged."
MODEL = "reword:clean"


def complaints(data_dir: Path) -> int:
    with sqlite3.connect(data_dir / "shop.sqlite") as conn:
        return int(conn.execute("SELECT COUNT(*) FROM complaints WHERE user_id = 'U001'").fetchone()[0])


def crash_after(data_dir: Path, thread: str, keep: str, turn: int = 1) -> None:
    """What a process that died during the step after checkpoint ``keep`` leaves: nothing of that step, the
    change it made in the shop, and no reply to message ``turn`` in the transcript."""
    with sqlite3.connect(data_dir / "checkpoints.sqlite") as conn:
        conn.execute("DELETE FROM checkpoints WHERE thread_id = ? AND checkpoint_id > ?", (thread, keep))
        conn.execute("DELETE FROM writes WHERE thread_id = ? AND checkpoint_id >= ?", (thread, keep))
    with sqlite3.connect(data_dir / "transcripts.sqlite") as conn:
        conn.execute("DELETE FROM transcript WHERE thread_id = ? AND role = 'assistant' AND turn >= ?", (thread, turn))
        conn.execute("DELETE FROM handoffs WHERE thread_id = ?", (thread,))


def last_before(h: Harness, thread: str, node: str) -> str:
    """The newest checkpoint of ``thread`` whose next step is ``node`` (on the message's first round)."""
    found = [c for c in h.history(thread) if c.next == [node]]
    assert found, f"no checkpoint before {node}: {[c.next for c in h.history(thread)]}"
    return found[-1].checkpoint_id  # history is newest first: the last one is the first round's


@pytest.mark.parametrize("node", ["action", "execute"])
def test_a_rewording_model_files_the_complaint_once_after_a_crash(tmp_path, node):
    """confirm_changes off: the model's call runs in the message that asks. The process dies after the tool
    ran, before the step that ran it was saved (``action``: not even the decision's checkpoint was written,
    as with LangGraph's asynchronous checkpoint writes; ``execute``: the decision was saved)."""
    design = patient_design("harness-no:confirm_changes")
    with Harness(MODEL, design=design,
                 settings=Settings(data_dir=tmp_path,
                                   durability="sync")) as h:  # every step saved, to crash between two
        h.send("c", COMPLAINT, "U001")
        assert complaints(tmp_path) == 1
        keep = last_before(h, "c", node)
    crash_after(tmp_path, "c", keep)
    with Harness(MODEL, design=design, settings=Settings(data_dir=tmp_path, durability="sync")) as h:
        done = h.finish("c")
        assert complaints(tmp_path) == 1, "the reworded call ran as a new change"
        assert [c["name"] for c in done.tool_calls] == ["file_complaint"]
        assert [r["role"] for r in h.transcripts.read("c")] == ["user", "assistant"]


def test_a_confirmed_change_from_a_rewording_model_runs_once_after_a_crash(tmp_path):
    """confirm_changes on: the yes runs the call the question showed, whatever the model would say now."""
    design = patient_design("harness")
    with Harness(MODEL, design=design, settings=Settings(data_dir=tmp_path, durability="sync")) as h:
        asked = h.send("y", COMPLAINT, "U001")
        assert asked.values.get("pending_change"), asked.reply
        h.send("y", "yes", "U001")
        assert complaints(tmp_path) == 1
        keep = last_before(h, "y", "execute")
    crash_after(tmp_path, "y", keep, turn=2)
    with Harness(MODEL, design=design, settings=Settings(data_dir=tmp_path, durability="sync")) as h:
        h.finish("y")
        assert complaints(tmp_path) == 1


# With the default durability ("exit") a message is saved once, at its end: a crash in the middle leaves
# nothing of it but the transcript's user row, and finishing runs it again from its start.


def test_with_exit_durability_a_rewording_model_files_the_complaint_once_after_a_crash(tmp_path):
    design = patient_design("harness-no:confirm_changes")
    with Harness(MODEL, design=design, settings=Settings(data_dir=tmp_path)) as h:
        h.send("c", COMPLAINT, "U001")
        assert complaints(tmp_path) == 1
        assert len(h.history("c")) == 1, "the default saves the message once"
    crash_after(tmp_path, "c", "")  # nothing of the message was saved
    with Harness(MODEL, design=design, settings=Settings(data_dir=tmp_path)) as h:
        done = h.finish("c")
        assert complaints(tmp_path) == 1, "the message ran again and the reworded call ran as a new change"
        assert [c["name"] for c in done.tool_calls] == ["file_complaint"]
        assert [r["role"] for r in h.transcripts.read("c")] == ["user", "assistant"]


def test_with_exit_durability_a_confirmed_change_runs_once_after_a_crash(tmp_path):
    design = patient_design("harness")
    with Harness(MODEL, design=design, settings=Settings(data_dir=tmp_path)) as h:
        asked = h.send("y", COMPLAINT, "U001")
        assert asked.values.get("pending_change"), asked.reply
        h.send("y", "yes", "U001")
        assert complaints(tmp_path) == 1
        asked_end = h.history("y")[-1]
        assert asked_end.turn == 1
    crash_after(tmp_path, "y", asked_end.checkpoint_id, turn=2)  # the yes left nothing but its user row
    with Harness(MODEL, design=design, settings=Settings(data_dir=tmp_path)) as h:
        assert h.state("y")["values"].get("pending_change"), "the question's checkpoint still waits for the yes"
        h.finish("y")
        assert complaints(tmp_path) == 1
