"""The written results of an A/B comparison: ``report.md`` and ``results.json`` from an aggregate summary.

Everything here reads the dict that :func:`evals.metrics.aggregate` returns; no number is computed from
anything else. Every figure carries its 95% interval (cluster bootstrap over scenario kinds, or Wilson's
for a proportion on few kinds) and the n it rests on; paired differences say when the data cannot tell
two designs apart. The write-ups' claims are in ``evals.claims``, one-knob ablations in their own section.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from lg_harness.core.design_sources import registered
from lg_harness_lab.evals.claims import claim_rows
from lg_harness_lab.evals.formatting import (
    NA,
    WILSON_MARK,
    console_cell,
    console_diff,
    fmt_diff,
    fmt_stat,
    fmt_value,
    significance,
    table,
)
from lg_harness_lab.evals.metrics import METRICS
from lg_harness_lab.evals.stats import LEVEL, MIN_CLUSTERS, RESAMPLES, SEED

__all__ = ["NA", "claim_rows", "fmt_stat", "fmt_value", "render_report", "write_json", "write_report"]

Summary = Mapping[str, Any]

# The main tables: (header, metric key). Latency percentiles are pooled over messages.
_QUALITY: list[tuple[str, str]] = [
    ("Task completion", "task_completion"),
    ("End state as expected", "end_state"),
    ("Turn pass rate", "turn_pass_rate"),
    ("Arg validity at emission", "arg_validity_emitted"),
    ("Arg validity at tool boundary", "arg_validity_boundary"),
    ("Intent accuracy", "intent_accuracy"),
    ("Early-reference answers", "early_reference"),
]
_COST: list[tuple[str, str]] = [
    ("Model calls/msg", "model_calls_per_msg"),
    ("Input tokens/msg", "input_tokens_per_msg"),
    ("Input tokens/call", "input_tokens_per_call"),
    ("Prompt-cache hits", "prompt_cache_hit_rate"),
    ("Latency p50", "latency_p50_s"),
    ("Latency p95", "latency_p95_s"),
]
_COUNTS: list[tuple[str, str]] = [
    ("Repeated questions", "repeated_questions"),
    ("Loops stopped", "loops_stopped"),
    ("Handoffs", "handoffs"),
    ("Unrequested changes", "unrequested_changes"),
    ("Wrong changes (diff)", "wrong_changes"),
    ("Handoff accuracy", "handoff_accuracy"),
    ("Tool failure rate", "tool_failure_rate"),
    ("Replies with a false fact", "false_facts"),
    ("Replies with internal text", "internal_text"),
    ("Replies that are data, not words", "dump_replies"),
    ("Replies in the wrong language", "wrong_language"),
    ("Replies relaying an instruction", "relayed_instruction"),
    ("Answers telling the request back", "restated"),
]


# The terminal's table after harness compare: (metric key, short header); report.md has every figure.
CONSOLE_COLUMNS: list[tuple[str, str]] = [
    ("task_completion", "done"), ("arg_validity_emitted", "args emitted"), ("arg_validity_boundary", "args at tool"),
    ("model_calls_per_msg", "calls/msg"), ("input_tokens_per_msg", "tokens/msg"), ("latency_p50_s", "p50 s"),
    ("early_reference", "early refs"), ("unrequested_changes", "unrequested\nchanges"),
]


def console_rows(summary: Summary) -> tuple[list[str], list[list[str]]]:
    """Headers and rows of the terminal table: each figure with its interval and, where it rests on fewer
    scenarios than the design ran, its n; task completion also against the baseline, with the verdict."""
    baseline = summary.get("baseline")
    paired = {p["design"]: p for p in summary.get("paired") or []}
    headers = ["design", "n", "done", f"done vs\n{baseline}" if baseline else "vs baseline",
               *(label for _, label in CONSOLE_COLUMNS[1:])]
    rows = []
    for design in summary.get("designs") or []:
        stats = summary["metrics"][design]
        scenarios = (stats.get("task_completion") or {}).get("n")
        cells = [console_cell(stats.get(key), METRICS[key][1], scenarios) for key, _ in CONSOLE_COLUMNS]
        vs = "—" if design == baseline else console_diff(paired.get(design))
        rows.append([design, str(scenarios if scenarios is not None else NA), cells[0], vs, *cells[1:]])
    return headers, rows


def ablation_designs(summary: Summary) -> set[str]:
    """Designs that ran as an ablation or part swap beside their base (reported in their own section)."""
    return {a["design"] for a in summary.get("ablations") or []}


def main_designs(summary: Summary) -> list[str]:
    skip = ablation_designs(summary)
    return [d for d in summary.get("designs") or [] if d not in skip]


# ------------------------------------------------------------------------------------------- sections


def _metric_rows(summary: Summary, columns: list[tuple[str, str]]) -> list[list[str]]:
    rows = []
    for design in main_designs(summary):
        metrics = summary["metrics"][design]
        rows.append([design, *(fmt_stat(metrics.get(key), METRICS[key][1]) for _, key in columns)])
    return rows


def _retries_cell(summary: Summary, design: str) -> str:
    metrics = summary["metrics"][design]
    retries = metrics.get("retries_per_429") or {}
    if retries.get("mean") is None:
        return "no 429"
    honored = fmt_value((metrics.get("retry_after_honored") or {}).get("mean"), "rate")
    return f"{fmt_stat(retries, 'number')}; {honored} waited >= Retry-After"


def _latency_note(summary: Summary) -> str:
    models = summary.get("models") or []
    if models and not any(m.startswith("sim") for m in models):
        return ("Latency is measured: wall-clock time of the model calls on the machine that ran them, plus "
                "tool time.")
    # The sim's clock is base + per token, so its latency restates the token columns: no separate evidence.
    return ("Latency is modelled virtual time, a linear function of each call's input and output tokens: it "
            "restates the token figures and is not evidence of its own.")


def _main_section(summary: Summary) -> list[str]:
    counts = _metric_rows(summary, _COUNTS)
    for row in counts:
        pk = (summary.get("pass_k") or {}).get(row[0]) or {}
        row += [_retries_cell(summary, row[0]),
                f"{fmt_value(pk.get('rate'), 'rate')} (k={pk.get('k', NA)}, n={pk.get('n_scenarios', NA)})"]
    return ["## Main results", "",
            f"Each figure is pooled over every run of the split (all scenarios, all seeds) with its "
            f"{LEVEL:.0%} interval: a cluster bootstrap over scenario kinds ({RESAMPLES} resamples, seed "
            f"{SEED}), or Wilson's score interval ({WILSON_MARK}) for a proportion on fewer than "
            f"{MIN_CLUSTERS} kinds. n is the number of scenarios, and for per-turn and per-call rates the "
            "turns or calls pooled. Argument validity is measured twice: on the calls as the model emitted "
            "them, and on the calls that reached the tools after the harness rewrote, blocked or answered "
            f"some (the gap is the harness's work). {_latency_note(summary)}", "",
            "### Quality", "", *table(["Design", *(h for h, _ in _QUALITY)], _metric_rows(summary, _QUALITY)), "",
            "### Cost", "", *table(["Design", *(h for h, _ in _COST)], _metric_rows(summary, _COST)), "",
            "### Counts", "",
            "Repeated questions, loops stopped and handoffs: per seed over all scenarios.", "",
            *table(["Design", *(h for h, _ in _COUNTS), "Retries per 429", "pass^k"], counts), ""]


def _claims_section(summary: Summary) -> list[str]:
    rows = [[r["claim"], r["baseline"], r["target"], r["compares"], r["measured"], r["n"], r["verdict"],
             r["significance"], r["magnitude"]] for r in claim_rows(summary)]
    return ["## Figures from the write-ups", "",
            "Compares: what the two designs differ in. A feature claim is measured against the same design "
            "without that feature (an ablation or a part swap, run with `--ablations`); a claim about whole "
            "systems compares whole designs and credits no single part. Measured: the paired change with its "
            "interval over scenario kinds. Direction: the change goes the claimed way (or a threshold holds); "
            "Significance: whether the interval excludes no change; Magnitude: whether the claimed size was "
            "reached.", "",
            *table(["Claim", "Baseline", "Target", "Compares", "Measured", "n", "Direction", "Significance",
                    "Magnitude"], rows), ""]


def _paired_section(summary: Summary) -> list[str]:
    skip = ablation_designs(summary)
    rows = []
    for p in summary.get("paired") or []:
        if p["design"] in skip:
            continue
        rows.append([p["design"], p["baseline"], fmt_diff(p, "rate"), significance(p),
                     f"n={p.get('n', 0)}, {p.get('clusters', 0)} kinds"])
    if not rows:
        return ["## Paired differences", "", "Only one design ran: nothing to pair.", ""]
    return ["## Paired differences", "",
            "Task completion minus the baseline's over the scenarios both ran (pp = percentage points), with "
            f"a paired {LEVEL:.0%} cluster-bootstrap interval: both designs are resampled on the same scenario "
            "kinds. An interval that contains 0 means the data cannot tell the two apart.", "",
            *table(["Design", "Baseline", "Difference [95% interval]", "Verdict", "n"], rows), ""]


def _ablation_section(summary: Summary) -> list[str]:
    rows = []
    for a in summary.get("ablations") or []:
        what = f"{a['field']}: {a['from']!r} -> {a['value']!r}" if a.get("from") is not None else a["field"]
        rows.append([what, a["kind"], a["design"], fmt_stat(a["task_completion"] | {"unit": "scenarios"}, "rate"),
                     fmt_diff(a["paired"], "rate"), significance(a["paired"]),
                     f"n={a['paired'].get('n', 0)}, {a['paired'].get('clusters', 0)} kinds"])
    if not rows:
        return ["## Ablations", "",
                "No ablations ran. `harness compare --ablations` adds, for `harness`, one design per knob "
                "with just that knob off (or back to its default), and the part swaps the claims need.", ""]
    return ["## Ablations", "",
            "Each row is its base design with one knob (or one part) changed; the difference is task "
            "completion against the base on the same scenarios, paired over scenario kinds. A feature is "
            "credited only where its row is significantly lower than the base.", "",
            *table(["Change", "Kind", "Design", "Task completion", "Difference vs base [95% interval]",
                    "Verdict", "n"], rows), ""]


def _tag_section(summary: Summary) -> list[str]:
    designs = main_designs(summary)
    by_tag = summary.get("by_tag") or {}
    tags = sorted({t for d in designs for t in by_tag.get(d) or {}})
    rows = []
    for tag in tags:
        row: list[Any] = [tag]
        for d in designs:
            stat = (by_tag.get(d) or {}).get(tag)
            row.append(fmt_stat(stat, "rate") if stat else NA)
        rows.append(row)
    return ["## Task completion by tag", "", *table(["Tag", *designs], rows), ""]


def _growth_section(summary: Summary) -> list[str]:
    rows = []
    for d in main_designs(summary):
        growth = (summary.get("growth") or {}).get(d) or {}
        curve = (summary.get("tokens_by_turn") or {}).get(d) or []
        first = next((p["mean"] for p in curve if p["index"] == 0), None)
        ratio = growth.get("ratio_20plus_vs_1")
        t40 = growth.get("turn40")
        rows.append([d, fmt_value(first, "tokens"), f"{ratio:.1f}x" if ratio is not None else NA,
                     f"{t40['ratio']:.1f}x (turn {t40['index'] + 1})" if t40 else NA,
                     fmt_value(((summary.get("long") or {}).get(d) or {}).get("max_input_tokens_per_msg"), "tokens"),
                     ((summary.get("long") or {}).get(d) or {}).get("n_scenarios", 0)])
    return ["## Input-token growth", "",
            "Turn 20+ vs turn 1 over conversations that reach 20 turns; turn 40 vs turn 1 over long scenarios.", "",
            *table(["Design", "Tokens/msg at turn 1", "Turns 20+ / turn 1", "Turn 40 / turn 1",
                    "Max tokens/msg (long)", "n long"], rows), ""]


def _split_line(summary: Summary) -> str:
    split, counts = summary.get("split"), summary.get("splits") or {}
    shown = f"{split} ({summary.get('n_scenarios', 0)} scenarios in {summary.get('n_clusters', 0)} kinds)" \
        if split else f"{summary.get('n_scenarios', 0)} scenarios in {summary.get('n_clusters', 0)} kinds"
    return (f"Split: {shown}; of them dev {counts.get('dev', 0)}, test {counts.get('test', 0)}, heldout "
            f"{counts.get('heldout', 0)}. Rules, budgets and knobs are tuned on the dev split only; results are "
            "reported on test (the default of `harness compare --split`) and heldout (written without looking "
            "at the rules or the generator, never tuned on).")


def model_lines(models: list[str], machine: Mapping[str, Any] | None = None) -> list[str]:
    """Which model judged, and for the sim its profile: the files' digest, and whether any rate was set to
    land on a target figure ("calibrated") rather than measured or sourced; for a local engine, the machine
    it ran on and how busy it was (``metrics.machine_of``)."""
    from simlm.faults import default_profile_name, profile, profiles_digest

    lines = []
    for spec in models:
        if not spec.startswith("sim"):
            lines.append(f"Model: `{spec}` (a real model; no fault profile).")
            if machine and spec.startswith("local:"):
                load = machine["load_1m"]
                # reports made before the setting was recorded say nothing of it
                attention = (f", fused attention {'on' if machine['flash_attn'] else 'off'}"
                             if "flash_attn" in machine else "")
                lines.append(f"Engine: llama.cpp in process, {machine['threads']} threads on {machine['cpus']} CPUs, "
                             f"OMP_WAIT_POLICY {machine['omp_wait_policy']}{attention}; load average (1 min) when its "
                             f"{load['n']} messages ended: {load['min']:.2f} least, {load['median']:.2f} median, "
                             f"{load['max']:.2f} most (`harness bench local` gives the engine's own speed on a "
                             "machine for comparison).")
            continue
        name = next((p for p in spec.split(":")[1:] if not p.isdigit()), None) or default_profile_name()
        digest = profiles_digest()
        flag = "calibrated to a target figure" if profile(name).calibrated else "no rate calibrated to a target figure"
        lines.append(f"Model: `{spec}`, simulated, fault profile `{name}` ({flag}; profile files sha256 {digest[:12]}).")
    return [*lines, ""] if lines else []


def render_report(summary: Summary, command: str, date: str | None = None) -> str:
    """The markdown text of the report."""
    when = date or datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
    seed_list = list(summary.get("seeds") or [])
    seeds = f"{len(seed_list)} ({', '.join(map(str, seed_list))})" if seed_list else ""
    ablated = len(ablation_designs(summary))
    header = [
        f"# A/B comparison: {', '.join(main_designs(summary))}" + (f" (+ {ablated} ablations)" if ablated else ""),
        "", "Produced by:", "", "```text", command, "```", "",
        f"Date: {when}", "",
        f"Domain: {', '.join(summary.get('domains') or []) or NA}; "
        f"scenarios: {summary.get('n_scenarios', 0)}; seeds: {seeds or NA}; "
        f"baseline for paired differences: {summary.get('baseline') or NA}.", "",
        _split_line(summary), "", *model_lines(summary.get("models") or [], summary.get("machine")),
    ]
    from lg_harness_lab.evals.cost import cost_section

    real = any(not str(m).startswith(("sim", "paced")) for m in summary.get("models") or [])
    # Packages that add designs add their sections through an entry point, so the report never imports them.
    added = [line for _, ep in sorted(registered("lg_harness.report_sections").items())
             for line in ep.load()(summary)]
    body = (_main_section(summary) + (cost_section(summary) if real else []) + _claims_section(summary)
            + _paired_section(summary) + added + _ablation_section(summary) + _tag_section(summary)
            + _growth_section(summary))
    return "\n".join(header + body)


def plots_section(plots: list[Path], out_dir: Path) -> list[str]:
    """Links to the comparison's plots (relative to the report, so the folder can be moved or committed)."""
    if not plots:
        return []
    lines = ["", "## Plots", ""]
    for plot in plots:
        rel = plot.relative_to(out_dir) if plot.is_relative_to(out_dir) else plot
        lines.append(f"- [{plot.stem.replace('_', ' ')}]({rel.as_posix()})")
    return lines


