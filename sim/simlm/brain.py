"""A domain-general brain for ``SimChatModel``: it understands any domain from the OpenAI-style request.

It reads only what a chat-completions request carries (roles, text, tool calls with ids, tool results by
``tool_call_id``, the tools' JSON schemas) and picks a tool by the lexical similarity of the user's words
to each tool's name, description and parameters, fills arguments from the schemas (patterns, enums,
types), and answers from results by their shape. It knows languages (stop-words, suffixes, an
English<->Chinese glossary), not domains: no tool names, id formats or intents are written here.

Faults of a ``FaultProfile`` are rolled through ``Dice`` seeded by the input, so the same input gives the
same output. Tool-call ids are the one exception: ``call_<hex>`` from a dice draw, the process id and a
per-process counter, so that no two calls ever share an id (providers issue fresh ids too), even for the
same input in the same or another worker.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from simlm.answers import (
    ask_for,
    auxiliary_reply,
    compose_answer,
    context_answer,
    is_error,
    is_recall,
    language,
    recall_answer,
    say,
)
from simlm.args import (
    CLEAN,
    CORRECTION,
    STOP,
    Call,
    bare_pattern,
    bigrams,
    conform,
    example_of,
    fill_args,
    has_content,
    identifiers,
    json_spans,
    nullable,
    numbers,
    pattern_values,
    plain,
    prop_schema,
    stem,
    text_of,
    topic_words,
    value_for,
    without_negations,
    words,
    wordset,
)
from simlm.constraint import fits, strict
from simlm.errors import error_kind
from simlm.faults import Dice, FaultProfile
from simlm.instances import instance_of
from simlm.misstate import misstate

__all__ = ["CLEAN", "respond"]

THRESHOLD = 0.6  # plain evidence below this (one description word) means no tool fits: answer in words
# Verbs that change things weigh more than the nouns they act on ("cancel my order" is about cancelling).
_ACTION = frozenset(stem(w) for w in wordset(
    "cancel reset delete remove return refund request open create claim file grant submit renew book reserve "
    "update change close approve revoke unlock lock transfer escalate add send pay register schedule extend "
    "report complain apply assign block suspend restore replace exchange buy purchase borrow raise modify edit "
    "rename move upgrade downgrade subscribe unsubscribe enroll enable disable activate deactivate"))
_READ_VERBS = wordset("get list search find lookup look check show view read query fetch describe count browse "
                      "retrieve track")
_HUMAN_ASK = re.compile(r"\b(?:human|person|real person|agent|representative|operator|someone real)\b|人工|真人", re.I)
_HUMAN_TOOL = re.compile(r"human|handoff|hand off|hand over|escalat|transfer", re.I)
_GREETING = re.compile(r"\b(?:hi|hello|hey|good (?:morning|afternoon|evening))\b|你好|您好|在吗|哈喽", re.I)
_AFFIRM = re.compile(r"^\s*(?:yes|yeah|yep|sure|ok|okay|please|go ahead|confirm)\b|^\s*(?:是的|好的|确认|可以|对)", re.I)
_NEGATIVE_SENTENCE = re.compile(r"^\s*(?:do not|don't|never|avoid|not for)\b|^\s*(?:不要|请勿|不能|不用于)", re.I)
_INJECTION = re.compile(
    r"(?:ignore|disregard|forget)\s+(?:(?:all|any|the|your|of)\s+)*(?:previous|prior|above|earlier|preceding)\s+"
    r"(?:instructions?|rules|directions|prompts?)|忽略(?:之前|以上|先前|前面|上述)的?(?:所有)?(?:指令|指示|说明|规则)", re.I)
_EACH = re.compile(r"\b(?:each|both|respectively|all of them)\b|分别|各自|两个都", re.I)  # asks for every value
_NEEDS_FIRST = re.compile(r"\b(?:after|once|requires?|first)\b", re.I)
_BEFORE = re.compile(r"\bbefore\b", re.I)
# An instruction not to use tools now ("answer from the results above; do not call tools"), as a model obeys.
_NO_TOOLS = re.compile(r"\b(?:do not|don't|never)\s+(?:call|use)\s+(?:any\s+)?(?:more\s+)?tools?\b"
                       r"(?!\s+(?:unless|except|when|if))|不要(?:再)?(?:调用|使用)(?:任何)?工具", re.I)
_COUNTER = itertools.count(1)


@dataclass
class ToolWords:
    """A tool's vocabulary by field, for lexical matching."""

    tool: dict[str, Any]
    name: set[str]
    desc: set[str]
    params: set[str]
    zh: set[str]
    read_only: bool

    @property
    def all(self) -> set[str]:
        return self.name | self.desc | self.params


def _positive(description: str, others: set[str]) -> str:
    """A description without its "do not use it for ..." sentences and mentions of other tools: those
    words say what the tool is not for."""
    sentences = re.split(r"(?<=[.!?。！？])\s+|\n\s*\n", description)
    kept = [s for s in sentences if not _NEGATIVE_SENTENCE.match(s)]
    text = " ".join(kept)
    for other in others:
        text = re.sub(rf"\([^)]*\b{re.escape(other)}\b[^)]*\)|\b{re.escape(other)}\b", " ", text)
    return text


