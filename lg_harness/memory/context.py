"""Assemble the messages of one model call from the state, under the design's context policy.

Five layers in a fixed order so the prompt prefix stays stable: system, task, memory (pinned constraints,
fact card, rolling summary, long-term recall), working (earlier turns, chosen by the design's strategy),
immediate (this turn). ``memory.assembly`` does the budgeting; this module maps state onto it and keeps
the per-turn bookkeeping (constraints, compression, trimming) in one place.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
)

from lg_harness.core.design import Design
from lg_harness.core.domain import Domain
from lg_harness.core.state import HarnessState, StateUpdate
from lg_harness.memory.assembly import (
    WORKING_STRATEGIES,
    Anchors,
    Assembly,
    ContextPolicy,
    MemoryLayer,
    StrategyRegistry,
    assemble,
    describe_task,
    results_to_keep,
)
from lg_harness.memory.clearing import clear_used_results
from lg_harness.memory.compress import first_turn_of, maybe_compress, state_update
from lg_harness.memory.constraints import extract_constraints
from lg_harness.memory.messages import last_human_text  # noqa: F401 - re-exported: its home is light
from lg_harness.obs.tracing import span_event


def split_turn(messages: Sequence[BaseMessage]) -> tuple[list[BaseMessage], list[BaseMessage]]:
    """(earlier turns, this turn) split at the latest human message."""
    for i in range(len(messages) - 1, -1, -1):
        if isinstance(messages[i], HumanMessage):
            return list(messages[:i]), list(messages[i:])
    return [], list(messages)


def policy_for(design: Design, strategies: StrategyRegistry = WORKING_STRATEGIES) -> ContextPolicy:
    """The design's context policy; its ``context`` variant is looked up in ``strategies`` (a runtime's)."""
    return ContextPolicy(budget_tokens=design.knobs.context_budget_tokens, working=design.variant("context"),
                         clear_used_results=design.knobs.clear_used_results, strategies=strategies)


def customer_line(state: HarnessState) -> str:
    """Who the thread's customer is, for the model ("" when the state has no user)."""
    user = state.get("user") or {}
    return f"Customer: id {user.get('id')}, role {user.get('role')}." if user else ""


def memory_layer(state: HarnessState) -> MemoryLayer:
    retrieved = [f"From earlier sessions: {item}" for item in state.get("recalled") or []]
    if known := state.get("known_facts"):
        retrieved.insert(0, "Known about the customer: " + json.dumps(known, ensure_ascii=False, sort_keys=True))
    return MemoryLayer(fact_card=dict(state.get("fact_card") or {}), constraints=list(state.get("constraints") or []),
                       summary=state.get("summary") or "", retrieved=retrieved)


def _anchor(state: HarnessState, history: Sequence[BaseMessage]) -> Anchors:
    anchor_id = state.get("task_anchor_id")
    original = next((m for m in history if m.id == anchor_id), None) if anchor_id else None
    return Anchors(original_request=original)


def request_now(state: HarnessState) -> str | None:
    """Of a message's several requests, the first whose goal no call has reached yet (the last when all were);
    None for a single request."""
    asked = state.get("request_intents") or []
    if len(asked) <= 1:
        return None
    worked = {r.get("name") for r in state.get("tool_log") or [] if r.get("status") == "ok"}
    groups = state.get("goal_groups") or [[] for _ in asked]
    return next((i for i, g in zip(asked, groups, strict=False) if not set(g) & worked), asked[-1])


def task_of(state: HarnessState, domain: Domain) -> str:
    """The task layer's text for the state ("" when there is none)."""
    # A domain without intents has one open task: "Intent: open." tells the model nothing (a small model
    # read it out: "You asked me to open.")
    return describe_task(request_now(state) or state.get("intent"), state.get("slots"), state.get("missing_slots") or [],
                         is_task=state.get("intent_kind", "task") != "conversational" and bool(domain.intents))


