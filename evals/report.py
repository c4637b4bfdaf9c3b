"""The written results of an A/B comparison: ``report.md`` and ``results.json`` from an aggregate summary.

Everything here reads the dict that :func:`evals.metrics.aggregate` returns; no number is computed from
anything else. The claims section puts the write-ups' figures (DESIGN.md, "Figures the source write-ups
claim") next to what this run measured, with the designs that rebuild each side of the claim.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from lg_harness.evals.metrics import METRICS

Summary = Mapping[str, Any]

# Main table: (header, metric key, kind). Latency and retries have their own cells (see _row).
_MAIN_COLUMNS: list[tuple[str, str]] = [
    ("Task completion", "task_completion"),
    ("Arg validity", "arg_validity"),
    ("Intent accuracy", "intent_accuracy"),
    ("Model calls/msg", "model_calls_per_msg"),
    ("Input tokens/msg", "input_tokens_per_msg"),
    ("Input tokens/call", "input_tokens_per_call"),
    ("Prompt-cache hits", "prompt_cache_hit_rate"),
    ("Latency p50", "latency_p50_s"),
    ("Latency p95", "latency_p95_s"),
    ("Early-reference answers", "early_reference"),
    ("Repeated questions", "repeated_questions"),
    ("Loops stopped", "loops_stopped"),
    ("Handoffs", "handoffs"),
]

NA = "n/a"


# ------------------------------------------------------------------------------------------ formatting


def _cell(text: Any) -> str:
    # a pipe inside a value would split the markdown table
    return str(text).replace("|", "\\|").replace("\n", " ")


def fmt_value(value: float | None, kind: str) -> str:
    """One number in the unit its metric kind implies."""
    if value is None:
        return NA
    if kind == "rate":
        return f"{100 * value:.1f}%"
    if kind == "tokens":
        return f"{value:,.0f}"
    if kind == "seconds":
        return f"{value:.2f} s"
    if kind == "count":
        return f"{value:.1f}"
    return f"{value:.2f}"


def _half(stat: Mapping[str, Any]) -> float | None:
    ci = stat.get("ci")
    return (ci[1] - ci[0]) / 2 if ci else None


def fmt_stat(stat: Mapping[str, Any] | None, kind: str, value: float | None = None) -> str:
    """``mean ± half-interval`` of a metric (``value`` replaces the mean, e.g. a pooled percentile)."""
    if not stat or stat.get("mean") is None:
        return NA
    shown = stat["mean"] if value is None else value
    half = _half(stat)
    if half is None:
        return fmt_value(shown, kind)
    spread = f"{100 * half:.1f}" if kind == "rate" else fmt_value(half, kind).removesuffix(" s")
    return f"{fmt_value(shown, kind)} ± {spread}"


def _table(headers: list[str], rows: list[list[Any]]) -> list[str]:
    lines = ["| " + " | ".join(_cell(h) for h in headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(_cell(v) for v in row) + " |" for row in rows]
    return lines


# -------------------------------------------------------------------------------------------- lookups


def metric_mean(summary: Summary, design: str, key: str) -> float | None:
    """A design's across-seed mean of one metric, or None when it did not run or has no data."""
    return (((summary.get("metrics") or {}).get(design) or {}).get(key) or {}).get("mean")


def _latency_p50(summary: Summary, design: str) -> float | None:
    return ((summary.get("latency") or {}).get(design) or {}).get("p50")


def _long_tokens(summary: Summary, design: str) -> float | None:
    return (((summary.get("long") or {}).get(design) or {}).get("input_tokens_per_msg") or {}).get("mean")


def _long_max(summary: Summary, design: str) -> float | None:
    return ((summary.get("long") or {}).get(design) or {}).get("max_input_tokens_per_msg")


def _long_completion(summary: Summary, design: str) -> float | None:
    return (((summary.get("by_tag") or {}).get(design) or {}).get("long") or {}).get("mean")


# ------------------------------------------------------------------------------------------------ claims


@dataclass(frozen=True)
class Change:
    """A claimed change from a baseline design to a target design in one measured value.

    Attributes:
        claim: The write-up's figure, as DESIGN.md states it.
        baseline: Design that rebuilds the "before" system.
        target: Design that rebuilds the "after" system.
        value: Reads the value of a design from the summary.
        kind: Formatting of the value (a ``METRICS`` kind).
        better: "up" or "down": the claimed direction.
        meets: Whether (baseline value, target value) reach the claimed size, not just its direction.
    """

    claim: str
    baseline: str
    target: str
    value: Callable[[Summary, str], float | None]
    kind: str
    better: str
    meets: Callable[[float, float], bool]


