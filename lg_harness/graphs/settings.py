"""``Settings``: where a harness keeps what it keeps, and how; one value beside its model, domain and design.

::

    from lg_harness import Harness, Settings

    with Harness("sim:clean", "helpdesk", "harness", Settings(data_dir=None)) as h:   # all in memory
        ...

``Parts`` inside it are what a caller hands over instead of letting the harness open them (the evaluation
runner's fresh backends, a fault-wrapped registry, an executor on a virtual clock). ``graphs.opening`` opens
the rest.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, get_args

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.types import Durability

from lg_harness.errors import UsageError
from lg_harness.graphs.runtime import Runtime
from lg_harness.tools.executor import Executor
from lg_harness.tools.registry import ToolRegistry

if TYPE_CHECKING:  # chromadb loads with it: only the commands that run messages open memory
    from lg_harness.memory.longterm import LongTermMemory

__all__ = ["Parts", "Settings"]


@dataclass(frozen=True)
class Parts:
    """Parts given ready-made; each one left None is opened by the harness (``graphs.opening``).

    Args:
        resources: The domain's backends by name (default: opened in the data dir, or on ``database_url``).
        checkpointer: A LangGraph saver (default: SQLite in the data dir, Postgres on ``database_url``,
            in memory without a data dir).
        memory: Long-term memory (default: the data dir's, for a design that keeps it).
        registry: The tools (default: the domain's).
        executor: Runs tool calls on ``registry`` (default: the one the design's ``executor`` knob names).
    """

    resources: dict[str, Any] | None = None
    checkpointer: BaseCheckpointSaver[Any] | None = None
    memory: LongTermMemory | None = None
    registry: ToolRegistry | None = None
    executor: Executor | None = None


@dataclass(frozen=True)
class Settings:
    """How a harness keeps its threads and runs its messages.

    Args:
        data_dir: The folder for checkpoints, transcripts, memory and the domain's data; None keeps
            everything in memory.
        database_url: ``postgresql://...``: checkpoints, transcripts, facts, audit, the handoff queue,
            per-thread leases and the domain's backends in Postgres (``graphs.storage``).
        chroma_url: Long-term memory's experiences in a Chroma server.
        durability: LangGraph's mode (``docs/reliability.md``): ``exit`` (the default) saves a message once,
            when it ends or pauses; after a crash it runs again from its start (each change still applies
            once: the change ledger holds them). ``sync`` saves every step before the next one starts (13-24%
            more CPU per message in the shop bench), so a crash resumes at the last step and any step can be
            forked; ``async`` saves each step while the next one runs (a crash can lose the last step).
        runs_messages: False opens a harness that only reads and forks threads (``harness history``,
            ``resume``): no long-term memory and none of the caches a message needs; ``send`` refuses.
        runtime: The node variants, context strategies, worker threads and embedder (``graphs.runtime``);
            default the process's.
        parts: Parts given ready-made instead of opened (``Parts``).
    """

    data_dir: str | Path | None = ".harness"
    database_url: str | None = None
    chroma_url: str | None = None
    durability: Durability = "exit"
    runs_messages: bool = True
    runtime: Runtime | None = None
    parts: Parts = field(default_factory=Parts)

    def __post_init__(self) -> None:
        if self.durability not in get_args(Durability):
            raise UsageError(f"unknown durability '{self.durability}': use one of "
                             f"{', '.join(get_args(Durability))} (sync: every step saved; exit: each message "
                             "saved when it ends)")
        if not isinstance(self.parts, Parts):  # pyright: ignore[reportUnnecessaryIsInstance] - untyped callers
            raise UsageError(f"Settings(parts=...) takes a Parts value, not {type(self.parts).__name__}: "
                             "Parts(resources=..., registry=..., executor=...)")
