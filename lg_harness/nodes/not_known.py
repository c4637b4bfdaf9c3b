"""When the customer does not know what we asked for ("which ticket?" - "I don't know"): look their records up.

Asking again for a number the customer just said they do not have gets the same answer, then a hand-off
(real model, helpdesk test 0006: "我有几个工单已经解决了？" asked for a ticket number twice, then handed off). A
domain that can list the customer's records of that kind (a lookup that needs nothing, beside one that takes
the record) answers from the list instead: which tickets, orders or devices there are, so the customer can
point at one or has the answer already.
"""

from __future__ import annotations

import re

from lg_harness.core.domain import Domain

# "I don't know", "no idea", "不知道", "忘了": the customer cannot give what was asked.
_NOT_KNOWN = re.compile(r"\b(?:i\s+)?(?:don'?t|do not|dont)\s+(?:know|have|remember)\b|\bno idea\b|\bnot sure\b|"
                        r"\bcan'?t (?:remember|find)\b|\bforgot\b|不知道|不清楚|不记得|记不得|记不清|忘了", re.I)


def not_known(text: str) -> bool:
    """Whether the message says the customer does not know (or have) something."""
    return bool(_NOT_KNOWN.search(text))


def browse_intent(domain: Domain, waiting: list[str]) -> str | None:
    """The task that lists the customer's records of the kind a waiting slot names: it needs no slot, changes
    nothing, and its route holds a lookup that takes that record and one that takes no required argument
    (``my_tickets``: ``list_my_tickets`` beside ``get_ticket``). None where the domain has none."""
    by_slot = domain.slot_entities()
    kinds = {by_slot[s].name for s in waiting if s in by_slot}
    if not kinds:
        return None
    registry = domain.registry()
    changing = domain.changing_tools()
    for intent in domain.intents:
        tools = set(intent.route.tools)
        if intent.kind != "task" or not tools or tools & changing or domain.missing_slots(intent.name, {}):
            continue
        specs = [s for t in intent.route.tools if (s := registry.get(t)) is not None]
        takes = any(kinds & set(domain.tool_entities(s).values()) for s in specs)
        lists = any(not s.json_schema()["function"]["parameters"].get("required") for s in specs)
        if takes and lists:
            return intent.name
    return None
