"""Start ``harness serve``: check the settings once, migrate the database once, then let uvicorn run the
workers (``service.http``), each of which reads the same settings from the environment."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from lg_harness.errors import HarnessError


def serve(*, host: str, port: int, workers: int, data_dir: Path, design: str, model: str, domain: str,
          database_url: str | None, chroma_url: str | None, threads: int, lease_ttl: float, policy: str,
          log_level: str = "warning", durability: str = "exit") -> None:
    import uvicorn

    from lg_harness.graphs.opening import prepare_data_dir
    from lg_harness.service.http import ServiceSettings

    if workers > 1 and not database_url:
        raise HarnessError("several workers need shared state: pass --database-url postgresql://... (embedded "
                           "SQLite checkpoints and Chroma are for one worker process)")
    env = {"HARNESS_DATA_DIR": str(prepare_data_dir(data_dir).resolve()), "HARNESS_DESIGN": design,
           "HARNESS_MODEL": model, "HARNESS_DOMAIN": domain, "HARNESS_SERVE_THREADS": str(threads),
           "HARNESS_LEASE_TTL": str(lease_ttl), "HARNESS_BUSY_POLICY": policy,
           "HARNESS_DATABASE_URL": database_url or "", "HARNESS_CHROMA_URL": chroma_url or "",
           "HARNESS_DURABILITY": durability}
    os.environ.update(env)
    ServiceSettings.from_env()  # a missing API key setting fails here, once, not in every worker
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
    os.environ["HARNESS_REQUEST_LOG"] = "1"  # each worker logs its requests (service.http.RequestLog)
    for line in introduction(ServiceSettings.from_env(), host, port, workers):
        print(line, file=sys.stderr, flush=True)
    # access_log off: the workers' own request lines replace uvicorn's, which would print query strings.
    uvicorn.run("lg_harness.service.http:create_app", factory=True, host=host, port=port, workers=workers,
                log_level=log_level, timeout_graceful_shutdown=max(5, int(lease_ttl)), proxy_headers=False,
                access_log=False)
    print("harness serve: stopped", file=sys.stderr, flush=True)


def introduction(settings: Any, host: str, port: int, workers: int) -> list[str]:
    """What ``harness serve`` says before it listens: where, what it runs on, who may come in."""
    shown = "127.0.0.1" if host in ("0.0.0.0", "::", "") else host
    base = f"http://{shown}:{port}"
    if settings.database_url:
        store = f"PostgreSQL at {_without_password(settings.database_url)}"
        store += f", experiences in the Chroma server at {settings.chroma_url}" if settings.chroma_url else ""
    else:
        store = f"files in {settings.data_dir} (SQLite checkpoints, embedded Chroma)"
    doors = [f"API keys for {len(set(settings.api_keys.values()))} user(s)"] if settings.api_keys else []
    doors += [f"the {settings.user_header} header from {_proxies(settings)}"] if settings.user_header else []
    doors += [f"desk keys for {len(settings.desk_keys)} agent(s)"] if settings.desk_keys else []
    doors += [f"the {settings.desk_header} desk header from {_proxies(settings)}"] if settings.desk_header else []
    return [
        f"harness serve: listening on {base} (host {host}; {workers} worker(s), {settings.threads} message(s) "
        "at once each)",
        f"  the desk:  {base}/   API docs: {base}/docs   health: {base}/healthz",
        f"  domain {settings.domain} · design {settings.design} · model {settings.model} · durability "
        f"{settings.durability} · busy policy {settings.policy}",
        f"  store: {store}",
        f"  who may come in: {'; '.join(doors)}",
        "  one line per request follows (method, path, status, time; never a message's text); Ctrl-C stops",
    ]


def _proxies(settings: Any) -> str:
    return ", ".join(str(n) for n in settings.trusted_proxies)


def _without_password(url: str) -> str:
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    host = parts.hostname or ""
    port = f":{parts.port}" if parts.port else ""
    user = f"{parts.username}@" if parts.username else ""
    return f"{parts.scheme}://{user}{host}{port}{parts.path}"
