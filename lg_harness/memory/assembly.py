"""Deliberate context assembly: five layers with token budgets for every model call.

One call's messages are built from five layers, each with a share of the token budget:

- system: the fixed instructions (first, so the prompt prefix stays stable and cacheable);
- task: what the current task is and what it has collected (changes once per task);
- memory: pinned constraints (always, never cut), the fact card, the rolling summary, long-term items;
- working: earlier turns' messages, chosen by a named strategy (``WORKING_STRATEGIES``);
- immediate: this turn's messages (the user's message, this turn's tool calls and results), never cut.

The first three become one ``SystemMessage`` of labelled sections; working and immediate messages follow.
Layers that cannot be cut (system, task, constraints, immediate) may outgrow their share; the overflow is
taken from the working budget so the total stays within budget whenever the uncuttable parts allow it.

Everything here is a pure function over langchain_core messages. Token counts come from ``count``
(by default the bundled tokenizer's ``count_tokens``; inject a cheaper one for speed or tests).
Layer accounts are counted part by part, so ``account["total"]`` is exactly the sum of the layers.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from pydantic import BaseModel, ConfigDict, Field, model_validator

from lg_harness.llm.embeddings import count_tokens
from lg_harness.memory.clearing import clear_used_results, message_text
from lg_harness.memory.constraints import is_correction
from lg_harness.tools.entities import EntityType, find_mentions, user_facing
from lg_harness.tools.text import is_low_information

Count = Callable[[str], int]

LAYERS = ("system", "task", "memory", "working", "immediate")
# Role and framing tokens a chat template adds around each message (OpenAI documents 3-4).
MESSAGE_OVERHEAD = 4
# An assistant reply this short with no identifiers in it ("You're welcome!") carries nothing for the task.
EMPTY_REPLY_TOKENS = 16

TASK_TITLE = "## Current task"
SECTION_TITLES = {
    "constraints": "## Constraints (always respect)",
    "facts": "## Known facts",
    "summary": "## Earlier in this conversation",
    "retrieved": "## From earlier conversations",
}
MEMORY_SECTIONS = tuple(SECTION_TITLES)


# --------------------------------------------------------------------------------------------- policy


class LayerShares(BaseModel):
    """Each layer's share of the context budget (fractions that sum to at most 1)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    system: float = Field(default=0.10, ge=0, le=1)
    task: float = Field(default=0.10, ge=0, le=1)
    memory: float = Field(default=0.20, ge=0, le=1)
    working: float = Field(default=0.40, ge=0, le=1)
    immediate: float = Field(default=0.20, ge=0, le=1)

    @model_validator(mode="after")
    def _at_most_whole(self) -> LayerShares:
        if sum(getattr(self, name) for name in LAYERS) > 1.0 + 1e-9:
            raise ValueError("layer shares sum to more than 1")
        return self

    def tokens(self, budget: int) -> dict[str, int]:
        """Each layer's budget in tokens for a total ``budget``."""
        return {name: int(budget * getattr(self, name)) for name in LAYERS}


class ContextPolicy(BaseModel):
    """How one model call's context is assembled: the budget, its split, and the working-layer strategy.

    Attributes:
        budget_tokens: Total input tokens aimed for on one model call.
        shares: Each layer's share of ``budget_tokens``.
        working: Name of the working-layer strategy in ``WORKING_STRATEGIES``.
        window_turns: User turns kept by the ``time_window`` strategy.
        compress_at: Fraction of the working budget at which the history should be compressed.
        drop_low_information: Leave acknowledgements ("ok", "谢谢") out of the working layer.
        clear_used_results: Show earlier turns' tool results as digests (``memory.clearing``), except the
            latest successful one while this turn has none of its own.
        stable_prefix: The layout of a step that must call with the design's knob of that name
            (``memory.context.must_call_messages``): the system layer alone first (the same for every thread),
            who the customer is next (the same for the thread), the conversation, and the task and memory last
            in a message of their own (``TASK_BLOCK_ID``), so what changes comes after what stays.
    """

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    budget_tokens: int = Field(default=3000, ge=1)
    shares: LayerShares = Field(default_factory=LayerShares)
    working: str = "hybrid"
    window_turns: int = Field(default=6, ge=1)
    compress_at: float = Field(default=0.7, gt=0, le=1)
    drop_low_information: bool = True
    clear_used_results: bool = False
    stable_prefix: bool = False
    # Where ``working`` is looked up: the runtime's strategies (graphs.runtime), else the built-in ones.
    strategies: StrategyRegistry = Field(default_factory=lambda: WORKING_STRATEGIES, exclude=True, repr=False)

    @model_validator(mode="after")
    def _known_strategy(self) -> ContextPolicy:
        if self.working not in self.strategies:
            raise ValueError(f"unknown working strategy '{self.working}'; known: {', '.join(self.strategies)}")
        return self

    @property
    def strategy(self) -> WorkingStrategy:
        return self.strategies[self.working]

    def budgets(self) -> dict[str, int]:
        return self.shares.tokens(self.budget_tokens)

    def clears_results(self) -> bool:
        """Whether used tool results are cleared: asked for, and a strategy that trims (never the naive buffer)."""
        return self.clear_used_results and self.strategy.trims


