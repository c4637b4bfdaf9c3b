"""What the domain-general simulated model says in words: answers from tool results, questions for
missing arguments, recall of early turns, and the auxiliary JSON/summary requests frameworks send.

Results are read as a model reads JSON: by the shape of keys and values (ids, status, names, amounts,
dates, lists), never by a known result type; nothing is stated that the results do not contain.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage

from simlm.args import (
    CJK,
    EXAMPLE,
    FIRST,
    IDENT,
    MONEY,
    STOP,
    ZH_VALUE,
    ZH_WORD,
    Call,
    bare_pattern,
    clean,
    example_of,
    fill_args,
    identifiers,
    json_spans,
    numbers,
    prop_schema,
    result_data,
    stem,
    text_of,
    words,
)

PHRASES = {
    "help": {"en": "How can I help you today?", "zh": "请问有什么可以帮您？"},
    "ack": {"en": "You're welcome! Is there anything else I can do for you?", "zh": "不客气！还有什么可以帮您的吗？"},
    "cannot": {"en": "Sorry, I can't help with that here. Could you tell me a bit more about what you need?",
               "zh": "抱歉，这个我暂时帮不上忙。能再具体说说您需要什么吗？"},
    "nothing": {"en": "I found nothing matching that.", "zh": "没有找到相关结果。"},
    "done": {"en": "Done.", "zh": "已完成。"},
    "failed": {"en": "Sorry, that didn't work: {msg}", "zh": "抱歉，操作没有成功：{msg}"},
}
_FACT_KEY = re.compile(r"(?:^|_)(?:id|no|number|code|ref)$|status|state|name|title|amount|total|price|cost|fee|"
                       r"balance|refund|date|_at$|due|eta|deadline|deliver|expected|estimated|queue|position|message|"
                       r"next_step|count", re.I)
_MONEY_KEY = re.compile(r"amount|total|price|cost|fee|balance|refund", re.I)
_ERROR_WORDS = re.compile(r"(?<![A-Za-z])errors?(?![A-Za-z])|"
                          r"\b(?:failed|failure|invalid|not found|denied|forbidden|unauthori[sz]ed|"
                          r"not allowed|cannot|can't|unable|too many requests|rate.?limit\w*|unavailable|timed out|"
                          r"try again later)\b|\b[45]\d\d\s+[A-Z][a-z]+|错误|失败|无效|不存在|拒绝|无法|超时|稍后再试", re.I)
_VARIANT = re.compile(r"_(zh|cn|en)$", re.I)
MAX_ITEMS = 8


def language(humans: list[str]) -> str:
    """Chinese when the latest user message has CJK; a message with no words at all (an id) defers to the
    one before it."""
    for text in reversed(humans):
        if CJK.search(text):
            return "zh"
        if re.search(r"[A-Za-z]{2,}", IDENT.sub(" ", clean(text))):
            return "en"
    return "en"


def say(key: str, lang: str, **kw: Any) -> str:
    return PHRASES[key][lang].format(**kw)


# ------------------------------------------------------------------------------------------ results


def is_error(content: str) -> bool:
    """Whether a tool result reports a failure, judged from its content as a model would."""
    data = result_data(content)
    if isinstance(data, dict):
        flagged = data.get("ok") is False or data.get("success") is False or str(data.get("status")) == "error"
        return "error" in data or "errors" in data or flagged
    return isinstance(data, str) and bool(_ERROR_WORDS.search(data))


def error_message(content: str) -> str:
    data = result_data(content)
    if isinstance(data, dict):
        err = data.get("error") or data.get("errors") or data.get("message") or data
        if isinstance(err, dict):
            err = err.get("message") or err.get("detail") or err.get("description") or err.get("type") or err
        return str(err if isinstance(err, str) else json.dumps(err, ensure_ascii=False))[:300]
    return re.sub(r"<[^>]+>", " ", str(data)).strip()[:300]


_SPELLED = {"no": "number", "qty": "quantity", "desc": "description", "pct": "percent"}


def label(key: str, zh: bool) -> str:
    parts = [p for p in re.split(r"[_\W]+", key) if p]
    parts = parts if zh else [_SPELLED.get(p.lower(), p) for p in parts]
    if zh and parts and all(p.lower() in ZH_WORD for p in parts):
        return "".join(ZH_WORD[p.lower()] for p in parts)
    text = " ".join(parts)
    return text[:1].upper() + text[1:]


def localized(data: dict[str, Any], zh: bool) -> dict[str, Any]:
    """Language variants (``name_zh``, ``title_en``) folded into their base key for the reply's language."""
    want = ("zh", "cn") if zh else ("en",)
    out = {k: v for k, v in data.items() if not _VARIANT.search(k)}
    for key, value in data.items():
        if (m := _VARIANT.search(key)) and m.group(1).lower() in want and value not in ("", None):
            out[key[: m.start()]] = value
    return out


