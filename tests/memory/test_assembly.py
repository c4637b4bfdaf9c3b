"""Context assembly: layer order and accounts, budgets per strategy, pinned constraints, the anchored window,
low-information turns, the tool-group invariant (with hypothesis), and constraint/correction patterns."""

from __future__ import annotations

import json

import pydantic
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from lg_harness.domains.shop import DOMAIN as SHOP
from lg_harness.llm.embeddings import count_tokens
from lg_harness.memory.assembly import (
    LAYERS,
    MESSAGE_OVERHEAD,
    TASK_BLOCK_ID,
    WORKING_STRATEGIES,
    Anchors,
    ContextPolicy,
    LayerShares,
    MemoryLayer,
    assemble,
    describe_task,
    is_well_formed,
    message_tokens,
    tool_groups,
)
from lg_harness.memory.constraints import extract_constraints, is_correction

TRIMMING = [name for name, s in WORKING_STRATEGIES.items() if s.trims]
SYSTEM = "You are the customer-service assistant of an online shop. Never invent order numbers."


def words(text: str) -> int:
    """A fast stand-in token counter: one token per whitespace-separated word."""
    return len(text.split())


def tool_pair(call_id: str, name: str, args: dict, result: dict | str, status: str = "success",
              ids: tuple[str, str] | None = None) -> list[BaseMessage]:
    ai_id, tool_id = ids or (f"a-{call_id}", f"t-{call_id}")
    content = result if isinstance(result, str) else json.dumps(result)
    return [AIMessage("", tool_calls=[{"name": name, "args": args, "id": call_id}], id=ai_id),
            ToolMessage(content, tool_call_id=call_id, name=name, status=status, id=tool_id)]


def filler_turns(n: int, start: int = 0) -> list[BaseMessage]:
    out: list[BaseMessage] = []
    for i in range(start, start + n):
        out.append(HumanMessage(f"Question number {i}: is the return shipping label free for large parcels?",
                                id=f"fh{i}"))
        out.append(AIMessage(f"Answer {i}: yes, return labels are free for parcels up to twenty kilograms.",
                             id=f"fa{i}"))
    return out


def long_history() -> list[BaseMessage]:
    msgs: list[BaseMessage] = [HumanMessage("I want to return ORD-10001 because the screen arrived cracked", id="h0")]
    msgs += tool_pair("c0", "get_order_status", {"order_id": "ORD-10001"}, {"status": "delivered", "eta": None})
    msgs += filler_turns(20)
    msgs += tool_pair("c1", "list_coupons", {}, {"coupons": ["SAVE10", "SHIP0"]})
    msgs += filler_turns(5, start=20)
    return msgs


def rich_memory(n_facts: int = 12) -> MemoryLayer:
    return MemoryLayer(
        fact_card={f"fact_{i:02d}": f"value number {i} stated by the customer" for i in range(n_facts)},
        constraints=["Do not use the external API.", "Never ship to my office."],
        summary="[Summary up to turn 9]\n" + "\n".join(f"- T{i} user: asked about thing {i} in detail"
                                                       for i in range(1, 10)),
        retrieved=[f"Earlier session note {i}: prefers SF Express" for i in range(5)],
    )


def body(asm) -> list[BaseMessage]:
    """The messages after the SystemMessage."""
    assert isinstance(asm.messages[0], SystemMessage)
    return asm.messages[1:]


# -------------------------------------------------------------------------------- order and accounts


def test_layer_order_one_system_message_and_account_sums():
    history = long_history()[:6]
    immediate = [HumanMessage("And when does the refund arrive?", id="now")]
    asm = assemble(system=SYSTEM, task=describe_task("return_order", {"order_id": "ORD-10001"}),
                   memory=rich_memory(3), history=history, immediate=immediate, policy=ContextPolicy(), count=words)

    assert sum(isinstance(m, SystemMessage) for m in asm.messages) == 1
    text = asm.messages[0].content
    positions = [text.index(x) for x in (SYSTEM, "## Current task", "## Constraints", "## Known facts",
                                         "[Summary up to turn 9]", "## From earlier conversations")]
    assert positions == sorted(positions)
    assert asm.messages[1:] == [*history, *immediate]
    assert set(asm.account) == {*LAYERS, "total"}
    assert asm.account["total"] == sum(asm.account[name] for name in LAYERS)
    assert asm.account["working"] == sum(message_tokens(m, words) for m in history)
    assert asm.account["immediate"] == message_tokens(immediate[0], words)
    assert asm.dropped == 0 and not asm.over_budget


