"""The simulated chat model: deterministic, native tool calls, language, context window, and blind to the design.

The sim must behave like a real model seen from outside: messages and tool schemas in, one AI message out.
These tests drive it only through the public LangChain interface (``invoke`` / ``bind_tools``).
"""

from __future__ import annotations

import json
import re

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.messages.ai import UsageMetadata

from lg_harness.domains.shop import DOMAIN as SHOP
from lg_harness.domains.shop import SYSTEM_PROMPT, nlu
from lg_harness.domains.shop.backend import get_order_status
from lg_harness.llm.sim import SimChatModel
from lg_harness.nodes.intent import classify_prompt
from lg_harness.tools.context import ToolContext
from simlm.provider import fit_window, message_tokens

ORDER_ID_RE = re.compile(r"ORD-\d{5}")
SCHEMA_EXAMPLE = "ORD-10042"  # the example in the shop's order_id parameter description


def clean(**kwargs) -> SimChatModel:
    """The sim without its fault profile: the behaviour a well-behaved model shows."""
    return SimChatModel(faults="clean", **kwargs)


@pytest.fixture(scope="module")
def registry():
    return SHOP.registry()


def schemas(registry, *names: str) -> list[dict]:
    return [registry.get(n).json_schema() for n in names]


def snapshot(ai: AIMessage) -> dict:
    """Everything observable about a model answer but its tool-call ids (fresh on every call, as providers
    issue them) and LangChain's run ids."""
    return {"content": ai.content, "tool_calls": [{k: v for k, v in c.items() if k != "id"} for c in ai.tool_calls],
            "usage": ai.usage_metadata, "finish": (ai.response_metadata or {}).get("finish_reason")}


def usage(ai: BaseMessage) -> UsageMetadata:
    """The token usage of a model answer (the sim reports it on every answer)."""
    assert isinstance(ai, AIMessage) and ai.usage_metadata is not None
    return ai.usage_metadata


def tool_result(shop, order_id: str, call_id: str = "call_1") -> ToolMessage:
    ctx = ToolContext(user_id="U001", extras={"shop": shop})
    return ToolMessage(json.dumps(get_order_status(ctx, order_id), ensure_ascii=False), tool_call_id=call_id,
                       name="get_order_status")


# ------------------------------------------------------------------------------------------- determinism


@pytest.mark.parametrize("faults", ["clean", "prior"])
def test_same_input_gives_same_output_and_fresh_call_ids(registry, u001_orders, faults):
    """Determinism holds for the fault profile too: faults are drawn from the input, not from a clock. Call
    ids are the exception: fresh for every call, even for the same input, as real providers issue them."""
    order = u001_orders["shipped"][0]
    tools = schemas(registry, "get_order_status", "list_my_orders")
    conversations = [[SystemMessage(SYSTEM_PROMPT), HumanMessage(f"Where is my order {order}?")]]
    conversations += [[SystemMessage(SYSTEM_PROMPT), HumanMessage(f"Track {o} please, it's late")]
                      for orders in u001_orders.values() for o in orders]
    conversations += [[HumanMessage("Where is my order?")], [HumanMessage("有没有蓝牙耳机？")]]
    outputs = []
    for messages in conversations:
        first = SimChatModel(faults=faults).bind_tools(tools).invoke(messages)
        second = SimChatModel(faults=faults).bind_tools(tools).invoke(list(messages))
        assert snapshot(first) == snapshot(second)
        assert not {c["id"] for c in first.tool_calls} & {c["id"] for c in second.tool_calls}
        outputs.append(first)
    ids = [c["id"] for ai in outputs for c in ai.tool_calls]
    assert ids, "some of these conversations lead to a tool call"
    assert len(set(ids)) == len(ids), "different conversations get different call ids"


# ------------------------------------------------------------------------------------------- tool calls


def test_native_tool_call_through_bind_tools_with_args_from_the_messages(registry, u001_orders):
    tools = schemas(registry, "get_order_status", "list_my_orders")
    model = clean().bind_tools(tools)
    for order in (u001_orders["shipped"][0], u001_orders["delivered"][0]):
        ai = model.invoke([SystemMessage(SYSTEM_PROMPT), HumanMessage(f"Where is {order}? It's been a week.")])
        assert isinstance(ai, AIMessage)
        assert ai.content == ""
        assert [(c["name"], c["args"], c.get("type")) for c in ai.tool_calls] == [
            ("get_order_status", {"order_id": order}, "tool_call")]
        assert ai.tool_calls[0]["id"]
        assert ai.response_metadata["finish_reason"] == "tool_calls"


