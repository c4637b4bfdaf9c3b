"""Real peer frameworks as rows of ``harness compare``: ``peer:langchain``, ``peer:langchain-mw``,
``peer:pydantic-ai`` and ``peer:openai-agents``.

Each peer runs its framework's own agent loop over the domain's tools (as that framework's tool type),
the same model spec, the same tool faults and the same virtual clock as our designs' cells, and writes
the same run records through one recorder (``peers.recorder``), so ``evals.metrics`` scores both alike.
A peer is named like a design and travels through ``harness compare`` as a ``Design`` value that carries
only its name and description (which pins the framework version into the cell's fingerprint); our graph
refuses to build it (``graphs.builder.check_design``).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from lg_harness.errors import HarnessError

PREFIX = "peer:"


@dataclass(frozen=True)
class Peer:
    """One peer row: which framework runs it, what it is given, and what it lacks for our scenarios."""

    name: str
    framework: str  # the distribution whose version the row pins
    runner: str  # module:function(cell) -> run record
    summary: str
    features: tuple[str, ...]
    lacks: tuple[str, ...]
    extra: str = "peers"  # the optional dependency group that installs the framework

    @property
    def version(self) -> str | None:
        try:
            return version(self.framework)
        except PackageNotFoundError:
            return None

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "framework": self.framework, "version": self.version, "summary": self.summary,
                "features": list(self.features), "lacks": list(self.lacks)}


_COMMON_LACKS = (
    "role masking: every tool is offered to every user (the tools' own ownership and role checks still apply)",
    "identifier checks: an invented or drifted id reaches the backend",
    "identical-call interception: a model that repeats a failing call loops until the run's limit",
)

PEERS: dict[str, Peer] = {p.name: p for p in (
    Peer("peer:langchain", "langchain", "lg_harness_lab.peers.langchain_peer:run_bare",
         "LangChain create_agent, no middleware: one ReAct loop over every tool, full history in an "
         "InMemorySaver thread",
         ("create_agent ReAct loop", "StructuredTool args_schema validation (errors back to the model)",
          "ToolException for backend answers (handle_tool_error)", "InMemorySaver thread memory"),
         (*_COMMON_LACKS, "tool-failure handling: a timeout, 429 or 5xx ends the run with no reply",
          "human handoff: the handoff tool is a plain tool; the bot keeps answering after it",
          "call limits and context trimming")),
    Peer("peer:langchain-mw", "langchain", "lg_harness_lab.peers.langchain_peer:run_middleware",
         "LangChain create_agent with PII, Summarization, ContextEditing(ClearToolUsesEdit), ModelCallLimit, "
         "ToolCallLimit, ModelRetry, ToolRetry and HumanInTheLoop on the handoff tool",
         ("create_agent ReAct loop", "StructuredTool args_schema validation",
          "PIIMiddleware (email redact, credit card mask)", "SummarizationMiddleware at 3,000 tokens",
          "ContextEditingMiddleware(ClearToolUsesEdit) at 2,000 tokens", "ModelCallLimitMiddleware 6 per message",
          "ToolCallLimitMiddleware 12 per message", "ModelRetryMiddleware, ToolRetryMiddleware (2 retries, backoff)",
          "HumanInTheLoopMiddleware on the handoff tool: the thread waits for a human"),
         (*_COMMON_LACKS, "Retry-After: ToolRetryMiddleware backs off 1 s, 2 s whatever a 429 asks")),
    Peer("peer:pydantic-ai", "pydantic-ai-slim", "lg_harness_lab.peers.pydantic_ai_peer:run_cell",
         "Pydantic AI Agent over our model through FunctionModel, with UsageLimits, tool retries (ModelRetry) "
         "and a history processor keeping the recent messages",
         ("Agent run loop", "tool signature validation (RetryPromptPart back to the model)",
          "ModelRetry for tool failures, retries=3", "UsageLimits: 6 requests, 12 tool calls per message",
          "history processor (ProcessHistory): the last 6 user turns", "message_history across turns"),
         (*_COMMON_LACKS, "human handoff: no pause for a human; the bot keeps answering after the handoff tool",
          "model retries: a model timeout ends the run",
          "backoff: a failed tool is retried at once by the model, no wait")),
    Peer("peer:openai-agents", "openai-agents", "lg_harness_lab.peers.openai_agents_peer:run_cell",
         "OpenAI Agents SDK Agent run by Runner (max_turns, an input guardrail) over our model through a "
         "custom Model, tracing off",
         ("Runner loop with max_turns=6", "function_tool strict schema validation",
          "failure_error_function: tool errors back to the model", "input guardrail (empty or oversized message)",
          "to_input_list history across turns"),
         (*_COMMON_LACKS, "human handoff: SDK handoffs go to other agents, not to a person; the bot keeps "
          "answering after the handoff tool", "tool retries: none beyond the model trying again",
          "model retries: a model timeout ends the run")),
)}


def is_peer(name: str) -> bool:
    return str(name).startswith(PREFIX)


def get_peer(name: str) -> Peer:
    peer = PEERS.get(str(name))
    if peer is None:
        raise HarnessError(f"unknown peer '{name}'; peers: {', '.join(PEERS)}")
    if peer.version is None:
        raise HarnessError(f"{name} needs {peer.framework}: install the '{peer.extra}' extra "
                           f"(pip install -e './lab[{peer.extra}]', or bash scripts/setup.sh --dev)")
    return peer


def described() -> list[dict[str, Any]]:
    """Every peer as ``harness designs`` lists it (the ``lg_harness.design_lists`` entry point)."""
    return [p.describe() for p in PEERS.values()]


def peer_design(name: str) -> Any:
    """The ``Design`` value a peer travels as through ``harness compare``: its name and what it is."""
    from lg_harness.core.design import Design

    peer = get_peer(name)
    return Design(name=peer.name, description=f"{peer.framework} {peer.version}: {peer.summary}")


def run_peer_cell(name: str, scenario: Any, seed: int, model: str = "sim", domain: Any = None) -> dict[str, Any]:
    """One scenario x seed through the peer's framework; the run record ``evals.metrics`` reads."""
    from lg_harness_lab.peers.recorder import PeerCell

    peer = get_peer(name)
    module, _, attr = peer.runner.partition(":")
    cell = PeerCell(peer.name, scenario, seed, model, domain)
    return getattr(importlib.import_module(module), attr)(cell)


__all__ = ["PEERS", "PREFIX", "Peer", "get_peer", "is_peer", "peer_design", "run_peer_cell"]
