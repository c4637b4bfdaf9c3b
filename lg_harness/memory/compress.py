"""Compress older turns: structure first (facts, decisions, constraints), then a short summary of the rest.

Structure goes where it cannot be lost: identifiers into the fact card, negations and hard requirements
into the pinned constraints (which the memory layer always shows). Only what is left is summarised, by
default extractively (one short line per salient user request and tool outcome, deterministic and
offline), or by a given ``summarize`` callable (a real model). The summary is labelled with the last
compressed turn and merges with the previous summary, so one rolling summary covers the conversation.

Turns are numbered by human messages: turn ``first_turn`` starts at the first HumanMessage of ``history``
(messages before it belong to the turn before). Compression removes whole tool groups only.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    RemoveMessage,
    SystemMessage,
    ToolCall,
    ToolMessage,
)

from lg_harness.llm.embeddings import count_tokens
from lg_harness.memory.assembly import (
    Assembly,
    ContextPolicy,
    Count,
    Group,
    fit_summary,
    message_text,
    message_tokens,
    tool_groups,
)
from lg_harness.memory.clearing import result_digest, shorten
from lg_harness.memory.constraints import extract_constraints
from lg_harness.tools.entities import EntityType, card_updates
from lg_harness.tools.text import is_low_information

SUMMARY_LABELS = {"en": "[Summary up to turn {n}]", "zh": "[历史摘要 截至第 {n} 轮]"}
LABEL_LINE = re.compile(r"^\[(?:Summary up to turn \d+|历史摘要 截至第 \d+ 轮)\]$")
# Bounded so the summary (and the checkpoint holding it) does not grow with the conversation.
MAX_SUMMARY_LINES = 24
LINE_CHARS = 100
RESULT_CHARS = 100
MAX_DECISIONS = 10
# The fact card keeps the latest identifiers of each kind, so it too stays bounded.
MAX_IDS = 10
# Tools named like this only read; every other successful call is a decision (cancel, return, claim, ...).

_LINES = {
    "en": {"user": "- T{n} user: {text}", "tool": "- T{n} tool {call} {status}: {result}", "ok": "ok",
           "failed": "failed"},
    "zh": {"user": "- 第{n}轮 用户：{text}", "tool": "- 第{n}轮 工具 {call} {status}：{result}", "ok": "成功",
           "failed": "失败"},
}


@dataclass
class Compression:
    """The result of compressing turns up to ``upto_turn``.

    Attributes:
        summary: The new rolling summary (label line first), merged with the previous one.
        fact_updates: Fact-card updates for the state's ``merge_dict`` reducer (``None`` deletes a key).
        constraints: Constraints found in the compressed user messages (the state reducer adds new ones).
        removed_ids: Ids of the compressed messages, whole tool groups only.
        upto_turn: The last compressed turn.
    """

    summary: str
    fact_updates: dict[str, Any] = field(default_factory=dict)
    constraints: list[str] = field(default_factory=list)
    removed_ids: list[str] = field(default_factory=list)
    upto_turn: int = 0


def should_compress(working_tokens: int, working_budget: int, compress_at: float = 0.7) -> bool:
    """Whether the working history has reached ``compress_at`` of its budget.

    Args:
        working_tokens: Tokens of the history the working layer draws on (``Assembly.history_tokens``).
        working_budget: The working layer's budget (``Assembly.budgets["working"]``).
        compress_at: The trigger, as a fraction of the budget.
    """
    if working_budget <= 0:
        return working_tokens > 0
    return working_tokens >= compress_at * working_budget


def turn_numbers(history: Sequence[BaseMessage], first_turn: int = 1) -> list[int]:
    """The turn of each message: each HumanMessage opens the next turn, starting at ``first_turn``."""
    turn, out = first_turn - 1, []
    for message in history:
        if isinstance(message, HumanMessage):
            turn += 1
        out.append(turn)
    return out


def first_turn_of(history: Sequence[BaseMessage], current_turn: int) -> int:
    """The turn number of ``history``'s first HumanMessage when this turn (not in history) is ``current_turn``."""
    return current_turn - sum(isinstance(m, HumanMessage) for m in history)


