"""Action: one model call with the tools of the routed intent (``action``, the decision), then the tool calls
it asked for (``execute``), two graph nodes so that what was decided is saved before anything runs.

Variant ``tool_loop``: tools masked by intent and role (at most ``max_tools_offered``), every call
validated before it runs, entity arguments (typed in the tool schema) checked against what the
conversation actually contains,
identical repeats intercepted, changing tools keyed for idempotency by thread, message and call signature.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig

from lg_harness.core.knobs import Knobs
from lg_harness.core.routing import counters
from lg_harness.core.state import HarnessState, StateUpdate, ToolCallRecord, TurnStats, acting_user
from lg_harness.memory.context import build_context
from lg_harness.memory.known_ids import ids_of_outcomes
from lg_harness.nodes.base import ModelCallFailed, NodeDeps, builtin_variant, thread_id
from lg_harness.nodes.confirm import confirmation_question, precheck_outcome
from lg_harness.nodes.goal_stop import GoalStop, kept, set_aside_for, step_of
from lg_harness.nodes.listing import listed, listings_for
from lg_harness.nodes.phrases import say
from lg_harness.nodes.prompt_layout import answers_results, layout_for
from lg_harness.nodes.retry_declined import declines_for
from lg_harness.nodes.rewrites import rewrites_for, rewritten
from lg_harness.nodes.screens import AwaitYes, Screening, screens_for
from lg_harness.obs.tracing import TOOL_LOGGERS, span_event
from lg_harness.tools.cleaning import clean_error, clean_result
from lg_harness.tools.context import ToolContext
from lg_harness.tools.errors import ToolError
from lg_harness.tools.executor import ToolOutcome
from lg_harness.tools.ledger import LEDGER_RESOURCE

tool_log = logging.getLogger("harness.tools")


def cleaned_text(o: ToolOutcome) -> str:
    """What the model reads of an outcome: cleaned and labelled as data or error."""
    if o.status == "ok":
        return clean_result(o.result, tool=o.name)
    return clean_error(o.error_type or "error", o.error or "", tool=o.name)


def raw_text(o: ToolOutcome) -> str:
    """The raw payload (designs that do not clean results)."""
    return o.content()


def results_text_for(knobs: Knobs) -> Callable[[ToolOutcome], str]:
    """How the model reads a tool's outcome, chosen once from the knob ``clean_results``."""
    return cleaned_text if knobs.clean_results else raw_text


