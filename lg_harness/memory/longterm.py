"""Long-term memory: exact facts in SQLite plus experiences in Chroma, every access scoped to a user.

``LongTermMemory`` holds both stores under one data dir (``<data_dir>/memory/facts.sqlite`` and the Chroma
folder ``<data_dir>/memory/chroma``) and shares one clock between them. The stores live in
``memory.facts`` and ``memory.experiences``; this module re-exports their public names.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from chromadb.api import ClientAPI

from lg_harness.errors import HarnessError
from lg_harness.llm.embeddings import Embedder
from lg_harness.memory.experiences import (
    Experience,
    ExperienceStore,
    MemoryAccessError,
    MemoryPolicy,
    MiniLMEmbeddingFunction,
    RetrievalWeights,
    SearchHit,
)
from lg_harness.memory.facts import Clock, Fact, FactStore
from lg_harness.memory.writer import MemoryWriter

__all__ = [
    "Clock",
    "Experience",
    "ExperienceStore",
    "Fact",
    "FactStore",
    "LongTermMemory",
    "MemoryAccessError",
    "MemoryPolicy",
    "MiniLMEmbeddingFunction",
    "RetrievalWeights",
    "SearchHit",
]


class LongTermMemory:
    """Facade over ``FactStore`` (``.facts``) and ``ExperienceStore`` (``.experiences``).

    Args:
        data_dir: harness data dir; gives the default paths of both stores.
        facts_path: SQLite file or ``":memory:"`` (overrides the data-dir default).
        chroma_path: Chroma persistent folder (overrides the data-dir default).
        chroma_client: an existing Chroma client (e.g. ``HttpClient``), used instead of a path; it is
            not closed by ``close()``.
        facts: a fact store to use instead of the SQLite one (e.g. ``memory.pg_stores.PgFactStore``).
        clock: epoch-seconds time source shared by both stores.
        weights: default retrieval weights of the experience store.
        policy: dedupe/conflict thresholds and decay constants of the experience store.
        embedder: what embeds experiences and queries (a runtime's, ``graphs.runtime``); None: the current
            one at each call.

    Raises:
        HarnessError: neither ``data_dir`` nor explicit locations for both stores were given.
    """

    def __init__(
        self,
        data_dir: str | Path | None = None,
        *,
        facts_path: str | Path | None = None,
        chroma_path: str | Path | None = None,
        chroma_client: ClientAPI | None = None,
        facts: FactStore | Any | None = None,
        collection: str | None = None,
        clock: Clock = time.time,
        weights: RetrievalWeights | None = None,
        policy: MemoryPolicy | None = None,
        embedder: Embedder | None = None,
    ) -> None:
        root = Path(data_dir) / "memory" if data_dir is not None else None
        if chroma_client is None and chroma_path is None:
            chroma_path = _under(root, "chroma", "chroma_path or chroma_client")
        if facts is None:
            where = facts_path if facts_path is not None else _under(root, "facts.sqlite", "facts_path")
            facts = FactStore(where, clock=clock)
        self.facts = facts
        try:
            extra = {"collection": collection} if collection else {}
            self.experiences = ExperienceStore(
                chroma_path, client=chroma_client, weights=weights, policy=policy, clock=clock,
                hits=self.facts, embedder=embedder, **extra
            )
        except Exception:
            self.facts.close()
            raise
        # What a message asks to keep is written after its reply, on this writer's thread (memory.writer).
        self.writer = MemoryWriter(self.facts, self.experiences)

    def recover(self) -> int:
        """Write what a process that stopped after its replies left unwritten; returns how many messages."""
        return self.writer.recover()

    def close(self) -> None:
        """Write what is pending, then close both stores (a passed-in Chroma client stays open)."""
        try:
            self.writer.close()
            self.experiences.close()
        finally:
            self.facts.close()

    def __enter__(self) -> LongTermMemory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _under(root: Path | None, name: str, what: str) -> Path:
    if root is None:
        raise HarnessError(f"LongTermMemory needs a data_dir or an explicit {what}.")
    return root / name
