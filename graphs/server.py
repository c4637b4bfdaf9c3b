"""The harness graph for the LangGraph server (``langgraph dev`` / ``langgraph up``; see ``langgraph.json``).

The server brings its own checkpointer and store, so the graph is compiled without one. Settings come
from the environment, as for the CLI: ``HARNESS_DATA_DIR`` (default ``./.harness``; the shop database
lives there), ``HARNESS_DESIGN`` (default ``harness``), ``HARNESS_MODEL`` (default ``sim``; also
``ollama:<model>``, ``openai:<model>``). An assistant or a run may pick another preset design with
``config={"configurable": {"design": "<preset>"}}`` (presets only: a client never names a file on the
server), which makes A/B runs through the server possible. Each (design, model, data dir) is compiled
once and reused.

Input of a run: ``{"messages": [{"role": "user", "content": "..."}], "user": {"id": "U001", "role":
"customer"}}``. A handoff ends the run interrupted at node ``human``; resume it with
``Command(resume={"text": "<the human's answer>"})``.

What the ``Harness`` service adds around the graph is not here: message cleaning and length checks, thread
ownership, per-thread ordering, the transcript store, and marking a handoff answered in the shop database.
"""

from __future__ import annotations

import asyncio
import os
import threading
from pathlib import Path
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.graph.state import CompiledStateGraph

from graphs.app import prepare_data_dir, shop_registry
from graphs.builder import build_graph
from graphs.design import PRESETS, load_design
from llm.factory import make_model
from tools.errors import HarnessError
from tools.shop import ShopDB

os.environ.setdefault("HF_HUB_OFFLINE", "1")

_shops: dict[Path, ShopDB] = {}
_shops_lock = threading.Lock()


def data_dir() -> Path:
    return prepare_data_dir(os.environ.get("HARNESS_DATA_DIR") or ".harness").resolve()


def shop_for(path: Path) -> ShopDB:
    """One open shop database per data dir for the server's lifetime (ShopDB serialises its own access)."""
    with _shops_lock:
        if path not in _shops:
            _shops[path] = ShopDB.open(path / "shop.sqlite")
        return _shops[path]


_graphs: dict[tuple[str, str, str], CompiledStateGraph] = {}
_graphs_lock = threading.Lock()


def compiled(design: str, model: str, directory: str) -> CompiledStateGraph:
    """The graph for one (design, model, data dir), compiled once, without a checkpointer."""
    key = (design, model, directory)
    with _graphs_lock:  # the server asks from several threads at once; build each graph only once
        if key not in _graphs:
            _graphs[key] = build_graph(load_design(design), make_model(model), checkpointer=None,
                                       registry=shop_registry(), resources={"shop": shop_for(Path(directory))})
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
    return compiled(design, model, str(data_dir()))


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
    with _shops_lock:
        for shop in _shops.values():
            shop.close()
        _shops.clear()
