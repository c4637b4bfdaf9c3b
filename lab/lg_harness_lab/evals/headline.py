"""The headline table: each design's outcome-judged completion on ``test`` and ``heldout`` side by side.

``harness compare --split test,heldout`` runs both splits in one folder (one ``cells.jsonl``), writes each
split's full report into ``<out>/<split>/`` and this table into ``<out>/headline.md``: per split, task
completion with its interval and n, the share of runs that left the backend as the scenario says, the
wrong changes the backend's diff shows, and each design's paired difference from the baseline with whether
it is significant. ``heldout`` was written without looking at the routing rules or the generator and is
never tuned on: a lead that holds on ``test`` and not on ``heldout`` is a lead of the tuning.

:func:`write_headline` also reads the ``results.json`` of earlier runs in the same folder (``<out>/`` and
``<out>/<split>/``), so a split measured by another command (a real-model run of fewer designs on
``heldout``) joins the table.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from lg_harness_lab.evals.formatting import NA, fmt_diff, fmt_stat, significance, table
from lg_harness_lab.evals.report import main_designs, model_lines

Summary = Mapping[str, Any]


def split_records(records: Iterable[Mapping[str, Any]], suites: Mapping[str, Sequence[Any]]
                  ) -> dict[str, list[Mapping[str, Any]]]:
    """The records of each split's scenarios (a record whose scenario is in no suite is left out)."""
    where = {s.id: name for name, suite in suites.items() for s in suite}
    out: dict[str, list[Mapping[str, Any]]] = {name: [] for name in suites}
    for r in records:
        if (name := where.get(str(r.get("scenario")))) is not None:
            out[name].append(r)
    return out


def _summaries_in(out_dir: Path) -> dict[str, Summary]:
    """The latest summary per split among ``<out>/results.json`` and ``<out>/*/results.json`` (per split, the
    one with the most designs: a run of fewer designs does not hide a fuller one)."""
    found: dict[str, Summary] = {}
    for path in [out_dir / "results.json", *sorted(out_dir.glob("*/results.json"))]:
        if not path.is_file():
            continue
        data = json.loads(path.read_text(encoding="utf-8"))
        name = data.get("split")
        if name and len(data.get("designs") or []) >= len((found.get(name) or {}).get("designs") or []):
            found[name] = data
    return found


def _metric(summary: Summary | None, design: str, key: str, kind: str) -> str:
    if summary is None or design not in (summary.get("metrics") or {}):
        return "not run"
    return fmt_stat(summary["metrics"][design].get(key), kind)


def _paired(summary: Summary | None, design: str) -> str:
    if summary is None or design not in (summary.get("metrics") or {}):
        return "not run"
    if design == summary.get("baseline"):
        return "(baseline)"
    diff = next((p for p in summary.get("paired") or [] if p["design"] == design), None)
    return f"{fmt_diff(diff, 'rate')} ({significance(diff)})" if diff else NA


def headline_rows(summaries: Mapping[str, Summary]) -> tuple[list[str], list[list[str]], list[list[str]]]:
    """Headers and the two tables' rows: completion with paired differences; end state and wrong changes."""
    splits = list(summaries)
    designs = list(dict.fromkeys(d for s in summaries.values() for d in main_designs(s)))
    completion = [[d, *(cell for sp in splits for cell in (_metric(summaries[sp], d, "task_completion", "rate"),
                                                           _paired(summaries[sp], d)))] for d in designs]
    world = [[d, *(cell for sp in splits for cell in (_metric(summaries[sp], d, "end_state", "rate"),
                                                      _metric(summaries[sp], d, "wrong_changes", "count")))]
             for d in designs]
    return splits, completion, world


def render_headline(summaries: Mapping[str, Summary], command: str, date: str | None = None) -> str:
    splits, completion, world = headline_rows(summaries)
    when = date or datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
    models = sorted({m for s in summaries.values() for m in s.get("models") or []})
    base = next((s.get("baseline") for s in summaries.values() if s.get("baseline")), "harness")
    n_line = "; ".join(f"{sp}: {s.get('n_scenarios')} scenarios in {s.get('n_clusters')} kinds x "
                       f"{len(s.get('seeds') or [])} seed(s)" for sp, s in summaries.items())
    return "\n".join([
        "# Headline: " + " and ".join(f"`{sp}`" for sp in splits) + " side by side", "",
        "Produced by:", "", "```text", command, "```", "", f"Date: {when}", "", *model_lines(models), "",
        n_line, "",
        "Task completion is judged on the world: a run passes when the backend's end state is the one the "
        "scenario gives (every listed change with its values, nothing else changed, bookkeeping aside) and "
        "every turn's facts and checks hold; which calls ran is a diagnostic. Each figure carries its 95% "
        "interval and n (scenarios); a paired difference is from " + f"`{base}` over the scenarios both ran, "
        "and says whether its interval excludes 0. `heldout` was written without looking at the routing rules "
        "or the generator and is never tuned on. Full reports: `<split>/report.md` beside this file.", "",
        "## Task completion and paired difference", "",
        *table(["Design", *(h for sp in splits for h in (f"{sp}: completion", f"{sp}: vs {base}"))], completion), "",
        "## The world after the conversation", "",
        "End state: the share of runs that left the backend as the scenario says. Wrong changes: changes in "
        "the backend's diff that no expectation accounts for (extra writes, wrong values), per seed over all "
        "scenarios.", "",
        *table(["Design", *(h for sp in splits for h in (f"{sp}: end state", f"{sp}: wrong changes"))], world), ""])


def write_headline(out_dir: str | Path, command: str, fresh: Mapping[str, Summary] | None = None) -> Path:
    """``headline.md`` from this run's summaries (``fresh``) and those already in the folder."""
    out = Path(out_dir)
    summaries = {**_summaries_in(out), **(fresh or {})}
    order = ["test", "heldout"]
    ordered = {sp: summaries[sp] for sp in sorted(summaries, key=lambda s: (order.index(s) if s in order else 9, s))}
    path = out / "headline.md"
    path.write_text(render_headline(ordered, command), encoding="utf-8")
    return path


__all__ = ["headline_rows", "render_headline", "split_records", "write_headline"]
