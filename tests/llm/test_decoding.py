"""Decoding that fits the step (``llm.decoding``, ``llm.grammars``) and the sim honouring the same wire fields
(``simlm.constraint``): the answer step can only be words, the action step only an offered call or words."""

from __future__ import annotations

import json

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from lg_harness.core.design import PRESETS
from lg_harness.core.domain import load_domain
from lg_harness.llm.decoding import (
    REPLY_PATTERN,
    constrain,
    response_format,
    strict_tool,
    unwrapped,
    without_nulls,
)
from lg_harness.llm.grammars import action_grammar, answer_grammar, call_schema, portable_pattern
from lg_harness.llm.sim import SimChatModel
from simlm import Provider, profile
from simlm.constraint import Constraint, constraint_of, fits

SHOP = load_domain("shop")


def _tool(name: str) -> dict:
    spec = SHOP.registry().get(name)
    assert spec is not None, f"the shop has no tool {name!r}"
    return spec.json_schema()


def test_the_knob_is_on_in_harness_only():
    assert PRESETS["harness"].knobs.constrained_decoding
    assert not any(d.knobs.constrained_decoding for n, d in PRESETS.items() if n != "harness")


@pytest.mark.parametrize(("pattern", "portable"), [
    (r"^ORD-\d{5}$", r"^ORD-[0-9]{5}$"), (r"^[\w-]+\s\S$", r"^[A-Za-z0-9_-]+[ \t\n][^ \t\n]$"),
    (r"^\d+\.\d{2}$", r"^[0-9]+\.[0-9]{2}$"), (r"^[A-Z0-9]{4,16}$", r"^[A-Z0-9]{4,16}$"),
])
def test_patterns_are_rewritten_for_llama_cpp(pattern, portable):
    """llama-cpp-python 0.3.36 reads ``\\d`` in a pattern as the letters: a call could never match."""
    assert portable_pattern(pattern) == portable


def test_the_grammars_parse_in_llama_cpp():
    grammar = pytest.importorskip("llama_cpp.llama_grammar")
    from lg_harness.llm.local import _close_devnull_at_exit

    _close_devnull_at_exit()  # llama_cpp opens /dev/null at import and never closes it
    tools = [t.json_schema() for t in SHOP.registry().offer(None, "customer")]
    for text in (answer_grammar(), action_grammar(tools)):
        assert grammar.LlamaGrammar.from_string(text, verbose=False) is not None
    converted = grammar.json_schema_to_gbnf(json.dumps(call_schema([_tool("get_order_status")])))
    assert "[0-9]" in converted and "\\d" not in converted


def test_a_call_schema_names_each_tool_as_a_constant():
    schema = call_schema([_tool("get_order_status"), _tool("cancel_order")])
    names = [o["properties"]["name"]["const"] for o in schema["anyOf"]]
    assert names == ["get_order_status", "cancel_order"]
    assert all(o["properties"]["arguments"]["additionalProperties"] is False for o in schema["anyOf"])


def test_strict_tools_close_every_object_and_make_optional_arguments_nullable():
    fn = strict_tool(_tool("cancel_order"))["function"]
    params = fn["parameters"]
    assert fn["strict"] is True and params["additionalProperties"] is False
    assert set(params["required"]) == {"order_id", "reason"}
    assert {"type": "null"} in params["properties"]["reason"]["anyOf"]
    ai = AIMessage("", tool_calls=[{"name": "cancel_order", "args": {"order_id": "ORD-10001", "reason": None},
                                    "id": "c", "type": "tool_call"}])
    assert without_nulls(ai, [_tool("cancel_order")]).tool_calls[0]["args"] == {"order_id": "ORD-10001"}


def test_an_answer_wrapped_as_json_is_read_back_as_text():
    assert unwrapped(AIMessage('{"reply": "Your order has shipped."}')).content == "Your order has shipped."
    pasted = AIMessage('{"order_id": "ORD-1", "status": "shipped"}')
    assert unwrapped(pasted) is pasted  # not an answer: left for the self-check


def test_providers_without_a_field_are_bound_as_before():
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel

    fake = GenericFakeChatModel(messages=iter([AIMessage("hi")]))
    assert constrain(fake, "answer").kind == "none"
    assert constrain(SimChatModel(), "answer").kind == "json_schema"


# ------------------------------------------------------------------------------------------ the sim


def _request(messages: list, **extra) -> dict:
    from langchain_core.messages import convert_to_openai_messages

    return {"messages": convert_to_openai_messages(messages), **extra}