@dataclass
class MemoryLayer:
    """What the memory layer may show; which parts it does show depends on the working strategy.

    Attributes:
        fact_card: What the user stated (order ids, products, contact, preferences).
        constraints: Pinned negations and hard requirements; always shown, never cut.
        summary: The rolling summary of compressed turns (its first line is its label).
        retrieved: Long-term items retrieved for this call, best first.
    """

    fact_card: dict[str, Any] = field(default_factory=dict)
    constraints: list[str] = field(default_factory=list)
    summary: str = ""
    retrieved: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Anchors:
    """Where the current task started, for the anchored strategies.

    Attributes:
        original_request: The HumanMessage that started the current task. Kept in the working layer
            even when it is no longer in ``history`` (compressed away); ignored when it is this turn's.
        task_start_index: Index in ``history`` where the current task starts; the first human message
            from there is the original request. Used only without ``original_request``; default 0.
    """

    original_request: BaseMessage | None = None
    task_start_index: int | None = None


@dataclass
class Assembly:
    """One model call's messages and how the budget was spent.

    Attributes:
        messages: The SystemMessage (system, task and memory layers), then working, then immediate.
        account: Tokens per layer and ``total``.
        dropped: History messages left out of the working layer (trimmed, low-information or malformed),
            plus malformed immediate messages (a tool call without its results cannot be sent).
        over_budget: Whether ``total`` exceeds the policy's budget.
        budgets: Each layer's budget in tokens; ``working`` is after the uncuttable layers' overflow.
        history_tokens: Tokens of all the history the working layer could have used (the compression
            trigger: compare with ``budgets["working"]`` via ``memory.compress.should_compress``).
        cut_memory: Memory items (facts, summary lines, retrieved items) cut to fit the memory budget.
    """

    messages: list[BaseMessage]
    account: dict[str, int]
    dropped: int
    over_budget: bool
    budgets: dict[str, int] = field(default_factory=dict)
    history_tokens: int = 0
    cut_memory: int = 0


# ------------------------------------------------------------------------------------ messages, groups


def message_tokens(message: BaseMessage, count: Count = count_tokens) -> int:
    """Tokens one message costs: its text, its tool calls (name and arguments as JSON), and framing."""
    tokens = MESSAGE_OVERHEAD + count(message_text(message))
    if isinstance(message, AIMessage):
        for call in message.tool_calls:
            payload = {"name": call["name"], "args": call.get("args") or {}}
            tokens += count(json.dumps(payload, ensure_ascii=False, sort_keys=True))
    return tokens


@dataclass(frozen=True)
class Group:
    """Messages that must stay together: an AI tool call with its results, or one other message.

    Attributes:
        start: Index of the first message in the sequence given to ``tool_groups`` (-1 when synthetic).
        messages: The messages, in order.
        valid: False for a ToolMessage without its AIMessage, or a tool call missing any of its results;
            such a group can never be sent (providers reject it) and is always left out.
    """

    start: int
    messages: tuple[BaseMessage, ...]
    valid: bool = True

    @property
    def first(self) -> BaseMessage:
        return self.messages[0]

    @property
    def is_tool_call(self) -> bool:
        return isinstance(self.first, AIMessage) and bool(self.first.tool_calls)

    @property
    def is_human(self) -> bool:
        return isinstance(self.first, HumanMessage)

    @property
    def succeeded(self) -> bool:
        """A complete tool call whose results all succeeded."""
        results = self.messages[1:]
        return self.valid and self.is_tool_call and all(getattr(m, "status", "success") != "error" for m in results)


