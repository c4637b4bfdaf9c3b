"""Fewer checkpoints kept, and every fork a user can ask for still works (``graphs.step_pruning``).

Each message is checkpointed step by step while it runs; once it is two messages old only its end stays. A
branch left by a fork stays whole, so going back to it works, and the ends of all messages stay forkable.
"""

from __future__ import annotations

from lg_harness.graphs.app import Harness

try:
    from support import patient_design
except ImportError:  # tests/ imported as a package
    from tests.support import patient_design

SCRIPT = ["Where is my order ORD-10134?", "thanks", "Do you sell wireless bluetooth headphones?",
          "Show me my orders please", "ok", "Which coupons can I use right now?"]


def rows(h: Harness, table: str, thread: str = "t") -> int:
    return int(h.checkpointer.conn.execute(f"SELECT COUNT(*) FROM {table} WHERE thread_id = ?", (thread,)).fetchone()[0])


def test_old_messages_keep_only_their_end_and_the_last_two_keep_every_step(tmp_path):
    with Harness(tmp_path, patient_design(), "sim:clean") as h:
        h.send("t", SCRIPT[0], "U001")
        written = rows(h, "checkpoints")  # what one message writes: nothing is pruned after the first
        for text in SCRIPT[1:] * 3 + SCRIPT[:1]:
            h.send("t", text, "U001")
        history = h.history("t")
        turns = 1 + (len(SCRIPT) - 1) * 3 + 1
        ends = [c for c in history if not c.next]
        assert sorted(c.turn for c in ends) == list(range(1, turns + 1)), "every message's end is kept"
        old = [c for c in history if c.turn < turns - 2]
        assert all(not c.next for c in old), [(c.turn, c.next) for c in old]
        assert {c.turn for c in history if c.next} >= {turns - 1, turns}, "the last two messages keep their steps"
        # About one checkpoint per message stays, while a message writes eight or more.
        assert written >= 8 and len(history) <= turns + 2 * written < written * turns / 3
        assert rows(h, "writes") < 4 * rows(h, "checkpoints"), "the deleted steps' pending writes go with them"


def test_every_message_end_can_still_be_forked_and_continued(tmp_path):
    with Harness(tmp_path, patient_design(), "sim:clean") as h:
        for text in SCRIPT * 2:
            h.send("t", text, "U001")
        first_end = next(c for c in h.history("t") if c.turn == 1 and not c.next)
        h.fork("t", first_end.checkpoint_id)
        assert h.state("t")["values"]["turn"] == 1
        result = h.send("t", "Show me my orders please", "U001")
        assert result.reply and result.values["turn"] == 2


def test_a_branch_left_by_a_fork_keeps_every_step(tmp_path):
    with Harness(tmp_path, patient_design(), "sim:clean") as h:
        for text in SCRIPT[:3]:
            h.send("t", text, "U001")
        mid = [c.checkpoint_id for c in h.history("t") if c.turn == 3 and c.next == ["action"]]
        assert mid, "message 3 has a step before its action"
        second_end = next(c for c in h.history("t") if c.turn == 2 and not c.next)
        h.fork("t", second_end.checkpoint_id)
        for text in SCRIPT[3:] * 2:  # the new line grows well past the old message 3
            h.send("t", text, "U001")
        kept = {c.checkpoint_id for c in h.history("t")}
        assert set(mid) <= kept, "the left branch's mid-message steps are still there"
        done = h.finish("t", mid[-1])  # and going back into it works
        assert done.phase == "done" and done.path[0] == "action"
