"""``build_graph``: a design, a model and a checkpointer in; a compiled ``StateGraph`` out."""

from __future__ import annotations

from functools import partial
from typing import Any

from langchain_core.language_models import BaseChatModel
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

import nodes  # noqa: F401 - registers the built-in variants
from graphs import guards
from graphs.design import ROLES, Design
from graphs.state import HarnessState
from memory.context import ASSEMBLERS
from nodes.base import NodeDeps, variants
from nodes.handoff import wait_for_human
from tools.errors import HarnessError
from tools.executor import ToolExecutor
from tools.registry import ToolRegistry

NODE_ROLES = ("intent", "collect", "action", "reply", "self_check", "handoff")


def check_design(design: Design) -> None:
    """Fail early, listing the valid choices, when a design names a variant that does not exist."""
    for role in design.variants:
        if role not in ROLES:
            raise HarnessError(f"design '{design.name}': unknown part '{role}'; parts: {', '.join(ROLES)}")
    for role in ROLES:
        name = design.variant(role)
        valid = list(ASSEMBLERS) if role == "context" else list(variants(role))
        if name not in valid:
            raise HarnessError(f"design '{design.name}': unknown {role} variant '{name}'; "
                               f"valid: {', '.join(sorted(valid))}")


def build_graph(design: Design, model: BaseChatModel, checkpointer: BaseCheckpointSaver | None = None, *,
                registry: ToolRegistry | None = None, executor: ToolExecutor | None = None,
                resources: dict[str, Any] | None = None) -> CompiledStateGraph:
    """Compile the harness graph for ``design``; collaborators are passed in, never looked up globally."""
    check_design(design)
    registry = registry or ToolRegistry()
    deps = NodeDeps(model=model, registry=registry, executor=executor or ToolExecutor(registry),
                    design=design, resources=resources or {})
    graph = StateGraph(HarnessState)
    for role in NODE_ROLES:
        graph.add_node(role, variants(role)[design.variant(role)](deps))
    knobs = design.knobs
    graph.add_edge(START, "intent")
    graph.add_conditional_edges("intent", partial(guards.after_intent, knobs=knobs),
                                {"collect": "collect", "reply": "reply", "handoff": "handoff"})
    graph.add_conditional_edges("collect", partial(guards.after_collect, knobs=knobs),
                                {"action": "action", END: END})
    graph.add_conditional_edges("action", partial(guards.after_action, knobs=knobs),
                                {"action": "action", "collect": "collect", "reply": "reply", "handoff": "handoff",
                                 END: END})
    graph.add_edge("reply", "self_check")
    graph.add_conditional_edges("self_check", partial(guards.after_self_check, knobs=knobs),
                                {"reply": "reply", "handoff": "handoff", END: END})
    if knobs.wait_for_human:
        graph.add_node("human", wait_for_human)
        graph.add_edge("handoff", "human")
        graph.add_edge("human", END)
    else:
        graph.add_edge("handoff", END)
    return graph.compile(checkpointer=checkpointer, name=f"harness:{design.name}")
