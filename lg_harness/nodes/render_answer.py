"""The answer, written by the harness from the results when the model wrote no words for the customer.

Never a dump of fields: a sentence or two about what was asked. For each successful result of the message:

- a domain template first, if it gives one for the tool (the phrase ``answer_<tool>``, formatted with the
  result's fields, values in the customer's language);
- then the fields the question is about: the result's identifier, its name and status, and the fields
  whose names (or the words a question uses for them: "where" -> status, tracking, carrier) the question
  shares, at most ``MAX_FACTS``;
- a list as a short list: how many, then the first few by identifier, name and status;
- field names from the tool's schema (an argument of the same name's description) or the field's words, in
  the customer's language (``nodes.answer_words``; a domain rewords with ``label_<field>`` / ``value_<value>``
  phrases); booleans as yes/no, ISO dates as dates, amounts with their currency.

Text from a result is data: a sentence that holds an instruction is left out (``tools.cleaning``), and so
are scores and internal fields. ``fact_lines`` writes every customer-facing fact of a result, one per
line, for a model that is given the results in words (``nodes.presentation``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Any

from lg_harness.core.domain import Domain
from lg_harness.nodes.answer_words import CURRENCY_ZH, MONTHS, SENSES, ZH_FIELD_WORDS, ZH_VALUES, field_words
from lg_harness.nodes.customer_text import ENGLISH_LABEL
from lg_harness.tools.cleaning import holds_instruction
from lg_harness.tools.registry import ToolRegistry, ToolSpec

MAX_FACTS = 3  # fields stated beyond the identifier, name and status
MAX_ITEMS = 3  # list items named before "and n more"
ALL_ITEMS = 5  # a list this short is named in full: "3 of them, and 1 more" hides what a customer asked to see
MAX_TEXT = 220  # characters of a long text field kept (at a sentence end)

_INTERNAL = re.compile(r"(?:^|_)(?:score|rank|ranking|relevance|confidence|similarity|distance|embedding|internal|"
                       r"debug|raw|trace|hash|vector|weight)s?(?:$|_)", re.I)
_LANG_VARIANT = re.compile(r"_(zh|cn|en)$", re.I)
_ID_KEY = re.compile(r"(?:^|_)(?:id|no|number|code|ref)$", re.I)
_NAME_KEY = re.compile(r"(?:^|_)(?:name|title)$", re.I)
_STATUS_KEY = re.compile(r"(?:^|_)(?:status|state)$", re.I)
_COUNT_KEY = re.compile(r"(?:^|_)(?:count|number|num|qty|quantity)s?$", re.I)  # "total_count": how many, not money
_MONEY_KEY = re.compile(r"price|total|amount|fee|cost|balance|refund", re.I)
_ISO = re.compile(r"^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::\d{2})?)?")
_TEXT_KEY = re.compile(r"excerpt|summary|answer|body|content|text|description|message|next_step|note", re.I)
_CJK = re.compile(r"[\u3400-\u9fff]")
_SENTENCE = re.compile(r".+?(?:[.!?](?=\s|$)|[。！？]|$)", re.S)


@dataclass(frozen=True)
class Fact:
    key: str
    label: str
    value: str
    kind: str  # "id", "name", "status", "bool", "text", "plain"


class Voice:
    """How one reply writes labels and values: the customer's language, the domain's words, the tool's schema."""

    def __init__(self, lang: str, domain: Domain | None = None, spec: ToolSpec | None = None,
                 currency: str = "") -> None:
        self.lang, self.domain, self.currency, self.spec = lang, domain, currency, spec
        self.arg_docs = _arg_descriptions(spec)
        self.noun = self.label_words(tool_noun(spec.name)) if spec is not None and tool_noun(spec.name) else ""

    def label_words(self, words: Sequence[str]) -> str:
        if self.zh and all(ZH_FIELD_WORDS.get(w) for w in words):
            return "".join(ZH_FIELD_WORDS[w] for w in words)
        return " ".join(words)

    @property
    def zh(self) -> bool:
        return self.lang == "zh"

    def phrase(self, key: str) -> str | None:
        """The domain's own word for ``key`` in this language (English stands in for a language it lacks), never
        another language's: a shop that words "pending" only in Chinese keeps "pending" in an English reply."""
        texts = self.domain.phrases.get(key) if self.domain is not None else None
        return (texts.get(self.lang) or texts.get("en")) if texts else None

    def label(self, key: str) -> str:
        own = self.phrase(f"label_{key}")
        if own:
            return own
        words = field_words(key)
        if len(words) > 1 and unit_of(key):  # "high_c" is a high, in °C (the value says the unit)
            words = words[:-1]
        if len(words) > 1 and words[0].lower() == "is":  # a flag "is_dst" reads "it is not dst", not "it is not is dst"
            words = words[1:]
        if self.zh and [w.lower() for w in words] == ["total", "count"]:
            return "总数"
        if self.zh:
            zh = [ZH_FIELD_WORDS.get(w.lower()) for w in words]
            if all(z is not None for z in zh) and "".join(z or "" for z in zh):
                return "".join(z or "" for z in zh)
        described = self.arg_docs.get(key)
        if described and not self.zh:
            return described
        return " ".join(words)

    def value(self, key: str, value: Any) -> str:
        if isinstance(value, bool):
            return ("是" if value else "否") if self.zh else ("yes" if value else "no")
        if isinstance(value, int | float) and _MONEY_KEY.search(key) and not _COUNT_KEY.search(key) and self.currency:
            unit = CURRENCY_ZH.get(self.currency, self.currency) if self.zh else self.currency
            return f"{value:.2f} {unit}"
        if isinstance(value, int | float) and (unit := unit_of(key)):
            return f"{value:g}{unit}"
        text = str(value).strip()
        if m := _ISO.match(text):
            return self.date(m)
        own = self.phrase(f"value_{text.lower()}")
        if own:
            return own
        if self.zh and text.lower() in ZH_VALUES:
            return ZH_VALUES[text.lower()]
        return text.replace("_", " ") if re.fullmatch(r"[a-z]+(?:_[a-z]+)+", text) else text

    def date(self, m: re.Match[str]) -> str:
        year, month, day = int(m.group(1)), int(m.group(2)), int(m.group(3))
        if not 1 <= month <= 12:
            return m.group(0)
        clock = f" {m.group(4)}:{m.group(5)}" if m.group(4) and (m.group(4), m.group(5)) != ("00", "00") else ""
        if self.zh:
            return f"{year}年{month}月{day}日{clock}"
        return f"{day} {MONTHS[month - 1]} {year}" + (f", {clock.strip()}" if clock else "")


