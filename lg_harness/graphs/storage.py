"""Where a harness keeps its state: embedded files (the default) or a Postgres database and a Chroma server.

One setting picks the backend. Without a database URL everything lives in the data dir: SQLite checkpoints,
transcripts, the audit log, the change ledger, facts, an embedded Chroma, and per-thread order through ``graphs.ordering``
(one machine). With ``HARNESS_DATABASE_URL=postgresql://...`` (or ``--database-url``) checkpoints go to
LangGraph's ``PostgresSaver`` on a psycopg pool, and transcripts, facts, the audit log, the change ledger, the handoff queue
and per-thread leases to tables beside them, migrated on start (``service.postgres``, the opener registered
for the scheme in the ``lg_harness.stores`` entry points). Long-term experiences then
go to a Chroma server (``HARNESS_CHROMA_URL=http://host:port``): several writer processes are not safe on one
embedded Chroma folder, and the Postgres alternative (pgvector) is an extension Debian's PostgreSQL 15 does
not ship, so a Chroma server keeps the same store, embedder and ranking with nothing to compile.
Without a Chroma URL on Postgres, the experiences stay in the data dir's embedded Chroma, which is right for
one worker only.

The domain's own backends (the shop and helpdesk databases) follow the same setting: in the data dir without
a database URL, in a schema of their own on the same Postgres with one (``tools.backend.SeededDB.open_at``),
so workers on several machines share them too.
"""

from __future__ import annotations

import os
import sqlite3
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from lg_harness.errors import HarnessError
from lg_harness.graphs.ordering import ThreadOrder
from lg_harness.graphs.storage_faults import check_checkpoint_store

DATABASE_ENV = "HARNESS_DATABASE_URL"
CHROMA_ENV = "HARNESS_CHROMA_URL"
LEASE_TTL_ENV = "HARNESS_LEASE_TTL"
STORES_GROUP = "lg_harness.stores"  # entry points: a database URL's scheme -> its opener (pyproject.toml)


def settings_from_env(database_url: str | None = None, chroma_url: str | None = None) -> tuple[str | None, str | None]:
    """The database and Chroma URLs: as given, else from the environment, else None (embedded)."""
    return (database_url or os.environ.get(DATABASE_ENV) or None, chroma_url or os.environ.get(CHROMA_ENV) or None)


def chroma_client(url: str) -> Any:
    """A ``chromadb.HttpClient`` for ``http://host:port``, checked with a heartbeat."""
    import chromadb
    from chromadb.config import Settings

    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise HarnessError(f"HARNESS_CHROMA_URL must look like http://127.0.0.1:8765, got '{url}'")
    try:
        client = chromadb.HttpClient(host=parts.hostname, port=parts.port or (443 if parts.scheme == "https" else 80),
                                     ssl=parts.scheme == "https", settings=Settings(anonymized_telemetry=False))
        client.heartbeat()
    except Exception as err:  # noqa: BLE001 - connection errors come in many types; say what to do
        raise HarnessError(f"cannot reach the Chroma server at {url} ({err}); start it with: "
                           "chroma run --path DIR --port 8765") from err
    return client