def tool_groups(messages: Sequence[BaseMessage]) -> list[Group]:
    """Split messages into units that trimming keeps or drops whole.

    An AIMessage with tool calls forms one group with the ToolMessages right after it that answer its
    calls; the group is valid only when every call is answered. A ToolMessage that answers no preceding
    call is an invalid group of its own; every other message is a valid group of its own.

    Args:
        messages: A message sequence, in order.

    Returns:
        The groups, in order; concatenated they give back ``messages``.
    """
    groups: list[Group] = []
    i = 0
    while i < len(messages):
        message = messages[i]
        if isinstance(message, AIMessage) and message.tool_calls:
            pending = {call.get("id") for call in message.tool_calls}
            j = i + 1
            while j < len(messages) and isinstance(answer := messages[j], ToolMessage) and answer.tool_call_id in pending:
                pending.discard(answer.tool_call_id)
                j += 1
            groups.append(Group(i, tuple(messages[i:j]), valid=not pending))
            i = j
        else:
            groups.append(Group(i, (message,), valid=not isinstance(message, ToolMessage)))
            i += 1
    return groups


def results_to_keep(history: Sequence[BaseMessage], immediate: Sequence[BaseMessage] = ()) -> set[str]:
    """Call ids whose results stay whole when used results are cleared: the successful results of the latest
    tool call that had any (of parallel calls, the ones that worked), unless ``immediate`` already has a
    successful result (which the immediate layer shows whole)."""
    def succeeded(messages: Sequence[BaseMessage]) -> list[set[str]]:
        return [{m.tool_call_id for m in g.messages[1:] if isinstance(m, ToolMessage) and m.status != "error"}
                for g in tool_groups(messages) if g.valid and g.is_tool_call]

    if any(succeeded(immediate)):
        return set()
    return next((ids for ids in reversed(succeeded(history)) if ids), set())


def is_well_formed(messages: Sequence[BaseMessage]) -> bool:
    """Whether every tool call has all its results right after it and no result is orphaned."""
    return all(g.valid for g in tool_groups(messages))


# ------------------------------------------------------------------------------------ working layer


@dataclass(frozen=True)
class WorkingContext:
    """What a working-layer strategy may look at besides the candidate groups and the budget.

    Attributes:
        policy: The context policy of this call.
        original: Index, among the candidates, of the current task's original request (or None).
    """

    policy: ContextPolicy
    original: int | None = None


Selector = Callable[[list[Group], list[int], int, WorkingContext], list[int]]


@dataclass(frozen=True)
class WorkingStrategy:
    """A named working-layer strategy.

    Attributes:
        select: ``(candidates, tokens, budget, context) -> indices`` of the candidate groups kept.
        memory: Memory sections shown with this strategy (constraints are always shown).
        trims: False for the naive baseline: no budgets, no filtering, nothing cut.
    """

    select: Selector
    memory: tuple[str, ...] = ("constraints",)
    trims: bool = True


def _newest_fitting(indices: Sequence[int], tokens: list[int], budget: int, used: int = 0,
                    skip: bool = False) -> list[int]:
    """The newest indices whose tokens fit; ``skip``: pass over one that does not fit and keep filling,
    else stop there (a contiguous window)."""
    kept = []
    for i in reversed(indices):
        if used + tokens[i] > budget:
            if skip:
                continue
            break
        kept.append(i)
        used += tokens[i]
    return sorted(kept)


def select_all(groups: list[Group], tokens: list[int], budget: int, ctx: WorkingContext) -> list[int]:
    """Every group (the naive full-history baseline)."""
    return list(range(len(groups)))


def select_none(groups: list[Group], tokens: list[int], budget: int, ctx: WorkingContext) -> list[int]:
    """No history messages (the memory layer carries the conversation)."""
    return []


def select_time_window(groups: list[Group], tokens: list[int], budget: int, ctx: WorkingContext) -> list[int]:
    """The last ``window_turns`` user turns, trimmed from the oldest to fit the budget."""
    humans = [i for i, g in enumerate(groups) if g.is_human]
    turns = ctx.policy.window_turns
    start = humans[-turns] if len(humans) >= turns else 0
    return _newest_fitting(range(start, len(groups)), tokens, budget)


def anchor_indices(groups: list[Group], ctx: WorkingContext) -> list[int]:
    """Groups the anchored window keeps first, by priority: the task's original request, the user's
    latest correction, the latest successful tool call with its results."""
    correction = next((i for i in reversed(range(len(groups)))
                       if groups[i].is_human and is_correction(message_text(groups[i].first))), None)
    success = next((i for i in reversed(range(len(groups))) if groups[i].succeeded), None)
    return [i for i in (ctx.original, correction, success) if i is not None]


