"""The prompt the local model reads, call by call (issue 42): a ready task's first try held to a call, two calls a
lookup; with the knob ``stable_prefix`` a step that must call (or may call again after a lookup) reads a prefix every
such call shares (the instructions and every tool), who the customer is, their message and the task, and an answer
reads only its own message after the instructions. The engine is a stand-in that records what it is given, so
these run without the model; ``harness bench local`` measures the real one."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from lg_harness.core.design import ablation, load_design
from lg_harness.domains.shop import DOMAIN as SHOP
from lg_harness.graphs.app import Harness, Settings
from lg_harness.llm.local import LocalChatModel


class ScriptedEngine:
    """Answers as the local engine would: a call when the grammar offers one, else a sentence."""

    read_rate, write_rate = 100.0, 10.0  # tokens/s: what a call's deadline is scaled by

    def __init__(self, first_answer: str = "") -> None:
        self.calls: list[dict[str, Any]] = []
        self.first_answer = first_answer  # what the first answer step writes instead of a sentence

    def complete(self, messages, tools, *, grammar=None, **kw):
        grammar = grammar or ""
        self.calls.append({"messages": messages, "tools": [t["function"]["name"] for t in tools or []],
                           "grammar": grammar})
        said = next(m["content"] for m in reversed(messages) if m["role"] == "user")
        order = re.search(r"ORD-\d{5}", said)
        last_user = max(i for i, m in enumerate(messages) if m["role"] == "user")
        found_by = [m.get("content", "") for m in messages[last_user:] if m["role"] == "tool"]  # this message's
        callable_ = "zq-call" in grammar
        if callable_ and order and not found_by:
            name = "cancel_order" if "Intent: cancel_order" in json.dumps(messages) else "get_order_status"
            text = json.dumps({"name": name, "arguments": {"order_id": order.group()}})
        elif callable_ and "search_products" in grammar and not found_by:
            text = json.dumps({"name": "search_products", "arguments": {"query": "wireless bluetooth headphones"}})
        elif callable_ and "get_product" in grammar and found_by and "P1001" in found_by[-1]:
            text = json.dumps({"name": "get_product", "arguments": {"product_id": "P1001"}})
        elif self.first_answer:
            text, self.first_answer = self.first_answer, ""
        else:
            found = re.findall(r'"status":\s*"(\w+)"|status: (\w+)', str(messages[-1]["content"]))
            found = [a or b for a, b in found]
            text = f"Your order is {found[0] if found else 'delivered'}."
        return {"text": text, "finish_reason": "stop", "prompt_tokens": 100, "completion_tokens": 10,
                "cached_tokens": 0, "latency_s": 0.01, "prompt": "", "speed": {}}


@pytest.fixture
def engine(monkeypatch: pytest.MonkeyPatch) -> ScriptedEngine:
    scripted = ScriptedEngine()
    monkeypatch.setattr(LocalChatModel, "engine", lambda self: scripted)
    return scripted


def stable() -> Any:
    """``harness`` as shipped: the knob ``stable_prefix`` on."""
    return load_design("harness")


def plain() -> Any:
    return load_design("harness-no:stable_prefix")


def ask(design, engine: ScriptedEngine, user: str, thread: str = "t",
        texts: tuple[str, ...] = ("Where is my order ORD-10144?",)) -> list[dict[str, Any]]:
    with Harness(LocalChatModel(model_path="unused.gguf"), domain="shop", design=design,
                 settings=Settings(data_dir=None)) as h:
        before = len(engine.calls)
        for text in texts:
            h.send(thread, text, user)
    return engine.calls[before:]


def without_ids(messages: list[dict[str, Any]]) -> str:
    return re.sub(r'"call_[0-9a-f]+"', '"call"', json.dumps(messages, ensure_ascii=False))


def is_task_block(message: dict[str, Any]) -> bool:
    return message["role"] == "system" and str(message["content"]).startswith("## Current task")


def test_a_lookup_is_one_call_held_to_a_call_then_the_answer(engine: ScriptedEngine) -> None:
    calls = ask(plain(), engine, "U001")
    assert len(calls) == 2, [c["grammar"][:40] for c in calls]
    first, answer = calls
    assert first["tools"] == ["get_order_status"] and first["grammar"].startswith("root ::= zq-call\n")
    assert "zq-text" not in first["grammar"], "a ready task's first try has no words branch"
    assert answer["tools"] == [] and answer["grammar"].startswith("root ::= zq-text")


def test_every_thread_starts_with_the_same_instructions_and_the_customer_follows(engine: ScriptedEngine) -> None:
    one = ask(stable(), engine, "U001", "a")
    other = ask(stable(), engine, "U002", "b")
    heads = {json.dumps(c["messages"][0]) for c in [*one, *other] if c["grammar"].startswith("root ::= zq-call\n")}
    assert heads == {json.dumps({"role": "system", "content": SHOP.system_prompt})}
    assert one[0]["messages"][1] == {"role": "system", "content": "Customer: id U001, role customer."}
    assert other[0]["messages"][1]["content"] == "Customer: id U002, role vip."


def test_a_step_that_must_call_reads_a_shared_prefix_and_an_answer_reads_only_its_message(
        engine: ScriptedEngine) -> None:
    """Two messages, a lookup each. A step that must call lists every tool the customer may use (the grammar
    holds it to the task's own) and reads the instructions, who the customer is, their message and the task: the
    same prefix for every such call, and of a thread's up to its message. An answer lists no tool (with every
    tool listed the 0.5B model wrote the call again as text) and reads the instructions with the customer and the
    task, then this message, its call and its result: not the earlier messages, nor the fact card."""
    texts = ("Where is my order ORD-10144?", "What's the status of ORD-10198?")
    calls = ask(stable(), engine, "U001", texts=texts)
    without = ask(plain(), engine, "U001", texts=texts)
    assert len(calls) == len(without) == 4
    everything = [spec.name for spec in SHOP.registry().offer(None, "customer")]
    assert len(everything) > 1
    head = [{"role": "system", "content": SHOP.system_prompt}, {"role": "system", "content": "Customer: id U001, role customer."}]
    for call, text in zip(calls[::2], texts, strict=True):
        assert call["grammar"].startswith("root ::= zq-call") and call["tools"] == everything
        assert call["messages"][:2] == head and call["messages"][2] == {"role": "user", "content": text}
        assert len(call["messages"]) == 4 and is_task_block(call["messages"][3])
        assert "## Known facts" not in call["messages"][3]["content"], "the fact card's other ids misled calls"
    for answer, text in zip(calls[1::2], texts, strict=True):
        assert answer["grammar"].startswith("root ::= zq-text") and answer["tools"] == []
        system, *rest = answer["messages"]
        assert system["content"].startswith(SHOP.system_prompt + "\nCustomer: id U001, role customer.\n\n## Current task")
        assert system["content"].endswith("## Known facts\n- language: en"), "of the fact card, the language only"
        assert [m["role"] for m in rest] == ["user", "assistant", "tool"] and rest[0]["content"] == text
    assert texts[0] not in json.dumps(calls[3]["messages"]), "the second answer reads the first message"
    assert texts[0] in json.dumps(without[3]["messages"]), "without the knob it does (the conversation)"


def test_an_answer_keeps_the_customers_language(engine: ScriptedEngine) -> None:
    """The answer reads no earlier message, so the customer's language rides with the task: a one-word message
    ("是", confirming a change) does not say it, and the 0.5B model answered a Chinese customer "Cancelled."."""
    calls = ask(stable(), engine, "U001", texts=("我的订单 ORD-10144 到哪了？",))
    assert calls[-1]["messages"][0]["content"].endswith("## Known facts\n- language: zh")


def test_the_answer_to_a_confirmed_change_reads_the_request_that_started_it(engine: ScriptedEngine) -> None:
    """A change runs on the customer's yes, a message of its own: the answer reads the request it confirms too."""
    calls = ask(stable(), engine, "U001", texts=("请帮我取消订单 ORD-10198", "是的"))
    answer = next(c for c in calls if c["messages"][-1]["role"] == "tool" and "cancel_order" in c["messages"][-1]["content"])
    said = [m["content"] for m in answer["messages"] if m["role"] == "user"]
    assert said == ["请帮我取消订单 ORD-10198", "是的"], said
    assert [m["role"] for m in answer["messages"][1:]] == ["user", "user", "assistant", "tool"]


