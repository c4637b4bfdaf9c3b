"""The same comparison under several simulated-model profiles, and how the ranking moves between them.

``harness compare --profiles fitted,flat,window32k,clean`` runs the comparison once per profile (model
``sim:<profile>``) into ``<out>/<profile>/`` and writes ``<out>/sensitivity.md``: per profile, the designs
ranked by task completion with its interval, and each design's paired difference from ``harness``. A
ranking that holds only under one profile is a property of that profile, not of the designs.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from lg_harness.evals.formatting import NA, fmt_diff, fmt_stat, significance, table
from lg_harness.evals.report import main_designs

Summary = Mapping[str, Any]


def profile_model(profile: str) -> str:
    """The model spec of a sim profile (the seed is added per cell by the runner)."""
    return f"sim:{profile}"


def ranking(summary: Summary) -> list[dict[str, Any]]:
    """The main designs by task completion, best first, each with its interval and paired difference."""
    paired = {p["design"]: p for p in summary.get("paired") or []}
    rows = []
    for design in main_designs(summary):
        stat = summary["metrics"][design]["task_completion"]
        rows.append({"design": design, "task_completion": {k: stat.get(k) for k in ("mean", "ci", "method", "n")},
                     "paired": paired.get(design)})
    def value(row: Mapping[str, Any]) -> float:
        mean = row["task_completion"]["mean"]
        return mean if mean is not None else -1.0

    rows.sort(key=lambda r: -value(r))
    # equal completion shares a rank ("1, 1, 3"): an order between equals would be the order they ran in
    return [{"rank": next(j for j, o in enumerate(rows, start=1) if value(o) == value(r)), **r} for r in rows]


def sensitivity(summaries: Mapping[str, Summary]) -> dict[str, Any]:
    """Per profile: its ranking, n and baseline (what ``sensitivity.json`` holds)."""
    return {p: {"ranking": ranking(s), "n_scenarios": s.get("n_scenarios"), "n_clusters": s.get("n_clusters"),
                "split": s.get("split"), "baseline": s.get("baseline")} for p, s in summaries.items()}


def render(summaries: Mapping[str, Summary], command: str, date: str | None = None) -> str:
    data = sensitivity(summaries)
    profiles = list(data)
    depth = max((len(d["ranking"]) for d in data.values()), default=0)
    ranks = [[i + 1, *(_ranked(data[p]["ranking"], i) for p in profiles)] for i in range(depth)]
    designs = list(dict.fromkeys(r["design"] for d in data.values() for r in d["ranking"]))
    diffs = [[d, *(_diff(data[p], d) for p in profiles)] for d in designs]
    when = date or datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
    base = next((d["baseline"] for d in data.values() if d.get("baseline")), "harness")
    n_line = "; ".join(f"{p}: split {d['split'] or NA}, n={d['n_scenarios']} in {d['n_clusters']} kinds"
                       for p, d in data.items())
    return "\n".join([
        "# Sensitivity: the ranking of designs under each simulated-model profile", "",
        "Produced by:", "", "```text", command, "```", "", f"Date: {when}", "", n_line, "",
        "Each profile's full report is in its own folder. Task completion with its 95% cluster-bootstrap "
        "interval; a design whose interval overlaps its neighbour's is not clearly ranked above it: the "
        "paired differences below say which gaps the data can tell.", "",
        "## Ranking by task completion", "", *table(["Rank", *profiles], ranks), "",
        f"## Paired difference from {base}", "", *table(["Design", *profiles], diffs), ""])


def _ranked(ranking: list[Mapping[str, Any]], i: int) -> str:
    if i >= len(ranking):
        return ""
    row = ranking[i]
    tied = " (tied)" if sum(r["rank"] == row["rank"] for r in ranking) > 1 else ""
    return f"{row['design']}{tied}: {fmt_stat(row['task_completion'] | {'unit': 'scenarios'}, 'rate')}"


def _diff(profile: Mapping[str, Any], design: str) -> str:
    row = next((r for r in profile["ranking"] if r["design"] == design), None)
    if row is None:
        return "not run"
    if row["paired"] is None:
        return "(baseline)"
    return f"{fmt_diff(row['paired'], 'rate')} ({significance(row['paired'])})"


def write_sensitivity(summaries: Mapping[str, Summary], out_dir: str | Path, command: str) -> list[Path]:
    """Write ``sensitivity.md`` and ``sensitivity.json`` into ``out_dir``; return their paths."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    md, js = out / "sensitivity.md", out / "sensitivity.json"
    md.write_text(render(summaries, command), encoding="utf-8")
    js.write_text(json.dumps(sensitivity(summaries), ensure_ascii=False, indent=1), encoding="utf-8")
    return [md, js]
