"""Intent: start the turn, update the fact card, and decide what the user wants.

Variants: ``classifier`` (keyword rules + MiniLM prototypes, no model call), ``llm`` (the model answers a
JSON classification prompt), ``hybrid`` (classifier first, the model only when the classifier is unsure).
"""

from __future__ import annotations

import json
import re
from collections.abc import Set as AbstractSet
from typing import Any, Protocol

from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.runnables import RunnableConfig

from lg_harness.core.domain import Domain
from lg_harness.core.knobs import Knobs
from lg_harness.core.state import HarnessState, NotTheOwner, StateUpdate, acting_user
from lg_harness.memory.constraints import forbidden_tools
from lg_harness.memory.context import last_human_text, turn_upkeep
from lg_harness.memory.hooks import recall
from lg_harness.memory.known_ids import ids_in_text, names_in_text
from lg_harness.nodes.asking import asks_about_changes, asks_without_change, change_intents
from lg_harness.nodes.base import ModelCallFailed, NodeDeps, builtin_variant, call_model
from lg_harness.nodes.classify import (
    OPEN,
    UNKNOWN,
    candidates,
    classify,
    hinted_intent,
    message_vector,
    rule_intent,
)
from lg_harness.nodes.confirm import answer_to_confirmation
from lg_harness.nodes.not_known import browse_intent, not_known
from lg_harness.nodes.offer import ranked
from lg_harness.tools.effects import WRITES, first_word
from lg_harness.tools.entities import card_updates
from lg_harness.tools.text import (
    clean_text,
    is_low_information,
    keyword_hit,
    keyword_pattern,
    language,
    rule_text,
)


def intent_labels(domain: Domain, exclude: AbstractSet[str] = frozenset()) -> list[str]:
    return [n for n in [*domain.intent_names(), *([] if domain.intent(UNKNOWN) else [UNKNOWN])] if n not in exclude]


def classify_prompt(domain: Domain, described: bool = False, exclude: AbstractSet[str] = frozenset()) -> str:
    """The classification request. Bare, it lists the intents' names (the ``llm`` variant, as the first
    customer-service bot asked); ``described``, each intent with its description and an example where the
    domain gives them, so a small model picks from meanings, not labels (``hybrid``)."""
    if not described:
        return ("Classify the customer's last message into one intent of: " + ", ".join(intent_labels(domain, exclude)) +
                '. Respond with JSON only: {"intent": "<intent>", "confidence": <0..1>}.')
    lines = []
    for name in intent_labels(domain, exclude):
        declared = domain.intent(name)
        meaning = (declared.description if declared else "") or ("none of these" if name == UNKNOWN else
                                                                 name.replace("_", " "))
        example = next(iter(declared.examples.get("en", ())), "") if declared else ""
        lines.append(f"- {name}: {meaning}" + (f' (for instance "{example}")' if example else ""))
    return ("Classify the customer's last message into one of these intents:\n" + "\n".join(lines) + "\n"
            'Respond with JSON only: {"intent": "<intent>", "confidence": <0..1>}.')


def label_schema(domain: Domain, exclude: AbstractSet[str] = frozenset()) -> dict[str, Any]:
    """What the model's classification may be: one of the domain's intents (an enum), and a confidence."""
    return {"type": "object", "additionalProperties": False, "required": ["intent", "confidence"],
            "properties": {"intent": {"type": "string", "enum": intent_labels(domain, exclude)},
                           "confidence": {"type": "number", "minimum": 0, "maximum": 1}}}


def message_language(domain: Domain, text: str) -> str | None:
    """The message's language, or None when it is only identifiers ("ORD-10001") and says nothing."""
    if language(text) == "zh":
        return "zh"
    bare = clean_text(text)
    for t in domain.entity_types:
        bare = t.regex.sub(" ", bare)
    return "en" if re.search(r"[A-Za-z]{2,}", bare) else None