def test_account_with_the_real_tokenizer_matches_the_messages_sent():
    history = long_history()[:6]
    asm = assemble(system=SYSTEM, task="Intent: return_order.", memory=rich_memory(3), history=history,
                   immediate=[HumanMessage("refund?")], policy=ContextPolicy())
    sent = sum(message_tokens(m) for m in asm.messages)
    # Parts are counted one by one; WordPiece splits on whitespace, so the sum equals the joined text.
    assert asm.account["total"] == sent


def test_prefix_is_stable_across_turns():
    task = "Intent: order_status."
    first = assemble(system=SYSTEM, task=task, memory=MemoryLayer(), history=[],
                     immediate=[HumanMessage("where is ORD-10001")], policy=ContextPolicy(), count=words)
    later = assemble(system=SYSTEM, task=task, memory=rich_memory(), history=long_history(),
                     immediate=[HumanMessage("and now?")], policy=ContextPolicy(), count=words)
    prefix, text = first.messages[0].content, later.messages[0].content
    assert isinstance(prefix, str) and isinstance(text, str)
    assert text.startswith(prefix)


def test_no_system_message_when_every_fixed_layer_is_empty():
    asm = assemble(system="", task="", memory=MemoryLayer(), history=[], immediate=[HumanMessage("hi")],
                   policy=ContextPolicy(), count=words)
    assert [type(m) for m in asm.messages] == [HumanMessage]
    assert asm.account["system"] == 0


# ------------------------------------------------------------------------------------------ budgets


@pytest.mark.parametrize("strategy", TRIMMING)
def test_budget_respected_per_layer(strategy):
    policy = ContextPolicy(budget_tokens=600, working=strategy)
    asm = assemble(system=SYSTEM, task="Intent: return_order. Known: order_id=ORD-10001.", memory=rich_memory(),
                   history=long_history(), immediate=[HumanMessage("is the refund sent?")], policy=policy,
                   count=words)
    budgets = policy.budgets()
    for name in LAYERS:
        assert asm.account[name] <= budgets[name], name
    assert asm.account["working"] <= asm.budgets["working"]
    assert asm.account["total"] <= policy.budget_tokens and not asm.over_budget
    assert is_well_formed(body(asm))


def test_full_keeps_everything_and_reports_over_budget():
    history = long_history()
    policy = ContextPolicy(budget_tokens=300, working="full")
    asm = assemble(system=SYSTEM, task="", memory=rich_memory(), history=history,
                   immediate=[HumanMessage("ok")], policy=policy, count=words)
    assert body(asm)[:-1] == history
    assert asm.cut_memory == 0 and asm.dropped == 0
    assert asm.over_budget and asm.account["total"] > 300


def test_uncuttable_overflow_comes_out_of_the_working_budget():
    big_result = {"items": [f"product {i} with a long description" for i in range(40)]}
    immediate = [HumanMessage("show all", id="now"), *tool_pair("c9", "search_products", {"query": "x"}, big_result)]
    policy = ContextPolicy(budget_tokens=600, working="hybrid")
    asm = assemble(system=SYSTEM, task="", memory=MemoryLayer(), history=long_history(), immediate=immediate,
                   policy=policy, count=words)
    assert asm.messages[-3:] == immediate  # this turn is never cut
    overflow = asm.account["immediate"] - policy.budgets()["immediate"]
    assert overflow > 0
    assert asm.budgets["working"] == policy.budgets()["working"] - overflow
    assert asm.account["working"] <= asm.budgets["working"]
    assert asm.account["total"] <= policy.budget_tokens


# -------------------------------------------------------------------------------------- constraints


@pytest.mark.parametrize("strategy", list(WORKING_STRATEGIES))
def test_constraints_always_present_even_when_the_memory_share_is_tiny(strategy):
    shares = LayerShares(system=0.1, task=0.1, memory=0.01, working=0.5, immediate=0.2)
    policy = ContextPolicy(budget_tokens=1000, shares=shares, working=strategy)
    memory = rich_memory()
    asm = assemble(system=SYSTEM, task="", memory=memory, history=long_history(),
                   immediate=[HumanMessage("hello again")], policy=policy, count=words)
    text = asm.messages[0].content
    for constraint in memory.constraints:
        assert constraint in text
    assert asm.account["memory"] > policy.budgets()["memory"]  # constraints alone exceed the share
    if strategy != "full":
        assert "## Known facts" not in text and "[Summary" not in text  # other memory items were cut
        assert asm.cut_memory > 0 or WORKING_STRATEGIES[strategy].memory == ("constraints",)
    assert text.index("## Constraints") < text.index(memory.constraints[0])


