"""Checkpoint bytes and rows per message of one harness thread on Postgres, with and without step pruning.

    .venv/bin/python lab/reports/bench-graph/pg_step_bytes.py postgresql://harness:harness@127.0.0.1:5432/harness \
        > lab/reports/bench-graph/postgres-steps.txt

The bench graph's setup on Postgres: the default design with quotas lifted on ``sim:clean``, the shop's graph
script for 200 messages on one thread, each arm in a fresh database (created beside the one the URL names, so
the role needs CREATEDB, and dropped afterwards). "off" skips ``graphs.step_pruning.prune_steps`` (what main
did on Postgres before). Bytes are rows as Postgres stores them (``pg_column_size``) of the thread's
checkpoints, pending writes and channel blobs.
"""

from __future__ import annotations

import sys
import tempfile
import uuid
from pathlib import Path

import psycopg

from lg_harness.core.design import load_design
from lg_harness.graphs import app
from lg_harness_lab.benchmarks.bench_context import bench_domain, lift_quotas
from lg_harness_lab.benchmarks.bench_graph import script_messages

MESSAGES = 200
SAMPLES = (20, 100, 200)
THREAD = "t"
SIZES = """SELECT (SELECT COUNT(*) FROM harness.checkpoints WHERE thread_id = %(t)s) AS checkpoints,
    (SELECT COUNT(*) FROM harness.checkpoint_blobs WHERE thread_id = %(t)s) AS blobs,
    (SELECT COUNT(*) FROM harness.checkpoint_writes WHERE thread_id = %(t)s) AS writes,
    (SELECT COALESCE(SUM(pg_column_size(c.*)), 0) FROM harness.checkpoints c WHERE thread_id = %(t)s)
    + (SELECT COALESCE(SUM(pg_column_size(b.*)), 0) FROM harness.checkpoint_blobs b WHERE thread_id = %(t)s)
    + (SELECT COALESCE(SUM(pg_column_size(w.*)), 0) FROM harness.checkpoint_writes w WHERE thread_id = %(t)s)
      AS bytes"""


def arm(admin_url: str, pruned: bool) -> None:
    base = admin_url.rsplit("/", 1)[0]
    name = f"harness_steps_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(admin_url, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")
    keep = app.prune_steps
    if not pruned:
        app.prune_steps = lambda saver, thread_id: 0
    try:
        domain, bench = bench_domain("shop")
        with tempfile.TemporaryDirectory() as tmp, \
                app.Harness("sim:clean", domain=domain, design=lift_quotas(load_design("harness")),
                            settings=app.Settings(data_dir=Path(tmp), database_url=f"{base}/{name}")) as h, \
                psycopg.connect(f"{base}/{name}") as conn:
            texts = script_messages(bench.facts(h.resources, domain.default_user), MESSAGES, bench.graph_messages)
            for i, text in enumerate(texts, 1):
                h.send(THREAD, text, domain.default_user)
                if i in SAMPLES:
                    ck, blobs, writes, size = conn.execute(SIZES, {"t": THREAD}).fetchone()
                    print(f"pruning {'on ' if pruned else 'off'} @{i:3d}: {ck:5d} checkpoints ({ck / i:4.1f}/msg), "
                          f"{blobs:5d} blobs, {writes:5d} writes, {size / 1e3:8.1f} KB ({size / i / 1e3:5.1f} KB/msg)",
                          flush=True)
    finally:
        app.prune_steps = keep
        with psycopg.connect(admin_url, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


if __name__ == "__main__":
    for pruned in (False, True):
        arm(sys.argv[1], pruned)