def test_search_query_comes_from_the_users_words(registry):
    model = clean().bind_tools(schemas(registry, "search_products", "get_product"))
    ai = model.invoke([HumanMessage("Do you have any mechanical keyboards?")])
    assert [(c["name"], c["args"]) for c in ai.tool_calls] == [("search_products", {"query": "mechanical keyboards"})]
    zh = model.invoke([HumanMessage("有没有机械键盘？")])
    assert [(c["name"], c["args"]) for c in zh.tool_calls] == [("search_products", {"query": "机械键盘"})]


def test_only_offered_tools_are_called(registry, u001_orders):
    """Without tools bound the model cannot call one; with unrelated tools it does not pick them."""
    order = u001_orders["shipped"][0]
    plain = clean().invoke([HumanMessage(f"Where is {order}?")])
    assert plain.tool_calls == []
    unrelated = clean().bind_tools(schemas(registry, "list_coupons")).invoke([HumanMessage(f"Where is {order}?")])
    assert unrelated.tool_calls == []


def test_asks_for_a_missing_required_argument_instead_of_inventing_one(registry):
    model = clean().bind_tools(schemas(registry, "get_order_status"))
    for text, lang in (("Where is my order?", "en"), ("我的快递到哪了？", "zh")):
        ai = model.invoke([SystemMessage(SYSTEM_PROMPT), HumanMessage(text)])
        assert ai.tool_calls == []
        assert ai.response_metadata["finish_reason"] == "stop"
        assert isinstance(ai.content, str) and ai.content
        assert nlu.language(ai.content) == lang
        # The only order-number-like text is the schema's own example, never a real-looking invented id.
        assert set(ORDER_ID_RE.findall(ai.content)) <= {"ORD-12345", SCHEMA_EXAMPLE}


# ------------------------------------------------------------------------------------------- language


def test_answers_in_chinese_for_chinese_input(shop, u001_orders):
    order = u001_orders["shipped"][0]
    row = shop.query_one("SELECT status, tracking_no FROM orders WHERE id = ?", (order,))
    call = {"name": "get_order_status", "args": {"order_id": order}, "id": "call_1", "type": "tool_call"}
    history = [AIMessage("", tool_calls=[call]), tool_result(shop, order)]
    zh = clean().invoke([SystemMessage(SYSTEM_PROMPT), HumanMessage(f"我的订单 {order} 到哪了？"), *history])
    en = clean().invoke([SystemMessage(SYSTEM_PROMPT), HumanMessage(f"Where is my order {order}?"), *history])
    assert isinstance(zh.content, str) and isinstance(en.content, str)
    assert nlu.language(zh.content) == "zh"
    assert order in zh.content and "已发货" in zh.content and row["tracking_no"] in zh.content
    assert nlu.language(en.content) == "en"
    assert order in en.content and row["status"] in en.content


# ------------------------------------------------------------------------------------------- usage


def test_usage_input_tokens_grow_with_the_input(registry):
    model = clean()
    short = usage(model.invoke([HumanMessage("hello")]))
    longer = usage(model.invoke([HumanMessage("hello"), AIMessage("Hi! How can I help?"),
                                 HumanMessage("I am looking for a mechanical keyboard with a white backlight")]))
    assert 0 < short["input_tokens"] < longer["input_tokens"]
    assert short["output_tokens"] > 0
    assert longer["total_tokens"] == longer["input_tokens"] + longer["output_tokens"]
    with_tools = usage(model.bind_tools(schemas(registry, "search_products")).invoke([HumanMessage("hello")]))
    assert with_tools["input_tokens"] > short["input_tokens"], "tool schemas are part of the input"


# ------------------------------------------------------------------------------------------- context window


def processed(ai: AIMessage) -> int:
    """Input tokens the model read: the prompt as sent minus what the window cut."""
    return usage(ai)["input_tokens"] - ai.response_metadata.get("truncated_tokens", 0)