def test_memory_cut_keeps_summary_label_first_line_and_newest_lines():
    summary_lines = [f"- T{i} user: request {i} about order ORD-1000{i}" for i in range(1, 10)]
    memory = MemoryLayer(summary="[Summary up to turn 9]\n" + "\n".join(summary_lines))
    policy = ContextPolicy(budget_tokens=300, working="summary_only")  # memory budget: 60 words
    asm = assemble(system="", task="", memory=memory, history=[], immediate=[], policy=policy, count=words)
    text = asm.messages[0].content
    assert "[Summary up to turn 9]" in text and summary_lines[0] in text and summary_lines[-1] in text
    assert summary_lines[3] not in text
    assert asm.account["memory"] <= 60


@pytest.mark.parametrize(("strategy", "shown", "hidden"), [
    ("summary_only", ["[Summary up to turn 9]", "## Constraints"], ["## Known facts", "## From earlier"]),
    ("structured_only", ["## Known facts", "## Constraints"], ["[Summary", "## From earlier"]),
    ("hybrid", ["## Known facts", "## Constraints", "[Summary", "## From earlier"], []),
    ("time_window", ["## Constraints"], ["## Known facts", "[Summary"]),
])
def test_memory_sections_per_strategy(strategy, shown, hidden):
    asm = assemble(system=SYSTEM, task="", memory=rich_memory(3), history=long_history(),
                   immediate=[HumanMessage("next")], policy=ContextPolicy(working=strategy), count=words)
    text = asm.messages[0].content
    assert all(s in text for s in shown) and not any(h in text for h in hidden)
    if strategy in ("summary_only", "structured_only"):
        assert body(asm) == [HumanMessage("next")] and asm.dropped == len(long_history())


# ---------------------------------------------------------------------------------- working window


def anchored_history() -> list[BaseMessage]:
    msgs: list[BaseMessage] = [HumanMessage("I want to return ORD-10001, the screen arrived cracked", id="orig")]
    msgs += tool_pair("ok1", "get_order_status", {"order_id": "ORD-10001"}, {"status": "delivered"})
    msgs += [AIMessage("ORD-10001 was delivered on May 2.", id="r1")]
    msgs += filler_turns(4)
    msgs += [HumanMessage("Actually, I meant ORD-10002, not ORD-10001", id="fix"),
             AIMessage("Understood, ORD-10002 then.", id="r2")]
    msgs += filler_turns(4, start=4)
    msgs += tool_pair("bad1", "request_return", {"order_id": "ORD-10002"}, {"error": "service unavailable"},
                      status="error")
    msgs += [AIMessage("Sorry, the return request failed; shall I try again?", id="r3")]
    return msgs


def _working_policy(budget: int, strategy: str) -> ContextPolicy:
    only_working = LayerShares(system=0, task=0, memory=0, working=1.0, immediate=0)
    return ContextPolicy(budget_tokens=budget, shares=only_working, working=strategy)


def test_anchored_keeps_original_request_last_successful_tool_pair_and_latest_correction_when_tight():
    history = anchored_history()
    by_id = {m.id: m for m in history}
    anchors = [by_id[i] for i in ("orig", "a-ok1", "t-ok1", "fix")]
    tight = sum(message_tokens(m, words) for m in anchors) + 3
    asm = assemble(system="", task="", memory=MemoryLayer(), history=history, immediate=[],
                   policy=_working_policy(tight, "anchored"), count=words)
    kept = [m.id for m in asm.messages]
    assert kept == ["orig", "a-ok1", "t-ok1", "fix"]  # chronological; the failed call did not fit
    assert asm.account["working"] <= tight

    window = assemble(system="", task="", memory=MemoryLayer(), history=history, immediate=[],
                      policy=_working_policy(tight, "time_window"), count=words)
    assert "orig" not in [m.id for m in window.messages] and "fix" not in [m.id for m in window.messages]