def _metric(key: str) -> Callable[[Summary, str], float | None]:
    return lambda summary, design: metric_mean(summary, design, key)


CHANGES: list[Change] = [
    Change("Tool-argument validity 82% -> 97.4%", "naive", "harness", _metric("arg_validity"), "rate", "up",
           lambda b, t: t >= 0.974),
    Change("Model calls per request 4.6 -> 2.5", "naive", "harness", _metric("model_calls_per_msg"), "number",
           "down", lambda b, t: t <= b * 2.5 / 4.6),
    Change("Input tokens -68%", "naive", "harness", _metric("input_tokens_per_msg"), "tokens", "down",
           lambda b, t: t <= 0.32 * b),
    Change("Latency 9 s -> under 3 s (p50 per message)", "naive", "harness", _latency_p50, "seconds", "down",
           lambda b, t: t < 3.0),
    Change("Tokens per turn 6,000+ -> about 2,000 (full history vs harness, long scenarios)", "naive", "harness",
           _long_tokens, "tokens", "down", lambda b, t: t <= b / 3),
    Change("References to earlier turns answered 41% -> 89%", "naive", "harness", _metric("early_reference"),
           "rate", "up", lambda b, t: t >= 0.89),
    Change("Anchored window: task completion +25% over a plain time window (long scenarios)", "state-machine",
           "layered", _long_completion, "rate", "up", lambda b, t: t >= 1.25 * b),
    Change("Anchored window: task completion +25% over a plain time window (long scenarios)", "state-machine",
           "harness", _long_completion, "rate", "up", lambda b, t: t >= 1.25 * b),
]


def _change_text(b: float, t: float, kind: str) -> str:
    rel = f"{100 * (t - b) / b:+.1f}%" if b else "n/a relative"
    if kind == "rate":
        return f"{100 * (t - b):+.1f} pp ({rel})"
    return rel


def _row(claim: str, baseline: str, target: str, measured: str, verdict: str, magnitude: str) -> dict[str, str]:
    return {"claim": claim, "baseline": baseline, "target": target, "measured": measured, "verdict": verdict,
            "magnitude": magnitude}


def _change_row(summary: Summary, c: Change) -> dict[str, str]:
    ran = set(summary.get("designs") or [])
    b = c.value(summary, c.baseline) if c.baseline in ran else None
    t = c.value(summary, c.target) if c.target in ran else None
    left = f"{c.baseline}: {fmt_value(b, c.kind) if c.baseline in ran else 'not run'}"
    right = f"{c.target}: {fmt_value(t, c.kind) if c.target in ran else 'not run'}"
    if b is None or t is None:
        why = "design not run" if not {c.baseline, c.target} <= ran else "no data"
        return _row(c.claim, left, right, NA, f"n/a ({why})", NA)
    moved = t > b if c.better == "up" else t < b
    return _row(c.claim, left, right, _change_text(b, t, c.kind), "reproduced" if moved else "not reproduced",
                "meets claim" if moved and c.meets(b, t) else "smaller than claimed")


def _under_8k_row(summary: Summary) -> dict[str, str]:
    claim = "30-turn conversations held under 8K input tokens per message (harness, long scenarios)"
    ran = set(summary.get("designs") or [])
    base = f"naive: max {fmt_value(_long_max(summary, 'naive'), 'tokens')}" if "naive" in ran else "naive: not run"
    peak = _long_max(summary, "harness") if "harness" in ran else None
    target = f"harness: max {fmt_value(peak, 'tokens')}" if "harness" in ran else "harness: not run"
    if peak is None:
        return _row(claim, base, target, NA, "n/a (design not run)" if "harness" not in ran else "n/a (no data)", NA)
    held = peak < 8000
    return _row(claim, base, target, f"max {peak:,.0f} tokens/message", "reproduced" if held else "not reproduced",
                "meets claim" if held else "above 8K")


