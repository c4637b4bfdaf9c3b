"""Tools from an MCP server: a real server (FastMCP, started by the test) over stdio and streamable HTTP.

The harness takes the server's tools through langchain-mcp-adapters, validates every call against the
server's JSON schema on our side (a call the schema rejects never reaches the server), reads which tools
change the world from the annotations, and confirms, ledgers, masks and traces them as any tool.
"""

from __future__ import annotations

import json
import logging
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lg_harness import Harness, Settings, load_domain
from lg_harness.obs.tracing import capture_spans
from lg_harness.tools.mcp import mcp_tools
from tests.support import ScriptedModel, harness, patient_design

SERVER = Path(__file__).parents[1] / "fixtures" / "mcp_orders_server.py"
STDIO = f"mcp:{sys.executable} {SERVER}"


def call(name: str, **args) -> dict:
    return {"name": name, "args": args, "id": f"c-{name}", "type": "tool_call"}


def server_log(domain) -> list[dict]:
    return domain.registry().get("server_log").fn()["calls"]


@pytest.fixture(scope="module")
def stdio_domain():
    return load_domain(STDIO)


def test_a_server_over_stdio_is_a_domain_with_its_schemas_and_annotations(stdio_domain, caplog):
    registry = stdio_domain.registry()
    assert stdio_domain.name == "orders"
    assert sorted(registry.names()) == ["add_note", "cancel_order", "get_order", "list_orders", "server_log"]
    params = registry.get("cancel_order").json_schema()["function"]["parameters"]
    assert params["properties"]["order_id"]["pattern"] == r"^#W\d{7}$"
    assert params["properties"]["reason"]["enum"] == ["no longer needed", "ordered by mistake"]
    assert stdio_domain.tool_entities(registry.get("cancel_order")) == {"order_id": "order"}
    assert registry.get("cancel_order").changes_state and not registry.get("cancel_order").idempotent
    assert not registry.get("get_order").changes_state  # readOnlyHint
    assert registry.get("add_note").changes_state  # no annotations: treated as changing


def test_a_call_the_schema_rejects_never_reaches_the_server(stdio_domain):
    model = ScriptedModel(calls=[call("get_order", order_id="#W12"), call("get_order", id="#W2378156")])
    before = len(server_log(stdio_domain))
    with Harness(model, domain=stdio_domain, design=patient_design("harness-no:align_entities"),
                 settings=Settings(data_dir=None)) as h:
        result = h.send("t", "What is the status of order #W12?", "u1")
    errors = [(c["name"], c["error_type"]) for c in result.tool_calls]
    assert errors == [("get_order", "validation"), ("get_order", "validation")]
    assert "does not match" in (result.tool_calls[0]["error"] or "")
    assert "order_id: 'order_id' is a required property" in (result.tool_calls[1]["error"] or "")
    assert len(server_log(stdio_domain)) == before  # neither call reached the server


def test_a_change_on_the_server_is_confirmed_ledgered_and_made_once(stdio_domain, tmp_path):
    model = ScriptedModel(calls=[call("list_orders")])
    with Harness(model, domain=stdio_domain, design=patient_design(),
                 settings=Settings(data_dir=tmp_path)) as h, capture_spans() as exporter:
        listed = h.send("t", "Which orders do I have?", "u1")
        assert listed.tool_calls[0]["status"] == "ok"
        model.calls = [call("cancel_order", order_id="#W2378156", reason="no longer needed")]
        asked = h.send("t", "Cancel my pending order, I no longer need it", "u1")
        assert asked.tool_calls[0]["error_type"] == "needs_confirmation"
        model.calls = []
        done = h.send("t", "yes", "u1")
        assert [(c["name"], c["status"]) for c in done.tool_calls] == [("cancel_order", "ok")]
        [record] = [r for r in done.values["tool_log"] if r.get("ledger_key")]
        assert h.stores.ledger.get(record["ledger_key"]).status == "settled"
        # an id the conversation never showed is refused before the server sees it
        model.calls = [call("get_order", order_id="#W9999999")]
        refused = h.send("t", "And that other order?", "u1")
        assert refused.tool_calls[0]["error_type"] == "invented_argument"
    cancels = [c for c in server_log(stdio_domain) if c["tool"] == "cancel_order"]
    assert cancels == [{"tool": "cancel_order", "order_id": "#W2378156", "reason": "no longer needed"}]
    names = {s.name for s in exporter.get_finished_spans()}
    assert any("cancel_order" in n for n in names), names  # the server's tool is traced like any tool


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def http_url(tmp_path_factory):
    port = _free_port()
    log = tmp_path_factory.mktemp("mcp") / "server.log"
    with log.open("w") as err:  # the child holds its own copy of the file
        proc = subprocess.Popen([sys.executable, str(SERVER), "--http", str(port)], stdout=subprocess.DEVNULL,
                                stderr=err)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                break
        if proc.poll() is not None:
            pytest.fail(f"the MCP server did not start: {log.read_text()[-2000:]}")
        time.sleep(0.2)
    yield f"http://127.0.0.1:{port}/mcp"
    proc.terminate()
    proc.wait(10)


def test_a_server_over_streamable_http_answers_and_validates(http_url):
    from lg_harness import Domain

    model = ScriptedModel(calls=[call("get_order", order_id="#W4817420"), call("cancel_order", order_id="#W4817420",
                                                                            reason="because")])
    with mcp_tools(http_url) as tools, Harness(model, domain=Domain(name="orders-http", tools=tools),
                                               design=patient_design("harness-no:align_entities"), settings=Settings(data_dir=None)) as h:
        result = h.send("t", "Tell me about order #W4817420, and cancel it", "u1")
    got = {c["name"]: c for c in result.tool_calls}
    assert got["get_order"]["status"] == "ok" and got["cancel_order"]["error_type"] == "validation"
    assert "is not one of" in (got["cancel_order"]["error"] or "")


@pytest.mark.slow
def test_the_cli_runs_a_message_on_an_mcp_server(tmp_path):
    result = harness("run", "--domain", STDIO, "Where is my order #W4817420?", "--json", "--model", "sim:clean",
                     "--data-dir", str(tmp_path / "data"), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["domain"] == "orders"
    assert ("get_order", {"order_id": "#W4817420"}, "ok") in [(c["name"], c["args"], c["status"])
                                                             for c in out["tool_calls"]], out["tool_calls"]


@pytest.mark.slow
def test_an_unreachable_server_is_one_clear_error(tmp_path):
    result = harness("run", "--domain", "mcp:/nonexistent/server-binary", "hi", "--data-dir", str(tmp_path),
                     cwd=tmp_path)
    assert result.returncode != 0 and "Traceback" not in result.stderr
    assert "MCP server" in result.stderr and "mcp:" in result.stderr


logging.getLogger("mcp").setLevel(logging.WARNING)