def _scalar(value: Any) -> bool:
    return isinstance(value, str | int | float | bool)


# Keys as results write them (``item_id``) or as people label them ("Item ID", "订单编号").
_HEAD_ID = re.compile(r"(?:^|[_\s])(?:id|no|number|code|ref|reference|tag)$|编号$|单号$|号码$|代码$", re.I)
_NAME_KEY = re.compile(r"(?:^|[_\s])(?:name|title)$|名称$|标题$|型号$", re.I)
_STATUS_KEY = re.compile(r"(?:^|[_\s])(?:status|state)$|状态$", re.I)
_NOISE_KEY = re.compile(r"(?:^|_)(?:score|rank|relevance|confidence|similarity|distance|currency)$", re.I)
# What a question's words ask about, as a model associates them (stems both sides): "where" -> the status,
# the tracking number and the carrier of a parcel; "how much" -> prices and totals.
_ASKS = {"wher": ("status", "track", "carrier", "locat", "deliver"), "status": ("status", "state", "track"),
         "track": ("track", "carrier", "status"), "pric": ("pric", "total", "amount", "cost"),
         "cost": ("pric", "total", "cost", "amount"), "pay": ("total", "amount", "pric", "paid"),
         "much": ("pric", "total", "amount"), "when": ("date", "at", "due", "eta", "expir", "deliver"),
         "arriv": ("deliver", "eta", "expect", "status"), "stock": ("stock", "availab"),
         "availab": ("stock", "availab"), "warranty": ("warranty",), "due": ("due", "date"),
         "expir": ("expir", "valid"), "refund": ("refund", "amount"), "queue": ("queue", "position"),
         "wait": ("queue", "position", "status"), "how": ("excerpt", "summary", "step", "answer", "bod"),
         "about": ("descript", "summar"), "describ": ("descript",), "what": ("descript", "summar"),
         "buy": ("item",), "bought": ("item",), "contain": ("item",), "each": ("item", "pric")}
MAX_ASKED = 2  # facts stated beyond the identifier, name and status
MAX_LISTED = 5  # list items named before "and n more"
# What a chat model tells whatever was asked: money that moves (a refund, a fee) and the next step.
_ALWAYS = re.compile(r"refund|next_step", re.I)
# Identifiers of people (an owner, an author) say whose a record is, not which one it is.
_PERSON_ID = re.compile(r"owner|user|employee|customer|author|agent|assignee|requester|caller", re.I)
# Questions that ask about a thing as a whole ("tell me about X"): the answer covers its lists too.
_BROAD = frozenset({"about", "describ", "tell", "detail"})


def _asked(question: str) -> set[str]:
    raw = {w.lower() for w in re.findall(r"[A-Za-z]+", question)}
    said = set(words(question)) | {stem(w) for w in raw}
    return said | {a for w in said for a in _ASKS.get(w, ())}


def _about(key: str, asked: set[str]) -> bool:
    parts = {stem(p.lower()) for p in re.split(r"[_\W]+", key) if p}
    return bool(parts & asked) or any(p.startswith(a) for p in parts for a in asked if len(a) > 3)


def _shown_value(key: str, value: Any, zh: bool, currency: str) -> str:
    if isinstance(value, bool):
        return ("是" if value else "否") if zh else ("yes" if value else "no")
    if isinstance(value, int | float) and currency and _MONEY_KEY.search(key):
        return f"{value:.2f} {currency}"
    shown = value.rstrip(".。") if isinstance(value, str) else str(value)
    if zh and shown.lower() in ZH_VALUE:
        return f"{ZH_VALUE[shown.lower()]}（{shown}）"
    return shown.replace("_", " ") if re.fullmatch(r"[a-z]+(?:_[a-z]+)+", shown) else shown  # "in progress"


def _noun(key: str, zh: bool) -> str:
    return re.sub(r"\s*(?:Id|ID|id|No|no|Number|number|Code|code|编号|单号|号码|号|代码)$", "", label(key, zh)).strip()


