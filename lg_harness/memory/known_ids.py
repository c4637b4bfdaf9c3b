"""Every identifier a thread has shown, and the invented-id check that reads it.

An identifier argument must come from the conversation: the customer typed it, or a tool result returned it.
The working messages cannot answer that on their own: they are bounded, compressed into a summary and their
old results cleared to digests, so an order id a lookup returned ten turns ago is no longer in them, and a
correct write that uses it would be refused as invented. So each thread keeps a record beside the working
set (the state field ``known_ids``): every id-like value the customer typed and every one a successful tool
result held, kept in order of arrival, the newest ``core.state.MAX_KNOWN_IDS``. Compression, clearing and the window
never touch it; it lives in the thread's state, so it belongs to the thread's one owner (``core.state
.keep_owner``) and a fork goes back to what was known at its checkpoint.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from functools import lru_cache
from typing import Any

from langchain_core.messages import HumanMessage, ToolMessage

from lg_harness.tools.entities import EntityType, find_mentions, normalise_text

_LONGEST_ID = 80
# A token: a run without spaces, brackets, quotes or list punctuation.
_TOKEN = re.compile(r"[^\s,;!?()\[\]{}<>\"'`]+")
_EDGES = ".:;,"


def _id_like(token: str) -> bool:
    """What an identifier looks like in text: it holds a digit, or joins words with ``_ # @``."""
    return any(c.isdigit() for c in token) or any(c in token for c in "_#@")


def ids_in_text(text: str, entity_types: Sequence[EntityType] = ()) -> list[str]:
    """The id-like tokens of ``text`` and the canonical form of every entity mention, upper-cased."""
    try:
        return list(_ids_in_text(text, tuple(entity_types)))
    except TypeError:  # a type given a list where a tuple belongs is no cache key (as in find_mentions)
        return list(_ids_in_text.__wrapped__(text, tuple(entity_types)))


@lru_cache(maxsize=8192)
def _ids_in_text(text: str, entity_types: tuple[EntityType, ...]) -> tuple[str, ...]:
    # Memoised: tool results repeat their strings (names, dates, statuses) from call to call and message to
    # message, and the answer depends on the types and the text only.
    plain = normalise_text(text)
    found = [t for m in _TOKEN.finditer(plain) if (t := m.group(0).strip(_EDGES)) and _id_like(t)]
    found += [v for values in find_mentions(entity_types, plain).values() for v in values]
    return tuple(t.upper() for t in found if len(t) <= _LONGEST_ID)


# A run of ASCII letters, digits and the joiners ids use, inside any text ("订单ORD-10001的状态").
_ASCII_RUN = re.compile(r"[#@]?[A-Za-z0-9](?:[A-Za-z0-9_#@.-]*[A-Za-z0-9])?")


def names_in_text(text: str, entity_types: Sequence[EntityType] = ()) -> list[str]:
    """What ``text`` names, upper-cased: the mentions of the domain's entity types, and the ASCII runs that
    hold both a letter and a digit. Counts, dates and amounts (``2``, ``2026-12-01``, ``20.00``) name
    nothing, nor do field names (``order_id``). "Where is ORD-10005?" names ``ORD-10005``; "my 2 orders"
    nothing."""
    plain = normalise_text(text)
    mentions = [v.upper() for values in find_mentions(entity_types, plain).values() for v in values]
    runs = [r.upper() for r in _ASCII_RUN.findall(plain)
            if any(c.isalpha() for c in r) and any(c.isdigit() for c in r) and len(r) <= _LONGEST_ID]
    return list(dict.fromkeys([*mentions, *runs]))


def ids_in_result(value: Any, entity_types: Sequence[EntityType] = ()) -> list[str]:
    """Every value a result shows that an argument could take: short strings whole (``"#W2378156"``,
    ``"SUMMER"``), integers, dict keys that look like ids (``{"credit_card_4466831": {...}}``), and the
    id-like tokens of longer texts; upper-cased."""
    out: list[str] = []
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            out += [str(k).upper() for k in node if _id_like(str(k)) and len(str(k)) <= _LONGEST_ID]
            stack.extend(node.values())
        elif isinstance(node, list | tuple):
            stack.extend(node)
        elif isinstance(node, bool) or node is None:
            continue
        elif isinstance(node, int):
            out.append(str(node))
        elif isinstance(node, str):
            whole = node.strip()
            if whole and len(whole) <= _LONGEST_ID and not any(c.isspace() for c in whole):
                out.append(whole.upper())
            out += ids_in_text(node, entity_types)
    return out


