"""Owner only: a thread is read and written by the user who started it; operators see a masked queue.

Every way into a thread checks its owner: ``Harness.send``, the CLI's ``run``, ``chat`` (``/history``,
``/state``), ``history``, ``resume``, ``trace``, and the graph itself (its ``user`` channel refuses another
user), which is what the LangGraph server runs. A message without a user is refused, never run as the demo
user.
"""

from __future__ import annotations

import json
import subprocess

import pytest
from langchain_core.messages import HumanMessage

from lg_harness.core.state import NotTheOwner
from lg_harness.errors import HarnessError
from lg_harness.graphs.app import Harness, Settings
from tests.support import HARNESS, harness, patient_design

MODEL = "sim:clean"
PRIVATE = "My email is jane.roe@example.com and my phone is 555-123-4567"


@pytest.fixture(scope="module")
def u001_dir(tmp_path_factory):
    """A data dir where U001 started thread 'mine' with personal details (refused commands change nothing)."""
    data_dir = tmp_path_factory.mktemp("owned")
    proc = harness("run", PRIVATE, "--thread", "mine", "--user", "U001", "--model", MODEL, "--data-dir",
                   str(data_dir), cwd=data_dir)
    assert proc.returncode == 0, proc.stderr
    return data_dir


@pytest.mark.parametrize("command", [
    ("history", "--thread", "mine"),
    ("resume", "--thread", "mine"),
    ("resume", "--thread", "mine", "--finish"),
    ("trace", "--thread", "mine"),
    ("run", "hello", "--thread", "mine"),
])
@pytest.mark.slow
def test_another_user_cannot_read_or_write_the_thread(u001_dir, command):
    tmp_path = u001_dir
    proc = harness(*command, "--user", "U002", "--data-dir", str(tmp_path), cwd=tmp_path)
    assert proc.returncode != 0 and "unknown thread 'mine'" in proc.stderr, proc.stderr
    absent = harness(*[("nobody" if a == "mine" else a) for a in command], "--user", "U002", "--data-dir",
                     str(tmp_path), cwd=tmp_path) if command[0] != "run" else None
    if absent is not None:  # the same answer as for a thread that does not exist: nothing says 'mine' is taken
        assert absent.stderr.replace("nobody", "mine") == proc.stderr
    assert "jane.roe" not in proc.stdout + proc.stderr and "555-123-4567" not in proc.stdout
    own = harness(*command[:3], "--user", "U001", "--data-dir", str(tmp_path), cwd=tmp_path) \
        if command[0] in ("history", "trace") else None
    if own is not None:
        assert own.returncode == 0, own.stderr


@pytest.mark.slow
def test_chat_history_and_state_refuse_another_user(u001_dir):
    tmp_path = u001_dir
    proc = subprocess.run([str(HARNESS), "chat", "--thread", "mine", "--user", "U002", "--model", MODEL,
                           "--data-dir", str(tmp_path)], input="/history\n/state\n/quit\n", capture_output=True,
                          text=True, timeout=240, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "jane.roe" not in proc.stdout and "555-123-4567" not in proc.stdout
    assert proc.stderr.count("unknown thread 'mine'") == 2
    mine = subprocess.run([str(HARNESS), "chat", "--thread", "mine", "--user", "U001", "--model", MODEL,
                           "--data-dir", str(tmp_path)], input="/history\n/quit\n", capture_output=True, text=True,
                          timeout=240, cwd=tmp_path)
    assert "jane.roe@example.com" in mine.stdout, "the owner reads their own transcript"


@pytest.mark.slow
def test_an_empty_user_is_an_error_not_the_demo_user(tmp_path):
    proc = harness("run", "hello", "--thread", "t", "--user", "", "--model", MODEL, "--data-dir", str(tmp_path),
                   cwd=tmp_path)
    assert proc.returncode != 0 and "--user is empty" in proc.stderr
    with Harness(MODEL, design=patient_design(), settings=Settings(data_dir=tmp_path)) as h:
        for missing in (None, "", "   "):
            with pytest.raises(HarnessError, match="no user given"):
                h.send("t", "hello", missing)
        assert not h.thread_exists("t")


def test_the_graph_itself_refuses_another_user_and_a_missing_one(tmp_path):
    """What the LangGraph server runs: the compiled graph, with its own checkpointer."""
    with Harness(MODEL, design=patient_design(), settings=Settings(data_dir=None)) as h:
        h.send("g", "hello", "U001")
        with pytest.raises(NotTheOwner, match="belongs to another user"):
            h.graph.invoke({"messages": [HumanMessage("show me my orders")], "user": {"id": "U002", "role": "customer"}},
                           h.config("g"))
        with pytest.raises(NotTheOwner, match="needs the id of the user"):
            h.graph.invoke({"messages": [HumanMessage("hello")]}, h.config("fresh"))
        # the owner may change role (an agent looking at their own thread), not identity
        h.graph.invoke({"messages": [HumanMessage("hello")], "user": {"id": "U001", "role": "vip"}}, h.config("g"))


def test_the_owner_is_kept_even_when_the_checkpoint_is_forked_back_before_the_first_message(tmp_path):
    with Harness(MODEL, design=patient_design(), settings=Settings(data_dir=tmp_path)) as h:
        h.send("f", "hello", "U001")
        first = h.history("f")[-1].checkpoint_id  # the input checkpoint, before any user was set
        h.fork("f", first)
        with pytest.raises(HarnessError, match="unknown thread 'f'"):
            h.send("f", "hello", "U002")


def test_handoff_list_masks_personal_data_and_keeps_what_an_operator_needs(tmp_path):
    with Harness(MODEL, design=patient_design(), settings=Settings(data_dir=tmp_path)) as h:
        h.send("ho", "Please don't call me, email only. " + PRIVATE, "U001")
        waiting = h.send("ho", "I want to talk to a human", "U001")
        assert waiting.waiting_for_human
    proc = harness("handoff", "list", "--json", "--data-dir", str(tmp_path), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    [row] = json.loads(proc.stdout)["waiting"]
    assert row["thread_id"] == "ho" and row["user"]["id"] == "U001" and row["handoff"]["ticket"]
    assert row["handoff"]["reason"] == "customer asked for a human"
    assert any("call" in c for c in row["handoff"]["constraints"]), "the pinned constraint reaches the human"
    assert "jane.roe" not in proc.stdout and "555-123-4567" not in proc.stdout


def test_a_handoff_after_a_fork_opens_a_new_ticket(tmp_path):
    with Harness(MODEL, design=patient_design(), settings=Settings(data_dir=tmp_path)) as h:
        h.send("fk", "hello", "U001")
        before = h.state("fk")["checkpoint_id"]
        first = h.send("fk", "I want to talk to a human", "U001")
        h.human_reply("fk", "Hi, Sam here")
        assert not h.waiting_threads()
        h.fork("fk", before)
        again = h.send("fk", "I want to talk to a human", "U001")
        assert again.waiting_for_human
        assert again.handoff is not None and first.handoff is not None
        assert again.handoff["ticket"] != first.handoff["ticket"], "not the ticket a human already answered"
        assert [w["thread_id"] for w in h.waiting_threads()] == ["fk"], "the forked thread is in the queue"
