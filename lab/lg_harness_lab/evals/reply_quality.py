"""What a customer reads in a reply, judged per reply from run records, the same way for every design.

- False facts: a reply states something (a stock level, a status, an amount, a ``Label: value``, a date)
  that the tool results of its own message contradict (``nodes.fact_check``). Counted over replies to
  messages with at least one successful tool result: the only ones the check can judge.
- Internal text: a reply shows a tool name, an error class, a note the harness wrote for the model, a
  score, or talks of "the user" (``nodes.customer_text``).
- Dumps: a reply that is data, not words: JSON, ``key: value`` lines or pairs, a Python literal
  (``customer_text.dump_kind``).
- Wrong language: not in the language the customer wrote in (``customer_text.wrong_language``).
- Relayed instructions: a reply repeating an instruction found in data ("ignore previous instructions...",
  ``tools.cleaning.holds_instruction``).

- Restated: a reply to a message whose lookup worked that opens by telling the request back ("You asked me to
  look up ORD-10144...", "您问的是...") instead of answering (``restates_request``; written here, not shared with
  the harness's own trimming of such openings, so the count sees what the customer reads whoever wrote it).
  Counted over the same replies as false facts.

The four kinds above false facts are counted over every reply the bot wrote, and any of them fails the turn
(``customer_grade``): a task is complete only when its facts are stated in words the customer can read.
The same detectors run inside the harness's self-check, so a design with that check scores zero on text
its check rewrote; designs without one are judged by exactly the same code. Nothing here names a domain.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from lg_harness.core.domain import Domain
from lg_harness.nodes.customer_text import dump_kind, internal_text, only_data, wrong_language
from lg_harness.nodes.fact_check import contradictions, results_of
from lg_harness.tools.cleaning import holds_instruction

_CJK = re.compile(r"[\u3400-\u9fff]")
_WORD = re.compile(r"[A-Za-z]{2,}")
_ID = re.compile(r"\b[A-Z]{1,5}-?\d{3,}\b|\b[A-Z0-9]{6,}\b")
KINDS = ("dump", "wrong_language", "relayed_instruction", "internal_text")
# The opening of a reply that tells the customer's request back: "you asked/want/wanted/requested/would like",
# "your question/request is", "I understand you want", and the Chinese "您问/您想知道/您要求/你想查询...".
_TOLD_BACK = re.compile(
    r"^\W*(?:(?:so,?\s+|okay,?\s+|ok,?\s+)?(?:i understand (?:that )?)?you(?:'ve| have)?\s+(?:just\s+)?"
    r"(?:asked|want(?:ed)?|requested|would like|are asking|were asking|need(?:ed)?)\b|"
    r"your (?:question|request|message|query) (?:is|was|asks)\b|"
    r"(?:您|你)(?:刚才|是)?(?:问|说|想知道|询问|咨询|要求|想查询|想要|请求|需要))", re.I)


def turn_language(user_text: str, default: str = "en") -> str:
    """The language a customer wrote a message in: Chinese with Chinese characters, English with words,
    else (an id alone, "ok") the conversation's language."""
    if _CJK.search(user_text or ""):
        return "zh"
    return "en" if _WORD.search(_ID.sub(" ", user_text or "")) else default


def reply_language(turn: Mapping[str, Any], user_text: str, default: str = "en") -> str:
    """The language a reply is owed in: that of the customer's last message of the turn (their answer to a
    confirmation question, when there was one), else of the turn's message."""
    first = turn_language(user_text, default)
    answer = (turn.get("confirmation") or {}).get("answer") or ""
    return turn_language(answer, first) if answer else first


def reply_problems(reply: str, lang: str, tool_names: Sequence[str]) -> dict[str, bool]:
    """Which kinds of text not meant for the customer ``reply`` is or holds (``KINDS``)."""
    return {"dump": dump_kind(reply) is not None, "wrong_language": wrong_language(reply, lang),
            "relayed_instruction": holds_instruction(reply), "internal_text": bool(internal_text(reply, tool_names))}


def customer_grade(reply: str, lang: str, tool_names: Sequence[str]) -> bool:
    """Words the customer can read: none of ``reply_problems``."""
    return not any(reply_problems(reply, lang, tool_names).values())


def false_facts(turn: Mapping[str, Any], domain: Domain, user_text: str = "") -> list[str] | None:
    """The contradicted statements of one turn's reply; None when it had no tool result to judge by."""
    results = results_of(turn.get("tool_calls") or [])
    if not results or not turn.get("reply"):
        return None
    if only_data(turn["reply"]):  # a result pasted back states what it says: internal text, not a false fact
        return []
    evidence = json.dumps(results, ensure_ascii=False, default=str) + "\n" + user_text
    return [c.problem for c in contradictions(turn["reply"], results, domain.claims, domain.currency, evidence)]


def restates_request(reply: str) -> bool:
    """Whether ``reply`` opens by telling the customer's request back instead of answering it."""
    return bool(_TOLD_BACK.search(reply or ""))


def counts(turns: Sequence[Mapping[str, Any]], domain: Domain, tool_names: Sequence[str],
           user_texts: Sequence[str] = (), lang: str = "en") -> dict[str, list[int]]:
    """``false_facts`` and each of ``KINDS`` as [replies with it, replies judged] over a run's turns."""
    judged = [false_facts(t, domain, user_texts[i] if i < len(user_texts) else "") for i, t in enumerate(turns)]
    facts = [bool(j) for j in judged if j is not None]
    written = [(i, t) for i, t in enumerate(turns) if t.get("reply") and t.get("path", True) != []]
    found = [reply_problems(t["reply"], reply_language(t, user_texts[i] if i < len(user_texts) else "", lang), tool_names)
             for i, t in written]
    answers = [restates_request(t["reply"]) for t in turns if t.get("reply") and results_of(t.get("tool_calls") or [])]
    out = {"false_facts": [sum(facts), len(facts)], "restated": [sum(answers), len(answers)]}
    out.update({kind: [sum(f[kind] for f in found), len(found)] for kind in KINDS})
    return out
