"""A thread a human takes over: waiting for one, answered and held by one, handed back to the bot.

A handoff pauses the thread at the ``human`` node. While it waits, customer messages are kept in the
transcript for the human and the bot stays out. The human's first answer (``harness handoff reply``)
resumes the graph, and from then on the human *holds* the thread: each customer message is kept in the
thread's state and transcript for them (the bot does not run), each further answer of theirs is added
the same way, and ``harness handoff release`` gives the thread back to the bot, which then sees the whole
exchange in its history.
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage, HumanMessage
from langgraph.types import Command

from lg_harness.errors import UsageError
from lg_harness.graphs.result import SendResult
from lg_harness.graphs.thread_host import ThreadHost
from lg_harness.nodes.phrases import say
from lg_harness.obs.redact import default_redactor, redact_value

HUMAN = "human_agent"  # the name human answers carry in the messages


def _lang(values: dict[str, Any]) -> str:
    return (values.get("fact_card") or {}).get("language") or "en"


class HumanHold:
    """Threads a human takes over, on one harness (the module doc)."""

    def __init__(self, host: ThreadHost) -> None:
        self.host = host

    def is_held(self, thread_id: str) -> bool:
        return thread_id in self.host.transcripts.held_handoffs()

    def next_turn(self, thread_id: str, snapshot: Any) -> int:
        """The number of the customer's next message: every message a customer sends counts, the bot's or not.

        The thread's turn counts the messages the graph has taken; while it waits for a human it takes none, so
        the messages kept for the human meanwhile count from the transcript (the graph catches up when the human
        answers: ``human_reply``)."""
        done = snapshot.values.get("turn") or 0
        if "human" not in snapshot.next:
            return done + 1
        return max([done, *(r["turn"] for r in self.host.transcripts.read(thread_id) if r["role"] == "user")]) + 1

    def while_waiting(self, thread_id: str, snapshot: Any, turn: int) -> SendResult:
        """The thread waits for a human: the message (``turn``) is kept in the transcript for them; the bot
        stays out."""
        ticket = str((snapshot.values.get("handoff") or {}).get("ticket", "pending"))
        reply = say("waiting_human", _lang(snapshot.values), self.host.domain, ticket=ticket)
        result = self.host.result(thread_id, snapshot, [], bot_ran=False, reply=reply, phase="handoff")
        self.host.transcripts.append(thread_id, turn, "assistant", reply)
        return result

    def while_held(self, thread_id: str, snapshot: Any, message: str, turn: int) -> SendResult:
        """A customer message on a held thread: kept for the human (it counts as message ``turn``),
        acknowledged, no bot run."""
        values = snapshot.values
        config = self.host.graph.update_state(self.host.config(thread_id), {"messages": [HumanMessage(message)], "turn": turn},
                                      as_node="human")
        ticket = str((values.get("handoff") or {}).get("ticket", "pending"))
        reply = say("with_human", _lang(values), self.host.domain, ticket=ticket)
        result = self.host.result(thread_id, self.host.graph.get_state(config), [], bot_ran=False, reply=reply, phase="handoff",
                          waiting_for_human=True)
        self.host.transcripts.append(thread_id, turn, "assistant", reply)
        return result

    def human_reply(self, thread_id: str, text: str, agent: str | None = None) -> SendResult:
        """See ``Harness.human_reply``."""
        message = self.host.check_message(text, as_typed=True)
        with self.host.order.turn(thread_id):
            snapshot = self.host.graph.get_state(self.host.config(thread_id))
            if "human" not in snapshot.next:
                if self.is_held(thread_id):
                    return self._held_answer(thread_id, message, agent)
                raise UsageError(f"thread '{thread_id}' is not waiting for a human; see: harness handoff list")
            # The answer is to the customer's latest message: the ones they sent while waiting join the thread
            # (the bot reads them after a release) and the thread's turn catches up with them.
            done = snapshot.values.get("turn") or 0
            waited = [r for r in self.host.transcripts.read(thread_id) if r["role"] == "user" and r["turn"] > done]
            turn = max([done, *(r["turn"] for r in waited)])
            resume = Command(resume={"text": message}, update={"turn": turn, "messages": [
                HumanMessage(r["content"]) for r in waited]})
            result = self.host.run_graph(thread_id, resume, turn, human=agent or "")
            self.host.transcripts.hold_handoff(thread_id)  # the human keeps the thread until they release it
            checked = [c["ledger_key"] for c in (snapshot.values.get("handoff") or {}).get("uncertain_changes") or []
                       if c.get("ledger_key")]
            if checked and self.host.stores.ledger is not None:  # answering means the person checked them
                self.host.stores.ledger.resolve(checked)
            if (close := self.host.domain.handoff.answered) is not None:
                close(self.host.resources, thread_id, (snapshot.values.get("user") or {}).get("id", ""))
            return result

    def _held_answer(self, thread_id: str, text: str, agent: str | None) -> SendResult:
        """A human's further answer on a thread they hold: added to the thread as the human's reply."""
        config = self.host.graph.update_state(self.host.config(thread_id), {"messages": [AIMessage(text, name=HUMAN)], "reply": text},
                                      as_node="human")
        saved = self.host.graph.get_state(config)
        self.host.transcripts.append(thread_id, saved.values.get("turn") or 0, "assistant", text, author="human",
                             author_name=agent or None)
        return self.host.result(thread_id, saved, [], bot_ran=False, waiting_for_human=True)

    def release(self, thread_id: str) -> dict[str, Any]:
        """Hand a held thread back to the bot."""
        with self.host.order.turn(thread_id):
            self.host.require_thread(thread_id)
            if not self.host.transcripts.release_handoff(thread_id):
                raise UsageError(f"thread '{thread_id}' is not held by a human; see: harness handoff list")
            return {"thread_id": thread_id, "released": True}

    def waiting_threads(self) -> list[dict[str, Any]]:
        """See ``Harness.waiting_threads``."""
        waiting = []
        for thread_id in self.host.transcripts.waiting_handoffs():
            snap = self.host.graph.get_state(self.host.config(thread_id))
            if "human" in snap.next:
                waiting.append(redact_value({"thread_id": thread_id, "user": snap.values.get("user"),
                                             "handoff": snap.values.get("handoff"), "status": "waiting",
                                             "last_message": self._last_user_message(thread_id)},
                                            default_redactor))
        return waiting

    def held_threads(self) -> list[dict[str, Any]]:
        """See ``Harness.held_threads``."""
        return [{"thread_id": t, "user": (v := self.host.graph.get_state(self.host.config(t)).values).get("user"),
                 "handoff": v.get("handoff"), "status": "held", "last_message": self._last_user_message(t)}
                for t in self.host.transcripts.held_handoffs()]

    def _last_user_message(self, thread_id: str) -> str:
        rows = [r for r in self.host.transcripts.read(thread_id) if r["role"] == "user"]
        return rows[-1]["content"] if rows else ""