def assemble_state(state: HarnessState, design: Design, domain: Domain,
                   strategies: StrategyRegistry = WORKING_STRATEGIES) -> Assembly:
    history, immediate = split_turn(state.get("messages") or [])
    return assemble(system=domain.system_prompt, session=customer_line(state), task=task_of(state, domain),
                    memory=memory_layer(state), history=history, immediate=immediate,
                    policy=policy_for(design, strategies), anchors=_anchor(state, history),
                    entity_types=domain.entity_types)


def build_context(state: HarnessState, design: Design, domain: Domain, notes: Sequence[str] = (),
                  strategies: StrategyRegistry = WORKING_STRATEGIES) -> tuple[list[BaseMessage], dict]:
    """The messages of one model call and the tokens each layer took."""
    asm = assemble_state(state, design, domain, strategies)
    return [*asm.messages, *(SystemMessage(n) for n in notes)], dict(asm.account)


def must_call_messages(state: HarnessState, design: Design, domain: Domain,
                       strategies: StrategyRegistry = WORKING_STRATEGIES) -> list[BaseMessage]:
    """The prompt of a step that must call, with the design's ``stable_prefix``: the instructions (the prompt
    lists every tool right after them, ``nodes.prompt_layout``), who the customer is, their message (with
    the calls and results of this message so far, for a step after a lookup that may call again), and the task
    with the pinned constraints. Every such call of every thread starts with the same tokens, and of a thread's
    with the same customer line; the values the call needs are in the task, so the conversation is not read
    (nor assembled)."""
    history, turn = split_turn(state.get("messages") or [])
    # several requests resumed after a yes ("cancel ORD-10191 and put WELCOME10 on my account" - "yes"): the
    # message that asked them, before the yes
    anchor_id = state.get("task_anchor_id") if request_now(state) else None
    started = [m for m in history if anchor_id and m.id == anchor_id and isinstance(m, HumanMessage)]
    # this message, and the calls and results of this message's earlier steps (a step after a lookup that may
    # call again reads its own call's prompt, then what the call found)
    asked = [*started, *[m for m in turn if isinstance(m, HumanMessage)][-1:],
             *(m for m in turn if isinstance(m, ToolMessage) or (isinstance(m, AIMessage) and m.tool_calls))]
    # Of the memory, the pinned constraints only: without the conversation the fact card's other ids misled the
    # call ("first_order_id: ORD-10134" looked up when ORD-10198 was asked, lab/reports/bench-local run 6).
    memory = MemoryLayer(constraints=list(state.get("constraints") or []))
    stable = policy_for(design, strategies).model_copy(update={"stable_prefix": True})
    return assemble(system=domain.system_prompt, session=customer_line(state), task=task_of(state, domain),
                    memory=memory, history=[], immediate=asked, policy=stable,
                    entity_types=domain.entity_types).messages


def answer_messages(state: HarnessState, design: Design, domain: Domain,
                    strategies: StrategyRegistry = WORKING_STRATEGIES) -> list[BaseMessage]:
    """The prompt of an answer step from this message's results, with the design's ``stable_prefix``: the
    instructions, who the customer is, the task and the pinned constraints, then this message with its calls and
    results. Not the earlier conversation nor the fact card: the task names what the answer is about (its values
    were resolved from the conversation before the call), and what the step reads is then only what is new since
    the thread's last call, after a prefix every answer of the thread shares. Of the fact card, the customer's
    language, and the message that started the task when an earlier one did: a confirmation ("yes") says neither
    (the 0.5B model answered "Cancelled." to a Chinese customer's confirmed cancel)."""
    language = (state.get("fact_card") or {}).get("language")
    memory = MemoryLayer(constraints=list(state.get("constraints") or []),
                         fact_card={"language": language} if language else {})
    history, turn = split_turn(state.get("messages") or [])
    # the message that started the task when it came before this one ("取消订单 ORD-10197" before the "yes" that
    # confirms it): what the answer is about, in the customer's words
    anchor_id = state.get("task_anchor_id")
    started = [m for m in history if anchor_id and m.id == anchor_id and isinstance(m, HumanMessage)]
    return assemble(system=domain.system_prompt, session=customer_line(state), task=task_of(state, domain),
                    memory=memory, history=[], immediate=[*started, *turn],
                    policy=policy_for(design, strategies), entity_types=domain.entity_types).messages