def start_turn(deps: NodeDeps, state: HarnessState, config: RunnableConfig | None = None) -> StateUpdate:
    """Per-message bookkeeping shared by every intent variant."""
    if not str(acting_user(state, config).get("id") or "").strip():
        # Tools act for a user: a message without one would act for nobody, or for whoever a default names.
        raise NotTheOwner("a message needs the id of the user who sends it (input key 'user': {'id': ...})")
    messages = state.get("messages") or []
    text = last_human_text(messages)
    card = card_updates(deps.domain.entity_types, [text], dict(state.get("fact_card") or {}))
    if lang := message_language(deps.domain, text):
        card["language"] = lang
    memory = deps.resources.get("memory")
    recalled: StateUpdate = {}
    if memory is not None:  # the graph has memory where the design remembers (graphs.builder)
        # A message that names an entity recalls by the name: no embedding of the message for the lookup.
        names = names_in_text(text, deps.domain.entity_types)
        recalled = recall(memory, (state.get("user") or {}).get("id", ""), text, names=names,
                          vector=None if names else message_vector(text, deps.embedder))
    previous = state.get("turn_stats") or {}
    totals = state.get("totals") or {}
    counted = ("model_calls", "input_tokens", "output_tokens", "tool_calls", "tool_errors")
    upkeep = turn_upkeep(state, deps.design, text, deps.domain, deps.strategies)
    pinned = [*(state.get("constraints") or []), *upkeep.get("constraints", [])]
    blocked = forbidden_tools(pinned, deps.domain.constraint_words).get("handoff")
    if "fact_card" in upkeep:  # compression's extracted entities, then this message's on top
        card = {**upkeep.pop("fact_card"), **card}
    return {
        **recalled,
        **upkeep,
        "totals": {k: totals.get(k, 0) + previous.get(k, 0) for k in counted},
        "turn": (state.get("turn") or 0) + 1,
        "phase": "intent",
        "fact_card": card,
        "known_ids": ids_in_text(text, deps.domain.entity_types),
        "request_intents": [],
        "request_parts": [],
        "goal_groups": [],
        "tool_log": [],
        "reply": "",
        "check": {},
        "handoff": None,
        "handoff_blocked": blocked,
        "turn_stats": {"rounds": 0, "model_calls": 0, "input_tokens": 0, "output_tokens": 0,
                       "tool_calls": 0, "tool_errors": 0, "regenerations": 0, "started_at": deps.clock(),
                       "elapsed_s": 0.0},
    }


def answered_slots(domain: Domain, intent: str | None, text: str, waiting: list[str]) -> list[str]:
    """The waiting slots this message fills: by an entity mention, or by the domain's free-text extractor."""
    mentioned = domain.entities_in(text)
    by_slot = domain.slot_entities()
    found = [s for s in waiting if s in by_slot and by_slot[s].name in mentioned]
    found += [s for s in waiting if s in domain.slot_extractors and domain.slot_extractors[s](intent, text)]
    return found


def continue_or_switch(domain: Domain, state: HarnessState, intent: str, confidence: float, text: str) -> str:
    """Keep the open task when the message only answers its question ("ORD-10001" after "which order?")."""
    previous = state.get("intent")
    waiting = state.get("missing_slots") or []
    if not previous or not waiting:
        return intent
    # Talk about the entity being asked for ("订单号是 ORD-10144") answers the question; another rule hit
    # is a new request.
    declared = domain.intent(intent)
    hint = declared.entity_hint if declared is not None else ""
    about_waiting = bool(hint) and any(t.name == hint for s, t in domain.slot_entities().items() if s in waiting)
    if confidence >= 1.0 and not about_waiting:
        return intent
    return previous if answered_slots(domain, previous, text, waiting) else intent


class UnsureStep(Protocol):
    """What an intent step does when no keyword rule decided: the intent it settles on and the candidates whose
    tools are offered together (empty: the one intent's tools)."""

    def __call__(self, deps: NodeDeps, text: str, intent: str, confidence: float,
                 exclude: AbstractSet[str] = frozenset()) -> tuple[str, list[str]]: ...


def one_guess(deps: NodeDeps, text: str, intent: str, confidence: float,
              exclude: AbstractSet[str] = frozenset()) -> tuple[str, list[str]]:
    """The intent as decided, with no candidates beside it (designs without ``unsure_offer``)."""
    return intent, []


