"""Fewer checkpoints kept: the steps of older messages go once no fork can want them.

Every step of a message is checkpointed while it runs (LangGraph's ``sync`` durability: a saved step is
on disk before the next one starts, so a crash resumes from the last step and a decided call is saved before
it runs). Once a message is two messages old, its intermediate steps serve nothing a user does: a fork
continues from the end of a message, and recovery needs only the newest one. So after each message
``prune_steps`` walks the thread's current line back from its newest checkpoint (parent by parent) and
deletes, among the checkpoints older than the previous message's input, each one whose successor on the line
is the next step of the same message; with them go their pending writes.

Kept: the end of every message (its successor is the next message's input), every step of the last two
messages, every checkpoint a fork was copied beside (its successor on the line is the copy), and everything
off the current line: a branch left by ``resume --checkpoint`` stays whole, so going back to it works.
Each message thus leaves about one checkpoint behind instead of nine (``harness bench graph`` reports bytes
and checkpoints per message).

Only the SQLite saver is pruned: Postgres keeps channel values as blobs shared between checkpoints, and
``harness prune --keep-latest`` remains its retention.
"""

from __future__ import annotations

from typing import Any

# Messages whose every step stays: the newest, and the one before it (a fork back into the previous message,
# or a look at what it did, is the common case).
KEEP_MESSAGES = 2

_SOURCE = "json_extract(CAST({table}.metadata AS TEXT), '$.source')"
# The current line, newest first: each checkpoint with the source of its successor on the line. The walk
# stops where an earlier prune left a parent id behind, so it covers about the last two messages.
_LINE = f"""WITH RECURSIVE line(id, parent, source, next_source) AS (
    SELECT checkpoint_id, parent_checkpoint_id, {_SOURCE.format(table="c")}, NULL FROM checkpoints c
    WHERE c.thread_id = :thread AND c.checkpoint_ns = ''
      AND c.checkpoint_id = (SELECT MAX(checkpoint_id) FROM checkpoints WHERE thread_id = :thread AND checkpoint_ns = '')
    UNION ALL
    SELECT c.checkpoint_id, c.parent_checkpoint_id, {_SOURCE.format(table="c")}, line.source FROM checkpoints c
    JOIN line ON c.checkpoint_id = line.parent WHERE c.thread_id = :thread AND c.checkpoint_ns = '')
SELECT id, source, next_source FROM line"""


def prune_steps(saver: Any, thread_id: str) -> int:
    """Delete the steps of ``thread_id`` no fork needs (see the module doc); returns checkpoints deleted."""
    from langgraph.checkpoint.sqlite import SqliteSaver

    if not isinstance(saver, SqliteSaver):
        return 0
    with saver.lock, saver.conn as conn:
        line = conn.execute(_LINE, {"thread": thread_id}).fetchall()
        inputs = [cid for cid, source, _ in line if source == "input"]
        if len(inputs) < KEEP_MESSAGES:
            return 0
        cutoff = inputs[KEEP_MESSAGES - 1]
        doomed = [(thread_id, cid) for cid, _, after in line if cid < cutoff and after == "loop"]
        conn.executemany("DELETE FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = '' AND checkpoint_id = ?",
                         doomed)
        conn.executemany("DELETE FROM writes WHERE thread_id = ? AND checkpoint_ns = '' AND checkpoint_id = ?", doomed)
        return len(doomed)
