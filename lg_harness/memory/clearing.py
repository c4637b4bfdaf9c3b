"""Tool-result digests, and clearing of tool results the conversation has already used.

A tool result earns its tokens once: the model reads it, answers, and from then on the answer carries what
mattered. Keeping every old result whole makes each later call resend kilobytes of JSON. Clearing replaces
an old successful result with a digest of its identifiers and key fields, inside the same data label and
under the same message id, so the tool call keeps its answer (providers reject orphaned calls) and a later
question about "the second one" can still find its id. Failed results are short already and stay whole.

The rolling summary's tool lines use the same digest, so one function says what a result "was".
"""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from lg_harness.tools.cleaning import DEFAULT_KEY_FIELDS, compact_json, label, unlabel

# An item of a list result is named by its first id-like key ("order_id", "id", "code", ...).
_ID_SUFFIXES = ("_id", "_code")
_ID_NAMES = ("id", "code", "sku")
DIGEST_CHARS = 160


def shorten(text: str, limit: int) -> str:
    """Whitespace collapsed, cut to ``limit`` characters with an ellipsis."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def message_text(message: BaseMessage) -> str:
    """The text of a message, from string content or text blocks."""
    if isinstance(message.content, str):
        return message.content
    return "".join(b if isinstance(b, str) else str(b.get("text", "")) for b in message.content
                   if isinstance(b, str) or (isinstance(b, dict) and b.get("type") == "text"))


def is_digest(text: str) -> bool:
    """Whether ``text`` is a result already cleared to a digest."""
    return unlabel(text)[2] == "digest"


def _item_id(item: Any) -> str | None:
    if isinstance(item, dict):
        return next((str(v) for k, v in item.items()
                     if (k in _ID_NAMES or k.endswith(_ID_SUFFIXES)) and v not in (None, "")), None)
    return str(item) if isinstance(item, str | int | float) else None


def _scalar(key: str, value: Any) -> str | None:
    if isinstance(value, bool | int | float) or (isinstance(value, str) and value):
        return f"{key}={value}"
    return None


def _ids(key: str, value: Any) -> str | None:
    """A list as the ids of its items: every id, never cut, since a later turn may name any of them (and
    identifier arguments must come from the conversation)."""
    if not isinstance(value, list) or not value:
        return None
    ids = [i for i in map(_item_id, value) if i is not None]
    more = len(value) - len(ids)
    if not ids:
        return f"{key}=[{more} items]"
    return f"{key}=[{', '.join(ids)}{f', +{more} more' if more else ''}]"


def result_digest(text: str, args: dict[str, Any] | None = None, limit: int = DIGEST_CHARS) -> str:
    """A tool result in a few characters.

    A JSON object gives its top-level scalars ("status=shipped", key fields first, cut to ``limit``
    characters) and then, whole, the ids of its lists' items ("results=[P1001, P1004]"), leaving out fields
    that only repeat the call's arguments; other JSON is compacted; plain text is shortened. The
    ``<tool_result>`` label, if any, is looked through.
    """
    _, body, _ = unlabel(text)
    try:
        data = json.loads(body)
    except (json.JSONDecodeError, TypeError):
        return shorten(body, limit)
    if isinstance(data, dict):
        # Key fields (ids, status, totals, tracking) first, so a cut digest keeps what answers questions.
        fields = [(k, v) for k, v in sorted(data.items(), key=lambda kv: kv[0] not in DEFAULT_KEY_FIELDS)
                  if (args or {}).get(k) != v]
        scalars = ", ".join(f for k, v in fields if (f := _scalar(k, v)))
        ids = [f for k, v in fields if (f := _ids(k, v))]
        if scalars or ids:
            return ", ".join([*([shorten(scalars, limit)] if scalars else []), *ids])
    return shorten(compact_json(data), limit)


def cleared(message: ToolMessage, args: dict[str, Any] | None = None) -> ToolMessage:
    """The message with its result replaced by a labelled digest (itself when that would not be shorter)."""
    text = message_text(message)
    tool, _, kind = unlabel(text)
    if kind == "digest" or message.status == "error":
        return message
    digest = label(result_digest(text, args), tool or message.name or "tool", kind="digest")
    return message.model_copy(update={"content": digest}) if len(digest) < len(text) else message


def clear_used_results(messages: Sequence[BaseMessage], keep_ids: Collection[str] = ()) -> list[BaseMessage]:
    """``messages`` with every successful tool result cleared except those whose call id is in ``keep_ids``."""
    args = {c.get("id"): c.get("args") or {} for m in messages if isinstance(m, AIMessage) for c in m.tool_calls}
    return [cleared(m, args.get(m.tool_call_id)) if isinstance(m, ToolMessage) and m.tool_call_id not in keep_ids
            else m for m in messages]