def test_anchored_fills_newest_first_after_the_anchors():
    history = anchored_history()
    asm = assemble(system="", task="", memory=MemoryLayer(), history=history, immediate=[],
                   policy=_working_policy(160, "anchored"), count=words)
    kept = [m.id for m in asm.messages]
    assert kept[:3] == ["orig", "a-ok1", "t-ok1"] and "fix" in kept
    assert kept[-3:] == ["a-bad1", "t-bad1", "r3"]  # the newest groups fill the rest
    assert "fh0" not in kept  # old filler is what gets trimmed


def test_original_request_from_anchors_is_kept_after_it_left_the_history():
    original = HumanMessage("Cancel ORD-10003 please, it is a duplicate", id="gone")
    history = filler_turns(6)
    asm = assemble(system="", task="", memory=MemoryLayer(), history=history, immediate=[],
                   policy=_working_policy(60, "hybrid"), anchors=Anchors(original_request=original), count=words)
    assert asm.messages[0] is original
    assert asm.account["working"] <= 60


def test_original_request_from_task_start_index():
    history = [*filler_turns(3), HumanMessage("Where is ORD-10004?", id="task"), AIMessage("Checking.", id="x"),
               *filler_turns(3, start=3)]
    budget = message_tokens(history[6], words) + 30
    asm = assemble(system="", task="", memory=MemoryLayer(), history=history, immediate=[],
                   policy=_working_policy(budget, "anchored"), anchors=Anchors(task_start_index=6), count=words)
    assert asm.messages[0].id == "task"


def test_original_request_in_this_turn_is_not_duplicated():
    now = HumanMessage("Where is ORD-10005?", id="now")
    asm = assemble(system="", task="", memory=MemoryLayer(), history=filler_turns(2), immediate=[now],
                   policy=ContextPolicy(), anchors=Anchors(original_request=now), count=words)
    assert [m.id for m in asm.messages].count("now") == 1


def test_time_window_keeps_the_last_user_turns():
    history = filler_turns(10)
    asm = assemble(system="", task="", memory=MemoryLayer(), history=history, immediate=[],
                   policy=ContextPolicy(working="time_window", window_turns=3), count=words)
    assert [m.id for m in asm.messages] == ["fh7", "fa7", "fh8", "fa8", "fh9", "fa9"]
    assert asm.dropped == 14


def test_low_information_turns_are_dropped():
    history = [
        HumanMessage("Where is ORD-10001?", id="q"),
        *tool_pair("c1", "get_order_status", {"order_id": "ORD-10001"}, {"status": "shipped"}),
        AIMessage("It shipped yesterday with SF Express.", id="ans"),
        HumanMessage("ok", id="ack1"), AIMessage("Great!", id="empty1"),
        HumanMessage("谢谢", id="ack2"), AIMessage("不客气！", id="empty2"),
        HumanMessage("thanks!", id="ack3"),
        AIMessage("You're welcome. ORD-10001 should arrive on Friday.", id="useful"),
    ]
    asm = assemble(system="", task="", memory=MemoryLayer(), history=history, immediate=[],
                   policy=ContextPolicy(), count=words, entity_types=SHOP.entity_types)
    assert [m.id for m in asm.messages] == ["q", "a-c1", "t-c1", "ans", "useful"]
    assert asm.dropped == 5

    kept_all = assemble(system="", task="", memory=MemoryLayer(), history=history, immediate=[],
                        policy=ContextPolicy(drop_low_information=False), count=words)
    assert len(kept_all.messages) == len(history)


# ------------------------------------------------------------------------------------- tool groups


def test_tool_groups_parallel_orphan_and_incomplete():
    parallel = AIMessage("", tool_calls=[{"name": "a", "args": {}, "id": "1"}, {"name": "b", "args": {}, "id": "2"}])
    msgs = [
        HumanMessage("q"),
        parallel, ToolMessage("r2", tool_call_id="2"), ToolMessage("r1", tool_call_id="1"),
        ToolMessage("orphan", tool_call_id="zz"),
        AIMessage("", tool_calls=[{"name": "c", "args": {}, "id": "3"}]),  # its result never came
        HumanMessage("next"),
    ]
    groups = tool_groups(msgs)
    assert [len(g.messages) for g in groups] == [1, 3, 1, 1, 1]
    assert [g.valid for g in groups] == [True, True, False, False, True]
    assert groups[1].succeeded
    assert [m for g in groups for m in g.messages] == msgs
    asm = assemble(system="", task="", memory=MemoryLayer(), history=msgs, immediate=[],
                   policy=ContextPolicy(working="full"), count=words)
    assert is_well_formed(asm.messages) and asm.dropped == 2


