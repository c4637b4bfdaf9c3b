"""Run one scenario on one design with one seed, in memory, and keep a record of what happened.

The record holds observations only (what the user saw, which calls were attempted, tokens, virtual
latency). Metrics are computed from records afterwards, the same way for every design.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from typing import Any, cast

from lg_harness.core.design import Design
from lg_harness.core.design_sources import by_prefix
from lg_harness.core.domain import Domain, load_domain
from lg_harness.core.routing.guards import stop_reason
from lg_harness.core.state import HarnessState
from lg_harness.errors import HarnessError
from lg_harness.graphs.app import Harness, Parts, Settings
from lg_harness.graphs.model_health import ModelUnavailable
from lg_harness.graphs.opening import executor_for
from lg_harness.graphs.runtime import default_runtime
from lg_harness.llm.factory import close_model, make_model
from lg_harness.tools.faults import FaultPlan
from lg_harness_lab.evals.world import World

# Background faults every backend shows a little of, on top of what a scenario scripts.
BACKGROUND_RATES = {"timeout": 0.02, "rate_limited": 0.02, "server_error": 0.02, "malformed": 0.01}


class VirtualClock:
    """Executors sleep on this clock in evaluations: backoff and Retry-After waits cost virtual time only."""

    def __init__(self) -> None:
        self.now = 0.0

    def sleep(self, seconds: float) -> None:
        self.now += max(seconds, 0.0)

    def time(self) -> float:
        return self.now


_chroma = None


def _chroma_client():
    """One in-process Chroma per worker; each cell gets its own collection."""
    global _chroma
    if _chroma is None:
        import chromadb
        from chromadb.config import Settings

        _chroma = chromadb.EphemeralClient(settings=Settings(anonymized_telemetry=False, allow_reset=True))
    return _chroma


def cell_id(design: str, scenario_id: str, seed: int) -> str:
    return f"{design}|{scenario_id}|{seed}"


def model_spec_for(model: str, seed: int, domain: str | None = None) -> str:
    """The seed goes to the simulated model; real models get the spec as it is.

    A sim profile with rates measured per domain (``fitted@shop``, see ``simlm.faults``) runs as that
    domain's variant: ``sim`` and ``sim:fitted`` on the shop are ``sim:fitted@shop``. The sim never learns
    the domain; the evaluation picks the profile its probes were measured on.
    """
    if not model.startswith("sim"):
        return model
    return f"{domain_profile(model, domain)}:{seed}"


def domain_profile(model: str, domain: str | None) -> str:
    """``sim[:<profile>]`` as the profile variant measured on ``domain``, when there is one."""
    from simlm import default_profile_name, profile_names
    from simlm.faults import DOMAIN_MARK, OVERRIDE_MARK

    kind, _, rest = model.partition(":")
    parts = [p for p in rest.split(":") if p]
    named = next((p for p in parts if not p.isdigit()), None)
    base, mark, overrides = (named or default_profile_name()).partition(OVERRIDE_MARK)
    variant = f"{base}{DOMAIN_MARK}{domain}"
    if not domain or DOMAIN_MARK in base or variant not in profile_names():
        return model
    return ":".join([kind, variant + mark + overrides, *(p for p in parts if p != named)])


CELL_RUNNERS = "lg_harness.cell_runners"


def cell_runner(name: str) -> Callable[..., dict[str, Any]] | None:
    """The function a package registered (``lg_harness.cell_runners``, by the prefix before the colon) to play
    cells of the designs it provides, the same record as ``run_cell``'s; None for the harness's own designs."""
    return by_prefix(name, CELL_RUNNERS)


def run_cell(design: Design, scenario: Any, seed: int, model: str = "sim",
             domain: Domain | str | None = None) -> dict[str, Any]:
    """Play every user turn of ``scenario`` on fresh copies of the domain's backends; return the run record."""
    if (play := cell_runner(design.name)) is not None:  # e.g. a peer: a real framework runs the loop
        return play(design.name, scenario, seed, model, domain)
    domain = load_domain(domain)
    cid = cell_id(design.name, scenario.id, seed)
    digest = hashlib.sha1(cid.encode()).hexdigest()[:12]
    clock = VirtualClock()
    # Backend faults depend on the scenario and seed only: every design meets the same ones.
    fault_seed = int(hashlib.sha1(f"{scenario.id}|{seed}".encode()).hexdigest()[:12], 16) % 2**31
    plan = FaultPlan(scripted=scenario.tool_faults, rates=BACKGROUND_RATES, seed=fault_seed,
                     clock=clock.time)
    registry = plan.apply(domain.registry())
    memory = None
    if design.knobs.long_term_memory:
        from lg_harness.memory.longterm import LongTermMemory

        memory = LongTermMemory(facts_path=":memory:", chroma_client=_chroma_client(), collection=f"c{digest}",
                                embedder=default_runtime().embedder)
    backends = domain.fresh_resources() if domain.fresh_resources else {}
    world = World(backends)
    chat_model = make_model(model_spec_for(model, seed, domain.name), domain=domain)
    executor = executor_for(design, registry, sleep=clock.sleep, workers=default_runtime().tool_workers)
    parts = Parts(resources=backends, memory=memory, registry=registry, executor=executor)
    harness = Harness(chat_model, domain, design, Settings(data_dir=None, parts=parts))
    turns = []
    try:
        if scenario.goal is not None:
            turns = _converse(harness, scenario, seed, plan, clock, world)
        for index, turn in enumerate(scenario.turns):
            before = (plan.virtual_elapsed[0], clock.now)
            turns.append(_play(harness, scenario, index, turn, before, plan, clock))
            turns[-1]["world"] = world.turn_changes()
    finally:
        harness.close()
        close_model(chat_model)
        for backend in backends.values():
            if callable(getattr(backend, "close", None)):
                backend.close()
        if memory is not None:
            memory.close()  # writes what the last message queued: the collection must outlive the writer
            _chroma_client().delete_collection(f"c{digest}")
    return {"cell": cid, "design": design.name, "domain": domain.name, "scenario": scenario.id, "seed": seed,
            "model": model, "tags": scenario.tags,
            "lang": scenario.lang, "turns": turns, "fault_events": plan.events, "world": world.changes()}