def _call_text(call: Mapping[str, Any]) -> str:
    args = ", ".join(f"{k}={v}" for k, v in sorted((call.get("args") or {}).items()))
    return f"{call['name']}({args})"


def _result_text(message: ToolMessage, args: dict[str, Any] | None = None) -> str:
    return result_digest(message_text(message), args, RESULT_CHARS)


def _calls_with_results(group: Group) -> list[tuple[ToolCall, ToolMessage]]:
    results = {m.tool_call_id: m for m in group.messages[1:] if isinstance(m, ToolMessage)}
    first = group.first
    calls = first.tool_calls if isinstance(first, AIMessage) else []
    return [(call, results[call_id]) for call in calls if (call_id := call.get("id")) in results]


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    return list(value) if isinstance(value, list | tuple) else [value]


# --------------------------------------------------------------------------------------- structure


def _decisions_and_open_steps(groups: list[Group], changing: Collection[str]) -> tuple[list[str], list[str]]:
    decisions, failed = [], {}
    for group in groups:
        for call, result in _calls_with_results(group):
            if result.status == "error":
                failed[call["name"]] = f"{_call_text(call)} failed: {_result_text(result, call.get('args'))}"
            else:
                failed.pop(call["name"], None)
                if call["name"] in changing:  # a change that went through is a decision; lookups are not
                    decisions.append(_call_text(call))
    open_steps = list(failed.values())
    last = groups[-1].first if groups else None
    # The assistant's last word was a question nobody has answered inside the compressed span.
    if isinstance(last, AIMessage) and not last.tool_calls and message_text(last).rstrip().endswith(("?", "？")):
        open_steps.append("asked: " + shorten(message_text(last), LINE_CHARS))
    return decisions, open_steps


def extract_structure(groups: list[Group], fact_card: dict[str, Any], entity_types: Sequence[EntityType] = (),
                      changing: Collection[str] = ()) -> tuple[dict[str, Any], list[str]]:
    """Fact-card updates and constraints from the groups about to be compressed.

    Args:
        groups: The compressed groups, in order.
        fact_card: The current fact card (lists are extended, not replaced).
        entity_types: The domain's entity types, whose mentions go on the card.
        changing: The tools that change state (``ToolSpec.changes_state``): their successful calls are
            the decisions the card keeps.

    Returns:
        The fact updates (only keys whose value changes) and the constraints, in order.
    """
    human_texts = [message_text(g.first) for g in groups if g.is_human]
    updates = card_updates(entity_types, human_texts, fact_card, MAX_IDS)
    decisions, open_steps = _decisions_and_open_steps(groups, changing)
    if decisions:
        updates["decisions"] = list(dict.fromkeys([*_as_list(fact_card.get("decisions")), *decisions]))[-MAX_DECISIONS:]
    if open_steps:
        updates["open_steps"] = open_steps
    elif fact_card.get("open_steps"):
        updates["open_steps"] = None  # the reducer deletes the key: nothing is open any more
    constraints = list(dict.fromkeys(c for text in human_texts for c in extract_constraints(text)))
    return {k: v for k, v in updates.items() if fact_card.get(k) != v}, constraints


# ----------------------------------------------------------------------------------------- summary


def summary_lines(groups: list[Group], turns: list[int], lang: str) -> list[str]:
    """One short line per salient user request and tool outcome (acknowledgements and AI chat skipped)."""
    form = _LINES.get(lang, _LINES["en"])
    lines = []
    for group in groups:
        n = turns[group.start]
        if group.is_human:
            text = message_text(group.first)
            if not is_low_information(text):
                lines.append(form["user"].format(n=n, text=shorten(text, LINE_CHARS)))
            continue
        for call, result in _calls_with_results(group):
            status = form["failed"] if result.status == "error" else form["ok"]
            lines.append(form["tool"].format(n=n, call=_call_text(call), status=status,
                                             result=_result_text(result, call.get("args"))))
    return lines


