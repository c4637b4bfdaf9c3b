"""Real PostgreSQL and Chroma servers for the tests that need them.

``.ci/run`` starts both and exports ``HARNESS_TEST_DATABASE_URL`` and ``HARNESS_TEST_CHROMA_URL`` (with
``HARNESS_TEST_REQUIRE_PG=1``, so a missing engine fails the run instead of skipping). Run outside it, the
fixtures start them here: PostgreSQL 15 through ``pg_ctlcluster`` (creating the role and database through
``su postgres``), Chroma as ``chroma run`` on a free loopback port, stopped by its pid at the end. A test is
skipped, with the reason, only when the engine is not installed at all and CI did not ask for it.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

ROLE, PASSWORD = "harness", "harness"
REQUIRED = os.environ.get("HARNESS_TEST_REQUIRE_PG") == "1"


def _absent(reason: str) -> None:
    if REQUIRED:
        pytest.fail(f"{reason} (HARNESS_TEST_REQUIRE_PG=1: CI must run these tests)")
    pytest.skip(reason)


def _can_connect(url: str) -> bool:
    import psycopg

    try:
        psycopg.connect(url, connect_timeout=3).close()
        return True
    except psycopg.Error:
        return False


def _start_local_postgres() -> str:
    """The default cluster (port 5432) started and given the test role; returns a URL to its database."""
    url = f"postgresql://{ROLE}:{PASSWORD}@127.0.0.1:5432/{ROLE}"
    if _can_connect(url):
        return url
    if shutil.which("pg_ctlcluster") is None or shutil.which("pg_lsclusters") is None:
        _absent("PostgreSQL is not installed (apt-get install -y postgresql), and HARNESS_TEST_DATABASE_URL is unset")
    clusters = subprocess.run(["pg_lsclusters", "-h"], capture_output=True, text=True).stdout.split()
    if not clusters:
        _absent("no PostgreSQL cluster exists (pg_createcluster 15 main)")
    version, name = clusters[0], clusters[1]
    subprocess.run(["pg_ctlcluster", version, name, "start"], capture_output=True, text=True)
    sql = (f"DO $$BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '{ROLE}') THEN "
           f"CREATE ROLE {ROLE} LOGIN PASSWORD '{PASSWORD}' CREATEDB; END IF; END$$;")
    subprocess.run(["su", "postgres", "-c", f'psql -q -c "{sql}"'], capture_output=True, text=True)
    subprocess.run(["su", "postgres", "-c", f"createdb -O {ROLE} {ROLE}"], capture_output=True, text=True)
    for _ in range(50):
        if _can_connect(url):
            return url
        time.sleep(0.2)
    _absent(f"PostgreSQL did not accept {url} after pg_ctlcluster {version} {name} start")
    raise AssertionError("unreachable")


@pytest.fixture(scope="session")
def postgres_server() -> str:
    """A URL of a running PostgreSQL whose role may create databases."""
    url = os.environ.get("HARNESS_TEST_DATABASE_URL") or _start_local_postgres()
    if not _can_connect(url):
        _absent(f"cannot connect to {url}")
    return url


@pytest.fixture
def database_url(postgres_server: str) -> Iterator[str]:
    """A fresh, empty database for one test, dropped afterwards."""
    import psycopg
    from psycopg import sql

    name = f"harness_t_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(postgres_server, autocommit=True) as admin:
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    base, _, _ = postgres_server.rpartition("/")
    yield f"{base}/{name}"
    with psycopg.connect(postgres_server, autocommit=True) as admin:
        for attempt in range(40):
            try:
                admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
                break
            except psycopg.errors.InsufficientPrivilege:
                # An autovacuum worker (the superuser's) is in the database after a busy test; the test role
                # may not end it, and it finishes by itself in a moment.
                if attempt == 39:
                    raise
                time.sleep(0.5)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_chroma(path: Path, port: int) -> subprocess.Popen:
    """``chroma run`` in the background (the chromadb CLI, through this interpreter)."""
    code = "import sys; from chromadb.cli.cli import app; sys.argv[0] = 'chroma'; sys.exit(app())"
    return subprocess.Popen([sys.executable, "-c", code, "run", "--path", str(path), "--port", str(port),
                             "--host", "127.0.0.1"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def stop_group(proc: subprocess.Popen, grace: float = 30.0) -> None:
    """Stop a server started with ``start_new_session=True``: its process group (only it), TERM then KILL."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(grace)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)


def wait_http(url: str, timeout: float = 60.0, proc: subprocess.Popen | None = None) -> None:
    import httpx

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"the server for {url} exited with {proc.returncode}")
        try:
            if httpx.get(url, timeout=2).status_code < 500:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise TimeoutError(f"{url} did not answer within {timeout:.0f} s")


@pytest.fixture(scope="session")
def chroma_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A URL of a running Chroma server."""
    if url := os.environ.get("HARNESS_TEST_CHROMA_URL"):
        yield url
        return
    port = free_port()
    proc = start_chroma(tmp_path_factory.mktemp("chroma"), port)
    try:
        wait_http(f"http://127.0.0.1:{port}/api/v2/heartbeat", proc=proc)
    except (RuntimeError, TimeoutError) as err:
        proc.kill()
        _absent(f"chroma run did not start: {err}")
    yield f"http://127.0.0.1:{port}"
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
