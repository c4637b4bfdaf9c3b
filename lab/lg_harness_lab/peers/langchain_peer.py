"""``peer:langchain`` and ``peer:langchain-mw``: LangChain's own ``create_agent`` over the domain's tools.

Each domain tool becomes a LangChain ``StructuredTool`` whose ``args_schema`` is the tool's own pydantic
model, so LangChain validates the model's arguments (its ``ToolNode`` hands a refused call back to the
model as an error message). Errors the backend answers with (not found, a business rule) are raised as
``ToolException`` with ``handle_tool_error=True``, the documented way to let the model read them; transport
failures (timeouts, 429, 5xx) are raised as they are, as an HTTP client raises them: without middleware
they end the agent's run, with ``ToolRetryMiddleware`` they are retried and then reported to the model.

The conversation lives in LangGraph's ``InMemorySaver`` on one thread, as the LangChain docs set up
short-term memory. With ``HumanInTheLoopMiddleware`` on the domain's handoff tool, a call to it pauses the
run for a human; no human answers in an evaluation, so the thread stays paused and later messages wait
for the human (the bot is out of them), as in an application built on that interrupt.
"""

from __future__ import annotations

from typing import Annotated, Any

from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import BaseTool, InjectedToolCallId, StructuredTool, ToolException
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.errors import GraphRecursionError
from pydantic import create_model

from lg_harness.tools.errors import classify
from lg_harness.tools.registry import ToolSpec
from lg_harness_lab.peers.recorder import PeerCell, virtual_sleep

# What the backend answered (the model can act on it), as opposed to the call not getting through.
ANSWERED = frozenset({"business", "not_found", "validation", "permanent"})

# Middleware sized for the model under test: the sim reads 4,096 tokens (its profile's window), so the
# summary starts at 3,000 tokens and old tool results are cleared past 2,000, where the LangChain docs size
# the same triggers to their models' windows. The limits match the harness's defaults per message
# (``max_rounds`` 5 plus the answer, ``turn_quota_tool_calls`` 12).
SUMMARY_TRIGGER_TOKENS = 3000
CLEAR_TRIGGER_TOKENS = 2000
MODEL_CALLS_PER_MESSAGE = 6
# LangGraph's recursion limit was 25 supersteps (12 model calls of the bare loop) until LangGraph 1.2 raised
# its default to 10,007; at that default one bare conversation whose model repeats a failing call ran for
# minutes and held 6 GB of checkpoints in its InMemorySaver. The bare row keeps the long-standing 25.
BARE_RECURSION_LIMIT = 25
TOOL_CALLS_PER_MESSAGE = 12


def langchain_tool(cell: PeerCell, spec: ToolSpec) -> BaseTool:
    """One domain tool as a LangChain tool over the cell's recorder."""
    schema = create_model(f"{spec.name}_lc_args", __base__=spec.args_model,
                          tool_call_id=(Annotated[str, InjectedToolCallId], ...))

    def run(tool_call_id: str, **kwargs: Any) -> Any:
        try:
            return cell.run_tool(spec, tool_call_id, kwargs)
        except Exception as err:
            if classify(err) in ANSWERED:
                raise ToolException(str(err)) from err
            raise

    return StructuredTool.from_function(func=run, name=spec.name, description=spec.description,
                                        args_schema=schema, handle_tool_error=True)


def middleware(cell: PeerCell) -> list[Any]:
    """The middleware LangChain's docs recommend for a production agent, in their documented order."""
    from langchain.agents.middleware import (
        ClearToolUsesEdit,
        ContextEditingMiddleware,
        HumanInTheLoopMiddleware,
        ModelCallLimitMiddleware,
        ModelRetryMiddleware,
        PIIMiddleware,
        SummarizationMiddleware,
        ToolCallLimitMiddleware,
        ToolRetryMiddleware,
    )

    stack: list[Any] = [
        PIIMiddleware("email", strategy="redact", apply_to_input=True),
        PIIMiddleware("credit_card", strategy="mask", apply_to_input=True),
        SummarizationMiddleware(model=cell.chat_model, trigger=("tokens", SUMMARY_TRIGGER_TOKENS),
                                keep=("messages", 20)),
        ContextEditingMiddleware(edits=[ClearToolUsesEdit(trigger=CLEAR_TRIGGER_TOKENS, keep=3)]),
        ModelCallLimitMiddleware(run_limit=MODEL_CALLS_PER_MESSAGE, exit_behavior="end"),
        ToolCallLimitMiddleware(run_limit=TOOL_CALLS_PER_MESSAGE, exit_behavior="continue"),
        ModelRetryMiddleware(max_retries=2),
        ToolRetryMiddleware(max_retries=2),
    ]
    if cell.handoff_tool:  # the scenario needs a human where the domain hands off
        stack.append(HumanInTheLoopMiddleware(interrupt_on={cell.handoff_tool: True}))
    return stack


