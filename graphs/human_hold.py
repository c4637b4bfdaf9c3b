"""A thread a human takes over: waiting for one, answered and held by one, handed back to the bot.

A handoff pauses the thread at the ``human`` node. While it waits, customer messages are kept in the
transcript for the human and the bot stays out. The human's first answer (``harness handoff reply``)
resumes the graph, and from then on the human *holds* the thread: each customer message is kept in the
thread's state and transcript for them (the bot does not run), each further answer of theirs is added
the same way, and ``harness handoff release`` gives the thread back to the bot, which then sees the whole
exchange in its history.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from langchain_core.messages import AIMessage, HumanMessage
from langgraph.types import Command
from lg_harness.graphs.result import SendResult
from lg_harness.nodes.phrases import say
from lg_harness.obs.redact import default_redactor, redact_value

from lg_harness.errors import UsageError

if TYPE_CHECKING:
    from lg_harness.graphs.app import Harness

HUMAN = "human_agent"  # the name human answers carry in the messages


def is_held(h: Harness, thread_id: str) -> bool:
    return thread_id in h.transcripts.held_handoffs()


def _lang(values: dict[str, Any]) -> str:
    return (values.get("fact_card") or {}).get("language") or "en"


def next_turn(h: Harness, thread_id: str, snapshot: Any) -> int:
    """The number of the customer's next message: every message a customer sends counts, the bot's or not.

    The thread's turn counts the messages the graph has taken; while it waits for a human it takes none, so
    the messages kept for the human meanwhile count from the transcript (the graph catches up when the human
    answers: ``human_reply``)."""
    done = snapshot.values.get("turn") or 0
    if "human" not in snapshot.next:
        return done + 1
    return max([done, *(r["turn"] for r in h.transcripts.read(thread_id) if r["role"] == "user")]) + 1


def while_waiting(h: Harness, thread_id: str, snapshot: Any, turn: int) -> SendResult:
    """The thread waits for a human: the message (``turn``) is kept in the transcript for them; the bot
    stays out."""
    ticket = str((snapshot.values.get("handoff") or {}).get("ticket", "pending"))
    reply = say("waiting_human", _lang(snapshot.values), h.domain, ticket=ticket)
    result = h.result(thread_id, snapshot, [], bot_ran=False, reply=reply, phase="handoff")
    h.transcripts.append(thread_id, turn, "assistant", reply)
    return result


def while_held(h: Harness, thread_id: str, snapshot: Any, message: str, turn: int) -> SendResult:
    """A customer message on a held thread: kept for the human (it counts as message ``turn``),
    acknowledged, no bot run."""
    values = snapshot.values
    config = h.graph.update_state(h.config(thread_id), {"messages": [HumanMessage(message)], "turn": turn},
                                  as_node="human")
    ticket = str((values.get("handoff") or {}).get("ticket", "pending"))
    reply = say("with_human", _lang(values), h.domain, ticket=ticket)
    result = h.result(thread_id, h.graph.get_state(config), [], bot_ran=False, reply=reply, phase="handoff",
                      waiting_for_human=True)
    h.transcripts.append(thread_id, turn, "assistant", reply)
    return result


def human_reply(h: Harness, thread_id: str, text: str, agent: str | None = None) -> SendResult:
    """See ``Harness.human_reply``."""
    message = h.check_message(text, as_typed=True)
    with h.order.turn(thread_id):
        snapshot = h.graph.get_state(h.config(thread_id))
        if "human" not in snapshot.next:
            if is_held(h, thread_id):
                return _held_answer(h, thread_id, message, agent)
            raise UsageError(f"thread '{thread_id}' is not waiting for a human; see: harness handoff list")
        # The answer is to the customer's latest message: the ones they sent while waiting join the thread
        # (the bot reads them after a release) and the thread's turn catches up with them.
        done = snapshot.values.get("turn") or 0
        waited = [r for r in h.transcripts.read(thread_id) if r["role"] == "user" and r["turn"] > done]
        turn = max([done, *(r["turn"] for r in waited)])
        resume = Command(resume={"text": message}, update={"turn": turn, "messages": [
            HumanMessage(r["content"]) for r in waited]})
        result = h.run_graph(thread_id, resume, turn, human=agent or "")
        h.transcripts.hold_handoff(thread_id)  # the human keeps the thread until they release it
        checked = [c["ledger_key"] for c in (snapshot.values.get("handoff") or {}).get("uncertain_changes") or []
                   if c.get("ledger_key")]
        if checked and h.stores.ledger is not None:  # answering means the person checked them
            h.stores.ledger.resolve(checked)
        if (close := h.domain.handoff.answered) is not None:
            close(h.resources, thread_id, (snapshot.values.get("user") or {}).get("id", ""))
        return result


def _held_answer(h: Harness, thread_id: str, text: str, agent: str | None) -> SendResult:
    """A human's further answer on a thread they hold: added to the thread as the human's reply."""
    config = h.graph.update_state(h.config(thread_id), {"messages": [AIMessage(text, name=HUMAN)], "reply": text},
                                  as_node="human")
    saved = h.graph.get_state(config)
    h.transcripts.append(thread_id, saved.values.get("turn") or 0, "assistant", text, author="human",
                         author_name=agent or None)
    return h.result(thread_id, saved, [], bot_ran=False, waiting_for_human=True)


def release(h: Harness, thread_id: str) -> dict[str, Any]:
    """Hand a held thread back to the bot."""
    with h.order.turn(thread_id):
        h.require_thread(thread_id)
        if not h.transcripts.release_handoff(thread_id):
            raise UsageError(f"thread '{thread_id}' is not held by a human; see: harness handoff list")
        return {"thread_id": thread_id, "released": True}


def waiting_threads(h: Harness) -> list[dict[str, Any]]:
    """See ``Harness.waiting_threads``."""
    waiting = []
    for thread_id in h.transcripts.waiting_handoffs():
        snap = h.graph.get_state(h.config(thread_id))
        if "human" in snap.next:
            waiting.append(redact_value({"thread_id": thread_id, "user": snap.values.get("user"),
                                         "handoff": snap.values.get("handoff"), "status": "waiting",
                                         "last_message": _last_user_message(h, thread_id)},
                                        default_redactor))
    return waiting


def held_threads(h: Harness) -> list[dict[str, Any]]:
    """See ``Harness.held_threads``."""
    return [{"thread_id": t, "user": (v := h.graph.get_state(h.config(t)).values).get("user"),
             "handoff": v.get("handoff"), "status": "held", "last_message": _last_user_message(h, t)}
            for t in h.transcripts.held_handoffs()]


def _last_user_message(h: Harness, thread_id: str) -> str:
    rows = [r for r in h.transcripts.read(thread_id) if r["role"] == "user"]
    return rows[-1]["content"] if rows else ""