def select_anchored(groups: list[Group], tokens: list[int], budget: int, ctx: WorkingContext) -> list[int]:
    """The anchors (see ``anchor_indices``) that fit, then the newest groups until the budget is used."""
    chosen: set[int] = set()
    used = 0
    for i in anchor_indices(groups, ctx):
        if i not in chosen and used + tokens[i] <= budget:
            chosen.add(i)
            used += tokens[i]
    rest = [i for i in range(len(groups)) if i not in chosen]
    # A bulky tool result that does not fit is passed over: the question and the answer around it still
    # tell the story, and the answer usually states what the result said.
    chosen.update(_newest_fitting(rest, tokens, budget, used, skip=True))
    return sorted(chosen)


class StrategyRegistry(Mapping[str, WorkingStrategy]):
    """Working-layer strategies by name, as designs name them (``variants: {context: NAME}``).

    ``WORKING_STRATEGIES`` holds the ones this library ships; each ``Runtime`` (``graphs.runtime``) starts from
    a copy of it, and strategies registered on a runtime are that runtime's alone.
    """

    def __init__(self, entries: Mapping[str, WorkingStrategy] | None = None) -> None:
        self._named = dict(entries or {})

    def register(self, name: str, strategy: WorkingStrategy) -> WorkingStrategy:
        """Make ``name`` selectable as a design's ``context`` variant on this registry.

        Args:
            name: The variant name designs use (``variants: {context: NAME}``).
            strategy: Its selector, the memory sections it shows, and whether it trims at all.
        """
        self._named[name] = strategy
        return strategy

    def copy(self) -> StrategyRegistry:
        return StrategyRegistry(self._named)

    def __getitem__(self, name: str) -> WorkingStrategy:
        return self._named[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._named)

    def __len__(self) -> int:
        return len(self._named)


WORKING_STRATEGIES = StrategyRegistry({
    # The naive buffer: the raw history is all the memory there is (no card, no summary, nothing pinned).
    "full": WorkingStrategy(select_all, (), trims=False),
    "time_window": WorkingStrategy(select_time_window),
    # Recent turns plus what compression keeps: the rolling summary and the fact card.
    "window_summary": WorkingStrategy(select_time_window, ("constraints", "facts", "summary")),
    "anchored": WorkingStrategy(select_anchored),
    # Anchored window with the rolling summary and long-term recall, but no fact card.
    "anchored_summary": WorkingStrategy(select_anchored, ("constraints", "summary", "retrieved")),
    "summary_only": WorkingStrategy(select_none, ("constraints", "summary")),
    "structured_only": WorkingStrategy(select_none, ("constraints", "facts")),
    "hybrid": WorkingStrategy(select_anchored, MEMORY_SECTIONS),
})


def _carries_nothing(group: Group, count: Count, entity_types: Sequence[EntityType]) -> bool:
    if not isinstance(group.first, AIMessage) or group.is_tool_call:
        return False
    text = message_text(group.first)
    if find_mentions(user_facing(entity_types), text):
        return False
    return is_low_information(text) or count(text) <= EMPTY_REPLY_TOKENS


def informative(groups: Sequence[Group], count: Count = count_tokens,
                entity_types: Sequence[EntityType] = ()) -> list[Group]:
    """Groups without low-information user turns ("ok", "谢谢") and the empty AI reply right after one."""
    kept: list[Group] = []
    after_ack = False
    for g in groups:
        if g.is_human and is_low_information(message_text(g.first)):
            after_ack = True
            continue
        if after_ack and _carries_nothing(g, count, entity_types):
            after_ack = False
            continue
        after_ack = False
        kept.append(g)
    return kept


def _same_message(a: BaseMessage, b: BaseMessage) -> bool:
    if a is b:
        return True
    if a.id is not None and b.id is not None:
        return a.id == b.id
    return type(a) is type(b) and a.content == b.content


def _with_original(candidates: list[Group], history: Sequence[BaseMessage], immediate: Sequence[BaseMessage],
                   anchors: Anchors) -> tuple[list[Group], int | None]:
    """The candidates (with the original request prepended when only the anchors still hold it) and its index."""
    target = anchors.original_request
    if target is None:
        start = anchors.task_start_index or 0
        found = (i for i, g in enumerate(candidates) if g.is_human and g.start >= start)
        return candidates, next(found, None)
    for i, g in enumerate(candidates):
        if _same_message(g.first, target):
            return candidates, i
    if any(_same_message(m, target) for m in [*history, *immediate]):
        return candidates, None  # this turn's message, or filtered out as low-information
    return [Group(-1, (target,)), *candidates], 0


