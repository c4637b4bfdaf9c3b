"""Models without native tool calling: instructions in the prompt, TOOL: lines parsed back into calls."""

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

from lg_harness.core.design import load_design
from lg_harness.domains.shop import DOMAIN as SHOP
from lg_harness.graphs.app import Harness, Settings
from lg_harness.llm.sim import SimChatModel
from lg_harness.llm.text_tools import PARSE_ERROR_TOOL, from_text, to_text_mode
from lg_harness.tools.registry import ToolRegistry, ToolSpec
from simlm.wire import tool_call_json, tools_in_text


def spec(registry: ToolRegistry, name: str) -> ToolSpec:
    found = registry.get(name)
    assert found is not None, name
    return found


def text_design():
    design = load_design("harness").model_copy(deep=True)
    design.knobs.tool_calling = "text"
    return design


def test_instructions_round_trip_to_the_schemas_a_model_needs() -> None:
    registry = SHOP.registry()
    schemas = [spec(registry, n).json_schema() for n in registry.names()]
    msgs = to_text_mode([SystemMessage("You help."), HumanMessage("hi")], schemas)
    assert isinstance(msgs[0], SystemMessage) and isinstance(msgs[0].content, str)
    assert "TOOL:" in msgs[0].content and msgs[0].content.startswith("You help.")
    read = {t["function"]["name"]: t["function"]["parameters"] for t in tools_in_text(msgs[0].content)}
    assert set(read) == set(registry.names())
    assert read["request_return"]["required"] == ["order_id", "reason"]


def test_text_calls_with_invisible_prefix_become_native_calls() -> None:
    """The form chat-tuned open models write (Qwen, Hermes), as the sim writes it, with invisible junk."""
    text = "\u200b\ufeff<tool_call>\n" + tool_call_json("get_order_status", {"order_id": "ORD-10144"}) + "\n</tool_call>"
    reply = from_text(AIMessage(text), ["get_order_status"])
    assert [(c["name"], c["args"]) for c in reply.tool_calls] == [("get_order_status", {"order_id": "ORD-10144"})]


def test_an_unreadable_call_becomes_a_rejected_call_not_a_reply() -> None:
    reply = from_text(AIMessage('TOOL: get_order_status(order_id="ORD-1'), ["get_order_status"])
    assert reply.tool_calls[0]["name"] == PARSE_ERROR_TOOL
    assert "unterminated" in reply.tool_calls[0]["args"]["error"]


def test_conversation_in_text_mode_on_the_simulated_model(tmp_path) -> None:
    model = SimChatModel(faults="clean")
    with Harness(model, design=text_design(), settings=Settings(data_dir=tmp_path)) as h:
        r = h.send("t", "where is my order ORD-10144?", "U001")
        assert [(c["name"], c["args"], c["status"]) for c in r.tool_calls] == [
            ("get_order_status", {"order_id": "ORD-10144"}, "ok")]
        assert "delivered" in r.reply
        asked = h.send("t", "I want to return it, wrong size", "U001")
        assert asked.phase == "confirm" and "ORD-10144" in asked.reply  # text calls are confirmed too
        r = h.send("t", "yes", "U001")
        assert ("request_return", "ok") in [(c["name"], c["status"]) for c in r.tool_calls]
        assert "RMA-" in r.reply


def test_the_sim_reads_tools_only_from_the_tools_listing():
    """A fact card's "- key: value" lines in the system prompt are data, not tool declarations."""
    card = "You are an assistant.\n## Known facts\n- coupon_codes: ['SAVE20']\n- last_product_id: P1001"
    assert tools_in_text(card) == []
    registry = SHOP.registry()
    msgs = to_text_mode([SystemMessage(card)], [spec(registry, "get_order_status").json_schema()])
    assert isinstance(msgs[0].content, str)
    assert [t["function"]["name"] for t in tools_in_text(msgs[0].content)] == ["get_order_status"]
