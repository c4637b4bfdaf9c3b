"""``sim``: the offline chat model, a LangChain client of the independent ``simlm`` package.

This adapter is all the harness knows of the simulated model: it sends an OpenAI chat-completions request
body (messages in the wire format, tool schemas) to ``simlm.Provider`` and turns the response body back
into an ``AIMessage``, parsing tool calls the way ``langchain-openai`` does (arguments that are not valid
JSON become ``invalid_tool_calls``). ``simlm`` imports nothing from the harness; nothing else of the
conversation (message ``status``, artifacts, ids of LangChain objects) reaches it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.exceptions import OutputParserException
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage, convert_to_openai_messages
from langchain_core.output_parsers.openai_tools import make_invalid_tool_call, parse_tool_call
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import PrivateAttr

from simlm import FaultProfile, Provider, SimTimeout, profile

__all__ = ["SimChatModel", "SimTimeout", "from_wire"]


def from_wire(body: dict[str, Any]) -> AIMessage:
    """An ``AIMessage`` from a chat-completions response body (tool calls, usage, metadata)."""
    choice = body["choices"][0]
    message = choice["message"]
    calls, invalid = [], []
    for raw in message.get("tool_calls") or []:
        try:
            calls.append(parse_tool_call(raw, return_id=True))
        except OutputParserException as err:
            invalid.append(make_invalid_tool_call(raw, str(err)))
    usage = body.get("usage") or {}
    details = usage.get("prompt_tokens_details") or {}
    reply = AIMessage(message.get("content") or "", tool_calls=calls, invalid_tool_calls=invalid)
    reply.usage_metadata = {"input_tokens": usage.get("prompt_tokens", 0), "output_tokens": usage.get("completion_tokens", 0),
                            "total_tokens": usage.get("total_tokens", 0),
                            "input_token_details": {"cache_read": details.get("cached_tokens", 0)}}
    reply.response_metadata = {"model_name": body.get("model"), "finish_reason": choice.get("finish_reason"),
                               **({"latency_s": body["x_latency_s"]} if "x_latency_s" in body else {}),
                               **({"truncated_tokens": body["x_truncated_tokens"]} if "x_truncated_tokens" in body else {})}
    return reply


class SimChatModel(BaseChatModel):
    """The simulated model as a LangChain chat model with native tool calling."""

    model_name: str = "sim"
    seed: int = 0
    faults: str = "prior"
    context_window: int | None = None  # overrides the profile's window
    cache_block: int = 64
    _provider: Provider = PrivateAttr()

    def model_post_init(self, context: Any, /) -> None:
        super().model_post_init(context)
        self._provider = Provider(self.fault_profile, self.seed, model=self.model_name, cache_block=self.cache_block)

    @property
    def _llm_type(self) -> str:
        return "simlm"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"model_name": self.model_name, "seed": self.seed, "faults": self.faults,
                "context_window": self.fault_profile.context_window}

    @property
    def fault_profile(self) -> FaultProfile:
        base = profile(self.faults)
        return dataclasses.replace(base, context_window=self.context_window) if self.context_window else base

    def bind_tools(self, tools: Sequence[dict[str, Any] | type | Callable | BaseTool], *,
                   tool_choice: str | None = None, **kwargs: Any) -> Runnable[LanguageModelInput, AIMessage]:
        return self.bind(tools=[convert_to_openai_tool(t) for t in tools], **kwargs)

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None,
                  run_manager: CallbackManagerForLLMRun | None = None, **kwargs: Any) -> ChatResult:
        request: dict[str, Any] = {"model": self.model_name, "messages": convert_to_openai_messages(messages)}
        for key in ("tools", "response_format"):  # what an OpenAI-compatible request would carry
            if kwargs.get(key):
                request[key] = kwargs[key]
        return ChatResult(generations=[ChatGeneration(message=from_wire(self._provider.complete(request)))])