def _answer_step(result: dict) -> list:
    call = {"name": "get_order_status", "args": {"order_id": "ORD-10134"}, "id": "call_1", "type": "tool_call"}
    return [SystemMessage("You are a shop assistant."), HumanMessage("Where is my order ORD-10134?"),
            AIMessage("", tool_calls=[call]), ToolMessage(json.dumps(result), tool_call_id="call_1")]


def test_the_sim_cannot_paste_a_result_where_the_answer_must_be_words():
    """The fitted sim pastes the result (88%) or writes the call again (60%) at an answer step; under the
    answer constraint it writes its answer instead, in the schema's object."""
    fitted = Provider(profile("fitted"), seed=0)
    result = {"order_id": "ORD-10134", "status": "shipped", "carrier": "YTO Express"}
    free = [fitted.complete(_request(_answer_step(result)))["choices"][0]["message"]["content"] for _ in range(1)]
    assert free[0].lstrip().startswith("{")  # as measured on the real model: data, not words
    for seed in range(8):
        body = Provider(profile("fitted"), seed=seed).complete(_request(_answer_step(result),
                                                                        response_format=response_format()))
        reply = json.loads(body["choices"][0]["message"]["content"])["reply"]
        assert "ORD-10134" in reply and "shipped" in reply and not reply.startswith(("{", "["))


def test_the_sim_writes_only_arguments_a_strict_schema_admits():
    """Every malformation the sim makes (a dropped digit, a wrong type, an extra key, cut-off JSON) is one a
    strict schema forbids: with ``strict``, the call it emits fits; without, some do not."""
    tools = [_tool("get_order_status")]
    always = profile("prior").__class__(**{**profile("prior").__dict__, "malformed_args": 1.0, "skip_call": 0.0})
    messages = [SystemMessage("You are a shop assistant."), HumanMessage("Where is my order ORD-10134?")]
    free, strict = [], []
    for seed in range(12):
        for bucket, offered in ((free, tools), (strict, [strict_tool(t) for t in tools])):
            body = Provider(always, seed=seed).complete(_request(messages, tools=offered))
            calls = body["choices"][0]["message"].get("tool_calls") or []
            bucket.append(all(_fits(c, offered[0]) for c in calls) and bool(calls))
    assert not all(free) and all(strict)


def _fits(call: dict, tool: dict) -> bool:
    try:
        args = json.loads(call["function"]["arguments"])
    except ValueError:
        return False
    params = strict_tool(tool)["function"]["parameters"]
    return fits({**{k: None for k in params["required"] if k not in args}, **args}, params)


def test_a_constraint_is_read_from_the_request():
    assert constraint_of({}).schema is None
    c = constraint_of({"response_format": response_format()})
    assert c.admits("Your order has shipped.") and not c.admits('{"status": "shipped"}') and not c.admits(" x")
    assert json.loads(c.written("Hello")) == {"reply": "Hello"}
    assert Constraint({"type": "object", "properties": {"reply": {"type": "string", "pattern": REPLY_PATTERN}}}).admits("ok")


class _RecordingEngine:
    """Stands in for the llama.cpp engine: records the tools each call lists; too long past ``fits`` tools."""

    def __init__(self, fits: int = 99) -> None:
        self.listed: list[list[str]] = []
        self.fits = fits

    def complete(self, messages, tools, **kw):
        from lg_harness.llm.local import PromptTooLong

        names = [t["function"]["name"] for t in tools or []]
        self.listed.append(names)
        if len(names) > self.fits:
            raise PromptTooLong("too long")
        return {"text": "Your order has shipped.", "finish_reason": "stop", "prompt_tokens": 10,
                "completion_tokens": 5, "cached_tokens": 0, "latency_s": 0.1, "prompt": "", "speed": {}}


def _local(monkeypatch, engine: _RecordingEngine):
    from lg_harness.llm.local import LocalChatModel

    model = LocalChatModel(model_path="unused.gguf")
    monkeypatch.setattr(LocalChatModel, "engine", lambda self: engine)
    return model