def write_report(summary: Summary, out_dir: str | Path, command: str, plots: list[Path] | None = None) -> Path:
    """Write ``report.md`` into ``out_dir`` (created if needed) and return its path.

    Args:
        summary: What :func:`evals.metrics.aggregate` returned.
        out_dir: Folder of the comparison's outputs.
        command: The exact command line that produced the run, quoted in the report.
        plots: The plot files written beside it, linked at the end of the report.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "report.md"
    text = render_report(summary, command) + "\n".join(plots_section(list(plots or []), out))
    path.write_text(text if text.endswith("\n") else text + "\n", encoding="utf-8")
    return path


def _jsonable(value: Any) -> Any:
    if isinstance(value, set | frozenset | tuple):
        return list(value)
    return str(value)


def _finite(value: Any) -> Any:
    # NaN and infinity are not JSON: a value that is not a number is reported as missing
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, Mapping):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


def write_json(summary: Summary, out_dir: str | Path) -> Path:
    """Write ``results.json`` (the whole summary plus the claim rows) into ``out_dir`` and return its path."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "results.json"
    data = _finite({**summary, "claims": claim_rows(summary)})
    path.write_text(json.dumps(data, ensure_ascii=False, indent=1, default=_jsonable, allow_nan=False),
                    encoding="utf-8")
    return path
