"""A question about records is not a request to change them.

"我账户里被取消的订单一共有几个？" (how many of my orders were cancelled?) and "What is the total number of orders on
my account, including cancelled ones?" name the cancel task's word, but as the state of the records they ask
about: they ask for a count. A change happens only when it is asked for, so a message that asks a question
and names no change as a request is not given to a task that exists to change something (``change_intents``):
the rules and the model choose among the other intents, and no such task's tools are offered for it. On a
route that both lists and changes (coupons), a question about what its changes would act on makes the
route's lookups its goal (``asks_about_changes``).

A change is named as a request by its verb as such ("cancel", "取消掉", "帮我取消"); as a state it is a
participle ("cancelled ones", "被取消的", "已取消的", "取消了吗"). The verbs are read from the domain: the first
words of its changing tools and of its change tasks' names, their Chinese words, and those tasks' own
Chinese keywords.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from lg_harness.core.domain import Domain
from lg_harness.nodes.answer_words import ZH_VERBS
from lg_harness.tools.effects import WRITES, first_word
from lg_harness.tools.registry import ToolRegistry, ToolSpec

# A question for information (not "can you ..."): what it asks can be told, nothing is asked to be done.
_INFORMATION = re.compile(r"^\s*(?:what|which|how (?:many|much|long)|when|where|why|who|whose)\b|\b(?:show|tell) me\b|"
                          r"\b(?:how (?:many|much|long)|what(?:'s| is| are))\b|几|多少|什么|哪", re.I)
# Chinese marks of a state, around a change's verb: 被取消的, 已取消, 已经取消, 取消了吗.
_ZH_BEFORE = ("已被", "已经", "被", "已")
_ZH_AFTER = ("了的", "掉的", "的", "了吗", "了没")


def change_intents(domain: Domain, registry: ToolRegistry) -> frozenset[str]:
    """The tasks that exist to change something: their route has a tool that changes the world, and their
    name or description opens with a change verb ("cancel_order", "request access to a system"); a task
    that also lists ("discount coupons: which ones there are, ... claiming one") is not one."""
    out = set()
    for intent in domain.intents:
        changing = [t for t in domain.route(intent.name).tools if (s := registry.get(t)) and s.changes_state]
        opens = {first_word(intent.name), first_word(intent.description or "")}
        if intent.kind == "task" and changing and opens & WRITES:
            out.add(intent.name)
    return frozenset(out)


def change_verbs(domain: Domain, registry: ToolRegistry) -> tuple[frozenset[str], frozenset[str]]:
    """The words that name the domain's changes: English verbs, and Chinese verbs and keywords."""
    tasks = change_intents(domain, registry)
    changing = [n for n in registry.names() if (s := registry.get(n)) is not None and s.changes_state]
    en = {first_word(n) for n in [*changing, *tasks]} & WRITES
    zh = {ZH_VERBS[v] for v in en if v in ZH_VERBS}
    for name in tasks:
        declared = domain.intent(name)
        said = [w for words in (declared.rules.values() if declared else ()) for w in words]
        zh |= {w for w in said if re.search(r"[\u4e00-\u9fff]", w)}
    return frozenset(en), frozenset(zh)


def _as_state(text: str, start: int, end: int) -> bool:
    return text[:start].endswith(_ZH_BEFORE) or text[end:].startswith(_ZH_AFTER)


# A verb after one of these is a noun: "the last commit", "your return policy" name no change to make.
_DETERMINERS = frozenset({"the", "a", "an", "my", "your", "this", "that", "last", "latest", "recent", "first",
                          "previous"})


def names_a_change(text: str, en: frozenset[str], zh: frozenset[str]) -> bool:
    """Whether ``text`` names one of the changes as a request: an English verb as it is, or a Chinese one
    not in the form of a state."""
    words = re.findall(r"[a-z]+", text.lower())
    if any(w in en and (i == 0 or words[i - 1] not in _DETERMINERS) for i, w in enumerate(words)):
        return True
    return any(not _as_state(text, m.start(), m.end()) for w in zh for m in re.finditer(re.escape(w), text))


def asks_without_change(domain: Domain, registry: ToolRegistry, text: str) -> bool:
    """Whether the message asks to be told something and names none of the domain's changes as a request
    ("can I return it?" and "这个可以退吗？" ask for a change, politely: not these)."""
    if not asks_for_information(text):
        return False
    return not names_a_change(text, *change_verbs(domain, registry))


# Any question, for a list or a yes-or-no ("what coupons can I use?", "有没有…"), not only for information.
_QUESTION = re.compile(r"[?？]|\b(?:what|which|any|is there|are there|do you have|how many)\b|有什么|有哪些|哪些|有没有|几个",
                       re.I)


def asks_about_changes(domain: Domain, text: str, changing: Sequence[ToolSpec]) -> bool:
    """Whether the message only asks about what a route's changes would act on, so the route's goal is its
    lookups: a question that names none of its changes' verbs as a request ("claim" of claim_coupon, "领取")
    and none of the values they take (a coupon code), unless it asks to be told something about one ("what's
    the minimum spend for HOLIDAY30?")."""
    if not text or not _QUESTION.search(text):
        return False
    verbs = frozenset(w for spec in changing for w in re.findall(r"[a-z]+", spec.name.lower()) if w in WRITES)
    if names_a_change(text, verbs, frozenset(ZH_VERBS[v] for v in verbs if v in ZH_VERBS)):
        return False
    if asks_for_information(text):
        return True
    mentioned = set(domain.entities_in(text))
    return not any(mentioned & set(domain.tool_entities(spec).values()) for spec in changing)


def asks_for_information(text: str) -> bool:
    """A question for something to be told ("what's the minimum spend for HOLIDAY30?"), not "can I ...?"."""
    return bool(_INFORMATION.search(text or ""))


def without_changes(intents: Sequence[str], domain: Domain, registry: ToolRegistry) -> list[str]:
    """``intents`` less the tasks that exist to change something."""
    tasks = change_intents(domain, registry)
    return [i for i in intents if i not in tasks]
