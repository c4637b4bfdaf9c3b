"""Calibration probes for what a model does after each kind of tool error.

The first ``repeat`` probes (``evals.calibrate``) showed one kind, a transient failure, and the sim then
repeated the identical call after *any* error at that rate. These probes show the model the error it would
really get, in the harness's own error format (``ToolOutcome.content``), for four kinds:

- ``transient``: the backend gave up (503 after retries);
- ``validation``: the call's identifier broken so it misses the argument's pattern, run through the
  executor's validation;
- ``not_found``: the identifier changed to one the seeded data does not hold, run for real;
- ``refusal``: a changing call the domain turns down on its seeded data (a shipped order cancelled, an
  account unlocked by someone who may not), found by running the changing tools of each request's route.

Each probe's history is the request, the failing call and its error; the model is offered that tool alone,
as in the transient probes, and ``repeated`` means the identical call again.
"""

from __future__ import annotations

import random
import re
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from lg_harness.core.domain import Domain
from lg_harness.tools.executor import ToolOutcome
from lg_harness_lab.evals.probe import Probe
from lg_harness_lab.evals.scenario import Scenario

ERROR_KINDS = ("transient", "validation", "not_found", "refusal")
ERROR_PROBES = 2  # probes per kind per ``per_kind``: a kind's rate needs more than five to be told apart
_FILLER = "request stated by the customer"  # a free-text argument the request does not pin


def _run(domain: Domain, s: Scenario, name: str, args: dict[str, Any]) -> ToolOutcome:
    """The call on a fresh copy of the domain's seeded data, as the scenario's user."""
    from lg_harness.graphs.runtime import default_runtime
    from lg_harness.tools.context import ToolContext
    from lg_harness.tools.executor import ToolExecutor

    resources = domain.fresh_resources() if domain.fresh_resources else {}
    try:
        ctx = ToolContext(user_id=s.user_id or domain.default_user, role=s.role or domain.default_role,
                          thread_id=f"calibrate-{s.id}", idempotency_key=f"calibrate-{s.id}-{name}", extras=resources)
        executor = ToolExecutor(domain.registry(), workers=default_runtime().tool_workers)
        return executor.run({"id": "call_probe_1", "name": name, "args": args}, ctx)
    finally:
        for backend in resources.values():
            if callable(getattr(backend, "close", None)):
                backend.close()


def _other_digits(value: str) -> str:
    """The identifier with every digit moved by five: same shape, a record the data does not hold."""
    return re.sub(r"\d", lambda m: str((int(m.group()) + 5) % 10), value)


def _broken(value: str) -> str:
    """The identifier without its last two characters: it no longer fits its pattern."""
    return value[:-2]


def _id_key(args: dict[str, Any]) -> str | None:
    return next((k for k, v in args.items() if isinstance(v, str) and re.search(r"\d", v) and len(v) >= 4), None)


def _probe(domain: Domain, s: Scenario, kind: str, call: tuple[str, dict[str, Any]], content: str,
           tools: list[dict[str, Any]], user: str | None = None) -> Any:
    name, args = call
    made = {"name": name, "args": dict(args), "id": "call_probe_1", "type": "tool_call"}
    return Probe("repeat", domain.name, s.id,
                 [SystemMessage(domain.system_prompt), HumanMessage(user or s.turns[0].user),
                  AIMessage("", tool_calls=[made]),
                  ToolMessage(content, tool_call_id="call_probe_1")],
                 [t for t in tools if t["function"]["name"] == name], {"tool": name, "args": dict(args),
                                                                       "error_kind": kind})


def _changed_id(domain: Domain, s: Scenario, name: str, args: dict[str, Any], kind: str) -> ToolOutcome | None:
    key = _id_key(args)
    if key is None:
        return None
    bad = {**args, key: (_other_digits if kind == "not_found" else _broken)(args[key])}
    outcome = _run(domain, s, name, bad)
    return outcome if outcome.status == "error" and outcome.error_type == kind else None


def _refused(domain: Domain, s: Scenario) -> tuple[str, ToolOutcome] | None:
    """A message of the scenario asking for a change, and that change (a changing tool of the message's
    route, on the identifiers the message names) refused by the seeded data."""
    registry = domain.registry()
    for turn in s.turns:
        route = domain.route(turn.expect.intent) if turn.expect.intent else None
        found = domain.entities_in(turn.user)
        for name in sorted(set(route.tools if route else ()) & domain.changing_tools()):
            spec = registry.get(name)
            assert spec is not None, f"{name}: changing_tools names only the registry's tools"
            args = {arg: found[kind][0] for arg, kind in domain.tool_entities(spec).items() if found.get(kind)}
            schema = spec.args_model.model_json_schema()
            for req in schema.get("required") or []:
                if req not in args and (schema.get("properties") or {}).get(req, {}).get("type") == "string":
                    args[req] = _FILLER
            if args and (out := _run(domain, s, name, args)).status == "error" and out.error_type == "business":
                return turn.user, out
    return None


def build_error_probes(domain: Domain, scenarios: list[Scenario], tools_of: Any, *, per_kind: int,
                       seed: int = 0) -> list[Any]:
    """``ERROR_PROBES * per_kind`` probes of each error kind for one domain (fewer when the dev scenarios
    do not hold that many cases of a kind)."""
    rng = random.Random(f"{seed}:{domain.name}:errors")
    pool = list(scenarios)
    rng.shuffle(pool)
    want = ERROR_PROBES * per_kind
    probes: dict[str, list[Any]] = {k: [] for k in ERROR_KINDS}
    for s in pool:
        turn, tools = s.turns[0], tools_of(s)
        # the request's own call, when it names an identifier (a call without one is not a clear repeat)
        expected = turn.expect.tools[0] if turn.expect.tools and _id_key(turn.expect.tools[0].args) else None
        if expected is not None and len(probes["transient"]) < want:
            content = ToolOutcome("call_probe_1", expected.name, dict(expected.args), status="error",
                                  error_type="transient", error=f"{expected.name}: 503 Service Unavailable").content()
            probes["transient"].append(_probe(domain, s, "transient", (expected.name, expected.args), content, tools))
        for kind in ("validation", "not_found"):
            if expected is not None and len(probes[kind]) < want \
                    and (out := _changed_id(domain, s, expected.name, dict(expected.args), kind)) is not None:
                probes[kind].append(_probe(domain, s, kind, (out.name, out.args), out.content(), tools))
        if len(probes["refusal"]) < want and (refused := _refused(domain, s)) is not None:
            user, out = refused
            probes["refusal"].append(_probe(domain, s, "refusal", (out.name, out.args), out.content(), tools, user))
    return [p for k in ERROR_KINDS for p in probes[k]]