def test_a_stable_prefix_lists_every_tool_while_the_grammar_offers_only_the_steps(monkeypatch):
    """``stable_prefix``: the local model's prompt lists the request's tools (``shown``) whatever the step
    offers, so the prefix does not change between the steps of a message; what the step may call is the
    grammar's, built from the offered tools only."""
    engine = _RecordingEngine()
    model = _local(monkeypatch, engine)
    shown = [t.json_schema() for t in SHOP.registry().offer(None, "customer")]
    every = [t["function"]["name"] for t in shown]
    action = constrain(model, "action", [_tool("get_order_status")], shown)
    assert action.kind == "grammar" and action.runnable.kwargs["grammar"] == action_grammar([_tool("get_order_status")])
    assert "cancel_order" not in action.runnable.kwargs["grammar"] and "cancel_order" in every
    answer = constrain(model, "answer", [], shown)
    assert answer.runnable.kwargs["grammar"] == answer_grammar()
    action.runnable.invoke([SystemMessage("s"), HumanMessage("Where is ORD-10001?")])
    answer.runnable.invoke([SystemMessage("s"), HumanMessage("Where is ORD-10001?")])
    assert engine.listed == [every, every]
    # without a list to show (the knob off), each step lists what it offers
    constrain(model, "action", [_tool("get_order_status")]).runnable.invoke([HumanMessage("Where is ORD-10001?")])
    assert engine.listed[-1] == ["get_order_status"]


def test_a_whole_list_too_long_for_the_context_falls_back_to_the_steps_tools(monkeypatch):
    engine = _RecordingEngine(fits=1)
    model = _local(monkeypatch, engine)
    shown = [t.json_schema() for t in SHOP.registry().offer(None, "customer")]
    reply = constrain(model, "action", [_tool("get_order_status")], shown).runnable.invoke([HumanMessage("hi")])
    assert reply.content == "Your order has shipped."
    assert engine.listed[-2:] == [[t["function"]["name"] for t in shown], ["get_order_status"]]


def test_a_step_that_must_call_has_no_words_branch_on_llama_cpp_and_is_an_action_step_elsewhere(monkeypatch):
    """A ready task's first try (``step="call"``): on llama.cpp the grammar holds only the offered calls, so
    the model cannot decline or answer from memory; providers without a grammar are asked as an action step
    (the harness asks again when no call comes)."""
    from lg_harness.llm.grammars import call_grammar

    tools = [_tool("get_order_status")]
    must = constrain(_local(monkeypatch, _RecordingEngine()), "call", tools)
    assert must.runnable.kwargs["grammar"] == call_grammar(tools)
    assert "zq-text" not in call_grammar(tools) and "zq-text" in action_grammar(tools)
    assert call_grammar(tools).startswith("root ::= zq-call\n")
    sim = constrain(SimChatModel(), "call", tools)
    assert sim.kind == "json_schema" and sim.runnable.kwargs["tools"][0]["function"]["strict"] is True


def test_the_call_grammar_parses_in_llama_cpp():
    grammar = pytest.importorskip("llama_cpp.llama_grammar")
    from lg_harness.llm.grammars import call_grammar
    from lg_harness.llm.local import _close_devnull_at_exit

    _close_devnull_at_exit()
    tools = [t.json_schema() for t in SHOP.registry().offer(None, "customer")]
    assert grammar.LlamaGrammar.from_string(call_grammar(tools), verbose=False) is not None


def test_the_intent_step_is_held_to_the_domains_intents_where_the_provider_constrains(monkeypatch):
    """Issue 41: when the model classifies, its label is one of the domain's intents by an enum (a grammar on
    llama.cpp, structured output on OpenAI and the sim), not free text the parser may not read."""
    from lg_harness.llm.grammars import json_grammar
    from lg_harness.nodes.intent import label_schema

    schema = label_schema(SHOP)
    assert set(schema["properties"]["intent"]["enum"]) == {*SHOP.intent_names(), "unknown"}
    local = constrain(_local(monkeypatch, _RecordingEngine()), "data", schema=schema)
    assert local.kind == "grammar" and local.runnable.kwargs["grammar"] == json_grammar(schema)
    assert '"\\"order_status\\""' in json_grammar(schema) and "zq-text" not in json_grammar(schema)
    sim = constrain(SimChatModel(), "data", schema=schema)
    fmt = sim.runnable.kwargs["response_format"]
    assert sim.kind == "json_schema" and fmt["json_schema"]["schema"]["properties"]["intent"]["enum"][0] == "product"
    assert constraint_of({"response_format": fmt}).schema is not None
    assert fits({"intent": "order_status", "confidence": 0.8}, fmt["json_schema"]["schema"])
    assert not fits({"intent": "refund_please", "confidence": 0.8}, fmt["json_schema"]["schema"])


def test_the_label_grammar_parses_in_llama_cpp():
    grammar = pytest.importorskip("llama_cpp.llama_grammar")
    from lg_harness.llm.grammars import json_grammar
    from lg_harness.llm.local import _close_devnull_at_exit
    from lg_harness.nodes.intent import label_schema

    _close_devnull_at_exit()
    for domain in (SHOP, load_domain("helpdesk")):
        assert grammar.LlamaGrammar.from_string(json_grammar(label_schema(domain)), verbose=False) is not None