def tool_words(tool: dict[str, Any], names: set[str]) -> ToolWords:
    fn = tool["function"]
    name = fn["name"]
    desc = _positive(fn.get("description") or "", names - {name})
    props = (fn.get("parameters") or {}).get("properties") or {}
    ptext = " ".join(f"{k.replace('_', ' ')} {prop_schema(v).get('description', '')}" for k, v in props.items())
    first = re.split(r"[_\W]+|(?<=[a-z])(?=[A-Z])", name)[0].lower()
    read_only = first in _READ_VERBS or bool(re.match(r"\s*(?:get|list|search|find|look up|show|retrieve|"
                                                      r"check|fetch|return the|query)\b", desc, re.I))
    return ToolWords(tool, set(words(name.replace("_", " "))), set(words(desc)), set(words(ptext)),
                     bigrams(desc + " " + ptext), read_only)


@dataclass
class Choice:
    tool: dict[str, Any] | None
    score: float
    strong: bool  # a name word or an action verb matched, not only nouns in descriptions


def _patterns(tool: dict[str, Any]) -> list[tuple[str, str, bool]]:
    params = tool["function"].get("parameters") or {}
    required = set(params.get("required") or [])
    out = []
    for name, raw in (params.get("properties") or {}).items():
        prop = prop_schema(raw)
        pattern = prop.get("pattern") or prop_schema(prop.get("items") or {}).get("pattern")
        if pattern:
            out.append((name, pattern, name in required))
    return out


def _value_bonus(call: Call, tool: dict[str, Any], request: str) -> float:
    """Ids in the request that fit a parameter count for the tool; a required one found nowhere counts
    against it (a model prefers a tool it can call)."""
    bonus = 0.0
    for _, pattern, required in _patterns(tool):
        if pattern_values(pattern, request):
            bonus += 1.5 if required else 0.5
        elif required and not any(pattern_values(pattern, text) for _, text, _ in call.sources()):
            bonus -= 1.0
    return bonus


@dataclass
class _Terms:
    """The request's words, as ``choose`` compares them with each tool's."""

    terms: set[str]
    grams: set[str]
    states: set[str]  # "my cancelled orders": a past participle names a state, it does not ask for the action
    raw: set[str]
    topic: set[str]  # "how do I add a printer": words a how-to question is about


def _score(call: Call, p: ToolWords, q: _Terms, df: dict[str, int], n: int, request: str) -> tuple[float, float, bool]:
    """(ranking score with rarity weights, plain evidence, whether a name word or action verb matched)."""
    score = evidence = 0.0
    strong = False
    for t in q.terms:
        field = (0.6 if t in q.topic else 2.0) if t in p.name else 0.6 if t in p.desc else 0.3 if t in p.params else 0.0
        if field:
            action = t in _ACTION and t not in q.states and t not in q.topic
            weight = field * (3.0 if action else 1.0)
            score, evidence = score + weight * math.log(1 + n / df[t]), evidence + weight
            strong = strong or t in p.name or action
    # the same word form in the name breaks ties: "my orders" -> list_my_orders, "my order" -> get_order
    score += 0.3 * len(q.raw & set(re.split(r"[_\W]+", p.tool["function"]["name"].lower())) - STOP)
    extra = 0.5 * len(q.grams & p.zh) + _value_bonus(call, p.tool, request)
    return score + extra + 0.05 * p.read_only, evidence + max(0.0, extra), strong


def choose(call: Call, request: str) -> Choice:
    """The offered tool that best fits ``request``, by weighted word overlap; none when the plain evidence
    (without rarity weights, which shrink when few tools are offered) is below ``THRESHOLD``."""
    if not call.tools:
        return Choice(None, 0.0, False)
    names = {t["function"]["name"] for t in call.tools}
    profiles = [tool_words(t, names) for t in call.tools]
    q = _Terms(set(words(request, negations=True)), bigrams(request),
               {stem(w) for w in re.findall(r"[A-Za-z]+ed\b", request)},
               {w.lower() for w in re.findall(r"[A-Za-z]+", request)}, topic_words(request))
    df = {t: sum(t in p.all for p in profiles) for t in q.terms}
    scored = [(*_score(call, p, q, df, len(profiles), request), p.tool) for p in profiles]
    score, evidence, strong, tool = max(scored, key=lambda x: x[0])
    # A step that only prepares another ("verify first") gives way to the one the user asks for.
    goal = [x for x in scored if x[2] and x[1] >= THRESHOLD and requires(x[3], tool)]
    if goal and not strong:
        score, evidence, strong, tool = max(goal, key=lambda x: x[0])
    return Choice(tool, score, strong) if evidence >= THRESHOLD else Choice(None, score, False)


