"""What a customer reads in a reply, judged per reply from run records, the same way for every design.

- False facts: a reply states something (a stock level, a status, an amount, a ``Label: value``, a date)
  that the tool results of its own message contradict (``lg_harness.nodes.fact_check``, the one detector still
  shared with the harness's self-check: a judge of its own is issue 45's). Counted over replies to messages with
  at least one successful tool result: the only ones the check can judge.
- Dumps, wrong language, relayed instructions and internal text: ``evals.customer_grade``, written apart from the
  harness's self-check (``lg_harness.nodes.customer_text``), so a blind spot of the check is not the judge's too.
  Re-judged with them, the committed cells show replies the check let through: "Next step是The manager approves..."
  to a Chinese customer, an intent's name as the whole reply, a status as code writes it ("in_progress").
- Restated: a reply to a message whose lookup worked that opens by telling the request back ("You asked me to
  look up ORD-10144...", "您问的是...") instead of answering (``restates_request``; written here, not shared with
  the harness's own trimming of such openings, so the count sees what the customer reads whoever wrote it).
  Counted over the same replies as false facts.

The four kinds of ``customer_grade`` are counted over every reply the bot wrote, and any of them fails the turn:
a task is complete only when its facts are stated in words the customer can read. Nothing here names a domain.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from lg_harness.core.domain import Domain
from lg_harness.nodes.fact_check import contradictions, results_of
from lg_harness_lab.evals import customer_grade as grade

_CJK = re.compile(r"[\u3400-\u9fff]")
_WORD = re.compile(r"[A-Za-z]{2,}")
_ID = re.compile(r"\b[A-Z]{1,5}-?\d{3,}\b|\b[A-Z0-9]{6,}\b")
KINDS = grade.KINDS
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
    return grade.problems(reply, lang, tool_names)


def customer_grade(reply: str, lang: str, tool_names: Sequence[str]) -> bool:
    """Words the customer can read: none of ``reply_problems``."""
    return not any(reply_problems(reply, lang, tool_names).values())


def false_facts(turn: Mapping[str, Any], domain: Domain, user_text: str = "") -> list[str] | None:
    """The contradicted statements of one turn's reply; None when it had no tool result to judge by."""
    results = results_of(turn.get("tool_calls") or [])
    if not results or not turn.get("reply"):
        return None
    if grade.data_dump(turn["reply"]):  # a result pasted back states what it says: a dump, not a false fact
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