def _head(data: dict[str, Any], zh: bool) -> tuple[str, list[str]]:
    """"item AB-1 (Name), case CD-2" and the keys it used: the identifiers (two at most), with the name."""
    idents = [k for k, v in data.items() if _HEAD_ID.search(k) and isinstance(v, str | int) and v != ""
              and not re.search(r"sku|tracking", k, re.I)]
    idents = idents[:1] + [k for k in idents[1:2] if not _PERSON_ID.search(k)]
    name = next((k for k, v in data.items() if _NAME_KEY.search(k) and isinstance(v, str) and v), None)
    used = [*idents, *([name] if name else [])]
    if not idents:
        return (str(data[name]) if name else ""), used
    head = f"{_noun(idents[0], zh)} {data[idents[0]]}".strip()
    if name:
        head += f"（{data[name]}）" if zh else f" ({data[name]})"
    for other in idents[1:]:
        head += f"，{_noun(other, zh)} {data[other]}" if zh else f", {_noun(other, zh).lower()} {data[other]}"
    return head, used


def _sentence(content: dict[str, Any], zh: bool, question: str) -> str:
    """A sentence about one record: what it is, its status, and the facts the question asks about."""
    data = localized(content, zh)
    given = data.get("currency")
    currency = given if isinstance(given, str) else ""
    head, used = _head(data, zh)
    rest = {k: v for k, v in data.items() if k not in used and _scalar(v) and v != "" and not _NOISE_KEY.search(k)}
    # the record's own status first ("status"), then a qualified one ("previous_status")
    status = next((k for k in sorted(rest, key=lambda k: k.lower() not in ("status", "state")) if _STATUS_KEY.search(k)),
                  None)
    asked = _asked(question)
    chosen = [k for k in rest if k != status and _about(k, asked)][:MAX_ASKED]
    if status is None:  # what a record without a state is about: its price, else its first facts
        money = [k for k in rest if _MONEY_KEY.search(k) and isinstance(rest[k], int | float)][:1]
        chosen = list(dict.fromkeys(money + chosen)) or [k for k in rest if _FACT_KEY.search(k)][:MAX_ASKED] or list(rest)[:1]
    chosen += [k for k in rest if _ALWAYS.search(k) and k not in chosen and k != status][:2]
    parts = [(k, _shown_value(k, rest[k], zh, currency)) for k in ([status] if status else []) + chosen]
    if zh:
        body = "，".join(f"{label(k, True)}{'：' if isinstance(rest[k], bool) else '是'}{v}" for k, v in parts)
        return f"{head}：{body}。" if head and body else (head or body) + "。"
    body = ", ".join((f"it is {'' if rest[k] else 'not '}{label(k, False).lower()}" if isinstance(rest[k], bool)
                      else f"the {label(k, False).lower()} is {v}") for k, v in parts)
    if head and body:
        return f"{head[:1].upper()}{head[1:]}: {body}."
    return (head or body[:1].upper() + body[1:]) + "."


def _item(item: Any, zh: bool) -> str:
    """One list row: its identifier and name, and its status, else its price."""
    if not isinstance(item, dict):
        return str(item)[:80]
    data = localized(item, zh)
    ident = next((v for k, v in data.items() if _HEAD_ID.search(k) and isinstance(v, str | int) and v != ""
                  and not re.search(r"sku|tracking", k, re.I)), None)
    name = next((v for k, v in data.items() if _NAME_KEY.search(k) and isinstance(v, str) and v), None)
    status = next((v for k, v in data.items() if _STATUS_KEY.search(k) and _scalar(v)), None)
    price = next((v for k, v in data.items() if _MONEY_KEY.search(k) and isinstance(v, int | float)), None)
    head = str(ident if ident is not None else name or "")
    if not head:  # a row without an identifier (a variant): its first few plain values
        head = " ".join(str(v)[:40] for k, v in data.items() if _scalar(v) and not isinstance(v, bool)
                        and not _NOISE_KEY.search(k) and not _MONEY_KEY.search(k))
        head = " ".join(head.split()[:6])
    asides = [str(x) for x in ([name] if ident is not None and name else [])
              + [_shown_value("status", status, zh, "") if status is not None else price] if x is not None]
    if asides:
        return f"{head}（{'，'.join(asides)}）" if zh else f"{head} ({', '.join(asides)})"
    return head


