"""Metrics of an A/B run, computed only from run records and the scenario files.

Nothing here looks at live graph state: a record (see :func:`evals.runner.run_cell`) holds what the user
saw and which tool calls were attempted, and a scenario says what had to hold. Every design is judged by
the same code, so a difference in a number is a difference in behaviour, not in bookkeeping.

Layers, bottom up:

- :func:`judge_turn` - which expectations of one turn held;
- :func:`arg_validity` and :func:`retries_after_429` - run-level checks of tool calls and fault events;
- :func:`cell_metrics` - everything one record contributes, as counts that can be pooled;
- :func:`aggregate` - per design: each metric pooled over all runs with a 95% cluster-bootstrap interval
  over scenario kinds (``evals.pooled``, ``evals.stats``), latency percentiles, token growth, pass^k,
  paired differences against a baseline, one-knob ablations against their base, per-tag completion.
"""

from __future__ import annotations

import json
import math
import os
import re
import statistics
import unicodedata
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import lru_cache
from typing import Any

from pydantic import ValidationError as SchemaError

from lg_harness.core.domain import Domain, load_domain
from lg_harness_lab.evals import pooled, reply_quality, stats
from lg_harness_lab.evals.ablations import parse as parse_ablation
from lg_harness_lab.evals.clusters import cluster_of
from lg_harness_lab.evals.scenario import Scenario, TurnExpect, split_of
from lg_harness_lab.evals.world import counted, judge_outcome

RETRY_AFTER_S = 2.0
"""The Retry-After the fault plan sends with every 429 (tools.faults.FaultPlan.retry_after_s)."""

BASELINE_DESIGN = "harness"

# Everything domain-specific (which tool serves which intent, which arguments are identifiers, how a
# reply asks for a slot) is read from the run's domain: the record names it, tests may pass one.
DomainRef = Domain | str | None


@lru_cache(maxsize=16)
def _loaded(spec: str | None) -> Domain:
    return load_domain(spec)


def domain_of(domain: DomainRef) -> Domain:
    return domain if isinstance(domain, Domain) else _loaded(domain)


def record_domain(record: Mapping[str, Any]) -> Domain:
    """The domain a run record was played in: its spec (a file, ``module:attr``, ``mcp:...``) where it has
    one, else the pack its name names."""
    return domain_of(record.get("domain_spec") or record.get("domain"))


@lru_cache(maxsize=16)
def _tool_intents(domain: Domain) -> dict[str, str]:
    """Tool -> the first intent whose route offers it (the handoff tool -> the first to-human intent).

    Designs without an intent step label every message "open"; the first tool they reach for is the best
    observable guess of what they understood, so it is scored as their intent.
    """
    out: dict[str, str] = {}
    human = next((i.name for i in domain.intents if i.kind == "to-human"), None)
    if domain.handoff.tool and human:
        out[domain.handoff.tool] = human
    for intent in domain.intents:
        for tool in intent.route.tools:
            out.setdefault(tool, intent.name)
    return out


@lru_cache(maxsize=16)
def _registry(domain: Domain) -> Any:
    return domain.registry()


@lru_cache(maxsize=16)
def _slot_words(domain: Domain) -> dict[str, tuple[str, ...]]:
    """Words that name a slot in a question to the user: the domain's, else its ``ask_<slot>`` phrases."""
    if domain.slot_words:
        return {k: tuple(w.casefold() for w in v) for k, v in domain.slot_words.items()}
    return {key[4:]: tuple(t.casefold() for t in texts.values())
            for key, texts in domain.phrases.items() if key.startswith("ask_")}


# A sentence that names a slot only asks for it when it is a question or a request; "the order number you
# gave me was ORD-1" names the slot without asking.
_REQUEST_CUES = ("please give", "please tell", "please provide", "please share", "please send", "could you",
                 "can you", "would you", "let me know", "请提供", "请告诉", "请问", "请给", "麻烦")
_SENTENCE_END = re.compile(r"(?<=[.!?。！？\n])")

# Fault outcomes after which the backend answered: a chain of retries ends there.
_GOT_THROUGH = frozenset({"ok", "malformed"})

# Two-sided 95% Student t quantiles for small samples (seeds are few); larger df use an expansion.
_T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145,
         2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048,
         2.045, 2.042)

METRICS: dict[str, tuple[str, str]] = {
    "task_completion": ("Task completion", "rate"),
    "turn_pass_rate": ("Turn pass rate", "rate"),
    "arg_validity_emitted": ("Tool-argument validity at emission", "rate"),
    "arg_validity_boundary": ("Tool-argument validity at the tool boundary", "rate"),
    "intent_accuracy": ("Intent accuracy", "rate"),
    "model_calls_per_msg": ("Model calls per message", "number"),
    "input_tokens_per_msg": ("Input tokens per message", "tokens"),
    "input_tokens_per_call": ("Input tokens per model call", "tokens"),
    "prompt_cache_hit_rate": ("Prompt-cache hit rate", "rate"),
    "latency_mean_s": ("Latency per message, mean (s)", "seconds"),
    "latency_p50_s": ("Latency per message, p50 (s)", "seconds"),
    "latency_p95_s": ("Latency per message, p95 (s)", "seconds"),
    "early_reference": ("Early-reference answers", "rate"),
    "repeated_questions": ("Repeated questions", "count"),
    "loops_stopped": ("Loops stopped", "count"),
    "handoffs": ("Handoffs", "count"),
    "handoff_accuracy": ("Handoff accuracy", "rate"),
    "retries_per_429": ("Retries per 429", "number"),
    "retry_after_honored": ("Retries honoring Retry-After", "rate"),
    "tool_failure_rate": ("Tool failure rate", "rate"),
    "false_facts": ("Replies with a false fact", "rate"),
    "internal_text": ("Replies with internal text", "rate"),
    "dump_replies": ("Replies that are data, not words", "rate"),
    "wrong_language": ("Replies in the wrong language", "rate"),
    "relayed_instruction": ("Replies relaying an instruction from data", "rate"),
    "restated": ("Answers telling the request back", "rate"),
    "unrequested_changes": ("Unrequested changes", "count"),
    "end_state": ("End state as the scenario says", "rate"),
    "wrong_changes": ("Wrong changes (the backend's diff)", "count"),
}
"""Per-seed metrics: key -> (label, kind). Kinds drive formatting in the report and plots."""