def unsure_offer(deps: NodeDeps, text: str, intent: str, confidence: float,
                 exclude: AbstractSet[str] = frozenset()) -> tuple[str, list[str]]:
    """When no keyword rule decided (confidence below 1), the candidate intents whose tools are offered
    together (knob ``unsure_offer``): a paraphrase the rules miss is not routed to one wrong guess. An
    unknown message with candidates becomes the likeliest one; without any it stays unknown (and is asked
    about). Intents in ``exclude`` are not candidates, nor a task that exists to change something when the
    message asks to be told something and names no change as a request (``nodes.asking``)."""
    if confidence >= 1.0 or is_low_information(text):
        return intent, []
    if asks_without_change(deps.domain, deps.registry, text):  # "how many of my orders were cancelled?"
        exclude = {*exclude, *change_intents(deps.domain, deps.registry)}
    found = [c for c in candidates(deps.domain, text, deps.embedder) if c not in exclude]
    if intent in exclude:
        intent = found[0] if found else UNKNOWN
    if intent == UNKNOWN and found:
        intent = found[0]
    return intent, list(dict.fromkeys([intent, *found])) if found else []


def unsure_for(knobs: Knobs) -> UnsureStep:
    """The design's step for a message no rule decided, chosen from the knob ``unsure_offer``."""
    return unsure_offer if knobs.unsure_offer else one_guess


# "Never mind", "forget it", "算了": the customer takes back what they were asked about.
_TAKE_BACK = re.compile(r"\b(?:never\s*mind|forget (?:it|that|about it|the \w+)|scratch that|cancel (?:that|this|my) request|"
                        r"don'?t bother|no need(?: to)?|i changed my mind|not anymore)\b|算了|不用了|不要了|不需要了|别弄了|不办了",
                        re.I)


def still_asked(text: str) -> str:
    """What a message still asks once it took something back: the words after its last take-back ("cancel
    ORD-10181... never mind, keep it. Just tell me what it cost" asks what it cost); the whole message when it
    takes nothing back or nothing follows."""
    found = list(_TAKE_BACK.finditer(text))
    if not found:
        return text
    last = found[-1]
    # the rest of the take-back's own clause is what it takes back ("don't bother with the return, ...")
    rest = re.split(r"[,.;:!?，。；：！？…—–]", text[last.end():], maxsplit=1)[-1]
    return rest if re.search(r"[A-Za-z]{2,}\W+(?:\w+\W+)*[A-Za-z]{2,}|[\u4e00-\u9fff]{4,}", rest) else text


def takes_back(domain: Domain, state: HarnessState, text: str) -> bool:
    """Whether the message withdraws the open task (one waiting for a slot): a take-back phrase, or the task's
    own keyword negated ("don't reset it"), and no other request in it."""
    previous = state.get("intent")
    if not previous or not state.get("missing_slots") or domain.kind(previous) not in ("task", "escalate"):
        return False
    t = rule_text(text)
    if any(keyword_hit(t, w.lower()) for i in domain.intents if i.kind != "conversational" and i.name != previous
           for ws in i.rules.values() for w in ws):
        return False  # a request of its own ("don't reset it, unlock it instead")
    declared = domain.intent(previous)
    words = [w.lower() for ws in (declared.rules.values() if declared else ()) for w in ws]
    # the verbs of the task's changes count too: "don't reset it" for reset_password
    words += [first_word(name) for name in domain.route(previous).tools if first_word(name) in WRITES]
    negated = any(keyword_pattern(w).search(t) and not keyword_hit(t, w) for w in words)
    return negated or bool(_TAKE_BACK.search(t))