def _summary_body(summary: str) -> list[str]:
    return [line for line in summary.splitlines() if line.strip() and not LABEL_LINE.match(line.strip())]


def merge_summary_lines(previous: list[str], new: list[str], max_lines: int = MAX_SUMMARY_LINES,
                        max_tokens: int | None = None, count: Count = count_tokens) -> list[str]:
    """Previous then new lines without duplicates; over ``max_lines`` or ``max_tokens``, the first line and
    the newest ones (the rule the memory layer shows a summary by). ``max_tokens`` is the memory layer's
    whole budget: an upper bound on what it could show, since facts and constraints share that budget."""
    lines = list(dict.fromkeys([*previous, *new]))
    if len(lines) > max_lines:
        lines = [lines[0], *lines[len(lines) - max_lines + 1:]]
    if max_tokens is not None and lines and sum(count(line) for line in lines) > max_tokens:
        lines = fit_summary(lines, max_tokens, count) or lines[:1]
    return lines


def summary_label(upto_turn: int, lang: str) -> str:
    return SUMMARY_LABELS.get(lang, SUMMARY_LABELS["en"]).format(n=upto_turn)


# ---------------------------------------------------------------------------------------- compress


def compressible_groups(history: Sequence[BaseMessage], upto_turn: int, first_turn: int = 1,
                        keep_ids: Collection[str] = ()) -> list[Group]:
    """The groups of turns up to ``upto_turn``, except groups holding a message in ``keep_ids``."""
    turns = turn_numbers(history, first_turn)
    return [g for g in tool_groups(history)
            if turns[g.start] <= upto_turn and not any(m.id is not None and m.id in keep_ids for m in g.messages)]


def compress(history: Sequence[BaseMessage], *, upto_turn: int, lang: str, fact_card: dict[str, Any],
             summarize: Callable[[list[BaseMessage]], str] | None = None, previous_summary: str = "",
             first_turn: int = 1, keep_ids: Collection[str] = (),
             max_lines: int = MAX_SUMMARY_LINES, max_tokens: int | None = None,
             count: Count = count_tokens, entity_types: Sequence[EntityType] = (),
             changing: Collection[str] = ()) -> Compression:
    """Compress the turns of ``history`` up to ``upto_turn``: structure out first, then a summary.

    Args:
        history: The working history, oldest first (messages need ids to be removable).
        upto_turn: The last turn to compress.
        lang: "en" or "zh", for the summary's label and line words.
        fact_card: The current fact card.
        summarize: A real summariser (e.g. an LLM call) over the compressed messages; it receives the
            previous summary first, as a SystemMessage, to merge. Default: the extractive summary.
        previous_summary: The rolling summary so far.
        first_turn: The turn number of ``history``'s first HumanMessage (see ``first_turn_of``).
        keep_ids: Messages never compressed (e.g. the current task's original request); their whole
            group stays.
        max_lines: Longest extractive summary, in lines after the label.
        max_tokens: Most tokens of the extractive summary's lines (None: no limit); pass the memory
            layer's budget, since lines beyond it are never shown.
        count: Token counter for ``max_tokens``.
        entity_types: The domain's entity types, whose mentions move to the fact card.
        changing: The tools that change state; their successful calls become the card's decisions.

    Returns:
        The compression; when nothing is compressible, the previous summary and no changes.
    """
    groups = compressible_groups(history, upto_turn, first_turn, keep_ids)
    if not groups:
        return Compression(previous_summary, upto_turn=upto_turn)
    fact_updates, constraints = extract_structure([g for g in groups if g.valid], fact_card, entity_types,
                                                 changing)
    previous = _summary_body(previous_summary)
    if summarize is not None:
        context: list[BaseMessage] = [SystemMessage("\n".join(previous))] if previous else []
        body = [summarize([*context, *(m for g in groups if g.valid for m in g.messages)]).strip()]
    else:
        turns = turn_numbers(history, first_turn)
        body = merge_summary_lines(previous, summary_lines([g for g in groups if g.valid], turns, lang), max_lines,
                                   max_tokens, count)
    summary = "\n".join([summary_label(upto_turn, lang), *(line for line in body if line)])
    removed = [m.id for g in groups for m in g.messages if m.id is not None]
    return Compression(summary, fact_updates, constraints, removed, upto_turn)