_TEXTS = {
    "human": ["Where is ORD-10001?", "Do you have black headphones?", "I want to return my order P1234"],
    "ack": ["ok", "thanks", "谢谢", "嗯"],
    "correction": ["Actually, I meant ORD-10002", "不是红色，是黑色", "no, I meant the blue one"],
    "ai": ["Sure.", "It shipped on Monday with SF Express and arrives soon.", "You're welcome!"],
}


@st.composite
def conversations(draw) -> list[BaseMessage]:
    msgs: list[BaseMessage] = []
    for k in range(draw(st.integers(0, 24))):
        kind = draw(st.sampled_from(["human", "ack", "correction", "ai", "tools", "tools", "orphan"]))
        if kind == "orphan":
            msgs.append(ToolMessage("stray result", tool_call_id=f"stray{k}"))
        elif kind == "tools":
            ids = [f"c{k}_{j}" for j in range(draw(st.integers(1, 3)))]
            msgs.append(AIMessage("", tool_calls=[{"name": "get_order_status", "args": {"order_id": i}, "id": i}
                                                  for i in ids]))
            answered = draw(st.permutations(ids)) if draw(st.booleans()) else draw(
                st.lists(st.sampled_from(ids), unique=True))
            if answered and draw(st.integers(0, 9)) == 0:
                msgs.append(HumanMessage("an interruption between a call and its results"))
            for i in answered:
                status = draw(st.sampled_from(["success", "success", "error"]))
                msgs.append(ToolMessage(" ".join(["result"] * draw(st.integers(1, 30))), tool_call_id=i,
                                        status=status))
        else:
            cls = AIMessage if kind == "ai" else HumanMessage
            msgs.append(cls(draw(st.sampled_from(_TEXTS[kind]))))
    for i, m in enumerate(msgs):
        m.id = f"m{i}"
    return msgs


def _id(message: BaseMessage) -> str:
    """The id ``conversations`` (or the test) gave the message."""
    assert message.id is not None, message
    return message.id


def _complete_groups(messages: list[BaseMessage]) -> dict[str, tuple[str, ...]]:
    """The ids of every valid tool group, keyed by its AIMessage id."""
    return {_id(g.first): tuple(_id(m) for m in g.messages) for g in tool_groups(messages)
            if g.is_tool_call and g.valid}


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(history=conversations(), budget=st.integers(0, 400), strategy=st.sampled_from(list(WORKING_STRATEGIES)),
       anchored_at=st.none() | st.integers(0, 30))
@pytest.mark.slow
def test_tool_calls_and_results_are_never_separated(history, budget, strategy, anchored_at):
    policy = ContextPolicy(budget_tokens=max(budget, 1), working=strategy, window_turns=2)
    asm = assemble(system="sys", task="", memory=MemoryLayer(constraints=["Do not call me."]), history=history,
                   immediate=[HumanMessage("now", id="now")], policy=policy,
                   anchors=Anchors(task_start_index=anchored_at), count=words)
    sent = body(asm)
    assert is_well_formed(sent)
    # A kept tool call brings exactly its whole group from the history, results in their order.
    complete = _complete_groups(history)
    sent_ids = [_id(m) for m in sent]
    for ai in (m for m in sent if isinstance(m, AIMessage) and m.tool_calls):
        group = complete[_id(ai)]
        start = sent_ids.index(_id(ai))
        assert tuple(sent_ids[start:start + len(group)]) == group
    # Working messages keep the history's order, and this turn comes last.
    positions = [int(i[1:]) for i in sent_ids[:-1]]
    assert positions == sorted(positions) and sent_ids[-1] == "now"
    if WORKING_STRATEGIES[strategy].trims:
        assert asm.account["working"] <= asm.budgets["working"]
    assert asm.dropped == len(history) - (len(sent) - 1)


@settings(max_examples=200, deadline=None)
@given(history=conversations())
def test_tool_groups_partition_the_sequence(history):
    groups = tool_groups(history)
    assert [m for g in groups for m in g.messages] == history
    for g in groups:
        assert g.valid == is_well_formed(list(g.messages))


# ------------------------------------------------------------------------------------------ policy


