"""Client addresses come from the socket, unless the peer is a configured proxy (issue 40).

``harness serve`` once ran uvicorn with its default proxy headers, which believe ``X-Forwarded-For`` from
loopback: a local client could name the address the trusted-proxy check reads (and get the desk), and behind a
proxy on the same host every request was judged by the forwarded client address (401). Here a real
``harness serve`` answers both cases, and the header settings refuse to start without proxies.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from lg_harness.errors import HarnessError
from lg_harness.service.http import ServiceSettings
from tests.engines import free_port, stop_group, wait_http

HARNESS = Path(sys.executable).with_name("harness")
HEADER_ENV = ("HARNESS_API_KEYS", "HARNESS_TRUSTED_USER_HEADER", "HARNESS_DESK_KEYS", "HARNESS_DESK_HEADER",
              "HARNESS_TRUSTED_PROXIES")


def start(tmp_path: Path, **env: str) -> Iterator[str]:
    port = free_port()
    clean = {k: v for k, v in os.environ.items() if not k.startswith("HARNESS_")}
    clean.update(HF_HUB_OFFLINE="1", HARNESS_DESK_KEYS="desk-key=alice", **env)
    log = tmp_path / "serve.log"
    with open(log, "wb") as sink:
        proc = subprocess.Popen([str(HARNESS), "serve", "--port", str(port), "--model", "sim:clean",
                                 "--data-dir", str(tmp_path / "data")], env=clean, stdout=subprocess.DEVNULL,
                                stderr=sink, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_http(f"{base}/healthz", timeout=180, proc=proc)
        yield base
    except (RuntimeError, TimeoutError):
        raise AssertionError(f"harness serve did not start: {log.read_text()[-2000:]}") from None
    finally:
        stop_group(proc)


@pytest.fixture(scope="module")
def behind_remote_proxies(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    yield from start(tmp_path_factory.mktemp("remote"), HARNESS_TRUSTED_PROXIES="10.0.0.0/8",
                     HARNESS_DESK_HEADER="X-Desk-Agent", HARNESS_TRUSTED_USER_HEADER="X-User")


@pytest.fixture(scope="module")
def behind_local_proxy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    yield from start(tmp_path_factory.mktemp("local"), HARNESS_TRUSTED_PROXIES="127.0.0.1",
                     HARNESS_TRUSTED_USER_HEADER="X-User", HARNESS_DESK_HEADER="X-Desk-Agent")


def get(url: str, **headers: str) -> httpx.Response:
    return httpx.get(url, headers=headers, timeout=30, trust_env=False)


@pytest.mark.slow
def test_a_forwarded_for_header_does_not_make_a_local_client_a_trusted_proxy(behind_remote_proxies: str) -> None:
    spoof = {"X-Forwarded-For": "10.9.9.9"}
    assert get(f"{behind_remote_proxies}/handoffs", **spoof, **{"X-Desk-Agent": "mallory"}).status_code == 401
    assert get(f"{behind_remote_proxies}/threads", **spoof, **{"X-User": "U001"}).status_code == 401
    assert get(f"{behind_remote_proxies}/handoffs", Authorization="Bearer desk-key").status_code == 200


@pytest.mark.slow
def test_a_proxy_on_the_same_host_is_believed_whatever_client_it_forwards(behind_local_proxy: str) -> None:
    forwarded = {"X-Forwarded-For": "203.0.113.5", "X-Forwarded-Proto": "https"}
    sent = httpx.post(f"{behind_local_proxy}/threads/p1/messages", json={"text": "hello"},
                      headers={**forwarded, "X-User": "U001"}, timeout=60, trust_env=False)
    assert sent.status_code == 200, sent.text
    listed = get(f"{behind_local_proxy}/threads", **forwarded, **{"X-User": "U001"})
    assert listed.status_code == 200 and [t["thread_id"] for t in listed.json()["threads"]] == ["p1"]
    assert get(f"{behind_local_proxy}/handoffs", **forwarded, **{"X-Desk-Agent": "sam"}).status_code == 200


@pytest.mark.parametrize("header", ["HARNESS_TRUSTED_USER_HEADER", "HARNESS_DESK_HEADER"])
def test_a_header_identity_does_not_start_without_configured_proxies(monkeypatch: pytest.MonkeyPatch,
                                                                      header: str) -> None:
    for key in HEADER_ENV:
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("HARNESS_DESK_KEYS", "dk=alice")
    monkeypatch.setenv(header, "X-Who")
    with pytest.raises(HarnessError, match="HARNESS_TRUSTED_PROXIES"):
        ServiceSettings.from_env()