def call_signature(name: str, args: dict[str, Any]) -> str:
    """Canonical form of a call: same tool and same arguments give the same signature."""
    return name + ":" + json.dumps(args, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def decision_key(state: HarnessState, config: RunnableConfig, rnd: int) -> str:
    """What one round of one message is: the thread, the message (its number and its text) and the round.

    The same round of the same message, run again after a crash, has the same key; a different message
    (another text, or the next turn) never does."""
    text = next((m.content for m in reversed(state.get("messages") or []) if isinstance(m, HumanMessage)), "")
    digest = hashlib.sha256(json.dumps(text, ensure_ascii=False).encode()).hexdigest()[:16]
    return f"{thread_id(config)}:{state.get('turn') or 0}:{rnd}:{digest}"


_ID_WORDS = frozenset({"id", "ids", "number", "no", "code", "ref", "reference", "key"})


# Failures that say nothing about the arguments: the same call may work later (timeouts, 429, 5xx).
RETRYABLE_LATER = frozenset({"timeout", "transient", "rate_limited", "malformed", "duplicate_call"})


def earlier_outcome(record: Mapping[str, Any]) -> ToolOutcome:
    """A logged call as an outcome again (its result, or its error), to answer a repeat without running it."""
    result = json.loads(record["result_digest"]) if record.get("result_digest") else None
    return ToolOutcome(call_id=record.get("id", ""), name=record["name"], args=record.get("args") or {},
                       status=record.get("status", "ok"), result=result, error_type=record.get("error_type"),
                       error=record.get("error"), exception=record.get("exception"))


def with_call_ids(ai: AIMessage, log: Sequence[Mapping[str, Any]], rnd: int) -> AIMessage:
    """``ai`` with one distinct id per tool call: providers may send none, or one id (``call_0``) for several
    calls. Results are paired with calls by these ids, and the change each call makes is keyed by what it is,
    so an id only has to be unique within the message."""
    seen = {r.get("id") for r in log}
    calls, changed = [], False
    for index, call in enumerate(ai.tool_calls):
        cid = call.get("id")
        if not cid or cid in seen:
            cid, changed = f"{cid or 'call'}~r{rnd}.{index}", True
        seen.add(cid)
        calls.append({**call, "id": cid})
    return ai.model_copy(update={"tool_calls": calls}) if changed else ai


def is_empty(result: Any, empty_keys: tuple[str, ...]) -> bool:
    if result in (None, "", [], {}):
        return True
    if isinstance(result, dict):
        lists = [v for k, v in result.items() if k in empty_keys]
        return bool(lists) and all(not v for v in lists)
    return False



def requests_after(state: HarnessState, owner: str | None) -> list[list[Any]]:
    """The requests of this message still to do once the change put to the customer is settled, each with its
    goal tools ("cancel ORD-10191 and put WELCOME10 on my account": the coupon, after the cancellation's yes)."""
    worked = {r.get("name") for r in state.get("tool_log") or [] if r.get("status") == "ok"}
    asked = state.get("request_intents") or []
    groups = state.get("goal_groups") or [[] for _ in asked]
    return [[i, list(g)] for i, g in zip(asked, groups, strict=False) if i != owner and not set(g) & worked]

@builtin_variant("action", "tool_loop")
class ToolLoopAction:
    def __init__(self, deps: NodeDeps) -> None:
        self.deps = deps
        self.knobs = deps.design.knobs
        # what a call meets before it runs, composed once from the design (lg_harness/nodes/screens.py)
        self.screens = screens_for(self.knobs, deps.domain, deps.registry)
        self.rewrites = rewrites_for(self.knobs, deps.domain, deps.registry)
        self.declines = declines_for(self.knobs)
        self.listings = listings_for(self.knobs)
        self.layout = layout_for(deps)
        self.awaits_yes = next((s for s in self.screens if isinstance(s, AwaitYes)), None)
        self.model_text = results_text_for(self.knobs)
        # what a model step is not offered again, and whether the route's delivered call ends the loop
        self.set_aside = set_aside_for(self.knobs, deps.domain, deps.registry)
        self.goal_stop = next((f for f in self.set_aside if isinstance(f, GoalStop)), None)

    def offered(self, state: HarnessState, config: RunnableConfig | None = None):
        """The tools this model step may call: the request's, less what the design's filters set aside."""
        return kept(step_of(state, self.deps.domain), self.offer(state, config), self.set_aside)

    def delivered(self, state: HarnessState) -> bool:
        """The route's call delivered: the next step is the answer (designs with a goal stop only)."""
        return self.goal_stop is not None and self.goal_stop.delivered(step_of(state, self.deps.domain))

    def offer(self, state: HarnessState, config: RunnableConfig | None = None):
        if self.delivered(state):  # the route's call delivered: the next step is the answer, in words
            return []
        return self.listing(state, config)

    def listing(self, state: HarnessState, config: RunnableConfig | None = None):
        """The tools of this message's request (what ``offer`` offers until the goal is reached)."""
        return listed(self, self.listings, state, acting_user(state, config).get("role", "customer"))

    def __call__(self, state: HarnessState, config: RunnableConfig) -> StateUpdate:
        """Decide: the calls this round makes (the user's confirmed ones, the ones already decided before a
        crash, or the model's), saved as ``planned_calls`` for ``execute``; or the model's answer."""
        began = self.deps.clock()
        stats = counters.next_round(state.get("turn_stats") or {})
        messages, account = build_context(state, self.deps.design, self.deps.domain,
                                          strategies=self.deps.strategies)
        confirmed = self.confirmed_calls(state)
        try:
            ai, emitted, stats = self.decide(state, config, messages, stats, confirmed)
        except ModelCallFailed as err:
            return self.busy(state, counters.timed(counters.after_failed_call(stats, err.stats), began,
                                                   self.deps.clock()))
        stats = counters.timed(stats, began, self.deps.clock())
        # Usage and provider metadata already live in turn_stats and the audit log: keep checkpoints lean.
        stored = ai.model_copy(update={"response_metadata": {}, "usage_metadata": None, "additional_kwargs": {}})
        plan = ({"round": stats.get("rounds", 0), "calls": [dict(c) for c in ai.tool_calls], "emitted": emitted,
                 "confirmed": bool(confirmed)} if ai.tool_calls else None)
        return {"messages": [stored], "turn_stats": stats, "phase": "action", "context_account": account,
                "planned_calls": plan}

    def decide(self, state: HarnessState, config: RunnableConfig, messages: list[Any], stats: TurnStats,
               confirmed: list[dict[str, Any]]) -> tuple[AIMessage, list[dict[str, Any]], TurnStats]:
        """This round's decision, the arguments as emitted, and the counters after it (raises
        ``ModelCallFailed`` when the model could not be reached)."""
        rnd = stats.get("rounds", 0)
        if confirmed:  # the user said yes to exactly these calls: run them, not what the model makes of "yes"
            return (*self.as_planned(state, AIMessage("", tool_calls=confirmed), rnd), stats)
        key = decision_key(state, config, rnd)
        if (earlier := self.decided(key)) is not None:  # decided before a crash: never ask the model again
            return AIMessage(earlier["content"], tool_calls=earlier["calls"]), earlier["emitted"], stats
        offered = self.offered(state, config)
        # the design's layout (nodes.prompt_layout): with a kept prefix, a step that must call or may call again
        # after a lookup lists every tool and extends a prefix every such call shares; an answer reads its message
        may_call = bool(offered) and (self.declines.ready(state, self.deps) or answers_results(state))
        messages, shown = self.layout.step(state, config, messages, may_call)
        ai, stats = self.declines.call(self.deps, state, messages, stats, offered, shown)
        if ai.tool_calls and self.delivered(state):
            # offered no tool and calling one anyway (a model without a grammar): nothing more runs; the
            # answer step writes the reply from what the route's call returned
            span_event("guard.stop", reason="goal reached: the route's call delivered, calls after it are not run",
                       rounds=stats.get("rounds", 0))
            ai = AIMessage("")
        ai, emitted = self.as_planned(state, ai, stats.get("rounds", 0))
        return self.record_decision(key, thread_id(config), ai, emitted), emitted, stats

    def busy(self, state: HarnessState, stats: TurnStats) -> StateUpdate:
        """The model could not be reached: the 'busy' reply goes out and the turn ends (``retryable``)."""
        busy = say("busy", (state.get("fact_card") or {}).get("language", "en"), self.deps.domain)
        return {"messages": [AIMessage(busy)], "reply": busy, "phase": "action", "turn_stats": stats,
                "check": {"ok": True, "retryable": True}}

    def as_planned(self, state: HarnessState, ai: AIMessage, rnd: int) -> tuple[AIMessage, list[dict[str, Any]]]:
        """The model's calls with distinct ids and canonical arguments, and the arguments as it emitted them."""
        # The calls exactly as the model emitted them: an evaluation judges the model's arguments before any
        # rewrite below, and the harness's arguments at the tool boundary after it (evals.metrics).
        ai = with_call_ids(ai, state.get("tool_log") or [], rnd)
        emitted = [dict(c.get("args") or {}) for c in ai.tool_calls]
        if self.rewrites and ai.tool_calls:
            ai = ai.model_copy(update={"tool_calls": [
                {**c, "args": rewritten(c["name"], c.get("args") or {}, self.rewrites, self.entity_args(c["name"]), state)}
                for c in ai.tool_calls]})
        return ai, emitted

    def decided(self, key: str) -> dict[str, Any] | None:
        ledger = self.deps.resources.get(LEDGER_RESOURCE)
        return ledger.decision(key) if ledger is not None else None

    def record_decision(self, key: str, thread: str, ai: AIMessage, emitted: list[dict[str, Any]]) -> AIMessage:
        """Keep a decision that will change something (a changing call that runs without asking) in the
        ledger before anything runs; returns the decision that stands (another process may have made it)."""
        ledger = self.deps.resources.get(LEDGER_RESOURCE)
        if ledger is None or not any(self.changes_now(c) for c in ai.tool_calls):
            return ai
        content = ai.content if isinstance(ai.content, str) else json.dumps(ai.content, ensure_ascii=False)
        stands = ledger.decide(key, thread, {"content": content, "emitted": emitted,
                                             "calls": [{"name": c["name"], "args": c.get("args") or {},
                                                        "id": c.get("id"), "type": "tool_call"}
                                                       for c in ai.tool_calls]})
        return ai.model_copy(update={"content": stands["content"], "tool_calls": stands["calls"]})

    def changes_now(self, call: Mapping[str, Any]) -> bool:
        """A call to a changing tool that runs in this message (not one put to the user first)."""
        spec = self.deps.registry.get(call["name"])
        return spec is not None and spec.changes_state and not self.needs_confirmation(call)

    def execute(self, state: HarnessState, config: RunnableConfig) -> StateUpdate:
        """Run the planned calls (screened first), log them and hand their results to the next round."""
        began = self.deps.clock()
        plan = state.get("planned_calls") or {}
        stats = state.get("turn_stats") or {}
        ai = AIMessage("", tool_calls=plan.get("calls") or [])
        outcomes, reached = self.screen_and_run(state, ai, config, confirmed=bool(plan.get("confirmed")))
        if self.goal_stop is not None:  # the next step picks a hit by its id: the customer's best match first
            outcomes = [self.goal_stop.ranked(o, state) for o in outcomes]
        self.log_calls(outcomes)
        log = list(state.get("tool_log") or [])
        earlier = {json.dumps(r.get("result_digest")) for r in log}
        for o, emitted_args, to_tool in zip(outcomes, plan.get("emitted") or [], reached, strict=True):
            record = o.record()
            record["id"] = record.pop("call_id")
            digest = o.content() if o.status == "ok" else None
            log.append(ToolCallRecord(**record, signature=call_signature(o.name, o.args), round=plan.get("round", 0),
                                      empty=o.status == "ok" and (is_empty(o.result, self.deps.domain.empty_keys)
                                                                    or json.dumps(digest) in earlier),
                                      result_digest=digest, emitted_args=emitted_args, reached_tool=to_tool))
        stats = counters.timed(counters.after_calls(stats, [o.status for o in outcomes]), began, self.deps.clock())
        tool_messages: list[AnyMessage] = [
            ToolMessage(self.model_text(o), tool_call_id=o.call_id, name=o.name,
                        status="success" if o.status == "ok" else "error") for o in outcomes]
        update: StateUpdate = {"messages": tool_messages, "tool_log": log, "turn_stats": stats, "phase": "action",
                               "confirmed_change": None, "planned_calls": None,
                               "known_ids": ids_of_outcomes(outcomes, self.deps.domain.entity_types)}
        waiting = [c for c, o in zip(ai.tool_calls, outcomes, strict=True) if o.error_type == "needs_confirmation"]
        if waiting:
            update.update(self.ask_to_confirm(state, waiting))
            update["messages"] = [*update["messages"], AIMessage(update.get("reply", ""))]  # ask_to_confirm sets it
        return update

    def confirmed_calls(self, state: HarnessState) -> list[dict[str, Any]]:
        """The calls this message's yes confirmed, on the turn's first round only (they run once)."""
        pending = state.get("confirmed_change") or {}
        if not pending or (state.get("tool_log") or []):
            return []
        return [{"name": c["name"], "args": dict(c.get("args") or {}), "id": f"confirmed~{i}", "type": "tool_call"}
                for i, c in enumerate(pending.get("calls") or [])]

    def needs_confirmation(self, call: Mapping[str, Any]) -> bool:
        """A call this design puts to the customer before it runs (``screens.AwaitYes``)."""
        return self.awaits_yes is not None and self.awaits_yes.wants(call)

    def ask_to_confirm(self, state: HarnessState, calls: Sequence[Mapping[str, Any]]) -> StateUpdate:
        """End the turn with what would change; the next message's yes runs exactly ``calls``."""
        lang = (state.get("fact_card") or {}).get("language") or "en"
        text = confirmation_question(calls, self.deps.domain, lang, self.deps.registry)
        span_event("change.awaiting_confirmation", tools=",".join(c["name"] for c in calls))
        owner = self.owning_intent(state, calls)
        pending = {"calls": [{"name": c["name"], "args": dict(c.get("args") or {})} for c in calls],
                   "intent": owner, "slots": dict(state.get("slots") or {}), "turn": state.get("turn") or 0,
                   "then": requests_after(state, owner)}
        # "retryable" ends the turn here (the rule `action -> END when busy`, lg_harness/core/routing/route.py): the reply
        # has gone out, as for a busy model.
        return {"reply": text, "pending_change": pending, "phase": "confirm", "check": {"ok": True, "retryable": True}}

    def owning_intent(self, state: HarnessState, calls: Sequence[Mapping[str, Any]]) -> str | None:
        """The intent the yes resumes: the turn's, or the unsure step's candidate or the message's other request
        whose route has these calls (its tools are the ones offered again when the change runs)."""
        intent, names = state.get("intent"), {c["name"] for c in calls}
        route = self.deps.domain.route
        if names <= set(route(intent).tools):
            return intent
        others = [*(state.get("offer_intents") or []), *(state.get("request_intents") or [])]
        return next((i for i in others if names <= set(route(i).tools)), intent)

    def log_calls(self, outcomes: list[ToolOutcome]) -> None:
        audit = self.deps.resources.get("audit")
        for o in outcomes:
            TOOL_LOGGERS[self.knobs.logger](tool_log, o)
            if audit is not None:
                audit.record_tool_outcome(o)

    def screen(self, state: HarnessState, call: Mapping[str, Any], done: dict[str, ToolOutcome],
               offered: frozenset[str] | None = None, confirmed: bool = False) -> ToolOutcome | None:
        """An outcome that replaces running the call (the first screen's that answers it), or None to run it."""
        screening = Screening(state, done, offered, confirmed, self)
        sig = call_signature(call["name"], call.get("args") or {})
        return next((o for screen in self.screens if (o := screen(screening, call, sig)) is not None), None)

    def route_tools(self, intent: str | None, goal: list[str]) -> list[str]:
        """A route's tools for a request; when its goal only reads ("What coupons can I use?" on a route that
        can also claim one), without the changes: nothing asked for them."""
        names = list(self.deps.domain.route(intent).tools)
        specs = {n: s for n in names if (s := self.deps.registry.get(n)) is not None}
        if goal and not any(specs[g].changes_state for g in goal if g in specs):
            return [n for n in names if n not in specs or not specs[n].changes_state]
        return names

    def lookup_showing(self, args: list[str], caller: str, offered: frozenset[str] | None) -> str | None:
        """An offered tool that only reads and says it shows what ``args`` name: its name or description
        uses the argument's noun (``loan_id`` -> "loan": ``find_member`` lists "loans, with loan ids"), or the
        noun of the kind of record it takes (``code`` of a coupon -> "coupon": ``list_coupons``)."""
        kinds = self.entity_args(caller)
        nouns = {w for a in args for w in re.findall(r"[a-z]+", f"{a} {kinds.get(a, '')}".lower()) if w not in _ID_WORDS}
        for name in sorted(offered or ()):
            spec = self.deps.registry.get(name)
            if spec is None or name == caller or spec.changes_state:
                continue
            said = set(re.findall(r"[a-z]+", f"{name} {spec.description}".lower()))
            if nouns & said:
                return name
        return None

    def described(self, name: str) -> str:
        """What the tool's schema says of it and its arguments (their examples included), as one text."""
        spec = self.deps.registry.get(name)
        return json.dumps(spec.json_schema(), ensure_ascii=False) if spec is not None else ""

    def entity_args(self, name: str) -> dict[str, str]:
        """Argument -> entity type of a tool, read from its schema (nothing for an unknown tool)."""
        spec = self.deps.registry.get(name)
        return self.deps.domain.tool_entities(spec) if spec is not None else {}

    def well_formed(self, call: Mapping[str, Any]) -> bool:
        """Schema-valid? A malformed call is left to the executor: validation errors get a repair try."""
        try:
            self.deps.executor.validate(call["name"], call.get("args") or {})
        except ToolError:
            return False
        return True

    def run_calls(self, state: HarnessState, ai: AIMessage, config: RunnableConfig) -> list[ToolOutcome]:
        return self.screen_and_run(state, ai, config)[0]

    def screen_and_run(self, state: HarnessState, ai: AIMessage, config: RunnableConfig, confirmed: bool = False
                       ) -> tuple[list[ToolOutcome], list[bool]]:
        """Outcomes in call order, and per call whether it reached the tools (False: the harness answered it)."""
        # Every call this message already made: asking again will not change the answer. A refusal stands only
        # until another call works: that call may be what it asked for ("verify your identity first").
        # (every logged call has its signature: execute logs it)
        log = state.get("tool_log") or []
        since = max((i for i, r in enumerate(log) if r.get("status") == "ok"), default=-1)
        done = {sig: earlier_outcome(r) for i, r in enumerate(log)
                if (r.get("status") == "ok" or (i > since and r.get("error_type") not in RETRYABLE_LATER))
                and (sig := r.get("signature")) is not None}
        user = acting_user(state, config) or {"id": "", "role": "customer"}
        thread = thread_id(config)

        turn = state.get("turn") or 0
        ledger = self.deps.resources.get(LEDGER_RESOURCE)

        def ctx_for(call: Mapping[str, Any]) -> ToolContext:
            # Keyed by what the call is (thread, the message it serves, tool, arguments), not by the provider's
            # call id: a message finished or replayed after a fork applies its change once even when the model
            # issues fresh ids (or repeats one id for different changes).
            # A hash of the call, never its text: the key rests in the ledger and the domain's tables.
            key = f"{thread}:{turn}:{call['name']}:" + hashlib.sha256(
                call_signature(call["name"], call.get("args") or {}).encode()).hexdigest()[:32]
            return ToolContext(user_id=user["id"], role=user.get("role", "customer"), thread_id=thread,
                               idempotency_key=key, extras=self.deps.resources, ledger=ledger)

        # Paired with calls by position, not by id: ids may be missing or repeated (see ``with_call_ids``).
        offered = frozenset(t.name for t in self.offered(state, config))
        results: list[ToolOutcome | None] = [self.screen(state, call, done, offered, confirmed)
                                             for call in ai.tool_calls]
        for i, r in enumerate(results):  # check, then confirm: an impossible change is refused before asking
            if r is not None and r.error_type == "needs_confirmation":
                results[i] = precheck_outcome(self.deps.registry, self.deps.executor, ai.tool_calls[i],
                                              ctx_for(ai.tool_calls[i])) or r
        reached = [r is None for r in results]
        fresh = [i for i, r in enumerate(results) if r is None]
        for index, outcome in zip(fresh, self.deps.executor.run_many([ai.tool_calls[i] for i in fresh], ctx_for),
                                  strict=True):
            results[index] = outcome
        return [r for r in results if r is not None], reached