def ids_of_outcomes(outcomes: Iterable[Any], entity_types: Sequence[EntityType] = ()) -> list[str]:
    """The ids successful tool outcomes (``tools.executor.ToolOutcome``) showed."""
    return [v for o in outcomes if o.status == "ok" for v in ids_in_result(o.result, entity_types)]


# ------------------------------------------------------------------------------------------------ check


def seen_text(state: Mapping[str, Any]) -> str:
    """What the working set still shows: user words, fact card, tool results (upper-cased)."""
    parts = [json.dumps(state.get("fact_card") or {}, ensure_ascii=False)]
    for m in state.get("messages") or []:
        if isinstance(m, HumanMessage | ToolMessage):
            parts.append(m.content if isinstance(m.content, str) else json.dumps(m.content, ensure_ascii=False))
    return "\n".join(parts).upper()


def _values(value: Any) -> list[str]:
    """The strings an argument holds: itself, or the items of a list."""
    items = value if isinstance(value, list | tuple) else [value]
    return [v.strip() for v in items if isinstance(v, str) and v.strip()]


def invented_args(call: Mapping[str, Any], state: Mapping[str, Any], entity_args: Mapping[str, str]) -> list[str]:
    """Entity arguments (string or list, item by item) holding a value the thread never showed: neither in
    its record of known ids nor anywhere in the working set."""
    known = set(state.get("known_ids") or ())
    seen: str | None = None
    bad = []
    for key, value in (call.get("args") or {}).items():
        if key not in entity_args:
            continue
        for item in _values(value):
            if item.upper() in known:
                continue
            seen = seen_text(state) if seen is None else seen
            if item.upper() not in seen:
                bad.append(key)
                break
    return bad


_DIGITS = re.compile(r"\d+")
# A figure: digits standing as a number ("14:30", "40-hour", "ORD-10144"), not inside a word or a code ("a3f9c2")
_FIGURE = re.compile(r"(?<![A-Za-z\d])\d+(?![A-Za-z\d])")


def said_or_found(state: Mapping[str, Any]) -> str:
    """The customer's words and the results of calls that worked: where a figure may come from. A refusal's
    text is not (it quotes the made-up value it refuses)."""
    parts = [json.dumps(state.get("fact_card") or {}, ensure_ascii=False)]
    for m in state.get("messages") or []:
        if isinstance(m, HumanMessage) or (isinstance(m, ToolMessage) and m.status != "error"):
            parts.append(m.content if isinstance(m.content, str) else json.dumps(m.content, ensure_ascii=False))
    return "\n".join(parts)


def ungrounded_values(call: Mapping[str, Any], state: Mapping[str, Any], skip: Collection[str] = ()) -> list[str]:
    """Free-text arguments (strings, not ``skip``'s identifiers) whose digits no one wrote: a time, a date or a
    number the model made up ("14:30" for "what time is it in Tokyo?"). Words may be the model's own ("Tokyo"
    -> "Asia/Tokyo"); a figure in an argument is a fact, and a fact has to come from the customer or a result."""
    seen: set[str] | None = None
    bad = []
    for key, value in (call.get("args") or {}).items():
        if key in skip:
            continue
        for item in _values(value):
            if len(item.split()) > 6 and key != "reply":
                continue  # prose (a complaint, a comment): the model's own words, not a value it looked up
            # a lone digit or zeros carry no fact of their own ("15 percent" -> "0.15", "1 item" -> "1")
            runs = [r for r in _FIGURE.findall(item) if len(r) > 1 and r.strip("0")]
            if not runs:
                continue
            seen = set(_DIGITS.findall(said_or_found(state))) if seen is None else seen
            if any(r not in seen and r.lstrip("0") not in seen for r in runs):
                bad.append(key)
                break
    return bad