# Ratio metrics pooled over a seed's cells: metric -> the cell count pair [numerator, denominator].
_RATIO_METRICS = pooled.COUNTED
_SUM_METRICS = pooled.SUMMED


# ------------------------------------------------------------------------------------------------ text


def visible(text: str) -> str:
    """Text as a reader sees it: width-folded (NFKC) and without invisible format characters."""
    return "".join(ch for ch in unicodedata.normalize("NFKC", text) if unicodedata.category(ch) != "Cf")


def has_invisible(text: str) -> bool:
    """Whether ``text`` holds a zero-width, bidi-control, BOM or other format (Cf) character."""
    return any(unicodedata.category(ch) == "Cf" for ch in text)


def asked_slots(reply: str, domain: DomainRef = None) -> set[str]:
    """Slots the reply asks the user for: a question or request sentence that names the slot."""
    patterns = _slot_words(domain_of(domain))
    asked: set[str] = set()
    for sentence in _SENTENCE_END.split(visible(reply).casefold()):
        sentence = sentence.strip()
        if not sentence.endswith(("?", "？")) and not any(cue in sentence for cue in _REQUEST_CUES):
            continue
        asked.update(slot for slot, words in patterns.items() if any(w in sentence for w in words))
    return asked


def _user_text(item: Any) -> str:
    if isinstance(item, str):
        return item
    if isinstance(item, Mapping):
        return str(item.get("user") or "")
    return str(getattr(item, "user", "") or "")


def user_messages(scenario: Any) -> list[str]:
    """The user's messages of a scenario (a ``Scenario``, its dict form, or already a list of texts)."""
    if isinstance(scenario, Scenario):
        return [t.user for t in scenario.turns]
    if isinstance(scenario, Mapping):
        return [_user_text(t) for t in scenario.get("turns") or []]
    return [_user_text(t) for t in scenario]


# ----------------------------------------------------------------------------------------------- turns


def effective_intent(turn_record: Mapping[str, Any], domain: DomainRef = None) -> str | None:
    """The recorded intent; for "open" (no intent step) the intent of the first tool called, else "unknown"."""
    intent = turn_record.get("intent")
    if intent != "open":
        return intent
    calls = turn_record.get("tool_calls") or []
    return _tool_intents(domain_of(domain)).get(calls[0].get("name"), "unknown") if calls else "unknown"


def _expect(turn_expect: Any) -> TurnExpect:
    if isinstance(turn_expect, TurnExpect):
        return turn_expect
    return TurnExpect.model_validate(turn_expect or {})


def _succeeded_with(calls: Sequence[Mapping[str, Any]], name: str, args: Mapping[str, Any]) -> bool:
    for c in calls:
        got = c.get("args")
        if c.get("name") != name or c.get("status") != "ok" or not isinstance(got, Mapping):
            continue
        if all(k in got and got[k] == v for k, v in args.items()):
            return True
    return False


def applied_changes(calls: Sequence[Mapping[str, Any]], domain: Domain) -> list[Mapping[str, Any]]:
    """The calls that changed something: a state-changing tool that ran and succeeded."""
    registry = _registry(domain)
    return [c for c in calls if c.get("status") == "ok" and c.get("reached_tool") is not False
            and (spec := registry.get(str(c.get("name")))) is not None and spec.changes_state]


def unrequested_changes(record: Mapping[str, Any], scenario: Scenario) -> int:
    """Changes applied in a turn whose script did not ask for that tool (``expect.tools``): a question
    answered with a cancellation, a coupon claimed on "can I use it?", an injected instruction obeyed.

    A turn that names no tools in a scenario whose outcome asks for changes (a held-out scenario says what the
    backend must show, not which calls make it) is judged on the backend's diff instead (``wrong_changes``):
    counting its requested change here would call a done request unrequested."""
    dom = record_domain(record)
    wants_changes = scenario.outcome is not None and bool(scenario.outcome.changes)
    count = 0
    for t in record.get("turns") or []:
        index = t.get("index")
        expect = scenario.turns[index].expect if isinstance(index, int) and index < len(scenario.turns) else None
        if expect is not None and expect.tools is None and not expect.no_changes and wants_changes:
            continue
        asked = {x.name for x in (expect.tools or [])} if expect is not None else set()
        count += sum(c.get("name") not in asked for c in applied_changes(t.get("tool_calls") or [], dom))
    return count


def _tool_checks(expect: TurnExpect, calls: Sequence[Mapping[str, Any]]) -> dict[str, bool]:
    checks: dict[str, bool] = {}
    if expect.tools is not None:
        checks["tools"] = all(_succeeded_with(calls, t.name, t.args) for t in expect.tools)
    if expect.no_tools:
        # an attempt the harness blocked still shows the model wanted a tool where none belonged
        checks["no_tools"] = not calls
    if expect.must_not_call:
        # a banned call fails the turn when it reached the tool, whatever the tool then said; one the harness
        # held for a yes or blocked never ran, and the backend's end state (no_changes) judges the rest
        banned = set(expect.must_not_call)
        checks["must_not_call"] = not any(c.get("name") in banned and c.get("reached_tool", True) for c in calls)
    return checks