def _resend_row(summary: Summary, design: str) -> dict[str, str]:
    claim = f"Full resend at turn 40 costs over 15x turn 1 ({design}, long scenarios)"
    growth = ((summary.get("growth") or {}).get(design) or {}).get("turn40")
    if design not in (summary.get("designs") or []) or not growth:
        why = "design not run" if design not in (summary.get("designs") or []) else "no long scenarios"
        return _row(claim, f"{design}: {NA}", f"{design}: {NA}", NA, f"n/a ({why})", NA)
    turn = growth["index"] + 1
    note = "" if growth["reached"] else f" (turn 40 not reached; last turn is {turn})"
    # Direction: a late call costs more than an early one (the history is resent); size: over 15x.
    grows, over = growth["ratio"] > 1, growth["ratio"] > 15
    return _row(claim, f"{design} turns 1-5: {fmt_value(growth['turn1'], 'tokens')}",
                f"{design} turns 36-{turn}: {fmt_value(growth['turn_n'], 'tokens')}{note}",
                f"{growth['ratio']:.1f}x", "reproduced" if grows else "not reproduced",
                "meets claim" if over else "below 15x")


def _cache_row(summary: Summary, design: str) -> dict[str, str]:
    claim = f"Stable prompt prefix: prompt-cache hit rate over 70% ({design})"
    ran = set(summary.get("designs") or [])
    base = f"naive: {fmt_value(metric_mean(summary, 'naive', 'prompt_cache_hit_rate'), 'rate')}" \
        if "naive" in ran else "naive: not run"
    rate = metric_mean(summary, design, "prompt_cache_hit_rate") if design in ran else None
    if rate is None:
        return _row(claim, base, f"{design}: {'not run' if design not in ran else NA}", NA,
                    "n/a (design not run)" if design not in ran else "n/a (no cache data)", NA)
    held = rate > 0.7
    return _row(claim, base, f"{design}: {fmt_value(rate, 'rate')}", fmt_value(rate, "rate"),
                "reproduced" if held else "not reproduced", "meets claim" if held else "at or below 70%")


def claim_rows(summary: Summary) -> list[dict[str, str]]:
    """One row per claim: claim, baseline and target values, measured change, verdict and magnitude.

    The verdict is about direction (the measured change goes the claimed way, or a threshold claim
    holds); "magnitude" says whether the size of the claim was reached as well.
    """
    rows = [_change_row(summary, c) for c in CHANGES[:6]]
    rows.append(_under_8k_row(summary))
    rows += [_resend_row(summary, d) for d in ("naive", "framework-default")]
    rows += [_change_row(summary, c) for c in CHANGES[6:]]
    rows += [_cache_row(summary, d) for d in ("layered", "harness")]
    return rows


# ------------------------------------------------------------------------------------------- sections


def _main_row(summary: Summary, design: str) -> list[str]:
    metrics = summary["metrics"][design]
    latency = (summary.get("latency") or {}).get(design) or {}
    cells = [design]
    for _, key in _MAIN_COLUMNS:
        pooled = latency.get("p50" if key == "latency_p50_s" else "p95") if key.startswith("latency_p") else None
        cells.append(fmt_stat(metrics.get(key), METRICS[key][1], pooled))
    retries = metrics.get("retries_per_429") or {}
    if retries.get("mean") is None:
        cells.append("no 429")
    else:
        honored = fmt_value((metrics.get("retry_after_honored") or {}).get("mean"), "rate")
        cells.append(f"{fmt_stat(retries, 'number')} ({honored} waited >= Retry-After)")
    pk = (summary.get("pass_k") or {}).get(design) or {}
    cells.append(f"{fmt_value(pk.get('rate'), 'rate')} (k={pk.get('k', NA)})")
    return cells


def _main_section(summary: Summary) -> list[str]:
    headers = ["Design", *(h for h, _ in _MAIN_COLUMNS), "Retries per 429", "pass^k"]
    rows = [_main_row(summary, d) for d in summary.get("designs") or []]
    return ["## Main results", "",
            "Mean across seeds ± half of the 95% t-interval across seeds (one seed: ± 0). Latency p50/p95 are "
            "over all messages of all seeds; their ± comes from the per-seed percentiles. Counts (repeated "
            "questions, loops stopped, handoffs) are per seed over all scenarios.", "",
            *_table(headers, rows), ""]


