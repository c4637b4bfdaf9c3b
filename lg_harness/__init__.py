"""lg-harness: an agent harness as a LangGraph graph.

The public surface, in one namespace::

    from lg_harness import Harness, Settings

    with Harness("sim:clean", "helpdesk", "harness", Settings(data_dir=".harness")) as h:
        result: SendResult = h.send("t1", "What is the status of INC0012346?", "E1001")

The library's layers are its subpackages (``core``, ``graphs``, ``nodes``, ``memory``, ``tools``, ``llm``,
``obs``, ``domains``, ``service``); the evaluation lab is a distribution of its own (``lg_harness_lab``).
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from lg_harness.errors import HarnessError, RunError, UsageError

if TYPE_CHECKING:  # what a type checker sees; at run time each name is imported on first use (below)
    from lg_harness.core.design import Design, Knobs, load_design
    from lg_harness.core.domain import Domain, Handoff, Intent, Route, load_domain
    from lg_harness.graphs.app import Harness
    from lg_harness.graphs.builder import build_graph
    from lg_harness.graphs.result import SendResult
    from lg_harness.graphs.runtime import (
        Runtime,
        default_runtime,
        register_strategy,
        register_variant,
        set_default_runtime,
    )
    from lg_harness.graphs.settings import Parts, Settings
    from lg_harness.llm.factory import make_model
    from lg_harness.memory.assembly import WorkingStrategy
    from lg_harness.nodes.base import NodeDeps
    from lg_harness.tools.context import ToolContext
    from lg_harness.tools.entities import Entity, EntityType
    from lg_harness.tools.registry import ToolRegistry

# name -> module that defines it; imported on first use so `import lg_harness` stays light.
_EXPORTS = {
    "Harness": "lg_harness.graphs.app",
    "SendResult": "lg_harness.graphs.result",
    "Settings": "lg_harness.graphs.settings",
    "Parts": "lg_harness.graphs.settings",
    "build_graph": "lg_harness.graphs.builder",
    "Design": "lg_harness.core.design",
    "Knobs": "lg_harness.core.design",
    "load_design": "lg_harness.core.design",
    "Domain": "lg_harness.core.domain",
    "Intent": "lg_harness.core.domain",
    "Route": "lg_harness.core.domain",
    "Handoff": "lg_harness.core.domain",
    "load_domain": "lg_harness.core.domain",
    "Runtime": "lg_harness.graphs.runtime",
    "default_runtime": "lg_harness.graphs.runtime",
    "set_default_runtime": "lg_harness.graphs.runtime",
    "register_variant": "lg_harness.graphs.runtime",
    "NodeDeps": "lg_harness.nodes.base",
    "register_strategy": "lg_harness.graphs.runtime",
    "WorkingStrategy": "lg_harness.memory.assembly",
    "ToolRegistry": "lg_harness.tools.registry",
    "ToolContext": "lg_harness.tools.context",
    "Entity": "lg_harness.tools.entities",
    "EntityType": "lg_harness.tools.entities",
    "make_model": "lg_harness.llm.factory",
}

__all__ = [  # a literal list, so type checkers and linters read the exports without running this file
    "HarnessError", "UsageError", "RunError",
    "Harness", "Settings", "Parts", "SendResult", "build_graph", "Design", "Knobs", "load_design", "Domain",
    "Intent", "Route", "Handoff", "load_domain", "register_variant", "NodeDeps", "register_strategy", "WorkingStrategy",
    "Runtime", "default_runtime", "set_default_runtime",
    "ToolRegistry", "ToolContext", "Entity", "EntityType", "make_model",
]


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'lg_harness' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