def _listing(key: str, rows: list[Any], zh: bool) -> str:
    if not rows:
        return say("nothing", "zh" if zh else "en")
    named = [_item(r, zh) for r in rows[:MAX_LISTED]]
    more = len(rows) - len(named)
    if zh:
        return f"共有 {len(rows)} 项{label(key, True)}：" + "、".join(named) + (f"，另有 {more} 项" if more > 0 else "") + "。"
    return (f"There are {len(rows)} {label(key, False).lower()}: " + "; ".join(named)
            + (f"; and {more} more" if more > 0 else "") + ".")


def render(content: str, zh: bool, question: str = "") -> str:
    """One tool result as a chat model answers it: a sentence or two about what was asked (never every
    field), lists as a short list, errors explained plainly."""
    lang = "zh" if zh else "en"
    if is_error(content):
        return say("failed", lang, msg=error_message(content))
    data = result_data(content)
    if isinstance(data, list):
        return _listing("results", data, zh)
    if not isinstance(data, dict):
        return re.sub(r"<[^>]+>", " ", str(data)).strip()[:300] or say("done", lang)
    lists = {k: v for k, v in data.items() if isinstance(v, list)}
    own = {k: v for k, v in data.items() if not isinstance(v, list | dict)}
    headed = any(_HEAD_ID.search(k) or _STATUS_KEY.search(k) for k in own)
    asked = _asked(question)
    lines = [_sentence(own, zh, question)] if headed or not lists else []
    broad = bool(asked & _BROAD)
    filled = {k: v for k, v in lists.items() if v and (not headed or broad or _about(k, asked))}
    for key, rows in (filled or ({} if headed else dict(list(lists.items())[:1]))).items():
        lines.append(_listing(key, rows, zh))
        if not headed and (told := _told(rows, asked, zh)):
            lines.append(told)
    return " ".join(x for x in lines if x) or say("done", lang)


def _told(rows: list[Any], asked: set[str], zh: bool) -> str:
    """What the first item says, when the question asks how (an article's excerpt): two sentences."""
    first = localized(rows[0], zh) if rows and isinstance(rows[0], dict) else {}
    texts = [v for k, v in first.items() if isinstance(v, str) and len(v) >= 60 and _about(k, asked)]
    if not texts:
        return ""
    return " ".join(re.split(r"(?<=[.!?。！？])\s+", texts[0].strip())[:2])


def compose_answer(contents: Sequence[str], lang: str, question: str = "") -> str:
    return " ".join(render(c, lang == "zh", question) for c in contents)


# ------------------------------------------------------------------------------------------ questions


def need(name: str, prop: dict[str, Any], lang: str) -> str:
    """What to ask for, in the user's language, from the property's description (else its name)."""
    desc = prop_schema(prop).get("description") or ""
    example = example_of(desc)
    head = re.split(r"[.,;:(（。，；]|\be\.g\b", EXAMPLE.sub("", desc), maxsplit=1)[0].strip()
    head = re.sub(r"^(?:the|a|an)\s+", "", re.sub(r"\b(?:the )?user'?s\b", "your", head, flags=re.I), flags=re.I)
    head = re.split(r"\s+(?:exactly|as|for|that|which|when|if|from|in|on|of the user)\b", head, maxsplit=1)[0]
    what = " ".join(head.split()[:8]) or name.replace("_", " ")
    what = what[:1].lower() + what[1:] if what[1:2].islower() else what  # "Keywords" -> "keywords", not "ID"
    if lang == "zh":
        short = re.split(r"\s+(?:to|for|of|with)\b", what)[0]  # the thing itself: "order to return" -> "order"
        parts = [w for w in re.findall(r"[A-Za-z]+", short.lower()) if w not in STOP]
        if parts and all(p in ZH_WORD or stem(p) in ZH_WORD for p in parts) and not CJK.search(short):
            what = "".join(ZH_WORD.get(p) or ZH_WORD[stem(p)] for p in parts)
        return (what if CJK.search(what) else f" {what} ") + (f"（例如 {example}）" if example else "")
    return f"the {what}" + (f" (e.g. {example})" if example else "")


def ask_for(missing: list[tuple[str, dict[str, Any]]], lang: str) -> str:
    needs = [need(name, prop, lang) for name, prop in missing]
    if lang == "zh":
        return ("请告诉我" + "和".join(needs) + "。").replace(" 。", "。").replace("  ", " ")
    return "Could you tell me " + " and ".join(needs) + "?"


# ------------------------------------------------------------------------------------------ follow-ups

