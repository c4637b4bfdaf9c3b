"""What a customer reads in a reply, judged per reply from run records, the same way for every design.

- False facts: a reply states an amount, a date or a record's status that the tool results of the
  conversation so far contradict (``evals.false_facts``, the judge's own reading by value; until issue 45 it
  was the harness's self-check's ``nodes.fact_check``, so a fact the check missed the judge missed too).
  Counted over replies to messages with at least one successful tool result.
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

import re
from collections.abc import Mapping, Sequence
from typing import Any

from lg_harness.core.domain import Domain
from lg_harness_lab.evals import customer_grade as grade
from lg_harness_lab.evals.false_facts import false_facts as judge_false
from lg_harness_lab.evals.false_facts import results as fact_results

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


def false_facts(turn: Mapping[str, Any], domain: Domain, user_text: str = "", earlier: Sequence[Any] = (),
                lang: str = "en", refused: bool = False) -> list[str] | None:
    """The contradicted statements of one turn's reply (``evals.false_facts``, by the results of this message
    and the ``earlier`` ones; ``refused``: an earlier call failed, with a reason the record does not keep);
    None when its message had no tool result to judge by."""
    own = fact_results(turn.get("tool_calls") or [])
    if not own or not turn.get("reply"):
        return None
    refused = refused or any(c.get("status") != "ok" for c in turn.get("tool_calls") or [])
    return judge_false(str(turn["reply"]), [*earlier, *own], lang, domain, user_text, refused)


def restates_request(reply: str) -> bool:
    """Whether ``reply`` opens by telling the customer's request back instead of answering it."""
    return bool(_TOLD_BACK.search(reply or ""))


def counts(turns: Sequence[Mapping[str, Any]], domain: Domain, tool_names: Sequence[str],
           user_texts: Sequence[str] = (), lang: str = "en") -> dict[str, list[int]]:
    """``false_facts`` and each of ``KINDS`` as [replies with it, replies judged] over a run's turns."""
    judged, seen, refused = [], [], False
    for i, t in enumerate(turns):
        said = user_texts[i] if i < len(user_texts) else ""
        judged.append(false_facts(t, domain, said, seen, reply_language(t, said, lang), refused))
        seen += fact_results(t.get("tool_calls") or [])
        refused = refused or any(c.get("status") != "ok" for c in t.get("tool_calls") or [])
    facts = [bool(j) for j in judged if j is not None]
    written = [(i, t) for i, t in enumerate(turns) if t.get("reply") and t.get("path", True) != []]
    found = [reply_problems(t["reply"], reply_language(t, user_texts[i] if i < len(user_texts) else "", lang), tool_names)
             for i, t in written]
    answers = [restates_request(t["reply"]) for t in turns if t.get("reply") and fact_results(t.get("tool_calls") or [])]
    out = {"false_facts": [sum(facts), len(facts)], "restated": [sum(answers), len(answers)]}
    out.update({kind: [sum(f[kind] for f in found), len(found)] for kind in KINDS})
    return out
