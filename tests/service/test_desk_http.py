"""The desk over HTTP: a human handoff that finishes (take, answer, release), held threads listed, the desk role
only from its own credentials, desk actions audited, customer text shown as text, Swagger UI offline."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from lg_harness.service.http import ServiceSettings, create_app
from tests.support import patient_design

U1, U2 = {"Authorization": "Bearer key-u1"}, {"Authorization": "Bearer key-u2"}
ALICE, BOB = {"Authorization": "Bearer key-alice"}, {"Authorization": "Bearer key-bob"}
EMAIL, PHONE = "jo@example.com", "555-123-4567"
HOSTILE = (f"My email is {EMAIL}, call me at {PHONE}. [bold red]I want a human[/] [link=http://evil.test]x[/link] "
           "<script>window.pwned = 1</script><b>bold</b>")


def service(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, peer: str = "testclient", **env: str) -> TestClient:
    for key in ("HARNESS_API_KEYS", "HARNESS_TRUSTED_USER_HEADER", "HARNESS_DESK_KEYS", "HARNESS_DESK_HEADER",
                "HARNESS_TRUSTED_PROXIES", "HARNESS_DATABASE_URL", "HARNESS_CHROMA_URL", "HARNESS_BUSY_POLICY"):
        monkeypatch.delenv(key, raising=False)
    design = tmp_path / "patient.json"
    design.write_text(patient_design().model_dump_json(), encoding="utf-8")
    monkeypatch.setenv("HARNESS_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("HARNESS_DESIGN", str(design))
    monkeypatch.setenv("HARNESS_MODEL", "sim:clean")
    monkeypatch.setenv("HARNESS_API_KEYS", "key-u1=U001,key-u2=U002")
    monkeypatch.setenv("HARNESS_DESK_KEYS", "key-alice=alice,key-bob=bob")
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    return TestClient(create_app(ServiceSettings.from_env()), client=(peer, 50000))


@pytest.fixture
def client(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[TestClient]:
    with service(tmp_path, monkeypatch) as c:
        yield c


def hand_off(c: TestClient, thread: str = "s2", text: str = HOSTILE) -> dict[str, Any]:
    r = c.post(f"/threads/{thread}/messages", json={"text": text}, headers=U1)
    assert r.status_code == 200 and r.json()["waiting_for_human"], r.text
    return r.json()


def test_a_handoff_finishes_over_http_take_answer_release(client: TestClient) -> None:
    hand_off(client)
    queue = client.get("/handoffs", headers=ALICE).json()
    assert [w["thread_id"] for w in queue["waiting"]] == ["s2"] and queue["held"] == []
    assert client.post("/handoffs/s2/take", headers=ALICE).json() == {"thread_id": "s2", "status": "waiting",
                                                                       "taken_by": "alice"}
    # Another agent can neither take nor answer a thread alice has.
    assert client.post("/handoffs/s2/take", headers=BOB).status_code == 409
    assert client.post("/handoffs/s2/reply", json={"text": "Bob here"}, headers=BOB).status_code == 409
    answer = client.post("/handoffs/s2/reply", json={"text": "Hi, Alice here. What can I do?"}, headers=ALICE)
    assert answer.status_code == 200 and answer.json()["reply"] == "Hi, Alice here. What can I do?"

    # Held threads are listed as held (they used to vanish from GET /handoffs), masked like waiting ones.
    queue = client.get("/handoffs", headers=ALICE).json()
    assert queue["waiting"] == [] and [h["thread_id"] for h in queue["held"]] == ["s2"]
    held = queue["held"][0]
    assert held["status"] == "held" and held["taken_by"] == "alice"
    assert EMAIL not in str(held) and PHONE not in str(held) and "[email]" in held["last_message"]

    meanwhile = client.post("/threads/s2/messages", json={"text": "Alice, my order ORD-10134 is late"}, headers=U1)
    assert meanwhile.json()["usage"]["model_calls"] == 0, "while held, the customer talks to the human"

    released = client.post("/handoffs/s2/release", headers=ALICE)
    assert released.status_code == 200 and released.json() == {"thread_id": "s2", "released": True}
    assert client.get("/handoffs", headers=ALICE).json() == {"waiting": [], "held": []}
    assert client.post("/handoffs/s2/release", headers=ALICE).status_code == 409  # nothing held any more
    back = client.post("/threads/s2/messages", json={"text": "Where is my order ORD-10134?"}, headers=U1).json()
    assert back["usage"]["model_calls"] > 0 and not back["waiting_for_human"], "the bot has the thread again"

    # Every desk action is in the audit log under the agent's name, the answer's text masked like the rest.
    log = desk_log()
    assert [(a["agent"], a["action"]) for a in log] == [("alice", "take"), ("alice", "answer"), ("alice", "release")]


def desk_log() -> list[dict[str, Any]]:
    """The desk's actions on s2, from the audit log in the service's data dir."""
    from lg_harness.obs.audit import AuditLog

    with AuditLog.in_dir(os.environ["HARNESS_DATA_DIR"]) as audit:
        return audit.desk_actions("s2")


def test_release_over_http_and_held_threads_listed_with_an_agent_api_key(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """The shared ``@agent`` key of HARNESS_API_KEYS (as the LangGraph server uses it) finishes a handoff too."""
    desk = {"Authorization": "Bearer key-desk"}
    with service(tmp_path, monkeypatch, HARNESS_API_KEYS="key-u1=U001,key-desk=@agent") as c:
        hand_off(c)
        assert c.post("/handoffs/s2/reply", json={"text": "Hi, Sam here"}, headers=desk).status_code == 200
        listed = c.get("/handoffs", headers=desk).json()
        assert [h["thread_id"] for h in listed.get("held", [])] == ["s2"], f"the held thread is missing: {listed}"
        released = c.post("/handoffs/s2/release", headers=desk)
        assert released.status_code == 200, released.text
        assert c.get("/handoffs", headers=desk).json() == {"waiting": [], "held": []}
        assert desk_log()[-1]["agent"] == "@agent"


def test_the_desk_role_is_not_a_header_a_customer_sets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the requests come from the configured proxy, whose user header names the customer
    with service(tmp_path, monkeypatch, peer="127.0.0.1", HARNESS_TRUSTED_USER_HEADER="X-User",
                 HARNESS_TRUSTED_PROXIES="127.0.0.1") as c:
        hand_off(c)
        claim = {"X-User": "U002", "X-Harness-Agent": "1"}
        # another user's thread answers as one that does not exist (issue 28)
        assert c.get("/threads/s2/transcript", headers=claim).status_code == 404, "U002 read U001's transcript"
        assert c.get("/handoffs", headers=claim).status_code == 403
        assert c.post("/handoffs/s2/reply", json={"text": "hi"}, headers=claim).status_code == 403
        assert c.get("/handoffs", headers={"X-User": "@agent"}).status_code == 403
        assert c.get("/handoffs", headers=U2).status_code == 403
        assert c.get("/handoffs", headers=ALICE).status_code == 200


def test_a_desk_header_is_believed_only_from_a_trusted_proxy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The test client connects from "testclient", not from the configured proxy: the header is ignored.
    with service(tmp_path, monkeypatch, HARNESS_DESK_HEADER="X-Desk-Agent", HARNESS_TRUSTED_PROXIES="10.9.8.7",
                 HARNESS_TRUSTED_USER_HEADER="X-User") as c:
        assert c.get("/handoffs", headers={"X-Desk-Agent": "mallory"}).status_code == 401
        assert c.get("/threads", headers={"X-User": "U001"}).status_code == 401
        assert c.get("/handoffs", headers=ALICE).status_code == 200


def test_customers_see_only_their_own_threads(client: TestClient) -> None:
    client.post("/threads/mine/messages", json={"text": "Where is my order ORD-10134?"}, headers=U1)
    client.post("/threads/theirs/messages", json={"text": "hello"}, headers=U2)
    assert [t["thread_id"] for t in client.get("/threads", headers=U1).json()["threads"]] == ["mine"]
    assert [t["thread_id"] for t in client.get("/threads", headers=U2).json()["threads"]] == ["theirs"]
    every = client.get("/threads", headers=ALICE).json()["threads"]
    assert {t["thread_id"] for t in every} == {"mine", "theirs"}
    assert {t["owner"] for t in every} == {"U001", "U002"} and {t["domain"] for t in every} == {"shop"}
    assert [t["thread_id"] for t in client.get("/threads?q=u002", headers=ALICE).json()["threads"]] == ["theirs"]
    # another user's thread answers as one that does not exist (issue 28)
    assert client.get("/threads/theirs/live", headers=U1).status_code == 404
    assert client.get("/threads/theirs/trace", headers=U1).status_code == 404
    assert client.get("/stats", headers=U1).status_code == 403


COOKIE = "harness_desk"  # the desk's sign-in cookie (service.desk.auth)


def signed_in(c: TestClient, key: str = "key-alice") -> dict[str, str]:
    from lg_harness.service.desk.auth import csrf_token

    r = c.post("/desk/login", data={"key": key}, follow_redirects=False)
    assert r.status_code == 303 and COOKIE in r.headers["set-cookie"] and "HttpOnly" in r.headers["set-cookie"]
    assert key not in r.headers["set-cookie"], "the cookie holds a signed session, never the key"
    return {"X-CSRF-Token": csrf_token(c.cookies[COOKIE])}


def test_the_pages_show_customer_text_as_text(client: TestClient) -> None:
    hand_off(client)
    assert client.get("/", follow_redirects=False).headers["location"] == "/desk/login"
    signed_in(client)
    for url in ("/desk/threads/s2", "/desk/handoffs"):
        page = client.get(url)
        assert page.status_code == 200
        assert "<script>window.pwned" not in page.text and "<b>bold</b>" not in page.text
        assert "&lt;script&gt;window.pwned = 1&lt;/script&gt;&lt;b&gt;bold&lt;/b&gt;" in page.text
        assert "[bold red]I want a human[/] [link=http://evil.test]x[/link]" in page.text
        assert not re.search(r"<a [^>]*evil\.test", page.text)
    assert "[email]" in client.get("/desk/handoffs").text and EMAIL not in client.get("/desk/handoffs").text
    for url in ("/", "/desk/graph", "/desk/stats", "/desk/threads/s2/trace"):
        assert client.get(url).status_code == 200, url
    assert client.get("/desk/graph.png").content[:8] == b"\x89PNG\r\n\x1a\n"
    assert client.get("/desk/threads/nope").status_code == 404


def test_a_customer_key_does_not_open_the_desk(client: TestClient) -> None:
    assert client.post("/desk/login", data={"key": "key-u1"}, follow_redirects=False).status_code == 401
    assert client.post("/desk/login", data={"key": "nope"}, follow_redirects=False).status_code == 401
    for forged in ("key-u1", "key-alice"):  # a raw key is no session, a customer's or a desk agent's
        client.cookies.clear()
        client.cookies.set(COOKIE, forged)
        assert client.get("/", follow_redirects=False).headers["location"] == "/desk/login"
        assert client.get("/handoffs").status_code == 401


def test_a_change_with_the_desk_cookie_needs_the_pages_csrf_token(client: TestClient) -> None:
    hand_off(client)
    token = signed_in(client)
    assert client.post("/handoffs/s2/take").status_code == 403
    assert client.post("/handoffs/s2/take", headers={"X-CSRF-Token": "guess"}).status_code == 403
    assert client.post("/handoffs/s2/take", headers=token).json()["taken_by"] == "alice"
    assert f'name="csrf" content="{token["X-CSRF-Token"]}"' in client.get("/desk/threads/s2").text


def test_a_fork_by_the_desk_is_audited(client: TestClient) -> None:
    client.post("/threads/s2/messages", json={"text": "Where is my order ORD-10134?"}, headers=U1)
    first = client.get("/threads/s2/history", headers=ALICE).json()["checkpoints"][-1]["checkpoint_id"]
    assert client.post("/threads/s2/fork", json={"checkpoint_id": first}, headers=ALICE).status_code == 200
    assert [(a["agent"], a["action"], a["detail"]) for a in desk_log()] == [
        ("alice", "fork", {"checkpoint_id": first})]


def test_swagger_ui_is_served_from_the_package(client: TestClient) -> None:
    docs = client.get("/docs")
    assert docs.status_code == 200 and "SwaggerUIBundle" in docs.text
    assert "cdn" not in docs.text and "https://" not in docs.text, "the page must load nothing from elsewhere"
    for asset in re.findall(r'(?:href|src)="(/docs/assets/[^"]+)"', docs.text):
        assert client.get(asset).status_code == 200, asset
    paths = client.get("/openapi.json").json()["paths"]
    assert {"/handoffs/{thread_id}/release", "/handoffs/{thread_id}/take", "/threads"} <= set(paths)


def test_a_desk_session_is_signed_expires_and_ends_with_its_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                                                 ) -> None:
    from lg_harness.service.desk import auth

    with service(tmp_path, monkeypatch) as c:
        signed_in(c)
        session = c.cookies[COOKIE]
        assert c.get("/handoffs").status_code == 200
        version, kid, expiry, sig = session.split(".")
        c.cookies.clear()
        c.cookies.set(COOKIE, f"{version}.{kid}.{int(expiry) + 3600}.{sig}")  # a longer life, same signature
        assert c.get("/handoffs").status_code == 401
        settings = ServiceSettings.from_env()
        assert auth.session_key(settings, session) == "key-alice"
        assert auth.session_key(settings, session, now=float(expiry) + 1) is None  # expired
    monkeypatch.setenv("HARNESS_DESK_KEYS", "key-bob=bob")  # alice's key revoked (a restart without it)
    assert auth.session_key(ServiceSettings.from_env(), session) is None


def test_only_the_holder_or_a_supervisor_releases_a_held_thread(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                                                ) -> None:
    carol = {"Authorization": "Bearer key-carol"}
    with service(tmp_path, monkeypatch, HARNESS_DESK_KEYS="key-alice=alice,key-bob=bob,key-carol=carol",
                 HARNESS_DESK_SUPERVISORS="carol") as c:
        hand_off(c)
        assert c.post("/handoffs/s2/reply", json={"text": "Hi, Alice here"}, headers=ALICE).status_code == 200
        refused = c.post("/handoffs/s2/release", headers=BOB)
        assert refused.status_code == 409 and "held by alice" in refused.json()["message"], refused.text
        assert refused.json()["code"] == "desk_conflict" and "GET /handoffs" in refused.json()["hint"]
        assert c.get("/handoffs", headers=ALICE).json()["held"][0]["thread_id"] == "s2"
        assert c.post("/handoffs/s2/release", headers=carol).status_code == 200  # a supervisor may
        hand_off(c, "s3")
        c.post("/handoffs/s3/reply", json={"text": "Hi"}, headers=BOB)
        assert c.post("/handoffs/s3/release", headers=BOB).status_code == 200  # the holder may


def test_metrics_and_readiness_need_an_ops_key_or_the_desk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with service(tmp_path, monkeypatch, HARNESS_OPS_KEYS="key-prom=prometheus") as c:
        for path in ("/metrics", "/readyz"):
            assert c.get(path).status_code == 401
            assert c.get(path, headers=U1).status_code == 403
            assert c.get(path, headers={"Authorization": "Bearer key-prom"}).status_code == 200
            assert c.get(path, headers=ALICE).status_code == 200
        assert c.get("/threads", headers={"Authorization": "Bearer key-prom"}).status_code == 401  # nothing else
        assert c.get("/healthz").status_code == 200  # liveness stays open: it says only that the process is up
