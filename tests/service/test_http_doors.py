"""Every door of the HTTP service: bad input gets a 4xx with a one-line reason, never a 500; another user's
thread answers exactly as a thread that does not exist; nothing in a request sets who the caller is or their
role. The service runs embedded (SQLite queue, one executor thread) on the clean sim.
"""

from __future__ import annotations

import json
import string
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lg_harness.service.http import ServiceSettings, create_app

A, B, DESK = ({"Authorization": f"Bearer {k}"} for k in ("key-a", "key-b", "key-desk"))


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    data = Path(tmp_path_factory.mktemp("doors"))
    app = create_app(ServiceSettings(data_dir=data, database_url=None, chroma_url=None, model="sim:clean", threads=1,
                              lease_ttl=5.0, api_keys={"key-a": "U001", "key-b": "U002", "key-desk": "@agent"}))
    with TestClient(app, raise_server_exceptions=False) as c:
        sent = c.post("/threads/a-thread/messages", json={"text": "where is my order ORD-10134?"}, headers=A)
        assert sent.status_code == 200, sent.text
        yield c


def one_shape(response) -> dict:
    """Every error the service answers: a code to branch on, the message in one line, and what to do."""
    body = response.json()
    assert {"code", "message", "hint"} <= set(body), body
    assert all(isinstance(body[k], str) and body[k].strip() and "\n" not in body[k] for k in ("code", "message",
                                                                                             "hint")), body
    return body


def one_line_4xx(response) -> str:
    assert 400 <= response.status_code < 500, (response.status_code, response.text)
    return one_shape(response)["message"]


def test_a_lone_surrogate_in_the_body_is_a_clear_400(client: TestClient) -> None:
    raw = b'{"text": "hello \\ud800 there"}'
    reason = one_line_4xx(client.post("/threads/s/messages", content=raw, headers={**A, "content-type":
                                                                                    "application/json"}))
    assert "surrogate" in reason or "UTF-8" in reason


def test_a_message_id_too_big_for_the_database_is_not_found(client: TestClient) -> None:
    one_line_4xx(client.get("/messages/99999999999999999999999", headers=A))
    one_line_4xx(client.get("/messages/-1", headers=A))


@pytest.mark.parametrize("thread", ["a\x00b", "evil\u202egnp.exe", " ", "\t", "x" * 300, "a\nb", "\uff54\uff11",
                                    "\u043erder-1", "fi\ufb01le", "caf\u0065\u0301"])
def test_a_thread_id_with_controls_blanks_or_no_end_is_refused(client: TestClient, thread: str) -> None:
    path = quote(thread, safe="")
    reason = one_line_4xx(client.post(f"/threads/{path}/messages", json={"text": "hello"}, headers=A))
    assert "thread id" in reason
    one_line_4xx(client.get(f"/threads/{path}/history", headers=A))


@pytest.mark.parametrize("route", ["history", "state", "transcript"])
def test_another_users_thread_answers_as_one_that_does_not_exist(client: TestClient, route: str) -> None:
    theirs = client.get(f"/threads/a-thread/{route}", headers=B)
    nobody = client.get(f"/threads/no-such-thread/{route}", headers=B)
    assert theirs.status_code == nobody.status_code == 404
    assert theirs.json() == json.loads(nobody.text.replace("no-such-thread", "a-thread"))
    assert client.get(f"/threads/a-thread/{route}", headers=A).status_code == 200


def test_writing_to_another_users_thread_answers_as_for_no_thread(client: TestClient) -> None:
    """B cannot tell A's id from a free one: a fork or finish answers 404 alike, and a message starts B's own
    thread of that name (as on any free id), leaving A's thread as it was."""
    sent = client.post("/threads/taken/messages", json={"text": "where is my order ORD-10134?"}, headers=A)
    assert sent.status_code == 200
    before = client.get("/threads/taken/transcript", headers=A).json()
    for path, body in (("fork", {"checkpoint_id": "x"}), ("finish", {})):
        theirs = client.post(f"/threads/taken/{path}", json=body, headers=B)
        free = client.post(f"/threads/free-{path}/{path}", json=body, headers=B)
        assert theirs.status_code == free.status_code == 404, (path, theirs.text)
        assert theirs.json() == json.loads(free.text.replace(f"free-{path}", "taken"))
    theirs = client.post("/threads/taken/messages", json={"text": "hi"}, headers=B)
    free = client.post("/threads/free-send/messages", json={"text": "hi"}, headers=B)
    assert theirs.status_code == free.status_code == 200
    assert theirs.json()["thread_id"] == "taken" and theirs.json()["reply"] == free.json()["reply"]
    assert "ORD-" not in theirs.text and "U001" not in theirs.text
    assert client.get("/threads/taken/transcript", headers=A).json() == before, "A's thread is untouched"
    mine = client.get("/threads/taken/transcript", headers=B).json()
    assert [m["content"] for m in mine["messages"]] == ["hi", theirs.json()["reply"]] and mine["thread_id"] == "taken"
    assert "taken" in [t["thread_id"] for t in client.get("/threads", headers=B).json()["threads"]]


@pytest.mark.parametrize("field", [{"role": "vip"}, {"user_id": "U001"}, {"user": {"id": "U001"}}])
def test_a_customer_cannot_name_their_identity_or_role_in_the_body(client: TestClient, field: dict) -> None:
    reason = one_line_4xx(client.post("/threads/b-thread/messages", json={"text": "hello", **field}, headers=B))
    assert next(iter(field)) in reason


