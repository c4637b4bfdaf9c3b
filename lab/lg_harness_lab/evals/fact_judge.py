"""The facts a customer asked for, checked by value in the replies they read (issue 45's judge).

A fact is a value of a kind (``evals.scenario.Told``): an id, a status, an amount, a date, a count, a name or a
text. It is found when a reply states that value, parsed and normalised for the customer's language:

- ``id``: the identifier as a word of its own, any case, ``-``/``_``/space alike (``ORD-10171`` in
  "ord 10171"), never as part of a longer one (``ORD-1017`` is not in ``ORD-10171``).
- ``status``: a word the domain uses for that status (its ``claims``) in the customer's language only: an
  English reply that says "已发货" has not told an English customer the order shipped.
- ``amount`` and ``count``: numbers read from the text (thousands separators, ``1,299.00``; number words to
  twenty in English, 零 to 十 in Chinese for counts), equal within half a cent.
- ``date``: ISO dates, "November 1", "1 Nov 2026", "11月1日", "2026年11月1日".
- ``name`` and ``text``: the value inside the reply, compared after NFKC and case folding.

A false fact is a status about the fact's record stated as another status in a sentence that names the
record. A claimed change is a reply saying a changing tool's action was done ("has been reset", "is now
cancelled") in a message whose backend shows no change. Substring checks of the old scripted expectations are
diagnostics beside these, not part of the verdict.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from datetime import date
from typing import Any

_CJK = re.compile(r"[\u3400-\u9fff]")
# ASCII edges: a number glued to Chinese text ("为78.98美元") is still a number, one inside an id is not
_NUMBER = re.compile(r"(?<![A-Za-z0-9_.])-?\d{1,3}(?:,\d{3})+(?:\.\d+)?(?![A-Za-z0-9_])"
                     r"|(?<![A-Za-z0-9_.])-?\d+(?:\.\d+)?(?![A-Za-z0-9_])")
EN_NUMBERS = {w: i for i, w in enumerate(["zero", "one", "two", "three", "four", "five", "six", "seven", "eight",
                                          "nine", "ten", "eleven", "twelve", "thirteen", "fourteen", "fifteen",
                                          "sixteen", "seventeen", "eighteen", "nineteen", "twenty"])}
ZH_NUMBERS = {c: i for i, c in enumerate("零一二三四五六七八九十")} | {"两": 2}
MONTHS = {m: i + 1 for i, m in enumerate(["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct",
                                           "nov", "dec"])}
_SENTENCE = re.compile(r"[^.!?。！？\n;；]+")


def norm(text: Any) -> str:
    return unicodedata.normalize("NFKC", str(text or "")).casefold()


def in_language(word: str, lang: str) -> bool:
    """A vocabulary word belongs to the customer's language: Chinese words for Chinese, the rest for English."""
    return bool(_CJK.search(word)) == (lang == "zh")


# ----------------------------------------------------------------------------------------------- finders


def id_pattern(value: str) -> re.Pattern[str]:
    parts = [re.escape(p) for p in re.split(r"[-_\s]+", norm(value)) if p]
    return re.compile(r"(?<![0-9a-z])" + r"[-_\s]?".join(parts) + r"(?![0-9a-z])")


def numbers(text: str, lang: str = "en") -> list[float]:
    """Every number a text states: digits (with thousands separators) and small number words."""
    t = norm(text)
    found = [float(m.group().replace(",", "")) for m in _NUMBER.finditer(t)]
    found += [float(n) for w, n in EN_NUMBERS.items() if re.search(rf"\b{w}\b", t)]
    found += [float(n) for c, n in ZH_NUMBERS.items() if re.search(rf"{c}(个|张|笔|件|条|单|项|次)", t)]
    return found


def dates(text: str) -> list[tuple[int | None, int, int]]:
    """(year or None, month, day) for each date a text states. A date may follow a Chinese character with no
    space ("保修到是2026-11-25"): ``\b`` finds no boundary there (both are word characters), so the edges are
    digits and letters only."""
    t = norm(text)
    out: list[tuple[int | None, int, int]] = []
    out += [(int(y), int(m), int(d)) for y, m, d in re.findall(r"(?<![0-9a-z])(\d{4})-(\d{1,2})-(\d{1,2})", t)]
    out += [(int(y) if y else None, int(m), int(d)) for y, m, d in re.findall(r"(?:(\d{4})\s*年\s*)?(\d{1,2})\s*月\s*(\d{1,2})\s*[日号]", t)]  # "2026 年 10 月 25 日" too
    month = r"(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?"
    # the day is one or two digits of their own: "October 2026" names no day (not the 20th)
    for mon, d, y in re.findall(rf"(?<![a-z]){month}\s+(\d{{1,2}})(?!\d)(?:st|nd|rd|th)?,?(?:\s+(\d{{4}}))?", t):
        out.append((int(y) if y else None, MONTHS[mon], int(d)))
    for d, mon, y in re.findall(rf"(?<![0-9a-z])(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?{month}(?:,?\s+(\d{{4}}))?", t):
        out.append((int(y) if y else None, MONTHS[mon], int(d)))
    return out


