"""A change happens exactly once whatever ids the model gives its tool calls, and a message a crash left
mid-way is finished from whatever the crash saved.

Providers differ: most issue a fresh id per call, some repeat one id (``call_0``) for every call, some send
none. The harness keys a change by what it is (thread, message, tool, arguments), pairs results with calls
by position, and gives the calls distinct ids itself when the provider's are missing or repeated.
"""

from __future__ import annotations

import sqlite3
import time
from typing import Any

from langchain_core.messages import ToolMessage

from lg_harness.graphs.app import Harness, Settings
from lg_harness.graphs.result import ToolCallResult
from tests.support import ScriptedModel, patient_design


def read_results(model: ScriptedModel) -> list:
    """The last model call that read the tool results as tool messages (the answer step may be given them
    in words instead: ``answer_presentation``)."""
    return next((s for s in reversed(model.seen) if any(isinstance(m, ToolMessage) for m in s)), [])


def design():
    """``harness`` with each change run in the message that asks (confirmation has its own tests)."""
    return patient_design("harness-no:confirm_changes")


def pending_orders(shop, user: str = "U001") -> list[str]:
    rows = shop.query("SELECT id FROM orders WHERE user_id = ? AND status = 'pending' ORDER BY id", (user,))
    assert len(rows) >= 2, "the seed no longer gives U001 two pending orders"
    return [r["id"] for r in rows[:2]]


def status_of(shop, order: str) -> str:
    return shop.query_one("SELECT status FROM orders WHERE id = ?", (order,))["status"]


def order_of(call: ToolCallResult) -> str:
    """The order a logged call was made for (every call here has its arguments)."""
    assert call["args"] is not None, call
    return call["args"]["order_id"]


def cancel(order: str, call_id: str | None) -> dict[str, Any]:
    return {"name": "cancel_order", "args": {"order_id": order}, "id": call_id, "type": "tool_call"}


def test_one_id_for_two_different_changes_applies_both_once_each(tmp_path):
    model = ScriptedModel()
    with Harness(model, design=design(), settings=Settings(data_dir=tmp_path)) as h:
        shop = h.resources["shop"]
        a, b = pending_orders(shop)
        model.calls = [cancel(a, "call_0"), cancel(b, "call_0")]
        result = h.send("same-id", f"Please cancel {a} and {b}", "U001")

        logged = [(order_of(c), c["status"]) for c in result.tool_calls if c["name"] == "cancel_order"]
        assert logged == [(a, "ok"), (b, "ok")], "each call keeps its own outcome"
        assert len({c["id"] for c in result.tool_calls}) == 2, "the calls got distinct ids"
        assert status_of(shop, a) == status_of(shop, b) == "cancelled"
        assert shop.query_one("SELECT COUNT(*) FROM idempotency WHERE tool = 'cancel_order'")[0] == 2
        # every tool result answers its own call: the model read about both orders, not one twice
        answered = [m for m in read_results(model) if isinstance(m, ToolMessage)]
        assert [a in m.content for m in answered] == [True, False] and b in answered[1].content


def test_the_same_id_on_a_later_message_is_a_new_change(tmp_path):
    model = ScriptedModel()
    with Harness(model, design=design(), settings=Settings(data_dir=tmp_path)) as h:
        shop = h.resources["shop"]
        a, b = pending_orders(shop)
        model.calls = [cancel(a, "call_0")]
        h.send("later", f"Please cancel {a}", "U001")
        model.calls = [cancel(b, "call_0")]
        second = h.send("later", f"Please cancel {b} too", "U001")
        assert [order_of(c) for c in second.tool_calls] == [b]
        assert status_of(shop, a) == status_of(shop, b) == "cancelled"
        assert shop.query_one("SELECT COUNT(*) FROM idempotency WHERE tool = 'cancel_order'")[0] == 2


def test_calls_without_ids_run_and_are_answered(tmp_path):
    model = ScriptedModel()
    with Harness(model, design=design(), settings=Settings(data_dir=tmp_path)) as h:
        shop = h.resources["shop"]
        a, _ = pending_orders(shop)
        model.calls = [cancel(a, None)]
        result = h.send("no-id", f"Please cancel {a}", "U001")
        [call] = result.tool_calls
        assert call["status"] == "ok" and call["id"], call
        assert status_of(shop, a) == "cancelled" and result.phase == "done"
        pairs = [(m.tool_call_id, m.content) for m in read_results(model) if isinstance(m, ToolMessage)]
        assert pairs and pairs[0][0] == call["id"]


# ------------------------------------------------------------------------------------------- finishing


def drop_checkpoints_after(path, thread: str, keep: str) -> None:
    """What a crash right after a step's writes were saved leaves: ``keep`` is the newest checkpoint, and the
    writes its pending task saved are still there."""
    with sqlite3.connect(path) as conn:
        conn.execute("DELETE FROM checkpoints WHERE thread_id = ? AND checkpoint_id > ?", (thread, keep))
        conn.execute("DELETE FROM writes WHERE thread_id = ? AND checkpoint_id > ?", (thread, keep))


