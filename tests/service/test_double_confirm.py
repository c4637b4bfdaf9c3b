"""Two answers racing on one pending change give one outcome, under every busy policy (issue 40).

A customer taps "yes" twice (or "yes" then "no") while the first is still running. Whatever the thread's busy
policy, the change happens once, every request the service accepted gets a reply, and the transcript reads as
a conversation: each customer message followed by its answer. The worker is slowed at every node so the
second answer arrives while the first runs.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from lg_harness.service import http
from tests.service.test_desk_http import service

U1 = {"Authorization": "Bearer key-u1"}
COMPLAINT = "I want to file a complaint: the parcel for ORD-10134 arrived damaged."
SLOW_NODE_S = 0.15


@pytest.fixture
def client(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[TestClient]:
    original = http.Worker._on_update

    def slow(self: Any, thread_id: str, update: dict[str, Any]) -> None:
        time.sleep(SLOW_NODE_S)
        original(self, thread_id, update)

    monkeypatch.setattr(http.Worker, "_on_update", slow)
    with service(tmp_path, monkeypatch) as c:  # the desk tests' service: a patient design on sim:clean
        yield c


def complaints(tmp_path: Path) -> int:
    with sqlite3.connect(tmp_path / "data" / "shop.sqlite") as conn:
        return int(conn.execute("SELECT COUNT(*) FROM complaints WHERE user_id = 'U001'").fetchone()[0])


def race(c: TestClient, first: str, second: str, policy: str) -> tuple[dict[str, Any], Any]:
    """``first`` is sent and seen running; ``second`` then arrives with ``policy``. The first's queue row
    (its outcome) and the second's response."""
    asked = c.post("/threads/t/messages", json={"text": COMPLAINT}, headers=U1).json()
    assert asked["phase"] == "confirm", asked
    mid = c.post("/threads/t/messages", json={"text": first, "wait": False}, headers=U1).json()["message_id"]
    deadline = time.monotonic() + 30
    while c.get(f"/messages/{mid}", headers=U1).json()["status"] == "queued":
        assert time.monotonic() < deadline
        time.sleep(0.01)
    late = c.post("/threads/t/messages", json={"text": second, "policy": policy}, headers=U1)
    while (row := c.get(f"/messages/{mid}", headers=U1).json())["status"] in ("queued", "running"):
        assert time.monotonic() < deadline + 30
        time.sleep(0.05)
    return row, late


def transcript(c: TestClient) -> list[tuple[str, str]]:
    return [(m["role"], m["content"]) for m in c.get("/threads/t/transcript", headers=U1).json()["messages"]]


def answered_in_turn(rows: list[tuple[str, str]]) -> bool:
    """Every customer message is followed by exactly one answer (no answer missing, none doubled)."""
    return [r for r, _ in rows] == ["user", "assistant"] * (len(rows) // 2) and len(rows) % 2 == 0


@pytest.mark.slow
@pytest.mark.parametrize("policy", ["enqueue", "interrupt", "reject"])
def test_two_yes_file_one_complaint_and_every_accepted_request_is_answered(client, tmp_path, policy):
    first, second = race(client, "yes", "yes", policy)
    assert first["status"] == "done", first
    assert complaints(tmp_path) == 1
    rows = transcript(client)
    assert answered_in_turn(rows), rows
    if policy == "reject":
        assert second.status_code == 409 and len(rows) == 4  # not accepted: not in the transcript either
        return
    assert second.status_code == 200, second.text
    assert len(rows) == 6
    assert "welcome" not in second.json()["reply"].lower(), "the second yes must say the change is already made"
    assert second.json()["reply"] != first["result"]["reply"]


@pytest.mark.slow
@pytest.mark.parametrize("policy", ["enqueue", "interrupt"])
def test_yes_then_no_racing_makes_the_change_once_and_says_so(client, tmp_path, policy):
    first, second = race(client, "yes", "no", policy)
    assert first["status"] == "done" and second.status_code == 200, (first, second.text)
    assert complaints(tmp_path) == 1  # the yes arrived first: the change stands
    rows = transcript(client)
    assert answered_in_turn(rows) and len(rows) == 6, rows
    assert "won't change anything" not in second.json()["reply"], "a no after the change was made must not deny it"


def test_an_interrupted_lookup_leaves_a_transcript_that_reads_as_a_conversation(client):
    mid = client.post("/threads/t/messages", json={"text": "Where is my order ORD-10134?", "wait": False},
                      headers=U1).json()["message_id"]
    deadline = time.monotonic() + 30
    while client.get(f"/messages/{mid}", headers=U1).json()["status"] == "queued":
        assert time.monotonic() < deadline
        time.sleep(0.01)
    newer = client.post("/threads/t/messages", json={"text": "thanks", "policy": "interrupt"}, headers=U1)
    assert newer.status_code == 200
    assert client.get(f"/messages/{mid}", headers=U1).json()["status"] == "cancelled"
    rows = transcript(client)
    assert answered_in_turn(rows), rows
    assert "stopped working on this message" in rows[1][1] and rows[3][1] == newer.json()["reply"]
