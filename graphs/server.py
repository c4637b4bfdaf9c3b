"""The harness graph for the LangGraph server (``langgraph dev`` / ``langgraph up``; see ``langgraph.json``).

The server brings its own checkpointer and store, so the graph is compiled without one. Settings come
from the environment, as for the CLI: ``HARNESS_DATA_DIR`` (default ``./.harness``; the shop database
lives there), ``HARNESS_DESIGN`` (default ``harness``), ``HARNESS_MODEL`` (default ``sim``; also
``ollama:<model>``, ``openai:<model>``). An assistant may override design and model per run with
``config={"configurable": {"design": "...", "model": "..."}}``, which makes A/B runs through the server
possible. Each (design, model, data dir) is compiled once and reused.

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
from functools import lru_cache
from pathlib import Path
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.graph.state import CompiledStateGraph

from graphs.app import prepare_data_dir, shop_registry
from graphs.builder import build_graph
from graphs.design import load_design
from llm.factory import make_model
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


@lru_cache(maxsize=16)
def compiled(design: str, model: str, directory: str) -> CompiledStateGraph:
    """The graph for one (design, model, data dir), compiled without a checkpointer."""
    return build_graph(load_design(design), make_model(model), checkpointer=None, registry=shop_registry(),
                       resources={"shop": shop_for(Path(directory))})


def graph_for(config: RunnableConfig | None = None) -> CompiledStateGraph:
    """The compiled graph a run's config asks for (blocking: it may open files and load models)."""
    configurable: dict[str, Any] = (config or {}).get("configurable") or {}
    design = str(configurable.get("design") or os.environ.get("HARNESS_DESIGN") or "harness")
    model = str(configurable.get("model") or os.environ.get("HARNESS_MODEL") or "sim")
    return compiled(design, model, str(data_dir()))


async def make_graph(config: RunnableConfig) -> CompiledStateGraph:
    """Graph factory for ``langgraph.json``; the server calls it with the run's config on its event loop.

    Building touches the disk (data dir, shop database) and may load models, so it runs in a worker
    thread: ``langgraph dev`` rejects blocking calls on the event loop (blockbuster's BlockingError).
    """
    return await asyncio.to_thread(graph_for, config)