def finish(deps: NodeDeps, state: HarnessState, update: StateUpdate, intent: str,
           confidence: float, exclude: AbstractSet[str] = frozenset()) -> StateUpdate:
    domain = deps.domain
    text = last_human_text(state.get("messages") or [])
    if takes_back(domain, state, text):
        # the task waiting for an answer is dropped: nothing was done, nothing more is asked
        update.update(intent="request_dropped", intent_kind="conversational", intent_confidence=1.0,
                      missing_slots=[], slots={"__reset__": True}, offer_intents=[], goal_tools=[],
                      unknown_streak=0, refused=None, pending_change=None, confirmed_change=None)
        return update
    switched = continue_or_switch(domain, state, intent, confidence, text)
    waiting = state.get("missing_slots") or []
    # a lookup only: a change ("return my order") still needs the customer to say which record
    browse = (browse_intent(domain, waiting) if waiting and not_known(text)
              and not set(domain.route(state.get("intent")).tools) & domain.changing_tools()
              and not answered_slots(domain, state.get("intent"), text, waiting) else None)
    if browse:  # "which ticket?" - "I don't know": their tickets, listed, not the same question again
        switched = intent = browse
    unsure = unsure_for(deps.design.knobs)
    intent, offer = (unsure(deps, still_asked(text), switched, confidence, exclude) if switched == intent
                     else (switched, []))
    update["offer_intents"] = offer
    carried = domain.follow_up(text, state.get("intent"), state.get("slots") or {}) if domain.follow_up else None
    if carried is not None:  # "what about in black?": the previous request, refined
        intent, confidence = carried[0], 1.0
        update["offer_intents"] = []
    same_task = intent == state.get("intent") and bool(state.get("missing_slots"))
    pairs = requests_in(domain, still_asked(text)) if carried is None and not same_task_waiting(state) else []
    asked = [i for i, _ in pairs]
    if len(asked) > 1:  # "Where is ORD-10144? And what coupons can I use?": each, in order
        intent, confidence = asked[0], 1.0
        update.update(offer_intents=[], request_intents=asked, request_parts=[p for _, p in pairs],
                      goal_groups=[goal_tools(deps, i, [], state.get("messages") or []) for i in asked])
    kind = domain.kind(intent)
    update.update(intent=intent, intent_confidence=confidence, intent_kind=kind,
                  goal_tools=goal_tools(deps, intent, update.get("offer_intents") or [], state.get("messages") or []))
    if carried is not None:
        update["slots"] = {"__reset__": True, **carried[1]}
    elif not same_task:
        update["slots"] = {"__reset__": True}
        if kind != "conversational" and not browse:  # a list for the task asked before: its anchor stays
            human = next((m for m in reversed(state.get("messages") or []) if isinstance(m, HumanMessage)), None)
            update["task_anchor_id"] = human.id if human is not None else None
    streak = (state.get("unknown_streak") or 0) + 1 if intent == UNKNOWN else 0
    update["unknown_streak"] = streak
    update["missing_slots"] = domain.missing_slots(intent, {} if not same_task else state.get("slots") or {})
    return refuse_for_role(deps, state, settle_pending_change(domain, state, update, text))


# Where one request ends and the next begins: a sentence end, or "and also" / "另外" between two asks.
_REQUEST_BREAK = re.compile(r"(?<=[?？.!。！；;])\s*|\s*(?:,\s*)?\b(?:and also|also|and then|plus|as well as)\b\s*|"
                            r"\s*(?:另外|还有|顺便|并且|然后|同时)\s*", re.I)


_AND = re.compile(r"\s+and\s+", re.I)


def several_requests(domain: Domain, text: str) -> list[str]:
    """The task intents a message asks for, in order (``requests_in``); one or none means a single request."""
    return [intent for intent, _ in requests_in(domain, text)]


def requests_in(domain: Domain, text: str) -> list[tuple[str, str]]:
    """The task intents a message asks for, one per part that a keyword rule decides, in the message's order
    (a second mention of the same task is the same request); one or none means a single request. A part
    after a plain "and" that no keyword decides counts by the identifier it names only when that kind of
    record is new to the message ("cancel ORD-10191 and put WELCOME10 on my account" asks two things;
    "cancel ORD-10191 and ORD-10192" one)."""
    found: list[tuple[str, str]] = []
    named: set[str] = set()
    for part in _REQUEST_BREAK.split(text):
        if not part or not part.strip():
            continue
        for i, piece in enumerate(_AND.split(part)):
            kinds = set(domain.entities_in(piece))
            hit = rule_intent(domain, piece)
            if (hit is None or domain.kind(hit) not in ("task", "escalate")) and (i == 0 or kinds - named):
                hit = hinted_intent(domain, piece)  # "the status of INC0012346?": the id names the task
            named |= kinds
            if hit and domain.kind(hit) in ("task", "escalate") and hit not in [f for f, _ in found]:
                found.append((hit, piece))
    return found


