"""``Runtime``: what harnesses share in a process, owned by an object instead of by module globals.

A runtime holds the node variants and context strategies designs can name, the threads that run model
calls and tool attempts under their deadlines, and the embedder with its memo of vectors. Every graph built
on one runtime shares them; two runtimes share nothing, so a test, a notebook or a server can keep its own
variants and caches apart from everyone else's::

    from lg_harness import Harness, Runtime, Settings

    runtime = Runtime()

    @runtime.variants.register("reply", "survey")
    class SurveyReply: ...

    with Harness("sim", "shop", my_design, Settings(data_dir=None, runtime=runtime)) as h:  # reply: survey
        ...

A ``Harness`` or ``build_graph`` given no runtime uses the process's default one, made on first use;
``set_default_runtime`` replaces it, and ``register_variant`` / ``register_strategy`` add to it. Nothing
else is process-wide: importing a module registers only the library's own variants, in tables each new
runtime copies.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from lg_harness.llm.embeddings import Embedder, default_embedder, set_default_embedder
from lg_harness.memory.assembly import WORKING_STRATEGIES, StrategyRegistry, WorkingStrategy
from lg_harness.nodes.base import BUILTIN_VARIANTS, F, ModelCalls, VariantRegistry
from lg_harness.tools.executor import DeadlineWorkers

__all__ = ["Runtime", "default_runtime", "register_strategy", "register_variant", "set_default_runtime"]


class Runtime:
    """Node variants, context strategies, worker threads and the embedder of the graphs built on it.

    Args:
        embedder: The embedder (default: a new ``Embedder`` for ``HARNESS_EMBED_MODEL`` or the bundled
            MiniLM, loaded when a harness that needs it opens).
        model_workers: Threads for model calls (a call past its deadline keeps its thread until it returns).
        tool_idle_exit_s: Seconds an idle tool worker waits for work before it leaves.

    Attributes:
        variants: Node variants by role and name: the built-in ones, plus those registered here.
        strategies: Working-layer strategies by name (a design's ``context`` variant), likewise.
        embedder: Embeds messages, intent examples, tool descriptions and long-term memory.
        model_calls: The threads model calls run on.
        tool_workers: The threads tool attempts with a deadline run on.
    """

    def __init__(self, *, embedder: Embedder | None = None, model_workers: int = 16,
                 tool_idle_exit_s: float = 60.0) -> None:
        self.variants: VariantRegistry = BUILTIN_VARIANTS.copy()
        self.strategies: StrategyRegistry = WORKING_STRATEGIES.copy()
        self.embedder = embedder or Embedder()
        self.model_calls = ModelCalls(model_workers)
        self.tool_workers = DeadlineWorkers(idle_exit_s=tool_idle_exit_s)

    def close(self) -> None:
        """Stop the model-call threads once their calls return (idle tool workers leave by themselves)."""
        self.model_calls.close()

    def __enter__(self) -> Runtime:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_default: Runtime | None = None
_default_lock = threading.Lock()


def default_runtime() -> Runtime:
    """The process's default runtime: made on first use, or the one ``set_default_runtime`` installed."""
    global _default
    with _default_lock:
        if _default is None:
            # the embedder code outside a message already used (``llm.embeddings.embed``), memo and all
            _default = Runtime(embedder=default_embedder())
        return _default


def set_default_runtime(runtime: Runtime | None) -> None:
    """Install ``runtime`` as the process default (None: a new one is made on next use). Its embedder becomes
    the one ``llm.embeddings.embed`` uses outside any harness's message."""
    global _default
    with _default_lock:
        _default = runtime
        set_default_embedder(runtime.embedder if runtime is not None else None)


def register_variant(role: str, name: str) -> Callable[[F], F]:
    """Class decorator: make ``name`` selectable for ``role`` on the default runtime (for a runtime of your
    own: ``runtime.variants.register(role, name)``)."""
    return default_runtime().variants.register(role, name)


def register_strategy(name: str, strategy: WorkingStrategy) -> WorkingStrategy:
    """Make ``name`` selectable as a design's ``context`` variant on the default runtime (for a runtime of
    your own: ``runtime.strategies.register(name, strategy)``)."""
    return default_runtime().strategies.register(name, strategy)