def turn_upkeep(state: HarnessState, design: Design, text: str, domain: Domain,
                strategies: StrategyRegistry = WORKING_STRATEGIES) -> StateUpdate:
    """At the start of a message: pin new constraints, compress old turns, and bound the working set.

    A strategy that does not trim (``full``, the heavyweight baseline) keeps everything. Others compress at 70% of the
    working budget and then cap the stored messages, so a checkpoint stays flat however long the thread.
    """
    update: StateUpdate = {}
    if constraints := extract_constraints(text):
        update["constraints"] = constraints
    if not strategies[design.variant("context")].trims:  # e.g. ``full``: the heavyweight baseline keeps all
        return update
    messages = list(state.get("messages") or [])
    history, _ = split_turn(messages)
    cleared = used_results_cleared(history, design, strategies)
    if cleared:
        messages = [cleared.get(m.id, m) if m.id is not None else m for m in messages]
        history, _ = split_turn(messages)
    asm = assemble_state({**state, "messages": messages,
                          "constraints": [*(state.get("constraints") or []), *constraints]}, design, domain,
                         strategies)
    anchor_id = state.get("task_anchor_id")
    comp = maybe_compress(history, assembly=asm, policy=policy_for(design, strategies),
                          lang=(state.get("fact_card") or {}).get("language", "en"),
                          fact_card=dict(state.get("fact_card") or {}), previous_summary=state.get("summary") or "",
                          first_turn=first_turn_of(history, (state.get("turn") or 0) + 1),
                          keep_ids={anchor_id} if anchor_id else set(), entity_types=domain.entity_types,
                          changing=domain.changing_tools())
    removed: set[str] = set()
    if comp is not None:
        span_event("context.compress", removed=len(comp.removed_ids), upto_turn=comp.upto_turn)
        upd = state_update(comp)
        update.update(summary=upd["summary"], fact_card=upd["fact_card"])
        update["constraints"] = [*update.get("constraints", []), *upd["constraints"]]
        removed = set(comp.removed_ids)
    kept = [m for m in messages if m.id not in removed]
    # every stored message has an id (the add_messages reducer gives one to each)
    removed |= {m.id for m in overflow(kept, design.knobs.window_messages, keep_id=anchor_id) if m.id is not None}
    # Cleared results replace their originals by id (the add_messages reducer); removal wins over both.
    update_messages = [*(m for i, m in cleared.items() if i not in removed), *(RemoveMessage(id=i) for i in removed)]
    if update_messages:
        update["messages"] = update_messages
    return update


def used_results_cleared(history: Sequence[BaseMessage], design: Design,
                         strategies: StrategyRegistry = WORKING_STRATEGIES) -> dict[str, ToolMessage]:
    """Tool results of ``history`` the design clears from the stored working set, by message id: the
    same rule the assembly applies, so a checkpoint holds what the model is shown, not kilobytes of JSON."""
    if not policy_for(design, strategies).clears_results():
        return {}
    after = clear_used_results(history, results_to_keep(history))
    # what clearing replaces is a ToolMessage, by a ToolMessage
    return {new.id: new for old, new in zip(history, after, strict=True)
            if new is not old and new.id and isinstance(new, ToolMessage)}


def overflow(messages: Sequence[BaseMessage], keep: int, keep_id: str | None = None) -> list[BaseMessage]:
    """Messages beyond the newest ``keep`` (moved back so no tool result loses its call), except the anchor."""
    if len(messages) <= keep:
        return []
    start = len(messages) - keep
    while start > 0 and isinstance(messages[start], ToolMessage):
        start -= 1
    return [m for m in messages[:start] if m.id != keep_id]


def turn_messages(messages: Sequence[BaseMessage]) -> list[BaseMessage]:
    """Messages since the latest human message (this turn's AI and tool messages)."""
    return split_turn(messages)[1][1:]


def last_ai(messages: Sequence[BaseMessage]) -> AIMessage | None:
    for m in reversed(messages):
        if isinstance(m, AIMessage):
            return m
    return None