def same_task_waiting(state: HarnessState) -> bool:
    """A question of ours is open (a slot or a confirmation): the message answers it first."""
    return bool(state.get("missing_slots") or state.get("pending_change"))


def route_open_to(deps: NodeDeps, intent: str | None, role: str) -> bool:
    """Whether ``role`` may start the task: the route's own roles allow it, and at least one of its tools does
    (a route whose every tool is for agents cannot do anything for a customer)."""
    route = deps.domain.route(intent)
    if route.roles is not None and role not in route.roles:
        return False
    specs = [s for t in route.tools if (s := deps.registry.get(t)) is not None]
    return not specs or any(s.roles is None or role in s.roles for s in specs)


def refuse_for_role(deps: NodeDeps, state: HarnessState, update: StateUpdate) -> StateUpdate:
    """A task the user's role cannot do is refused at once, with the reason and what to do instead (the
    domain's ``refuse_<intent>`` phrase, else the core's ``not_for_role``), before any slot is asked for: a
    customer never types a PIN for a step that was never going to run. The refusal offers a person; a bare yes
    to it takes that offer (``answered_again``)."""
    intent = update.get("intent")
    role = str((state.get("user") or {}).get("role") or "")
    if update.get("intent_kind") not in ("task", "escalate") or route_open_to(deps, intent, role):
        update["refused"] = None
        return update
    update.update(intent_kind="conversational", missing_slots=[], offer_intents=[],
                  refused={"intent": intent, "turn": update.get("turn") or (state.get("turn") or 0) + 1})
    return update


def open_goal(deps: NodeDeps, messages: list[Any]) -> list[str]:
    """The goal of a domain's one open task (no intents, no routes): the changing tools when the tool most
    relevant to the request changes the world ("renew my loan": a member lookup on the way is not the goal),
    else that most relevant tool alone (a lookup of the customer on the way to their order is not the goal)."""
    specs = [s for n in deps.registry.names() if (s := deps.registry.get(n)) is not None]
    if not specs:
        return []
    requests = [m.text for m in reversed(messages) if isinstance(m, HumanMessage)][:2]
    if requests and asks_without_change(deps.domain, deps.registry, requests[0]):
        # "Show me the last commit": to be told something, so a change is no goal (git_commit is not)
        specs = [s for s in specs if not s.changes_state] or specs
    best = ranked(requests, specs, embedder=deps.embedder)[0] if requests else specs[0]
    return [s.name for s in specs if s.changes_state] if best.changes_state else [best.name]


def goal_tools(deps: NodeDeps, intent: str | None, unsure: list[str], state_messages: list[Any] | None = None
               ) -> list[str]:
    """The tools a task's route exists for: its changing ones when it has any (a lookup on the way to a change
    is not the goal); else the ones that take an identifier (``get_product(product_id)``, where
    ``search_products(query)`` only finds the id); else all of them. For an unsure step, every candidate's."""
    if not deps.domain.intents:
        return open_goal(deps, state_messages or [])
    out: list[str] = []
    text = next((m.text for m in reversed(state_messages or []) if isinstance(m, HumanMessage)), "")
    for name in unsure or [intent]:
        specs = [s for t in deps.domain.route(name).tools if (s := deps.registry.get(t)) is not None]
        changing = [s for s in specs if s.changes_state]
        if changing and asks_about_changes(deps.domain, text, changing):
            changing = []  # "What coupons can I use?" asks for the list, not for a coupon to be claimed
        reading = [s for s in specs if not s.changes_state]
        targeted = [s.name for s in reading if deps.domain.tool_entities(s)]
        out += [s.name for s in changing] or targeted or [s.name for s in reading or specs]
    return list(dict.fromkeys(out))


