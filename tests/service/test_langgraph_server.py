"""``langgraph dev`` serves the harness graph from ``langgraph.json``; the official SDK drives it.

The server runs as a subprocess on a free local port, offline: the CLI's analytics are off, LangSmith
tracing is off, and every proxy variable points at a dead local port (only 127.0.0.1 is exempt), so a
server that needed the network would fail here instead of quietly reaching out. It runs in a temporary
folder (the in-memory runtime writes ``.langgraph_api/`` into its working directory) from a copy of the
project's ``langgraph.json`` whose paths are made absolute. The graph uses the ``sim:clean`` model (no
seeded faults, so every answer is the intended one) and a shop database in a temporary data dir.

Needs ``langgraph-cli[inmem]`` (the dev extra); skipped with that hint when it is not installed.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from importlib.util import find_spec
from pathlib import Path

import httpx
import pytest
from langgraph_sdk import get_sync_client

REPO = Path(__file__).resolve().parents[2]
GRAPH_ID = "harness"
STARTUP_TIMEOUT_S = 120.0
USER = {"id": "U001", "role": "customer"}
KEYS = {"key-u001": "U001", "key-u002": "U002", "key-desk": "@agent"}  # HARNESS_API_KEYS of the server


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def absolute_config(workdir: Path) -> Path:
    """The project's langgraph.json, with graph paths and dependencies made absolute, written to ``workdir``."""
    config = json.loads((REPO / "langgraph.json").read_text())
    graphs = {}
    for graph_id, spec in config["graphs"].items():
        path, _, variable = spec.rpartition(":")
        graphs[graph_id] = f"{(REPO / path).resolve()}:{variable}"
    config["graphs"] = graphs
    config["dependencies"] = [str((REPO / dep).resolve()) for dep in config.get("dependencies", [])]
    path, _, variable = config["auth"]["path"].rpartition(":")
    config["auth"] = {**config["auth"], "path": f"{(REPO / path).resolve()}:{variable}"}
    if "http" in config:
        path, _, variable = config["http"]["app"].rpartition(":")
        config["http"] = {**config["http"], "app": f"{(REPO / path).resolve()}:{variable}"}
    target = workdir / "langgraph.json"
    target.write_text(json.dumps(config, indent=2))
    return target


def offline_env(data_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.upper().startswith(("LANGSMITH_", "LANGCHAIN_", "LANGGRAPH_")) and "PROXY" not in k.upper()}
    dead = "http://127.0.0.1:9"  # discard port: any outbound request fails at once
    env.update({
        "LANGGRAPH_CLI_NO_ANALYTICS": "1",
        "LANGSMITH_TRACING": "false",
        "LANGCHAIN_TRACING_V2": "false",
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "HTTP_PROXY": dead, "HTTPS_PROXY": dead, "ALL_PROXY": dead,
        "http_proxy": dead, "https_proxy": dead, "all_proxy": dead,
        "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost",
        "HARNESS_DATA_DIR": str(data_dir),
        "HARNESS_MODEL": "sim:clean",  # the plumbing is under test here, not the sim's seeded faults
        "HARNESS_DESIGN": "harness",
        "PYTHONUNBUFFERED": "1",
        "HARNESS_API_KEYS": ",".join(f"{k}={u}" for k, u in KEYS.items()),
    })
    return env


def wait_until_up(url: str, proc: subprocess.Popen, log: Path) -> float:
    started = time.monotonic()
    while time.monotonic() - started < STARTUP_TIMEOUT_S:
        if proc.poll() is not None:
            pytest.fail(f"langgraph dev exited with {proc.returncode}:\n{log.read_text()[-4000:]}")
        try:
            if httpx.get(f"{url}/ok", timeout=2, trust_env=False).status_code == 200:
                return time.monotonic() - started
        except httpx.HTTPError:
            pass
        time.sleep(0.25)
    pytest.fail(f"langgraph dev did not answer /ok within {STARTUP_TIMEOUT_S:g} s:\n{log.read_text()[-4000:]}")


