"""The same comparison under several simulated-model profiles, and how the ranking moves between them.

``harness compare --profiles fitted,flat,window32k,clean`` runs the comparison once per profile (model
``sim:<profile>``) into ``<out>/<profile>/`` and writes ``<out>/sensitivity.md``: per profile, the designs
ranked by task completion with its interval, and each design's paired difference from ``harness``. A
ranking that holds only under one profile is a property of that profile, not of the designs.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from lg_harness.errors import HarnessError
from lg_harness_lab.evals.formatting import NA, fmt_diff, fmt_stat, significance, table
from lg_harness_lab.evals.report import main_designs

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


def _ranked(ranking: Sequence[Mapping[str, Any]], i: int) -> str:
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


# ------------------------------------------------------------------ sweeping the fitted rates' intervals

SWEPT = ("call_after_result", "repeat_after_error", "skip_call", "invent_missing", "echo_result")
"""The fitted rates that move the ranking most (issue 25; the answer step's pasted result with them, since
the reply presentations meet it), swept by ``harness compare --sweep default``."""


def sweep_variants(base: str, params: Sequence[str]) -> list[dict[str, Any]]:
    """The base profile, and for each rate the profile with it at the low and the high end of its 95%
    interval (as the profile's evidence gives it). ``repeat_after_error`` moves every kind of error's
    repeat rate to the same end of its own interval, and an answer-step fault (``call_after_result``,
    ``echo_result``) its rate under every presentation the profile measured.

    Returns:
        ``[{"label", "slug", "profile", "param", "end", "values"}]``; ``profile`` is a sim profile name
        (``fitted@shop+skip_call=0.29``).
    """
    from simlm import profile
    from simlm.faults import OVERRIDE_MARK

    fitted = profile(base)
    out = [{"label": "as fitted", "slug": "fitted", "profile": base, "param": None, "end": None, "values": {}}]
    for param in params:
        keys = [param, *_companions(fitted, param)]
        missing = [k for k in keys if "ci" not in fitted.evidence.get(k, {})]
        if missing:
            raise HarnessError(f"profile '{base}' has no measured interval for {', '.join(missing)}; "
                               "refit it with harness calibrate --write")
        for end, i in (("low", 0), ("high", 1)):
            values = {k: round(float(fitted.evidence[k]["ci"][i]), 4) for k in keys}
            name = base + "".join(f"{OVERRIDE_MARK}{k}={v}" for k, v in values.items())
            out.append({"label": f"{param} {end} ({values[param]:.0%})", "slug": f"{param}-{end}",
                        "profile": name, "param": param, "end": end, "values": values})
    return out


def _companions(fitted: Any, param: str) -> list[str]:
    """The rates that move with ``param``: every kind of error's repeat rate with ``repeat_after_error``, and
    the answer step's rate of each measured presentation with the flat answer-step fault."""
    if param == "repeat_after_error":
        return [f"repeat_after_error_kinds.{k}" for k in fitted.repeat_after_error_kinds]
    return [f"answer_steps.{v}.{param}" for v, rates in fitted.answer_steps.items() if param in rates]


def flips(base: list[Mapping[str, Any]], other: list[Mapping[str, Any]]) -> list[tuple[str, str]]:
    """Pairs (a, b) with a ahead of b in ``base`` and b ahead of a in ``other`` (ties are no order)."""
    at = {r["design"]: r["task_completion"]["mean"] for r in other}
    was = {r["design"]: r["task_completion"]["mean"] for r in base}
    out = []
    for a in was:
        for b in was:
            if None in (was[a], was[b], at.get(a), at.get(b)):
                continue
            if was[a] > was[b] and at[b] > at[a]:
                out.append((a, b))
    return out


def sweep_verdict(data: Mapping[str, Any], variants: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Where the ranking holds: per swept rate the pairs whose order flips at an end of its interval,
    whether the design ranked first stays first (and with whom it ties), and under which variants each
    design's paired difference from the baseline is significant."""
    base = data[variants[0]["slug"]]["ranking"]
    leader = base[0]["design"] if base else None
    out: dict[str, Any] = {"leader": leader, "flips": {}, "leader_holds": True, "leader_loses": [], "ties": [],
                           "significant": {}}
    for v in variants[1:]:
        ranking = data[v["slug"]]["ranking"]
        pairs = flips(base, ranking)
        if pairs:
            out["flips"].setdefault(v["param"], []).append({"variant": v["label"], "pairs": pairs})
        top = [r["design"] for r in ranking if r["rank"] == 1]
        if leader not in top:
            out["leader_holds"] = False
            out["leader_loses"].append({"variant": v["label"], "first": top})
        elif len(top) > 1:
            out["ties"].append({"variant": v["label"], "with": [d for d in top if d != leader]})
    for v in variants:
        for row in data[v["slug"]]["ranking"]:
            if row["paired"] is not None:
                marks = out["significant"].setdefault(row["design"], [])
                if row["paired"].get("significant"):
                    marks.append({"variant": v["label"], "higher": row["paired"]["mean"] > 0})
    out["variants"] = len(variants)
    return out


def render_sweep(summaries: Mapping[str, Summary], variants: Sequence[Mapping[str, Any]], command: str,
                 date: str | None = None) -> str:
    """``sensitivity.md`` of a sweep: rankings per variant, where the ranking holds and where it flips."""
    data = {v["slug"]: {"ranking": ranking(summaries[v["slug"]])} for v in variants}
    verdict = sweep_verdict(data, variants)
    labels = [v["label"] for v in variants]
    depth = max((len(d["ranking"]) for d in data.values()), default=0)
    ranks = [[i + 1, *(_ranked(data[v["slug"]]["ranking"], i) for v in variants)] for i in range(depth)]
    designs = list(dict.fromkeys(r["design"] for d in data.values() for r in d["ranking"]))
    diffs = [[d, *(_diff(data[v["slug"]], d) for v in variants)] for d in designs]
    first = summaries[variants[0]["slug"]]
    when = date or datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
    values = [[v["label"], v["profile"]] for v in variants]
    return "\n".join([
        "# Sensitivity: the ranking across the fitted rates' 95% intervals", "",
        "Produced by:", "", "```text", command, "```", "", f"Date: {when}", "",
        f"Split {first.get('split') or NA}, n={first.get('n_scenarios')} scenarios in {first.get('n_clusters')} "
        f"kinds x {len(first.get('seeds') or [])} seed(s) per variant; outcome-judged task completion.", "",
        "Each fitted rate was measured on the real model with k of n probes; its 95% interval (in the profile, "
        "`sim/simlm/fitted.yaml`) is where the true rate may be. Every variant below is the fitted profile with "
        "one rate moved to one end of its interval (all others as fitted). A ranking that changes inside "
        "those intervals is not a finding about the designs.", "",
        "## Verdict", "", *_verdict_lines(verdict), "",
        "## Ranking by task completion", "", *table(["Rank", *labels], ranks), "",
        f"## Paired difference from {first.get('baseline') or 'harness'}", "", *table(["Design", *labels], diffs), "",
        "## Variants", "", *table(["Variant", "sim profile"], values), ""])


def _verdict_lines(verdict: Mapping[str, Any]) -> list[str]:
    lines = []
    ties = "; ".join(f"tied with {', '.join(t['with'])} at {t['variant']}" for t in verdict.get("ties") or [])
    if verdict["leader_holds"]:
        lines.append(f"- `{verdict['leader']}` ranks first under every variant" + (f" ({ties})." if ties else "."))
    else:
        lost = "; ".join(f"{x['variant']}: {', '.join(x['first'])} first" for x in verdict["leader_loses"])
        lines.append(f"- `{verdict['leader']}` ranks first as fitted but not under every variant ({lost}).")
    lines += _significance_lines(verdict)
    if not verdict["flips"]:
        lines.append("- No pair of designs changes order at either end of any swept interval: the ranking holds.")
    for param, where in verdict["flips"].items():
        for w in where:
            pairs = ", ".join(f"{b} overtakes {a}" for a, b in w["pairs"])
            lines.append(f"- The ranking flips with `{param}`: at {w['variant']}, {pairs}.")
    return lines


def _significance_lines(verdict: Mapping[str, Any]) -> list[str]:
    """Which designs differ significantly from the baseline under every variant, some, or none."""
    total = verdict.get("variants") or 0
    always, some, never = [], [], []
    for design, marks in (verdict.get("significant") or {}).items():
        if len(marks) == total and total:
            always.append(f"{design} ({'above' if marks[0]['higher'] else 'below'})")
        elif marks:
            some.append(f"{design} ({len(marks)} of {total}: {', '.join(m['variant'] for m in marks)})")
        else:
            never.append(design)
    out = []
    if always:
        out.append(f"- Significantly different from the baseline under every variant: {', '.join(always)}.")
    if some:
        out.append(f"- Significantly different under some variants only: {'; '.join(some)}.")
    if never:
        out.append(f"- Not significantly different under any variant: {', '.join(never)}.")
    return out


def write_sweep(summaries: Mapping[str, Summary], variants: Sequence[Mapping[str, Any]], out_dir: str | Path,
                command: str) -> list[Path]:
    """Write ``sensitivity.md`` and ``sensitivity.json`` of a sweep into ``out_dir``; return their paths."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    data = {v["slug"]: {**v, "ranking": ranking(summaries[v["slug"]]),
                        "n_scenarios": summaries[v["slug"]].get("n_scenarios")} for v in variants}
    md, js = out / "sensitivity.md", out / "sensitivity.json"
    md.write_text(render_sweep(summaries, variants, command), encoding="utf-8")
    doc = {"variants": data, "verdict": sweep_verdict(data, variants)}
    js.write_text(json.dumps(doc, ensure_ascii=False, indent=1, default=str), encoding="utf-8")
    return [md, js]