class Stores:
    """The opened stores of one harness; ``close`` releases what this object opened."""

    def __init__(self) -> None:
        self.backend = "embedded"
        self.checkpointer: Any = None
        self.transcripts: Any = None
        self.audit: Any = None
        self.order: Any = None
        self.ledger: Any = None  # tools.ledger: state-changing calls, pending before they run, settled after
        self.queue: Any = None
        self.fences: Any = None  # service.fencing.Fences on Postgres
        self.pool: Any = None
        self._facts: Any = None
        self._chroma: Any = None
        self._data_dir: Path | None = None
        self._owned: list[Any] = []

    def memory(self, embedder: Any = None) -> Any:
        """The long-term memory (facts and experiences) on this backend, or None without anywhere to keep it;
        the caller closes it. ``embedder``: the runtime's (``graphs.runtime``)."""
        from lg_harness.memory.facts import FactStore
        from lg_harness.memory.longterm import LongTermMemory

        if self._chroma is not None:
            if self._facts is not None:
                facts = self._facts
            elif self._data_dir is not None:
                facts = FactStore(self._data_dir / "memory" / "facts.sqlite")
            else:
                return None
            return LongTermMemory(facts=facts, chroma_client=self._chroma, embedder=embedder)
        if self._data_dir is None:
            return None
        return LongTermMemory(self._data_dir, facts=self._facts, embedder=embedder)

    def close(self) -> None:
        for resource in reversed(self._owned):
            resource.close()
        self._owned.clear()

    def __enter__(self) -> Stores:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_stores(data_dir: Path | None, database_url: str | None = None, chroma_url: str | None = None,
                *, lease_ttl: float | None = None) -> Stores:
    """Open every store a harness needs on the backend the URLs pick (embedded when both are None).

    ``lease_ttl`` (default ``HARNESS_LEASE_TTL``, else 30 s) is how long a thread stays leased to a process
    that died in the middle of a message, the CLI's as much as a served worker's."""
    lease_ttl = float(lease_ttl or os.environ.get(LEASE_TTL_ENV) or 30.0)
    from lg_harness.memory.transcript import TranscriptStore
    from lg_harness.obs.audit import AuditLog
    from lg_harness.tools.ledger import SqliteLedger

    stores = Stores()
    stores._data_dir = data_dir
    try:
        if chroma_url:
            stores._chroma = chroma_client(chroma_url)
        if database_url:
            open_database(stores, database_url, lease_ttl)
            return stores
        path = (lambda name: str(data_dir / name)) if data_dir is not None else (lambda name: ":memory:")
        stores.checkpointer = sqlite_checkpointer(stores, data_dir)
        stores.transcripts = own(stores, TranscriptStore(path("transcripts.sqlite")))
        stores.audit = own(stores, AuditLog.in_dir(data_dir)) if data_dir is not None else None
        stores.ledger = own(stores, SqliteLedger(path("ledger.sqlite")))
        stores.order = ThreadOrder(data_dir / "locks" if data_dir else None)
        return stores
    except BaseException:
        stores.close()
        raise


def open_thread_stores(data_dir: Path, database_url: str | None = None) -> Stores:
    """Only what reading threads needs, the checkpoints and the transcripts (``harness history``); on
    Postgres every store, as ``open_stores`` opens them."""
    if database_url:
        return open_stores(data_dir, database_url)
    from lg_harness.memory.transcript import TranscriptStore

    stores = Stores()
    stores._data_dir = data_dir
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
        stores.checkpointer = sqlite_checkpointer(stores, data_dir)
        stores.transcripts = own(stores, TranscriptStore(str(data_dir / "transcripts.sqlite")))
        return stores
    except BaseException:
        stores.close()
        raise


def own(stores: Stores, resource: Any) -> Any:
    """``resource``, which ``stores.close()`` closes (a store backend's opener hands over what it opens)."""
    stores._owned.append(resource)
    return resource


def sqlite_checkpointer(stores: Stores, data_dir: Path | None) -> Any:
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.checkpoint.sqlite import SqliteSaver

    if data_dir is None:
        return InMemorySaver()
    check_checkpoint_store(data_dir)
    try:
        conn = own(stores, sqlite3.connect(str(data_dir / "checkpoints.sqlite"), check_same_thread=False, timeout=30))
        saver = SqliteSaver(conn)
        saver.setup()
        # A commit waits for no disk flush (the data dir's transcripts, audit log and facts do the same): the
        # write-ahead log survives a crashed or killed process, and only a power loss can take the newest
        # commits, which recovery treats as a crash mid-message. Nine commits a message, each waiting for the
        # disk, were most of a message's wall time on a busy machine. The change ledger keeps full sync: a
        # change it recorded as started must survive anything, or a replay could apply it twice.
        conn.execute("PRAGMA synchronous=NORMAL")
        return saver
    except sqlite3.DatabaseError as err:
        raise HarnessError(f"cannot open the checkpoint database in {data_dir}: {err}; "
                           "move the broken file away or use another --data-dir") from err


def open_database(stores: Stores, url: str, lease_ttl: float) -> None:
    """Fill ``stores`` on the database ``url`` names, with the opener registered for its scheme: the
    service's Postgres (``service.postgres``) is one, found without this layer importing the service."""
    openers = {ep.name: ep for ep in entry_points(group=STORES_GROUP)}
    scheme = url.split(":", 1)[0]
    if not openers:  # an install from before the entry points were declared
        raise HarnessError(f"no store backend is registered ({STORES_GROUP} entry points): reinstall the project "
                           "(pip install -e .)")
    if scheme not in openers:
        known = " or ".join(f"{name}://" for name in sorted(openers))
        raise HarnessError(f"--database-url must start with {known}, got '{url}'")
    openers[scheme].load()(stores, url, lease_ttl)