def start_langgraph_dev(workdir: Path, data_dir: Path) -> tuple[subprocess.Popen, str, Path]:
    """``langgraph dev`` on the project's config, offline, on a free port: the process, its URL and its log."""
    config = absolute_config(workdir)
    url = f"http://127.0.0.1:{free_port()}"
    log = workdir / "server.log"
    langgraph = Path(sys.executable).with_name("langgraph")
    assert langgraph.exists(), f"no langgraph script beside {sys.executable}; install 'langgraph-cli[inmem]'"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [str(langgraph), "dev", "--config", str(config), "--no-browser", "--no-reload",
             "--host", "127.0.0.1", "--port", url.rsplit(":", 1)[1]],
            cwd=workdir, env=offline_env(data_dir), stdout=out, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, start_new_session=True)
    return proc, url, log


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is not None:
        return
    os.killpg(proc.pid, signal.SIGTERM)  # its own session: the server and anything it started
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=15)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    from lg_harness.domains.shop.backend import ShopDB

    # find_spec, not import: importing langgraph_runtime_inmem creates .langgraph_api/ in the working directory
    missing = [p for p in ("langgraph_cli", "langgraph_api", "langgraph_runtime_inmem") if find_spec(p) is None]
    if missing:
        pytest.skip(f"langgraph dev needs the dev extra (pip install 'langgraph-cli[inmem]'); missing {missing}")
    workdir = tmp_path_factory.mktemp("langgraph-dev")
    data_dir = workdir / "data"
    data_dir.mkdir()
    shop = ShopDB.open(data_dir / "shop.sqlite")  # seeded now, so tests can read ids; the server opens the same file
    orders = {status: shop.query_one("SELECT id FROM orders WHERE user_id = 'U001' AND status = ? ORDER BY id",
                                     (status,))["id"] for status in ("shipped", "delivered")}
    proc, url, log = start_langgraph_dev(workdir, data_dir)
    try:
        startup_s = wait_until_up(url, proc, log)
        clients = {user: get_sync_client(url=url, api_key=None, headers={"Authorization": f"Bearer {key}"})
                   for key, user in KEYS.items()}
        yield {"url": url, "client": clients["U001"], "other": clients["U002"], "desk": clients["@agent"],
               "shop": shop, "orders": orders, "log": log, "startup_s": startup_s, "data_dir": data_dir}
        for client in clients.values():
            client.close()
    finally:
        stop(proc)
        shop.close()


