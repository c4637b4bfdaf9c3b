"""Clearing used tool results: digests keep ids and key fields, the latest successful result stays whole
until this turn has its own, tool calls keep their answers, and the stored working set shrinks with them."""

from __future__ import annotations

import json
from collections.abc import Sequence

from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.sqlite import SqliteSaver

from lg_harness.core.design import load_design
from lg_harness.core.state import HarnessState
from lg_harness.domains.shop import DOMAIN as SHOP
from lg_harness.graphs.app import Harness, Settings
from lg_harness.memory.assembly import ContextPolicy, MemoryLayer, assemble, is_well_formed, results_to_keep
from lg_harness.memory.clearing import clear_used_results, cleared, is_digest, result_digest
from lg_harness.memory.compress import compress
from lg_harness.memory.context import turn_upkeep
from lg_harness.tools.cleaning import clean_error, label, unlabel
from tests.support import u001_order

ORDER = {"order_id": "ORD-10001", "created_at": "2026-10-26T14:32:00", "status": "shipped", "total": 288.49,
         "carrier": "YTO", "items": [{"name": "Headphones", "sku": "P1001-BLK", "qty": 2},
                                     {"name": "Slippers", "sku": "P1037-PNK", "qty": 1}]}
SEARCH = {"query": "speaker", "results": [{"id": "P1010", "name": "Mini speaker", "price": 39.0,
                                           "description": "x" * 400}, {"id": "P1011", "name": "Big", "price": 99.0}]}


def tool_turn(n: int, name: str, args: dict, result: dict | None, answer: str) -> list[AnyMessage]:
    """One user turn: the request, a tool call with its labelled result (or an error), the answer."""
    content = label(json.dumps(result), name) if result is not None else clean_error("timeout", "slow", tool=name)
    return [HumanMessage(f"question {n}", id=f"h{n}"),
            AIMessage("", tool_calls=[{"name": name, "args": args, "id": f"c{n}"}], id=f"a{n}"),
            ToolMessage(content, tool_call_id=f"c{n}", name=name, id=f"t{n}",
                        status="success" if result is not None else "error"),
            AIMessage(answer, id=f"r{n}")]


def text_of(message: BaseMessage) -> str:
    """The message's content, text as the harness writes tool results (not content blocks)."""
    assert isinstance(message.content, str), message
    return message.content


def tool_texts(messages: Sequence[BaseMessage]) -> dict[str, str]:
    return {m.tool_call_id: text_of(m) for m in messages if isinstance(m, ToolMessage)}


def test_digest_keeps_key_fields_first_item_ids_and_drops_repeated_arguments():
    text = label(json.dumps(ORDER), "get_order_status")
    digest = result_digest(text, {"order_id": "ORD-10001"})
    assert digest.startswith("status=shipped, total=288.49")
    assert "items=[P1001-BLK, P1037-PNK]" in digest and "ORD-10001" not in digest
    assert result_digest(label(json.dumps(SEARCH), "search_products"), {"query": "speaker"}) == "results=[P1010, P1011]"
    assert result_digest("plain   text\nresult " + "y" * 300, limit=20) == "plain text result y…"
    assert result_digest(label(json.dumps({"rows": [{"a": 1}, {"b": 2}]}), "t")) == "rows=[2 items]"


def test_cleared_result_keeps_its_label_ids_and_pairing_and_errors_stay_whole():
    message = ToolMessage(label(json.dumps(ORDER), "get_order_status"), tool_call_id="c1", name="get_order_status",
                          id="t1")
    small = cleared(message, {"order_id": "ORD-10001"})
    assert (small.id, small.tool_call_id, small.name) == ("t1", "c1", "get_order_status")
    assert unlabel(text_of(small)) == ("get_order_status", result_digest(text_of(message), {"order_id": "ORD-10001"}),
                                       "digest")
    assert len(small.content) < len(message.content)
    assert cleared(small) is small  # a digest is not digested again
    error = ToolMessage(clean_error("timeout", "the backend was slow", tool="x"), tool_call_id="c2", status="error")
    assert cleared(error) is error
    tiny = ToolMessage(label("{}", "x"), tool_call_id="c3")
    assert cleared(tiny) is tiny  # nothing to gain