# A field name's last word that is a unit: the value carries it ("high_c": 19 -> 19 °C, "discount_pct": 10 -> 10%).
_UNITS = {"c": " °C", "celsius": " °C", "f": " °F", "fahrenheit": " °F", "pct": "%", "percent": "%", "km": " km",
          "kg": " kg", "mm": " mm", "cm": " cm", "kmh": " km/h", "mph": " mph", "ms": " ms", "mb": " MB", "gb": " GB"}


def unit_of(key: str) -> str:
    parts = [p.lower() for p in re.split(r"[_\W]+|(?<=[a-z])(?=[A-Z])", key) if p]
    return _UNITS.get(parts[-1], "") if len(parts) > 1 else ""


_TOOL_VERBS = frozenset({"get", "list", "search", "find", "show", "lookup", "look", "up", "fetch", "read", "query",
                         "check", "view", "my", "all", "browse", "retrieve", "describe", "details", "info"})


def tool_noun(name: str) -> list[str]:
    """What a reading tool returns, from its name: ``list_my_orders`` -> orders, ``search_kb`` -> kb."""
    return [w for w in field_words(name) if w.lower() not in _TOOL_VERBS]


_QUALIFIER = re.compile(r"\s+(?:to|in|for|that|which|from|with|as|you|we)\s+", re.I)