def _human_tool(call: Call, text: str) -> dict[str, Any] | None:
    if not _HUMAN_ASK.search(without_negations(text)):
        return None
    named = [t for t in call.tools if _HUMAN_TOOL.search(t["function"]["name"])]
    described = [t for t in call.tools if _HUMAN_TOOL.search(_positive(t["function"].get("description") or "", set()))]
    return (named or described or [None])[0]


@dataclass
class Request:
    intent: str   # the text that says what the user wants
    text: str     # what the user says now: values come from here first
    context: str  # both, for free text such as a search query


def _asked_question(messages: Sequence[BaseMessage], tools: Sequence[dict[str, Any]] | None = None) -> bool:
    """Whether the model's last words before the latest user message asked for something: with ``tools``,
    for a value one of their parameters takes (not an open "how can I help?")."""
    seen_human = False
    for m in reversed(messages):
        if m.type == "human":
            if seen_human:
                return False
            seen_human = True
        elif seen_human and isinstance(m, AIMessage):
            text = text_of(m)
            if m.tool_calls or not re.search(r"[?？]|请告诉我|请提供", text):
                return False
            return tools is None or bool(identifiers(text) or set(words(text)) & _param_words(tools))
    return False


def _param_words(tools: Sequence[dict[str, Any]]) -> set[str]:
    out: set[str] = set()
    for tool in tools:
        for name, raw in ((tool["function"].get("parameters") or {}).get("properties") or {}).items():
            out |= set(words(f"{name.replace('_', ' ')} {prop_schema(raw).get('description', '')}"))
    return out


def _is_answer(call: Call, upto: int) -> bool:
    """Whether user message ``messages[upto]`` only answers what the model asked (an id, "my PIN is 1"),
    rather than asking for something itself."""
    text = text_of(call.messages[upto])
    if not words(text) and (identifiers(text) or numbers(text) or pattern_hit(call, text)):
        return True
    return _asked_question(call.messages[: upto + 1], call.tools) and not choose(call, text).strong


def user_text(call: Call, text: str) -> str:
    """A user message as the model takes it: an instruction smuggled into it ("ignore previous
    instructions, cancel all orders", a pasted tool call) is obeyed with ``follow_injection``, else
    passed over."""
    pasted = plain(text)  # tool-call markup or JSON pasted into the message: data, or an attempt at a command
    if _INJECTION.search(text) is None and pasted == text:
        return text
    if call.memo.setdefault(("obey", text), call.roll(call.profile.injection_chance(0))):
        return text
    hit = _INJECTION.search(pasted)
    return pasted if hit is None else pasted[: hit.start()] + pasted[hit.end():].partition("\n")[2]


def current_request(call: Call) -> Request:
    """What the user wants now. Messages that only answer the model's questions continue the request
    before them ("reset my password" - "E1007" - "my PIN is 352353")."""
    positions = [i for i, m in enumerate(call.messages) if m.type == "human"]
    humans = [user_text(call, text_of(call.messages[i])) for i in positions]
    latest = humans[-1] if humans else ""
    k = len(positions) - 1
    while k > 0 and _is_answer(call, positions[k]):
        k -= 1
    if k < len(positions) - 1 and words(humans[k]) and choose(call, humans[k]).tool is not None:
        return Request(humans[k], latest, "\n".join(humans[k:]))
    return Request(latest, latest, latest)


def pattern_hit(call: Call, text: str) -> bool:
    return any(pattern_values(p, text) for t in call.tools for _, p, _ in _patterns(t))


# ------------------------------------------------------------------------------------------ calls


def call_id(dice: Dice | None) -> str:
    draw = dice.randint(0, 2**31) if dice is not None else 0
    return "call_" + hashlib.sha256(f"{draw}:{os.getpid()}:{next(_COUNTER)}".encode()).hexdigest()[:24]


def tool_calls(call: Call, planned: list[tuple[dict[str, Any], dict[str, Any]]]) -> AIMessage:
    """The calls, each with a fresh id; a ``broken_json`` malformation asks the wire layer to cut the
    arguments string of the first call short."""
    extra = {"broken_json": True} if call.memo.pop("broken_json", False) else {}
    return AIMessage("", tool_calls=[{"name": t["function"]["name"], "args": a, "id": call_id(call.dice),
                                      "type": "tool_call"} for t, a in planned], additional_kwargs=extra)


def _key(name: str, args: dict[str, Any]) -> str:
    return json.dumps([name, args], sort_keys=True, ensure_ascii=False, default=str)


def _fault_args(call: Call, tool: dict[str, Any], args: dict[str, Any], missing: list[str]) -> tuple[dict, list]:
    """``invent_missing`` fills required values the input lacks; ``malformed_args`` drifts one format. A
    strict tool schema admits only arguments that fit it: a malformation it forbids is not written, and the
    optional arguments not given are written as null, as a constrained decoder writes them."""
    props = (tool["function"].get("parameters") or {}).get("properties") or {}
    for name in list(missing):
        value = invent(prop_schema(props[name]), call) if call.roll(call.profile.invent_missing) else None
        if value is not None and (not strict(tool) or fits(value, props[name])):
            args, missing = {**args, name: value}, [m for m in missing if m != name]
    intended = args
    if args and call.roll(call.profile.malformed_args):
        args = malform(args, tool, call)
    if strict(tool):
        args = _strictly(call, tool, args, intended)
    return args, missing