def history() -> list[AnyMessage]:
    return [*tool_turn(1, "get_order_status", {"order_id": "ORD-10001"}, ORDER, "ORD-10001 shipped with YTO."),
            *tool_turn(2, "search_products", {"query": "speaker"}, SEARCH, "P1010 Mini speaker, 39.0; P1011 Big."),
            *tool_turn(3, "get_order_status", {"order_id": "ORD-10002"}, None, "The order service is slow.")]


def working(asm) -> list[BaseMessage]:
    return asm.messages[1:]


def test_assembly_keeps_the_latest_successful_result_whole_until_this_turn_has_one():
    policy = ContextPolicy(budget_tokens=4000, working="hybrid", clear_used_results=True)
    asks = [HumanMessage("and the first one?", id="h4")]
    asm = assemble(system="s", task="", memory=MemoryLayer(), history=history(), immediate=asks, policy=policy)
    texts = tool_texts(working(asm))
    assert texts["c2"] == history()[6].content  # the latest successful result, whole (turn 3's failed)
    assert 'type="digest"' in texts["c1"] and "status=shipped" in texts["c1"]
    assert texts["c3"] == history()[10].content  # errors are short and stay
    assert is_well_formed(working(asm))

    answered = [*asks, *tool_turn(4, "get_product", {"product_id": "P1010"}, {"id": "P1010", "stock": 3}, "")[1:3]]
    asm = assemble(system="s", task="", memory=MemoryLayer(), history=history(), immediate=answered, policy=policy)
    texts = tool_texts(working(asm))
    assert 'type="digest"' in texts["c2"] and "results=[P1010, P1011]" in texts["c2"]
    assert texts["c4"] == answered[2].content  # this turn's own result is never cleared
    assert is_well_formed(working(asm))


def test_clearing_is_off_by_default_and_never_touches_full_history():
    for policy in (ContextPolicy(budget_tokens=4000, working="hybrid"),
                   ContextPolicy(budget_tokens=4000, working="full", clear_used_results=True)):
        asm = assemble(system="s", task="", memory=MemoryLayer(), history=history(),
                       immediate=[HumanMessage("next", id="h9")], policy=policy)
        assert tool_texts(working(asm)) == tool_texts(history())


def test_clear_used_results_keeps_the_given_calls():
    out = clear_used_results(history(), {"c1"})
    assert tool_texts(out)["c1"] == tool_texts(history())["c1"] and 'type="digest"' in tool_texts(out)["c2"]
    assert [m.id for m in out] == [m.id for m in history()]


def test_turn_upkeep_stores_digests_under_the_same_ids():
    harness = load_design("harness")
    # A budget the three turns fit in, so compression leaves them all in the stored working set.
    design = harness.model_copy(update={"knobs": harness.knobs.model_copy(update={"context_budget_tokens": 8000})})
    state: HarnessState = {"messages": [*history(), HumanMessage("next", id="h4")], "turn": 3, "fact_card": {}}
    update = turn_upkeep(state, design, "next", SHOP)
    replaced = {m.id: m for m in update.get("messages", []) if isinstance(m, ToolMessage)}
    assert 'type="digest"' in replaced["t1"].content and replaced["t1"].tool_call_id == "c1"
    assert "t2" not in replaced  # the latest successful result stays whole in the checkpoint too
    assert "t3" not in replaced
    off = design.model_copy(update={"knobs": design.knobs.model_copy(update={"clear_used_results": False})})
    assert "messages" not in turn_upkeep(state, off, "next", SHOP)


def test_summary_tool_lines_read_through_the_result_label():
    comp = compress(history(), upto_turn=3, lang="en", fact_card={})
    lines = comp.summary.splitlines()
    assert lines[2].startswith("- T1 tool get_order_status(order_id=ORD-10001) ok: status=shipped, total=288.49, "
                               "created_at=2026-10-26T14:32:00, carrier=YTO, items=[P1001-BLK")
    assert lines[4] == "- T2 tool search_products(query=speaker) ok: results=[P1010, P1011]"
    assert "<tool_result" not in comp.summary