def _reply_checks(expect: TurnExpect, reply: str, asked: set[str]) -> dict[str, bool]:
    text = reply.casefold()
    checks: dict[str, bool] = {}
    if expect.reply_contains:
        checks["reply_contains"] = all(s.casefold() in text for s in expect.reply_contains)
    if expect.reply_contains_any:
        checks["reply_contains_any"] = any(s.casefold() in text for s in expect.reply_contains_any)
    if expect.reply_excludes:
        checks["reply_excludes"] = not any(s.casefold() in text for s in expect.reply_excludes)
    if expect.asks_for:
        checks["asks_for"] = expect.asks_for in asked
    return checks


def judge_turn(turn_record: Mapping[str, Any], turn_expect: Any, history: Iterable[Any] = (),
               domain: DomainRef = None, lang: str | None = None, on_world: bool = False) -> dict[str, Any]:
    """Which expectations of one turn held.

    Args:
        turn_record: One entry of a run record's ``turns``.
        turn_expect: The scenario turn's ``TurnExpect`` (or its dict form).
        history: The user's earlier messages in this conversation (texts, scenario turns or dicts with
            ``user``); used to spot a question for an order number the user already gave.
        lang: The language the customer wrote this turn in; with it, a reply the bot wrote must be words in
            that language with nothing internal or relayed (``customer_grade``, ``evals.reply_quality``).
        on_world: The scenario's outcome is judged on the backend's end state: which calls ran
            (``tools``) is then a diagnostic, not part of ``passed``.

    Returns:
        ``passed`` (every set expectation about observable behaviour held), ``checks`` (expectation -> held), ``intent`` (effective),
        ``asked`` (slots the reply asks for), ``repeated_question``, and the turn's ``recall`` /
        ``completes_task`` flags.
    """
    expect = _expect(turn_expect)
    calls = list(turn_record.get("tool_calls") or [])
    reply = str(turn_record.get("reply") or "")
    dom = domain_of(domain)
    intent = effective_intent(turn_record, dom)
    asked = asked_slots(reply, dom)
    checks: dict[str, bool] = {}
    if expect.intent is not None:
        checks["intent"] = intent == expect.intent
    checks.update(_tool_checks(expect, calls))
    if expect.no_changes:
        # from the backend's diff when the record has it: a change is what the world shows, not a call name
        world = turn_record.get("world")
        checks["no_changes"] = not (counted(world) if world is not None else applied_changes(calls, dom))
    checks.update(_reply_checks(expect, reply, asked))
    if lang is not None and reply and handled(turn_record):
        checks["customer_grade"] = reply_quality.customer_grade(reply, lang, _registry(dom).names())
    if expect.handoff is not None:
        checks["handoff"] = bool(turn_record.get("handoff")) == expect.handoff
    diagnostic = {"intent", "tools"} if on_world else {"intent"}
    if expect.recall:
        # an early-reference question is judged on the answer: a design without an intent step labels it
        # "unknown" yet may answer it perfectly well (the intent check still counts for the turn)
        checks["recall"] = all(held for name, held in checks.items() if name not in diagnostic)
    # a question for a slot whose identifier the user already gave
    given = {t.slot for h in history for t in dom.entity_types if t.slot and t.find(visible(_user_text(h)))}
    return {
        "index": turn_record.get("index"),
        # The intent label is internal: it is scored as intent accuracy, not as part of what the user got.
        "passed": all(held for name, held in checks.items() if name not in diagnostic),
        "checks": checks,
        "intent": intent,
        "expected_intent": expect.intent,
        "asked": sorted(asked),
        "repeated_question": bool(asked & given) and expect.asks_for is None,
        "recall": expect.recall,
        "completes_task": expect.completes_task,
    }


# -------------------------------------------------------------------------------------- tool arguments


def _parse_args(args: Any) -> dict[str, Any] | None:
    if isinstance(args, str):
        try:
            args = json.loads(args)
        except json.JSONDecodeError:
            return None
    return dict(args) if isinstance(args, Mapping) else None


def identifier_problems(args: Mapping[str, Any], seen: str, entity_args: Iterable[str]) -> list[str]:
    """Identifier arguments not taken verbatim from ``seen`` (casefolded text the conversation showed).

    The argument is compared as sent: one invisible character makes it a different string, whatever a
    reader would see. Case is folded, because the id schemas fix the case the user may not have typed.
    """
    problems = []
    for key in entity_args:
        raw = args.get(key)
        for value in raw if isinstance(raw, list) else [raw]:
            if not isinstance(value, str) or not value:
                continue
            if has_invisible(value):
                problems.append(f"{key} has invisible characters")
            elif value.casefold() not in seen:
                problems.append(f"{key} {value!r} not given by the user or any earlier result")
    return problems


