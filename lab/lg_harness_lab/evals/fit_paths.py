"""The sim's rates on each design's own path, measured from real-model comparison cells (issue 45).

The answer-step probes (``evals.fit_answers``) measure a model answering one result with no tool offered. A
design's tool loop is another path: the result comes back with the tools still offered, and the answer may
be written after a guard stopped the loop. These rates are read from what the real model did there, in the
cells of ``harness compare --model local:...`` runs (``cells.jsonl``):

- ``repeat_after_success``: of the messages where a call worked, those where the model made the identical
  call again (same tool, same arguments) later in the message. Keyed ``replay/<decoding>``: results come back
  as tool messages in a loop, decoded freely or held by a grammar (the design's ``constrained_decoding``).
  Where a cell records its model steps (``call_steps``: the tools each step offered), a message counts only
  when a later step still offered the tool; older cells count every message (pass runs of designs that keep
  offering it).
- ``restate_request``: of the replies to messages where a call worked, those that open by telling the request
  back (``evals.reply_quality.restates_request``). Keyed ``<answer_presentation>/<decoding>``.
- ``skip_call``: of the messages of a task that reached the action step (every slot known), those where the
  model made no call at all: it answered instead (on the free path, often with a made-up value). Keyed
  ``replay/<decoding>``; where a path has none, the sim's flat ``skip_call`` applies.
- ``skip_prerequisite``: of the messages that go for a tool whose description names another that must succeed
  first (``simlm.brain.requires``, read from the domain's own tool descriptions) while that one has not
  succeeded yet in the conversation, those whose first such call is the dependent tool. Keyed
  ``replay/<decoding>``.

Peers run their own loops (results replayed, free decoding). Each rate carries k, n and a Wilson interval.

    python -m lg_harness_lab.evals.fit_paths lab/reports/real-model-designs-shop/cells.jsonl ... --write

writes ``sim/simlm/paths.yaml``, which the sim merges over the ``fitted`` profile (``simlm.faults``). A rate the
given cells have no evidence for keeps its earlier value and source (``--replace`` drops it).
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from lg_harness_lab.evals.reply_quality import restates_request
from lg_harness_lab.evals.stats import wilson
from simlm.faults import PATHS_FILE  # the file the sim reads its per-path rates from

# The rates the sim reads per path (``simlm.brain``); the others are printed as evidence only.
SIM_READS = frozenset({"repeat_after_success", "restate_request", "skip_prerequisite", "skip_call"})


def design_path(design: str) -> tuple[str, str]:
    """(answer presentation, decoding) of a design by name; a peer or an unknown design replays, freely."""
    from lg_harness.core.design import PRESETS

    found = PRESETS.get(design)
    if found is None:
        return "replay", "free"
    return found.knobs.answer_presentation, "constrained" if found.knobs.constrained_decoding else "free"


def _key(call: Mapping[str, Any]) -> tuple[str, str]:
    return str(call.get("name")), json.dumps(call.get("emitted_args") or call.get("args") or {}, sort_keys=True)


def repeated_after_success(calls: Sequence[Mapping[str, Any]], steps: Sequence[Mapping[str, Any]] = ()
                           ) -> bool | None:
    """Whether the first call that worked in a message was made again identically later in it; None when
    none worked, or when the message's model steps (``call_steps``, where the cell records them) show that no
    later step was offered that tool (a design that answers once its goal is reached)."""
    for i, call in enumerate(calls):
        if call.get("status") == "ok":
            if steps and not any(call.get("name") in step.get("offered", ()) and int(step.get("after", 0)) > i
                                 for step in steps):
                return None
            return any(_key(later) == _key(call) for later in calls[i + 1:])
    return None


def prerequisites(domain: str | None) -> dict[str, set[str]]:
    """tool -> the tools its domain's descriptions say must succeed first, as the sim reads them."""
    if not domain:
        return {}
    from lg_harness_lab.evals.metrics import domain_of
    from simlm.brain import requires

    try:
        specs = domain_of(domain).registry().specs()
    except Exception:  # a domain this process cannot open (an MCP server not running): nothing to read
        return {}
    tools = [{"type": "function", "function": {"name": s.name, "description": s.description,
                                               "parameters": s.json_schema()}} for s in specs]
    return {t["function"]["name"]: {o["function"]["name"] for o in tools if requires(t, o)} for t in tools}


def intent_kinds(domain: str | None) -> dict[str, str]:
    """intent -> its kind (task, escalate, conversational...) in the domain the cells ran on."""
    if not domain:
        return {}
    from lg_harness_lab.evals.metrics import domain_of

    try:
        found = domain_of(domain)
    except Exception:  # a domain this process cannot open: no turn is read as a task
        return {}
    return {i.name: i.kind for i in found.intents}


def skipped_prerequisite(calls: Sequence[Mapping[str, Any]], needs: Mapping[str, set[str]], done: set[str]
                         ) -> bool | None:
    """Whether the first call of a message that goes for a tool with an unmet prerequisite (or for that
    prerequisite) is the dependent tool itself; None when the message went for neither."""
    pending = {tool: first - done for tool, first in needs.items() if first - done}
    wanted = set(pending) | {p for first in pending.values() for p in first}
    first = next((c for c in calls if c.get("name") in wanted), None)
    if first is None:
        return None
    return first.get("name") in pending


def _count(pair: list[int], hit: bool) -> None:
    pair[0], pair[1] = pair[0] + hit, pair[1] + 1