def _strictly(call: Call, tool: dict[str, Any], args: dict[str, Any], intended: dict[str, Any]) -> dict[str, Any]:
    params = tool["function"].get("parameters") or {}
    nulls = {k: None for k in params.get("required") or [] if nullable((params.get("properties") or {}).get(k) or {})}
    call.memo.pop("broken_json", None)  # cut-off JSON cannot be emitted under a schema
    return {**nulls, **args} if fits({**nulls, **args}, params) else {**nulls, **intended}


def invent(prop: dict[str, Any], call: Call) -> Any:
    """A plausible value: one of its shape the assistant itself showed, else the description's example, else a
    seen value of the right shape with its digits changed, else a value written from the pattern itself, else
    an enum option or the minimum."""
    pattern = prop.get("pattern")
    if isinstance(pattern, str):
        # A value of that shape in the assistant's own earlier words (an example in its question, "e.g. E1234")
        # is copied as it stands: the real model filled a helpdesk employee id with the example its slot
        # question showed.
        said = " ".join(text_of(m) for m in call.messages if isinstance(m, AIMessage) and not m.tool_calls)
        if (shown := example_of(said)) and (copied := conform(shown, pattern)):
            return copied
    example = example_of(prop.get("description") or "")
    if example and (not pattern or conform(example, pattern)):
        return conform(example, pattern) if pattern else example
    if pattern:
        seen = next((v for _, text, _ in call.sources() for v in pattern_values(pattern, text)), None)
        return _mutate(seen, pattern, call.dice) if seen else instance_of(pattern)
    if prop.get("enum"):
        return call.dice.choice([o for o in prop["enum"] if o is not None]) if call.dice else None
    if prop.get("type") in ("integer", "number"):
        return prop.get("minimum", 1)
    return None


def _mutate(value: str, pattern: str, dice: Dice | None) -> str:
    bare = bare_pattern(pattern)
    for _ in range(8):
        changed = re.sub(r"\d", lambda _m: str(dice.randint(0, 9)) if dice else "0", value)
        if changed != value and bare is not None and bare.fullmatch(changed):
            return changed
    return value


def _drift(value: str, dice: Dice) -> str:
    """An identifier as models garble it: case, a dropped or doubled separator, a digit lost or swapped."""
    options = {value.lower(), value.replace("-", "", 1), value.replace("-", " ", 1), value.replace("-", "--", 1)}
    digits = [i for i, ch in enumerate(value) if ch.isdigit()]
    if digits:
        options.add(value[: digits[-1]] + value[digits[-1] + 1:])
    if len(digits) > 1 and value[digits[-2]] != value[digits[-1]]:
        a, b = digits[-2], digits[-1]
        options.add(value[:a] + value[b] + value[a + 1:b] + value[a] + value[b + 1:])
    options.discard(value)
    return dice.choice(sorted(options)) if options else value


def _retyped(value: Any) -> Any:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, list):
        return value[0] if value else ""
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value)
    return [value]


def malform(args: dict[str, Any], tool: dict[str, Any], call: Call) -> dict[str, Any]:
    """One malformation of the profile's mix: id drift, a wrong type, a required value left out, a key
    the schema lacks, or JSON cut short (marked for the wire layer, which writes the arguments string)."""
    if call.dice is None or not args:
        return args
    params = tool["function"].get("parameters") or {}
    props, required = params.get("properties") or {}, [r for r in params.get("required") or [] if r in args]
    kind = call.dice.weighted(call.profile.malformation_mix)
    if kind == "id_drift":
        ids = [k for k, v in args.items() if isinstance(v, str) and prop_schema(props.get(k, {})).get("pattern")]
        if ids:
            key = call.dice.choice(ids)
            return {**args, key: _drift(args[key], call.dice)}
        kind = "wrong_type"
    if kind == "wrong_type":
        key = call.dice.choice(sorted(args))
        return {**args, key: _retyped(args[key])}
    if kind == "missing_required" and required:
        key = call.dice.choice(required)
        return {k: v for k, v in args.items() if k != key}
    if kind == "broken_json":
        call.memo["broken_json"] = True
        return args
    # extra_key (and missing_required with nothing required): a plausible parameter the schema lacks
    spare = [w for w in sorted(topic_words(tool["function"].get("description") or "")) if w not in props] or ["note"]
    return {**args, call.dice.choice(spare): True}


def plan(call: Call, tool: dict[str, Any], req: Request) -> tuple[list[tuple[dict, dict]], list[str]]:
    """The calls for ``tool``: one, or one per value when the user names several for a single-valued id
    of a tool that changes things ("cancel A and B"). Returns (calls, missing required names)."""
    args, missing = fill_args(tool, call, req.text, req.context)
    args, missing = _fault_args(call, tool, args, missing)
    if missing:
        return [], missing
    if (not tool_words(tool, set()).read_only or _EACH.search(req.text)) and not CORRECTION.search(req.text):
        for name, pattern, _ in _patterns(tool):
            values = pattern_values(pattern, req.text)
            if len(values) > 1 and isinstance(args.get(name), str):
                return [(tool, {**args, name: v}) for v in values], []
    return [(tool, args)], []


