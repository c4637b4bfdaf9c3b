"""Many workers on one Postgres and one Chroma server, through the HTTP service.

Four worker processes serve 400 messages on 50 threads sent concurrently: none is lost, none is served twice,
each thread's messages ran one at a time in arrival order; meanwhile twenty customers each cancel an order
(asked, then confirmed), and the shop's own tables, on the same Postgres, show each cancellation applied
exactly once. Then a worker is SIGKILLed in the middle of a message that changes an order, and another worker
finishes that message once the dead worker's lease has expired, applying the change once.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, LiteralString

import httpx
import pytest

from tests.engines import chroma_server, database_url, free_port, postgres_server, stop_group, wait_http  # noqa: F401

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

HARNESS = Path(sys.executable).with_name("harness")
KEY = "test-key"
AUTH = {"Authorization": f"Bearer {KEY}"}
USERS = [f"U{n:03d}" for n in range(1, 31)]  # the seeded shop's customers, each with a key of their own
USER_KEYS = ",".join(f"key-{u}={u}" for u in USERS)


def serve(data_dir: Path, db_url: str, chroma: str, *, workers: int, model: str, ttl: float,
          threads: int = 2) -> tuple[subprocess.Popen, str]:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("HARNESS_")}
    env.update(HF_HUB_OFFLINE="1", HARNESS_API_KEYS=f"{KEY}=U001,other-key=U002,desk-key=@agent,{USER_KEYS}",
               HARNESS_DATABASE_URL=db_url,
               HARNESS_CHROMA_URL=chroma)
    data_dir.mkdir(parents=True, exist_ok=True)
    log = data_dir / "serve.log"
    with open(log, "wb") as sink:
        proc = subprocess.Popen([str(HARNESS), "serve", "--workers", str(workers), "--threads", str(threads),
                                 "--port", str(port), "--model", model, "--lease-ttl", str(ttl),
                                 "--data-dir", str(data_dir)], env=env, stdout=subprocess.DEVNULL,
                                stderr=sink, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_http(f"{base}/readyz", timeout=180, proc=proc)
    except (RuntimeError, TimeoutError):
        stop(proc)
        raise AssertionError(f"harness serve did not start: {log.read_text()[-2000:]}") from None
    return proc, base


def stop(proc: subprocess.Popen) -> None:
    stop_group(proc)


def _query(url: str, schema: str) -> Any:
    import psycopg
    from psycopg.rows import dict_row

    def query(sql: LiteralString, *params: Any) -> list[dict[str, Any]]:
        with psycopg.connect(url, options=f"-c search_path={schema}") as conn, \
                conn.cursor(row_factory=dict_row) as cur:
            return cur.execute(sql, params).fetchall()

    return query


@pytest.fixture
def rows(database_url: str) -> Any:  # noqa: F811
    """The harness's tables."""
    return _query(database_url, "harness")


@pytest.fixture
def shop_rows(database_url: str) -> Any:  # noqa: F811
    """The shop's tables, which the workers share on the same database."""
    return _query(database_url, "shop")


def seeded_shop() -> Any:
    from lg_harness.domains.shop import ShopDB

    return ShopDB.fresh_copy()  # the same seed the workers' Postgres schema got


def _stock_after_cancelling(orders: list[str]) -> dict[str, int]:
    """Every variant's stock once each of ``orders`` was cancelled exactly once."""
    with seeded_shop() as db:
        stock = {r["sku"]: r["stock"] for r in db.query("SELECT sku, stock FROM variants")}
        for order in orders:
            for item in db.query("SELECT sku, qty FROM order_items WHERE order_id = ?", (order,)):
                stock[item["sku"]] += item["qty"]
    return stock


@pytest.fixture
def many(tmp_path: Path, database_url: str, chroma_server: str) -> Iterator[str]:  # noqa: F811
    proc, base = serve(tmp_path / "data", database_url, chroma_server, workers=4, model="sim:clean", ttl=10)
    yield base
    stop(proc)


TEXTS = ("hello, this is note {k}", "where is my order ORD-10134? (note {k})", "thanks for note {k}",
         "do you have bluetooth headphones? note {k}")