def test_factory_compiles_without_checkpointer_and_takes_preset_designs(tmp_path, monkeypatch):
    import asyncio

    from lg_harness.errors import HarnessError
    from lg_harness.service import server as module

    monkeypatch.setenv("HARNESS_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("HARNESS_DESIGN", raising=False)
    monkeypatch.delenv("HARNESS_MODEL", raising=False)
    try:
        default = asyncio.run(module.make_graph({"configurable": {"thread_id": "t"}}))
        assert default.name == "harness:harness" and default.checkpointer is None
        assert asyncio.run(module.make_graph({})) is default  # compiled once, reused
        assert asyncio.run(module.make_graph({"configurable": {"design": "naive"}})).name == "harness:naive"
        with pytest.raises(HarnessError, match="unknown design"):
            module.graph_for({"configurable": {"design": str(tmp_path / "design.yaml")}})
        assert (tmp_path / "data" / "shop.sqlite").is_file()
        assert (tmp_path / "data" / "ledger.sqlite").is_file(), "changing calls are recorded on the server too"
    finally:
        module.reset()


def test_langgraph_json_points_at_the_factory_and_the_auth_hook():
    config = json.loads((REPO / "langgraph.json").read_text())
    path, _, variable = config["graphs"][GRAPH_ID].rpartition(":")
    assert (REPO / path).resolve() == REPO / "lg_harness" / "service" / "server.py" and variable == "make_graph"
    assert config["dependencies"] == ["."]
    path, _, variable = config["auth"]["path"].rpartition(":")
    assert (REPO / path).resolve() == REPO / "lg_harness" / "service" / "server_auth.py" and variable == "auth"


def send(client, thread_id: str, text: str) -> dict:
    """One user message as a run; returns the thread state afterwards."""
    client.runs.wait(thread_id, GRAPH_ID, input={"messages": [{"role": "user", "content": text}], "user": USER},
                     raise_error=True)
    return client.threads.get_state(thread_id)


@pytest.mark.slow
def test_server_serves_the_harness_graph(server):
    info = httpx.get(f"{server['url']}/info", timeout=5, trust_env=False).json()
    assert info.get("version")
    assistants = server["client"].assistants.search(graph_id=GRAPH_ID)
    assert [a["graph_id"] for a in assistants] == [GRAPH_ID]
    graph = server["client"].assistants.get_graph(assistants[0]["assistant_id"])
    nodes = {n["id"] for n in graph["nodes"]}
    assert {"intent", "collect", "action", "reply", "self_check", "handoff", "human"} <= nodes


def test_order_status_over_the_server(server):
    client, order = server["client"], server["orders"]["shipped"]
    thread = client.threads.create()
    state = send(client, thread["thread_id"], f"Where is my order {order}?")
    values = state["values"]
    status = server["shop"].query_one("SELECT status FROM orders WHERE id = ?", (order,))["status"]
    seen = {k: values.get(k) for k in ("reply", "intent", "slots", "missing_slots", "tool_log")}
    assert state["next"] == [], seen
    assert order in values["reply"] and status in values["reply"], seen
    assert [(c["name"], c["args"], c["status"]) for c in values["tool_log"]] == [
        ("get_order_status", {"order_id": order}, "ok")]
    assert values["user"] == USER and values["intent"] == "order_status"


@pytest.mark.slow
def test_second_message_continues_the_thread(server):
    client, order = server["client"], server["orders"]["delivered"]
    thread_id = client.threads.create()["thread_id"]
    first = send(client, thread_id, f"Where is my order {order}?")
    assert "delivered" in first["values"]["reply"]
    asked = send(client, thread_id, "I want to return it")
    assert asked["values"]["pending_change"] and order in asked["values"]["reply"], "harness confirms changes"
    assert server["shop"].query_one("SELECT id FROM returns WHERE order_id = ?", (order,)) is None
    second = send(client, thread_id, "yes")
    values = second["values"]
    assert second["next"] == []
    assert values["intent"] == "return_order"
    calls = [(c["name"], c["args"].get("order_id"), c["status"]) for c in values["tool_log"]]
    assert calls == [("request_return", order, "ok")], "the order id should come from the first message"
    assert order in values["reply"]
    assert server["shop"].query_one("SELECT id FROM returns WHERE order_id = ?", (order,)) is not None
    from lg_harness.tools.ledger import SqliteLedger

    ledger = SqliteLedger(server["data_dir"] / "ledger.sqlite")  # the server recorded the change and its result
    [key] = [c["ledger_key"] for c in values["tool_log"] if c["name"] == "request_return"]
    entry = ledger.get(key)
    assert entry is not None and entry.status == "settled" and entry.thread_id == thread_id
    ledger.close()
    history = client.threads.get_history(thread_id, limit=100)
    assert len(history) > 4  # checkpoints of both runs, kept by the server's checkpointer


@pytest.mark.slow
def test_handoff_interrupt_and_human_resume(server):
    client = server["client"]
    thread_id = client.threads.create()["thread_id"]
    waiting = send(client, thread_id, "I want to talk to a human")
    assert waiting["next"] == ["human"]
    interrupts = [i for task in waiting["tasks"] for i in task.get("interrupts") or []]
    assert interrupts, "the run should end interrupted at node 'human'"
    assert interrupts[0]["value"]["reason"] == "customer asked for a human"
    ticket = waiting["values"]["handoff"]["ticket"]
    assert str(ticket) in waiting["values"]["reply"]
    row = server["shop"].query_one("SELECT status FROM handoffs WHERE thread_id = ?", (thread_id,))
    assert row is not None and row["status"] == "waiting"
    assert client.threads.get(thread_id)["status"] == "interrupted"

    with pytest.raises(Exception, match="403|desk"):  # the customer cannot answer as the human agent
        client.runs.wait(thread_id, GRAPH_ID, command={"resume": {"text": "all done, refund sent"}}, raise_error=True)
    server["desk"].runs.wait(thread_id, GRAPH_ID, command={"resume": {"text": "Hi, Sam here"}}, raise_error=True)
    done = client.threads.get_state(thread_id)
    assert done["next"] == []
    assert done["values"]["reply"] == "Hi, Sam here"
    last = done["values"]["messages"][-1]
    assert last["type"] == "ai" and last["content"] == "Hi, Sam here" and last["name"] == "human_agent"
    assert done["values"]["handoff"]["answered"] is True
    assert client.threads.get(thread_id)["status"] == "idle"


# ------------------------------------------------------------------------------------------ owners


def status_of(call) -> int:
    """The HTTP status a failing SDK call ended with."""
    try:
        call()
    except httpx.HTTPStatusError as err:
        return err.response.status_code
    return 200


def test_a_user_reads_and_runs_only_their_own_threads(server):
    mine, other, desk = server["client"], server["other"], server["desk"]
    thread_id = mine.threads.create()["thread_id"]
    send(mine, thread_id, f"Where is my order {server['orders']['shipped']}?")
    assert mine.threads.get(thread_id)["metadata"]["owner"] == "U001"

    # U002 does not see U001's thread: not its state, history, runs or search hits
    assert status_of(lambda: other.threads.get(thread_id)) == 404
    assert status_of(lambda: other.threads.get_state(thread_id)) == 404
    assert status_of(lambda: other.threads.get_history(thread_id)) == 404
    assert thread_id not in {t["thread_id"] for t in other.threads.search(limit=100)}
    assert status_of(lambda: other.runs.list(thread_id)) in (200, 404) and not _safe_runs(other, thread_id)
    turns = mine.threads.get_state(thread_id)["values"]["turn"]
    assert status_of(lambda: other.runs.wait(thread_id, GRAPH_ID, raise_error=True, input={
        "messages": [{"role": "user", "content": "hello"}], "user": {"id": "U002"}})) == 404
    assert status_of(lambda: other.threads.delete(thread_id)) == 404
    assert mine.threads.get_state(thread_id)["values"]["turn"] == turns, "U002's run never reached the thread"

    # nobody acts as someone else on their own thread either
    own = other.threads.create()["thread_id"]
    assert status_of(lambda: other.runs.wait(own, GRAPH_ID, raise_error=True, input={
        "messages": [{"role": "user", "content": "hello"}], "user": USER})) == 403
    mine_too = mine.threads.create()["thread_id"]  # U001 is a customer, and cannot say otherwise
    assert status_of(lambda: mine.runs.wait(mine_too, GRAPH_ID, raise_error=True, input={
        "messages": [{"role": "user", "content": "hello"}], "user": {"id": "U001", "role": "vip"}})) == 403
    # the desk sees every thread; an unauthenticated caller sees nothing
    assert desk.threads.get_state(thread_id)["values"]["user"]["id"] == "U001"
    assert httpx.get(f"{server['url']}/threads/{thread_id}", timeout=5, trust_env=False).status_code == 401
    wrong = httpx.get(f"{server['url']}/threads/{thread_id}", headers={"Authorization": "Bearer nope"}, timeout=5,
                      trust_env=False)
    assert wrong.status_code == 401


@pytest.mark.slow
def test_no_door_of_the_server_hands_out_another_users_thread(server):
    """Create-if-exists, copy, state writes, history, runs, search: B never gets A's thread or its messages."""
    mine = server["client"]
    thread_id = mine.threads.create()["thread_id"]
    send(mine, thread_id, f"Where is my order {server['orders']['shipped']}?")
    url, headers = server["url"], {"Authorization": "Bearer key-u002"}

    def as_b(method: str, path: str, **body) -> httpx.Response:
        return httpx.request(method, f"{url}{path}", headers=headers, json=body or None, timeout=30, trust_env=False)

    taken = as_b("POST", "/threads", thread_id=thread_id, if_exists="do_nothing")
    assert taken.status_code >= 400 and "ORD-" not in taken.text and "U001" not in taken.text, taken.text
    nobody = str(uuid.uuid4())  # a thread that does not exist: A's must answer B exactly as it does
    for method, path, body in (("POST", "/copy", {}), ("POST", "/state", {"values": {"reply": "x"}}),
                               ("GET", "/state", {}), ("POST", "/history", {"limit": 5}), ("GET", "/runs", {}),
                               ("PATCH", "", {"metadata": {"owner": "U002"}}), ("GET", "", {}), ("DELETE", "", {})):
        got, absent = as_b(method, f"/threads/{thread_id}{path}", **body), as_b(method, f"/threads/{nobody}{path}", **body)
        assert (got.status_code, "ORD-" in got.text) == (absent.status_code, False), (method, path, got.text)
    found = as_b("POST", "/threads/search", metadata={"owner": "U001"}, limit=100)
    assert thread_id not in found.text
    assert mine.threads.get(thread_id)["metadata"]["owner"] == "U001"


def test_a_run_acts_for_its_caller_whatever_user_the_input_leaves_out(server):
    other = server["other"]
    thread_id = other.threads.create()["thread_id"]
    other.runs.wait(thread_id, GRAPH_ID, input={"messages": [{"role": "user", "content": "hello"}]},
                    raise_error=True)
    assert other.threads.get_state(thread_id)["values"]["user"] == {"id": "U002", "role": "vip"}  # the shop's record


def _safe_runs(client, thread_id: str) -> list:
    try:
        return client.runs.list(thread_id)
    except httpx.HTTPStatusError:
        return []


# ------------------------------------------------------------------------------------------ state writes


@pytest.mark.slow
def test_a_customer_cannot_write_another_customers_change_into_state_and_run_it(server):
    """Issue 40's attack: B writes A's id and a confirmed cancel of A's order into a thread's state (as node
    ``action``, or through a run's command), then runs the thread with no input. A's order stays as it was."""
    other, shop = server["other"], server["shop"]
    order = shop.query_one("SELECT id FROM orders WHERE user_id = 'U001' AND status = 'pending' ORDER BY id")["id"]
    call = {"name": "cancel_order", "args": {"order_id": order}, "id": "planted", "type": "tool_call"}
    planted = {"user": {"id": "U001", "role": "customer"},
               "planned_calls": {"round": 1, "calls": [call], "emitted": [{"order_id": order}], "confirmed": True}}
    thread_id = other.threads.create()["thread_id"]
    assert status_of(lambda: other.threads.update_state(thread_id, planted, as_node="action")) == 403
    assert status_of(lambda: other.runs.wait(thread_id, GRAPH_ID, command={"update": planted, "goto": "action"},
                                             raise_error=True)) == 403
    # an old checkpoint of B's own used thread, whose user was still empty, cannot be written either
    used = other.threads.create()["thread_id"]
    other.runs.wait(used, GRAPH_ID, input={"messages": [{"role": "user", "content": "hello"}]}, raise_error=True)
    first = other.threads.get_history(used, limit=100)[-1]["checkpoint"]
    assert status_of(lambda: other.threads.update_state(used, planted, as_node="action", checkpoint=first)) == 403
    for thread in (thread_id, used):  # nothing planted: the run has nothing to do (or is refused)
        other.runs.wait(thread, GRAPH_ID, input=None, raise_error=False)
    assert shop.query_one("SELECT status FROM orders WHERE id = ?", (order,))["status"] == "pending"
    # the desk may still write state (an operator's repair), and the graph still acts only for the thread's user
    assert server["desk"].threads.get_state(thread_id)["values"].get("user") in (None, {})


def test_a_customer_cannot_read_another_customers_orders_through_a_planted_user(server):
    other = server["other"]
    thread_id = other.threads.create()["thread_id"]
    call = {"name": "list_my_orders", "args": {}, "id": "planted", "type": "tool_call"}
    planted = {"user": {"id": "U001", "role": "customer"},
               "planned_calls": {"round": 1, "calls": [call], "emitted": [{}], "confirmed": False}}
    assert status_of(lambda: other.threads.update_state(thread_id, planted, as_node="action")) == 403
    a_orders = {r["id"] for r in server["shop"].query("SELECT id FROM orders WHERE user_id = 'U001'")}
    state = other.threads.get_state(thread_id)
    assert not any(o in json.dumps(state) for o in a_orders)


def test_an_owner_cannot_plant_their_thread_in_another_customers_list(server):
    mine, other = server["client"], server["other"]
    thread_id = other.threads.create()["thread_id"]
    other.threads.update(thread_id, metadata={"owner": "U001", "topic": "x"})
    assert other.threads.get(thread_id)["metadata"]["owner"] == "U002"
    assert other.threads.get(thread_id)["metadata"]["topic"] == "x"  # other metadata is the owner's to change
    assert thread_id not in {t["thread_id"] for t in mine.threads.search(limit=100)}


def test_crons_and_the_store_are_the_desks_alone(server):
    mine, desk = server["client"], server["desk"]
    assistant = mine.assistants.search(graph_id=GRAPH_ID)[0]["assistant_id"]
    assert status_of(lambda: mine.crons.create(assistant, schedule="0 0 * * *", input={
        "messages": [{"role": "user", "content": "hello"}]})) == 403
    assert status_of(lambda: mine.store.put_item(("notes",), "k", {"v": 1})) == 403
    assert status_of(lambda: mine.store.search_items(("notes",))) == 403
    desk.store.put_item(("notes",), "k", {"v": 1})
    assert desk.store.get_item(("notes",), "k")["value"] == {"v": 1}


def test_a_customer_cannot_cancel_or_join_another_customers_run(server):
    mine, other = server["client"], server["other"]
    thread_id = mine.threads.create()["thread_id"]
    run = mine.runs.create(thread_id, GRAPH_ID, input={"messages": [{"role": "user", "content": "hello"}]})
    assert status_of(lambda: other.runs.cancel(thread_id, run["run_id"])) == 404
    assert status_of(lambda: other.runs.join(thread_id, run["run_id"])) == 404
    mine.runs.join(thread_id, run["run_id"])
    assert mine.runs.get(thread_id, run["run_id"])["status"] == "success"


def test_bodies_the_servers_routes_cannot_take_get_a_422_not_a_500(server):
    """What the fuzzer found (tests/service/test_fuzz_doors.py): each once answered 500 by langgraph-api."""
    url, mine, desk = server["url"], {"Authorization": "Bearer key-u001"}, {"Authorization": "Bearer key-desk"}

    def post(path: str, body, headers=mine) -> httpx.Response:
        return httpx.post(f"{url}{path}", json=body, headers=headers, timeout=30, trust_env=False)

    server["client"].threads.create()  # a thread with no values yet: a values search once failed on it
    for path, body, headers in (("/threads/search", {"values": {"x": 1}}, mine),
                                ("/threads/count", {"values": {"x": 1}}, mine),
                                ("/runs", {"assistant_id": "harness", "after_seconds": 1e20}, mine),
                                ("/runs/batch", [{"assistant_id": "harness", "after_seconds": -1e16}], mine),
                                ("/store/items/search", {}, desk),
                                ("/runs/crons", {"assistant_id": "harness"}, desk),
                                ("/store/namespaces", {"offset": 10**30}, desk)):
        got = post(path, body, headers)
        assert got.status_code == 422 and got.json()["message"], (path, got.status_code, got.text)
    assert post("/store/items/search", {"namespace_prefix": ["notes"]}).status_code == 403, "the store: desk only"
    assert post("/threads/search", {"limit": 5}).status_code == 200


def test_the_in_memory_runtimes_developer_routes_are_closed_to_everyone(server):
    """A raw read of any thread and a wipe of every store, served by langgraph dev with no authentication."""
    mine = server["client"]
    thread_id = mine.threads.create()["thread_id"]
    for method, path in (("GET", f"/internal/debug/thread/{thread_id}"), ("POST", "/internal/truncate"),
                         ("GET", "/deploy"), ("POST", "/deploy")):
        for headers in ({}, {"Authorization": "Bearer key-desk"}):
            got = httpx.request(method, f"{server['url']}{path}", headers=headers, timeout=30, trust_env=False)
            assert got.status_code == 404, (method, path, got.status_code, got.text)
    assert mine.threads.get(thread_id)["thread_id"] == thread_id, "nothing was wiped"
