"""Opening a harness's parts: its data dir, the domain's backends, the stores, long-term memory, the caches a
message needs, the tools and the graph, in that order, on the runtime's shared parts.

``Harness`` asks for them here and holds the result; a part given in ``Settings.parts`` is taken as it is
and left to its owner to close. If a step fails, what the steps before it opened is closed again before
the error goes up, so a failed open leaves no file or connection behind.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel

from lg_harness.core.design import Design
from lg_harness.core.domain import Domain
from lg_harness.errors import UsageError
from lg_harness.graphs.builder import build_graph
from lg_harness.graphs.runtime import Runtime
from lg_harness.graphs.settings import Settings
from lg_harness.graphs.storage import Stores, open_stores
from lg_harness.graphs.storage_faults import prove_writable
from lg_harness.graphs.warm import warm_caches
from lg_harness.memory.hooks import UnopenedMemory
from lg_harness.tools.backend import BackendPlace
from lg_harness.tools.executor import Executor, RetryPolicy, ToolExecutor
from lg_harness.tools.ledger import LEDGER_RESOURCE
from lg_harness.tools.registry import ToolRegistry

__all__ = ["Opened", "executor_for", "open_parts", "prepare_data_dir"]


def prepare_data_dir(path: str | Path) -> Path:
    """Create the data dir if needed and prove it is writable, with an error that says what to do."""
    data_dir = Path(path).expanduser()
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
        prove_writable(data_dir)
    except OSError as err:
        raise UsageError(f"data dir {data_dir} is not usable ({err.strerror or err}); "
                         "pass --data-dir or set HARNESS_DATA_DIR to a writable folder") from err
    return data_dir


def executor_for(design: Design, registry: ToolRegistry, **options: Any) -> Executor:
    """The executor the design names: classified retries (default), a heavyweight framework's, or raw.
    ``options``: the executor's keyword arguments (``sleep``, ``clock``, ``workers``)."""
    kind = design.knobs.executor
    if kind == "framework":
        from lg_harness.tools.framework_executor import FrameworkExecutor

        return FrameworkExecutor(registry, **options)
    if kind == "raw":
        return ToolExecutor(registry, RetryPolicy(backoff=(), rate_limit_retries=0), **options)
    return ToolExecutor(registry, **options)


def graph_resources(resources: Mapping[str, Any], stores: Stores, memory: Any, *, runs_messages: bool,
                    long_term_memory: bool) -> dict[str, Any]:
    """What the graph's nodes reach besides the domain's backends: memory, audit, fences and the ledger."""
    out = dict(resources)
    if memory is not None:
        out["memory"] = memory
    elif not runs_messages and long_term_memory:
        out["memory"] = UnopenedMemory()  # the same steps as the graph that wrote the thread
    if stores.audit is not None:
        out["audit"] = stores.audit
    if (fences := getattr(stores, "fences", None)) is not None:
        out["commit_guard"] = fences.domain_guard()
    if stores.ledger is not None:
        out[LEDGER_RESOURCE] = stores.ledger
    return out


@dataclass
class Opened:
    """What one harness opened (or was given); ``close`` closes what it opened, newest first."""

    data_dir: Path | None
    resources: dict[str, Any]
    stores: Stores
    checkpointer: Any
    memory: Any
    registry: ToolRegistry
    graph: Any  # the compiled StateGraph
    owned: list[Any]

    def close(self) -> None:
        for part in reversed(self.owned):
            part.close()
        self.owned.clear()


def open_parts(model: BaseChatModel, domain: Domain, design: Design, settings: Settings,
               runtime: Runtime) -> Opened:
    """Open every part of a harness (the module doc); the caller closes the result."""
    owned: list[Any] = []
    try:
        return _open(model, domain, design, settings, runtime, owned)
    except BaseException:
        for part in reversed(owned):
            part.close()
        raise


def _open(model: BaseChatModel, domain: Domain, design: Design, settings: Settings, runtime: Runtime,
          owned: list[Any]) -> Opened:
    given = settings.parts
    data_dir = prepare_data_dir(settings.data_dir) if settings.data_dir is not None else None
    resources = dict(given.resources) if given.resources is not None else _open_backends(
        domain, data_dir, settings.database_url, owned)
    stores = open_stores(data_dir, settings.database_url, settings.chroma_url)
    owned.append(stores)
    memory = given.memory
    long_term = design.knobs.long_term_memory
    if memory is None and long_term and settings.runs_messages:
        memory = stores.memory(runtime.embedder)
        if memory is not None:
            owned.append(memory)
            memory.recover()  # what a process that stopped after its replies left unwritten
    if settings.runs_messages:
        warm_caches(design, domain, data_dir, memory, runtime.embedder, runtime.variants)
        if stores.audit is not None:
            stores.audit.warm()
    registry = given.registry or domain.registry()
    checkpointer: Any = given.checkpointer or stores.checkpointer
    graph = build_graph(design, model, checkpointer, domain=domain, registry=registry, runtime=runtime,
                        resources=graph_resources(resources, stores, memory, runs_messages=settings.runs_messages,
                                                  long_term_memory=long_term),
                        executor=given.executor or executor_for(design, registry, workers=runtime.tool_workers))
    return Opened(data_dir, resources, stores, checkpointer, memory, registry, graph, owned)


def _open_backends(domain: Domain, data_dir: Path | None, database_url: str | None,
                   owned: list[Any]) -> dict[str, Any]:
    """The domain's backends: on the harness's Postgres with a database URL, else in the data dir (in memory
    without one); closed with the harness."""
    def path(name: str) -> str:
        return str(data_dir / name) if data_dir is not None else ":memory:"

    opened = domain.open_resources(BackendPlace(path, database_url)) if domain.open_resources else {}
    owned.extend(backend for backend in opened.values() if callable(getattr(backend, "close", None)))
    return dict(opened)