def test_four_workers_400_messages_50_threads_none_lost_none_twice_order_kept(many: str, rows: Any,
                                                                              shop_rows: Any) -> None:
    sends = [(f"thread-{t:02d}", TEXTS[k % len(TEXTS)].format(k=k)) for k in range(8) for t in range(50)]
    with seeded_shop() as db:  # each customer with a pending order cancels their first one
        cancels = {r["user_id"]: r["id"] for r in db.query(
            "SELECT user_id, MIN(id) AS id FROM orders WHERE status = 'pending' GROUP BY user_id")}

    def send(item: tuple[str, str]) -> tuple[str, str, int, dict[str, Any]]:
        thread, text = item
        with httpx.Client(base_url=many, headers=AUTH, timeout=300) as client:
            r = client.post(f"/threads/{thread}/messages", json={"text": text})
        return thread, text, r.status_code, r.json()

    def cancel(user: str) -> list[tuple[int, dict[str, Any]]]:
        """One customer's conversation: ask, confirm, thank (one message after another, as a person does)."""
        out = []
        with httpx.Client(base_url=many, headers={"Authorization": f"Bearer key-{user}"}, timeout=300) as client:
            for text in (f"please cancel my order {cancels[user]}", "yes", "thanks"):
                r = client.post(f"/threads/cancel-{user}/messages", json={"text": text})
                out.append((r.status_code, r.json()))
        return out

    with ThreadPoolExecutor(64) as pool:
        conversations = [pool.submit(cancel, user) for user in cancels]
        results = list(pool.map(send, sends))
        changes = {user: c.result() for user, c in zip(cancels, conversations, strict=True)}
    assert [(code, body) for _, _, code, body in results if code != 200] == []
    assert all(body["reply"] for _, _, _, body in results)
    assert [(u, code, body) for u, out in changes.items() for code, body in out if code != 200] == []
    for user, (asked, confirmed, _) in changes.items():
        assert "confirm" in asked[1]["reply"].lower() and "cancelled" in confirmed[1]["reply"], (user, asked, confirmed)
    # At the domain: each asked-for cancellation applied exactly once, whichever worker served it.
    assert len(cancels) == 20
    orders = {r["id"]: r["status"] for r in shop_rows("SELECT id, status FROM orders")}
    with seeded_shop() as db:
        seeded = {r["id"]: r["status"] for r in db.query("SELECT id, status FROM orders")}
    assert {o for o in orders if orders[o] != seeded[o]} == set(cancels.values())
    assert {orders[o] for o in cancels.values()} == {"cancelled"}
    applied = shop_rows("SELECT result_json FROM idempotency WHERE tool = 'cancel_order'")
    assert sorted(json.loads(r["result_json"])["order_id"] for r in applied) == sorted(cancels.values())
    stock = {r["sku"]: r["stock"] for r in shop_rows("SELECT sku, stock FROM variants")}
    assert stock == _stock_after_cancelling(list(cancels.values()))  # reserved stock put back once, not twice
    queue = rows("SELECT * FROM thread_queue WHERE thread_id LIKE 'thread-%%' ORDER BY id")
    assert len(queue) == 400 and {r["status"] for r in queue} == {"done"}
    assert {r["attempts"] for r in queue} == {1}
    assert len({r["worker"] for r in queue}) == 4  # every worker served some
    by_thread: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in queue:
        by_thread[r["thread_id"]].append(r)
    sent_ids = {body["message_id"]: (thread, text) for thread, text, _, body in results}
    assert len(sent_ids) == 400
    for thread, items in by_thread.items():
        # Arrival order is the queue's order; the transcript must show the messages in exactly that order, once.
        expected = [sent_ids[r["id"]][1] for r in items]
        transcript = rows("SELECT role, content FROM transcript WHERE thread_id = %s ORDER BY seq", thread)
        assert [m["content"] for m in transcript if m["role"] == "user"] == expected
        assert [m["role"] for m in transcript] == ["user", "assistant"] * 8
        for before, after in zip(items, items[1:], strict=False):  # one at a time
            assert before["finished_at"] <= after["started_at"]
    turns = rows("SELECT thread_id, COUNT(*) AS n FROM messages WHERE thread_id LIKE 'thread-%%' GROUP BY thread_id")
    assert {r["n"] for r in turns} == {8}  # the audit saw each message once


