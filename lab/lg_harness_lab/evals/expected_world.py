"""A scenario's expected end state, derived from the calls its turns expect to succeed.

For generated and hand-written scenarios the expected calls (``expect.tools``) say what was asked for;
running exactly those calls on a fresh copy of the domain's seeded data, as the scenario's user, shows what
the world must look like afterwards. :func:`derive_outcome` turns that diff into an ``outcome``
(``evals.scenario.Outcome``) that pins only what the scenario says:

- an inserted row: the columns holding a value the expected call was given, or the user's id; a free-text
  argument the scenario leaves open (a reason, a comment) becomes ``{any: true}``;
- an updated row: its key and every column that changed, bookkeeping aside;
- a deleted row: its key.

Values the tool picks itself (a new ticket's number, a timestamp, a default priority) stay free.

A turn that must go to a human (an intent of kind ``escalate`` or ``to-human``) may also make its route's
other changes on the way (a complaint filed before the handoff): those are ``allowed``, pinned to the user,
neither required nor wrong. Held-out scenarios are written by hand and never derived.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lg_harness.core.domain import Domain
from lg_harness.errors import HarnessError
from lg_harness.graphs.runtime import default_runtime
from lg_harness.tools.context import ToolContext
from lg_harness.tools.executor import ToolExecutor
from lg_harness_lab.evals.scenario import Outcome, Scenario
from lg_harness_lab.evals.world import World, counted

OPEN_TEXT = "(as the customer says)"  # what an open free-text argument is run with
ANY = {"any": True}


def _filled(spec: Any, given: Mapping[str, Any]) -> dict[str, Any]:
    """The expected arguments, with each required text argument the scenario leaves open filled in."""
    schema = spec.args_model.model_json_schema()
    props = schema.get("properties") or {}
    args = dict(given)
    for name in schema.get("required") or []:
        if name not in args and (props.get(name) or {}).get("type") == "string":
            args[name] = OPEN_TEXT
    return args


def _calls(domain: Domain, scenario: Scenario, backends: Mapping[str, Any],
           calls: list[tuple[int, str, dict[str, Any]]]) -> list[dict[str, Any]]:
    """Run ``(turn, tool, args)`` in order as the scenario's user (one idempotency key each); returns the
    calls that failed."""
    registry = domain.registry()
    executor = ToolExecutor(registry, workers=default_runtime().tool_workers)
    failed = []
    for j, (i, name, given) in enumerate(calls):
        spec = registry.get(name)
        if spec is None:
            raise HarnessError(f"scenario {scenario.id}: expected tool {name!r} is not a {domain.name} tool")
        ctx = ToolContext(user_id=scenario.user_id or domain.default_user, role=scenario.role or domain.default_role,
                          thread_id=f"derive-{scenario.id}", idempotency_key=f"derive-{scenario.id}-{j}",
                          extras=dict(backends))
        out = executor.run({"id": f"derive-{j}", "name": name, "args": _filled(spec, given)}, ctx)
        if out.status != "ok":
            failed.append({"turn": i, "name": name, "error": out.error})
    return failed


def _expected_calls(scenario: Scenario) -> list[tuple[int, str, dict[str, Any]]]:
    return [(i, c.name, dict(c.args)) for i, t in enumerate(scenario.turns) for c in t.expect.tools or []]


def _on_the_way(domain: Domain, scenario: Scenario) -> list[tuple[int, str, dict[str, Any]]]:
    """The changing calls a to-human turn's route may make besides the handoff (run with open arguments:
    only which table they write, and for whom, is kept)."""
    out = []
    for i, turn in enumerate(scenario.turns):
        intent = turn.expect.intent
        if domain.kind(intent) not in ("escalate", "to-human") or turn.expect.no_changes:
            continue
        out += [(i, name, {}) for name in domain.route(intent).tools if name in domain.changing_tools()
                and name != domain.handoff.tool and name not in turn.expect.must_not_call]
    return out


def _world_after(domain: Domain, scenario: Scenario, calls: list[tuple[int, str, dict[str, Any]]]
                 ) -> tuple[list[Mapping[str, Any]], list[dict[str, Any]]]:
    """The counted changes ``calls`` make on a fresh copy of the seeded data, and the calls that failed."""
    backends = domain.fresh_resources() if domain.fresh_resources else {}
    try:
        world = World(backends)
        failed = _calls(domain, scenario, backends, calls)
        world.turn_changes()
        return counted(world.changes()), failed
    finally:
        for backend in backends.values():
            if callable(getattr(backend, "close", None)):
                backend.close()


def _pinned(value: Any, given: set[str], user: str) -> Any:
    """What a stored value becomes in the outcome: itself when the scenario gave it, any when it was open."""
    if value == OPEN_TEXT:
        return ANY
    return value if isinstance(value, str) and (value in given or value == user) else None


def _as_expected(change: Mapping[str, Any], given: set[str], user: str) -> dict[str, Any] | None:
    table, op = change["table"], change["op"]
    if op == "insert":
        row = {k: p for k, v in change["row"].items() if (p := _pinned(v, given, user)) is not None}
        return {"table": table, "op": op, "row": row}
    if op == "delete":
        return {"table": table, "op": op, "key": dict(change["key"])}
    free = set(change.get("bookkeeping") or ())
    new = {k: (ANY if v[1] == OPEN_TEXT else v[1]) for k, v in change["changed"].items() if k not in free}
    return {"table": table, "op": op, "key": dict(change["key"]), "set": new} if new else None


def derive_outcome(domain: Domain, scenario: Scenario) -> Outcome:
    """The end state the scenario's expected calls leave (see the module doc).

    Raises:
        HarnessError: An expected call fails on the seeded data: the scenario contradicts its own data.
    """
    changes, failed = _world_after(domain, scenario, _expected_calls(scenario))
    if failed:
        raise HarnessError(f"scenario {scenario.id}: expected calls fail on the seeded data: {failed}")
    given = {str(v) for t in scenario.turns for c in t.expect.tools or [] for v in c.args.values()}
    user = scenario.user_id or domain.default_user
    expected = [e for c in changes if (e := _as_expected(c, given, user)) is not None]
    allowed = []
    for extra in _on_the_way(domain, scenario):
        made, _ = _world_after(domain, scenario, [extra])
        allowed += [{"table": c["table"], "op": c["op"], "row": {k: v for k, v in c["row"].items() if v == user}}
                    for c in made if c["op"] == "insert"]
    return Outcome.model_validate({"changes": expected, "allowed": allowed})


def outcome_of(domain: Domain, row: Mapping[str, Any]) -> dict[str, Any]:
    """The derived outcome of a scenario given as a dict, as a generator writes it (no empty ``allowed``)."""
    data = derive_outcome(domain, Scenario.model_validate(row)).model_dump(exclude_none=True)
    return {k: v for k, v in data.items() if k == "changes" or v}


# ------------------------------------------------------------------------------ writing it into YAML files


def outcome_yaml(outcome: Outcome, indent: str = "  ") -> list[str]:
    """The ``outcome:`` block of one scenario in a YAML list, one flow-style line per change."""
    import yaml

    def line(change: Any) -> str:
        text = yaml.safe_dump(change.model_dump(exclude_none=True), default_flow_style=True, allow_unicode=True,
                              sort_keys=False, width=10_000).strip()
        return f"{indent}    - {text}"

    if not outcome.changes and not outcome.allowed:
        return [f"{indent}outcome: {{changes: []}}"]
    lines = [f"{indent}outcome:", f"{indent}  changes:" + ("" if outcome.changes else " []")]
    lines += [line(c) for c in outcome.changes]
    if outcome.allowed:
        lines += [f"{indent}  allowed:", *(line(c) for c in outcome.allowed)]
    return lines


def add_outcomes(path: str | Any, domain: Domain) -> int:
    """Append the derived ``outcome`` to every scenario of a YAML list file that has none, keeping the file's
    comments and layout (each block goes after the scenario's last line); returns how many were added."""
    from pathlib import Path

    import yaml

    file = Path(path)
    lines = file.read_text(encoding="utf-8").splitlines()
    rows = yaml.safe_load("\n".join(lines)) or []
    todo = {r["id"]: derive_outcome(domain, Scenario.model_validate(r)) for r in rows if "outcome" not in r}
    starts = [n for n, raw in enumerate(lines) if raw.startswith("- id:")]
    for begin, end in reversed(list(zip(starts, [*starts[1:], len(lines)], strict=True))):
        sid = lines[begin].split(":", 1)[1].strip().strip("'\"")
        if sid not in todo:
            continue
        last = max(n for n in range(begin, end) if lines[n].strip() and not lines[n].lstrip().startswith("#"))
        lines[last + 1:last + 1] = outcome_yaml(todo[sid])
    file.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return len(todo)


def main(argv: list[str] | None = None) -> int:
    """``python -m lg_harness_lab.evals.expected_world DOMAIN FILE.yaml``: add derived outcomes where missing."""
    import sys

    from lg_harness.core.domain import load_domain

    domain, path = (argv if argv is not None else sys.argv[1:])[:2]
    print(f"added {add_outcomes(path, load_domain(domain))} outcomes to {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
