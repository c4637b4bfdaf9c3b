"""The harness's stores on PostgreSQL, registered as the opener of ``postgresql://`` (and ``postgres://``)
database URLs in the ``lg_harness.stores`` entry point group (pyproject.toml).

``graphs.storage.open_stores`` looks the URL's scheme up there, so the graph reaches this service-side
backend (leases, fencing, migrations) without importing it. Loaded only when a database URL is given.
"""

from __future__ import annotations

from lg_harness.graphs.storage import Stores, own
from lg_harness.memory.pg_stores import PgFactStore, PgTranscriptStore
from lg_harness.obs.pg_audit import PgAuditLog
from lg_harness.service.fencing import FencedPostgresSaver, Fences
from lg_harness.service.leases import LeaseOrder, ThreadQueue
from lg_harness.service.pgdb import migrate, open_pool
from lg_harness.tools.ledger import PgLedger


def open_postgres(stores: Stores, url: str, lease_ttl: float) -> None:
    """Every store on Postgres: fenced checkpoints, transcripts, the audit log, the change ledger, facts and
    the per-thread queue and leases, on one pool, migrated first."""
    stores.backend = "postgres"
    stores.pool = own(stores, open_pool(url))
    fences = stores.fences = Fences()  # every commit point of a claimed message checks its generation
    stores.checkpointer = FencedPostgresSaver(stores.pool, fences)
    migrate(stores.pool, stores.checkpointer)
    stores.transcripts = PgTranscriptStore(stores.pool, fences)
    stores.audit = PgAuditLog(stores.pool)
    stores.ledger = PgLedger(stores.pool)
    stores._facts = PgFactStore(stores.pool)
    stores.queue = ThreadQueue.postgres(stores.pool, ttl=lease_ttl, fences=fences)
    stores.order = LeaseOrder(stores.queue)