def plan_upto_turn(history: Sequence[BaseMessage], *, keep_tokens: int, first_turn: int = 1,
                   count: Count = count_tokens) -> int | None:
    """The last turn to compress so the newer turns fit in ``keep_tokens``; the newest turn always stays.

    Returns:
        The turn number for ``compress(upto_turn=...)``, or None when there is nothing to compress.
    """
    per_turn: dict[int, int] = {}
    for message, turn in zip(history, turn_numbers(history, first_turn), strict=True):
        per_turn[turn] = per_turn.get(turn, 0) + message_tokens(message, count)
    if len(per_turn) < 2:
        return None
    ordered = sorted(per_turn)
    kept, oldest_kept = per_turn[ordered[-1]], ordered[-1]
    for turn in reversed(ordered[:-1]):
        if kept + per_turn[turn] > keep_tokens:
            break
        kept += per_turn[turn]
        oldest_kept = turn
    return oldest_kept - 1 if oldest_kept > ordered[0] else None


def maybe_compress(history: Sequence[BaseMessage], *, assembly: Assembly, policy: ContextPolicy, lang: str,
                   fact_card: dict[str, Any], previous_summary: str = "", first_turn: int = 1,
                   keep_ids: Collection[str] = (), keep_ratio: float = 0.5,
                   summarize: Callable[[list[BaseMessage]], str] | None = None,
                   count: Count = count_tokens, entity_types: Sequence[EntityType] = (),
                   changing: Collection[str] = ()) -> Compression | None:
    """Compress when ``assembly``'s history reached ``policy.compress_at`` of the working budget.

    The oldest turns are compressed until the rest fits in ``keep_ratio`` of the working budget, so the
    next trigger is some turns away (compressing at 70% down to 50% avoids compressing every turn).

    Returns:
        The compression, or None when the trigger is not reached or nothing can be compressed.
    """
    working_budget = assembly.budgets.get("working", 0)
    if not should_compress(assembly.history_tokens, working_budget, policy.compress_at):
        return None
    upto = plan_upto_turn(history, keep_tokens=int(keep_ratio * working_budget), first_turn=first_turn, count=count)
    if upto is None:
        return None
    comp = compress(history, upto_turn=upto, lang=lang, fact_card=fact_card, summarize=summarize,
                    previous_summary=previous_summary, first_turn=first_turn, keep_ids=keep_ids,
                    max_tokens=policy.budgets()["memory"], count=count, entity_types=entity_types,
                    changing=changing)
    return comp if comp.removed_ids else None


def remaining(history: Sequence[BaseMessage], compression: Compression) -> list[BaseMessage]:
    """``history`` without the compressed messages (what the state holds once the update is applied)."""
    removed = set(compression.removed_ids)
    return [m for m in history if m.id is None or m.id not in removed]


def state_update(compression: Compression) -> dict[str, Any]:
    """The compression as a partial update of the graph state (its reducers merge and remove)."""
    return {
        "messages": [RemoveMessage(id=i) for i in compression.removed_ids],
        "summary": compression.summary,
        "fact_card": dict(compression.fact_updates),
        "constraints": list(compression.constraints),
    }