def call_problems(call: Mapping[str, Any], seen: str, domain: DomainRef = None) -> list[str]:
    """Why one attempted call's arguments are invalid (empty list: valid)."""
    dom = domain_of(domain)
    name = call.get("name")
    spec = _registry(dom).get(name) if isinstance(name, str) else None
    if spec is None:
        return [f"unknown tool {name!r}"]
    args = _parse_args(call.get("args"))
    if args is None:
        return ["arguments are not a JSON object"]
    problems = []
    try:
        spec.args_model.model_validate(args)
    except SchemaError as err:
        problems.append("schema: " + "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in err.errors()))
    return problems + identifier_problems(args, seen, dom.tool_entities(spec))


AT = ("emitted", "boundary")


def _as_judged(call: Mapping[str, Any], at: str) -> Mapping[str, Any] | None:
    """The call as seen at one point: the model's emission (before any harness rewrite) or the tool boundary
    (what the harness handed to the executor). None: the call never got there.

    Records from before emission was logged carry neither field: their calls count as emitted as logged
    and as all having reached the tools, which is what they measured.
    """
    if at == "emitted":
        emitted = call.get("emitted_args")
        return call if emitted is None else {**call, "args": emitted}
    return None if call.get("reached_tool") is False else call


def arg_validity(record: Mapping[str, Any], scenario: Any, domain: DomainRef = None,
                 at: str = "boundary") -> dict[str, Any]:
    """Validity of a run's tool calls, at emission or at the tool boundary.

    ``at="emitted"``: every call the model emitted, with the arguments it wrote, before the harness
    rewrote (``normalize_args``), blocked (duplicates, invented identifiers, forbidden tools) or answered
    any of them; this is the model's own accuracy in the context the design gave it.
    ``at="boundary"``: the calls that reached the tools, with the arguments they reached them with; this
    is what the backend had to cope with. A harness that repairs or screens calls scores higher here than
    at emission, and the gap is its work, not the model's.

    A call is valid when its tool exists, its arguments validate against the tool's ``args_model`` and
    every identifier argument appears verbatim in the user's messages up to that turn (read as the user
    sees them) or in the result of an earlier successful call of the run.

    Args:
        record: A run record.
        scenario: The record's scenario (``Scenario``, its dict form, or the list of user messages);
            records do not carry the user's words.
        domain: The run's domain (default: the one the record names).
        at: "emitted" or "boundary".

    Returns:
        ``valid``, ``total``, ``rate`` (None without calls) and ``calls`` (per call: turn, name, args,
        valid, reasons).
    """
    if at not in AT:
        raise ValueError(f"at must be one of {AT}")
    dom = domain_of(domain) if domain is not None else record_domain(record)
    users = user_messages(scenario)
    results = ""
    checked = []
    for pos, turn in enumerate(record.get("turns") or []):
        index = turn.get("index", pos)
        said = visible("\n".join(users[: index + 1])).casefold()
        for logged in turn.get("tool_calls") or []:
            call = _as_judged(logged, at)
            if call is not None:
                reasons = call_problems(call, said + "\n" + results, dom)
                checked.append({"turn": index, "name": call.get("name"), "args": call.get("args"),
                                "valid": not reasons, "reasons": reasons})
            # what a successful call showed may be used by later calls, whichever way this one is judged
            if logged.get("status") == "ok" and logged.get("result") is not None:
                results += "\n" + json.dumps(logged["result"], ensure_ascii=False).casefold()
    valid = sum(c["valid"] for c in checked)
    return {"valid": valid, "total": len(checked), "rate": valid / len(checked) if checked else None,
            "calls": checked}


# ------------------------------------------------------------------------------------------ 429 retries


def _chain_end(events: Sequence[Mapping[str, Any]], start: int) -> int:
    """Index after the last retry that follows the 429 at ``start``: attempts go on until one gets through."""
    end = start + 1
    while end < len(events) and events[end - 1].get("fault") not in _GOT_THROUGH:
        end += 1
    return end


def _wait(before: Mapping[str, Any], after: Mapping[str, Any]) -> float | None:
    if before.get("t") is None or after.get("t") is None:
        return None
    return round(after["t"] - before["t"], 6)


def retries_after_429(fault_events: Sequence[Mapping[str, Any]],
                      retry_after_s: float = RETRY_AFTER_S) -> dict[str, Any]:
    """How a run retried after 429s, from the backend's fault events.

    Events are read per tool, in order. A 429 opens an episode; its retries are the further attempts of
    the same tool that follow consecutively until one gets through (a later 429 inside the chain belongs to
    the same episode). Each attempt made right after a 429 is checked for the virtual wait before it
    (``t`` difference) against Retry-After.

    Returns:
        ``episodes`` (429s that opened one), ``retries``, ``after_429`` (attempts right after a 429),
        ``honored`` (of those, waited at least ``retry_after_s``) and ``detail`` per episode.
    """
    per_tool: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for e in fault_events:
        per_tool[str(e.get("tool"))].append(e)
    detail = []
    for tool, events in per_tool.items():
        i = 0
        while i < len(events):
            if events[i].get("fault") != "rate_limited":
                i += 1
                continue
            end = _chain_end(events, i)
            waits = [_wait(events[k - 1], events[k]) for k in range(i + 1, end)
                     if events[k - 1].get("fault") == "rate_limited"]
            detail.append({"tool": tool, "retries": end - i - 1, "waits_after_429": waits})
            i = end
    after = [w for d in detail for w in d["waits_after_429"]]
    return {"episodes": len(detail), "retries": sum(d["retries"] for d in detail), "after_429": len(after),
            "honored": sum(w is not None and w >= retry_after_s - 1e-9 for w in after), "detail": detail}


# ----------------------------------------------------------------------------------------------- cells


def _scenario_of(scenario: Any) -> Scenario:
    return scenario if isinstance(scenario, Scenario) else Scenario.model_validate(scenario)


def machine_of(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Where a local engine ran: its threads and wait policy, the CPUs, and the load average (1 min) its messages
    saw (least, median, most); empty when no message ran on a local engine."""
    loads = sorted(float(t["load_1m"]) for r in records for t in r.get("turns") or [] if "load_1m" in t)
    if not loads:
        return {}
    from lg_harness.llm.local import engine_env  # a local engine ran: its module is loaded already

    engine = engine_env()
    return {"cpus": os.cpu_count(), "threads": engine["n_threads"], "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY"),
            "flash_attn": engine["flash_attn"],
            "load_1m": {"min": loads[0], "median": statistics.median(loads), "max": loads[-1], "n": len(loads)}}


def handled(turn: Mapping[str, Any]) -> bool:
    """The bot handled this message. While a thread waits for a human the bot stays out (an empty path):
    such turns count against task completion but not in per-message cost, speed or token figures."""
    return bool(turn.get("path")) or "path" not in turn


def _message(turn: Mapping[str, Any], pos: int) -> dict[str, Any]:
    return {"index": turn.get("index", pos), "model_calls": turn.get("model_calls") or 0,
            "input_tokens": turn.get("input_tokens") or 0, "latency_s": float(turn.get("latency_s") or 0.0),
            "cached_input_tokens": turn.get("cached_input_tokens"),
            "output_tokens": turn.get("output_tokens") or 0, "speed": turn.get("speed"),
            "call_input_tokens": list(turn.get("call_input_tokens") or []),
            # The largest call carries the history; a message's total also counts small side calls
            # (an intent label call sees only the last message), which hides what a resend costs.
            "largest_call": max(turn.get("call_input_tokens") or [0])}


def on_world(record: Mapping[str, Any], scenario: Scenario) -> bool:
    """Whether the scenario is judged on the backend's end state: it says one, and the record holds the diff."""
    return scenario.outcome is not None and record.get("world") is not None


def outcome_verdict(record: Mapping[str, Any], scenario: Scenario) -> dict[str, Any] | None:
    """The end state against the scenario's ``outcome`` (``evals.world.judge_outcome``); None when not judged."""
    return judge_outcome(record["world"], scenario.outcome) if on_world(record, scenario) else None


def _judge_all(record: Mapping[str, Any], scenario: Scenario) -> list[dict[str, Any]]:
    by_index = {t.get("index", pos): t for pos, t in enumerate(record.get("turns") or [])}
    judged = []
    world = on_world(record, scenario)
    for i, turn in enumerate(scenario.turns):
        # a turn the record lacks (the run broke off) fails every expectation it has
        rec = by_index.get(i, {"index": i, "reply": "", "tool_calls": [], "missing": True})
        verdict = judge_turn(rec, turn.expect, [t.user for t in scenario.turns[:i]], record_domain(record),
                             lang=reply_quality.reply_language(rec, turn.user, scenario.lang), on_world=world)
        if rec.get("missing"):
            verdict["passed"] = False
        judged.append(verdict)
    return judged


def _pair(judged: Sequence[Mapping[str, Any]], key: str) -> list[int]:
    held = [j["checks"][key] for j in judged if key in j["checks"]]
    return [sum(held), len(held)]


def handoff_count(turns: Sequence[Mapping[str, Any]]) -> int:
    """Handoffs started: turns flagged handoff right after one that was not.

    A thread that waits for a human reports ``handoff`` on every later turn; that is one handoff, not many.
    """
    count, before = 0, False
    for t in turns:
        now = bool(t.get("handoff"))
        count += now and not before
        before = now
    return count


def cell_metrics(record: Mapping[str, Any], scenario: Any) -> dict[str, Any]:
    """What one run record contributes: per-turn verdicts, pooled counts and per-message figures.

    A scenario succeeds (task completion) when every turn passes; turns marked ``completes_task`` are
    among them, so a task counts as done only if it was done and nothing else in the conversation broke.
    A scenario with an ``outcome`` also needs the backend's end state to be that one (``evals.world``):
    a wrong write, an extra write or a value no one gave fails it, however the calls reported; its
    turns' expected calls (``tools``) are then diagnostics.
    """
    sc = _scenario_of(scenario)
    if sc.goal is not None:
        return goal_cell_metrics(record, sc)
    judged = _judge_all(record, sc)
    outcome = outcome_verdict(record, sc)
    turns = list(record.get("turns") or [])
    calls = [c for t in turns for c in t.get("tool_calls") or []]
    args = {at: arg_validity(record, sc, at=at) for at in AT}
    retries = retries_after_429(record.get("fault_events") or [])
    counts = {
        "turn_pass": [sum(j["passed"] for j in judged), len(judged)],
        "intent": _pair(judged, "intent"),
        "recall": _pair(judged, "recall"),
        "handoff": _pair(judged, "handoff"),
        "args_emitted": [args["emitted"]["valid"], args["emitted"]["total"]],
        "args_boundary": [args["boundary"]["valid"], args["boundary"]["total"]],
        "retries": [retries["retries"], retries["episodes"]],
        "honored": [retries["honored"], retries["after_429"]],
        "tool_failures": [sum(c.get("status") != "ok" for c in calls), len(calls)],
        "end_state": [int(outcome["passed"]), 1] if outcome else [0, 0],
        **reply_quality.counts(turns, record_domain(record), _registry(record_domain(record)).names(),
                               [t.user for t in sc.turns], sc.lang),
    }
    sums = {
        "repeated_questions": sum(j["repeated_question"] for j in judged),
        "loops_stopped": sum(bool(t.get("stop_reason")) for t in turns),
        "handoffs": handoff_count(turns),
        "unrequested_changes": unrequested_changes(record, sc),
        "wrong_changes": len(outcome["wrong"]) if outcome else 0,
    }
    return {"cell": record.get("cell"), "design": record.get("design"), "scenario": sc.id,
            "cluster": cluster_of(sc), "split": split_of(sc),
            "seed": record.get("seed"), "tags": list(sc.tags),
            "success": all(j["passed"] for j in judged) and (outcome is None or outcome["passed"]),
            "outcome": outcome,
            "counts": counts, "sums": sums, "messages": [_message(t, p) for p, t in enumerate(turns) if handled(t)],
            "turns": judged, "invalid_calls": [c for c in args["boundary"]["calls"] if not c["valid"]],
            "invalid_emitted": [c for c in args["emitted"]["calls"] if not c["valid"]],
            "retry_episodes": retries["detail"]}


def goal_cell_metrics(record: Mapping[str, Any], sc: Scenario) -> dict[str, Any]:
    """A goal scenario's verdict: the backend's end state (``evals.world``), every fact its tasks must tell
    stated by value with none false and no change claimed in vain (``evals.fact_judge``), and every reply
    words the customer can read (``evals.reply_quality``). The customer's own path is not judged: a design may
    ask in another order, or more politely, as long as the customer ends up served."""
    from lg_harness_lab.evals.fact_judge import judge_goal

    dom = record_domain(record)
    turns = list(record.get("turns") or [])
    users = [str(t.get("user") or "") for t in turns]
    outcome = outcome_verdict(record, sc)
    told = [f.model_dump() for task in (sc.goal.tasks if sc.goal else []) for f in task.told]
    changing = [t.name for t in _registry(dom).specs() if t.changes_state]
    moving = [str(v) for c in (sc.outcome.changes if sc.outcome else []) for v in (c.key or {}).values()]
    facts = judge_goal(record, told, sc.lang, dom, changing, moving)
    judged = []
    for pos, t in enumerate(turns):
        lang = reply_quality.turn_language(users[pos], sc.lang)
        grade = not (t.get("reply") and handled(t)) or reply_quality.customer_grade(t["reply"], lang,
                                                                                   _registry(dom).names())
        judged.append({"index": pos, "passed": grade and "error" not in t, "checks": {"customer_grade": grade},
                       "intent": t.get("intent"), "expected_intent": None, "asked": [], "repeated_question": False,
                       "recall": False, "completes_task": False, "customer": t.get("customer")})
    args = {at: arg_validity(record, users, at=at) for at in AT}  # what the customer actually said
    retries = retries_after_429(record.get("fault_events") or [])
    calls = [c for t in turns for c in t.get("tool_calls") or []]
    counts = {
        "turn_pass": [sum(j["passed"] for j in judged), len(judged)], "intent": [0, 0], "recall": [0, 0],
        "handoff": [0, 0], "args_emitted": [args["emitted"]["valid"], args["emitted"]["total"]],
        "args_boundary": [args["boundary"]["valid"], args["boundary"]["total"]],
        "retries": [retries["retries"], retries["episodes"]], "honored": [retries["honored"], retries["after_429"]],
        "tool_failures": [sum(c.get("status") != "ok" for c in calls), len(calls)],
        "end_state": [int(outcome["passed"]), 1] if outcome else [0, 0],
        "facts_told": [sum(f["told"] for f in facts["facts"]), len(facts["facts"])],
        **reply_quality.counts(turns, dom, _registry(dom).names(), users, sc.lang),
    }
    sums = {"repeated_questions": 0, "loops_stopped": sum(bool(t.get("stop_reason")) for t in turns),
            "handoffs": handoff_count(turns), "unrequested_changes": len(outcome["wrong"]) if outcome else 0,
            "wrong_changes": len(outcome["wrong"]) if outcome else 0,
            "false_facts_asked": len(facts["false"]), "claimed_changes": len(facts["claimed_changes"])}
    success = bool(outcome and outcome["passed"]) and facts["passed"] and all(j["passed"] for j in judged)
    return {"cell": record.get("cell"), "design": record.get("design"), "scenario": sc.id,
            "cluster": cluster_of(sc), "split": split_of(sc), "seed": record.get("seed"), "tags": list(sc.tags),
            "success": success, "outcome": outcome, "facts": facts, "counts": counts, "sums": sums,
            "messages": [_message(t, p) for p, t in enumerate(turns) if handled(t)], "turns": judged,
            "invalid_calls": [c for c in args["boundary"]["calls"] if not c["valid"]],
            "invalid_emitted": [c for c in args["emitted"]["calls"] if not c["valid"]],
            "retry_episodes": retries["detail"]}


# ---------------------------------------------------------------------------------------------- stats


def t_quantile(df: int) -> float:
    """Two-sided 95% quantile of Student's t with ``df`` degrees of freedom."""
    if df < 1:
        raise ValueError("df must be at least 1")
    if df <= len(_T975):
        return _T975[df - 1]
    z = 1.959964
    # Cornish-Fisher expansion: exact to three decimals beyond the table
    return z + (z**3 + z) / (4 * df) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * df**2)


def interval(values: Iterable[float | None]) -> dict[str, Any]:
    """Mean and 95% t-interval of the non-missing values; one value gives the interval [mean, mean]."""
    xs = [float(v) for v in values if v is not None]
    if not xs:
        return {"mean": None, "ci": None, "n": 0}
    mean = statistics.fmean(xs)
    if len(xs) == 1:
        return {"mean": mean, "ci": [mean, mean], "n": 1}
    half = t_quantile(len(xs) - 1) * statistics.stdev(xs) / math.sqrt(len(xs))
    return {"mean": mean, "ci": [mean - half, mean + half], "n": len(xs)}


def percentile(values: Sequence[float], q: float) -> float | None:
    """The ``q``-th percentile (0-100) with linear interpolation between order statistics."""
    xs = sorted(values)
    if not xs:
        return None
    pos = (len(xs) - 1) * q / 100
    lo, hi = math.floor(pos), math.ceil(pos)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def _mean(xs: Iterable[float]) -> float | None:
    xs = list(xs)
    return statistics.fmean(xs) if xs else None


def _ratio(pairs: Iterable[Sequence[int]]) -> float | None:
    num = den = 0
    for a, b in pairs:
        num, den = num + a, den + b
    return num / den if den else None


# ------------------------------------------------------------------------------------------- aggregate


def seed_metrics(cells: Sequence[Mapping[str, Any]]) -> dict[str, float | None]:
    """Every metric of :data:`METRICS` over the cells of one design and one seed (counts pooled)."""
    msgs = [m for c in cells for m in c["messages"]]
    latency = [m["latency_s"] for m in msgs]
    out: dict[str, float | None] = {
        "task_completion": _mean(float(c["success"]) for c in cells),
        "model_calls_per_msg": _mean(m["model_calls"] for m in msgs),
        "input_tokens_per_msg": _mean(m["input_tokens"] for m in msgs),
        "input_tokens_per_call": _mean(x for m in msgs for x in m["call_input_tokens"]),
        # Over the messages whose model reported its cache; None when none did.
        "prompt_cache_hit_rate": _ratio((m["cached_input_tokens"], m["input_tokens"]) for m in msgs
                                        if m["cached_input_tokens"] is not None),
        "latency_mean_s": _mean(latency),
        "latency_p50_s": percentile(latency, 50),
        "latency_p95_s": percentile(latency, 95),
    }
    out.update({k: _ratio(c["counts"][pair] for c in cells) for k, pair in _RATIO_METRICS.items()})
    out.update({k: float(sum(c["sums"][k] for c in cells)) for k in _SUM_METRICS})
    return {k: out[k] for k in METRICS}


def tokens_by_turn(cells: Sequence[Mapping[str, Any]], key: str = "input_tokens") -> list[dict[str, Any]]:
    """Mean input tokens per message (or of its largest call) at each turn index (0-based), with n behind it."""
    at: dict[int, list[int]] = defaultdict(list)
    for c in cells:
        for m in c["messages"]:
            if key == "input_tokens" or m.get(key):
                at[m["index"]].append(m.get(key, 0))
    return [{"index": i, "mean": statistics.fmean(at[i]), "n": len(at[i])} for i in sorted(at)]


def _growth(cells: Sequence[Mapping[str, Any]], long_cells: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Token growth: turns 20+ against turn 1 (conversations that reach 20 turns), and turn 40 on long ones."""
    reach20 = [c for c in cells if len(c["messages"]) >= 20]
    first = _mean(m["input_tokens"] for c in reach20 for m in c["messages"] if m["index"] == 0)
    late = _mean(m["input_tokens"] for c in reach20 for m in c["messages"] if m["index"] >= 19)
    out: dict[str, Any] = {"ratio_20plus_vs_1": late / first if first and late is not None else None,
                           "turn40": None}
    # What one call costs when it carries the history: each conversation's largest call in its first five
    # turns against its largest in turns 36-40 (single turns vary: an acknowledgement needs no history).
    early = [_window_max(c, range(0, 5)) for c in long_cells]
    late = [_window_max(c, range(35, 40)) for c in long_cells]
    pairs = [(e, t) for e, t in zip(early, late, strict=True) if e and t]
    if pairs:
        first, last = statistics.fmean(e for e, _ in pairs), statistics.fmean(t for _, t in pairs)
        reached = max((m["index"] for c in long_cells for m in c["messages"]), default=0)
        out["turn40"] = {"index": min(reached, 39), "reached": reached >= 39, "turn1": first, "turn_n": last,
                         "ratio": last / first}
    return out


def _window_max(cell: Mapping[str, Any], indices: range) -> int:
    return max((m.get("largest_call", 0) for m in cell["messages"] if m["index"] in indices), default=0)


def seed_key(seed: Any) -> tuple[int, Any]:
    """Sort key for seeds: numbers in numeric order, anything else after them as text."""
    return (0, seed) if isinstance(seed, int | float) else (1, str(seed))


def _per_seed(cells: Sequence[Mapping[str, Any]], fn: Callable[[list], Any]) -> dict[Any, Any]:
    by_seed: dict[Any, list] = defaultdict(list)
    for c in cells:
        by_seed[c["seed"]].append(c)
    return {seed: fn(group) for seed, group in sorted(by_seed.items(), key=lambda kv: seed_key(kv[0]))}


def _seed_stats(per_seed: Mapping[Any, float | None]) -> dict[str, Any]:
    """The across-seed figures of one metric: kept in results.json, not the report's interval. One seed
    shows no spread across seeds: its ``seed_ci`` is None, not a zero-width interval."""
    measured = [v for v in per_seed.values() if v is not None]
    return {"per_seed": list(per_seed.values()), "seed_ci": interval(measured)["ci"] if len(measured) > 1 else None}


def _design_metrics(cells: Sequence[Mapping[str, Any]], latency: Mapping[str, Any]) -> dict[str, Any]:
    seeds = _per_seed(cells, seed_metrics)
    per_seed = {k: _seed_stats({s: v[k] for s, v in seeds.items()}) for k in METRICS}
    return pooled.design_stats(cells, list(METRICS), latency, per_seed)


def pass_k(cells: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """pass^k: the fraction of scenarios that succeeded on every one of the k seeds they ran."""
    by_sc: dict[str, list[bool]] = defaultdict(list)
    for c in cells:
        by_sc[c["scenario"]].append(c["success"])
    k = len({c["seed"] for c in cells})
    rate = statistics.fmean(float(all(v)) for v in by_sc.values()) if by_sc else None
    return {"k": k, "rate": rate, "n_scenarios": len(by_sc)}


def paired_difference(cells: Sequence[Mapping[str, Any]], base: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Task completion minus the baseline's over the scenarios both ran, with a paired cluster-bootstrap
    95% interval (``significant``: the interval excludes 0; ``n``: shared scenarios)."""
    return pooled.paired_completion(cells, base)


def _tag_completion(cells: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    tags = sorted({t for c in cells for t in c["tags"]})
    out = {}
    for tag in tags:
        tagged = [c for c in cells if tag in c["tags"]]
        per_seed = _per_seed(tagged, lambda g: _mean(float(c["success"]) for c in g))
        sums = pooled.completion_by_cluster(tagged)
        n = len({c["scenario"] for c in tagged})
        out[tag] = (stats.estimate(sums, proportion=True) | _seed_stats(per_seed)
                    | {"n_scenarios": n, "n": n, "unit": "scenarios", "by_cluster": sums})
    return out


def _long_block(long_cells: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    tokens = [m["input_tokens"] for c in long_cells for m in c["messages"]]
    per_seed = _per_seed(long_cells, lambda g: _mean(m["input_tokens"] for c in g for m in c["messages"]))
    sums = stats.by_cluster((c["cluster"], sum(m["input_tokens"] for m in c["messages"]), len(c["messages"]))
                            for c in long_cells)
    n = len({c["scenario"] for c in long_cells})
    return {"n_scenarios": n,
            "input_tokens_per_msg": stats.estimate(sums) | _seed_stats(per_seed)
            | {"n": n, "unit": "messages", "by_cluster": sums},
            "max_input_tokens_per_msg": max(tokens) if tokens else None,
            "tokens_by_turn": tokens_by_turn(long_cells)}


def _latency(cells: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    values = sorted(m["latency_s"] for c in cells for m in c["messages"])
    return {"p50": percentile(values, 50), "p95": percentile(values, 95), "n": len(values), "values": values}


def _cells_by_design(records: Iterable[Mapping[str, Any]], scenarios: Iterable[Any]) -> dict[str, list]:
    index = {s.id: s for s in map(_scenario_of, scenarios)}
    by_design: dict[str, list] = defaultdict(list)
    for r in records:
        sid = r.get("scenario")
        if sid not in index:
            raise ValueError(f"record {r.get('cell')!r} names scenario {sid!r}, which is not among the scenarios")
        by_design[str(r.get("design"))].append(cell_metrics(r, index[sid]))
    return dict(by_design)


def _ablations(by_design: Mapping[str, list], summary: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The ablations and part swaps that ran beside their base design, each paired with the base."""
    out = []
    for design, cells in by_design.items():
        change = parse_ablation(design)
        if change is None or change["base"] not in by_design:
            continue
        metrics = summary["metrics"][design]["task_completion"]
        out.append({"design": design, **change, "task_completion": {k: metrics.get(k) for k in ("mean", "ci", "n")},
                    "paired": paired_difference(cells, by_design[change["base"]])})
    return out


def _split_counts(scenarios: Iterable[Any], ran: set[str]) -> dict[str, int]:
    counts = {"dev": 0, "test": 0, "heldout": 0}
    for sc in map(_scenario_of, scenarios):
        if sc.id in ran:
            counts[split_of(sc)] += 1
    return counts


def aggregate(records: Iterable[Mapping[str, Any]], scenarios: Iterable[Any], split: str | None = None,
              order: Sequence[str] = ()) -> dict[str, Any]:
    """Per-design summary of run records: everything the report, the plots and results.json need.

    Each metric is one pooled ratio over all of a design's runs (every scenario, every seed) with a 95%
    cluster-bootstrap interval over scenario kinds (``evals.stats``; Wilson for a proportion on few kinds);
    the across-seed figures are kept as ``per_seed``/``seed_ci``. The baseline of the paired differences
    is "harness" when it ran, else the first design in record order. ``split`` names the scenarios' split
    (dev, test, all) for the report header; designs named in ``order`` come first, in that order (records
    arrive in the order cells finished).

    Returns:
        A JSON-serialisable dict: ``designs``, ``baseline``, ``seeds``, ``n_scenarios``, ``n_clusters``,
        ``split``, ``splits`` (scenarios per split), ``metrics`` (design -> metric -> mean/ci/method/n/
        units/unit/clusters/by_cluster/per_seed/seed_ci), ``latency``, ``tokens_by_turn``, ``growth``,
        ``pass_k``, ``paired``, ``ablations``, ``by_tag``, ``long``, ``cells`` (per-record verdicts) and
        ``domains``.
    """
    records = list(records)
    scenarios = list(scenarios)
    by_design = _cells_by_design(records, scenarios)
    rank = {name: i for i, name in enumerate(order)}
    by_design = dict(sorted(by_design.items(), key=lambda kv: rank.get(kv[0], len(rank))))  # stable for the rest
    designs = list(by_design)
    baseline = BASELINE_DESIGN if BASELINE_DESIGN in by_design else (designs[0] if designs else None)
    ran = {c["scenario"] for cells in by_design.values() for c in cells}
    summary: dict[str, Any] = {
        "designs": designs, "baseline": baseline, "retry_after_s": RETRY_AFTER_S,
        "domains": sorted({str(r.get("domain") or "shop") for r in records}),
        "models": sorted({str(r.get("model") or "sim") for r in records}),
        "seeds": sorted({c["seed"] for cells in by_design.values() for c in cells}, key=seed_key),
        "n_scenarios": len(ran),
        "n_clusters": len({c["cluster"] for cells in by_design.values() for c in cells}),
        "split": split, "splits": _split_counts(scenarios, ran),
        "metrics": {}, "latency": {}, "tokens_by_turn": {}, "growth": {}, "pass_k": {}, "paired": [],
        "ablations": [], "by_tag": {}, "long": {}, "cells": [],
        "machine": machine_of(records),
    }
    for design, cells in by_design.items():
        long_cells = [c for c in cells if "long" in c["tags"]]
        summary["latency"][design] = _latency(cells)
        summary["metrics"][design] = _design_metrics(cells, summary["latency"][design])
        summary["tokens_by_turn"][design] = tokens_by_turn(cells)
        summary["growth"][design] = _growth(cells, long_cells)
        summary["pass_k"][design] = pass_k(cells)
        summary["by_tag"][design] = _tag_completion(cells)
        summary["long"][design] = _long_block(long_cells)
        summary["cells"].extend(cells)
        if baseline is not None and design != baseline:  # a design ran, so there is a baseline
            summary["paired"].append({"design": design, "baseline": baseline,
                                      **paired_difference(cells, by_design[baseline])})
    summary["ablations"] = _ablations(by_design, summary)
    return summary