def test_digest_keeps_every_id_of_a_long_list_and_text_block_content_is_read():
    orders = {"orders": [{"order_id": f"ORD-{10000 + i}", "status": "pending"} for i in range(40)]
                        + [{"note": "no id"}]}
    digest = result_digest(label(json.dumps(orders), "list_my_orders"), limit=40)
    assert all(f"ORD-{10000 + i}" in digest for i in range(40)) and digest.endswith("+1 more]")
    blocks = ToolMessage([{"type": "text", "text": label(json.dumps(ORDER), "get_order_status")}],
                         tool_call_id="c1", name="get_order_status", id="t1")
    small = cleared(blocks, {"order_id": "ORD-10001"})
    assert unlabel(text_of(small))[0] == "get_order_status" and "status=shipped" in small.content


def test_of_parallel_calls_the_ones_that_worked_stay_whole():
    ok = label(json.dumps(ORDER), "get_order_status")
    parallel = [HumanMessage("both orders?", id="h1"),
                AIMessage("", tool_calls=[{"name": "get_order_status", "args": {"order_id": "ORD-10001"}, "id": "p1"},
                                          {"name": "get_order_status", "args": {"order_id": "ORD-10002"}, "id": "p2"}],
                          id="a1"),
                ToolMessage(ok, tool_call_id="p1", name="get_order_status", id="t1"),
                ToolMessage(clean_error("timeout", "slow", tool="get_order_status"), tool_call_id="p2",
                            name="get_order_status", status="error", id="t2"),
                AIMessage("ORD-10001 shipped; ORD-10002 did not answer.", id="r1")]
    older = tool_turn(0, "search_products", {"query": "speaker"}, SEARCH, "P1010, P1011.")
    assert results_to_keep([*older, *parallel]) == {"p1"}
    out = tool_texts(clear_used_results([*older, *parallel], results_to_keep([*older, *parallel])))
    assert out["p1"] == ok and 'type="digest"' in out["c0"]


def test_a_long_thread_stores_digests_for_used_results_and_numbers_summary_turns_from_one(tmp_path):
    def run(design) -> tuple[list[BaseMessage], str, int]:
        with Harness("sim:clean", design=design, settings=Settings(data_dir=tmp_path / design.name)) as h:
            order = u001_order("shipped", shop=h.resources["shop"])
            for text in (f"Where is my order {order}?", "Which coupons can I use?", "Do you sell gaming headsets?",
                         "Show me my orders please", f"What was in my order {order}?"):
                h.send("t", text, "U001")
            values = h.state("t")["values"]
            assert isinstance(h.checkpointer, SqliteSaver)  # a data dir's checkpoints are in SQLite
            row = h.checkpointer.conn.execute(
                "SELECT length(checkpoint) FROM checkpoints WHERE thread_id = 't' ORDER BY checkpoint_id DESC LIMIT 1"
            ).fetchone()
            return values["messages"], values.get("summary") or "", row[0]

    harness = load_design("harness")
    _, summary, _ = run(harness)  # the default budget compresses the first turns within five messages
    assert summary.splitlines()[1].startswith("- T1 user: Where is my order"), summary

    # A budget the five messages fit in, so what the stored working set holds is the clearing's doing.
    roomy = harness.knobs.model_copy(update={"context_budget_tokens": 8000})
    on = harness.model_copy(update={"name": "on", "knobs": roomy})
    off = harness.model_copy(update={"name": "off", "knobs": roomy.model_copy(update={"clear_used_results": False})})
    messages, _, size_on = run(on)
    results = [m for m in messages if isinstance(m, ToolMessage)]
    kinds = [is_digest(text_of(m)) for m in results]
    # This message's result, and the one before it (kept whole until this message had its own; the next
    # message's upkeep clears it), are whole; everything older is stored as a digest.
    assert len(kinds) == 5 and kinds[-2:] == [False, False] and all(kinds[:-2]), kinds
    off_messages, _, size_off = run(off)
    assert not any(is_digest(text_of(m)) for m in off_messages if isinstance(m, ToolMessage))
    assert size_on < size_off
