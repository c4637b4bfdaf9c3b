"""Start ``harness serve``: check the settings once, migrate the database once, then let uvicorn run the
workers (``service.http``), each of which reads the same settings from the environment."""

from __future__ import annotations

import os
from pathlib import Path

from lg_harness.tools.errors import HarnessError


def serve(*, host: str, port: int, workers: int, data_dir: Path, design: str, model: str, domain: str,
          database_url: str | None, chroma_url: str | None, threads: int, lease_ttl: float, policy: str,
          log_level: str = "warning", durability: str = "exit") -> None:
    import uvicorn
    from lg_harness.graphs.app import prepare_data_dir
    from lg_harness.service.http import Settings

    if workers > 1 and not database_url:
        raise HarnessError("several workers need shared state: pass --database-url postgresql://... (embedded "
                           "SQLite checkpoints and Chroma are for one worker process)")
    env = {"HARNESS_DATA_DIR": str(prepare_data_dir(data_dir).resolve()), "HARNESS_DESIGN": design,
           "HARNESS_MODEL": model, "HARNESS_DOMAIN": domain, "HARNESS_SERVE_THREADS": str(threads),
           "HARNESS_LEASE_TTL": str(lease_ttl), "HARNESS_BUSY_POLICY": policy,
           "HARNESS_DATABASE_URL": database_url or "", "HARNESS_CHROMA_URL": chroma_url or "",
           "HARNESS_DURABILITY": durability}
    os.environ.update(env)
    Settings.from_env()  # a missing API key setting fails here, once, not in every worker
    if database_url:
        from langgraph.checkpoint.postgres import PostgresSaver
        from lg_harness.service.pgdb import migrate, open_pool

        pool = open_pool(database_url, max_size=2)
        try:
            migrate(pool, PostgresSaver(pool))
        finally:
            pool.close()
    # proxy_headers=False: the client address is the socket's. uvicorn's own default believes X-Forwarded-For
    # from loopback, so a local client could pick the address the trusted-proxy check reads, and a proxy on
    # the same host had its requests judged by its client's address instead of its own.
    uvicorn.run("lg_harness.service.http:create_app", factory=True, host=host, port=port, workers=workers,
                log_level=log_level, timeout_graceful_shutdown=max(5, int(lease_ttl)), proxy_headers=False)
