"""``sim``: the deterministic offline chat model.

It reads exactly what a real model reads (the messages and the tool schemas of the call) and nothing else:
no design, no scenario, no harness state. Like Ollama, it keeps the system message and drops the oldest
messages when the input is longer than its context window. Usage is reported in tokens counted by the
bundled tokenizer.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage, SystemMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool

from llm.embeddings import count_tokens
from llm.sim_brain import respond
from llm.sim_faults import PROFILES, Dice, FaultProfile, latency_s
from llm.text_tools import tools_from_instructions


def as_text_calls(calls: list[dict[str, Any]], prefix: str = "") -> str:
    """Tool calls written as ``TOOL:`` lines, the way a model without native tool calling answers."""
    lines = [f"TOOL: {c['name']}(" + ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in c["args"].items())
             + ")" for c in calls]
    return prefix + "\n".join(lines)


class SimTimeout(TimeoutError):
    """The simulated model did not answer in time (a fault of its profile)."""


def message_tokens(message: BaseMessage) -> int:
    text = message.content if isinstance(message.content, str) else json.dumps(message.content)
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


class SimChatModel(BaseChatModel):
    """Deterministic shop-domain chat model with native tool calling."""

    model_name: str = "sim"
    seed: int = 0
    context_window: int = 4096
    faults: str = "realistic"

    @property
    def _llm_type(self) -> str:
        return "harness-sim"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"model_name": self.model_name, "seed": self.seed, "context_window": self.context_window,
                "faults": self.faults}

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
        key = json.dumps([[m.type, m.content, getattr(m, "tool_calls", None)] for m in visible] + [tools],
                         ensure_ascii=False, sort_keys=True, default=str)
        dice = Dice(self.seed, key)
        profile = self.fault_profile
        if dice.roll(profile.timeout):
            raise SimTimeout(f"sim did not answer (simulated timeout after {self.context_window} token context)")
        text_tools = [] if tools else tools_from_instructions(
            " ".join(str(m.content) for m in visible if isinstance(m, SystemMessage)))
        reply = respond(visible, tools or text_tools, profile=profile, dice=dice, tokens=tokens)
        if text_tools and reply.tool_calls:  # no native tool calling here: write the calls as text
            reply = AIMessage(as_text_calls(reply.tool_calls, "\u200b" if dice.roll(profile.invisible_prefix) else ""))
        # Usage counts the whole prompt as sent, as a provider bills it; latency only what fits the window.
        input_tokens = sum(message_tokens(m) for m in messages) + tool_tokens
        processed = sum(tokens) + tool_tokens
        output_tokens = message_tokens(reply)
        reply.usage_metadata = {"input_tokens": input_tokens, "output_tokens": output_tokens,
                                "total_tokens": input_tokens + output_tokens}
        reply.response_metadata = {"model_name": self.model_name,
                                   "finish_reason": "tool_calls" if reply.tool_calls else "stop",
                                   "latency_s": round(latency_s(profile, processed, output_tokens), 4),
                                   "truncated_tokens": input_tokens - processed}
        return ChatResult(generations=[ChatGeneration(message=reply)])
