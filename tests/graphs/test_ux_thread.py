"""The conversation keeps its thread (issue 17, item 5): the open task survives small talk and product
questions, attribute follow-ups stay on the product, and a human keeps a thread until they hand it back."""

from __future__ import annotations

from pathlib import Path

from lg_harness.graphs.app import Harness, Settings
from lg_harness.graphs.result import SendResult
from tests.support import patient_design

MODEL = "sim:clean"


def ok_calls(r: SendResult) -> list[str | None]:
    return [c["name"] for c in r.tool_calls if c["status"] == "ok"]


def test_a_question_after_thanks_is_answered(tmp_path: Path) -> None:
    with Harness(MODEL, design=patient_design(), settings=Settings(data_dir=tmp_path)) as h:
        h.send("t", "Where is my order ORD-10134?", "U001")
        delivered = h.send("t", "ok thanks, is it delivered yet?", "U001")
        where = h.send("t", "ok thanks, where is it now?", "U001")
    for r in (delivered, where):  # the question is the task, on the order under discussion
        assert r.intent == "order_status" and r.slots == {"order_id": "ORD-10134"}, r
        assert "welcome" not in r.reply.lower()
    # (The sim picks no tool for "is it delivered yet?"; for "where is it now?" it looks the order up.)
    assert ok_calls(where) == ["get_order_status"] and where.tool_calls[0]["args"] == {"order_id": "ORD-10134"}
    assert "shipped" in where.reply.lower()


def test_the_open_order_survives_a_product_question(tmp_path: Path) -> None:
    """Already right on main before this branch; kept as a guard."""
    with Harness(MODEL, design=patient_design(), settings=Settings(data_dir=tmp_path)) as h:
        h.send("t", "Where is my order ORD-10134?", "U001")
        h.send("t", "Do you have bluetooth headphones?", "U001")
        r = h.send("t", "I want to return the order", "U001")
    assert r.intent == "return_order" and r.slots.get("order_id") == "ORD-10134"
    assert not r.missing_slots


def test_attribute_follow_ups_stay_on_the_product(tmp_path: Path) -> None:
    with Harness(MODEL, design=patient_design(), settings=Settings(data_dir=tmp_path)) as h:
        h.send("t", "Is the Fitness Tracker Band available in black?", "U001")
        blue = h.send("t", "Do you have it in blue?", "U001")
        black = h.send("t", "what about in black?", "U001")
        zh = h.send("t", "那白色的呢？", "U001")
    for r, colour in ((blue, "blue"), (black, "black"), (zh, "white")):
        assert r.intent == "product", r
        assert r.slots["query"] == f"fitness tracker band {colour}", r.slots


def test_a_new_product_is_a_new_question(tmp_path: Path) -> None:
    with Harness(MODEL, design=patient_design(), settings=Settings(data_dir=tmp_path)) as h:
        h.send("t", "Is the Fitness Tracker Band available in black?", "U001")
        r = h.send("t", "Do you have running shoes in black?", "U001")
    assert "fitness" not in r.slots["query"] and "running shoes" in r.slots["query"]


def test_a_human_holds_the_thread_until_they_release_it(tmp_path: Path) -> None:
    with Harness(MODEL, design=patient_design(), settings=Settings(data_dir=tmp_path)) as h:
        first = h.send("t", "I want to talk to a human", "U001")
        assert first.waiting_for_human
        h.human_reply("t", "Hi, Sam here. What can I do?")
        assert [w["thread_id"] for w in h.held_threads()] == ["t"]

        # The customer answers Sam: the bot stays out, the message is kept for Sam.
        meanwhile = h.send("t", "Sam, my order ORD-10134 is late", "U001")
        assert meanwhile.usage.model_calls == 0 and meanwhile.tool_calls == [] and meanwhile.path == []
        assert meanwhile.waiting_for_human
        assert h.held_threads()[0]["last_message"] == "Sam, my order ORD-10134 is late"
        second = h.human_reply("t", "It left the warehouse yesterday.")
        assert second.reply == "It left the warehouse yesterday."

        h.release("t")
        assert h.held_threads() == []
        back = h.send("t", "Where is my order ORD-10134?", "U001")
        assert ok_calls(back) == ["get_order_status"]
        history = [m.content for m in h.state("t")["values"]["messages"]]
    # The bot sees the whole exchange with the human in the thread's history.
    assert "Sam, my order ORD-10134 is late" in history and "It left the warehouse yesterday." in history
