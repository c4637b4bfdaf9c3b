"""Confirm before changing: a changing tool call waits for the user's explicit yes in their next message.

With the design knob ``confirm_changes`` on, the action node does not run a state-changing call the model
made; it states what would change (the domain's ``change_<tool>`` phrase, or the core's generic one: no
tool names) and ends the turn. The next message decides: an explicit yes runs exactly that call, and
nothing else; a no, a changed mind, a question or any other message drops it. Questions and hypotheticals
("Should I cancel...?", "If I returned it...") therefore never change anything: at most they get the
question back, which the user answers with a no or with something else.

The words are language-level (English and Chinese), not domain-level, like ``tools.text``.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from lg_harness.core.domain import Domain
from lg_harness.nodes.phrases import say

_YES_EN = (r"y|yes|yeah|yep|yup|sure|ok|okay|confirm(?:ed)?|correct|right|go ahead|do it|please do|"
           r"please go ahead|yes please|that'?s right|proceed")
_NO_EN = (r"n|no|nope|nah|don'?t|do not|stop|wait|hold on|never ?mind|cancel that|not now|leave it|forget it|"
          r"i changed my mind|changed my mind|actually,? no|no thanks|no,? thank you")
_YES = re.compile(rf"^\s*(?:{_YES_EN})\b[\s,.!]*(?:(?:please|thanks|thank you|do it|go ahead)\b[\s,.!]*)*$"
                  r"|^\s*(?:是|是的|对|对的|好|好的|可以|行|确认|确定|没错|嗯|请继续|继续吧?|就这样)[\s，。！!,.]*(?:吧|的)?[\s，。！!,.]*$",
                  re.I)
# A no anywhere wins over a yes: "yes, but don't cancel it" is not a confirmation.
_NO = re.compile(rf"\b(?:{_NO_EN})\b|不要|不用|别|算了|先不|不了|改主意|不是|等一下|再想想", re.I)
_QUESTION = re.compile(r"[?？]|\b(?:if|should|would|could|how|what|when|why|whether)\b|如果|要是|吗|呢|怎么|是否", re.I)

Answer = Literal["yes", "no", "other"]


def answer_to_confirmation(text: str) -> Answer:
    """How a message answers "shall I make this change?": an explicit yes, a no, or something else.

    Only a short, plain yes counts: "yes?" or "yes if it is free" is a question or a condition, not consent.
    """
    if _NO.search(text):
        return "no"
    if _YES.match(text) and not _QUESTION.search(text):
        return "yes"
    return "other"


def describe_change(call: dict[str, Any], domain: Domain, lang: str) -> str:
    """What one changing call will do, in the user's language: ``change_<tool>`` with the call's arguments
    filled in, or the core's generic wording listing the argument values (never the tool's name)."""
    args = {k: str(v) for k, v in (call.get("args") or {}).items()}
    text = domain.phrase(f"change_{call['name']}", lang)
    if text is not None:
        try:
            return text.format_map(_Defaults(args)).strip()
        except (IndexError, ValueError):
            pass
    details = ", ".join(v for v in args.values() if v) or "-"
    return say("change_generic", lang, domain, details=details)


class _Defaults(dict):
    """Format values where an argument the phrase names is missing from the call read as empty."""

    def __missing__(self, key: str) -> str:
        return ""


def confirmation_question(calls: list[dict[str, Any]], domain: Domain, lang: str) -> str:
    sep = "；" if lang == "zh" else "; "
    changes = sep.join(describe_change(c, domain, lang) for c in calls)
    return say("confirm_change", lang, domain, change=changes)