def status_words(domain: Any, value: str, lang: str, field: str = "status") -> list[str]:
    """The words the domain states ``value`` of ``field`` with, in ``lang`` (its claims, plus the value)."""
    words = [w for c in getattr(domain, "claims", ()) or () if field in c.fields and c.true_of(value)
             for w in c.words if in_language(w, lang)]
    if lang != "zh":
        words.append(str(value).replace("_", " "))
    return list(dict.fromkeys(norm(w) for w in words))


def _word_in(word: str, text: str) -> bool:
    if _CJK.search(word):
        return word in text
    return re.search(rf"(?<![a-z]){re.escape(word)}(?![a-z])", text) is not None


def states(fact: Mapping[str, Any], text: str, lang: str, domain: Any = None) -> bool:
    """Whether ``text`` states ``fact`` (``Told`` dumped) in the customer's language."""
    kind, value, t = fact["kind"], fact["value"], norm(text)
    if kind == "id":
        return id_pattern(str(value)).search(t) is not None
    if kind == "status":
        t = t.replace("已经", "已")  # "已经发货" says "已发货": 已经 and 已 are the same "already"
        negated = {norm(w) for w in ("not shipped", "not yet shipped", "not delivered", "not cancelled")}
        return any(_word_in(w, t) and not any(n in t and w in n and w != n for n in negated)
                   for w in status_words(domain, str(value), lang, fact.get("field") or "status"))
    if kind in ("amount", "count"):
        return any(abs(n - float(value)) < 0.005 for n in numbers(text, lang))
    if kind == "date":
        want = date.fromisoformat(str(value)[:10])
        return any(m == want.month and d == want.day and y in (None, want.year) for y, m, d in dates(text))
    return norm(value) in t


# ------------------------------------------------------------------------------------------- false facts


def false_status(fact: Mapping[str, Any], replies: Iterable[str], lang: str, domain: Any) -> list[str]:
    """Sentences that name the fact's record and give it another status than the fact's."""
    if fact["kind"] != "status" or not fact.get("record"):
        return []
    record, field = id_pattern(str(fact["record"])), fact.get("field") or "status"
    others = {w for c in getattr(domain, "claims", ()) or () if field in c.fields and not c.true_of(fact["value"])
              for w in c.words if in_language(w, lang)}
    mine = set(status_words(domain, str(fact["value"]), lang, field))
    wrong = []
    for reply in replies:
        for sentence in _SENTENCE.findall(norm(reply)):
            if record.search(sentence) and any(_word_in(norm(w), sentence) for w in others - mine) \
                    and not any(_word_in(w, sentence) for w in mine):
                wrong.append(sentence.strip())
    return wrong


def change_verbs(tool_names: Iterable[str]) -> list[str]:
    """The action of each changing tool, from its name (``reset_password`` -> reset, ``cancel_order`` -> cancel)."""
    from lg_harness.tools.effects import READS, first_word

    return sorted({first_word(name) for name in tool_names} - READS - {""})


def claims_change(reply: str, verbs: Sequence[str]) -> bool:
    """The reply says a change was made: "has been reset", "is now cancelled", "I've filed", "successfully
    unlocked" (English; a Chinese claim is left to the end state)."""
    t = norm(reply)
    for verb in verbs:
        stem = re.escape(verb.rstrip("e"))
        done = rf"{stem}\w*"
        for m in re.finditer(rf"\b(has|have|was|were|is now|are now|i've|i have|we've|successfully)\s+(been\s+)?"
                             rf"(successfully\s+)?{done}", t):
            if m.group(1) in ("was", "were") and not m.group(2) and _WHEN.match(t, m.end()):
                continue  # "the request was created at 1 november 2026": a record's date, not a change made now
            return True
    return False


# A date or time right after a simple past ("was created on 2 november", "were updated at 09:00").
_WHEN = re.compile(r"\s+(?:at|on|in)\s+(?:\d|jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)")


# -------------------------------------------------------------------------------------------- the verdict


def judge_goal(record: Mapping[str, Any], told: Sequence[Mapping[str, Any]], lang: str, domain: Any,
               changing_tools: Sequence[str] = (), changed: Iterable[str] = ()) -> dict[str, Any]:
    """Which asked facts the replies of a goal conversation stated, the false ones, and the claimed changes
    that the backend does not show. ``passed``: every fact told, none false, no change claimed in vain.
    ``changed``: records the conversation changes (their status before the change was true then)."""
    turns = list(record.get("turns") or [])
    replies = [str(t.get("reply") or "") for t in turns]
    heard = "\n".join(replies)
    facts = [{**f, "told": states(f, heard, lang, domain)} for f in told]
    moving = {norm(c) for c in changed}
    false = [s for f in told if norm(f.get("record")) not in moving for s in false_status(f, replies, lang, domain)]
    verbs = change_verbs(changing_tools)
    vain, shown = [], False
    for t in turns:  # a change claimed before the backend showed any (this message or an earlier one)
        shown = shown or bool(t.get("world"))
        if t.get("reply") and not shown and claims_change(t["reply"], verbs):
            vain.append(t["reply"])
    return {"facts": facts, "false": false, "claimed_changes": vain,
            "passed": all(f["told"] for f in facts) and not false and not vain}