def test_a_step_that_may_call_again_after_a_lookup_extends_the_calls_prompt(engine: ScriptedEngine) -> None:
    """A product question: a search, then a step that may fetch the product. That step lists every tool too and
    reads the prompt of the message's first call up to the customer's message, then the call and what it found,
    then the task: the engine reads only what the lookup added."""
    calls = ask(stable(), engine, "U001", texts=("Do you sell wireless bluetooth headphones?",))
    search, after = calls[0], calls[1]
    assert search["tools"] == after["tools"] and len(after["tools"]) > 1
    assert after["grammar"].startswith("root ::= zq-call | zq-text"), "it may call or answer"
    assert after["messages"][:3] == search["messages"][:3]
    assert [m["role"] for m in after["messages"][3:]] == ["assistant", "tool", "system"]
    assert is_task_block(after["messages"][-1])


def test_a_regenerated_answer_extends_the_rejected_answers_prompt(monkeypatch: pytest.MonkeyPatch) -> None:
    """An answer the self-check sends back (raw data) is asked again with the results still replayed and the facts
    in words after them, so the engine reads only the note and the facts turn after the first answer's prompt."""
    scripted = ScriptedEngine(first_answer='{"status": "delivered"}')
    monkeypatch.setattr(LocalChatModel, "engine", lambda self: scripted)
    calls = ask(stable(), scripted, "U001")
    assert len(calls) == 3, [c["grammar"][:30] for c in calls]
    answer, again = calls[1], calls[2]
    assert again["messages"][: len(answer["messages"])] == answer["messages"]
    assert [m["role"] for m in again["messages"][len(answer["messages"]):]] == ["system", "user"]
    assert "delivered" in again["messages"][-1]["content"], "the facts in words"


def test_without_the_knob_the_customer_and_task_ride_in_the_instructions(engine: ScriptedEngine) -> None:
    """``harness`` ships with the knob on (on the real model its threads' messages are faster, its dev results
    even: docs/performance.md); its ablation lays every prompt out as assembled."""
    assert stable().knobs.stable_prefix and ablation(stable(), "stable_prefix").knobs == plain().knobs
    calls = ask(plain(), engine, "U001")
    head = calls[0]["messages"][0]["content"]
    assert head.startswith(SHOP.system_prompt + "\nCustomer: id U001") and "## Current task" in head


def test_the_knob_changes_nothing_where_no_grammar_holds_a_step_to_its_tools(recording_sim_cls) -> None:
    """The sim (and any provider without a grammar) gets the prompt ``harness`` gives it: listing every tool is
    safe only where the step cannot call the others."""
    prompts = []
    for design in (plain(), stable()):
        model = recording_sim_cls()
        with Harness(model, domain="shop", design=design, settings=Settings(data_dir=None)) as h:
            h.send("t", "Where is my order ORD-10144?", "U001")
        prompts.append([([type(m).__name__ for m in c["messages"]], c["tools"]) for c in model.calls])
    assert prompts[0] == prompts[1] and prompts[0]
