"""Private at rest, and ids a client can follow: what the service keeps of a message once it is done.

Masking personal data must never rewrite an identifier the service hands back (a thread id, a message id, an
order or ticket id), or a client following it lands on another thread; the text around the ids stays masked.
The service runs embedded (SQLite queue, one executor thread) on the clean sim.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from lg_harness.domains.helpdesk.db import HelpdeskDB
from lg_harness.domains.helpdesk.tools import add_ticket_comment, create_ticket
from lg_harness.graphs.app import Harness, Settings
from lg_harness.service.http import ServiceSettings, create_app
from lg_harness.service.leases import at_rest
from lg_harness.tools.context import ToolContext
from tests.support import patient_design

A, PHONE_USER = ({"Authorization": f"Bearer {k}"} for k in ("key-a", "key-p"))
MOBILE = "07700 900123"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TestClient, Path]]:
    data = Path(tmp_path_factory.mktemp("rest"))
    app = create_app(ServiceSettings(data_dir=data, database_url=None, chroma_url=None, model="sim:clean", threads=1,
                              lease_ttl=5.0, api_keys={"key-a": "U001", "key-p": "4155550123"}))
    with TestClient(app, raise_server_exceptions=False) as c:
        yield c, data


@pytest.mark.parametrize("thread", ["order-4155550123", "4155550123", "t_13812345678"])
def test_a_reply_names_the_thread_it_was_sent_on_however_phone_like_its_id(served, thread):
    client, _ = served
    sent = client.post(f"/threads/{thread}/messages", json={"text": f"where is ORD-10134? my mobile is {MOBILE}"},
                       headers=A)
    assert sent.status_code == 200, sent.text
    body = sent.json()
    assert body["thread_id"] == thread, "a client follows the id it is given back"
    assert client.get(f"/threads/{body['thread_id']}/history", headers=A).status_code == 200
    row = client.get(f"/messages/{body['message_id']}", headers=A).json()
    assert row["thread_id"] == thread and row["result"]["thread_id"] == thread
    assert MOBILE not in json.dumps({k: v for k, v in row["result"].items() if k != "reply"}), \
        "the text around the ids stays masked"


def test_the_owner_of_a_message_reads_it_back_whatever_their_user_id_looks_like(tmp_path):
    """A domain that takes any user id (the library): the queue checks the caller against the id it kept."""
    library = f"{Path(__file__).parents[1] / 'fixtures' / 'library_domain.py'}:DOMAIN"
    app = create_app(ServiceSettings(data_dir=tmp_path, database_url=None, chroma_url=None, model="sim:clean", threads=1,
                              lease_ttl=5.0, domain=library, api_keys={"key-p": "4155550123"}))
    with TestClient(app, raise_server_exceptions=False) as client:
        sent = client.post("/threads/p1/messages", json={"text": "hello"}, headers=PHONE_USER)
        assert sent.status_code == 200, sent.text
        got = client.get(f"/messages/{sent.json()['message_id']}", headers=PHONE_USER)
    assert got.status_code == 200, got.text
    assert got.json()["thread_id"] == "p1"


def test_a_finished_row_keeps_every_id_and_masks_what_surrounds_them():
    result = {"thread_id": "4155550123", "reply": f"we call {MOBILE}", "checkpoint_id": "1f0-4155550123",
              "slots": {"order_id": "ORD-4155550123", "note": f"mobile {MOBILE}"},
              "tool_calls": [{"id": "call_4155550123", "name": "get_order_status",
                              "args": {"order_id": "ORD-4155550123"},
                              "error": f"thread 4155550123: order ORD-4155550123 not found, ring {MOBILE}"}],
              "handoff": {"ticket": "HO-4155550123", "ledger_key": "4155550123:1:cancel_order:ab12"}}
    kept = at_rest(result, ("4155550123",))
    assert kept["thread_id"] == "4155550123" and kept["checkpoint_id"] == "1f0-4155550123"
    assert kept["slots"]["order_id"] == "ORD-4155550123" and kept["tool_calls"][0]["id"] == "call_4155550123"
    assert kept["tool_calls"][0]["args"] == {"order_id": "ORD-4155550123"}
    assert kept["handoff"] == result["handoff"]
    assert kept["tool_calls"][0]["error"] == "thread 4155550123: order ORD-4155550123 not found, ring [phone]"
    assert kept["slots"]["note"] == "mobile [phone]"
    assert kept["reply"] == result["reply"], "the reply the customer is owed"


EMAIL, CARD = "jane.roe@example.com", "4111 1111 1111 1111"
COMPLAINT = f"I want to file a complaint: the courier was rude. Reply to {EMAIL}, I paid with card {CARD}"


def test_a_complaint_rests_readable_with_its_contact_details_masked_and_no_key_holds_its_words(tmp_path):
    with Harness("sim:clean", design=patient_design(), settings=Settings(data_dir=tmp_path)) as h:
        h.send("c1", COMPLAINT, "U001")
        done = h.send("c1", "yes", "U001")
    assert [c["status"] for c in done.to_dict()["tool_calls"] if c["name"] == "file_complaint"] == ["ok"]
    with sqlite3.connect(tmp_path / "shop.sqlite") as shop:
        [(text,)] = shop.execute("SELECT text FROM complaints WHERE user_id = 'U001'").fetchall()
        keys = [k for (k,) in shop.execute("SELECT key FROM idempotency")]
    with sqlite3.connect(tmp_path / "ledger.sqlite") as ledger:
        rows = ledger.execute("SELECT key, args FROM change_ledger WHERE tool = 'file_complaint'").fetchall()
    assert "the courier was rude" in text, "the staff still read the complaint"
    assert "[email]" in text and "[card]" in text and EMAIL not in text and CARD not in text
    assert len(rows) == 1 and rows[0][0] in keys, "one change, under one key in the ledger and the shop"
    for secret in (EMAIL, CARD, "courier"):
        assert not any(secret in k for k in keys), (secret, keys)
    assert EMAIL not in rows[0][1] and CARD not in rows[0][1], "the ledger keeps the call masked"


def test_a_ticket_and_its_comments_rest_with_contact_details_masked():
    db = HelpdeskDB.fresh_copy()
    ctx = ToolContext(user_id="E1001", role="employee", thread_id="t1", extras={"helpdesk": db})
    made = create_ticket(ctx, short_description=f"VPN drops, call me on 07700 900123 or {EMAIL}")
    add_ticket_comment(ctx, ticket_id=made["ticket_id"], comment=f"still broken, my card {CARD} was charged")
    [ticket] = db.query("SELECT short_description FROM tickets WHERE id = ?", (made["ticket_id"],))
    [comment] = db.query("SELECT body FROM ticket_comments WHERE ticket_id = ?", (made["ticket_id"],))
    assert ticket["short_description"] == "VPN drops, call me on [phone] or [email]"
    assert made["short_description"] == ticket["short_description"], "the result says what was stored"
    assert comment["body"] == "still broken, my card [card] was charged"


def test_no_copy_of_a_finished_message_lingers_in_the_queue_files(tmp_path):
    """SQLite's write-ahead log keeps every page as first written until a checkpoint: the queue's masking of a
    finished row must reach the files, not only the rows a query reads."""
    from lg_harness.service.http import Worker

    secrets = ["07700 900123", "jane.roe@example.com", "4111111111111111"]
    rt = Worker(ServiceSettings(data_dir=tmp_path, database_url=None, chroma_url=None, model="sim:clean", threads=1,
                         api_keys={"k": "U001"}))
    try:
        rt.start()
        text = f"my mobile is {secrets[0]}, mail {secrets[1]}, card {secrets[2]}; where is ORD-10134?"
        mid = rt.submit("q", "send", {"text": text, "user_id": "U001", "role": None}, None)
        assert rt.queue.wait(mid, timeout=120)["status"] == "done"
        files = {p.name: p.read_bytes() for p in tmp_path.glob("queue.sqlite*")}  # while the worker still runs
    finally:
        rt.close()
    assert "queue.sqlite" in files
    for name, data in files.items():
        for secret in secrets:
            assert secret.encode() not in data, (name, secret)


def test_the_shops_other_free_text_rests_with_contact_details_masked():
    from lg_harness.domains.shop.backend import ShopDB
    from lg_harness.domains.shop.tools import cancel_order, request_return, transfer_to_human
    from tests.support import u001_order

    db = ShopDB.fresh_copy()

    def ctx(key: str) -> ToolContext:
        return ToolContext(user_id="U001", role="customer", thread_id="t1", idempotency_key=key, extras={"shop": db})

    why = f"it broke, ring 07700 900123 or mail {EMAIL}"
    request_return(ctx("k1"), order_id=u001_order("delivered", db), reason=why)
    cancel_order(ctx("k2"), order_id=u001_order("pending", db), reason=why)
    transfer_to_human(ctx("k3"), reason=why)
    stored = [db.query_one("SELECT reason FROM returns ORDER BY id DESC LIMIT 1")["reason"],
              db.query_one("SELECT reason FROM handoffs ORDER BY id DESC LIMIT 1")["reason"],
              json.loads(db.query_one("SELECT result_json FROM idempotency WHERE key = 'k2'")["result_json"])["reason"]]
    assert stored == ["it broke, ring [phone] or mail [email]"] * 3


def test_the_privacy_page_names_every_file_and_table_a_data_dir_holds(tmp_path):
    """docs/privacy.md says what each store keeps and for how long: a new file or table must be added there."""
    from lg_harness.service.http import Worker

    rt = Worker(ServiceSettings(data_dir=tmp_path, database_url=None, chroma_url=None, model="sim:clean", threads=1,
                         api_keys={"k": "U001"}))
    try:
        rt.start()
        mid = rt.submit("q", "send", {"text": "I moved, my address is 12 Main Street", "user_id": "U001",
                                      "role": None}, None)
        assert rt.queue.wait(mid, timeout=120)["status"] == "done"
        rt.harness.audit.record_desk("sam", "take", "q")
    finally:
        rt.close()
    page = (Path(__file__).resolve().parents[2] / "docs" / "privacy.md").read_text(encoding="utf-8")
    for path in tmp_path.rglob("*.sqlite*"):
        name = path.relative_to(tmp_path).as_posix()
        if name.startswith("memory/chroma/"):
            assert "`memory/chroma/`" in page
            continue
        assert f"`{name.removesuffix('-wal').removesuffix('-shm')}`" in page, name
        if path.name in ("shop.sqlite", "helpdesk.sqlite") or not name.endswith(".sqlite"):
            continue  # a domain's own tables are the domain's; its row says what they hold
        with sqlite3.connect(path) as conn:
            tables = [t for (t,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT "
                                                 "LIKE 'sqlite_%'")]
        for table in tables:
            assert f"`{table}`" in page, (name, table)