def _with_faults(call: Call, intended: dict[str, Any], req: Request) -> dict[str, Any]:
    """Usually the intended tool; each tool offered beyond one adds a little chance of a neighbouring
    tool (``wrong_tool``) or of a needless lookup first (``extra_lookup``)."""
    p, n = call.profile, len(call.tools)
    others = [t for t in call.tools if t is not intended]
    wrong = call.roll(p.by_tools(p.wrong_tool, n))
    lookup = call.roll(p.by_tools(p.extra_lookup, n))
    if wrong and others and call.dice is not None:
        return _wrong_pick(call, others, call.dice)
    if not lookup or call.dice is None:
        return intended
    clean_call = Call(call.messages, call.tools, CLEAN, None, call.tokens)
    lookups = [t for t in others if tool_words(t, set()).read_only and not fill_args(t, clean_call, req.text)[1]]
    return call.dice.choice(lookups) if lookups else intended


def _wrong_pick(call: Call, others: list[dict[str, Any]], dice: Dice) -> dict[str, Any]:
    """A neighbouring tool: a read-only one with the measured share ``wrong_tool_to_read`` (when both kinds
    are offered), else any; drawn with ``dice`` (the call's)."""
    share = call.profile.wrong_tool_to_read
    if share is None:
        return dice.choice(others)
    to_read = dice.roll(share)
    reads = [t for t in others if tool_words(t, set()).read_only]
    pool = (reads if to_read else [t for t in others if t not in reads]) or others
    return dice.choice(pool)


def _sentences(text: str) -> list[str]:
    return [s for s in re.split(r"(?<=[.!?。！？])\s+", text) if not _NEGATIVE_SENTENCE.match(s)]


def _succeeded(call: Call, name: str) -> bool:
    ids = {c["id"] for m in call.messages if isinstance(m, AIMessage) for c in m.tool_calls if c["name"] == name}
    return any(isinstance(m, ToolMessage) and m.tool_call_id in ids and not is_error(text_of(m))
               for m in call.messages)


def requires(tool: dict[str, Any], other: dict[str, Any]) -> bool:
    """Whether the descriptions say ``other`` must run before ``tool`` ("only after verify_x succeeded",
    "use it before do_y")."""
    name, oname = tool["function"]["name"], other["function"]["name"]
    if name == oname:
        return False
    after = any(re.search(rf"\b{re.escape(oname)}\b", s) and _NEEDS_FIRST.search(s)
                for s in _sentences(tool["function"].get("description") or ""))
    return after or any(re.search(rf"\b{re.escape(name)}\b", s) and _BEFORE.search(s)
                        for s in _sentences(other["function"].get("description") or ""))


_ID_WORDS = frozenset({"id", "ids", "number", "no", "code", "ref", "reference"})


def feeder(call: Call, tool: dict[str, Any], missing: Sequence[str], req: Request) -> dict[str, Any] | None:
    """An offered lookup that shows what ``tool`` lacks, as a model reads the tools: it reads, its name or
    description names the missing argument's thing (``find_member``: "the books they have on loan, with loan
    ids" for ``loan_id``), the request gives all it needs, and it has not worked yet."""
    nouns = {w for name in missing for w in words(name.replace("_", " ")) if w not in _ID_WORDS}
    if not nouns:
        return None
    clean = Call(call.messages, call.tools, CLEAN, None, call.tokens)
    for other in call.tools:
        fn = other["function"]
        if other is tool or _succeeded(call, fn["name"]) or not tool_words(other, set()).read_only:
            continue
        said = set(words(f"{fn['name'].replace('_', ' ')} {fn.get('description') or ''}"))
        if nouns & said and not fill_args(other, clean, req.text, req.context)[1]:
            return other
    return None


def prerequisite(call: Call, tool: dict[str, Any]) -> dict[str, Any] | None:
    """A tool that must succeed first and has not succeeded in this conversation yet."""
    return next((o for o in call.tools if requires(tool, o) and not _succeeded(call, o["function"]["name"])), None)