def settle_pending_change(domain: Domain, state: HarnessState, update: StateUpdate, text: str) -> StateUpdate:
    """A change the last reply asked to confirm is run on an explicit yes, dropped on anything else.

    The yes resumes the task the change belonged to (its intent and slots), and the action node runs the
    confirmed calls themselves, not whatever the model would make of "yes". A no is answered with the core's
    "nothing changed"; any other message is a new request, and the change is forgotten.
    """
    pending = state.get("pending_change")
    update.update(pending_change=None, confirmed_change=None)
    if not pending:
        return answered_again(domain, state, update, text)
    answer = answer_to_confirmation(text)
    if answer in ("yes", "no"):
        update["offer_intents"] = []  # the answer settles the change: nothing to guess
        update["settled_change"] = {"answer": answer, "turn": (state.get("turn") or 0) + 1}
    if answer == "yes":
        update.update(goal_tools=[c["name"] for c in pending.get("calls") or []])  # the confirmed calls are the goal
        update.update(intent=pending["intent"], intent_kind=domain.kind(pending["intent"]), intent_confidence=1.0,
                      slots={"__reset__": True, **(pending.get("slots") or {})}, missing_slots=[], unknown_streak=0,
                      confirmed_change=pending)
        if then := pending.get("then"):  # the message's other requests, after the confirmed change
            update.update(request_intents=[pending["intent"], *(i for i, _ in then)],
                          goal_groups=[update.get("goal_tools") or [], *(g for _, g in then)])
    elif answer == "no":
        update.update(intent="change_dropped", intent_kind="conversational", intent_confidence=1.0, missing_slots=[],
                      unknown_streak=0)
    return update


def answered_again(domain: Domain, state: HarnessState, update: StateUpdate, text: str) -> StateUpdate:
    """A yes or no right after the message that settled a change (a double tap, two answers racing) answers
    nothing new: the customer hears that the earlier answer stands, never "you're welcome" or a second change.
    A yes or no with no change asked about at all hears that, and what the bot can help with."""
    settled = state.get("settled_change") or {}
    # only a bare answer ("no", "yes please", "不用了"): "please don't transfer me" is a request, not a no
    answer = answer_to_confirmation(text) if _bare(text) else "other"
    refused = state.get("refused") or {}
    if answer in ("yes", "no") and refused and refused.get("turn") == (state.get("turn") or 0):
        # an answer to the refusal's offer of a person: taken, or declined politely
        person = next((i.name for i in domain.intents if i.kind == "to-human"), "to_human")
        update.update(intent=person if answer == "yes" else "offer_declined",
                      intent_kind="to-human" if answer == "yes" else "conversational", intent_confidence=1.0,
                      missing_slots=[], unknown_streak=0, offer_intents=[])
        return update
    if answer not in ("yes", "no") or (settled.get("turn") != (state.get("turn") or 0)
                                       and update.get("intent_kind") != "conversational"):
        return update
    if settled.get("turn") != (state.get("turn") or 0):
        intent = "nothing_to_confirm"
    else:
        intent = "change_already_made" if settled.get("answer") == "yes" else "change_already_dropped"
    update.update(intent=intent, intent_kind="conversational", intent_confidence=1.0, missing_slots=[],
                  unknown_streak=0, offer_intents=[])
    return update


def _bare(text: str) -> bool:
    """A message short enough to be only an answer: four words at most, or six characters of Chinese."""
    words = re.findall(r"[A-Za-z']+", text)
    cjk = re.findall(r"[\u4e00-\u9fff]", text)
    return len(words) <= 4 and len(cjk) <= 6


def understood(deps: NodeDeps, text: str) -> tuple[str, float]:
    """The classifier's intent for what the message still asks (``still_asked``); when that names nothing, the
    record the whole message is about ("...never mind. When was it ordered?" after an order id)."""
    asked = still_asked(text)
    intent, confidence = classify(deps.domain, asked, embedder=deps.embedder)
    if intent == UNKNOWN and asked != text and (hint := hinted_intent(deps.domain, text)):
        return hint, 0.6
    return intent, confidence


@builtin_variant("intent", "classifier")
class ClassifierIntent:
    embeds_examples = True  # an unsure message is compared with the domain's examples (lg_harness/graphs/warm.py)

    def __init__(self, deps: NodeDeps) -> None:
        self.deps = deps

    def __call__(self, state: HarnessState, config: RunnableConfig) -> StateUpdate:
        update = start_turn(self.deps, state, config)
        intent, confidence = understood(self.deps, last_human_text(state.get("messages") or []))
        return finish(self.deps, state, update, intent, confidence)


