"""Thirty turns on one thread: what was said at the start is still known, constraints stay pinned, the
checkpoint stays bounded and the transcript keeps everything.

The conversation is scripted: an order id of U001's own in turn 1, a constraint in turn 2 ("don't transfer me
to a human"), then 27 varied turns (product searches, coupon questions, acknowledgements), then the question
about the start. The default design runs on the fault-free sim, wrapped so every model input is recorded.
"""

from __future__ import annotations

import pytest
from langchain_core.messages import HumanMessage, SystemMessage

from lg_harness.domains.shop import nlu
from lg_harness.graphs.app import Harness, Settings
from lg_harness.memory.constraints import extract_constraints
from tests.support import patient_design

FILLERS = {
    "en": ["Do you have bluetooth headphones?", "What coupons can I get?", "ok thanks", "Do you have running shoes?",
           "Any coupons for new customers?", "great", "Do you sell backpacks?", "thanks", "Do you have a yoga mat?",
           "What discounts are there?", "cool", "Do you have a wireless mouse?", "ok", "Do you sell water bottles?",
           "got it", "Do you have a down jacket?", "Which coupons can I claim?", "thank you",
           "Do you have a phone case?", "nice", "Do you have a hoodie?", "alright", "Any coupons?",
           "Do you have a smart watch?", "ok great", "Do you have a laptop backpack?", "thanks a lot"],
    "zh": ["有没有蓝牙耳机？", "有什么优惠券？", "好的，谢谢", "有没有跑鞋？", "新用户有优惠券吗？", "好的", "有没有背包？", "谢谢",
           "有没有瑜伽垫？", "有什么折扣？", "嗯", "有没有无线鼠标？", "好", "有没有保温杯？", "知道了", "有没有冲锋衣？",
           "我能领哪些优惠券？", "谢谢你", "有没有手机壳？", "行", "有没有卫衣？", "好的", "有优惠券吗？", "有没有智能手表？",
           "多谢", "有没有电脑双肩包？", "谢谢啦"],
}
OPENING = {"en": "Where is my order {order}?", "zh": "我的订单 {order} 到哪了？"}
NO_HUMAN = {"en": "Please don't transfer me to a human.", "zh": "不要转人工"}
AT_THE_START = {"en": "what order number did I give you at the start?", "zh": "我最开始给你的订单号是多少？"}




def system_text(messages) -> str:
    return "\n".join(str(m.content) for m in messages if isinstance(m, SystemMessage))


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_thirty_turns_keep_the_first_order_the_pinned_constraint_and_a_bounded_checkpoint(
        tmp_path, recording_sim_cls, lang):
    model = recording_sim_cls()  # the fault-free sim (same as "sim:clean"), keeping every call's input
    with Harness(model, design=patient_design(), settings=Settings(data_dir=tmp_path)) as h:
        row = h.resources["shop"].query_one("SELECT id FROM orders WHERE user_id = 'U001' AND status = 'delivered' ORDER BY id")
        order = row["id"]
        script = [OPENING[lang].format(order=order), NO_HUMAN[lang], *FILLERS[lang]]
        assert len(script) == 29
        pinned = extract_constraints(NO_HUMAN[lang])
        assert pinned, "turn 2 states a constraint"

        replies = []
        for text in script:
            r = h.send("long", text, "U001")
            assert r.reply, text
            assert not r.waiting_for_human and r.phase != "handoff", \
                f"handed off at '{text}' although the customer said: {pinned}"
            replies.append(r.reply)
        assert order in replies[0]

        calls_before = len(model.calls)
        last = h.send("long", AT_THE_START[lang], "U001")
        turn30 = model.calls[calls_before:]

        # the question about the start is answered with the order id of turn 1, in the customer's language
        assert order in last.reply, last.reply
        assert nlu.language(last.reply) == lang

        state = h.state("long")["values"]
        assert state["turn"] == 30
        # the constraint of turn 2 is pinned: in the state, and in the system text of every model call of turn 30
        assert set(pinned) <= set(state.get("constraints") or []), state.get("constraints")
        assert turn30, "turn 30 called the model"
        for call in turn30:
            text = system_text(call["messages"])
            assert all(c in text for c in pinned), f"constraint missing from the model's system text:\n{text}"

        # the checkpoint's working messages stay bounded, and turn 1 has left them: the answer came from memory
        working = state["messages"]
        assert len(working) <= h.design.knobs.window_messages, len(working)
        assert not any(isinstance(m, HumanMessage) and order in str(m.content) for m in working)

        # the transcript store keeps all 60 entries, in order
        rows = h.transcripts.read("long")
        assert len(rows) == 60
        assert [r["role"] for r in rows] == ["user", "assistant"] * 30
        # (stored as accepted: the design's input normalisation turns full-width "？" into "?")
        assert [r["content"] for r in rows[0::2]] == [h.check_message(t) for t in [*script, AT_THE_START[lang]]]
        assert [r["content"] for r in rows[1::2]] == [*replies, last.reply]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_pinned_no_human_constraint_is_obeyed_when_the_bot_does_not_understand(tmp_path, lang):
    """Two messages the bot cannot place would normally hand the thread to a person; not after the customer
    said not to transfer them. The bot keeps asking instead of opening a handoff ticket."""
    unclear = {"en": ["blorp", "florp zzz"], "zh": ["嗯嗯嗯啊", "呃呃"]}[lang]
    with Harness("sim:clean", design=patient_design(), settings=Settings(data_dir=tmp_path)) as h:
        h.send("nohuman", NO_HUMAN[lang], "U001")
        for text in unclear:
            r = h.send("nohuman", text, "U001")
            assert r.intent == "unknown"
            assert not r.waiting_for_human and not r.handoff, \
                f"handed off after the customer said {extract_constraints(NO_HUMAN[lang])}: {r.reply}"
            assert r.reply and nlu.language(r.reply) == lang
        assert h.resources["shop"].query_one("SELECT COUNT(*) FROM handoffs WHERE thread_id = 'nohuman'")[0] == 0