def test_finish_completes_a_step_whose_writes_were_saved_without_its_checkpoint(tmp_path):
    model = ScriptedModel()
    with Harness(model, design=design(),
                 settings=Settings(data_dir=tmp_path, durability="sync")) as h:  # every step saved
        a, _ = pending_orders(h.resources["shop"])
        model.calls = [cancel(a, "call_0")]
        h.send("w", f"Please cancel {a}", "U001")
        before_action = next(c.checkpoint_id for c in reversed(h.history("w")) if c.next == ["action"])
    drop_checkpoints_after(tmp_path / "checkpoints.sqlite", "w", before_action)
    with sqlite3.connect(tmp_path / "transcripts.sqlite") as conn:  # the reply was never written either
        conn.execute("DELETE FROM transcript WHERE thread_id = 'w' AND role = 'assistant'")

    model = ScriptedModel(calls=[cancel(a, "call_1")])
    with Harness(model, design=design(), settings=Settings(data_dir=tmp_path, durability="sync")) as h:
        stopped = h.state("w")
        assert stopped["next"] == [] and stopped["pending"] == ["action"], "next hides a task with saved writes"
        done = h.finish("w")
        assert done.phase == "done" and a in done.reply
        assert [order_of(c) for c in done.tool_calls] == [a]
        assert h.resources["shop"].query_one("SELECT COUNT(*) FROM idempotency")[0] == 1
        # no action step (tools offered, the user's message last) ran again; the answer step may end with the
        # results given in words, a user turn of the harness's own (answer_presentation)
        assert not any(o and m[-1].type == "human" for m, o in zip(model.seen, model.offered, strict=True)), \
            "the saved tool step was not run again"
        assert [r["role"] for r in h.transcripts.read("w")] == ["user", "assistant"]


def test_finish_runs_a_message_the_crash_left_only_in_the_transcript(tmp_path):
    model = ScriptedModel()
    with Harness(model, design=design(), settings=Settings(data_dir=tmp_path)) as h:
        a, b = pending_orders(h.resources["shop"])
        model.calls = [cancel(a, "x")]
        h.send("t", f"Please cancel {a}", "U001")
        # the process died after noting the next message, before the graph saved anything of it
        h.transcripts.append("t", 2, "user", f"Please cancel {b}")
    model = ScriptedModel(calls=[cancel(b, "y")])
    with Harness(model, design=design(), settings=Settings(data_dir=tmp_path)) as h:
        done = h.finish("t")
        assert [order_of(c) for c in done.tool_calls] == [b] and done.phase == "done"
        assert status_of(h.resources["shop"], b) == "cancelled"
        assert [(r["turn"], r["role"]) for r in h.transcripts.read("t")] == [(1, "user"), (1, "assistant"),
                                                                              (2, "user"), (2, "assistant")]


def test_finishing_much_later_is_not_charged_for_the_time_in_between(tmp_path):
    model = ScriptedModel()
    with Harness(model, design=design(),
                 settings=Settings(data_dir=tmp_path,
                                   durability="sync")) as h:  # a step of the message to finish from
        a, _ = pending_orders(h.resources["shop"])
        model.calls = [cancel(a, "call_0")]
        h.send("late", f"Please cancel {a}", "U001")
        pre = next(c for c in reversed(h.history("late")) if c.next == ["action"])
        stats = h.state("late", pre.checkpoint_id)["values"]["turn_stats"]
        # the message started two hours ago (a crash, then a finish the next morning)
        config = h.config("late", pre.checkpoint_id)
        assert "configurable" in config
        h.graph.update_state({"configurable": {**config["configurable"], "checkpoint_ns": ""}},
                             {"turn_stats": {**stats, "started_at": time.time() - 7200}}, as_node="collect")
        done = h.finish("late")
        assert done.phase == "done" and not done.handoff, done.handoff
        assert done.values["turn_stats"]["elapsed_s"] < 60


def test_finish_records_a_reply_the_checkpoint_saved_but_the_transcript_missed(tmp_path):
    model = ScriptedModel()
    with Harness(model, design=design(), settings=Settings(data_dir=tmp_path)) as h:
        a, _ = pending_orders(h.resources["shop"])
        model.calls = [cancel(a, "call_0")]
        sent = h.send("r", f"Please cancel {a}", "U001")
    with sqlite3.connect(tmp_path / "transcripts.sqlite") as conn:  # died right after the last checkpoint
        conn.execute("DELETE FROM transcript WHERE thread_id = 'r' AND role = 'assistant'")
    model = ScriptedModel(calls=[cancel(a, "call_1")])
    with Harness(model, design=design(), settings=Settings(data_dir=tmp_path)) as h:
        done = h.finish("r")
        assert done.reply == sent.reply and model.seen == [], "the saved answer, not a second run"
        assert [r["role"] for r in h.transcripts.read("r")] == ["user", "assistant"]
        assert h.resources["shop"].query_one("SELECT COUNT(*) FROM idempotency")[0] == 1