def customer_for(scenario: Any, seed: int) -> Any:
    """The customer who plays ``scenario``: a ``GoalCustomer`` for a goal, a ``Script`` for scripted turns. The
    same for every design and peer; it reads replies only (``evals.customer``)."""
    from lg_harness_lab.evals.customer import GoalCustomer, Script

    if scenario.goal is None:
        return Script([t.user for t in scenario.turns])
    return GoalCustomer(scenario.goal.model_dump(), lang=scenario.lang, seed=seed)


def _converse(h: Harness, scenario: Any, seed: int, plan: FaultPlan, clock: VirtualClock,
              world: World) -> list[dict[str, Any]]:
    """A goal scenario: the customer's messages, each from the last reply, until it is done or gives up."""
    customer, turns = customer_for(scenario, seed), []
    text: str | None = customer.opening()
    while text is not None:
        before = (plan.virtual_elapsed[0], clock.now)
        record, _ = _send(h, scenario, len(turns), text, before, plan, clock)
        record.update(user=text, customer=customer.events[-1].kind if customer.events else "open",
                      world=world.turn_changes())
        turns.append(record)
        text = customer.react(record["reply"])
    if turns:
        turns[-1]["customer_end"] = customer.events[-1].kind if customer.events else ""
    return turns


# What a scripted user answers when the harness asks to confirm a change: yes to a change they asked for,
# no when they said they do not want one (a changed mind, a hypothetical, "check with me first, then no").
CONFIRM_YES = {"en": "yes", "zh": "是的"}
CONFIRM_NO = {"en": "no, don't do that", "zh": "不用了，先不要"}
# Tags by which a scenario says its customer declines: with no change expected on the turn, such a customer
# answers a confirmation question with no. Others who expect no change still mean what they asked for (a
# refused cancel, someone else's order): they say yes, and the backend or the guard must stop the change.
DECLINING_TAGS = frozenset({"changed-mind", "hypothetical", "said-no", "negation"})


def confirmation_answer(scenario: Any, turn: Any) -> str:
    """The scripted user's answer to "shall I go ahead?": the turn's ``confirm``, else what this customer
    wants (no from one who declined the change on a turn that expects none, otherwise yes), in their language."""
    if turn.confirm is not None:
        return turn.confirm
    declines = turn.expect.no_changes and bool(DECLINING_TAGS & set(scenario.tags))
    return (CONFIRM_NO if declines else CONFIRM_YES).get(scenario.lang, "no" if declines else "yes")


def _play(h: Harness, scenario: Any, index: int, turn: Any, before: tuple[float, float], plan: FaultPlan,
          clock: VirtualClock) -> dict[str, Any]:
    """One scenario turn; when the reply waits for a yes or a no (``evals.customer.asks_permission``, read from
    its words, as for every design and peer), the user's answer (``confirmation_answer``) is part of the same
    turn: its calls, tokens and latency count here."""
    from lg_harness_lab.evals.customer import asks_permission

    record, _ = _send(h, scenario, index, turn.user, before, plan, clock)
    if "error" in record or not asks_permission(record["reply"]):
        return record
    answer = confirmation_answer(scenario, turn)
    second, _ = _send(h, scenario, index, answer, (plan.virtual_elapsed[0], clock.now), plan, clock)
    return with_confirmation(record, second, answer)