# ------------------------------------------------------------------------------------- memory layer


def _fact_value(value: Any) -> str:
    if isinstance(value, list | tuple):
        return ", ".join(str(v) for v in value)
    if isinstance(value, dict):
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    return str(value)


def memory_entries(memory: MemoryLayer, sections: Sequence[str]) -> list[tuple[str, list[str]]]:
    """The memory layer's lines per section, constraints first, before any cut."""
    entries = {
        "constraints": [f"- {c}" for c in dict.fromkeys(memory.constraints) if c],
        "facts": [f"- {k}: {_fact_value(v)}" for k, v in sorted(memory.fact_card.items())
                  if v not in (None, "", [], {})],
        "summary": [line for line in memory.summary.splitlines() if line.strip()],
        "retrieved": [f"- {item}" for item in memory.retrieved if item],
    }
    shown = ["constraints", *(s for s in sections if s != "constraints")]
    return [(name, entries[name]) for name in MEMORY_SECTIONS if name in shown]


def _fit_items(items: list[str], room: int, count: Count) -> list[str]:
    """Items in order, each kept when it still fits (items are independent of each other)."""
    kept = []
    for item in items:
        if count(item) <= room:
            kept.append(item)
            room -= count(item)
    return kept


def fit_summary(lines: list[str], room: int, count: Count) -> list[str]:
    """The summary's label, its first line (how the conversation began), then its newest lines that fit."""
    label = lines[:1] if lines[0].startswith("[") else []
    body = lines[len(label):]
    room -= sum(count(x) for x in label)
    if not body or count(body[0]) > room:
        return []
    room -= count(body[0])
    tail = _newest_fitting(range(1, len(body)), [count(x) for x in body], room)
    return [*label, body[0], *(body[i] for i in tail)]


def fill_memory(entries: list[tuple[str, list[str]]], budget: int | None,
                count: Count = count_tokens) -> tuple[list[str], int, int]:
    """Lay out the memory sections within ``budget`` (None: no limit); constraints are never cut.

    Returns:
        The lines, their tokens, and how many items were cut.
    """
    lines: list[str] = []
    used = cut = 0
    for name, items in entries:
        if not items:
            continue
        title = SECTION_TITLES[name]
        room = None if budget is None else budget - used - count(title)
        if name == "constraints" or room is None:
            take = items
        elif room <= 0:
            take = []
        elif name == "summary":
            take = fit_summary(items, room, count)
        else:
            take = _fit_items(items, room, count)
        cut += len(items) - len(take)
        if take:
            lines += [title, *take]
            used += count(title) + sum(count(x) for x in take)
    return lines, used, cut


# ------------------------------------------------------------------------------------------ assemble


def _memoised(count: Count) -> Count:
    # Each call counts the same texts several times (fits, accounts), and history repeats every turn.
    cache: dict[str, int] = {}

    def counted(text: str) -> int:
        if text not in cache:
            cache[text] = count(text)
        return cache[text]

    return counted


def _select_working(candidates: list[Group], budget: int, ctx: WorkingContext, strategy: WorkingStrategy,
                    count: Count) -> list[Group]:
    tokens = [sum(message_tokens(m, count) for m in g.messages) for g in candidates]
    chosen = strategy.select(candidates, tokens, budget, ctx)
    return [candidates[i] for i in sorted(set(chosen))]


# The id of the message that carries the task and the memory after the conversation (``stable_prefix``).
TASK_BLOCK_ID = "harness-task-block"


def _system_messages(system: str, session: str, task: str, memory_lines: list[str], working: list[BaseMessage],
                     immediate: list[BaseMessage], stable: bool) -> list[BaseMessage]:
    """The layers in order. ``stable``: the domain's instructions alone in the first message, the same for every
    thread (a template that renders tools into the system turn puts them right after it, so instructions and
    tools form one prefix every thread shares), who the customer is in a second one (the same all thread
    long), the conversation, and the task and the memory (which change from turn to turn) last, so what
    changes is only ever what a call reads new."""
    sections = [f"{TASK_TITLE}\n{task}" if task else "", "\n".join(memory_lines)]
    if stable:
        changing = "\n\n".join(s for s in sections if s)
        return [*([SystemMessage(system)] if system else []), *([SystemMessage(session)] if session else []),
                *working, *immediate, *([SystemMessage(changing, id=TASK_BLOCK_ID)] if changing else [])]
    content = "\n\n".join(s for s in ["\n".join(p for p in (system, session) if p), *sections] if s)
    return [*([SystemMessage(content)] if content else []), *working, *immediate]


