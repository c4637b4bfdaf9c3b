"""``sim``: the deterministic offline chat model.

It reads exactly what a real model reads (the messages and the tool schemas of the call) and nothing else:
no design, no scenario, no harness state. Like Ollama, it keeps the system message and drops the oldest
messages when the input is longer than its context window. Usage is reported in tokens counted by the
bundled tokenizer, with the part of the prompt a provider's prefix cache would have served reported as
``input_token_details.cache_read`` (see ``PrefixCache``).

What it says is its ``brain``'s: ``respond(messages, tools, profile=, dice=, tokens=) -> AIMessage``. The
default brain (``llm.sim_general``) understands any domain from the request alone; a domain may bring a
brain of its own (the shop's legacy one, ``Domain.sim_brain``).
"""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage, SystemMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from lg_harness.llm.embeddings import count_tokens
from lg_harness.llm.sim_faults import PROFILES, Dice, FaultProfile, latency_s
from lg_harness.llm.text_tools import tools_from_instructions
from pydantic import Field, PrivateAttr


def as_text_calls(calls: list[dict[str, Any]], prefix: str = "") -> str:
    """Tool calls written as ``TOOL:`` lines, the way a model without native tool calling answers."""
    lines = [f"TOOL: {c['name']}(" + ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in c["args"].items())
             + ")" for c in calls]
    return prefix + "\n".join(lines)


class SimTimeout(TimeoutError):
    """The simulated model did not answer in time (a fault of its profile)."""


def _content(message: BaseMessage) -> str:
    return message.content if isinstance(message.content, str) else json.dumps(message.content)


def message_tokens(message: BaseMessage) -> int:
    text = _content(message)
    calls = getattr(message, "tool_calls", None) or []
    extra = sum(count_tokens(c["name"] + json.dumps(c["args"], ensure_ascii=False)) for c in calls)
    return count_tokens(text) + extra + 4  # role and separators


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
    invalidates everything after it. Only what a real provider sees is used: the request itself.
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
    return f"\n<|{message.type}|>{_content(message)}" + (json.dumps(calls, sort_keys=True, default=str) if calls else "")


class SimChatModel(BaseChatModel):
    """Deterministic chat model with native tool calling; what it says comes from its ``brain``."""

    model_name: str = "sim"
    seed: int = 0
    context_window: int = 4096
    faults: str = "realistic"
    cache_block: int = 64
    brain: Callable[..., AIMessage] | None = Field(default=None, exclude=True)
    _cache: PrefixCache = PrivateAttr()

    def model_post_init(self, context: Any, /) -> None:
        super().model_post_init(context)
        self._cache = PrefixCache(self.cache_block)  # made here, not on first use: calls may race

    @property
    def _llm_type(self) -> str:
        return "harness-sim"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"model_name": self.model_name, "seed": self.seed, "context_window": self.context_window,
                "faults": self.faults, "brain": self._brain_name()}

    def _brain_name(self) -> str:
        return getattr(self.brain, "__module__", "lg_harness.llm.sim_general") if self.brain is not None else "lg_harness.llm.sim_general"

    def _respond(self) -> Callable[..., AIMessage]:
        if self.brain is not None:
            return self.brain
        from lg_harness.llm.sim_general import respond

        return respond

    @property
    def fault_profile(self) -> FaultProfile:
        return PROFILES[self.faults]

    def bind_tools(self, tools: Sequence[dict[str, Any] | type | Callable | BaseTool], *,
                   tool_choice: str | None = None, **kwargs: Any) -> Runnable[LanguageModelInput, AIMessage]:
        return self.bind(tools=[convert_to_openai_tool(t) for t in tools], **kwargs)

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None,
                  run_manager: CallbackManagerForLLMRun | None = None, **kwargs: Any) -> ChatResult:
        tools = kwargs.get("tools") or []
        tool_tokens = count_tokens(json.dumps(tools, ensure_ascii=False)) if tools else 0
        visible = fit_window(messages, self.context_window - tool_tokens)
        tokens = [message_tokens(m) for m in visible]
        # Call ids are left out: a provider's ids are fresh on every call, and the same conversation must
        # draw the same faults however its earlier calls were numbered.
        key = json.dumps([[m.type, m.content, [{k: v for k, v in c.items() if k != "id"}
                                                for c in getattr(m, "tool_calls", None) or []]]
                          for m in visible] + [tools],
                         ensure_ascii=False, sort_keys=True, default=str)
        dice = Dice(self.seed, key)
        profile = self.fault_profile
        if dice.roll(profile.timeout):
            raise SimTimeout(f"sim did not answer (simulated timeout after {self.context_window} token context)")
        text_tools = [] if tools else tools_from_instructions(
            " ".join(str(m.content) for m in visible if isinstance(m, SystemMessage)))
        reply = self._respond()(visible, tools or text_tools, profile=profile, dice=dice, tokens=tokens)
        if text_tools and reply.tool_calls:  # no native tool calling here: write the calls as text
            reply = AIMessage(as_text_calls(reply.tool_calls, "\u200b" if dice.roll(profile.invisible_prefix) else ""))
        # Usage counts the whole prompt as sent, as a provider bills it; latency only what fits the window.
        input_tokens = sum(message_tokens(m) for m in messages) + tool_tokens
        processed = sum(tokens) + tool_tokens
        output_tokens = message_tokens(reply)
        reply.usage_metadata = {"input_tokens": input_tokens, "output_tokens": output_tokens,
                                "total_tokens": input_tokens + output_tokens,
                                "input_token_details": {"cache_read": self._cached(tools, visible, tool_tokens, tokens)}}
        reply.response_metadata = {"model_name": self.model_name,
                                   "finish_reason": "tool_calls" if reply.tool_calls else "stop",
                                   "latency_s": round(latency_s(profile, processed, output_tokens), 4),
                                   "truncated_tokens": input_tokens - processed}
        return ChatResult(generations=[ChatGeneration(message=reply)])

    def _cached(self, tools: list[dict[str, Any]], visible: list[BaseMessage], tool_tokens: int,
                tokens: list[int]) -> int:
        segments = [json.dumps(tools, ensure_ascii=False, sort_keys=True) if tools else "",
                    *(_rendered(m) for m in visible)]
        return self._cache.cached_tokens(segments, [tool_tokens, *tokens])