def with_confirmation(record: dict[str, Any], second: dict[str, Any], answer: str) -> dict[str, Any]:
    """A turn's record and that of the customer's answer to its confirmation question, as one turn."""
    if "error" in second:
        return {**record, "error": second["error"]}
    merged = {**second, "confirmation": {"asked": record["reply"], "answer": answer}}
    for key in ("tool_calls", "call_input_tokens"):
        merged[key] = record[key] + second[key]
    ran = len(record["tool_calls"])  # the answer's steps counted its own calls from 0
    merged["call_steps"] = [*record.get("call_steps", []),
                            *({**step, "after": step["after"] + ran} for step in second.get("call_steps", []))]
    for key in ("model_calls", "input_tokens", "output_tokens", "latency_s", "model_latency_s"):
        merged[key] = (record.get(key) or 0) + (second.get(key) or 0)
    if record.get("speed") or second.get("speed"):
        merged["speed"] = {k: (record.get("speed") or {}).get(k, 0) + (second.get("speed") or {}).get(k, 0)
                           for k in {*(record.get("speed") or {}), *(second.get("speed") or {})}}
    if record.get("cached_input_tokens") is not None or second.get("cached_input_tokens") is not None:
        merged["cached_input_tokens"] = (record.get("cached_input_tokens") or 0) + (second.get("cached_input_tokens") or 0)
    merged["path"] = record["path"] + second["path"]
    merged["intent"] = record["intent"]  # what the request was understood as; the yes resumes it
    return merged


def _send(h: Harness, scenario: Any, index: int, text: str, before: tuple[float, float], plan: FaultPlan,
          clock: VirtualClock) -> tuple[dict[str, Any], dict[str, Any]]:
    """The run record of one message, and the state after it (empty when the message failed)."""
    try:
        r = h.send("eval", text, scenario.user_id or h.domain.default_user, scenario.role)
    except HarnessError as err:
        # A message the model never answered fails like any other error, and says so (evals.cell_health).
        return {"index": index, "error": str(err), "reply": "", "tool_calls": [], "model_calls": 0,
                "input_tokens": 0, "call_input_tokens": [], "latency_s": 0.0,
                "model_failed": isinstance(err, ModelUnavailable)}, {}
    values = r.values
    stats = values.get("turn_stats") or {}
    tool_s = plan.virtual_elapsed[0] - before[0] + clock.now - before[1]
    return {
        "index": index,
        "intent": r.intent,
        "reply": r.reply,
        "path": r.path,
        "phase": r.phase,
        "handoff": bool(r.handoff) or r.waiting_for_human,
        "tool_calls": tool_calls_of(values),
        "model_calls": stats.get("model_calls", 0),
        "input_tokens": stats.get("input_tokens", 0),
        "cached_input_tokens": stats.get("cached_input_tokens"),  # None: the model does not report it
        "output_tokens": stats.get("output_tokens", 0),
        "call_input_tokens": stats.get("call_input_tokens", []),
        "call_steps": stats.get("call_steps", []),
        "latency_s": round(stats.get("model_latency_s", 0.0) + tool_s, 4),
        "model_latency_s": round(stats.get("model_latency_s", 0.0), 4),
        # a local engine's timings, and how busy the machine was when it ran (the same engine reads half as fast
        # beside another process on two cores)
        **({"speed": stats["speed"], "load_1m": round(os.getloadavg()[0], 2)} if stats.get("speed") else {}),
        # values is the whole graph state after the message (lg_harness/graphs/result.py), typed there as a plain dict
        "stop_reason": stop_reason(cast(HarnessState, values), h.design.knobs) if "action" in r.path else None,
    }, values


# Per call: what reached the tools (``args``, after any harness rewrite), what the model emitted
# (``emitted_args``) and whether the call reached the tools at all (``reached_tool``; False when the harness
# answered it itself: a duplicate, an invented identifier, a forbidden tool, an unreadable text call).
CALL_FIELDS = ("name", "args", "emitted_args", "reached_tool", "status", "error_type", "exception", "attempts")


def tool_calls_of(values: dict[str, Any]) -> list[dict[str, Any]]:
    """The turn's tool calls from the harness's tool log, as run records keep them."""
    return [{k: c.get(k) for k in CALL_FIELDS} | {"result": _result(c)} for c in values.get("tool_log") or []]


def _result(record: dict[str, Any]) -> Any:
    digest = record.get("result_digest")
    try:
        return json.loads(digest) if digest else None
    except json.JSONDecodeError:
        return digest
