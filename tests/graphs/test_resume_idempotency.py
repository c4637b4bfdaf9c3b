"""Resuming a thread from a checkpoint taken just before a changing tool ran applies the change once.

A process can die after a tool committed its change but before the graph wrote the checkpoint that records
it; resuming from the last checkpoint then runs that tool step again. Changing tools are keyed for
idempotency by thread and call id (``lg_harness/tools/shop/tools.py: changing``), so the replay must find the stored
result instead of changing the shop a second time. Expectations about shop data are read from the database.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lg_harness.errors import HarnessError
from lg_harness.graphs.app import Harness, Settings
from lg_harness.nodes.reply import ModelReply
from tests.support import change_key, harness, patient_design, u001_order

MODEL = "sim:clean"
# Replays of a change, not its confirmation (tests/nodes/test_confirm.py): each change runs in the message asking.
DESIGN = "harness-no:confirm_changes"
# Every step saved: these tests fork back into a message's steps (tests/graphs/test_durability.py covers the default,
# which saves a message at its end and runs it again after a crash).
SYNC = ("--durability", "sync")


def stock_of(shop, order_id: str) -> dict[str, tuple[int, int]]:
    """sku -> (quantity in the order, stock now)."""
    rows = shop.query("SELECT i.sku, i.qty, v.stock FROM order_items i JOIN variants v ON v.sku = i.sku "
                      "WHERE i.order_id = ? ORDER BY i.sku", (order_id,))
    assert rows, f"{order_id} has no items"
    return {r["sku"]: (r["qty"], r["stock"]) for r in rows}


def tool_records(h: Harness, thread: str, checkpoint_id: str, name: str) -> list[dict]:
    values = h.state(thread, checkpoint_id)["values"]
    return [r for r in values.get("tool_log") or [] if r.get("name") == name]


def checkpoint_before_tool(h: Harness, thread: str, tool: str, turn: int) -> str:
    """The checkpoint written just before the action node that decided ``tool`` in message ``turn``.

    The first checkpoint (oldest first) of that message whose tool log holds the call was written by the
    execute node that ran it; its parent holds the decision (next: execute), and that one's parent is the
    checkpoint LangGraph resumes from to decide the round again.
    """
    history = list(reversed(h.history(thread)))  # oldest first
    by_id = {c.checkpoint_id: c for c in history}
    for c in history:
        values = h.state(thread, c.checkpoint_id)["values"]
        if values.get("turn") == turn and tool_records(h, thread, c.checkpoint_id, tool):
            assert c.parent_id is not None, c
            decided = by_id[c.parent_id]
            assert decided.next == ["execute"], decided
            assert decided.parent_id is not None, decided
            before = by_id[decided.parent_id]
            assert before.next == ["action"], before
            assert not tool_records(h, thread, before.checkpoint_id, tool), "the parent must predate the call"
            return before.checkpoint_id
    raise AssertionError(f"no checkpoint of message {turn} records {tool}")


def test_replaying_the_action_step_of_a_cancel_applies_it_once(tmp_path):
    with Harness(MODEL, design=patient_design(DESIGN),
                 settings=Settings(data_dir=tmp_path, durability="sync")) as h:
        order = u001_order("pending", shop=h.resources["shop"])
        before = stock_of(h.resources["shop"], order)

        first = h.send("cancel", f"please cancel {order}", "U001")
        [call] = [c for c in first.tool_calls if c["name"] == "cancel_order"]
        args = call["args"]
        assert call["status"] == "ok" and args is not None and args["order_id"] == order, first.tool_calls
        after_first = stock_of(h.resources["shop"], order)
        assert h.resources["shop"].query_one("SELECT status FROM orders WHERE id = ?", (order,))["status"] == "cancelled"
        assert after_first == {sku: (qty, stock + qty) for sku, (qty, stock) in before.items()}, \
            "cancel_order puts the reserved stock back"

        # Fork at the checkpoint taken just before the action node that decided cancel_order, and continue the
        # run from it with no new input: LangGraph runs exactly that action node again on the very state the
        # first run had, which is what a crash between the tool's commit and the next checkpoint leaves to a
        # resume (with LangGraph's asynchronous checkpoint writes, even the decision's checkpoint may be
        # missing). The decision is in the change ledger, so the model is not asked again. (Sending the
        # message again after forking before it would re-run intent too, and long-term recall of the first
        # run would change the model's input: a new call, not a replay of this tool step.)
        pre_action = checkpoint_before_tool(h, "cancel", "cancel_order", turn=1)
        h.fork("cancel", pre_action)
        assert h.state("cancel")["next"] == ["action"]
        replayed = h.graph.invoke(None, h.config("cancel"))

        [again] = [r for r in replayed["tool_log"] if r["name"] == "cancel_order"]
        assert again["args"] == call["args"], "the replayed step makes the same call"
        assert again["id"] == call["id"], "the decided call, not a new answer of the model"
        assert again["status"] == "ok", f"the replay must get the stored result, not a refusal: {again}"
        assert order in replayed["reply"]

        assert h.resources["shop"].query_one("SELECT status FROM orders WHERE id = ?", (order,))["status"] == "cancelled"
        assert stock_of(h.resources["shop"], order) == after_first, "the stock was put back exactly once"
        key = change_key("cancel", 1, "cancel_order", args)  # thread, message, what the call is
        assert h.resources["shop"].query_one("SELECT COUNT(*) FROM idempotency WHERE key = ?", (key,))[0] == 1
        assert h.resources["shop"].query_one("SELECT COUNT(*) FROM idempotency WHERE tool = 'cancel_order'")[0] == 1
        stored = h.resources["shop"].query_one("SELECT result_json FROM idempotency WHERE key = ?", (key,))["result_json"]
        assert json.loads(stored)["order_id"] == order


def test_a_node_that_crashes_leaves_the_message_saved_and_finish_completes_it(tmp_path, monkeypatch):
    crashes = []
    reply = ModelReply.__call__

    def crash_once(self, state, *args):
        if not crashes:
            crashes.append(state.get("turn"))
            raise RuntimeError("disk full while writing the reply")
        return reply(self, state, *args)

    monkeypatch.setattr(ModelReply, "__call__", crash_once)
    with Harness(MODEL, design=patient_design(DESIGN),
                 settings=Settings(data_dir=tmp_path, durability="sync")) as h:
        order = u001_order("shipped", shop=h.resources["shop"])
        with pytest.raises(HarnessError) as caught:
            h.send("crash", f"Where is my order {order}?", "U001")
        text = str(caught.value)
        assert "RuntimeError: disk full" in text and "harness resume --thread crash --finish" in text
        stopped = h.state("crash")
        assert stopped["next"] == ["reply"], "the state up to the failing node is saved"
        assert [r["name"] for r in stopped["values"]["tool_log"]] == ["get_order_status"]

        done = h.finish("crash")
        assert done.phase == "done" and done.path[0] == "reply" and order in done.reply
        assert [c["name"] for c in done.tool_calls] == ["get_order_status"], "the tool did not run again"
        assert [e["role"] for e in h.transcripts.read("crash")] == ["user", "assistant"]
        with pytest.raises(HarnessError, match="no unfinished message"):
            h.finish("crash")


# ------------------------------------------------------------------------------------------ across processes



def run_json(data_dir: Path, thread: str, message: str) -> dict:
    proc = harness(*SYNC, "run", message, "--thread", thread, "--model", MODEL, "--design", DESIGN, "--data-dir", str(data_dir), "--json",
                   cwd=data_dir)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def resume_json(data_dir: Path, thread: str, checkpoint: str) -> dict:
    proc = harness(*SYNC, "resume", "--thread", thread, "--checkpoint", checkpoint, "--data-dir", str(data_dir), "--json",
                   cwd=data_dir)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["forked_from"] == checkpoint
    return doc


def returns_of(data_dir: Path, order: str) -> list[dict]:
    with Harness(MODEL, design=patient_design(DESIGN),
                 settings=Settings(data_dir=data_dir, durability="sync")) as h:
        return [dict(r) for r in h.resources["shop"].query("SELECT id, status FROM returns WHERE order_id = ?", (order,))]


@pytest.mark.slow
def test_forking_a_return_request_through_the_cli_creates_one_return(tmp_path):
    with Harness(MODEL, design=patient_design(DESIGN),
                 settings=Settings(data_dir=tmp_path, durability="sync")) as h:
        order = u001_order("delivered", shop=h.resources["shop"])
    ask = "I want to return it, it is the wrong size"

    status = run_json(tmp_path, "ret", f"Where is my order {order}?")
    first = run_json(tmp_path, "ret", ask)
    [call] = [c for c in first["tool_calls"] if c["name"] == "request_return"]
    assert call["status"] == "ok" and call["args"]["order_id"] == order, first["tool_calls"]
    [rma] = returns_of(tmp_path, order)
    assert f"RMA-{rma['id']}" in first["reply"]
    with Harness(MODEL, design=patient_design(DESIGN),
                 settings=Settings(data_dir=tmp_path, durability="sync")) as h:
        pre_action = checkpoint_before_tool(h, "ret", "request_return", turn=2)

    # 1) `harness run` needs a message, so the CLI's way to replay the step is: fork at the checkpoint just
    # before the return message (the first message's last checkpoint) and send the same message again.
    resume_json(tmp_path, "ret", status["checkpoint_id"])
    replay = run_json(tmp_path, "ret", ask)
    assert [r["id"] for r in returns_of(tmp_path, order)] == [rma["id"]], "exactly one return"
    assert f"RMA-{rma['id']}" in replay["reply"], "the replay talks about the one return that exists"

    # 2) Fork in the middle of the message, at the checkpoint before the action node that ran request_return,
    # then run the message again from there: still one return.
    resume_json(tmp_path, "ret", pre_action)
    run_json(tmp_path, "ret", ask)
    assert [r["id"] for r in returns_of(tmp_path, order)] == [rma["id"]], "exactly one return"

    # 3) Fork in the middle again and finish that message instead of sending a new one: the pending action
    # step runs on the stopped state, makes the same call, and gets the stored result.
    finish = harness(*SYNC, "resume", "--thread", "ret", "--checkpoint", pre_action, "--finish", "--model", MODEL, "--design", DESIGN,
                     "--data-dir", str(tmp_path), "--json", cwd=tmp_path)
    assert finish.returncode == 0, finish.stderr
    done = json.loads(finish.stdout)
    assert done["forked_from"] == pre_action and done["phase"] == "done" and done["path"][0] == "action"
    assert [c["args"] for c in done["tool_calls"] if c["name"] == "request_return"] == [call["args"]]
    assert f"RMA-{rma['id']}" in done["reply"]
    assert [r["id"] for r in returns_of(tmp_path, order)] == [rma["id"]], "exactly one return"

    with Harness(MODEL, design=patient_design(DESIGN),
                 settings=Settings(data_dir=tmp_path, durability="sync")) as h:
        rows = h.resources["shop"].query("SELECT key FROM idempotency WHERE tool = 'request_return'")
    assert [r["key"] for r in rows] == [change_key("ret", 2, "request_return", call["args"])], \
        "one stored change for the one return"

    again = harness(*SYNC, "resume", "--thread", "ret", "--finish", "--model", MODEL, "--data-dir", str(tmp_path), cwd=tmp_path)
    assert again.returncode != 0 and "has no unfinished message" in again.stderr and "Traceback" not in again.stderr
    # Finishing from a checkpoint with nothing pending is refused before the thread is moved there.
    with Harness(MODEL, design=patient_design(DESIGN),
                 settings=Settings(data_dir=tmp_path, durability="sync")) as h:
        head = h.state("ret")["checkpoint_id"]
    refused = harness(*SYNC, "resume", "--thread", "ret", "--checkpoint", status["checkpoint_id"], "--finish", "--model",
                      MODEL, "--data-dir", str(tmp_path), cwd=tmp_path)
    assert refused.returncode != 0 and "has no unfinished message" in refused.stderr
    with Harness(MODEL, design=patient_design(DESIGN),
                 settings=Settings(data_dir=tmp_path, durability="sync")) as h:
        assert h.state("ret")["checkpoint_id"] == head, "a refused finish leaves the thread where it was"


@pytest.mark.slow
def test_finish_uses_the_design_and_model_the_thread_ran_with(tmp_path):
    with Harness(MODEL, design=patient_design(DESIGN),
                 settings=Settings(data_dir=tmp_path, durability="sync")) as h:
        order = u001_order("shipped", shop=h.resources["shop"])
    proc = harness(*SYNC, "run", f"Where is my order {order}?", "--thread", "n", "--design", "naive", "--model", MODEL,
                   "--data-dir", str(tmp_path), "--json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["design"] == "naive"
    with Harness(MODEL, design="naive", settings=Settings(data_dir=tmp_path, durability="sync")) as h:
        assert h.transcripts.setup("n") == ("naive", MODEL)
        middle = next(c.checkpoint_id for c in h.history("n") if c.next == ["action"])

    # No --design or --model: the thread's own, not the defaults (harness on the faulty sim).
    finish = harness(*SYNC, "resume", "--thread", "n", "--checkpoint", middle, "--finish", "--data-dir", str(tmp_path),
                     "--json", cwd=tmp_path)
    assert finish.returncode == 0, finish.stderr
    done = json.loads(finish.stdout)
    assert done["design"] == "naive" and done["phase"] == "done" and order in done["reply"]


def test_a_replay_with_fresh_call_ids_still_applies_the_change_once(tmp_path, recording_sim_cls):
    """Real providers issue a new tool-call id on every call: the replayed step must not cancel twice."""
    import itertools

    counter = itertools.count()

    class FreshIds(recording_sim_cls):
        def _generate(self, messages, stop=None, run_manager=None, **kwargs):
            result = super()._generate(messages, stop, run_manager, **kwargs)
            msg = result.generations[0].message
            msg.tool_calls = [{**c, "id": f"fresh_{next(counter)}"} for c in msg.tool_calls]
            return result

    with Harness(FreshIds(faults="clean"), design=patient_design(DESIGN),
                 settings=Settings(data_dir=tmp_path, durability="sync")) as h:
        shop = h.resources["shop"]
        order = u001_order("pending", shop=shop)
        first = h.send("cancel", f"please cancel {order}", "U001")
        [call] = [c for c in first.tool_calls if c["name"] == "cancel_order"]
        after_first = stock_of(shop, order)
        # the decision forgotten (a harness without a ledger), so the replay asks the model, which renames it
        h.stores.ledger.conn.execute("DELETE FROM decided_calls")
        h.fork("cancel", checkpoint_before_tool(h, "cancel", "cancel_order", turn=1))
        replayed = h.graph.invoke(None, h.config("cancel"))
        [again] = [r for r in replayed["tool_log"] if r["name"] == "cancel_order"]
        assert again["id"] != call["id"] and again["status"] == "ok", again
        assert stock_of(shop, order) == after_first, "the stock was put back exactly once"
        assert shop.query_one("SELECT COUNT(*) FROM idempotency WHERE tool = 'cancel_order'")[0] == 1
