"""``build_graph``: a design, a model and a checkpointer in; a compiled ``StateGraph`` out."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

import lg_harness.nodes  # noqa: F401 - registers the built-in variants
from lg_harness.core.design import ROLES, Design
from lg_harness.core.domain import Domain
from lg_harness.core.parts import is_part
from lg_harness.core.routing import guards
from lg_harness.core.routing.route import NODES, ROUTED, design_rules, router_for
from lg_harness.core.state import HarnessState
from lg_harness.errors import UsageError
from lg_harness.graphs.runtime import Runtime, default_runtime
from lg_harness.llm.embeddings import using_embedder
from lg_harness.nodes.base import Node, NodeDeps
from lg_harness.nodes.handoff import wait_for_human
from lg_harness.nodes.remember import Remember
from lg_harness.obs.tracing import TracedNode, traced_node
from lg_harness.tools.executor import Executor, ToolExecutor
from lg_harness.tools.registry import ToolRegistry


def check_design(design: Design, runtime: Runtime | None = None) -> None:
    """Fail early, listing the valid choices, when a design names a variant that does not exist (on
    ``runtime``, default the process's)."""
    runtime = runtime or default_runtime()
    if design.name.startswith("peer:"):
        raise UsageError(f"'{design.name}' is a peer framework, not a design of this harness: it runs in "
                           "harness compare and harness graph only")
    for role in design.variants:
        if role not in ROLES:
            raise UsageError(f"design '{design.name}': unknown part '{role}'; parts: {', '.join(ROLES)}")
    for role in ROLES:
        if is_part(design.part(role)):
            if role == "context":
                raise UsageError(f"design '{design.name}': context is a memory strategy: name one of "
                                 f"{', '.join(sorted(runtime.strategies))} (or register your own)")
            continue  # a variant given as an object builds its own node
        name = design.variant(role)
        valid = list(runtime.strategies) if role == "context" else list(runtime.variants.of(role))
        if name not in valid:
            raise UsageError(f"design '{design.name}': unknown {role} variant '{name}'; "
                               f"valid: {', '.join(sorted(valid))}")


def execute_step(design: Design, action: Node) -> Callable[..., Any]:
    """The action variant's ``execute``: the step that runs the calls the action step decided (and saved)."""
    execute = getattr(action, "execute", None)
    if not callable(execute):
        raise UsageError(f"design '{design.name}': the action variant '{design.variant('action')}' has no "
                         "execute(state, config) method; the graph runs the calls it decided there")
    return execute


def with_embedder(runtime: Runtime, node: Callable[[Any, RunnableConfig], Any]) -> TracedNode:
    """``node`` run with the runtime's embedder as the current one: code the node reaches that is handed no
    embedder (a domain's own classifier or tool calling ``llm.embeddings.embed``) embeds with it too."""

    def run(state: Any, config: RunnableConfig) -> Any:
        with using_embedder(runtime.embedder):
            return node(state, config)

    return run


def uncertain_first(router: Any) -> Any:
    """``router``, except that a change which may have applied before a crash (``tools.ledger``) is handed to
    a person: running it again could apply it twice, and answering as if nothing happened could lose it."""

    def route(state: Any) -> Any:
        return "handoff" if guards.uncertain_change(state) else router(state)

    route.__name__ = getattr(router, "__name__", "route")
    return route


def planned_first(router: Any) -> Any:
    """``router``, except that calls the action node decided go to ``execute`` to run."""

    def route(state: Any) -> Any:
        return "execute" if state.get("planned_calls") else router(state)

    route.__name__ = getattr(router, "__name__", "route")
    return route


def build_graph(design: Design, model: BaseChatModel, checkpointer: BaseCheckpointSaver[Any] | None = None, *,
                domain: Domain | None = None, registry: ToolRegistry | None = None,
                executor: Executor | None = None, resources: dict[str, Any] | None = None,
                runtime: Runtime | None = None) -> CompiledStateGraph[Any, Any, Any, Any]:
    """Compile the harness graph for ``design``; collaborators are passed in, never looked up globally.

    Without a ``domain`` the graph knows only its tools: every message is one open task over ``registry``.
    The registry defaults to the domain's tools. ``runtime`` (default: the process's, ``graphs.runtime``)
    gives the variants and strategies the design names, the worker threads and the embedder.
    """
    runtime = runtime or default_runtime()
    check_design(design, runtime)
    domain = domain or Domain(name="tools")
    registry = registry or domain.registry()
    resources = resources if resources is not None else {}
    if not design.knobs.long_term_memory and "memory" in resources:  # decided here, once: no memory to reach
        resources = {k: v for k, v in resources.items() if k != "memory"}
    deps = NodeDeps(model=model, registry=registry,
                    executor=executor or ToolExecutor(registry, workers=runtime.tool_workers),
                    design=design, domain=domain, resources=resources, model_calls=runtime.model_calls,
                    embedder=runtime.embedder, strategies=runtime.strategies)
    graph = StateGraph(HarnessState)
    nodes = {role: (part.build(deps) if is_part(part := design.part(role)) else runtime.variants.of(role)[part](deps))
             for role in NODES}

    def add(name: str, node: Callable[[Any, RunnableConfig], Any]) -> None:
        graph.add_node(name, traced_node(name, with_embedder(runtime, node)))

    for role, node in nodes.items():
        add(role, node)
    # Deciding a call and running it are two steps, so the decision is saved before anything runs.
    add("execute", execute_step(design, nodes["action"]))
    knobs = design.knobs
    done = END
    if "memory" in deps.resources:  # recall and remember across sessions (knob long_term_memory)
        add("remember", Remember(deps))
        graph.add_edge("remember", END)
        done = "remember"
    own = design_rules(design.rules)
    graph.add_edge(START, "intent")
    for source in ROUTED:
        router, targets = router_for(source, knobs, own)
        # Only the self-check's "done" leads on to remembering; other ends of a turn end the run.
        path_map: dict[Hashable, str] = {t: (done if t == END and source == "self_check" else t)
                                         for t in targets}
        if source == "action":  # the action rules route after the calls ran (execute); decided calls run first
            # whatever a design's own rules say, an uncertain change goes to a person
            router, path_map = uncertain_first(router), {**path_map, "handoff": "handoff"}
            graph.add_conditional_edges("execute", router, path_map)
            router, path_map = planned_first(router), {**path_map, "execute": "execute"}
        graph.add_conditional_edges(source, router, path_map)
    graph.add_edge("reply", "self_check")
    if knobs.wait_for_human:
        add("human", wait_for_human)
        graph.add_edge("handoff", "human")
        graph.add_edge("human", END)
    else:
        graph.add_edge("handoff", END)
    return graph.compile(checkpointer=checkpointer, name=f"harness:{design.name}")