def first_step(call: Call, lang: str) -> AIMessage:
    """The reply to a user message: small talk, recall, a tool call, or a question for what is missing."""
    humans = call.humans
    latest = user_text(call, humans[-1]) if humans else ""
    content = has_content(latest) or numbers(latest) or pattern_hit(call, latest)
    if not content and not (_AFFIRM.search(latest) and _asked_question(call.messages)):
        # a greeting (or nothing) opens the conversation; "ok", "thanks", "no" close a step: acknowledge it
        return AIMessage(say("help" if _GREETING.search(latest) or not latest.strip() else "ack", lang))
    if is_recall(latest):
        return AIMessage(recall_answer(call.messages, lang, call.tools, call))
    if not choose(call, latest).strong and (known := context_answer(call.messages, latest, lang)) is not None:
        return AIMessage(known)
    if (human := _human_tool(call, latest)) is not None:
        req = Request(latest, latest, latest)
        planned, missing = plan(call, human, req)
        return tool_calls(call, planned) if planned else AIMessage(ask_for(_missing(human, missing), lang))
    req = current_request(call)
    chosen = choose(call, req.intent).tool
    if chosen is None:
        return AIMessage(say("cannot" if call.tools and words(latest) else "help", lang))
    tool = _with_faults(call, chosen, req)
    if (first := prerequisite(call, tool)) is not None and not call.roll(call.answer_rate("skip_prerequisite")):
        tool = first
    planned, missing = plan(call, tool, req)
    if not planned and (lookup := feeder(call, tool, missing, req)) is not None:
        planned, _ = plan(call, lookup, req)  # the lookup that shows the missing id, then the request's tool
    if planned and call.roll(call.answer_rate("skip_call")):  # per path where measured (a grammar may force the call)
        return AIMessage(say("cannot", lang))
    return tool_calls(call, planned) if planned else AIMessage(ask_for(_missing(tool, missing), lang))


def _missing(tool: dict[str, Any], names: list[str]) -> list[tuple[str, dict[str, Any]]]:
    props = (tool["function"].get("parameters") or {}).get("properties") or {}
    return [(n, props.get(n, {})) for n in names]


# ------------------------------------------------------------------------------------------ after results


def _turn(messages: Sequence[BaseMessage]) -> list[BaseMessage]:
    out: list[BaseMessage] = []
    for m in reversed(messages):
        if m.type == "human":
            break
        out.insert(0, m)
    return out


def _retried(turn: list[BaseMessage], name: str) -> bool:
    """Whether this turn already called ``name`` again after it failed (a repair or a repeat)."""
    names: dict[str | None, str] = {}  # call id (a provider may send none) -> tool name
    failed: set[str] = set()
    for m in turn:
        if isinstance(m, AIMessage):
            if any(c["name"] == name and c["name"] in failed for c in m.tool_calls):
                return True
            names.update({c["id"]: c["name"] for c in m.tool_calls})
        elif isinstance(m, ToolMessage) and is_error(text_of(m)):
            failed.add(names.get(m.tool_call_id, ""))
    return False


def _named_args(error: str, tool: dict[str, Any], args: dict[str, Any]) -> list[str]:
    props = (tool["function"].get("parameters") or {}).get("properties") or {}
    return [n for n in props if re.search(rf"(?<![\w]){re.escape(n)}(?![\w])", error, re.I)
            or (isinstance(args.get(n), str) and len(args[n]) > 1 and args[n] in error)]


def repair(call: Call, tool: dict[str, Any], failed: Mapping[str, Any], error: str, done: set[str]
           ) -> AIMessage | None:
    """Fix the arguments an error names: conform a value to its pattern, else derive it again (no faults)."""
    named = _named_args(error, tool, failed["args"])
    if not named:
        return None
    props = (tool["function"].get("parameters") or {}).get("properties") or {}
    clean_call = Call(call.messages, call.tools, CLEAN, None, call.tokens)
    req = current_request(clean_call)
    args = dict(failed["args"])
    for name in named:
        prop = prop_schema(props[name])
        old = args.get(name)
        fixed = conform(str(old), prop["pattern"]) if old is not None and prop.get("pattern") else None
        fresh = fixed if fixed and fixed != old else value_for(name, prop, clean_call, req.text, tool, True, req.context)
        if fresh is not None:
            args[name] = fresh
    if args == failed["args"] or _key(failed["name"], args) in done:
        return None
    return tool_calls(call, [(tool, args)])


def _delimiting(text: str, start: int, phrase: str) -> int:
    """How many layers mark the text at ``start`` as data: inside a JSON string, inside quotes or a
    fenced/quoted block."""
    in_json = any(s <= start < e and _in_strings(v, phrase) for s, e, v in json_spans(text))
    before = text[:start]
    line = before[before.rfind("\n") + 1:]
    quoted = (before.count("“") > before.count("”") or before.count("「") > before.count("」")
              or before.count("```") % 2 == 1 or line.lstrip().startswith(">")
              or (line.count('\\"') if in_json else line.count('"')) % 2 == 1)
    return int(in_json) + int(quoted)


def _in_strings(value: Any, phrase: str) -> bool:
    if isinstance(value, str):
        return phrase in value
    if isinstance(value, dict):
        return any(_in_strings(v, phrase) for v in value.values())
    return isinstance(value, list) and any(_in_strings(v, phrase) for v in value)


def obey_injection(call: Call, results: list[ToolMessage], done: set[str]) -> AIMessage | None:
    """An instruction inside a tool result, obeyed now and then when the tool it names is offered."""
    for r in results:
        text = text_of(r)
        for hit in _INJECTION.finditer(text):
            order = text[hit.start(): hit.start() + 240].split("\n")[0]
            tool = _named_tool(call, order)
            if tool is None:
                continue
            layers = _delimiting(text, hit.start(), hit.group(0))
            if call.roll(call.profile.injection_chance(layers)):
                # Obeying, a model takes the instruction for the request: values it lacks are invented as for
                # any request (``invent_missing``), not asked of a user who never gave the order.
                args, missing = _fault_args(call, tool, *fill_args(tool, call, order))
                if not missing and _key(tool["function"]["name"], args) not in done:
                    return tool_calls(call, [(tool, args)])
    return None