def build_agent(cell: PeerCell, with_middleware: bool) -> Any:
    tools = [langchain_tool(cell, spec) for spec in cell.tools]
    return create_agent(model=cell.chat_model, tools=tools, system_prompt=cell.domain.system_prompt,
                        middleware=middleware(cell) if with_middleware else (), checkpointer=InMemorySaver(),
                        name="peer:langchain-mw" if with_middleware else "peer:langchain")


def _reply(messages: list[Any]) -> str:
    last = next((m for m in reversed(messages) if isinstance(m, AIMessage)), None)
    if last is None or last.tool_calls:
        return ""
    return last.text if isinstance(last.text, str) else str(last.content)


def run_cell(cell: PeerCell, with_middleware: bool) -> dict[str, Any]:
    from langchain.agents.middleware import model_retry, tool_retry

    agent = build_agent(cell, with_middleware)
    config: dict[str, Any] = {"configurable": {"thread_id": "eval"}}
    if not with_middleware:  # the bare loop's only bound; with middleware ModelCallLimitMiddleware bounds it
        config["recursion_limit"] = BARE_RECURSION_LIMIT

    def send(text: str) -> dict[str, Any]:
        before = agent.get_state(config)
        if before.interrupts:  # paused for a human who has not answered: the bot stays out
            return {"reply": "", "waiting": True, "handoff": True}
        path: list[str] = []
        try:
            for update in agent.stream({"messages": [HumanMessage(text)]}, config, stream_mode="updates"):
                path.extend(k for k in update if k != "__interrupt__")
        except GraphRecursionError as err:  # LangGraph stopped the loop: the user gets no reply
            return {"reply": "", "path": path, "stop_reason": "recursion_limit", "error": str(err)[:300]}
        state = agent.get_state(config)
        if state.interrupts:  # HumanInTheLoopMiddleware paused on the handoff tool: a human is asked for
            cell.hold_for_human(str(cell.handoff_tool))
            return {"reply": "", "path": path, "handoff": True}
        messages = state.values.get("messages") or []
        stopped = "model_call_limit" if with_middleware and _limit_hit(messages) else None
        return {"reply": _reply(messages), "path": path, "stop_reason": stopped}

    with virtual_sleep(cell, tool_retry, model_retry):
        return cell.play(send)


def _limit_hit(messages: list[Any]) -> bool:
    """ModelCallLimitMiddleware ends a run with its own message (``_build_limit_exceeded_message``)."""
    last = messages[-1] if messages else None
    return isinstance(last, AIMessage) and str(last.content).startswith("Model call limits exceeded")


def draw_graph(with_middleware: bool, domain: Any) -> Any:
    """The compiled agent's own LangGraph topology (drawn offline; no model is called)."""
    from lg_harness.core.domain import load_domain
    from lg_harness_lab.evals.scenario import Scenario, Turn

    scenario = Scenario(id="draw", turns=[Turn(user="hi")])
    cell = PeerCell("peer:langchain", scenario, 0, "sim:clean", load_domain(domain))
    try:
        return build_agent(cell, with_middleware).get_graph()
    finally:
        cell.close()


def run_bare(cell: PeerCell) -> dict[str, Any]:
    return run_cell(cell, with_middleware=False)


def run_middleware(cell: PeerCell) -> dict[str, Any]:
    return run_cell(cell, with_middleware=True)
