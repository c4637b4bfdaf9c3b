"""A human at the desk is a human in every view (issue 43, item 2).

The transcript says who wrote each message (the customer, the bot, or the human agent by name) and keeps an
agent's answer exactly as typed; a customer message and every answer to it share one turn number, whoever
has the thread; a fork's history and transcript show the branch the thread goes on from; ``harness chat``'s
``/state`` and ``/history`` read as text, without the markup the harness writes for the model.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from lg_harness.errors import HarnessError
from lg_harness.graphs.app import Harness, Settings
from lg_harness.service.desk import ops
from tests.support import HARNESS, harness, patient_design

ANSWER = "您好，我是客服小王。请问还有什么问题？"  # full-width comma, full stop and question mark
FOLLOW_UP = "好的，ORD-10134 明天到！"


def handed_off(h: Harness, thread: str = "t") -> None:
    h.send(thread, "Where is my order ORD-10134?", "U001")
    assert h.send(thread, "I want a human", "U001").waiting_for_human


def test_an_agents_answer_is_kept_as_typed_and_signed_with_their_name(tmp_path: Path) -> None:
    with Harness("sim:clean", design=patient_design(), settings=Settings(data_dir=tmp_path)) as h:
        handed_off(h)
        ops.take(h, "wang", "t")
        first = ops.answer(h, "wang", "t", ANSWER)
        assert first["reply"] == ANSWER, "the customer gets the answer as the agent typed it"
        h.send("t", "还有一个问题", "U001")
        ops.answer(h, "wang", "t", FOLLOW_UP)
        rows = h.transcripts.read("t")
        humans = [(r["content"], r["author"], r["author_name"]) for r in rows if r["author"] == "human"]
        assert humans == [(ANSWER, "human", "wang"), (FOLLOW_UP, "human", "wang")]
        assert {r["author"] for r in rows if r["role"] == "user"} == {"customer"}
        assert {r["author"] for r in rows if r["role"] == "assistant"} == {"bot", "human"}
        # What no store can keep is still refused; a customer's own text is still normalised for the bot.
        with pytest.raises(HarnessError, match="unpaired surrogate"):
            ops.answer(h, "wang", "t", "hi \ud800")
        with pytest.raises(HarnessError, match="empty message"):
            ops.answer(h, "wang", "t", "  ")


def test_a_customer_message_and_every_answer_to_it_share_its_number(tmp_path: Path) -> None:
    with Harness("sim:clean", design=patient_design(), settings=Settings(data_dir=tmp_path)) as h:
        handed_off(h)  # messages 1 and 2
        h.send("t", "hello?", "U001")  # 3 and 4: waiting for a human
        h.send("t", "anyone there?", "U001")
        h.human_reply("t", ANSWER, "wang")  # answers message 4
        h.send("t", "thanks, one more thing", "U001")  # 5: held by the human
        h.human_reply("t", "go ahead", "wang")
        h.release("t")
        back = h.send("t", "Where is my order ORD-10134?", "U001")  # 6: the bot again
        rows = h.transcripts.read("t")
        asked = [r["turn"] for r in rows if r["role"] == "user"]
        assert asked == [1, 2, 3, 4, 5, 6], "one number per customer message"
        last_asked = 0
        for row in rows:
            last_asked = row["turn"] if row["role"] == "user" else last_asked
            assert row["turn"] == last_asked, f"an answer carries the number of the message it answers: {row}"
        assert [r["turn"] for r in rows if r["author"] == "human"] == [4, 5]
        assert back.values["turn"] == 6 and h.state("t")["values"]["turn"] == 6, "the thread counts them too"
        kept = [m.content for m in back.values["messages"] if m.type == "human"]
        assert {"hello?", "anyone there?", "thanks, one more thing"} <= set(kept), \
            "after the release the bot reads what the customer told the human"


def test_after_a_fork_the_history_and_the_transcript_show_the_branch(tmp_path: Path) -> None:
    with Harness("sim:clean", design=patient_design(), settings=Settings(data_dir=tmp_path)) as h:
        first = h.send("t", "Where is my order ORD-10134?", "U001")
        left = h.send("t", "And what about ORD-10135?", "U001")
        assert first.checkpoint_id is not None
        h.fork("t", first.checkpoint_id)
        h.send("t", "thanks", "U001")
        branch = h.history("t")
        assert [c.turn for c in branch] == [2, 1] and left.checkpoint_id not in {c.checkpoint_id for c in branch}
        assert left.checkpoint_id in {c.checkpoint_id for c in h.history("t", every=True)}, "nothing is deleted"
        said = [(r["turn"], r["content"]) for r in h.transcripts.read("t") if r["role"] == "user"]
        assert said == [(1, "Where is my order ORD-10134?"), (2, "thanks")]
        assert len(h.transcripts.read("t", every=True)) == len(h.transcripts.read("t")) + 2


@pytest.mark.slow
def test_harness_history_lists_the_branch_and_the_transcript_with_who_wrote_it(tmp_path: Path) -> None:
    with Harness("sim:clean", design=patient_design(), settings=Settings(data_dir=tmp_path)) as h:
        handed_off(h)
        first = h.history("t")[-1]
        h.human_reply("t", ANSWER, "wang")
        h.release("t")
        assert first.checkpoint_id is not None
        h.fork("t", first.checkpoint_id)
        h.send("t", "thanks", "U001")
        every = {c.checkpoint_id for c in h.history("t", every=True)}
    listed = harness("history", "-t", "t", "--data-dir", str(tmp_path), "--json", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    ids = [c["checkpoint_id"] for c in json.loads(listed.stdout)["checkpoints"]]
    assert len(ids) == 2 and set(ids) < every, "the branch: the new message and the checkpoint forked from"
    everything = harness("history", "-t", "t", "--all", "--transcript", "--data-dir", str(tmp_path), cwd=tmp_path)
    assert everything.returncode == 0, everything.stderr
    assert f"[2] wang (human): {ANSWER}" in everything.stdout.splitlines()
    assert "[1] customer: Where is my order ORD-10134?" in everything.stdout.splitlines()
    branch = harness("history", "-t", "t", "--transcript", "--data-dir", str(tmp_path), cwd=tmp_path)
    assert branch.stdout.splitlines()[-2:][0] == "[2] customer: thanks" and ANSWER not in branch.stdout


@pytest.mark.slow
def test_chat_state_and_history_read_as_text(tmp_path: Path) -> None:
    script = ["Where is my order ORD-10134?", "I want to return it", "Where is ORD-99999?", "what about ORD-10135?",
              "thanks", "/state", "/history", "/quit"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("HARNESS_")}
    chat = subprocess.run([str(HARNESS), "chat", "-t", "c", "--model", "sim:clean", "--data-dir", str(tmp_path)],
                          input="\n".join(script) + "\n", capture_output=True, text=True, timeout=300, cwd=tmp_path,
                          env={**env, "HF_HUB_OFFLINE": "1"})
    assert chat.returncode == 0, chat.stderr
    with Harness("sim:clean", settings=Settings(data_dir=tmp_path)) as h:
        assert "<tool_error" in json.dumps(h.state("c")["values"]["fact_card"], ensure_ascii=False), \
            "the state the test needs: an open step the harness wrote for the model"
    shown = chat.stdout
    assert "<tool_" not in shown and "</" not in shown, "no markup meant for the model"
    assert "open step: " in shown and "turn 5 · phase done" in shown
    assert "[1] customer: Where is my order ORD-10134?" in shown and "[1] bot: Order ORD-10134" in shown