def test_policy_defaults_and_validation():
    policy = ContextPolicy()
    assert (policy.budget_tokens, policy.working, policy.window_turns, policy.compress_at) == (3000, "hybrid", 6, 0.7)
    assert policy.budgets() == {"system": 300, "task": 300, "memory": 600, "working": 1200, "immediate": 600}
    with pytest.raises(pydantic.ValidationError):
        ContextPolicy(working="everything")
    with pytest.raises(pydantic.ValidationError):
        LayerShares(working=0.9)


def test_message_tokens_counts_tool_calls_and_text_blocks():
    call = AIMessage("", tool_calls=[{"name": "get_order_status", "args": {"order_id": "ORD-10001"}, "id": "1"}])
    assert message_tokens(call, words) > message_tokens(AIMessage(""), words)
    blocks = HumanMessage(content=[{"type": "text", "text": "where is my order"}])
    assert message_tokens(blocks, words) == message_tokens(HumanMessage("where is my order"), words)
    assert message_tokens(HumanMessage("我的订单在哪"), count_tokens) > message_tokens(HumanMessage("订单"), count_tokens)


# ------------------------------------------------------------------------------- constraint patterns


@pytest.mark.parametrize(("text", "expected"), [
    ("don't use the external API", ["Do not use the external API."]),
    ("Also, please don't use the external API!", ["Do not use the external API."]),
    ("do not call me", ["Do not call me."]),
    ("never ship to my office", ["Never ship to my office."]),
    ("only use SF Express", ["Only use SF Express."]),
    ("must arrive before Friday", ["Must arrive before Friday."]),
    ("It must arrive before Friday, otherwise I'll cancel.", ["It must arrive before Friday."]),
    ("no phone calls", ["No phone calls."]),
    ("Don't call me, only email.", ["Do not call me.", "Only email."]),
    ("I said don't use the external API", ["Do not use the external API."]),
    ("I don't want you to call me", ["Do not call me."]),
    ("I only want black", ["I only want black."]),
    ("不要打电话", ["不要打电话。"]),
    ("别用顺丰", ["不要用顺丰。"]),
    ("只要黑色", ["只要黑色。"]),
    ("必须周五前送到", ["必须周五前送到。"]),
    ("我说了不要打电话！", ["不要打电话。"]),
    ("快递不要放门口，谢谢", ["快递不要放门口。"]),
    ("Where is ORD-10001? 不要打电话，只发短信。", ["不要打电话。", "只发短信。"]),
])
def test_extract_constraints(text, expected):
    assert extract_constraints(text) == expected


@pytest.mark.parametrize("text", [
    "I don't know where my order is", "Don't you sell headphones?", "no thanks", "No, I meant ORD-10002",
    "ok", "I never received my package", "it must be lost", "I have to go", "特别好", "要不要买？", "只要能到就行",
    "我不要了", "这个不要紧", "Where is ORD-10001?",
])
def test_no_constraint_in_ordinary_messages(text):
    assert extract_constraints(text) == []


@pytest.mark.parametrize(("text", "expected"), [
    ("Actually, it's ORD-10002", True), ("No, I meant the blue one", True), ("not the red one but the blue one", True),
    ("I said black", True), ("改成上海的地址", True), ("不是红色，是黑色", True), ("我说的是黑色", True), ("更正一下", True),
    ("Where is my order?", False), ("是不是发货了", False), ("这不是我的订单", False), ("thanks", False),
])
def test_is_correction(text, expected):
    assert is_correction(text) is expected


def test_a_context_strategy_registers_like_a_node_variant(tmp_path):
    """A new working-layer strategy is one call away on a runtime: designs name it, the graph builds with it,
    and runtimes that did not register it (the process default among them) still refuse it."""
    from lg_harness.core.design import load_design
    from lg_harness.graphs.builder import build_graph
    from lg_harness.graphs.runtime import Runtime
    from lg_harness.llm.sim import SimChatModel
    from lg_harness.memory.assembly import WorkingStrategy, select_none

    base = load_design("harness")
    design = base.model_copy(update={"name": "memory-only", "variants": {**base.variants, "context": "cards_only"}})
    runtime = Runtime()
    with pytest.raises(Exception, match="unknown context variant 'cards_only'"):
        build_graph(design, SimChatModel(), runtime=runtime)
    runtime.strategies.register("cards_only", WorkingStrategy(select_none, ("constraints", "facts")))
    assert build_graph(design, SimChatModel(), runtime=runtime) is not None
    asm = assemble(system="", task="", memory=MemoryLayer(fact_card={"k": "v"}), history=[HumanMessage("hi", id="h")],
                   immediate=[], policy=ContextPolicy(working="cards_only", strategies=runtime.strategies))
    assert "h" not in [m.id for m in asm.messages] and "- k: v" in asm.messages[0].content
    for other in (Runtime(), None):  # None: the process's default runtime
        with pytest.raises(Exception, match="unknown context variant 'cards_only'"):
            build_graph(design, SimChatModel(), runtime=other)
    with pytest.raises(ValueError, match="unknown working strategy 'cards_only'"):
        ContextPolicy(working="cards_only")
    assert "cards_only" not in WORKING_STRATEGIES