def parse_intent_json(text: str, labels: list[str]) -> tuple[str, float]:
    match = re.search(r"\{.*\}", text or "", re.S)
    try:
        data = json.loads(match.group(0)) if match else {}
    except json.JSONDecodeError:
        data = {}
    label = data.get("intent")
    intent = label if isinstance(label, str) and label in labels else UNKNOWN
    try:
        confidence = float(data.get("confidence", 0.5))
    except (TypeError, ValueError):
        confidence = 0.5
    return intent, min(max(confidence, 0.0), 0.99)


@builtin_variant("intent", "llm")
class LLMIntent:
    described = False  # the bare label list (see ``classify_prompt``)

    def __init__(self, deps: NodeDeps) -> None:
        self.deps = deps

    def classify(self, state: HarnessState, update: StateUpdate,
                 exclude: AbstractSet[str] = frozenset()) -> tuple[str, float]:
        """The model's label for the message, never one in ``exclude``."""
        text = last_human_text(state.get("messages") or [])
        if self.described:
            text = still_asked(text)
        prompt = classify_prompt(self.deps.domain, self.described, exclude)
        try:
            reply, update["turn_stats"] = call_model(
                self.deps, [SystemMessage(prompt), HumanMessage(text)], update.get("turn_stats", {}),
                step="data", schema=label_schema(self.deps.domain, exclude))  # start_turn set them
        except ModelCallFailed as err:
            update["turn_stats"] = err.stats
            return UNKNOWN, 0.0
        return parse_intent_json(reply.text, [n for n in self.deps.domain.intent_names() if n not in exclude])

    def __call__(self, state: HarnessState, config: RunnableConfig) -> StateUpdate:
        update = start_turn(self.deps, state, config)
        intent, confidence = self.classify(state, update)
        return finish(self.deps, state, update, intent, confidence)


@builtin_variant("intent", "hybrid")
class HybridIntent(LLMIntent):
    """The classifier where it is sure (a keyword phrase, an acknowledgement), the model where it is not: a
    single keyword ("ticket", "密码"), no keyword at all, or rules that compete. A message that only answers
    the question the open task asked ("E1026" after "your employee id?") needs no model. The model reads the
    intents' descriptions and what the message still asks (``still_asked``)."""

    embeds_examples = True  # where the model is not asked, the classifier compares with the examples
    described = True

    def __call__(self, state: HarnessState, config: RunnableConfig) -> StateUpdate:
        update = start_turn(self.deps, state, config)
        text = last_human_text(state.get("messages") or [])
        intent, confidence = understood(self.deps, text)
        answers = self.answers_waiting(state, intent, text)
        # A question that names no change as a request is not a change ("how many of my orders were cancelled?")
        changes = (change_intents(self.deps.domain, self.deps.registry) if not answers and
                   asks_without_change(self.deps.domain, self.deps.registry, still_asked(text)) else frozenset())
        if intent in changes:
            confidence = min(confidence, 0.6)  # the model chooses, among the others
        if confidence < 1.0 and not answers:
            label, sure = self.classify(state, update, changes)
            if label != UNKNOWN:  # the model's unknown keeps the rules' candidate
                intent, confidence = label, min(sure, 0.9)
        if intent in changes:  # the model said unknown: the likeliest candidate that changes nothing
            others = [c for c in candidates(self.deps.domain, still_asked(text), self.deps.embedder) if c not in changes]
            intent = others[0] if others else UNKNOWN
        return finish(self.deps, state, update, intent, confidence, changes)

    def answers_waiting(self, state: HarnessState, intent: str, text: str) -> bool:
        waiting = state.get("missing_slots") or []
        previous = state.get("intent")
        return bool(waiting and previous and answered_slots(self.deps.domain, previous, text, waiting)
                    and (intent in (previous, UNKNOWN) or _bare(text)))


@builtin_variant("intent", "passthrough")
class PassthroughIntent:
    """No classification: every message goes to the tool loop as one open task (a framework's default agent)."""

    def __init__(self, deps: NodeDeps) -> None:
        self.deps = deps

    def __call__(self, state: HarnessState, config: RunnableConfig) -> StateUpdate:
        update = start_turn(self.deps, state, config)
        update.update(intent=OPEN, intent_kind="task", intent_confidence=0.0, unknown_streak=0, missing_slots=[],
                      slots={"__reset__": True})
        return settle_pending_change(self.deps.domain, state, update, last_human_text(state.get("messages") or []))
