"""Fewer checkpoints kept, and every fork a user can ask for still works (``graphs.step_pruning``).

With ``durability="sync"`` each message is checkpointed step by step while it runs (the default, ``exit``,
saves only its end); once it is two messages old only its end stays. A
branch left by a fork stays whole, so going back to it works, and the ends of all messages stay forkable.
"""

from __future__ import annotations

import pytest
from langgraph.checkpoint.sqlite import SqliteSaver

from lg_harness.graphs.app import Harness, Settings
from tests.engines import database_url, postgres_server  # noqa: F401 - fixtures
from tests.support import patient_design

SCRIPT = ["Where is my order ORD-10134?", "thanks", "Do you sell wireless bluetooth headphones?",
          "Show me my orders please", "ok", "Which coupons can I use right now?"]


def rows(h: Harness, table: str, thread: str = "t") -> int:
    assert isinstance(h.checkpointer, SqliteSaver), "a data dir keeps its steps in SQLite"
    return int(h.checkpointer.conn.execute(f"SELECT COUNT(*) FROM {table} WHERE thread_id = ?", (thread,)).fetchone()[0])


def test_old_messages_keep_only_their_end_and_the_last_two_keep_every_step(tmp_path):
    with Harness("sim:clean", design=patient_design(),
                 settings=Settings(data_dir=tmp_path, durability="sync")) as h:
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
    with Harness("sim:clean", design=patient_design(),
                 settings=Settings(data_dir=tmp_path, durability="sync")) as h:
        for text in SCRIPT * 2:
            h.send("t", text, "U001")
        first_end = next(c for c in h.history("t") if c.turn == 1 and not c.next)
        h.fork("t", first_end.checkpoint_id)
        assert h.state("t")["values"]["turn"] == 1
        result = h.send("t", "Show me my orders please", "U001")
        assert result.reply and result.values["turn"] == 2


def test_a_branch_left_by_a_fork_keeps_every_step(tmp_path):
    with Harness("sim:clean", design=patient_design(),
                 settings=Settings(data_dir=tmp_path, durability="sync")) as h:
        for text in SCRIPT[:3]:
            h.send("t", text, "U001")
        mid = [c.checkpoint_id for c in h.history("t") if c.turn == 3 and c.next == ["action"]]
        assert mid, "message 3 has a step before its action"
        second_end = next(c for c in h.history("t") if c.turn == 2 and not c.next)
        h.fork("t", second_end.checkpoint_id)
        for text in SCRIPT[3:] * 2:  # the new line grows well past the old message 3
            h.send("t", text, "U001")
        kept = {c.checkpoint_id for c in h.history("t", every=True)}
        assert set(mid) <= kept, "the left branch's mid-message steps are still there"
        done = h.finish("t", mid[-1])  # and going back into it works
        assert done.phase == "done" and done.path[0] == "action"


# Bytes of one thread's checkpoints, pending writes and channel blobs as Postgres stores them (row sizes).
PG_THREAD = """SELECT
    (SELECT COUNT(*) FROM checkpoints WHERE thread_id = %(t)s) AS checkpoints,
    (SELECT COUNT(*) FROM checkpoint_writes WHERE thread_id = %(t)s) AS writes,
    (SELECT COUNT(*) FROM checkpoint_blobs WHERE thread_id = %(t)s) AS blobs,
    (SELECT COALESCE(SUM(pg_column_size(c.*)), 0) FROM checkpoints c WHERE thread_id = %(t)s)
    + (SELECT COALESCE(SUM(pg_column_size(w.*)), 0) FROM checkpoint_writes w WHERE thread_id = %(t)s)
    + (SELECT COALESCE(SUM(pg_column_size(b.*)), 0) FROM checkpoint_blobs b WHERE thread_id = %(t)s) AS bytes,
    (SELECT COUNT(*) FROM checkpoint_blobs b WHERE thread_id = %(t)s AND NOT EXISTS (
        SELECT 1 FROM checkpoints c WHERE c.thread_id = b.thread_id
        AND c.checkpoint -> 'channel_versions' ->> b.channel = b.version)) AS unnamed_blobs"""


def pg_thread(h: Harness, thread: str = "t") -> dict:
    with h.stores.pool.connection() as conn:
        return dict(conn.execute(PG_THREAD, {"t": thread}).fetchone())


@pytest.mark.slow
def test_postgres_keeps_about_one_checkpoint_per_old_message_and_its_bytes_stay_bounded(tmp_path, database_url):  # noqa: F811, E501
    with Harness("sim:clean", design=patient_design(),
                 settings=Settings(data_dir=tmp_path / "data", database_url=database_url,
                                   durability="sync")) as h:
        h.send("t", SCRIPT[0], "U001")
        first = pg_thread(h)  # what one message writes: nothing is pruned after the first
        sizes = []
        for text in SCRIPT[1:] * 3 + SCRIPT[:1]:
            h.send("t", text, "U001")
            sizes.append(pg_thread(h))
        turns = 1 + len(sizes)
        history = h.history("t")
        assert sorted(c.turn for c in history if not c.next) == list(range(1, turns + 1)), "every end is kept"
        assert all(not c.next for c in history if c.turn < turns - 2)
        assert {c.turn for c in history if c.next} >= {turns - 1, turns}, "the last two messages keep their steps"
        now = sizes[-1]
        assert first["checkpoints"] >= 8 and now["checkpoints"] <= turns + 2 * first["checkpoints"]
        assert now["writes"] < 4 * now["checkpoints"], "the deleted steps' pending writes go with them"
        assert now["unnamed_blobs"] == 0, "a blob no checkpoint names any more is deleted"
        # Bounded: a message of the last round of the script adds well under what one message writes (a
        # message left unpruned keeps more than that), and the round adds no more than the same messages did
        # a round earlier (the thread does not grow faster as it gets longer). sizes[i]: after message i + 2.
        rounds = [(sizes[i + 5]["bytes"] - sizes[i]["bytes"]) / 5 for i in (4, 9)]
        assert rounds[1] < first["bytes"] / 2 and rounds[1] <= 1.15 * rounds[0], (first["bytes"], rounds)
        # What is kept still loads and continues: the first message's end, forked and answered from.
        first_end = next(c for c in history if c.turn == 1 and not c.next)
        h.fork("t", first_end.checkpoint_id)
        assert h.state("t")["values"]["turn"] == 1
        assert h.send("t", "Show me my orders please", "U001").reply
