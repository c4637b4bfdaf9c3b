"""``peer:pydantic-ai``: a Pydantic AI ``Agent`` over our model through its ``FunctionModel``.

``FunctionModel`` is Pydantic AI's own way to put any callable behind its model interface. Ours turns the
agent's messages into chat messages, calls the cell's chat model (the sim with its profile and seed, or a
real model) with the agent's tool definitions, and turns the reply back into a ``ModelResponse``: text,
tool calls, and arguments that were not JSON passed on as the raw text, so Pydantic AI's own validation
meets them. Each domain tool is a Pydantic AI ``Tool`` whose signature carries the tool's fields
(``peers.signature``); Pydantic AI validates arguments against it and sends a ``RetryPromptPart`` back on
a mistake. Backend failures are raised as ``ModelRetry`` (the documented way to let the model try again),
at most ``TOOL_RETRIES`` times per tool, after which the run fails.

The conversation is carried by ``message_history`` (the previous run's ``all_messages()``) and trimmed by
a history processor to the last user turns; ``UsageLimits`` caps requests and tool calls per message.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from lg_harness.tools.registry import ToolSpec
from lg_harness_lab.peers.recorder import PeerCell, as_json
from lg_harness_lab.peers.signature import typed_function

TOOL_RETRIES = 3
REQUESTS_PER_MESSAGE = 6
TOOL_CALLS_PER_MESSAGE = 12
KEEP_TURNS = 6


def to_chat(messages: list[Any]) -> list[BaseMessage]:
    """Pydantic AI's messages as the chat messages our model reads (the OpenAI chat shape)."""
    from pydantic_ai.messages import (
        ModelRequest,
        RetryPromptPart,
        SystemPromptPart,
        TextPart,
        ToolCallPart,
        ToolReturnPart,
        UserPromptPart,
    )

    out: list[BaseMessage] = []
    for message in messages:
        if isinstance(message, ModelRequest):
            for part in message.parts:
                if isinstance(part, SystemPromptPart):
                    out.append(SystemMessage(part.content))
                elif isinstance(part, UserPromptPart):
                    out.append(HumanMessage(part.content if isinstance(part.content, str) else str(part.content)))
                elif isinstance(part, ToolReturnPart):
                    out.append(ToolMessage(part.model_response_str(), tool_call_id=part.tool_call_id))
                elif isinstance(part, RetryPromptPart):
                    if part.tool_name:
                        out.append(ToolMessage(part.model_response(), tool_call_id=part.tool_call_id))
                    else:
                        out.append(HumanMessage(part.model_response()))
            continue
        text, calls, invalid = [], [], []
        for part in message.parts:
            if isinstance(part, TextPart):
                text.append(part.content)
            elif isinstance(part, ToolCallPart):
                try:
                    calls.append({"name": part.tool_name, "args": part.args_as_dict(), "id": part.tool_call_id})
                except ValueError:  # arguments that were never JSON: sent back as the model wrote them
                    invalid.append({"name": part.tool_name, "args": str(part.args), "id": part.tool_call_id,
                                    "error": None, "type": "invalid_tool_call"})
        out.append(AIMessage("".join(text), tool_calls=calls, invalid_tool_calls=invalid))
    return out


def to_response(reply: AIMessage) -> Any:
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.usage import RequestUsage

    parts: list[Any] = []
    if reply.text:
        parts.append(TextPart(reply.text))
    parts += [ToolCallPart(c["name"], c.get("args") or {}, tool_call_id=c.get("id") or "") for c in reply.tool_calls]
    parts += [ToolCallPart(str(c.get("name") or ""), c.get("args") or "", tool_call_id=c.get("id") or "")
              for c in reply.invalid_tool_calls]
    if not parts:
        parts.append(TextPart(""))
    usage = reply.usage_metadata or {}
    return ModelResponse(parts=parts, usage=RequestUsage(input_tokens=int(usage.get("input_tokens") or 0),
                                                         output_tokens=int(usage.get("output_tokens") or 0)),
                         model_name="peer-model")