def tallies(records: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, list[int]]]:
    """fault -> path -> [k, n] over the records' messages."""
    out: dict[str, dict[str, list[int]]] = {"repeat_after_success": defaultdict(lambda: [0, 0]),
                                            "restate_request": defaultdict(lambda: [0, 0]),
                                            "skip_prerequisite": defaultdict(lambda: [0, 0]),
                                            "skip_call": defaultdict(lambda: [0, 0])}
    needs_of: dict[str | None, dict[str, set[str]]] = {}
    kinds_of: dict[str | None, dict[str, str]] = {}
    for record in records:
        presentation, decoding = design_path(str(record.get("design")))
        domain = record.get("domain_spec") or record.get("domain")
        needs = needs_of.setdefault(domain, prerequisites(domain))
        done: set[str] = set()
        kinds = kinds_of.setdefault(domain, intent_kinds(domain))
        for turn in record.get("turns") or []:
            calls = turn.get("tool_calls") or []
            if "action" in (turn.get("path") or []) and kinds.get(str(turn.get("intent"))) in ("task", "escalate"):
                _count(out["skip_call"][f"replay/{decoding}"], not calls)
            if needs and (skipped := skipped_prerequisite(calls, needs, done)) is not None:
                _count(out["skip_prerequisite"][f"replay/{decoding}"], skipped)
            done |= {str(c.get("name")) for c in calls if c.get("status") == "ok"}
            if (repeated := repeated_after_success(calls, turn.get("call_steps") or ())) is not None:
                _count(out["repeat_after_success"][f"replay/{decoding}"], repeated)
            if any(c.get("status") == "ok" for c in calls) and (turn.get("reply") or "").strip():
                _count(out["restate_request"][f"{presentation}/{decoding}"], restates_request(turn["reply"]))
    return {fault: dict(paths) for fault, paths in out.items()}


def answer_steps(found: Mapping[str, Mapping[str, Sequence[int]]], sources: str) -> dict[str, dict[str, Any]]:
    """``answer_steps`` entries (path -> fault -> {rate, k, n, ci, source}) from ``tallies``."""
    steps: dict[str, dict[str, Any]] = defaultdict(dict)
    for fault, paths in found.items():
        for path, (k, n) in sorted(paths.items()):
            if (ci := wilson(k, n)) is not None:
                lo, hi = ci
                steps[path][fault] = {"rate": round(k / n, 4), "k": k, "n": n, "ci": [round(lo, 4), round(hi, 4)],
                                      "source": f"measured on the real model's {path} path: {sources}"}
    return dict(steps)


def earlier_steps() -> dict[str, dict[str, Any]]:
    """The rates the committed ``paths.yaml`` holds (none when there is no file)."""
    import yaml

    if not PATHS_FILE.exists():
        return {}
    data = yaml.safe_load(PATHS_FILE.read_text(encoding="utf-8")) or {}
    return dict(((data.get("profiles") or {}).get("fitted") or {}).get("answer_steps") or {})


def kept_beside(new: Mapping[str, Mapping[str, Any]], earlier: Mapping[str, Mapping[str, Any]]
                ) -> dict[str, dict[str, Any]]:
    """``new``, plus every earlier rate of a path and fault ``new`` has no evidence for: a design whose path
    these cells never reach (a tool offered again after it worked, when the runs' design answers at its goal)
    keeps the rate measured where it was reached, with that source."""
    out = {path: dict(faults) for path, faults in new.items()}
    for path, faults in earlier.items():
        for fault, entry in faults.items():
            out.setdefault(path, {}).setdefault(fault, entry)
    return out


def paths_yaml(steps: Mapping[str, Any], command: str) -> str:
    import yaml

    header = (f"# Written by `{command}`; do not edit by hand (rerun it).\n"
              "# Rates on each design's path, read from real-model comparison cells (lab/lg_harness_lab/evals/fit_paths.py), merged\n"
              "# over the fitted profile: answer_steps.<presentation>/<decoding>.<fault>.\n")
    return header + yaml.safe_dump({"profiles": {"fitted": {"answer_steps": dict(steps)}}}, sort_keys=False,
                                   allow_unicode=True)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("cells", nargs="+", type=Path, help="cells.jsonl files of real-model compare runs")
    parser.add_argument("--write", action="store_true", help=f"write {PATHS_FILE.name} beside the sim")
    parser.add_argument("--replace", action="store_true",
                        help="drop the rates these cells have no evidence for (default: keep them, with their source)")
    args = parser.parse_args(argv)
    records = [json.loads(line) for path in args.cells for line in path.read_text(encoding="utf-8").splitlines()
               if line.strip()]
    models = sorted({str(r.get("model")) for r in records})
    if any(m.startswith("sim") for m in models):
        parser.error(f"these cells ran on {', '.join(models)}: give cells of a real model")
    found = tallies(records)
    for fault, paths in found.items():
        for path, (k, n) in sorted(paths.items()):
            print(f"{fault:22} {path:20} {k:4} / {n:<4} {100 * k / n:5.1f}%" if n else f"{fault} {path}: no message")
    named = ", ".join(str(p) for p in args.cells)
    used = {fault: paths for fault, paths in found.items() if fault in SIM_READS}
    steps = answer_steps(used, f"{len(records)} cells of {', '.join(models)} in {named}")
    if not args.replace:
        steps = kept_beside(steps, earlier_steps())
    if args.write:
        command = "python -m lg_harness_lab.evals.fit_paths " + " ".join(str(p) for p in args.cells) + " --write"
        PATHS_FILE.write_text(paths_yaml(steps, command), encoding="utf-8")
        print(f"wrote {PATHS_FILE}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