def _claims_section(summary: Summary) -> list[str]:
    rows = [[r["claim"], r["baseline"], r["target"], r["measured"], r["verdict"], r["magnitude"]]
            for r in claim_rows(summary)]
    return ["## Figures from the write-ups", "",
            "Direction: the measured change goes the way the write-up claims (or its threshold holds). "
            "Magnitude: whether the claimed size was reached too.", "",
            *_table(["Claim", "Baseline", "Target", "Measured", "Direction", "Magnitude"], rows), ""]


def _paired_section(summary: Summary) -> list[str]:
    rows = []
    for p in summary.get("paired") or []:
        ci = p.get("ci")
        span = f"[{100 * ci[0]:+.1f}, {100 * ci[1]:+.1f}]" if ci else NA
        mean = f"{100 * p['mean']:+.1f} pp" if p.get("mean") is not None else NA
        rows.append([p["design"], p["baseline"], mean, span, p.get("n", 0)])
    if not rows:
        return ["## Paired differences", "", "Only one design ran: nothing to pair.", ""]
    return ["## Paired differences", "",
            "Per scenario: success rate across seeds minus the baseline's; mean over shared scenarios with a "
            "paired 95% t-interval (pp = percentage points).", "",
            *_table(["Design", "Baseline", "Mean difference", "95% interval (pp)", "Scenarios"], rows), ""]


def _tag_section(summary: Summary) -> list[str]:
    designs = summary.get("designs") or []
    by_tag = summary.get("by_tag") or {}
    tags = sorted({t for d in designs for t in by_tag.get(d) or {}})
    rows = []
    for tag in tags:
        row: list[Any] = [tag]
        for d in designs:
            stat = (by_tag.get(d) or {}).get(tag)
            row.append(f"{fmt_stat(stat, 'rate')} (n={stat['n_scenarios']})" if stat else NA)
        rows.append(row)
    return ["## Task completion by tag", "", *_table(["Tag", *designs], rows), ""]


def _growth_section(summary: Summary) -> list[str]:
    rows = []
    for d in summary.get("designs") or []:
        growth = (summary.get("growth") or {}).get(d) or {}
        curve = (summary.get("tokens_by_turn") or {}).get(d) or []
        first = next((p["mean"] for p in curve if p["index"] == 0), None)
        ratio = growth.get("ratio_20plus_vs_1")
        t40 = growth.get("turn40")
        rows.append([d, fmt_value(first, "tokens"), f"{ratio:.1f}x" if ratio is not None else NA,
                     f"{t40['ratio']:.1f}x (turn {t40['index'] + 1})" if t40 else NA,
                     fmt_value(_long_max(summary, d), "tokens")])
    return ["## Input-token growth", "",
            "Turn 20+ vs turn 1 over conversations that reach 20 turns; turn 40 vs turn 1 over long scenarios.", "",
            *_table(["Design", "Tokens/msg at turn 1", "Turns 20+ / turn 1", "Turn 40 / turn 1",
                     "Max tokens/msg (long)"], rows), ""]


def render_report(summary: Summary, command: str, date: str | None = None) -> str:
    """The markdown text of the report."""
    when = date or datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
    seed_list = list(summary.get("seeds") or [])
    seeds = f"{len(seed_list)} ({', '.join(map(str, seed_list))})" if seed_list else ""
    header = [
        f"# A/B comparison: {', '.join(summary.get('designs') or [])}", "",
        "Produced by:", "", "```text", command, "```", "",
        f"Date: {when}", "",
        f"Domain: {', '.join(summary.get('domains') or []) or NA}; "
        f"scenarios: {summary.get('n_scenarios', 0)}; seeds: {seeds or NA}; "
        f"baseline for paired differences: {summary.get('baseline') or NA}.", "",
    ]
    body = (_main_section(summary) + _claims_section(summary) + _paired_section(summary) + _tag_section(summary)
            + _growth_section(summary))
    return "\n".join(header + body)


def write_report(summary: Summary, out_dir: str | Path, command: str) -> Path:
    """Write ``report.md`` into ``out_dir`` (created if needed) and return its path.

    Args:
        summary: What :func:`evals.metrics.aggregate` returned.
        out_dir: Folder of the comparison's outputs.
        command: The exact command line that produced the run, quoted in the report.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "report.md"
    path.write_text(render_report(summary, command), encoding="utf-8")
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