def _uncuttable_account(system: str, task: str, immediate: Sequence[BaseMessage], count: Count) -> dict[str, int]:
    has_system = bool(system or task)
    return {
        "system": (MESSAGE_OVERHEAD if has_system else 0) + count(system),
        "task": count(f"{TASK_TITLE}\n{task}") if task else 0,
        "immediate": sum(message_tokens(m, count) for m in immediate),
    }


def assemble(*, system: str, task: str, memory: MemoryLayer, session: str = "", history: Sequence[BaseMessage],
             immediate: Sequence[BaseMessage], policy: ContextPolicy, anchors: Anchors | None = None,
             count: Count = count_tokens, entity_types: Sequence[EntityType] = ()) -> Assembly:
    """Build one model call's messages from the five layers within the policy's budget.

    Args:
        system: The system layer: fixed instructions.
        session: Who the thread's customer is: part of the system layer, but the same for one thread only
            (with ``stable_prefix`` it rides with the task, so every thread shares the instructions' prefix).
        task: The task layer: the current task and what it has collected ("" for none).
        memory: The memory layer's material; the strategy decides which parts are shown.
        history: Earlier turns' messages (Human/AI/Tool), oldest first.
        immediate: This turn's messages: the current HumanMessage, then this turn's tool calls and results.
        policy: Budget, shares and the working-layer strategy.
        anchors: Where the current task started (anchored strategies); default: the first human message.
        count: Token counter for one text.
        entity_types: The domain's entity types: a reply that names one is never dropped as empty.

    Returns:
        The messages (one SystemMessage, then working, then immediate) with their token account.
    """
    count = _memoised(count)
    strategy = policy.strategy
    budgets = policy.budgets()
    immediate_groups = [g for g in tool_groups(immediate) if g.valid]
    immediate_msgs = [m for g in immediate_groups for m in g.messages]
    account = _uncuttable_account("\n".join(p for p in (system, session) if p), task, immediate_msgs, count)

    entries = memory_entries(memory, strategy.memory)
    memory_lines, account["memory"], cut = fill_memory(entries, budgets["memory"] if strategy.trims else None, count)

    if policy.clears_results():
        history = clear_used_results(history, results_to_keep(history, immediate_msgs))
    candidates = [g for g in tool_groups(history) if g.valid]
    if strategy.trims and policy.drop_low_information:
        candidates = informative(candidates, count, entity_types)
    candidates, original = _with_original(candidates, history, immediate_msgs, anchors or Anchors())
    overflow = sum(max(0, account[name] - budgets[name]) for name in ("system", "task", "memory", "immediate"))
    budgets["working"] = max(0, budgets["working"] - overflow)
    room = budgets["working"] if strategy.trims else sum(message_tokens(m, count) for m in history)
    working = _select_working(candidates, room, WorkingContext(policy, original), strategy, count)
    working_msgs = [m for g in working for m in g.messages]
    account["working"] = sum(message_tokens(m, count) for m in working_msgs)

    if policy.stable_prefix and (task or memory_lines):  # they ride in a message of their own
        account["task"] += MESSAGE_OVERHEAD
    if policy.stable_prefix and session:
        account["system"] += MESSAGE_OVERHEAD
    account = {name: account[name] for name in LAYERS}
    account["total"] = sum(account.values())
    kept_from_history = sum(len(g.messages) for g in working if g.start >= 0)
    return Assembly(
        messages=_system_messages(system, session, task, memory_lines, working_msgs, immediate_msgs,
                                  policy.stable_prefix),
        account=account,
        dropped=len(history) - kept_from_history + (len(immediate) - len(immediate_msgs)),
        over_budget=account["total"] > policy.budget_tokens,
        budgets=budgets,
        history_tokens=sum(message_tokens(m, count) for g in candidates if g.start >= 0 for m in g.messages),
        cut_memory=cut,
    )


def describe_task(intent: str | None, slots: dict[str, Any] | None = None,
                  missing: Sequence[str] = (), *, is_task: bool = True) -> str:
    """A task layer text from the state's intent and slots ("" when there is no task)."""
    if not intent or not is_task:
        return ""
    known = ", ".join(f"{k}={v}" for k, v in sorted((slots or {}).items()))
    text = f"Intent: {intent}." + (f" Known: {known}." if known else "")
    return text + (f" Still needed: {', '.join(missing)}." if missing else "")