def function_model(cell: PeerCell) -> Any:
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    def respond(messages: list[Any], info: AgentInfo) -> Any:
        tools = [{"type": "function", "function": {"name": t.name, "description": t.description or "",
                                                   "parameters": t.parameters_json_schema}}
                 for t in info.function_tools]
        chat = to_chat(messages)
        if info.instructions:
            chat.insert(0, SystemMessage(info.instructions))
        model = cell.chat_model.bind_tools(tools) if tools else cell.chat_model
        return to_response(model.invoke(chat))

    return FunctionModel(respond, model_name="peer-model")


def pydantic_tool(cell: PeerCell, spec: ToolSpec) -> Any:
    from pydantic_ai import ModelRetry, RunContext, Tool

    def body(ctx: RunContext[Any], **kwargs: Any) -> Any:
        try:
            return as_json(cell.run_tool(spec, ctx.tool_call_id, kwargs))
        except Exception as err:  # noqa: BLE001 - every backend failure goes back to the model to retry
            raise ModelRetry(f"{type(err).__name__}: {err}") from err

    return Tool(typed_function(spec, body, ("ctx", RunContext[Any])), takes_ctx=True, name=spec.name,
                description=spec.description, max_retries=TOOL_RETRIES)


def recent_turns(messages: list[Any]) -> list[Any]:
    """The history processor: the system prompt and the last ``KEEP_TURNS`` user turns, whole.

    A cut always falls before a user prompt, so no tool return loses the call it answers.
    """
    from pydantic_ai.messages import ModelRequest, SystemPromptPart, UserPromptPart

    starts = [i for i, m in enumerate(messages)
              if isinstance(m, ModelRequest) and any(isinstance(p, UserPromptPart) for p in m.parts)]
    if len(starts) <= KEEP_TURNS:
        return messages
    cut = starts[-KEEP_TURNS]
    system = [p for p in messages[0].parts if isinstance(p, SystemPromptPart)]
    head = messages[cut]
    return [ModelRequest(parts=[*system, *[p for p in head.parts if not isinstance(p, SystemPromptPart)]]),
            *messages[cut + 1:]]


def build_agent(cell: PeerCell) -> Any:
    from pydantic_ai import Agent
    from pydantic_ai.capabilities import ProcessHistory

    return Agent(function_model(cell), system_prompt=cell.domain.system_prompt,
                 tools=[pydantic_tool(cell, s) for s in cell.tools], retries=TOOL_RETRIES,
                 capabilities=[ProcessHistory(recent_turns)], name="peer:pydantic-ai")


def run_cell(cell: PeerCell) -> dict[str, Any]:
    from pydantic_ai import UsageLimits
    from pydantic_ai.exceptions import UnexpectedModelBehavior, UsageLimitExceeded

    agent = build_agent(cell)
    limits = UsageLimits(request_limit=REQUESTS_PER_MESSAGE, tool_calls_limit=TOOL_CALLS_PER_MESSAGE)
    history: list[Any] = []
    # One event loop for the conversation: run_sync's per-call loops leave the previous run's async
    # generators to be finalised on a loop that has already shut down (a ResourceWarning each turn).
    loop = asyncio.new_event_loop()

    def send(text: str) -> dict[str, Any]:
        nonlocal history
        try:
            result = loop.run_until_complete(agent.run(text, message_history=history, usage_limits=limits))
        except UsageLimitExceeded as err:
            return {"reply": "", "path": ["agent"], "stop_reason": "usage_limit", "error": str(err)}
        except UnexpectedModelBehavior as err:
            if "exceeded max retries" not in str(err):
                raise
            # The run stopped a tool that kept failing (its ``retries``): a loop stopped, no reply.
            return {"reply": "", "path": ["agent"], "stop_reason": "tool_retries", "error": str(err)[:300]}
        history = result.all_messages()
        output = result.output
        return {"reply": output if isinstance(output, str) else json.dumps(output, default=str), "path": ["agent"]}

    try:
        return cell.play(send)
    finally:
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.close()
