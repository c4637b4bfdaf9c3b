"""While a human holds a thread, the customer talks to the human; the bot waits until it is handed back.

A handoff pauses the thread at the ``human`` node. The human's first answer (``harness handoff reply``)
resumes the graph, and from then on the human *holds* the thread: each customer message is kept in the
thread's state and transcript for them (the bot does not run), each further answer of theirs is added
the same way, and ``harness handoff release`` gives the thread back to the bot, which then sees the whole
exchange in its history.
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage, HumanMessage
from lg_harness.nodes.phrases import say
from lg_harness.tools.errors import HarnessError

HUMAN = "human_agent"  # the name human answers carry in the messages


def is_held(h: Any, thread_id: str) -> bool:
    return thread_id in h.transcripts.held_handoffs()


def _lang(values: dict[str, Any]) -> str:
    return (values.get("fact_card") or {}).get("language") or "en"


def while_held(h: Any, thread_id: str, snapshot: Any, message: str) -> dict[str, Any]:
    """A customer message on a held thread: kept for the human, acknowledged, no bot run."""
    values = snapshot.values
    config = h.graph.update_state(h.config(thread_id), {"messages": [HumanMessage(message)]}, as_node="human")
    ticket = str((values.get("handoff") or {}).get("ticket", "pending"))
    reply = say("with_human", _lang(values), h.domain, ticket=ticket)
    saved = h.graph.get_state(config)
    result = h.result(thread_id, saved, [])
    h.last_values = {**saved.values, "turn_stats": {}, "tool_log": []}
    result.update(reply=reply, tool_calls=[], phase="handoff", path=[], waiting_for_human=True,
                  usage={"input_tokens": 0, "output_tokens": 0, "model_calls": 0})
    h.transcripts.append(thread_id, values.get("turn") or 0, "assistant", reply)
    return result


def held_answer(h: Any, thread_id: str, text: str) -> dict[str, Any]:
    """A human's further answer on a thread they hold: added to the thread as the human's reply."""
    config = h.graph.update_state(h.config(thread_id), {"messages": [AIMessage(text, name=HUMAN)], "reply": text},
                                  as_node="human")
    saved = h.graph.get_state(config)
    h.transcripts.append(thread_id, saved.values.get("turn") or 0, "assistant", text)
    result = h.result(thread_id, saved, [])
    result.update(tool_calls=[], path=[], waiting_for_human=True,
                  usage={"input_tokens": 0, "output_tokens": 0, "model_calls": 0})
    return result


def release(h: Any, thread_id: str) -> dict[str, Any]:
    """Hand a held thread back to the bot."""
    h.require_thread(thread_id)
    if not h.transcripts.release_handoff(thread_id):
        raise HarnessError(f"thread '{thread_id}' is not held by a human; see: harness handoff list")
    return {"thread_id": thread_id, "released": True}