def _arg_descriptions(spec: ToolSpec | None) -> dict[str, str]:
    """Argument -> a short label from its schema description ("Order number, e.g. ..." -> "order number")."""
    if spec is None:
        return {}
    props = spec.json_schema()["function"]["parameters"].get("properties") or {}
    out = {}
    for name, prop in props.items():
        head = re.split(r"[,.;:(]|\be\.g\b", str(prop.get("description") or ""), maxsplit=1)[0].strip()
        head = re.sub(r"^(?:the|a|an)\s+", "", head, flags=re.I)
        if not head or len(head.split()) > 4 or re.search(r"\b(?:user|customer)\b", head, re.I):
            continue  # a sentence, not a name
        # A label names the thing, not what the call does with it or how to write it: "Order number to
        # cancel" -> "order number", "Coupon code in capitals" -> "coupon code".
        head = _QUALIFIER.split(head, maxsplit=1)[0].strip()
        choices = {str(v).lower() for v in prop.get("enum") or ()}
        if head and head.lower() not in choices and not re.match(r"one of\b", head, re.I):
            out[name] = head[:1].lower() + head[1:] if head[1:2].islower() else head
    return out


# ------------------------------------------------------------------------------------------ reading


def labels_in_chinese(text: str, domain: Domain | None) -> str:
    """``text`` with its English labels ("Orders：", "Next step是") in Chinese where the field's words have a
    Chinese label (the domain's, else the generic words); a label without one is left as it is."""
    voice = Voice("zh", domain)

    def swap(m: re.Match[str]) -> str:
        label = voice.label("_".join(m.group(1).lower().split()))
        return m.group(0) if re.search(r"[A-Za-z]", label) else label + m.group(2)

    return ENGLISH_LABEL.sub(swap, text)


_CODE_VALUE = re.compile(r"(?<![A-Za-z0-9_/.@-])[a-z]+(?:_[a-z]+)+(?![A-Za-z0-9_/@-]|\.[A-Za-z0-9])")


def _strings_in(value: Any) -> set[str]:
    if isinstance(value, Mapping):
        return {s for v in value.values() for s in _strings_in(v)}  # pyright: ignore[reportUnknownVariableType]
    if isinstance(value, list | tuple):
        return {s for v in value for s in _strings_in(v)}  # pyright: ignore[reportUnknownVariableType]
    return {value} if isinstance(value, str) else set()


def values_in_words(text: str, results: Sequence[Any], lang: str, domain: Domain | None) -> str:
    """``text`` with the results' values written as code writes them ("in_repair") in the words a reply uses
    ("in repair"; in Chinese the domain's or the generic word for the value)."""
    values = {v for r in results for v in _strings_in(r) if _CODE_VALUE.fullmatch(v)}
    if not values:
        return text
    voice = Voice(lang, domain)
    # a value's own words in the customer's language where the result has them ("status_zh" beside "status")
    own = {str(v): str(r[f"{k}_{lang}"]) for r in _records_in(results) for k, v in r.items()
           if isinstance(v, str) and r.get(f"{k}_{lang}")} if lang != "en" else {}
    return _CODE_VALUE.sub(lambda m: (own.get(m.group(0)) or voice.value("", m.group(0))) if m.group(0) in values
                           else m.group(0), text)


def _records_in(value: Any) -> list[Mapping[str, Any]]:
    if isinstance(value, Mapping):
        return [value, *(r for v in value.values() for r in _records_in(v))]  # pyright: ignore
    if isinstance(value, list | tuple):
        return [r for v in value for r in _records_in(v)]  # pyright: ignore[reportUnknownVariableType]
    return []


def localized(data: Mapping[str, Any], lang: str) -> dict[str, Any]:
    """Language variants (``name_zh``) folded into their base key for ``lang``; other variants dropped."""
    want = ("zh", "cn") if lang == "zh" else ("en",)
    out = {k: v for k, v in data.items() if not _LANG_VARIANT.search(k)}
    for key, value in data.items():
        if (m := _LANG_VARIANT.search(key)) and m.group(1).lower() in want and value not in ("", None):
            out[key[: m.start()]] = value
    return out


def _shown(key: str, value: Any) -> bool:
    return value not in (None, "", [], {}) and not _INTERNAL.search(key) and key != "currency"


# A hint in parentheses addressed to whoever reads a tool's text: '(use "git add <file>..." to ...)'.
_HINT = re.compile(r"\(\s*(?:use|run|type|try|see|press|click|enter)\b[^()]*\)", re.I)


