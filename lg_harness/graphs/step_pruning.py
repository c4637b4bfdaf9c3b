"""Fewer checkpoints kept: the steps of older messages go once no fork can want them.

A harness opened with ``durability="sync"`` checkpoints every step of a message while it runs (a saved step
is on disk before the next one starts, so a crash resumes from the last step and a decided call is saved
before it runs); the default, ``exit``, saves a message once, at its end, and leaves nothing to prune. Once a
message is two messages old, its intermediate steps serve nothing a user does: a fork
continues from the end of a message, and recovery needs only the newest one. So after each message
``prune_steps`` walks the thread's current line back from its newest checkpoint (parent by parent) and
deletes, among the checkpoints older than the previous message's input, each one whose successor on the line
is the next step of the same message; with them go their pending writes.

Kept: the end of every message (its successor is the next message's input), every step of the last two
messages, every checkpoint a fork was copied beside (its successor on the line is the copy), and everything
off the current line: a branch left by ``resume --checkpoint`` stays whole, so going back to it works.
Each message thus leaves about one checkpoint behind instead of nine (``harness bench graph`` reports bytes
and checkpoints per message).

Both savers are pruned by the same rule. On Postgres a checkpoint keeps its channel values as blobs that
later checkpoints share (a blob per channel version, written when the channel changes), so a blob goes only
when no checkpoint of the thread left names its version; the rest stays for the checkpoints kept. Idle
threads' retention stays ``harness prune``.
"""

from __future__ import annotations

import sys
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


# The same walk on Postgres, whose metadata is JSONB.
_PG_LINE = """WITH RECURSIVE line(id, parent, source, next_source) AS (
    SELECT checkpoint_id, parent_checkpoint_id, metadata ->> 'source', NULL::text FROM checkpoints
    WHERE thread_id = %(thread)s AND checkpoint_ns = ''
      AND checkpoint_id = (SELECT MAX(checkpoint_id) FROM checkpoints WHERE thread_id = %(thread)s AND checkpoint_ns = '')
    UNION ALL
    SELECT c.checkpoint_id, c.parent_checkpoint_id, c.metadata ->> 'source', line.source FROM checkpoints c
    JOIN line ON c.checkpoint_id = line.parent WHERE c.thread_id = %(thread)s AND c.checkpoint_ns = '')
SELECT id, source, next_source FROM line"""
# The blobs the deleted checkpoints named that no checkpoint of the thread still names.
_PG_UNUSED_BLOBS = """DELETE FROM checkpoint_blobs b
USING (SELECT DISTINCT v.key AS channel, v.value AS version FROM unnest(%(versions)s::jsonb[]) AS d(versions)
       CROSS JOIN LATERAL jsonb_each_text(d.versions) AS v) AS freed
WHERE b.thread_id = %(thread)s AND b.checkpoint_ns = '' AND b.channel = freed.channel AND b.version = freed.version
  AND NOT EXISTS (SELECT 1 FROM checkpoints c WHERE c.thread_id = %(thread)s AND c.checkpoint_ns = ''
                  AND c.checkpoint -> 'channel_versions' ->> freed.channel = freed.version)"""


def doomed_steps(line: list[tuple[str, str | None, str | None]]) -> list[str]:
    """Of the current line (id, source, successor's source; newest first), the mid-message steps older than
    the previous message's input."""
    inputs = [cid for cid, source, _ in line if source == "input"]
    if len(inputs) < KEEP_MESSAGES:
        return []
    cutoff = inputs[KEEP_MESSAGES - 1]
    return [cid for cid, _, after in line if cid < cutoff and after == "loop"]


def prune_steps(saver: Any, thread_id: str) -> int:
    """Delete the steps of ``thread_id`` no fork needs (see the module doc); returns checkpoints deleted."""
    from langgraph.checkpoint.sqlite import SqliteSaver

    # Not imported, not in use: an embedded harness does not pay for loading the Postgres driver here.
    postgres = sys.modules.get("langgraph.checkpoint.postgres")
    if postgres is not None and isinstance(saver, postgres.PostgresSaver):
        return _prune_postgres(saver, thread_id)
    if not isinstance(saver, SqliteSaver):
        return 0
    with saver.lock, saver.conn as conn:
        doomed = [(thread_id, cid) for cid in doomed_steps(conn.execute(_LINE, {"thread": thread_id}).fetchall())]
        conn.executemany("DELETE FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = '' AND checkpoint_id = ?",
                         doomed)
        conn.executemany("DELETE FROM writes WHERE thread_id = ? AND checkpoint_ns = '' AND checkpoint_id = ?", doomed)
        return len(doomed)


def _prune_postgres(saver: Any, thread_id: str) -> int:
    from langgraph.checkpoint.postgres import _internal
    from psycopg.types.json import Jsonb

    # One transaction: a reader sees the steps with their writes and blobs, or none of them. The saver's
    # lock, as its own statements take it: a saver built on one connection shares it.
    with saver.lock, _internal.get_connection(saver.conn) as conn, conn.transaction():
        line = [(r["id"], r["source"], r["next_source"])
                for r in conn.execute(_PG_LINE, {"thread": thread_id}).fetchall()]
        doomed = doomed_steps(line)
        if not doomed:
            return 0
        key = {"thread": thread_id, "ids": doomed}
        conn.execute("DELETE FROM checkpoint_writes WHERE thread_id = %(thread)s AND checkpoint_ns = '' "
                     "AND checkpoint_id = ANY(%(ids)s)", key)
        freed = [r["versions"] for r in conn.execute(
            "DELETE FROM checkpoints WHERE thread_id = %(thread)s AND checkpoint_ns = '' AND checkpoint_id = ANY(%(ids)s) "
            "RETURNING checkpoint -> 'channel_versions' AS versions", key).fetchall()]
        conn.execute(_PG_UNUSED_BLOBS, {"thread": thread_id, "versions": [Jsonb(v) for v in freed]})
        return len(doomed)