_BACKREF = re.compile(r"\b(?:again|earlier|before|that|it|its|this|those|them|previous|mentioned)\b|刚才|之前|那个|这个|它|上面|来着",
                      re.I)
_PAIR = re.compile(r"(\w+)=([^,;()\n=]+?)(?=\s*[,;()\n]|\s+\w+=|\s*$)")


def _matching_facts(data: Any, asked: set[str], zh: bool) -> list[str]:
    """Facts of a result whose key names what is asked ("price" -> price: 69.49), with the ids and names
    that say what they belong to."""
    if isinstance(data, list):
        return next((f for item in data if (f := _matching_facts(item, asked, zh))), [])
    if not isinstance(data, dict):
        return []
    data = localized(data, zh)
    hits = [k for k, v in data.items() if _scalar(v) and set(words(k.replace("_", " "))) & asked]
    if not hits:
        return next((f for v in data.values() if (f := _matching_facts(v, asked, zh))), [])
    context = [k for k, v in data.items() if _scalar(v) and re.search(r"(?:^|_)(?:id|name|title)$", k) and k not in hits]
    currency = data.get("currency") if isinstance(data.get("currency"), str) else ""
    return [f"{label(k, zh)}{'：' if zh else ': '}{data[k]}{' ' + currency if currency and _MONEY_KEY.search(k) else ''}"
            for k in hits + context[:2]]


def context_answer(messages: Sequence[BaseMessage], question: str, lang: str) -> str | None:
    """A follow-up about something already looked up ("what was the price again?") answered from the
    earlier result, as a model reads its context, instead of calling again."""
    if not (_BACKREF.search(question) and _QUESTION.search(question)) or identifiers(question):
        return None
    asked = set(words(question, negations=True))
    results = [text_of(m) for m in messages if m.type == "tool"]
    # what earlier results said, as the instructions restate them ("... ok: name=Smart Speaker, price=69.49")
    stated = [{k: v.strip() for k, v in _PAIR.findall(line)} for m in messages if m.type == "system"
              for line in text_of(m).splitlines() if _PAIR.search(line)]
    zh = lang == "zh"
    found = [result_data(c) for c in results if not is_error(c)]
    for data in (found if FIRST.search(question) else found[::-1]) + stated[::-1]:
        if facts := _matching_facts(data, asked, zh):
            return ("；" if zh else "; ").join(facts) + ("。" if zh else ".")
    return None


# ------------------------------------------------------------------------------------------ recall

_RECALL = re.compile(
    r"\b(?:at|from) the (?:very )?(?:start|beginning)\b|\bwhat did i (?:say|tell|ask|write|give|mention)|"
    r"\b(?:first|originally|earlier|initially)\b.{0,40}\b(?:gave|give|given|told|tell|said|say|mention\w*|"
    r"ask\w*|provid\w*|sent)\b|\b(?:gave|give|given|told|said|mention\w*|provid\w*|sent)\b.{0,40}"
    r"\b(?:first|earlier|initially|originally)\b|一开始|最开始|刚开始|开始时|最早|最初|我(?:之前|刚才)(?:说|提|给)", re.I)
_QUESTION = re.compile(r"[?？]|^\s*(?:what|which|who|remind|do you remember)\b|什么|哪|多少|吗", re.I)
_EARLY = re.compile(r"\b(?:first|start|earliest|initial|original)\b|一开始|最初|最早", re.I)


def is_recall(text: str) -> bool:
    return bool(_RECALL.search(text) and _QUESTION.search(text))


def _kind_patterns(question: str, tools: Sequence[dict[str, Any]]) -> list[re.Pattern[str]]:
    """Patterns of the parameters the question names ("which ticket number..."), best word overlap first."""
    asked = set(words(question)) - _RECALL_WORDS
    scored = []
    for tool in tools:
        for name, raw in ((tool["function"].get("parameters") or {}).get("properties") or {}).items():
            prop = prop_schema(raw)
            overlap = len(asked & set(words(f"{name.replace('_', ' ')} {prop.get('description', '')}")))
            if overlap and prop.get("pattern") and (bare := bare_pattern(prop["pattern"])) is not None:
                scored.append((overlap, bare))
    top = max((o for o, _ in scored), default=0)
    return [b for o, b in scored if o == top]


_RECALL_WORDS = set(words("first start beginning earlier initially originally give gave tell told say said "
                          "mention mentioned provide provided remember 一开始 最开始"))