def long_conversation(order: str) -> list:
    filler = [AIMessage("Here is some background about our shipping policy. " * 25) for _ in range(6)]
    return [SystemMessage(SYSTEM_PROMPT), HumanMessage(f"I have a question about order {order}."),
            AIMessage("Sure, what would you like to know?"), *filler, HumanMessage("I want to return it")]


def test_truncates_oldest_non_system_messages_over_the_context_window(registry, u001_orders):
    order = u001_orders["delivered"][0]
    messages = long_conversation(order)
    total = sum(message_tokens(m) for m in messages)
    tools = schemas(registry, "request_return", "get_order_status")

    roomy = clean(context_window=total * 4).bind_tools(tools).invoke(messages)
    assert roomy.tool_calls and roomy.tool_calls[0]["args"]["order_id"] == order

    window = total // 2
    tight = clean(context_window=window).bind_tools(tools).invoke(messages)
    # The message that named the order fell out of the window: the model asks instead of guessing.
    assert tight.tool_calls == []
    assert isinstance(tight.content, str)
    assert set(ORDER_ID_RE.findall(tight.content)) <= {"ORD-12345", SCHEMA_EXAMPLE}
    # Usage bills the prompt as sent; what the model actually read is what fit the window.
    assert processed(tight) <= window < usage(tight)["input_tokens"]
    assert tight.response_metadata["truncated_tokens"] > 0
    assert roomy.response_metadata.get("truncated_tokens", 0) == 0


def test_fit_window_keeps_system_and_the_newest_messages(u001_orders):
    messages = long_conversation(u001_orders["delivered"][0])
    budget = sum(message_tokens(m) for m in messages) // 2
    kept = fit_window(messages, budget)
    assert kept[0] is messages[0], "the system message is never cut"
    rest = kept[1:]
    assert rest == messages[len(messages) - len(rest):], "what is kept is the newest suffix, in order"
    assert 0 < len(rest) < len(messages) - 1
    assert sum(message_tokens(m) for m in kept) <= budget


def test_system_instructions_survive_truncation():
    """With a long history the classification instruction (system) still rules the answer."""
    noise = [HumanMessage("blah " * 120) for _ in range(8)]
    messages = [SystemMessage(classify_prompt(SHOP)), *noise, HumanMessage("I want to cancel my order")]
    budget = sum(message_tokens(m) for m in messages) // 3
    ai = clean(context_window=budget).invoke(messages)
    assert isinstance(ai.content, str)
    data = json.loads(ai.content)
    assert data["intent"] == "cancel_order"
    assert processed(ai) <= budget


# ------------------------------------------------------------------------------------------- blind to the design


def normalise(messages) -> list[tuple]:
    """Messages with tool-call ids replaced by their order of first appearance (ids are fresh per call)."""
    order: dict[str, int] = {}

    def rank(call_id):
        return None if call_id is None else order.setdefault(call_id, len(order))

    return [(type(m).__name__, m.content if isinstance(m.content, str) else json.dumps(m.content),
             json.dumps([{**c, "id": rank(c.get("id"))} for c in getattr(m, "tool_calls", None) or []],
                        sort_keys=True, ensure_ascii=False),
             rank(getattr(m, "tool_call_id", None))) for m in messages]


def record(calls) -> list[tuple]:
    return [(normalise(c["messages"]), tuple(c["tools"]), json.dumps(snapshot(c["output"]), sort_keys=True,
                                                                     ensure_ascii=False, default=str))
            for c in calls]