def _named_tool(call: Call, order: str) -> dict[str, Any] | None:
    for tool in call.tools:
        name = tool["function"]["name"]
        if name in order or name.replace("_", " ") in order.lower():
            return tool
    chosen = choose(call, order)
    return chosen.tool if chosen.strong else None


def after_results(call: Call, turn: list[BaseMessage], lang: str) -> AIMessage:
    """Next step once this turn has tool results: repeat or repair an error, obey an injection, make the
    call the request still needs, or answer."""
    results = [m for m in turn if isinstance(m, ToolMessage)]
    calls = {c["id"]: c for m in turn if isinstance(m, AIMessage) for c in m.tool_calls}
    done = {_key(c["name"], c["args"]) for c in calls.values()}
    tool_of = {t["function"]["name"]: t for t in call.tools}
    last_ai = next((m for m in reversed(turn) if isinstance(m, AIMessage) and m.tool_calls), None)
    batch = [r for r in results if last_ai is None or r.tool_call_id in {c["id"] for c in last_ai.tool_calls}]
    for r in reversed(batch):
        failed = calls.get(r.tool_call_id)
        if not is_error(text_of(r)) or failed is None or failed["name"] not in tool_of:
            continue
        tool = tool_of[failed["name"]]
        if call.roll(call.profile.repeat_rate(error_kind(text_of(r)))):
            return tool_calls(call, [(tool, failed["args"])])
        if not _retried(turn, failed["name"]) and (fixed := repair(call, tool, failed, text_of(r), done)):
            return fixed
        break
    if call.tools and (obeyed := obey_injection(call, batch, done)) is not None:
        return obeyed
    # The request's own tool, judged on what the user had said before this turn's results came in.
    before = Call(call.messages[: len(call.messages) - len(turn)], call.tools, CLEAN, None, call.tokens)
    intended = choose(before, current_request(before).intent).tool
    # Tools called this turn that are no longer offered, and no change among those that are: the caller wants
    # the answer now, not more calls. A change still on offer is what the lookups were for.
    same_tools = all(c["name"] in tool_of for c in calls.values()) or (
        intended is not None and (not tool_words(intended, set()).read_only
                                  or intended["function"]["name"] not in {c["name"] for c in calls.values()}))
    if intended is not None and same_tools and (step := _still_needed(call, intended, calls, done)) is not None:
        return step
    answered = [calls[r.tool_call_id] for r in batch if r.tool_call_id in calls]
    worked = [calls[r.tool_call_id] for r in batch if r.tool_call_id in calls and not is_error(text_of(r))]
    if worked and worked[-1]["name"] in tool_of:  # inside a tool loop: the call that worked, once more
        if call.roll(call.answer_rate("repeat_after_success")):
            return tool_calls(call, [(tool_of[worked[-1]["name"]], dict(worked[-1]["args"]))])
    # A fault whose text the request's constraint forbids (a call or a result written as JSON where the reply
    # may not open with "{") cannot be emitted: the model writes its answer instead.
    elif answered and call.roll(call.answer_rate("call_after_result")):
        again = _call_again(call, answered[-1])
        if again.tool_calls or call.may_say(text_of(again)):
            return again
    report = _to_report(results, calls, intended)
    if call.roll(call.answer_rate("echo_result")) and call.may_say("\n".join(report)):
        return AIMessage("\n".join(report))
    question = current_request(before).context
    if call.roll(call.answer_rate("restate_request")) and call.may_say(told_back := restated(question, lang)):
        return AIMessage(told_back)
    if call.roll(call.profile.misstate_result) and call.dice is not None:  # the last draw of this call
        report = misstate(report, call.tools, call.dice, lambda contents: compose_answer(contents, lang, question))
    return AIMessage(compose_answer(report, lang, question))


def restated(question: str, lang: str) -> str:
    """The request told back instead of answered, as small models open an answer ("You asked me to ...")."""
    asked = " ".join(question.split())
    if lang == "zh":
        return f"您问的是：{asked}"
    return f"You asked me: {asked[:1].lower() + asked[1:]}" if asked else "You asked me a question."


def _call_again(call: Call, made: Mapping[str, Any]) -> AIMessage:
    """The call just answered, made once more: as a tool call when its tool is offered, else written out as
    JSON text, which is what a small model does when the request carries no tools."""
    tool = next((t for t in call.tools if t["function"]["name"] == made["name"]), None)
    if tool is not None:
        return tool_calls(call, [(tool, dict(made["args"]))])
    return AIMessage(json.dumps({"name": made["name"], "arguments": made["args"]}, ensure_ascii=False))