def _stated_first(messages: Sequence[BaseMessage], nouns: set[str]) -> list[str]:
    """Ids the instructions state as the first/initial one of the kind asked about ("first ticket: X")."""
    for m in messages:
        for line in text_of(m).splitlines() if isinstance(m, SystemMessage) else []:
            key, _, value = line.partition(":")
            if not value or not _EARLY.search(re.sub(r"[_\W]+", " ", key)):
                continue
            if (not nouns or nouns & set(words(key.replace("_", " ")))) and (ids := identifiers(EXAMPLE.sub(" ", value))):
                return ids
    return []


def _earliest(earlier: list[str], kinds: list[re.Pattern[str]], nouns: set[str]) -> tuple[list[str], str]:
    """The ids of the earliest user message that has the kind asked for: by a parameter's pattern, else by
    the question's nouns in the same message, else any id."""
    tests = ([lambda t: [m.group(0) for k in kinds for m in k.finditer(t)]] if kinds else []) + [
        lambda t: identifiers(t) if nouns & set(words(t)) else [], identifiers]
    for test in tests:
        for text in earlier:
            if ids := list(dict.fromkeys(test(clean(text)))):
                return ids, clean(text).strip()[:120]
    return [], ""


def recall_answer(messages: Sequence[BaseMessage], lang: str, tools: Sequence[dict[str, Any]] = (),
                  call: Call | None = None) -> str:
    """Answer "what did I say at the start": what the instructions state came first, else the earliest
    user messages still visible and not forgotten (``call.forgets``: likelier the further back), preferring
    the kind of id the question names."""
    humans = [text_of(m) for i, m in enumerate(messages) if isinstance(m, HumanMessage)
              and (call is None or i == len(messages) - 1 or not call.forgets(i))]
    question, earlier = (humans[-1] if humans else ""), humans[:-1]
    nouns = set(words(question)) - _RECALL_WORDS
    zh = lang == "zh"
    if ids := _stated_first(messages, nouns):
        return f"您一开始提供的是 {'、'.join(ids)}。" if zh else f"At the start you gave me {', '.join(ids)}."
    ids, quote = _earliest(earlier, _kind_patterns(question, tools), nouns)
    if ids:
        return (f"您一开始提供的是 {'、'.join(ids)}（您当时说：“{quote}”）。" if zh
                else f"At the start you gave me {', '.join(ids)} (you said: \"{quote}\").")
    if earlier:
        quote = clean(earlier[0]).strip()[:150]
        return f"您一开始说的是：“{quote}”。" if zh else f"At the start you said: \"{quote}\"."
    return ("抱歉，我在现有的对话里看不到更早的内容。" if zh
            else "Sorry, I can't see anything earlier in our conversation.")


# ------------------------------------------------------------------------------------------ auxiliary

_CLASSIFY = re.compile(r"\bclassif|\bcategori[sz]|\blabel|分类|归类", re.I)
_LABELS = re.compile(r"(?:one (?:[\w-]+ ){0,2}of(?: the following)?|among|labels?|categories|classes|options|"
                     r"intents?)\s*[:：]?\s*([\w-]+(?:\s*(?:,|\||/|、|\bor\b)\s*[\w-]+)+)", re.I)
_JSON_KEY = re.compile(r'\{\s*"(\w+)"')
_FALLBACK_LABELS = ("unknown", "other", "none", "general", "misc")
# General associations a model has for common label words.
_LABEL_SENSE: dict[str, tuple[str, ...]] = {
    "status": ("where", "track", "arrive", "shipping", "check", "update", "progress", "到哪", "哪", "进度", "进展", "状态"),
    "greeting": ("hi", "hello", "hey", "你好", "您好", "在吗"), "thank": ("thanks", "thank", "谢谢", "多谢", "感谢"),
    "human": ("person", "agent", "human", "technician", "人工", "真人"),
    "recall": ("remember", "start", "earlier", "first", "一开始", "最开始"),
    "product": ("buy", "sell", "stock", "available", "price", "have", "recommend", "推荐", "有什么好", "买", "卖", "商品"),
    "complaint": ("complain", "unhappy", "投诉", "太差", "不满"), "coupon": ("discount", "promo", "voucher", "优惠"),
    "my": ("list", "all", "mine", "有哪些", "列表"), "ticket": ("incident", "case", "工单", "故障单"),
    "asset": ("device", "laptop", "monitor", "phone", "warranty", "equipment", "设备", "资产", "保修"),
    "kb": ("how", "guide", "article", "knowledge", "如何", "怎么", "指南"), "search": ("how", "find", "look"),
    "comment": ("note", "comment", "备注", "补充"), "create": ("new", "open", "broken", "submit", "坏", "新建", "提交", "开个"),
    "reset": ("forgot", "forgotten", "忘记", "重置"), "unlock": ("locked", "lock", "锁"),
    "request": ("need", "want", "grant", "申请", "开通"), "cancel": ("取消",), "return": ("退货", "send back"),
}
_VERIFY = re.compile(r"\bverif|\bcheck|\bvalidat|\bground|核对|验证|检查", re.I)
# Asking for a summary (a verb), not a text that merely has one ("[Summary up to turn 3]").
_SUMMARY = re.compile(r"\bsummari[sz](?:e|ing)\b|\b(?:write|create|give|produce|make|provide)\s+(?:me\s+)?(?:a\s+|an\s+)?"
                      r"(?:short\s+|brief\s+|concise\s+)?summary\b|总结一下|请总结|总结以下|概括一下|请概括|生成摘要|写(?:一段|个)?摘要", re.I)