# A name as an argument: one capitalised token of letters, parts joined by / _ - ("UTC", "Asia/Tokyo", "Lisbon").
_NAME_VALUE = re.compile(r"[A-Z][A-Za-z]*(?:[/_-][A-Za-z]+)*")
# A name in the customer's words: a capitalised word after the first ("What time is it in Tokyo?").
_NAMED = re.compile(r"(?<=\s)[A-Z][a-z]+")
_CJK = re.compile(r"[\u3400-\u9fff]")


def unsaid_names(call: Mapping[str, Any], state: Mapping[str, Any], skip: Collection[str] = ()) -> dict[str, list[str]]:
    """Free-text arguments holding a name no one said, when the customer's latest message names something:
    argument -> the names the customer gave. "UTC" for "What time is it in Tokyo?" answers another question;
    "Asia/Tokyo" says what they said in the tool's terms. A name in an argument is a fact, like a figure. A
    message that names nothing leaves the tool's own default alone ("What time is it?" -> "UTC"), and a
    message in Chinese is skipped: its names reach the tool translated."""
    humans = [m for m in state.get("messages") or [] if isinstance(m, HumanMessage)]
    latest = str(humans[-1].content) if humans else ""
    named = [w for w in _NAMED.findall(latest) if w != "I"]
    if not named or _CJK.search(latest):
        return {}
    text = said_or_found(state)
    bad: dict[str, list[str]] = {}
    for key, value in (call.get("args") or {}).items():
        if key in skip or not isinstance(value, str) or not _NAME_VALUE.fullmatch(value.strip()):
            continue
        parts = [p for p in re.split(r"[/_-]", value.strip()) if len(p) > 1]
        if parts and not any(re.search(rf"(?<![A-Za-z]){re.escape(p)}(?![A-Za-z])", text, re.I) for p in parts):
            bad[key] = named
    return bad


_EXAMPLE = re.compile(r"\be\.g\.|\bfor example\b|\bfor instance\b|\bsuch as\b|\bexample\b|例如|比如")


def copied_examples(call: Mapping[str, Any], state: Mapping[str, Any], described: str,
                    skip: Collection[str] = ()) -> list[str]:
    """Free-text arguments holding the tool's own example ("printer shows offline", from ``search_kb``'s
    description) that no one in the conversation said: the model copied the example, not the request."""
    said: str | None = None
    bad = []
    text = described.casefold()
    for key, value in (call.get("args") or {}).items():
        if key in skip or not isinstance(value, str) or len(value.strip()) < 6:
            continue
        folded = value.strip().casefold()
        # an example the description gives whole and quoted ("e.g. 'printer shows offline'"), not one of
        # its options, nor a few words that happen to be in one
        quoted = rf"(?:\\?[\"'“‘]){re.escape(folded)}(?:\\?[\"'”’])"
        if not any(_EXAMPLE.search(text[max(0, m.start() - 80):m.start()]) for m in re.finditer(quoted, text)):
            continue
        said = said_or_found(state).casefold() if said is None else said
        if folded not in said:
            bad.append(key)
    return bad


_WORD = re.compile(r"[^\W\d_]{4,}")


def customer_spelling(args: Mapping[str, Any], state: Mapping[str, Any], skip: Collection[str] = ()) -> dict[str, Any]:
    """``args`` with a one-word free-text value the model respelled put back as the customer wrote it ("Lisboa"
    for their "Lisbon": a weather tool that knows Lisbon does not know Lisboa). Only when the model's word is
    nowhere in what was said or found and exactly one word there is that close (``difflib`` ratio >= 0.8);
    ``skip``'s identifiers are the entity types' business."""
    out = dict(args)
    words: dict[str, str] | None = None
    for key, value in args.items():
        if key in skip or not isinstance(value, str) or not _WORD.fullmatch(value.strip()):
            continue
        if words is None:
            words = {w.casefold(): w for w in _WORD.findall(said_or_found(state))}
        folded = value.strip().casefold()
        if folded in words:
            continue
        close = [w for f, w in words.items() if difflib.SequenceMatcher(None, folded, f).ratio() >= 0.8]
        if len(close) == 1:
            out[key] = close[0]
    return out


__all__ = ["customer_spelling", "ids_in_result", "ids_in_text", "ids_of_outcomes", "invented_args", "seen_text",
           "ungrounded_values", "unsaid_names", "copied_examples"]
