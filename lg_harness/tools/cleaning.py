"""Tool-result cleaning: turn whatever a tool returned into the compact, labelled text the model reads.

The pipeline is a row of small steps, each usable on its own:

* text: ``strip_html`` (tags go, ``<script>``/``<style>`` blocks go entirely, entities are unescaped),
  ``collapse_whitespace``, ``quote_instructions``, ``truncate_keep_ends``;
* data (dicts and lists): every string cleaned as above, ``drop_empty`` (nulls and empty values),
  ``compact_json``; when too long, lists keep their first and last items and a count of the omitted ones,
  long strings keep head and tail, and key fields (ids, status, totals...) are always kept;
* ``label`` wraps the result as ``<tool_result source=... type="data">`` so it reads as data, never as the
  harness's own instructions. ``clean_error`` wraps failures as ``<tool_error>``.

Injection defence keeps the data: sentences in a result that look like instructions to the assistant are
wrapped in quotes between ``[quoted text from tool result]`` and ``[end of quote]``, never deleted. Everything is deterministic.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import enum
import html
import json
import math
import re
from collections.abc import Collection, Container, Mapping
from decimal import Decimal
from typing import Any, NamedTuple

from lg_harness.tools.textcalls import strip_invisible

__all__ = [
    "DEFAULT_KEY_FIELDS",
    "QUOTE_END",
    "QUOTE_MARKER",
    "clean_error",
    "clean_result",
    "clean_text",
    "collapse_whitespace",
    "compact_json",
    "drop_empty",
    "holds_instruction",
    "label",
    "unlabel",
    "quote_instructions",
    "readable",
    "strip_html",
    "truncate_keep_ends",
]

class KeyFields(Container[str]):
    """Field names that answer questions about a result in any domain: ids and codes by their name's shape
    (``id``, ``*_id``, ``*_no``, ``*_code``), plus status, amounts and errors; ``extra`` adds exact names."""

    _NAMES = frozenset({"id", "sku", "status", "price", "total", "error", "code"})
    _SUFFIXES = ("_id", "_no", "_code")

    def __init__(self, extra: Collection[str] = ()) -> None:
        self.extra = frozenset(extra)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and (name in self._NAMES or name in self.extra or name.endswith(self._SUFFIXES))


DEFAULT_KEY_FIELDS = KeyFields()
QUOTE_MARKER = "[quoted text from tool result]"
QUOTE_END = "[end of quote]"
EMPTY_RESULT = "(empty result)"
ERROR_MAX_CHARS = 1000
# Below this the body cannot hold anything useful; the label then wins over max_chars.
_MIN_BODY_CHARS = 60
_KEY_FIELD_MIN_CHARS = 200
_MAX_DEPTH = 50

_COMMENT_RE = re.compile(r"<!--.*?(?:-->|\Z)", re.S)
_DROP_BLOCK_RE = re.compile(r"<(script|style|noscript|template)\b[^>]*>.*?(?:</\1\s*>|\Z)", re.I | re.S)
_BREAK_TAG_RE = re.compile(
    r"<(?:br|hr|/?(?:p|div|li|ul|ol|tr|table|thead|tbody|h[1-6]|section|article|header|footer|blockquote|pre))"
    r"\b[^<>]*>",
    re.I,
)
_CELL_TAG_RE = re.compile(r"</?t[dh]\b[^<>]*>", re.I)
_TAG_RE = re.compile(r"</?[A-Za-z][^<>]*>|<![^<>]*>")
_HSPACE_RE = re.compile(r"[^\S\n]+")
_NEWLINES_RE = re.compile(r" ?\n[\s]*")
# Unicode tag characters (U+E0000-E007F) smuggle invisible ASCII text past a reader.
_TAG_CHARS_RE = re.compile("[\U000e0000-\U000e007f]")
_OWN_TAG_RE = re.compile(r"<(/?\s*)(tool_result|tool_error)", re.I)
_LABELLED_RE = re.compile(r'^<tool_result source="([^"]*)" type="([^"]*)">(.*)</tool_result>$', re.S)

_SENTENCE_END = ".!?。！？\n"
_LINE_START = r"(?:^|(?<=[\n.!?。！？>\]|]))\s*"
_INSTRUCTION_PATTERNS = (
    r"\b(?:ignore|disregard|forget|override)\b[^.!?\n。！？]{0,40}?\b(?:instructions?|prompts?|rules|guidelines)\b",
    r"\byou are now\b",
    r"\bfrom now on\b",
    r"\bpretend (?:to be|you are)\b",
    r"\bact as (?:an? |the )?(?:assistant|admin|administrator|system|developer)\b",
    r"\bnew instructions?\b",
    r"\bsystem prompt\b",
    r"\bdo not (?:tell|inform|alert) the user\b",
    _LINE_START + r"(?:system|assistant|developer)\s*[:：]",
    r"<\|[A-Za-z_]+\|>",
    r"\[/?(?:INST|SYS)\]",
    r"\b(?:call|invoke) (?:the |this |that |a )?(?:[\w-]+ )?(?:tool|function)\b",
    r"\b(?:call|invoke|run|execute) [a-z]+_[a-z_]+\b",
    r"(?-i:\bTOOL\s*[:：])",
    r"\btransfer all\b",
    r"\b(?:cancel|refund|delete) all (?:orders|items|accounts|data|payments)\b",
    r"(?:忽略|无视|忘记|忘掉)[^。！？.!?\n]{0,10}?(?:指令|指示|规则|提示|要求|设定)",
    r"你现在是",
    r"从现在(?:开始|起)",
    _LINE_START + r"(?:系统|助手)\s*[:：]",
    r"调用[^。！？.!?\n]{0,12}?(?:工具|函数|接口)",
    r"(?:转账|转移|转出)(?:所有|全部)",
    r"(?:所有|全部)(?:资金|余额|款项)[^。！？.!?\n]{0,6}?转",
)
_INSTRUCTION_RE = re.compile("|".join(f"(?:{p})" for p in _INSTRUCTION_PATTERNS), re.I)
# Every pattern above contains one of these; the cheap substring test spares the regex on ordinary text.
_TRIGGERS = ("ignor", "disregard", "forget", "overrid", "you are now", "from now on", "pretend", "act as",
             "new instruction", "system", "do not", "assistant", "developer", "<|", "[inst", "[/inst", "[sys",
             "[/sys", "call", "invoke", "run ", "execute", "tool", "transfer all", " all ", "忽略", "无视", "忘记",
             "忘掉", "你现在是", "从现在", "系统", "助手", "调用", "转")
_CLOSING = "” " + QUOTE_END
_QUOTED_RE = re.compile(re.escape(QUOTE_MARKER) + " “.*?” " + re.escape(QUOTE_END), re.S)


class _Limits(NamedTuple):
    items: int  # list items / dict fields kept (first and last)
    chars: int  # longest string kept
    depth: int | None  # nesting kept; deeper containers become a count


# Tried in order until the JSON fits: gentle first, so small overruns lose little.
_LEVELS = (
    _Limits(20, 400, None),
    _Limits(10, 200, None),
    _Limits(6, 120, 6),
    _Limits(4, 80, 4),
    _Limits(2, 60, 3),
    _Limits(2, 40, 2),
)


def strip_html(text: str) -> str:
    """Remove HTML markup: tags, comments, ``<script>``/``<style>`` blocks with their content; unescape entities.

    Args:
        text: Text that may contain HTML.

    Returns:
        The visible text. Entities are unescaped last, so ``&lt;b&gt;`` stays as the literal text ``<b>``.
    """
    if "<" not in text and "&" not in text:
        return text
    text = _COMMENT_RE.sub("", text)
    text = _DROP_BLOCK_RE.sub(" ", text)
    text = _BREAK_TAG_RE.sub("\n", text)
    text = _CELL_TAG_RE.sub(" ", text)
    text = _TAG_RE.sub("", text)
    return html.unescape(text)


def collapse_whitespace(text: str) -> str:
    """Collapse runs of spaces/tabs (any Unicode space) to one space and runs of blank lines to one newline.

    Args:
        text: Any text.

    Returns:
        The text with compact whitespace and no leading or trailing whitespace.
    """
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = _HSPACE_RE.sub(" ", text)
    return _NEWLINES_RE.sub("\n", text).strip()


def _cut_marker(count: int) -> str:
    return f" [... {count} chars cut ...] "


def truncate_keep_ends(text: str, max_chars: int) -> str:
    """Shorten ``text`` to at most ``max_chars`` by cutting its middle, marked ``[... N chars cut ...]``.

    The head (about 60 %) and the tail are kept, cut at a nearby space when there is one.

    Args:
        text: Any text.
        max_chars: The length the result must not exceed.

    Returns:
        ``text`` itself when short enough, else head + marker + tail.
    """
    if len(text) <= max_chars:
        return text
    # The marker for the largest possible count bounds every real marker's length.
    room = max_chars - len(_cut_marker(len(text)))
    if room < 2:
        return text[:max(max_chars, 0)]
    head_len = room * 3 // 5
    head = text[:head_len]
    tail = text[len(text) - (room - head_len):]
    space = head.rfind(" ", max(len(head) - 20, 0))
    if space > 0:
        head = head[:space]
    space = tail.find(" ", 0, 20)
    if 0 <= space < len(tail) - 1:
        tail = tail[space + 1:]
    return f"{head.rstrip()}{_cut_marker(len(text) - len(head.rstrip()) - len(tail))}{tail}"


def _sentence_span(text: str, start: int, end: int) -> tuple[int, int]:
    """Widen ``[start, end)`` to the whole sentence around it (its end punctuation included)."""
    left = max((text.rfind(ch, 0, start) for ch in _SENTENCE_END), default=-1) + 1
    right = min((i for i in (text.find(ch, end) for ch in _SENTENCE_END) if i >= 0), default=len(text) - 1)
    return left, min(right + 1, len(text))


def _inside(pos: int, regions: list[tuple[int, int]]) -> bool:
    return any(start <= pos < end for start, end in regions)


def _clip(left: int, right: int, match: re.Match[str], regions: list[tuple[int, int]]) -> tuple[int, int]:
    """Keep a sentence span out of text that is already quoted on either side of the match."""
    for start, end in regions:
        if left < end <= match.start():
            left = end
        if match.start() < start < right:
            right = start
    return left, right


def _instruction_spans(text: str) -> list[tuple[int, int]]:
    # casefold, plus the two dotted/dotless i's that re.IGNORECASE also equates with ASCII "i"
    folded = text.casefold().replace("i\u0307", "i").replace("ı", "i")
    if not any(trigger in folded for trigger in _TRIGGERS):
        return []
    regions = [(m.start(), m.end()) for m in _QUOTED_RE.finditer(text)]
    spans: list[tuple[int, int]] = []
    for match in _INSTRUCTION_RE.finditer(text):
        if _inside(match.start(), regions):
            continue  # already quoted: quoting twice would only add noise
        left, right = _clip(*_sentence_span(text, match.start(), match.end()), match, regions)
        # A quote's own closing words in the text (a stray one, from a result that quoted itself) end the span:
        # inside a quote they would close it early, and a second pass would quote the rest again.
        if (cut := text.rfind(_CLOSING, left, match.start())) >= 0:
            left = cut + len(_CLOSING)
        if (stop := text.find(_CLOSING, match.end(), right)) >= 0:
            right = stop
        while left < right and text[left].isspace():
            left += 1
        while right > left and text[right - 1].isspace():
            right -= 1
        if spans and left < spans[-1][1]:
            spans[-1] = (spans[-1][0], max(right, spans[-1][1]))
        else:
            spans.append((left, right))
    return spans


def holds_instruction(text: str) -> bool:
    """Whether ``text`` holds a sentence written to instruct an assistant (what ``quote_instructions``
    quotes), or such a quote: data a customer must not be shown, in a reply or a rendered answer."""
    if QUOTE_MARKER in text or QUOTE_END in text:
        return True
    folded = text.casefold()
    return any(trigger in folded for trigger in _TRIGGERS) and _INSTRUCTION_RE.search(text) is not None


def quote_instructions(text: str) -> str:
    """Quote sentences that read like instructions to the assistant, so they stay data.

    Catches English and Chinese injection phrasing ("ignore previous instructions", "you are now",
    "system:", "忽略之前的指令", "call the tool", "transfer all", chat-template tokens...). Nothing is
    deleted: each such sentence is kept verbatim inside ``[quoted text from tool result] “...” [end of quote]``,
    so where the quoted text stops is as clear as where it starts.

    Args:
        text: Cleaned text from a tool result.

    Returns:
        The text with suspicious sentences quoted; applying it twice changes nothing more.
    """
    spans = _instruction_spans(text)
    if not spans:
        return text
    parts: list[str] = []
    last = 0
    for left, right in spans:
        parts.append(text[last:left])
        parts.append(f"{QUOTE_MARKER} “{text[left:right]}” {QUOTE_END}")
        last = right
    parts.append(text[last:])
    return "".join(parts)


def clean_text(text: str) -> str:
    """The whole string pipeline: invisible characters, HTML, whitespace, instruction quoting, our own tags.

    Args:
        text: A raw string from a tool.

    Returns:
        The cleaned string (not truncated, not labelled).
    """
    text = _TAG_CHARS_RE.sub("", strip_invisible(text))
    return _neutralise_tags(quote_instructions(collapse_whitespace(strip_html(text))))


def _is_empty(value: Any) -> bool:
    return value is None or (isinstance(value, str | list | dict) and not value)


def drop_empty(value: Any) -> Any:
    """Drop nulls, empty strings, empty lists and empty objects, recursively (``0`` and ``false`` stay).

    Args:
        value: JSON-like data.

    Returns:
        The data without empty values; a container that only held empties becomes empty itself.
    """
    if isinstance(value, dict):
        pruned = {k: drop_empty(v) for k, v in value.items()}
        return {k: v for k, v in pruned.items() if not _is_empty(v)}
    if isinstance(value, list):
        return [v for v in map(drop_empty, value) if not _is_empty(v)]
    return value


def compact_json(value: Any) -> str:
    """Serialise as compact JSON: no spaces after separators, non-ASCII text kept as is.

    Args:
        value: JSON-like data.

    Returns:
        The JSON text; values JSON cannot hold are written with ``str``.
    """
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def _attr(value: str) -> str:
    return html.escape(str(value), quote=True)


def _neutralise_tags(body: str) -> str:
    """Stop a result from closing or faking our own wrapper tags (the rest of the data is untouched)."""
    return _OWN_TAG_RE.sub(r"&lt;\1\2", body)


def label(body: str, tool: str, kind: str = "data") -> str:
    """Wrap cleaned text as data from ``tool``.

    Args:
        body: The cleaned result text.
        tool: The tool's name.
        kind: ``data`` for a result, ``digest`` for a result cut down to its ids and key fields.

    Returns:
        ``<tool_result source="{tool}" type="{kind}">{body}</tool_result>``.
    """
    return f'<tool_result source="{_attr(tool)}" type="{_attr(kind)}">{_neutralise_tags(body)}</tool_result>'


def unlabel(text: str) -> tuple[str | None, str, str | None]:
    """Read back what ``label`` wrote: (tool name, body, kind); plain text gives (None, text, None).

    The tool name comes back as ``label`` escaped it; the body keeps its neutralised tags.
    """
    match = _LABELLED_RE.match(text.strip())
    if match is None:
        return None, text, None
    return match.group(1), match.group(3), match.group(2)


# Our wrappers anywhere in a text (a summary line, a fact card's open step), cut short or whole.
_WRAPPED_RE = re.compile(r'<(tool_result|tool_error) source="[^"]*" type="[^"]*">(.*?)(?:</\1>|$)', re.S)


def readable(text: str) -> str:
    """A text the harness wrote for the model, for a person: each ``label``/``clean_error`` wrapper gives way
    to what it wraps (the text around it already says which tool, and that it failed)."""
    return _WRAPPED_RE.sub(lambda m: m.group(2).replace("&lt;", "<"), text)


def clean_error(error_type: str, message: str, *, tool: str) -> str:
    """Label a failed tool call so it can never be read as a successful result.

    Args:
        error_type: The error class name from the taxonomy (validation, not_found, timeout...).
        message: What went wrong; cleaned and shortened like result text.
        tool: The tool's name.

    Returns:
        ``<tool_error source="{tool}" type="{error_type}">{message}</tool_error>``.
    """
    body = truncate_keep_ends(clean_text(str(message)), ERROR_MAX_CHARS) or "(no message)"
    return (f'<tool_error source="{_attr(tool)}" type="{_attr(error_type)}">'
            f"{_neutralise_tags(body)}</tool_error>")


def _scalar_to_data(value: Any) -> Any:
    """Plain JSON scalars for the odd types tools return (dates, decimals, enums, bytes, NaN)."""
    if isinstance(value, enum.Enum):
        return _scalar_to_data(value.value)
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if value is None or isinstance(value, str | int | float | bool):
        return value
    if isinstance(value, dt.date | dt.datetime | dt.time):
        return value.isoformat()
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, bytes | bytearray):
        return bytes(value).decode("utf-8", "replace")
    return str(value)


def _to_data(value: Any, depth: int = 0) -> Any:
    """Convert a tool's return value to JSON-like data (dicts with str keys, lists, scalars)."""
    if depth > _MAX_DEPTH:
        return str(value)
    if not isinstance(value, type) and callable(getattr(value, "model_dump", None)):
        value = value.model_dump(mode="json")
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        value = dataclasses.asdict(value)
    if isinstance(value, Mapping):
        return {str(k): _to_data(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_to_data(v, depth + 1) for v in value]
    if isinstance(value, set | frozenset):
        # Sets have no order; sort their text forms so the output is deterministic.
        return [_to_data(v, depth + 1) for v in sorted(value, key=repr)]
    return _scalar_to_data(value)


def _clean_strings(value: Any) -> Any:
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, dict):
        return {k: _clean_strings(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_clean_strings(v) for v in value]
    return value


def _ends(count: int, keep: int) -> tuple[int, int]:
    """How many items to keep at the head and at the tail of ``count`` items."""
    if count <= keep:
        return count, 0
    return (keep + 1) // 2, keep // 2


def _shrink(value: Any, lim: _Limits, keys: Container[str], depth: int) -> Any:
    if isinstance(value, str):
        return truncate_keep_ends(value, lim.chars)
    if isinstance(value, list):
        return _shrink_list(value, lim, keys, depth)
    if isinstance(value, dict):
        return _shrink_dict(value, lim, keys, depth)
    return value


def _shrink_list(value: list[Any], lim: _Limits, keys: Container[str], depth: int) -> list[Any]:
    if lim.depth is not None and depth >= lim.depth:
        return [{"...": f"{len(value)} items omitted"}]
    head, tail = _ends(len(value), lim.items)
    kept = [_shrink(v, lim, keys, depth + 1) for v in value[:head]]
    omitted = len(value) - head - tail
    if omitted:
        kept.append({"...": f"{omitted} more items omitted"})
    kept.extend(_shrink(v, lim, keys, depth + 1) for v in value[len(value) - tail:])
    return kept


def _shrink_dict(value: dict[str, Any], lim: _Limits, keys: Container[str], depth: int) -> dict[str, Any]:
    """Keep every key field, and the first and last of the other fields; count what was dropped."""
    others = [k for k in value if k not in keys]
    if lim.depth is not None and depth >= lim.depth:
        chosen: set[str] = set()
    else:
        head, tail = _ends(len(others), lim.items)
        chosen = set(others[:head]) | set(others[len(others) - tail:])
    key_lim = lim._replace(chars=max(lim.chars, _KEY_FIELD_MIN_CHARS))
    out = {k: _shrink(v, key_lim if k in keys else lim, keys, depth + 1)
           for k, v in value.items() if k in keys or k in chosen}
    omitted = len(others) - len(chosen)
    if omitted:
        out["..."] = f"{omitted} more fields omitted"
    return out


def _last_resort(value: Any, text: str, budget: int, keys: Container[str]) -> str:
    """Even the tightest shape is too long: keep the top-level key fields, then head and tail of the JSON."""
    kept = {}
    if isinstance(value, dict):
        kept = {k: v for k, v in value.items() if k in keys and not isinstance(v, dict | list)}
    prefix = compact_json(kept) + " " if kept else ""
    return prefix + truncate_keep_ends(text, max(budget - len(prefix), 0))


def _fit(value: Any, budget: int, keys: Container[str]) -> str:
    """Compact JSON of ``value`` within ``budget`` characters, shrinking step by step if needed."""
    text = compact_json(value)
    if len(text) <= budget:
        return text
    for lim in _LEVELS:
        text = compact_json(_shrink(value, lim, keys, 0))
        if len(text) <= budget:
            return text
    return _last_resort(value, text, budget, keys)


def _parse_json_text(text: str) -> Any:
    """A string result that is itself JSON is data; anything else stays text."""
    stripped = text.strip()
    if not stripped or stripped[0] not in "{[":
        return text
    try:
        return json.loads(stripped)
    except (ValueError, RecursionError):
        return text


def clean_result(
    result: Any,
    *,
    tool: str,
    max_chars: int = 2000,
    key_fields: Container[str] = DEFAULT_KEY_FIELDS,
) -> str:
    """Turn a tool's return value into the compact, labelled text the model reads.

    Args:
        result: What the tool returned: text (HTML or plain, or JSON text), a dict, a list, a scalar,
            a pydantic model or a dataclass.
        tool: The tool's name, written into the label.
        max_chars: Upper bound for the whole returned string, label included (as long as it leaves room
            for a minimal body).
        key_fields: Field names never dropped when data is shortened.

    Returns:
        ``<tool_result source="{tool}" type="data">...</tool_result>`` around the cleaned result.
    """
    budget = max(max_chars - len(label("", tool)), _MIN_BODY_CHARS)
    data = _to_data(_parse_json_text(result) if isinstance(result, str) else result)
    if isinstance(data, str):
        body = truncate_keep_ends(clean_text(data), budget)
    elif data is None:
        body = ""
    else:
        body = _fit(drop_empty(_clean_strings(data)), budget, key_fields)
    return label(body or EMPTY_RESULT, tool)
