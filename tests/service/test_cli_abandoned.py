"""A ``harness run`` on Postgres whose process dies in the middle of a message.

Its queue row and lease stay behind. The lease expires after ``HARNESS_LEASE_TTL``; then ``harness resume
--finish`` completes the message (the dead row is marked abandoned, with what to do), and ``harness prune``
sweeps the rows of threads nobody sends to again, so they do not stay "running" for ever.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, LiteralString

import pytest

from tests.engines import database_url, postgres_server  # noqa: F401

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

HARNESS = Path(sys.executable).with_name("harness")
TTL = "2"


@pytest.fixture
def cli(tmp_path: Path, database_url: str) -> Any:  # noqa: F811
    env = {k: v for k, v in os.environ.items() if not k.startswith("HARNESS_")}
    env.update(HF_HUB_OFFLINE="1", HARNESS_DATABASE_URL=database_url, HARNESS_LEASE_TTL=TTL)
    base = [str(HARNESS)]

    def run(*args: str, **kw: Any) -> Any:
        return subprocess.run([*base, *args, "--data-dir", str(tmp_path / "data")], env=env, capture_output=True,
                              text=True, timeout=300, **kw)

    def start(*args: str) -> subprocess.Popen:
        return subprocess.Popen([*base, *args, "--data-dir", str(tmp_path / "data")], env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    run.start = start  # type: ignore[attr-defined]
    return run


@pytest.fixture
def rows(database_url: str) -> Any:  # noqa: F811
    import psycopg
    from psycopg.rows import dict_row

    def query(sql: LiteralString, *params: Any) -> list[dict[str, Any]]:
        try:
            with psycopg.connect(database_url, options="-c search_path=harness") as conn:
                return conn.cursor(row_factory=dict_row).execute(sql, params).fetchall()
        except psycopg.errors.UndefinedTable:  # the first process has not migrated yet
            return []

    return query


def kill_mid_message(cli: Any, rows: Any, thread: str) -> None:
    proc = cli.start("run", "where is my order ORD-10134?", "--thread", thread, "--model", "paced:1.5:clean")
    deadline = time.monotonic() + 120
    # the message is under way (its user row is written before the graph runs) and the model is slow
    while not rows("SELECT 1 FROM transcript WHERE thread_id = %s AND role = 'user'", thread):
        assert proc.poll() is None and time.monotonic() < deadline
        time.sleep(0.05)
    proc.kill()
    proc.wait()
    assert [r["status"] for r in rows("SELECT status FROM thread_queue WHERE thread_id = %s", thread)] == ["running"]


def test_a_killed_cli_run_expires_and_resume_finish_completes_the_message(cli: Any, rows: Any) -> None:
    kill_mid_message(cli, rows, "x")
    done = cli("resume", "--thread", "x", "--finish", "--json")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "ORD-10134" in done.stdout
    queue = rows("SELECT kind, status, error FROM thread_queue WHERE thread_id = 'x' ORDER BY id")
    assert [(r["kind"], r["status"]) for r in queue] == [("turn", "abandoned"), ("turn", "done")]
    assert "resume --thread x --finish" in queue[0]["error"]
    assert [r["role"] for r in rows("SELECT role FROM transcript WHERE thread_id = 'x' ORDER BY seq")] == [
        "user", "assistant"]
    assert rows("SELECT * FROM thread_leases") == []
    again = cli("run", "thanks", "--thread", "x")  # and the thread goes on
    assert again.returncode == 0, again.stderr[-2000:]


def test_prune_sweeps_the_row_of_a_killed_run_nobody_returns_to(cli: Any, rows: Any) -> None:
    kill_mid_message(cli, rows, "y")
    time.sleep(float(TTL) + 0.5)
    pruned = cli("prune", "--older-than", "3650d")
    assert pruned.returncode == 0, pruned.stderr[-2000:]
    assert [r["status"] for r in rows("SELECT status FROM thread_queue WHERE thread_id = 'y'")] == ["abandoned"]
    assert rows("SELECT * FROM thread_leases") == []
