"""``peer:openai-agents``: an OpenAI Agents SDK ``Agent`` run by its ``Runner`` over our model.

The SDK talks to models through its ``Model`` interface; ours (``ChatModel``) is the SDK's own
chat-completions path without the HTTP: the run's input items become chat-completions messages with the
SDK's converter, the cell's chat model answers them (the sim with its profile and seed, or a real model),
and the assistant message goes back through the same converter into the SDK's output items, raw
arguments and all, so the SDK's own parsing and validation meet what the model wrote.

Each domain tool is a ``function_tool`` built from a function with the tool's own signature
(``peers.signature``), in the SDK's default strict mode; the SDK validates the arguments and, by its default
``failure_error_function``, tells the model about any exception a tool raised. ``Runner.run_sync`` runs each
user message with ``max_turns``; an input guardrail refuses an empty or oversized message. The conversation
goes on from ``result.to_input_list()``. Tracing is disabled for the process: nothing is exported.
"""

from __future__ import annotations

import json
from typing import Any

from langchain_core.messages import AIMessage, convert_to_messages

from lg_harness.tools.registry import ToolSpec
from lg_harness_lab.peers.recorder import PeerCell, as_json
from lg_harness_lab.peers.signature import typed_function

MAX_TURNS = 6
MAX_MESSAGE_CHARS = 4000  # the harness's own max_message_chars default


def _sdk() -> Any:
    import agents

    agents.set_tracing_disabled(True)  # the SDK would otherwise export traces to OpenAI's servers
    return agents


def to_chat_completion(reply: AIMessage) -> Any:
    """The reply as the ``ChatCompletionMessage`` an OpenAI-compatible endpoint would have sent."""
    from openai.types.chat import ChatCompletionMessage

    calls = [{"id": c.get("id") or "", "type": "function",
              "function": {"name": c["name"], "arguments": json.dumps(c.get("args") or {}, ensure_ascii=False)}}
             for c in reply.tool_calls]
    calls += [{"id": c.get("id") or "", "type": "function",
               "function": {"name": str(c.get("name") or ""), "arguments": str(c.get("args") or "")}}
              for c in reply.invalid_tool_calls]
    return ChatCompletionMessage.model_validate({"role": "assistant", "content": reply.text or None,
                                                 "tool_calls": calls or None})


def chat_model(cell: PeerCell) -> Any:
    agents = _sdk()
    from agents.models.chatcmpl_converter import Converter
    from agents.usage import Usage

    class ChatModel(agents.Model):
        """The cell's chat model behind the SDK's ``Model`` interface (no streaming: Runner.run_sync)."""

        async def get_response(self, system_instructions: str | None, input: Any, model_settings: Any,
                               tools: list[Any], output_schema: Any, handoffs: list[Any], tracing: Any,
                               **kwargs: Any) -> Any:
            messages = Converter.items_to_messages(input)
            if system_instructions:
                messages.insert(0, {"role": "system", "content": system_instructions})
            wire_tools = [Converter.tool_to_openai(t) for t in tools]
            model = cell.chat_model.bind_tools(wire_tools) if wire_tools else cell.chat_model
            reply = await model.ainvoke(convert_to_messages([dict(m) for m in messages]))
            usage = reply.usage_metadata or {}
            tokens_in, tokens_out = int(usage.get("input_tokens") or 0), int(usage.get("output_tokens") or 0)
            return agents.ModelResponse(output=Converter.message_to_output_items(to_chat_completion(reply)),
                                        usage=Usage(requests=1, input_tokens=tokens_in, output_tokens=tokens_out,
                                                    total_tokens=tokens_in + tokens_out),
                                        response_id=None)

        def stream_response(self, *args: Any, **kwargs: Any) -> Any:
            raise NotImplementedError("the peer runs with Runner.run_sync")

    return ChatModel()


def agents_tool(cell: PeerCell, spec: ToolSpec) -> Any:
    agents = _sdk()

    def body(ctx: Any, **kwargs: Any) -> Any:
        return as_json(cell.run_tool(spec, getattr(ctx, "tool_call_id", None), kwargs))

    function = typed_function(spec, body, ("ctx", agents.RunContextWrapper[Any]))
    return agents.function_tool(function, name_override=spec.name, description_override=spec.description,
                                use_docstring_info=False)


def message_guardrail() -> Any:
    agents = _sdk()

    @agents.input_guardrail
    def sane_message(ctx: Any, agent: Any, items: Any) -> Any:
        text = items if isinstance(items, str) else json.dumps(items[-1:], ensure_ascii=False, default=str)
        bad = not text.strip() or len(text) > MAX_MESSAGE_CHARS
        return agents.GuardrailFunctionOutput(output_info={"chars": len(text)}, tripwire_triggered=bad)

    return sane_message


def build_agent(cell: PeerCell) -> Any:
    agents = _sdk()
    return agents.Agent(name="peer:openai-agents", instructions=cell.domain.system_prompt, model=chat_model(cell),
                        tools=[agents_tool(cell, s) for s in cell.tools], input_guardrails=[message_guardrail()])


def run_cell(cell: PeerCell) -> dict[str, Any]:
    agents = _sdk()
    agent = build_agent(cell)
    config = agents.RunConfig(tracing_disabled=True)
    history: list[Any] = []

    def send(text: str) -> dict[str, Any]:
        nonlocal history
        items = [*history, {"role": "user", "content": text}]
        try:
            result = agents.Runner.run_sync(agent, items, max_turns=MAX_TURNS, run_config=config)
        except agents.MaxTurnsExceeded as err:
            return {"reply": "", "path": ["agent"], "stop_reason": "max_turns", "error": str(err)}
        except agents.InputGuardrailTripwireTriggered:
            return {"reply": "", "path": ["guardrail"], "stop_reason": "guardrail"}
        history = result.to_input_list()
        output = result.final_output
        return {"reply": output if isinstance(output, str) else str(output or ""), "path": ["agent"]}

    return cell.play(send)
