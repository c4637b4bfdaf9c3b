"""Serving benchmark: throughput and latency of ``harness serve`` at 1, 2 and 4 workers.

The model takes a fixed real time per call (``paced:<s>:clean``: the sim behind a ``sleep``), as a hosted
model does, so a worker mostly waits and more workers should serve proportionally more. Each configuration
gets a fresh database and data dir, starts ``harness serve`` (one message at a time per worker:
``--threads 1``, so the worker count is the concurrency), and then ``threads x per_thread`` messages are sent
by ``threads`` concurrent clients, each client one thread's messages in order. Throughput is messages per
wall-clock second; latency is per request at the client (queueing included), p50 and p95. Figures are
printed as ratios to 1 worker on Postgres, beside one embedded-SQLite worker (the default backend).

Needs ``HARNESS_DATABASE_URL`` (or ``--database-url``) naming a role that may create databases; Chroma
runs from ``HARNESS_CHROMA_URL`` or is started here on a free port.

Run ``harness --database-url postgresql://... bench serve``.
"""

from __future__ import annotations

import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from lg_harness.errors import HarnessError

KEY = "bench"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait(url: str, proc: subprocess.Popen, timeout: float = 240) -> None:
    import httpx

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise HarnessError(f"the server for {url} exited with {proc.returncode}")
        try:
            if httpx.get(url, timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    raise HarnessError(f"{url} did not answer within {timeout:.0f} s")


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)


def _database(admin_url: str) -> tuple[str, str]:
    import psycopg
    from psycopg import sql

    name = f"harness_bench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    return f"{admin_url.rpartition('/')[0]}/{name}", name


def _drop(admin_url: str, name: str) -> None:
    import psycopg
    from psycopg import sql

    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


def _run_one(workers: int, database_url: str | None, chroma_url: str | None, model: str, threads: int,
             per_thread: int, domain: str) -> dict[str, Any]:
    import httpx

    harness_bin = Path(sys.executable).with_name("harness")
    with tempfile.TemporaryDirectory(prefix="bench-serve-") as tmp:
        port = _free_port()
        env = {k: v for k, v in os.environ.items() if not k.startswith("HARNESS_")}
        env.update(HF_HUB_OFFLINE="1", HARNESS_API_KEYS=f"{KEY}=U001")
        if database_url:
            env.update(HARNESS_DATABASE_URL=database_url, HARNESS_CHROMA_URL=chroma_url or "")
        with open(Path(tmp) / "serve.log", "wb") as log:
            proc = subprocess.Popen([str(harness_bin), "serve", "--workers", str(workers), "--threads", "1",
                                     "--port", str(port), "--model", model, "--domain", domain, "--data-dir",
                                     str(Path(tmp) / "data")], env=env, stdout=subprocess.DEVNULL, stderr=log,
                                    start_new_session=True)
        base = f"http://127.0.0.1:{port}"
        try:
            _wait(f"{base}/healthz", proc)
            with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {KEY}"}, timeout=600) as warm:
                for i in range(workers * 2):  # every worker has loaded its model before the clock starts
                    warm.post(f"/threads/warm-{i}/messages", json={"text": "hello"})
            texts = ("where is my order ORD-10134?", "thanks", "do you have bluetooth headphones?", "hello")

            def client(t: int) -> list[float]:
                took = []
                with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {KEY}"}, timeout=600) as c:
                    for k in range(per_thread):
                        start = time.perf_counter()
                        r = c.post(f"/threads/bench-{t}/messages", json={"text": texts[k % len(texts)]})
                        if r.status_code != 200:
                            raise HarnessError(f"bench message failed: {r.status_code} {r.text[:200]}")
                        took.append(time.perf_counter() - start)
                return took

            start = time.perf_counter()
            with ThreadPoolExecutor(threads) as pool:
                latencies = [x for got in pool.map(client, range(threads)) for x in got]
            wall = time.perf_counter() - start
        finally:
            _stop(proc)
    ordered = sorted(latencies)
    return {"workers": workers, "backend": "postgres" if database_url else "sqlite", "messages": len(latencies),
            "wall_s": round(wall, 2), "throughput_msg_s": round(len(latencies) / wall, 3),
            "p50_s": round(statistics.median(ordered), 3),
            "p95_s": round(ordered[max(0, int(round(0.95 * len(ordered))) - 1)], 3)}


def run_bench_serve(domain: str = "shop", database_url: str | None = None, chroma_url: str | None = None,
                    delay_s: float = 1.5, threads: int = 8, per_thread: int = 4,
                    workers: tuple[int, ...] = (1, 2, 4)) -> dict[str, Any]:
    """Measure every configuration; returns the rows and the ratios to 1 Postgres worker."""
    from lg_harness.graphs.storage import settings_from_env

    database_url, chroma_url = settings_from_env(database_url, chroma_url)
    if not database_url:
        raise HarnessError("harness bench serve needs a Postgres role that may create databases: "
                           "harness --database-url postgresql://user:pass@127.0.0.1:5432/db bench serve")
    model = f"paced:{delay_s}:clean"
    chroma_proc = None
    if not chroma_url:
        port = _free_port()
        code = "import sys; from chromadb.cli.cli import app; sys.argv[0] = 'chroma'; sys.exit(app())"
        chroma_dir = tempfile.mkdtemp(prefix="bench-chroma-")
        chroma_proc = subprocess.Popen([sys.executable, "-c", code, "run", "--path", chroma_dir, "--port", str(port),
                                        "--host", "127.0.0.1"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                       start_new_session=True)
        chroma_url = f"http://127.0.0.1:{port}"
        _wait(f"{chroma_url}/api/v2/heartbeat", chroma_proc)
    rows = []
    try:
        rows.append(_run_one(1, None, None, model, threads, per_thread, domain))
        for n in workers:
            url, name = _database(database_url)
            try:
                rows.append(_run_one(n, url, chroma_url, model, threads, per_thread, domain))
            finally:
                _drop(database_url, name)
    finally:
        if chroma_proc is not None:
            _stop(chroma_proc)
    base = next(r for r in rows if r["backend"] == "postgres" and r["workers"] == 1)
    for r in rows:
        r["throughput_vs_1_worker"] = round(r["throughput_msg_s"] / base["throughput_msg_s"], 2)
        r["p50_vs_1_worker"] = round(r["p50_s"] / base["p50_s"], 2)
    return {"model": model, "delay_s": delay_s, "clients": threads, "messages_per_client": per_thread,
            "threads_per_worker": 1, "rows": rows}


def main(domain: str = "shop", database_url: str | None = None, chroma_url: str | None = None) -> dict[str, Any]:
    figures = run_bench_serve(domain, database_url, chroma_url)
    print(f"harness serve, model {figures['model']} ({figures['delay_s']} s per call), {figures['clients']} clients "
          f"x {figures['messages_per_client']} messages, 1 message at a time per worker")
    print(f"{'backend':<9} {'workers':>7} {'msg/s':>7} {'x 1 worker':>10} {'p50 s':>7} {'p95 s':>7} {'wall s':>7}")
    for r in figures["rows"]:
        print(f"{r['backend']:<9} {r['workers']:>7} {r['throughput_msg_s']:>7.2f} {r['throughput_vs_1_worker']:>10.2f} "
              f"{r['p50_s']:>7.2f} {r['p95_s']:>7.2f} {r['wall_s']:>7.1f}")
    return figures


if __name__ == "__main__":  # pragma: no cover
    main()
