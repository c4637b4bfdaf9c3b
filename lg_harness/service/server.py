"""The harness graph for the LangGraph server (``langgraph dev`` / ``langgraph up``; see ``langgraph.json``).

The server brings its own checkpointer and store, so the graph is compiled without one. Settings come
from the environment, as for the CLI: ``HARNESS_DATA_DIR`` (default ``./.harness``; the domain's databases
live there), ``HARNESS_DOMAIN`` (default ``shop``), ``HARNESS_DESIGN`` (default ``harness``), ``HARNESS_MODEL`` (default ``sim``; also
``ollama:<model>``, ``openai:<model>``). An assistant or a run may pick another preset design with
``config={"configurable": {"design": "<preset>"}}`` (presets only: a client never names a file on the
server), which makes A/B runs through the server possible. Each (design, model, data dir) is compiled
once and reused.

Input of a run: ``{"messages": [{"role": "user", "content": "..."}], "user": {"id": "U001", "role":
"customer"}}``. A handoff ends the run interrupted at node ``human``; resume it with
``Command(resume={"text": "<the human's answer>"})``.

Thread owners are checked by LangGraph's own auth hook (``lg_harness/service/server_auth.py``, ``langgraph.json``'s
``auth``): callers send ``Authorization: Bearer <key>`` with keys from ``HARNESS_API_KEYS``, read and run only
their own threads, and a run acts for its caller. What the ``Harness`` service adds around the graph is not
here: message cleaning and length checks, per-thread ordering, the transcript store, and marking a handoff
answered in the harness's handoff queue. The change ledger is here: the data dir's ``ledger.sqlite``.
"""

from __future__ import annotations

import asyncio
import os
import threading
from pathlib import Path
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.graph.state import CompiledStateGraph

from lg_harness.core.design import PRESETS, load_design
from lg_harness.core.domain import Domain, default_domain, load_domain
from lg_harness.errors import HarnessError
from lg_harness.graphs.builder import build_graph
from lg_harness.graphs.opening import prepare_data_dir
from lg_harness.llm.factory import make_model
from lg_harness.tools.backend import BackendPlace
from lg_harness.tools.ledger import LEDGER_RESOURCE, SqliteLedger

os.environ.setdefault("HF_HUB_OFFLINE", "1")

_backends: dict[tuple[str, Path], dict[str, Any]] = {}
_backends_lock = threading.Lock()


def data_dir() -> Path:
    return prepare_data_dir(os.environ.get("HARNESS_DATA_DIR") or ".harness").resolve()


def backends_for(domain: Domain, path: Path) -> dict[str, Any]:
    """The domain's backends in one data dir, opened once for the server's lifetime."""
    with _backends_lock:
        key = (domain.name, path)
        if key not in _backends:
            opener = domain.open_resources
            place = BackendPlace(lambda name: str(path / name), os.environ.get("HARNESS_DATABASE_URL"))
            _backends[key] = dict(opener(place)) if opener else {}
            # changing calls are recorded before they run and settled after, as under the Harness
            _backends[key][LEDGER_RESOURCE] = SqliteLedger(path / "ledger.sqlite")
        return _backends[key]


_graphs: dict[tuple[str, str, str, str], CompiledStateGraph] = {}
_graphs_lock = threading.Lock()


def compiled(design: str, model: str, directory: str, domain: str = "shop") -> CompiledStateGraph:
    """The graph for one (design, model, data dir, domain), compiled once, without a checkpointer."""
    key = (design, model, directory, domain)
    with _graphs_lock:  # the server asks from several threads at once; build each graph only once
        if key not in _graphs:
            pack = load_domain(domain)
            _graphs[key] = build_graph(load_design(design), make_model(model, domain=pack), checkpointer=None,
                                       domain=pack, resources=backends_for(pack, Path(directory)))
        return _graphs[key]


def graph_for(config: RunnableConfig | None = None) -> CompiledStateGraph:
    """The compiled graph a run's config asks for (blocking: it may open files and load models)."""
    configurable: dict[str, Any] = (config or {}).get("configurable") or {}
    design = os.environ.get("HARNESS_DESIGN") or "harness"
    if (asked := configurable.get("design")) is not None:
        if str(asked) not in PRESETS:
            raise HarnessError(f"unknown design '{asked}'; presets: {', '.join(PRESETS)}")
        design = str(asked)
    model = os.environ.get("HARNESS_MODEL") or "sim"
    return compiled(design, model, str(data_dir()), os.environ.get("HARNESS_DOMAIN") or default_domain()[0])


async def make_graph(config: RunnableConfig) -> CompiledStateGraph:
    """Graph factory for ``langgraph.json``; the server calls it with the run's config on its event loop.

    Building touches the disk (data dir, shop database) and may load models, so it runs in a worker
    thread: ``langgraph dev`` rejects blocking calls on the event loop (blockbuster's BlockingError).
    """
    return await asyncio.to_thread(graph_for, config)


def reset() -> None:
    """Forget the compiled graphs and close the shop databases (for tests and embedding in other servers)."""
    with _graphs_lock:
        _graphs.clear()
    with _backends_lock:
        for opened in _backends.values():
            for backend in opened.values():
                if callable(getattr(backend, "close", None)):
                    backend.close()
        _backends.clear()