def _terms(text: str) -> set[str]:
    raw = {stem(w) for w in re.findall(r"[a-z]+", clean(text).lower())}
    return raw | set(words(text, negations=True))


def _part_score(part: str, message: str, terms: set[str], plurals: set[str], prefixes: set[str]) -> float:
    """How well one word of a label matches: itself (a stop-word counts little), a common sense of it, an
    abbreviation of it in an id ("DOC-12" -> document), plus a little when both are plurals ("my tickets")."""
    own = stem(part)
    senses = _LABEL_SENSE.get(part, ()) or _LABEL_SENSE.get(own, ())
    latin = {stem(s) for s in senses if not CJK.search(s)}
    sense_hit = bool(latin & terms) or any(s in message for s in senses if CJK.search(s))
    abbreviated = any(w.startswith(p) for p in prefixes for w in {part, *senses})
    own_hit = own in terms
    score = 1.0 if sense_hit or abbreviated or (own_hit and part not in STOP) else 0.25 if own_hit else 0.0
    plural = part.endswith("s") and not part.endswith("ss") and bool(plurals & ({own} | latin))
    return score + 0.5 * (score > 0 and plural)


def classify(message: str, labels: list[str]) -> tuple[str, float]:
    """The label whose words (and their common senses) best match the message; ties go to the label
    with fewer words left unmatched."""
    terms = _terms(message)
    plurals = {stem(w) for w in re.findall(r"[A-Za-z]+", message) if stem(w) != w.lower() and w.lower().endswith("s")}
    prefixes = {m.lower() for m in re.findall(r"(?<![A-Za-z])([A-Za-z]{2,4})-?\d", message)}
    best, best_key = None, (0.0, 0)
    for name in labels:
        parts = [p for p in re.split(r"[_\W]+", name.lower()) if p]
        key = (sum(_part_score(p, message, terms, plurals, prefixes) for p in parts), -len(parts))
        if key > best_key:
            best, best_key = name, key
    if best is None or best_key[0] < 0.5:
        return next((n for n in labels if n.lower() in _FALLBACK_LABELS), labels[-1]), 0.3
    return best, round(min(0.95, 0.55 + 0.15 * best_key[0]), 2)


def _classification(instr: str, message: str) -> AIMessage | None:
    m = _LABELS.search(instr)
    if not (_CLASSIFY.search(instr) and m):
        return None
    labels = [x.strip() for x in re.split(r",|\||/|、|\bor\b", m.group(1)) if x.strip()]
    keys = _JSON_KEY.findall(instr) or ["label"]
    template = re.search(r"\{[^{}]*\}", instr[instr.lower().rfind("json"):] or "")
    extra = re.findall(r'"(\w+)"\s*:', template.group(0)) if template else []
    chosen, confidence = classify(message, labels)
    out: dict[str, Any] = {keys[0]: chosen}
    for key in extra:
        if key != keys[0] and re.search(r"conf|score|prob", key):
            out[key] = confidence
    return AIMessage(json.dumps(out, ensure_ascii=False))