def test_a_stable_prefix_puts_what_changes_after_what_stays():
    """The stable-prefix layout (a step that must call, with the knob ``stable_prefix``): the instructions first
    (the same for every thread), who the customer is next (the same all thread long), the conversation, this turn,
    and the task and memory last, so what changes comes after what stays."""
    policy = ContextPolicy(stable_prefix=True)
    first = assemble(system=SYSTEM, session="Customer: id u2, role customer.", task="Intent: order_status.",
                     memory=MemoryLayer(), history=[], immediate=[HumanMessage("where is ORD-10001", id="now1")],
                     policy=policy)
    history = long_history()[:6]
    immediate = [HumanMessage("and my refund?", id="now2")]
    later = assemble(system=SYSTEM, session="Customer: id u1, role customer.",
                     task=describe_task("return_order", {"order_id": "ORD-10001"}),
                     memory=rich_memory(3), history=history, immediate=immediate, policy=policy)
    assert first.messages[0] == later.messages[0] == SystemMessage(SYSTEM)
    assert later.messages[1] == SystemMessage("Customer: id u1, role customer.")
    assert later.messages[2:8] == history and later.messages[8:-1] == immediate
    block = later.messages[-1]
    assert isinstance(block, SystemMessage) and block.id == TASK_BLOCK_ID
    assert "## Current task" in block.text and "## Known facts" in block.text and SYSTEM not in block.text
    # the same layers as one system message, plus two messages' overhead
    assert later.account["total"] == sum(message_tokens(m) for m in later.messages)
    one = assemble(system=SYSTEM, session="Customer: id u1, role customer.",
                   task=describe_task("return_order", {"order_id": "ORD-10001"}),
                   memory=rich_memory(3), history=history, immediate=immediate, policy=ContextPolicy())
    assert one.messages[0].text.startswith(SYSTEM + "\nCustomer: id u1")
    assert later.account["task"] == one.account["task"] + MESSAGE_OVERHEAD
    assert later.account["system"] == one.account["system"] + MESSAGE_OVERHEAD
    parts = [later.messages[0], later.messages[1], block]
    assert {w for m in parts for w in m.text.split()} == set(one.messages[0].text.split())


def test_a_stable_prefix_without_task_or_memory_adds_no_second_message():
    asm = assemble(system=SYSTEM, task="", memory=MemoryLayer(), history=[], immediate=[HumanMessage("hi")],
                   policy=ContextPolicy(stable_prefix=True))
    assert asm.messages == [SystemMessage(SYSTEM), HumanMessage("hi")]


def test_a_step_that_must_call_reads_the_head_the_customer_message_and_the_task():
    """``must_call_messages``: the instructions, who the customer is, their latest message, and the task with the
    pinned constraints last; not the conversation, not the fact card."""
    from typing import cast

    from lg_harness.core.design import load_design
    from lg_harness.core.state import HarnessState
    from lg_harness.memory.context import must_call_messages

    now = HumanMessage("where is ORD-10002?", id="now")
    state = cast(HarnessState, {"messages": [*long_history()[:6], now], "user": {"id": "u1", "role": "customer"},
             "intent": "order_status", "intent_kind": "task", "slots": {"order_id": "ORD-10002"},
             "fact_card": {"first_order_id": "ORD-10001"}, "constraints": ["Never ship to my office."]})
    lean = must_call_messages(state, load_design("harness"), SHOP)
    assert lean[:3] == [SystemMessage(SHOP.system_prompt), SystemMessage("Customer: id u1, role customer."), now]
    assert len(lean) == 4 and lean[-1].id == TASK_BLOCK_ID
    assert "Known: order_id=ORD-10002" in lean[-1].text and "Never ship to my office." in lean[-1].text
    assert "ORD-10001" not in lean[-1].text, "the fact card's other ids misled calls"