def test_model_output_does_not_depend_on_the_design(tmp_path, recording_sim_cls, monkeypatch, u001_orders):
    """Two harnesses whose designs differ only in name and in knobs that do not change the prompt feed the
    model identical inputs and get identical outputs; process-level state (env vars, other designs built)
    does not change what the model answers either."""
    from lg_harness.core.design import Design, Knobs, load_design
    from lg_harness.graphs.app import Harness, Settings
    from lg_harness.graphs.builder import build_graph

    order = u001_orders["delivered"][0]
    script = [f"Where is my order {order}?", "I want to return it", "有没有蓝牙耳机？"]
    designs = [
        Design(name="alpha", description="first", knobs=Knobs(max_message_chars=5000, model_timeout_s=120)),
        Design(name="beta-with-a-long-label", description="second",
               knobs=Knobs(max_message_chars=9000, model_timeout_s=150)),
    ]
    recorded = []
    for i, design in enumerate(designs):
        if i == 1:  # the second run happens under different process-level state
            monkeypatch.setenv("HARNESS_DESIGN", "x")
            monkeypatch.setenv("HARNESS_MODEL", "ollama:nothing")
            build_graph(load_design("harness"), clean())
        model = recording_sim_cls(faults="prior")  # what the 'sim' spec gives
        with Harness(model, design=design, settings=Settings(data_dir=tmp_path / design.name)) as h:
            for text in script:
                h.send("t", text, "U001")
        assert model.calls, "the harness called the model"
        recorded.append(record(model.calls))
    assert recorded[0] == recorded[1]

    # The same message list straight to fresh models, with and without the extra process state.
    messages = [SystemMessage(SYSTEM_PROMPT), HumanMessage(f"Where is {order}?")]
    tools = [t.json_schema() for t in SHOP.registry().offer(None, "customer")]
    with_env = snapshot(SimChatModel().bind_tools(tools).invoke(messages))
    monkeypatch.delenv("HARNESS_DESIGN")
    monkeypatch.delenv("HARNESS_MODEL")
    without_env = snapshot(SimChatModel().bind_tools(tools).invoke(messages))
    assert with_env == without_env


# ------------------------------------------------------------------------------------------- the test guard


def test_real_model_clients_are_blocked_in_tests(_no_real_model_calls, monkeypatch):
    from langchain_ollama import ChatOllama
    from langchain_openai import ChatOpenAI

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-key")
    for model in (ChatOllama(model="qwen2.5:7b", base_url="http://127.0.0.1:9"),
                  ChatOpenAI(model="gpt-4o-mini", base_url="http://127.0.0.1:9/v1", max_retries=0)):
        with pytest.raises(RuntimeError, match="real_model_wire") as raised:
            model.invoke("hello")
        assert type(raised.value).__name__ == "RealModelCallBlocked"
    assert len(_no_real_model_calls) == 2
    _no_real_model_calls.clear()  # provoked on purpose: do not fail at teardown


# ------------------------------------------------------------------------------------------ prompt cache


def cache_read(reply: AIMessage) -> int:
    details = usage(reply).get("input_token_details")
    assert details is not None and "cache_read" in details
    return details["cache_read"]


def test_prompt_cache_serves_a_repeated_prefix_in_whole_blocks():
    model = SimChatModel(faults="clean")
    system = SystemMessage(SYSTEM_PROMPT * 3)
    first = model.invoke([system, HumanMessage("Where is my order ORD-10134?")])
    assert cache_read(first) == 0, "a cold cache serves nothing"
    again = model.invoke([system, HumanMessage("Where is my order ORD-10134?")])
    total = usage(again)["input_tokens"]
    assert cache_read(again) % 64 == 0 and total - 64 < cache_read(again) <= total

    # A longer conversation on the same prefix: the earlier prompt is served, the new turn is not.
    longer = [system, HumanMessage("Where is my order ORD-10134?"), AIMessage("It has shipped."),
              HumanMessage("And when does it arrive? " * 20)]
    grown = model.invoke(longer)
    assert total - 64 < cache_read(grown) <= total + 64 < usage(grown)["input_tokens"]


def test_prompt_cache_breaks_where_the_prompt_first_differs():
    model = SimChatModel(faults="clean")
    question = HumanMessage("Where is my order ORD-10134?")
    model.invoke([SystemMessage(SYSTEM_PROMPT * 3), question])
    edited = model.invoke([SystemMessage("Customer: U002. " + SYSTEM_PROMPT * 3), question])
    assert cache_read(edited) == 0, "an edit at the start invalidates everything after it"

    # Tool schemas come first in the rendered prompt: a different tool set is a different prefix.
    schemas = [t.json_schema() for t in SHOP.registry().offer(None, "customer")]
    with_tools = model.bind_tools(schemas[:3])
    with_tools.invoke([SystemMessage(SYSTEM_PROMPT * 3), question])
    assert cache_read(with_tools.invoke([SystemMessage(SYSTEM_PROMPT * 3), question])) > 0
    assert cache_read(model.bind_tools(schemas[3:6]).invoke([SystemMessage(SYSTEM_PROMPT * 3), question])) == 0