def _verification(text: str, context: str) -> AIMessage:
    """ok unless the ANSWER states an id or an amount the EVIDENCE lacks."""
    m = re.search(r"(?is)answer\s*[:：](.*?)evidence\s*[:：](.*)", text)
    answer, evidence = (m.group(1), m.group(2)) if m else (text, context)
    have = {n for n in numbers(evidence)} | {float(x) for x in re.findall(r"\d+(?:\.\d+)?", evidence)}
    problems = [f"'{i}' is not in the evidence" for i in dict.fromkeys(identifiers(answer))
                if i.lower() not in evidence.lower()]
    for amount in dict.fromkeys(MONEY.findall(answer)):
        value = float(re.sub(r"[^\d.]", "", amount.replace(",", "")) or 0)
        if value not in have:
            problems.append(f"'{amount.strip()}' is not in the evidence")
    return AIMessage(json.dumps({"ok": not problems, "problems": problems}, ensure_ascii=False))


def summary_of(text: str, limit: int = 300) -> str:
    """The first sentences (at most three), then any identifier they left out."""
    sentences = [s.strip() for s in re.split(r"(?<=[.!?。！？])\s*|\n+", clean(text)) if s.strip()][:3]
    out = ""
    for s in sentences:
        if len(out) + len(s) > limit and out:
            break
        out += (" " if out and not CJK.search(s[:1]) else "") + s
    left = [i for i in dict.fromkeys(identifiers(text)) if i not in out]
    return out + (f" (ids: {', '.join(left[:8])})" if left else "")


def _conversation(messages: Sequence[BaseMessage]) -> str:
    roles = {"human": "User", "ai": "Assistant", "tool": "Tool"}
    lines = [f"{roles.get(m.type, m.type)}: {summary_of(text_of(m), 120)}" for m in messages
             if not isinstance(m, SystemMessage) and text_of(m).strip()]
    return "\n".join(lines[-8:])


def _summary(call: Call, system: str, last: str) -> AIMessage | None:
    in_last = _SUMMARY.search(last)
    if not (in_last or _SUMMARY.search(system)):
        return None
    body = re.split(r"[:：\n]", last[in_last.end():], maxsplit=1)[-1] if in_last else last
    if in_last and len(body) < 200 and call.tools:
        return None  # "summarise my orders" with tools at hand is a request, not a text to condense
    if not in_last and call.tools:
        return None
    if len(body.strip()) >= 40:
        return AIMessage(summary_of(body))
    return AIMessage(_conversation(call.messages[:-1] if in_last else call.messages))


def _schema_json(call: Call, instr: str, last: str) -> AIMessage | None:
    schema = next((v for _, _, v in json_spans(instr) if isinstance(v, dict) and isinstance(v.get("properties"), dict)),
                  None)
    if schema is None:
        return None
    request = last
    for start, end, _ in reversed(json_spans(last)):
        request = request[:start] + request[end:]
    args, missing = fill_args({"function": {"name": "", "parameters": schema}}, call, request)
    for name in missing:  # a structured answer must have every required key
        prop = prop_schema(schema["properties"].get(name, {}))
        kind = prop.get("type")
        args[name] = (prop["enum"][0] if prop.get("enum") else 0 if kind in ("integer", "number") else
                      False if kind == "boolean" else [] if kind == "array" else {} if kind == "object" else
                      clean(request).strip()[:100])
    return AIMessage(json.dumps(args, ensure_ascii=False))


def auxiliary_reply(call: Call) -> AIMessage | None:
    """Classification, verification, summary and schema-JSON requests, recognised from their wording."""
    system = " ".join(text_of(m) for m in call.messages if isinstance(m, SystemMessage))
    humans = call.humans
    last = humans[-1] if humans else ""
    instr = f"{system}\n{last}"
    if re.search(r"json", instr, re.I):
        message = last if _CLASSIFY.search(system) else _strip_instruction(last)
        if (reply := _classification(instr, message)) is not None:
            return reply
        if re.search(r'"ok"', instr) and _VERIFY.search(instr):
            context = " ".join(text_of(m) for m in call.messages if not isinstance(m, SystemMessage))
            return _verification(last, context)
        if (reply := _schema_json(call, instr, last)) is not None:
            return reply
    return _summary(call, system, last)


def _strip_instruction(text: str) -> str:
    """The part of a user message to classify: quoted text, or what follows the instruction."""
    quoted = re.findall(r"[\"“「]([^\"”」]{3,})[\"”」]", text)
    if quoted:
        return quoted[-1]
    kept = [s for s in re.split(r"(?<=[.!?。！？])\s+|\n+", text) if not (_CLASSIFY.search(s) or "json" in s.lower())]
    return " ".join(kept) or text

