"""Finishing a message that stopped part-way: one recovery path for ``finish``, ``harness resume --finish``
and the HTTP worker that takes over a dead worker's message.

Whatever the crash saved decides: steps still to run are run (a decided call is run, never decided again);
a reply the checkpoint holds but the transcript does not is recorded; a message only the transcript holds
runs from its start.
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import HumanMessage

from lg_harness.errors import UsageError
from lg_harness.graphs.result import SendResult
from lg_harness.graphs.thread_host import ThreadHost


class Recovery:
    """Finishing a stopped message on one harness's threads (the module doc)."""

    def __init__(self, host: ThreadHost) -> None:
        self.host = host

    def saved_state(self, thread_id: str) -> str:
        """What is saved of ``thread_id`` after a failure, and what to do about the message that failed."""
        try:
            snap = self.host.graph.get_state(self.host.config(thread_id))
            told = self.host.transcripts.read(thread_id)
        except Exception:  # noqa: BLE001 - reading may fail for the same reason writing did
            return "nothing could be read back from the data dir: free or fix it, then send the message again"
        ckpt = (snap.config.get("configurable") or {}).get("checkpoint_id")
        turn = snap.values.get("turn") or 0
        mid = bool(snap.tasks)
        asked = max((r["turn"] for r in told if r["role"] == "user"), default=0)
        where = (f"the newest saved checkpoint is {ckpt}, in the middle of message {turn}" if mid and ckpt else
                 f"the newest saved checkpoint is {ckpt}, after message {turn}" if ckpt else "no checkpoint is saved")
        if mid or asked > turn:
            return (f"{where}; the message is kept: once the data dir is fixed, finish it with "
                    f"harness resume --thread {thread_id} --finish")
        return f"{where}; this message was not saved: send it again once the data dir is fixed"

    def unanswered_message(self, thread_id: str, values: dict[str, Any]) -> tuple[int, str] | None:
        """A user message the transcript holds beyond the thread's last finished turn, with no reply: the
        process stopped before the graph saved its first checkpoint of that message."""
        done = values.get("turn") or 0
        rows = [r for r in self.host.transcripts.read(thread_id) if r["turn"] > done]
        users = [r for r in rows if r["role"] == "user"]
        if not users or any(r["role"] == "assistant" for r in rows):
            return None
        return users[0]["turn"], users[0]["content"]

    def finish(self, thread_id: str, checkpoint_id: str | None = None) -> SendResult:
        """See ``Harness.finish``."""
        if checkpoint_id is not None:
            with self.host.order.turn(thread_id):
                return self._finish_from(thread_id, checkpoint_id)
        done = self.complete(thread_id)
        if done is not None:
            return done
        stopped = self.host.state(thread_id)  # an unknown thread says so here
        if "human" in stopped["pending"]:
            raise UsageError(f"thread '{thread_id}' waits for a human; answer with: "
                             f"harness handoff reply --thread {thread_id} TEXT")
        raise UsageError(f"thread '{thread_id}' has no unfinished message; send a new one with: "
                         f"harness run --thread {thread_id} MESSAGE")

    def complete(self, thread_id: str) -> SendResult | None:
        """See ``Harness.complete``."""
        with self.host.order.turn(thread_id):
            if not self.host.thread_exists(thread_id):
                return self._run_unsaved(thread_id, {})
            stopped = self.host.state(thread_id)
            pending, values = stopped["pending"], stopped["values"]
            if pending in ([], ["human"]) and self._record_saved_reply(thread_id, values):
                return self.host.result(thread_id, self.host.graph.get_state(self.host.config(thread_id)), [])
            if "human" in pending:
                return None
            if not pending:
                return self._run_unsaved(thread_id, values)
            return self._run_pending(thread_id, pending, values)

    def _finish_from(self, thread_id: str, checkpoint_id: str) -> SendResult:
        stopped = self.host.state(thread_id, checkpoint_id)
        if "human" in stopped["pending"]:
            raise UsageError(f"checkpoint {checkpoint_id} waits for a human; answer with: "
                             f"harness handoff reply --thread {thread_id} TEXT")
        if not stopped["pending"]:
            raise UsageError(f"checkpoint {checkpoint_id} has no unfinished message; send a new one with: "
                             f"harness run --thread {thread_id} MESSAGE")
        self.host.fork(thread_id, checkpoint_id)
        return self._run_pending(thread_id, stopped["pending"], stopped["values"])

    def _run_pending(self, thread_id: str, pending: list[str], values: dict[str, Any]) -> SendResult:
        # Before the intent node has run, the pending message has not been counted yet.
        turn = (values.get("turn") or 0) + bool({"__start__", "intent"} & set(pending))
        return self.host.run_graph(thread_id, None, turn, (values.get("user") or {}).get("id"))

    def _record_saved_reply(self, thread_id: str, values: dict[str, Any]) -> bool:
        """The message ran to its end and its checkpoint holds the reply, but the process stopped before the
        transcript recorded it: record it now (the user gets the answer that was given, not a second run)."""
        rows = self.host.transcripts.read(thread_id)
        turn, reply = values.get("turn") or 0, values.get("reply") or ""
        if not rows or rows[-1]["role"] != "user" or rows[-1]["turn"] != turn or not reply:
            return False
        self.host.transcripts.append(thread_id, turn, "assistant", reply)
        handoff = values.get("handoff") or {}
        if handoff.get("ticket") and not handoff.get("answered"):
            self.host.transcripts.open_handoff(thread_id, str(handoff["ticket"]))
        return True

    def _run_unsaved(self, thread_id: str, values: dict[str, Any]) -> SendResult | None:
        """Run the message the transcript holds beyond the checkpoints, if any (None: there is none)."""
        found = self.unanswered_message(thread_id, values)
        owner = self.host.transcripts.owner(thread_id) or (values.get("user") or {}).get("id")
        if found is None or not owner:
            return None
        turn, message = found
        user = values.get("user") or self.host.user(owner)
        return self.host.run_graph(thread_id, {"messages": [HumanMessage(message)], "user": user}, turn, user["id"])

