"""Two things a customer reads in a reply, counted per reply from run records: false facts, internal text.

- False facts: a reply states something (a stock level, a status, an amount, a ``Label: value``, a date)
  that the tool results of its own message contradict (``nodes.fact_check``). Counted over replies to
  messages with at least one successful tool result: the only ones the check can judge.
- Internal text: a reply shows a tool name, an error class, a note the harness wrote for the model or
  talks of "the user" (``nodes.customer_text``). Counted over every reply the bot wrote.

The same detectors run inside the harness's self-check, so a design with that check scores zero on text
its check rewrote; designs without one are judged by exactly the same code.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from lg_harness.core.domain import Domain
from lg_harness.nodes.customer_text import internal_text, only_data
from lg_harness.nodes.fact_check import contradictions, results_of


def false_facts(turn: Mapping[str, Any], domain: Domain, user_text: str = "") -> list[str] | None:
    """The contradicted statements of one turn's reply; None when it had no tool result to judge by."""
    results = results_of(turn.get("tool_calls") or [])
    if not results or not turn.get("reply"):
        return None
    if only_data(turn["reply"]):  # a result pasted back states what it says: internal text, not a false fact
        return []
    evidence = json.dumps(results, ensure_ascii=False, default=str) + "\n" + user_text
    return [c.problem for c in contradictions(turn["reply"], results, domain.claims, domain.currency, evidence)]


def counts(turns: Sequence[Mapping[str, Any]], domain: Domain, tool_names: Sequence[str],
           user_texts: Sequence[str] = ()) -> dict[str, list[int]]:
    """``false_facts`` and ``internal_text`` as [replies with it, replies judged] over a run's turns."""
    judged = [false_facts(t, domain, user_texts[i] if i < len(user_texts) else "") for i, t in enumerate(turns)]
    facts = [bool(j) for j in judged if j is not None]
    replies = [t.get("reply") or "" for t in turns if t.get("reply") and t.get("path", True) != []]
    internal = [bool(internal_text(r, tool_names)) for r in replies]
    return {"false_facts": [sum(facts), len(facts)], "internal_text": [sum(internal), len(internal)]}