def _lines_as_sentences(text: str) -> str:
    """A tool's multi-line text (a command's output) as sentences: each line one, a heading line ("Untracked
    files:") joined to the lines under it, the reader's hints left out."""
    units: list[str] = []
    for raw in str(text).splitlines():
        line = " ".join(_HINT.sub("", raw).split())
        if not line:
            continue
        if units and units[-1].endswith(":"):
            units[-1] += " " + line
        else:
            units.append(line)
    ended = [u if re.search(r"[.!?。！？]$", u) else u + ("。" if _CJK.search(u) else ".") for u in units]
    return " ".join(u[:1].upper() + u[1:] for u in ended)


def screened_text(text: str, limit: int = MAX_TEXT) -> str:
    """A text field as a customer may read it: sentences that instruct the reader left out, cut at a sentence."""
    kept, size = [], 0
    text = _lines_as_sentences(text) if "\n" in str(text).strip() else str(text)
    for m in _SENTENCE.finditer(" ".join(_HINT.sub("", text).split())):
        sentence = m.group(0).strip()
        if not sentence or holds_instruction(sentence):
            continue
        if kept and size + len(sentence) > limit:
            break
        kept.append(sentence)
        size += len(sentence)
    return " ".join(kept)[: limit + 40]


def kind_of(key: str, value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if _ID_KEY.search(key) and isinstance(value, str | int):
        return "id"
    if _NAME_KEY.search(key):
        return "name"
    if _STATUS_KEY.search(key):
        return "status"
    if isinstance(value, str) and (len(value) > 60 or _TEXT_KEY.search(key)):
        return "text"
    return "plain"


def facts_of(record: Mapping[str, Any], voice: Voice) -> list[Fact]:
    """The scalar facts of one record a customer may read, in the record's order."""
    out = []
    for key, value in localized(record, voice.lang).items():
        if isinstance(value, dict | list) or not _shown(key, value):
            continue
        kind = kind_of(key, value)
        shown = screened_text(value) if kind == "text" else voice.value(key, value)
        if shown and not holds_instruction(shown):
            out.append(Fact(key, voice.label(key), shown, kind))
    return out


def _question_words(question: str) -> set[str]:
    latin = {w.lower().rstrip("s") if len(w) > 3 else w.lower() for w in re.findall(r"[A-Za-z]+", question)}
    return latin | {w.lower() for w in re.findall(r"[A-Za-z]+", question)}


# Words that carry no topic: a field named "is_dst" is not what "What time is it?" asks about.
_FUNCTION_WORDS = frozenset({"is", "it", "in", "of", "the", "a", "an", "to", "at", "on", "by", "for", "my", "me",
                             "and", "or", "be", "do", "no", "can", "has", "have"})


def relevance(key: str, question: str) -> int:
    """How much the question is about field ``key``: its own words, or words a question uses for them."""
    asked = _question_words(question)
    score = 0
    for word in field_words(key):
        w = word.lower()
        if w in _FUNCTION_WORDS:
            continue
        if w in asked or (len(w) > 3 and w.rstrip("s") in asked):
            score += 2
        senses = SENSES.get(w, ())
        score += sum(1 for s in senses if (s in asked) or (_CJK.search(s) and s in question))
    return score


# ------------------------------------------------------------------------------------------ writing


def asks_of_items(items: Sequence[Any], question: str) -> bool:
    """Whether the question asks about a short field of a list's items ("which colour?" of a product's
    variants), not their prose."""
    first = items[0] if items and isinstance(items[0], Mapping) else None
    return first is not None and any(relevance(k, question) > 0 for k, v in first.items()
                                     if k not in OWN_KEYS and kind_of(k, v) != "text")


OWN_KEYS = frozenset({"id", "name", "title"})  # every item has one: asked by "what", they say nothing of the items


def _join(parts: Sequence[str], zh: bool) -> str:
    if zh:
        return "，".join(parts)
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def _clause(fact: Fact, zh: bool, last: bool = False) -> str:
    if fact.kind == "bool":
        return f"{fact.label}：{fact.value}" if zh else f"it is {'' if fact.value == 'yes' else 'not '}{fact.label}"
    if fact.kind == "text":  # its own closing stop stays only at the sentence's end
        value = fact.value if last else fact.value.rstrip("。.")
        return f"{fact.label}：{value}" if zh else f"{fact.label}: {value}"
    return f"{fact.label}是{fact.value}" if zh else f"the {fact.label} is {fact.value}"


def _subject_facts(facts: Sequence[Fact]) -> tuple[Fact | None, Fact | None]:
    """The record's own identifier (its first) and name."""
    return next((f for f in facts if f.kind == "id"), None), next((f for f in facts if f.kind == "name"), None)


def _subject(facts: Sequence[Fact], voice: Voice, bare: bool = False) -> str:
    """"Item AB-1 (Name)": the identifier's label without its "number"/"ID", the id, the name (``bare``:
    without the label, in a list that already says what it holds)."""
    ident, name = _subject_facts(facts)
    if ident is None:
        return name.value if name else ""
    noun = "" if bare else re.sub(r"\s*(?:ID|id|number|no|code|编号|号|代码)$", "", ident.label).strip()
    head = f"{noun} {ident.value}".strip() if not voice.zh else f"{noun}{' ' if noun else ''}{ident.value}"
    head = head[:1].upper() + head[1:] if not voice.zh else head
    return f"{head}（{name.value}）" if name and voice.zh else f"{head} ({name.value})" if name else head


def said_in(fact: Fact, question: str) -> int:
    """How much a text field's own words answer the question: "does it have noise cancelling? how long does
    the battery last?" is answered by a description that speaks of "active noise cancelling and a 40-hour
    battery", whatever the field is called."""
    if fact.kind != "text":
        return 0
    asked = {w for w in _question_words(question) if len(w) > 3 and w not in _FUNCTION_WORDS}
    own = {w.lower().rstrip("s") for w in re.findall(r"[A-Za-z]+", fact.value)}
    hits = len(asked & (own | {w + "s" for w in own}))
    cjk = sum(1 for run in re.findall(r"[\u3400-\u9fff]{2,}", question) for i in range(len(run) - 1)
              if run[i:i + 2] in fact.value)
    return 2 * (hits + cjk)


def _chosen(facts: Sequence[Fact], question: str, skip: AbstractSet[str], outcome: bool = False) -> list[Fact]:
    """The status, then the fields the question is about (best first); without either, the first few. A
    change's ``outcome`` says what it set besides its status (a renewed loan's new due date)."""
    own = set(_subject_facts(facts))
    rest = [f for f in facts if f not in own and f.key not in skip]
    status = sorted((f for f in rest if f.kind == "status"), key=lambda f: f.key.lower() not in ("status", "state"))[:1]
    scored = sorted(((relevance(f.key, question) + said_in(f, question), i, f) for i, f in enumerate(rest)
                     if f not in status), key=lambda x: (-x[0], x[1]))
    asked = [f for s, _, f in scored if s > 0][:MAX_FACTS]
    if (not status or outcome) and not asked:
        asked = [f for f in rest if f.kind != "text" and f not in status][:MAX_FACTS] or ([] if status else rest[:1])
    return status + asked


def record_sentence(record: Mapping[str, Any], voice: Voice, question: str,
                    skip: AbstractSet[str] = frozenset(), outcome: bool = False) -> str:
    facts = facts_of(record, voice)
    subject = _subject(facts, voice)
    chosen = _chosen(facts, question, skip, outcome)
    if not chosen:
        return (subject + ("。" if voice.zh else ".")) if subject else ""
    chosen = [f for f in chosen if f.kind != "text"] + [f for f in chosen if f.kind == "text"]  # prose last
    body = _join([_clause(f, voice.zh, i == len(chosen) - 1) for i, f in enumerate(chosen)], voice.zh)
    stop = "" if body[-1:] in "。.!?！？" else ("。" if voice.zh else ".")
    if not subject:
        body = body[:1].upper() + body[1:] if not voice.zh else body
        return body + stop
    return f"{subject}：{body}{stop}" if voice.zh else f"{subject}: {body}{stop}"


def _aside(fact: Fact, zh: bool) -> str:
    """A fact in a list item's parentheses: a status as itself, a flag by its name, anything else labelled."""
    if fact.kind in ("status", "text"):
        return fact.value
    if fact.kind == "bool":
        return f"{fact.label}：{fact.value}" if zh else (fact.label if fact.value == "yes" else f"not {fact.label}")
    return f"{fact.label}{'：' if zh else ' '}{fact.value}"


def _item(record: Any, voice: Voice, question: str) -> str:
    """One list item: "ID (name, status)" - its identifier, name and one more fact (status, else asked)."""
    if not isinstance(record, Mapping):
        return screened_text(str(record), 80)
    facts = facts_of(record, voice)
    ident, name = _subject_facts(facts)
    own = {ident, name}
    brief = [f for f in facts if f not in own and not (f.kind == "text" and len(f.value) > _BRIEF)]
    status = [f for f in brief if f.kind == "status"]
    asked = sorted((f for f in brief if relevance(f.key, question) > 0), key=lambda f: -relevance(f.key, question))
    short = [f for f in brief if f.kind == "text" and name is None]
    asides = [name.value] if name is not None and ident is not None else []
    asides += [_aside(f, voice.zh) for f in (status + asked + short)[:1]]
    subject = ident or name
    head = subject.value if subject else next((f.value for f in facts if f.kind != "text"), "")
    if subject is None and head:  # no id, no name (a forecast's day): the item is its facts
        rest = [f for f in brief if f.value != head][:MAX_FACTS]
        asides = [f.value if f.kind in ("status", "text") or i == 0 else _aside(f, voice.zh) for i, f in enumerate(rest)]
    if not asides or not head:
        return head
    return f"{head}（{'，'.join(asides)}）" if voice.zh else f"{head} ({', '.join(asides)})"


_GENERIC_LISTS = frozenset({"results", "result", "items", "data", "records", "list", "entries", "matches", "rows", "hits"})


_BRIEF = 90  # a text field up to this long fits in a list item's parentheses


def _list_label(key: str, noun: str, voice: Voice) -> str:
    """What a list holds: its key's words, with the tool's noun when the key does not say it ("available");
    the noun only when it names things (a plural, or any Chinese noun)."""
    label = voice.label(key)
    plural = noun.endswith("s") and not noun.endswith(("us", "ss"))  # "orders", not "order status"
    if not (plural or (voice.zh and _CJK.search(noun))):
        return label
    if key.lower() in _GENERIC_LISTS:
        return noun
    if noun.rstrip("s").lower() in key.lower() or (voice.zh and noun in label):
        return label
    return f"{label}{noun}" if voice.zh else f"{label} {noun}"


def nothing_found(voice: Voice) -> str:
    return voice.phrase("found_nothing") or ("没有找到相关结果。" if voice.zh else "I found nothing matching that.")


def list_sentence(key: str, items: Sequence[Any], voice: Voice, question: str, noun: str = "") -> str:
    if not items:
        return nothing_found(voice)
    shown = items if len(items) <= ALL_ITEMS else items[:MAX_ITEMS]
    named = [n for n in (_item(i, voice, question) for i in shown) if n]
    more = len(items) - len(named)
    label = _list_label(key, noun, voice)
    if voice.zh:
        tail = f"，另有 {more} 项" if more > 0 else ""
        return f"共有 {len(items)} 项{label}：" + "、".join(named) + tail + "。"
    tail = f", and {more} more" if more > 0 else ""
    if not label.endswith("s"):  # a list named by a singular ("forecast"): no count to agree with it
        return f"The {label}: " + "; ".join(named) + tail + "."
    return f"I found {len(items)} {label}: " + "; ".join(named) + tail + "."


def _lead_text(items: Sequence[Any], voice: Voice) -> str:
    """The first item's long text (an article's excerpt), when the list answers a how-to question."""
    first = items[0] if items and isinstance(items[0], Mapping) else None
    if first is None:
        return ""
    texts = [f for f in facts_of(first, voice) if f.kind == "text" and len(f.value) > _BRIEF]
    return texts[0].value if texts else ""


def result_sentences(result: Any, voice: Voice, question: str) -> list[str]:
    """A sentence or two for one result."""
    noun = voice.noun
    if isinstance(result, list):
        return [list_sentence("results", result, voice, question, noun)]
    if not isinstance(result, Mapping):
        text = screened_text(str(result))
        return [text] if text else []
    data = localized(result, voice.lang)
    lists = {k: v for k, v in data.items() if isinstance(v, list) and not _INTERNAL.search(k)}
    scalars = {k: v for k, v in data.items() if not isinstance(v, list | dict)}
    facts = facts_of(scalars, voice)
    main = bool([f for f in facts if f.kind in ("id", "status")])
    outcome = voice.spec is not None and voice.spec.changes_state
    out = [record_sentence(scalars, voice, question, outcome=outcome)] if main or not lists else []
    # a list by its items' fields only when the record itself has no field the question asks about: "which
    # colour?" shows a product's variants, "有没有…多少钱" is answered by its price and stock alone
    about_record = any(relevance(k, question) > 0 for k in scalars if k not in OWN_KEYS)
    shown = {k: v for k, v in lists.items()
             if not main or relevance(k, question) > 0 or (not about_record and asks_of_items(v, question))}
    filled = {k: v for k, v in shown.items() if v}
    for key, items in (filled or dict(list(shown.items())[:1])).items():  # an empty list only when all are
        out.append(list_sentence(key, items, voice, question, noun))
        if not main and (lead := _lead_text(items, voice)) and len(filled) == 1:
            out.append(lead)
    for key, value in data.items():  # one level down: "refund": {"amount": ...}, "open_return": {...}
        if isinstance(value, dict) and value and relevance(key, question) > 0:
            out.append(record_sentence(value, voice, question))
    return [s for s in out if s]


def _template(spec_name: str, result: Any, voice: Voice) -> str | None:
    template = voice.phrase(f"answer_{spec_name}")
    if not template or not isinstance(result, Mapping):
        return None
    values = {k: voice.value(k, v) for k, v in localized(result, voice.lang).items() if not isinstance(v, list | dict)}
    try:
        return template.format_map(values)
    except (KeyError, IndexError, ValueError):
        return None  # a field the template names is missing: the generic sentence instead


def render_answer(records: Sequence[Mapping[str, Any]], registry: ToolRegistry, domain: Domain | None,
                  question: str, lang: str, results: Sequence[Any] | None = None) -> str | None:
    """The reply for a message's successful calls (tool-log records and their parsed ``results``)."""
    from lg_harness.nodes.fact_check import results_of

    ok = [r for r in records if r.get("status") == "ok"]
    values = list(results) if results is not None else results_of(ok)
    sentences: list[str] = []
    for record, result in zip(ok, values, strict=False):
        spec = registry.get(str(record.get("name") or ""))
        currency = str(result.get("currency") or "") if isinstance(result, Mapping) else ""
        voice = Voice(lang, domain, spec, currency or (domain.currency if domain is not None else ""))
        own = _template(str(record.get("name") or ""), result, voice)
        said = [own] if own else result_sentences(result, voice, question)
        sentences += [s for s in said if s not in sentences]
    return ("" if lang == "zh" else " ").join(sentences) or None


def fact_lines(result: Any, voice: Voice) -> list[str]:
    """Every customer-facing fact of one result, ``label: value`` per line, lists as short lines (for a model
    that is given the results in words; never for the customer as it is)."""
    if isinstance(result, list):
        return [f"- {_item(i, voice, '')}" for i in result[:8]] or [list_sentence("results", [], voice, "")]
    if not isinstance(result, Mapping):
        return [screened_text(str(result))]
    sep = "：" if voice.zh else ": "
    data = localized(result, voice.lang)
    lines = [f"{f.label}{sep}{f.value}" for f in facts_of(data, voice)]
    for key, value in data.items():
        if isinstance(value, list) and value and not _INTERNAL.search(key):
            lines.append(f"{voice.label(key)}{sep}" + "; ".join(_item(i, voice, "") for i in value[:8]))
        elif isinstance(value, dict) and value:
            lines += [f"{voice.label(key)} - {line}" for line in fact_lines(value, voice)]
    return lines
