"""``harness serve`` says where it is: its first lines, one line per request, a line when it stops (issue 43)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.engines import free_port, wait_http

pytestmark = pytest.mark.slow

HARNESS = Path(sys.executable).with_name("harness")
SECRET = "my card is 4111 1111 1111 1111"


def test_serve_introduces_itself_logs_each_request_and_says_when_it_stops(tmp_path: Path) -> None:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("HARNESS_")}
    env.update(HF_HUB_OFFLINE="1", HARNESS_API_KEYS="k=U001", HARNESS_DESK_KEYS="d=sam")
    log = tmp_path / "serve.log"
    with open(log, "wb") as sink:
        proc = subprocess.Popen([str(HARNESS), "serve", "--port", str(port), "--model", "sim:clean", "--data-dir",
                                 str(tmp_path / "data")], env=env, stdout=sink, stderr=subprocess.STDOUT,
                                start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_http(f"{base}/healthz", timeout=180, proc=proc)
        sent = httpx.post(f"{base}/threads/t1/messages?note=secret", json={"text": SECRET},
                          headers={"Authorization": "Bearer k"}, timeout=60, trust_env=False)
        assert sent.status_code == 200
    finally:
        os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C
        proc.wait(60)
    text = log.read_text()
    lines = text.splitlines()
    assert lines[0] == f"harness serve: listening on {base} (host 127.0.0.1; 1 worker(s), 2 message(s) at once each)"
    assert f"the desk:  {base}/" in lines[1] and f"API docs: {base}/docs" in lines[1]
    assert "domain shop · design harness · model sim:clean" in lines[2]
    assert f"store: files in {tmp_path / 'data'}" in lines[3]
    assert "API keys for 1 user(s); desk keys for 1 agent(s)" in lines[4]
    request_lines = [ln for ln in lines if "POST /threads/t1/messages" in ln]
    assert len(request_lines) == 1 and request_lines[0].endswith(" ms") and " 200 " in request_lines[0]
    assert "4111" not in text and "secret" not in text, "a request line never carries the message or the query"
    assert lines[-1] == "harness serve: stopped" and any(ln.endswith("worker stopped") for ln in lines)