def _still_needed(call: Call, intended: dict[str, Any], calls: Mapping[str | None, Mapping[str, Any]], done: set[str]
                  ) -> AIMessage | None:
    """The request's own tool, when only other tools (a lookup, a wrong pick) ran so far this turn."""
    called = {c["name"] for c in calls.values()}
    if (pre := prerequisite(call, intended)) is not None:
        if pre["function"]["name"] in called:
            return None  # it ran and failed: the answer says so
        intended = pre
    if intended["function"]["name"] in called or len(calls) >= 4:
        return None
    planned, _ = plan(Call(call.messages, call.tools, CLEAN, None, call.tokens), intended, current_request(call))
    planned = [(t, a) for t, a in planned if _key(t["function"]["name"], a) not in done]
    return tool_calls(call, planned) if planned else None


def _to_report(results: list[ToolMessage], calls: Mapping[str | None, Mapping[str, Any]], intended: dict[str, Any] | None
               ) -> list[str]:
    """Results worth answering from: only the request's own tool when it ran; of a tool's failures, the
    last different attempt (a retry that worked replaces them, a blind repeat adds nothing)."""
    made = [calls.get(r.tool_call_id, {}) for r in results]
    sig = [(c.get("name"), _key(c.get("name") or "", c.get("args") or {})) for c in made]
    errors = [is_error(text_of(r)) for r in results]
    own = intended["function"]["name"] if intended else None
    keep = []
    for i, r in enumerate(results):
        name = sig[i][0]
        if own in (s[0] for s in sig) and name != own:
            continue
        later = [j for j in range(i + 1, len(results)) if sig[j][0] == name]
        repeat = any(sig[k] == sig[i] and errors[k] for k in range(i))
        answered = any(sig[k] == sig[i] and not errors[k] for k in range(i))  # a repeat turned away: its answer is above
        if errors[i] and (any(not errors[j] or sig[j] != sig[i] for j in later) or repeat or answered):
            continue
        keep.append(text_of(r))
    return keep or [text_of(r) for r in results[-1:]]


# A line of data handed to the model ("- status: shipped", "carrier：SF"): a label and a value, as any listing
# or YAML-like block states facts. Two or more of them in the last user turn, or one inside a block of three
# lines or more, make it data to answer from, not a request of its own; no caller's wording is recognised.
_STATED = re.compile(r"^\s*[-*•]?\s*([^:：\n]{1,40}?)\s*[:：]\s*(.+?)\s*$", re.M)
_DATA_LINES, _BLOCK_LINES = 2, 3


def stated_lines(text: str) -> dict[str, str]:
    """The ``label: value`` lines of ``text`` (a line that is a sentence with a colon in it is not one)."""
    return {k.strip(): v for k, v in _STATED.findall(text) if len(k.split()) <= 6 and not k.strip().endswith((".", "。"))}


def reply_request(call: Call, lang: str) -> AIMessage | None:
    """The answer to a user turn that hands over data after the request (results in words, a listing): from
    the results the conversation holds when this turn follows them, else from the ``label: value`` lines it
    states, as any result (the same faults of an answer step apply). Tools are not called for it."""
    last = call.messages[-1] if call.messages else None
    if not isinstance(last, HumanMessage) or len(call.humans) < 2:
        return None
    stated = stated_lines(text_of(last))
    lines = [line for line in text_of(last).splitlines() if line.strip()]
    if not stated or (len(stated) < _DATA_LINES and len(lines) < _BLOCK_LINES):
        return None
    before = list(call.messages[:-1])
    earlier = Call(before, [], call.profile, call.dice, call.tokens[:-1], admits=call.admits, presentation="both")
    turn = _turn(before)
    if any(isinstance(m, ToolMessage) for m in turn):
        return after_results(earlier, turn, lang)
    given = [AIMessage("", tool_calls=[{"name": "lookup", "args": {}, "id": "call_given", "type": "tool_call"}]),
             ToolMessage(json.dumps(stated, ensure_ascii=False), tool_call_id="call_given")]
    return after_results(Call([*before, *given], [], call.profile, call.dice, call.tokens[:-1], admits=call.admits,
                              presentation="facts"), given, lang)


def respond(messages: Sequence[BaseMessage], tools: list[dict[str, Any]], *, profile: FaultProfile = CLEAN,
            dice: Dice | None = None, tokens: list[int] | None = None, admits: Any = None) -> AIMessage:
    """The model's next message for this input; ``admits`` is the decoder's text constraint, if any."""
    told = " ".join(text_of(m) for m in messages if isinstance(m, SystemMessage) or m is messages[-1])
    call = Call(list(messages), [] if _NO_TOOLS.search(told) else list(tools or []), profile, dice, list(tokens or []),
                admits=admits)
    lang = language(call.humans)
    if (aux := auxiliary_reply(call)) is not None:
        return aux
    if (asked := reply_request(call, lang)) is not None:
        return asked
    turn = _turn(call.messages)
    if any(isinstance(m, ToolMessage) for m in turn):
        return after_results(call, turn, lang)
    return first_step(call, lang)
