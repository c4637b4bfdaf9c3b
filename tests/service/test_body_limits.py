"""Bodies are capped before they are read, and keys are checked before a body is parsed (issue 40).

The service used to read and parse any body first (200 MB accepted, 1.13 GB resident) and check the key after.
The ``Doorman`` middleware is driven here with a raw ASGI ``receive`` that records every read, so "before it
is read" is observed, not assumed; and the app as a whole answers 413 and 401 with one line.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from lg_harness.errors import HarnessError
from lg_harness.service.http import ServiceSettings, create_app
from lg_harness.service.http_guard import Doorman

KEYS = "key-u1=U001,key-u2=U002"


def settings(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, **env: str) -> ServiceSettings:
    for key in ("HARNESS_TRUSTED_USER_HEADER", "HARNESS_DESK_HEADER", "HARNESS_TRUSTED_PROXIES", "HARNESS_OPS_KEYS",
                "HARNESS_DATABASE_URL", "HARNESS_CHROMA_URL", "HARNESS_MAX_BODY_BYTES", "HARNESS_DESK_KEYS"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("HARNESS_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("HARNESS_MODEL", "sim:clean")
    monkeypatch.setenv("HARNESS_API_KEYS", KEYS)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    return ServiceSettings.from_env()


def drive(doorman: Doorman, headers: dict[str, str], chunks: list[bytes]) -> tuple[int, dict[str, Any], int]:
    """One POST through the middleware: the status, the JSON body and how many chunks were read."""
    reads, sent = 0, []

    async def receive() -> dict[str, Any]:
        nonlocal reads
        reads += 1
        body = chunks[reads - 1] if reads <= len(chunks) else b""
        return {"type": "http.request", "body": body, "more_body": reads < len(chunks)}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {"type": "http", "method": "POST", "path": "/threads/t/messages", "query_string": b"",
             "headers": [(k.lower().encode(), v.encode()) for k, v in headers.items()]}
    asyncio.run(doorman(scope, receive, send))
    status = next(m["status"] for m in sent if m["type"] == "http.response.start")
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return status, json.loads(body or b"{}"), reads


async def reading_app(scope: Any, receive: Any, send: Any) -> None:
    """An app that reads the whole body, as FastAPI does before a route runs, then answers 200."""
    more = True
    while more:
        message = await receive()
        more = message.get("more_body", False)
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"{}"})


def test_no_body_is_read_from_a_caller_without_a_known_key(monkeypatch, tmp_path) -> None:
    doorman = Doorman(reading_app, settings(monkeypatch, tmp_path))
    for headers in ({}, {"Authorization": "Bearer nope"}):
        status, body, reads = drive(doorman, headers, [b'{"text": "hi"}'])
        assert (status, reads) == (401, 0), body


def test_a_declared_length_over_the_cap_is_refused_unread(monkeypatch, tmp_path) -> None:
    doorman = Doorman(reading_app, settings(monkeypatch, tmp_path, HARNESS_MAX_BODY_BYTES="1000"))
    status, body, reads = drive(doorman, {"Authorization": "Bearer key-u1", "Content-Length": "5000000"}, [b"x"])
    assert (status, reads) == (413, 0) and "HARNESS_MAX_BODY_BYTES" in body["message"]
    assert body["code"] == "body_too_large" and body["hint"]


def test_a_streamed_body_stops_being_read_at_the_cap(monkeypatch, tmp_path) -> None:
    doorman = Doorman(reading_app, settings(monkeypatch, tmp_path, HARNESS_MAX_BODY_BYTES="1000"))
    status, _, reads = drive(doorman, {"Authorization": "Bearer key-u1"}, [b"x" * 400] * 100)
    assert status == 413 and reads == 3, "reading stops at the chunk that crosses the cap"
    status, _, reads = drive(doorman, {"Authorization": "Bearer key-u1"}, [b"x" * 400, b"x" * 400])
    assert (status, reads) == (200, 2)


def test_the_service_answers_413_and_keeps_serving(monkeypatch, tmp_path) -> None:
    with TestClient(create_app(settings(monkeypatch, tmp_path))) as c:
        big = json.dumps({"text": "x" * (2 << 20)})
        r = c.post("/threads/t/messages", content=big, headers={"Authorization": "Bearer key-u1",
                                                                 "Content-Type": "application/json"})
        assert r.status_code == 413 and "HARNESS_MAX_BODY_BYTES" in r.json()["message"]
        r = c.post("/threads/t/messages", content=big, headers={"Content-Type": "application/json"})
        assert r.status_code in (401, 413)  # refused either way, and never parsed
        ok = c.post("/threads/t/messages", json={"text": "hello"}, headers={"Authorization": "Bearer key-u1"})
        assert ok.status_code == 200


def test_the_cap_is_a_setting_checked_at_start(monkeypatch, tmp_path) -> None:
    assert settings(monkeypatch, tmp_path, HARNESS_MAX_BODY_BYTES="2048").max_body_bytes == 2048
    with pytest.raises(HarnessError, match="HARNESS_MAX_BODY_BYTES"):
        settings(monkeypatch, tmp_path, HARNESS_MAX_BODY_BYTES="lots")
