"""The real OpenAI-compatible client stack (``langchain-openai`` -> ``openai`` -> httpx) against a local
stand-in for ``/v1/chat/completions``.

The stand-in answers with the simulated model's brain; these tests check the request the harness makes
(messages, tool schemas, tool results with their call ids, the API key) and that native tool calls, SSE
streaming with tool-call deltas, finish reasons and usage come back through the client intact.
"""

from __future__ import annotations

import json

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from tests.standins.openai_server import OpenAIStandIn
from tests.support import u001_order

pytestmark = pytest.mark.real_model_wire

MODEL = "gpt-4o-mini"
API_KEY = "sk-standin-not-a-secret"




@pytest.fixture
def server():
    with OpenAIStandIn() as srv:
        yield srv
        assert srv.errors == [], f"the stand-in failed: {srv.errors}"


@pytest.fixture
def model(server, monkeypatch):
    from langchain_openai import ChatOpenAI

    from lg_harness.llm.factory import make_model

    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", API_KEY)
    chat = make_model(f"openai:{MODEL}")
    assert isinstance(chat, ChatOpenAI)
    yield chat
    chat.root_client.close()  # its httpx client is cached per base URL, and this server's URL is unique


@pytest.fixture
def order_tool():
    from lg_harness.domains.shop import DOMAIN as SHOP

    spec = SHOP.registry().get("get_order_status")
    assert spec is not None
    return spec.json_schema()


def completion_bodies(server: OpenAIStandIn) -> list[dict]:
    return [r["body"] for r in server.requests_to("/v1/chat/completions")]


def test_factory_points_chat_openai_at_base_url(model, server):
    assert type(model).__name__ == "ChatOpenAI"
    assert model.openai_api_base == server.base_url
    assert model.model_name == MODEL


def test_invoke_returns_native_tool_calls(model, server, order_tool):
    reply = model.bind_tools([order_tool]).invoke("Where is my order ORD-10134?")
    assert isinstance(reply, AIMessage)
    assert [(c["name"], c["args"]) for c in reply.tool_calls] == [("get_order_status", {"order_id": "ORD-10134"})]
    call_id = reply.tool_calls[0]["id"]
    assert call_id is not None and call_id.startswith("call_")
    assert reply.response_metadata["finish_reason"] == "tool_calls"
    usage = reply.response_metadata["token_usage"]
    assert reply.usage_metadata is not None
    assert reply.usage_metadata["input_tokens"] == usage["prompt_tokens"] > 0
    assert reply.usage_metadata["output_tokens"] == usage["completion_tokens"] > 0

    (request,) = server.requests_to("/v1/chat/completions")
    assert request["headers"].get("authorization") == f"Bearer {API_KEY}"
    body = request["body"]
    assert body["model"] == MODEL and not body.get("stream") and body["temperature"] == 0
    assert body["messages"] == [{"role": "user", "content": "Where is my order ORD-10134?"}]
    (tool,) = body["tools"]
    assert tool["type"] == "function" and tool["function"]["name"] == "get_order_status"
    params = tool["function"]["parameters"]
    assert params["required"] == ["order_id"] and "order_id" in params["properties"]


def test_stream_assembles_tool_call_deltas(model, server, order_tool):
    chunks = list(model.bind_tools([order_tool]).stream("Where is my order ORD-10134?", stream_usage=True))
    partial = [c for c in chunks if c.tool_call_chunks]
    assert len(partial) > 2, "the arguments should arrive in several deltas"
    full = chunks[0]
    for chunk in chunks[1:]:
        full += chunk
    assert [(c["name"], c["args"]) for c in full.tool_calls] == [("get_order_status", {"order_id": "ORD-10134"})]
    assert full.response_metadata["finish_reason"] == "tool_calls"
    assert full.usage_metadata["input_tokens"] > 0 and full.usage_metadata["output_tokens"] > 0
    body = completion_bodies(server)[-1]
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}

    text_chunks = list(model.stream("hello there"))
    assert len([c for c in text_chunks if c.content]) > 2, "the text should arrive in several SSE events"
    text = "".join(c.content for c in text_chunks)
    assert "help" in text.lower()
    assert any(c.response_metadata.get("finish_reason") == "stop" for c in text_chunks)


def test_tool_result_goes_back_with_its_call_id(model, server, order_tool):
    call = {"name": "get_order_status", "args": {"order_id": "ORD-10134"}, "id": "call_abc", "type": "tool_call"}
    result = {"order_id": "ORD-10134", "status": "shipped", "carrier": "SF", "tracking_no": "SF1", "items": [],
              "total": 10.0}
    reply = model.bind_tools([order_tool]).invoke([
        HumanMessage("Where is my order ORD-10134?"),
        AIMessage("", tool_calls=[call]),
        ToolMessage(json.dumps(result), tool_call_id="call_abc"),
    ])
    assert not reply.tool_calls and reply.response_metadata["finish_reason"] == "stop"
    assert "ORD-10134" in reply.content and "shipped" in reply.content
    wire = completion_bodies(server)[-1]["messages"]
    assert [m["role"] for m in wire] == ["user", "assistant", "tool"]
    (sent_call,) = wire[1]["tool_calls"]
    assert sent_call["id"] == "call_abc" and sent_call["type"] == "function"
    assert sent_call["function"]["name"] == "get_order_status"
    assert json.loads(sent_call["function"]["arguments"]) == {"order_id": "ORD-10134"}
    assert wire[2]["tool_call_id"] == "call_abc"


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

    bodies = completion_bodies(server)
    offered = [t for body in bodies for t in body.get("tools") or []]
    schema = next((t for t in offered if t["function"]["name"] == "get_order_status"), None)
    assert schema is not None, "the harness never sent the get_order_status schema"
    assert "order_id" in schema["function"]["parameters"]["properties"]
    answered = [body for body in bodies if any(m["role"] == "tool" for m in body["messages"])]
    assert answered, "the tool result never went back to the model"
    wire = answered[-1]["messages"]
    asked = [m for m in wire if m["role"] == "assistant" and m.get("tool_calls")][-1]["tool_calls"][0]
    tool_msg = [m for m in wire if m["role"] == "tool"][-1]
    assert asked["function"]["name"] == "get_order_status"
    assert json.loads(asked["function"]["arguments"]) == {"order_id": order}
    assert tool_msg["tool_call_id"] == asked["id"] == result.tool_calls[0]["id"]
    assert order in tool_msg["content"] and status in tool_msg["content"]