def test_a_message_id_with_a_newline_is_a_one_line_404(client: TestClient) -> None:
    reason = one_line_4xx(client.get("/messages/%0A", headers=A))
    assert "message ids are the numbers" in reason


def test_malformed_bodies_are_4xx(client: TestClient) -> None:
    for raw in (b"", b"{", b"[]", b'{"text": 5}', b'{"text": null}', b'"text"', b"\xff\xfe", b'{"text": "hi", "wait": "soon"}'):
        one_line_4xx(client.post("/threads/m/messages", content=raw, headers={**A, "content-type": "application/json"}))


ROUTES = [("POST", "/threads/{t}/messages"), ("POST", "/threads/{t}/messages/stream"), ("GET", "/threads/{t}/history"),
          ("GET", "/threads/{t}/state"), ("GET", "/threads/{t}/transcript"), ("POST", "/threads/{t}/fork"),
          ("POST", "/threads/{t}/finish"), ("GET", "/messages/{t}"), ("POST", "/handoffs/{t}/reply")]
json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(),
                           lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
                           max_leaves=6)
bodies = st.one_of(
    st.binary(max_size=40),
    st.builds(lambda d: json.dumps(d).encode(), json_values),
    st.builds(lambda d: json.dumps(d).encode(), st.fixed_dictionaries(
        {}, optional={"text": json_values, "wait": json_values, "policy": json_values, "checkpoint_id": json_values})),
)
ids = st.one_of(st.text(max_size=20), st.integers().map(str), st.text(alphabet=string.printable, max_size=200))


@pytest.mark.slow
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(route=st.sampled_from(ROUTES), thread=ids, body=bodies, who=st.sampled_from([A, B, DESK]))
def test_no_input_makes_a_500(client: TestClient, route: tuple[str, str], thread: str, body: bytes, who: dict) -> None:
    method, template = route
    path = template.format(t=quote(thread, safe="") or "%20")
    if method == "POST" and path.endswith("/messages"):  # never wait for a message that happens to be valid
        try:
            doc = json.loads(body)
            if isinstance(doc, dict):
                body = json.dumps({**doc, "wait": False}).encode()
        except ValueError:
            pass
    response = client.request(method, path, content=body if method == "POST" else None,
                              headers={**who, "content-type": "application/json"})
    assert response.status_code < 500, (method, path, body, response.status_code, response.text)
    if response.status_code >= 400 and "json" in response.headers.get("content-type", ""):
        one_line_4xx(response)


def raising(error: Exception):
    def route() -> None:
        raise error
    return route


def test_errors_say_whose_they_are_by_their_status(tmp_path: Path) -> None:
    """A usage error is the caller's to fix (400), a busy thread waits (409), any other run error is the
    service's and may pass (503): a client retries only what can work the second time."""
    from lg_harness.errors import RunError, UsageError
    from lg_harness.service.fencing import LeaseLost
    from lg_harness.service.leases import ThreadBusy

    app = create_app(ServiceSettings(data_dir=tmp_path, database_url=None, chroma_url=None, model="sim:clean", threads=1,
                              api_keys={"key-a": "U001"}))
    for path, error in (("/usage", UsageError("bad input")), ("/busy", ThreadBusy("busy")),
                        ("/lease", LeaseLost("lost")), ("/run", RunError("the model is down"))):
        app.add_api_route(path, raising(error))
    app.add_api_route("/broken", raising(RuntimeError("a bug")))
    with TestClient(app, raise_server_exceptions=False) as c:
        answers = {p: c.get(p, headers=A) for p in ("/usage", "/busy", "/lease", "/run", "/broken")}
    assert {p: r.status_code for p, r in answers.items()} == {"/usage": 400, "/busy": 409, "/lease": 503,
                                                              "/run": 503, "/broken": 500}
    codes = {p: one_shape(r)["code"] for p, r in answers.items()}
    assert codes == {"/usage": "invalid_request", "/busy": "thread_busy", "/lease": "unavailable",
                     "/run": "unavailable", "/broken": "internal"}
    assert "a bug" not in answers["/broken"].text, "an unexpected failure's text stays in the log"


def test_every_error_of_every_door_has_one_shape(client: TestClient) -> None:
    """401, 403, 404 (a thread, a message, a route), 405, 400 and 422 (FastAPI's validation) and the desk's
    409: each a JSON object with a code, a one-line message and a hint, and no other error shape."""
    answers = {
        "unauthenticated": client.get("/threads"),
        "forbidden": client.get("/handoffs", headers=A),
        "not_found": client.get("/threads/nobody-has-this/history", headers=A),
        "no_route": client.get("/no/such/route", headers=A),
        "method_not_allowed": client.delete("/threads", headers=A),
        "invalid_request": client.post("/threads/a-thread/messages", json={"txt": "hi"}, headers=A),
        "desk_conflict": client.post("/handoffs/a-thread/take", headers=DESK),
    }
    for code, response in answers.items():
        body = one_shape(response)
        assert body["code"] == code and "detail" not in body and "error" not in body, (code, body)
    assert answers["invalid_request"].status_code == 422 and "text" in answers["invalid_request"].json()["message"]
    assert "Bearer" in answers["unauthenticated"].json()["hint"]
    assert answers["no_route"].json()["message"] == "no route /no/such/route"


@pytest.mark.parametrize("thread", ["order-1", "订单-1", "заказ-1", "café", "a:b/c.d_e"])
def test_plain_ids_in_any_one_alphabet_are_taken_as_typed(thread: str) -> None:
    from lg_harness.graphs.thread_ids import check_thread_id

    assert check_thread_id(thread) == thread
