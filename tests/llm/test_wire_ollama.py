"""The real Ollama client stack (``langchain-ollama`` -> ``ollama`` -> httpx) against a local stand-in server.

The stand-in speaks Ollama's ``/api/chat`` wire protocol and answers with the simulated model's brain, so
these tests check our side of the wire: the request the harness makes (messages, tool schemas, tool
results), and that native tool calls, streaming and usage counts come back through the client intact.
"""

from __future__ import annotations

import json

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from tests.standins.ollama_server import OllamaStandIn
from tests.support import u001_order

pytestmark = pytest.mark.real_model_wire

MODEL = "qwen2.5:7b"




@pytest.fixture
def server():
    with OllamaStandIn() as srv:
        yield srv
        assert srv.errors == [], f"the stand-in failed: {srv.errors}"


@pytest.fixture
def model(server, monkeypatch):
    from langchain_ollama import ChatOllama

    from lg_harness.llm.factory import make_model

    monkeypatch.setenv("OLLAMA_HOST", server.url)
    chat = make_model(f"ollama:{MODEL}")
    assert isinstance(chat, ChatOllama)
    yield chat
    chat._client.close()  # the keep-alive connection would otherwise be closed by the GC, with a ResourceWarning


@pytest.fixture
def order_tool():
    from lg_harness.domains.shop import DOMAIN as SHOP

    spec = SHOP.registry().get("get_order_status")
    assert spec is not None
    return spec.json_schema()


def chat_bodies(server: OllamaStandIn) -> list[dict]:
    return [r["body"] for r in server.requests_to("/api/chat")]


def test_factory_points_chat_ollama_at_ollama_host(model, server):
    assert type(model).__name__ == "ChatOllama"
    assert model.base_url == server.url
    assert model.model == MODEL


def test_invoke_returns_native_tool_calls_streamed_and_not(model, server, order_tool):
    bound = model.bind_tools([order_tool])
    streamed = bound.invoke("Where is my order ORD-10134?")  # langchain-ollama streams by default
    single = bound.invoke("Where is my order ORD-10134?", stream=False)
    for reply in (streamed, single):
        assert isinstance(reply, AIMessage)
        assert [(c["name"], c["args"]) for c in reply.tool_calls] == [("get_order_status", {"order_id": "ORD-10134"})]
        assert reply.tool_calls[0]["id"]  # the client makes ids up: Ollama's wire has none
        assert reply.usage_metadata is not None
        assert reply.usage_metadata["input_tokens"] == reply.response_metadata["prompt_eval_count"] > 0
        assert reply.usage_metadata["output_tokens"] == reply.response_metadata["eval_count"] > 0
        assert reply.response_metadata["done_reason"] == "stop"
    first, second = chat_bodies(server)
    assert first["stream"] is True and second["stream"] is False
    assert first["model"] == MODEL and first["options"]["temperature"] == 0
    assert first["messages"] == [{"role": "user", "content": "Where is my order ORD-10134?"}]
    (tool,) = first["tools"]
    assert tool["type"] == "function" and tool["function"]["name"] == "get_order_status"
    assert tool["function"]["parameters"]["required"] == ["order_id"]
    assert "order_id" in tool["function"]["parameters"]["properties"]


def test_stream_assembles_tool_calls_and_text(model, server, order_tool):
    chunks = list(model.bind_tools([order_tool]).stream("Where is my order ORD-10134?"))
    full = chunks[0]
    for chunk in chunks[1:]:
        full += chunk
    assert [(c["name"], c["args"]) for c in full.tool_calls] == [("get_order_status", {"order_id": "ORD-10134"})]
    assert full.usage_metadata["input_tokens"] > 0

    text_chunks = list(model.stream("hello there"))  # no tools: the brain answers in text
    assert len(text_chunks) > 2, "the text should arrive in several NDJSON lines"
    text = "".join(c.content for c in text_chunks)
    assert "help" in text.lower()
    assert server.requests_to("/api/chat")[-1]["body"]["stream"] is True


def test_tool_result_goes_back_over_the_wire(model, server, order_tool):
    call = {"name": "get_order_status", "args": {"order_id": "ORD-10134"}, "id": "c1", "type": "tool_call"}
    result = {"order_id": "ORD-10134", "status": "shipped", "carrier": "SF", "tracking_no": "SF1", "items": [],
              "total": 10.0}
    reply = model.bind_tools([order_tool]).invoke([
        HumanMessage("Where is my order ORD-10134?"),
        AIMessage("", tool_calls=[call]),
        ToolMessage(json.dumps(result), tool_call_id="c1"),
    ])
    assert not reply.tool_calls
    assert "ORD-10134" in reply.content and "shipped" in reply.content
    wire = chat_bodies(server)[-1]["messages"]
    assert [m["role"] for m in wire] == ["user", "assistant", "tool"]
    assert wire[1]["tool_calls"] == [{"function": {"name": "get_order_status", "arguments": {"order_id": "ORD-10134"}}}]
    assert json.loads(wire[2]["content"])["status"] == "shipped"


def test_harness_conversation_end_to_end(model, server, tmp_path):
    from lg_harness.graphs.app import Harness, Settings

    order = u001_order("shipped")
    with Harness(model, settings=Settings(data_dir=tmp_path)) as h:
        result = h.send("wire-1", f"Where is my order {order}?", user_id="U001")
        status = h.resources["shop"].query_one("SELECT status FROM orders WHERE id = ?", (order,))["status"]
    calls = [(c["name"], c["args"], c["status"]) for c in result.tool_calls]
    assert calls == [("get_order_status", {"order_id": order}, "ok")]
    assert order in result.reply and status in result.reply
    assert result.usage.model_calls >= 2 and result.usage.input_tokens > 0

    bodies = chat_bodies(server)
    offered = [body for body in bodies if body.get("tools")]
    assert offered, "the harness never sent tool schemas"
    names = {t["function"]["name"] for body in offered for t in body["tools"]}
    assert "get_order_status" in names
    schema = next(t for body in offered for t in body["tools"] if t["function"]["name"] == "get_order_status")
    assert "order_id" in schema["function"]["parameters"]["properties"]
    # the tool call the stand-in made and the result the harness sent back, on the wire
    answered = [body for body in bodies if any(m["role"] == "tool" for m in body["messages"])]
    assert answered, "the tool result never went back to the model"
    wire = answered[-1]["messages"]
    asked = [m for m in wire if m["role"] == "assistant" and m.get("tool_calls")]
    assert asked[-1]["tool_calls"][0]["function"] == {"name": "get_order_status", "arguments": {"order_id": order}}
    tool_msg = [m for m in wire if m["role"] == "tool"][-1]
    assert order in tool_msg["content"] and status in tool_msg["content"]
