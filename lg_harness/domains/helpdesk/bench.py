"""The helpdesk's benchmark conversation: what ``harness bench context|graph`` plays at the service desk.

One employee's conversation: a ticket number in turn 1, a standing request in turn 2, then knowledge-base
questions, their devices, their tickets and access requests, acknowledgements, and a question about the
start near the end. Reading tools only (``search_kb``, ``get_article``, ``get_ticket``, ``list_my_tickets``,
``get_asset``, ``list_my_assets``, ``get_access_request``), so repeating the script to 200 turns changes
nothing at the desk. Placeholders come from the seeded helpdesk DB for the given employee.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lg_harness.core.domain import BenchScript
from lg_harness.domains.helpdesk.db import HelpdeskDB

RECALL_QUESTION = "Which ticket number did I give you at the very start?"

SCRIPT = (
    "Hi, I'm still waiting on my ticket {ticket}. What's happening with it?",
    "Please don't pass me to a technician, I'd rather sort this out here with you.",
    "How do I connect to the VPN from home?",
    "Which devices are assigned to me?",
    "ok, thanks",
    "What's the status of ticket {ticket_2}?",
    "Show me my tickets please",
    "Tell me more about {laptop}",
    "How can I fix Wi-Fi connection problems?",
    "Has my request {request} been approved yet?",
    "great",
    "How do I set up a second monitor?",
    "Show me article {article_a}",
    "When does the warranty of {monitor} end?",
    "Which of my tickets are still open?",
    "What model is {phone}?",
    "thanks a lot",
    "How do I add a network printer?",
    "Any news on ticket {ticket_2}?",
    "What devices do I have?",
    "What's the status of my access request {request_2}?",
    "Tell me about {article_b}",
    "ok",
    "Who is working on ticket {ticket} now?",
    "How do I set up multi-factor authentication?",
    "Which of my tickets are closed?",
    "Is {laptop} still under warranty?",
    "What is the serial number of {monitor}?",
    "got it, thanks",
    "What was ticket {ticket_2} about?",
    "How can I recover deleted files from OneDrive?",
    "List my tickets",
    "Is {phone} still covered by warranty?",
    "Where does my request {request} stand?",
    "great, thanks",
    "How do I map a shared network drive?",
    "What's the latest on ticket {ticket}?",
    RECALL_QUESTION,
    "Thanks. Which devices are assigned to me again?",
    "Where is ticket {ticket} now?",
)
FIRST_TICKET = "ticket"  # the placeholder of the ticket given in turn 1, the recall question's answer

# bench graph: one employee's lookups; every message calls a reading tool, also for create_agent, which
# is offered every tool of the desk (no routes), so each names what it wants plainly.
GRAPH_SCRIPT = (
    "What's the status of ticket {ticket}?",
    "How do I connect to the VPN from home?",
    "Which devices are assigned to me?",
    "Show me my tickets please",
    "Is {laptop} still under warranty?",
    "What's the status of access request {request}?",
    "Show me article {article_a}",
    "How do I add a network printer?",
    "What's the latest on ticket {ticket_2}?",
    "What model is {phone}?",
)


def employee_facts(db: HelpdeskDB, user_id: str) -> dict[str, str]:
    """The employee's own tickets (an open one first), devices by kind, access requests and two articles."""
    tickets = db.query("SELECT id, status FROM tickets WHERE owner_id = ? ORDER BY created_at DESC, id DESC",
                       (user_id,))
    open_first = sorted(tickets, key=lambda r: r["status"] in ("resolved", "closed"))  # stable: newest first
    ids = [r["id"] for r in open_first]
    assets = db.query("SELECT id, kind FROM assets WHERE employee_id = ? ORDER BY id", (user_id,))
    by_kind: dict[str, str] = {}
    for row in assets:
        by_kind.setdefault(row["kind"], row["id"])
    requests = [r["id"] for r in db.query("SELECT id FROM access_requests WHERE employee_id = ? "
                                          "ORDER BY created_at DESC, id DESC", (user_id,))]
    articles = [r["id"] for r in db.query("SELECT id FROM kb_articles WHERE audience = 'all' ORDER BY id")]
    any_asset: str = assets[0]["id"]

    def nth(values: list[str], index: int) -> str:
        # Not every employee has two of everything; repeating their own keeps the script valid.
        return values[index] if len(values) > index else values[0]

    return {"ticket": ids[0], "ticket_2": nth(ids, 1),
            "laptop": by_kind.get("laptop", any_asset), "monitor": by_kind.get("monitor", any_asset),
            "phone": by_kind.get("phone", any_asset),
            "request": nth(requests, 0), "request_2": nth(requests, 1),
            "article_a": articles[1], "article_b": articles[12]}


def helpdesk_facts(resources: Mapping[str, Any], user_id: str) -> dict[str, str]:
    """``BenchScript.facts``: the employee's facts from the helpdesk backend among the harness's resources."""
    return employee_facts(resources["helpdesk"], user_id)


BENCH = BenchScript(messages=SCRIPT, facts=helpdesk_facts, recall_question=RECALL_QUESTION,
                    recall_key=FIRST_TICKET, graph_messages=GRAPH_SCRIPT)

__all__ = ["BENCH", "GRAPH_SCRIPT", "SCRIPT", "employee_facts", "helpdesk_facts"]