def test_a_killed_workers_message_is_finished_by_another_after_its_lease_expires(
        tmp_path: Path, database_url: str, chroma_server: str, rows: Any, shop_rows: Any) -> None:  # noqa: F811
    proc, base = serve(tmp_path / "data", database_url, chroma_server, workers=2, model="paced:1.5:clean", ttl=3,
                       threads=1)
    order = "ORD-10185"  # U001's, pending
    try:
        # A new connection per request: a kept-alive one may lead to the worker that is about to die.
        with httpx.Client(base_url=base, headers=AUTH, timeout=120,
                          limits=httpx.Limits(max_keepalive_connections=0)) as client:
            asked = client.post("/threads/k/messages", json={"text": f"please cancel my order {order}"}).json()
            assert "confirm" in asked["reply"].lower()
            r = client.post("/threads/k/messages", json={"text": "yes", "wait": False})
            assert r.status_code == 202
            mid = r.json()["message_id"]
            deadline = time.monotonic() + 60
            while (row := client.get(f"/messages/{mid}").json())["status"] != "running":
                assert time.monotonic() < deadline, row
                time.sleep(0.1)
            # Wait until the change has been made (the action node has run), so the message is truly half done:
            # the model is still writing the reply when its worker dies.
            while not rows("SELECT 1 FROM message_events WHERE message_id = %s AND event LIKE '%%action%%'", mid):
                assert time.monotonic() < deadline
                time.sleep(0.05)
            busy = client.post("/threads/k/messages", json={"text": "and another", "policy": "reject"})
            assert busy.status_code == 409 and busy.json()["code"] == "thread_busy" and "busy" in busy.json()["message"]
            victim = row["worker"]
            os.kill(int(victim.split(":")[1]), signal.SIGKILL)
            killed_at = time.monotonic()
            while (row := client.get(f"/messages/{mid}").json())["status"] not in ("done", "failed"):
                assert time.monotonic() < deadline + 60, row
                time.sleep(0.2)
            finished_after = time.monotonic() - killed_at
            assert row["status"] == "done", row
            assert row["attempts"] == 2 and row["worker"] != victim
            assert finished_after >= 2.0  # not before the 3 s lease could have expired
            assert order in row["result"]["reply"] and "cancelled" in row["result"]["reply"]
            transcript = client.get("/threads/k/transcript").json()["messages"]
            assert [(m["role"], m["content"]) for m in transcript] == [
                ("user", f"please cancel my order {order}"), ("assistant", asked["reply"]),
                ("user", "yes"), ("assistant", row["result"]["reply"])]
            # The change the message asked for, applied once although two workers ran the message.
            assert shop_rows("SELECT status FROM orders WHERE id = %s", order) == [{"status": "cancelled"}]
            assert len(shop_rows("SELECT key FROM idempotency WHERE tool = 'cancel_order'")) == 1
            stock = {r["sku"]: r["stock"] for r in shop_rows("SELECT sku, stock FROM variants")}
            assert stock == _stock_after_cancelling([order])
            # The thread goes on as usual; this time its node events stream as they happen.
            with client.stream("POST", "/threads/k/messages/stream", json={"text": "thanks"}) as stream:
                events = [line.removeprefix("event: ") for line in stream.iter_lines() if line.startswith("event: ")]
            assert events[0] == "queued" and events[-1] == "result" and "node" in events
            assert [m["role"] for m in client.get("/threads/k/transcript").json()["messages"]] == ["user", "assistant"] * 3
            _service_guards(client)
            # interrupt: the running message stops at its next node, the newer one runs instead.
            slow = client.post("/threads/k/messages", json={"text": "where is my order ORD-10135?", "wait": False})
            slow_id = slow.json()["message_id"]
            while client.get(f"/messages/{slow_id}").json()["status"] != "running":
                time.sleep(0.1)
            newer = client.post("/threads/k/messages", json={"text": "thanks", "policy": "interrupt"})
            assert newer.status_code == 200 and newer.json()["phase"] == "done"
            stopped = client.get(f"/messages/{slow_id}").json()
            assert stopped["status"] == "cancelled" and "interrupted" in stopped["error"]
    finally:
        stop(proc)


def _service_guards(client: httpx.Client) -> None:
    """Who may do what: the user comes from the key, never from the body."""
    bare = {"Authorization": ""}
    assert client.post("/threads/k/messages", json={"text": "hi"}, headers=bare).status_code == 401
    assert client.post("/threads/k/messages", json={"text": "hi"},
                       headers={"Authorization": "Bearer nope"}).status_code == 401
    other = {"Authorization": "Bearer other-key"}
    # another user's thread answers as one that does not exist: a read 404, a message starts their own thread
    # of that name (as on any free id); nobody names a user in the body
    assert client.get("/threads/k/history", headers=other).status_code == 404
    theirs = client.post("/threads/k/messages", json={"text": "hello"}, headers=other)
    assert theirs.status_code == 200 and theirs.json()["thread_id"] == "k"
    assert client.post("/threads/k/messages", json={"text": "cancel my order", "user_id": "U001"},
                       headers=other).status_code == 403
    assert client.get("/handoffs").status_code == 403
    desk = client.get("/handoffs", headers={"Authorization": "Bearer desk-key"})
    assert desk.status_code == 200 and desk.json() == {"waiting": [], "held": []}
    history = client.get("/threads/k/history").json()
    assert history["thread_id"] == "k" and {"checkpoint_id", "step", "phase"} <= set(history["checkpoints"][0])
    state = client.get("/threads/k/state").json()
    assert state["turn"] == 3 and state["next"] == []
    ops = {"Authorization": "Bearer desk-key"}  # /metrics and /readyz: an ops key or the desk, not a customer
    assert client.get("/metrics").status_code == 403 and client.get("/readyz").status_code == 403
    metrics = client.get("/metrics", headers=ops).text
    assert "harness_queue_messages{status=\"done\"}" in metrics
    assert client.get("/readyz", headers=ops).json()["backend"] == "postgres"
    assert "/threads/{thread_id}/messages" in client.get("/openapi.json").json()["paths"]
