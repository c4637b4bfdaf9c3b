"""PNG plots of an A/B comparison, drawn from an aggregate summary with matplotlib's Agg canvas.

Figures are built as ``matplotlib.figure.Figure`` objects on their own ``FigureCanvasAgg``: no pyplot,
so nothing global changes and plots can be drawn from worker threads or a server.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from lg_harness_lab.evals.formatting import WILSON_MARK
from lg_harness_lab.evals.metrics import METRICS
from lg_harness_lab.evals.report import main_designs

# Per-seed metrics that get a bar chart, in report order.
BAR_METRICS = (
    "task_completion", "arg_validity_emitted", "arg_validity_boundary", "intent_accuracy", "turn_pass_rate", "model_calls_per_msg",
    "input_tokens_per_msg", "input_tokens_per_call", "latency_p50_s", "latency_p95_s", "early_reference",
    "repeated_questions", "loops_stopped", "handoffs", "retries_per_429", "retry_after_honored",
    "tool_failure_rate", "false_facts", "internal_text", "dump_replies", "wrong_language", "relayed_instruction",
    "unrequested_changes",
)
_UNITS = {"rate": "%", "tokens": "tokens", "seconds": "seconds", "count": "count per seed", "number": "mean"}


def _figure(width: float = 7.5, height: float = 4.5) -> Figure:
    fig = Figure(figsize=(width, height), dpi=110, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _save(fig: Figure, path: Path) -> Path:
    fig.savefig(path, format="png")
    return path


LOG_SPAN = 10.0
"""Positive values spanning this factor or more get a log axis: on a linear one the small bars sit flat on
the floor (34,770 tokens beside 1,307)."""


def interval_note(methods: Sequence[str | None], *, paired: bool = False) -> str:
    """The subtitle naming the interval method the figures actually used (``evals.stats.estimate``)."""
    used = {m for m in methods if m}
    if paired:
        return "error bars: paired 95% interval, cluster bootstrap over scenario kinds"
    if used == {"wilson"}:
        return "error bars: 95% Wilson score interval (too few scenario kinds to resample)"
    if "wilson" in used:
        return (f"error bars: 95% interval, cluster bootstrap over scenario kinds; {WILSON_MARK} Wilson score "
                "interval where a design rests on too few kinds")
    if used:
        return "error bars: 95% interval, cluster bootstrap over scenario kinds"
    return "no interval: too little data"


def value_scale(values: Sequence[float]) -> str:
    """``linear``, or ``log`` (``symlog`` with zeros) when the positive values span ``LOG_SPAN`` or more."""
    positive = [v for v in values if v > 0]
    if len(positive) < 2 or max(positive) / min(positive) < LOG_SPAN:
        return "linear"
    return "symlog" if len(positive) < len(values) else "log"


def _bar_data(summary: Mapping[str, Any], key: str) -> dict[str, list[Any]]:
    """Designs with a value: their means, asymmetric error bars (rates scaled to percent), interval methods
    and the n each rests on."""
    scale = 100.0 if METRICS[key][1] == "rate" else 1.0
    data: dict[str, list[Any]] = {"names": [], "means": [], "lo": [], "hi": [], "methods": [], "n": []}
    for design in main_designs(summary):
        stat = ((summary.get("metrics") or {}).get(design) or {}).get(key) or {}
        if stat.get("mean") is None:
            continue
        mean = stat["mean"] * scale
        lo, hi = (v * scale for v in stat["ci"]) if stat.get("ci") else (mean, mean)
        for field, value in (("names", design), ("means", mean), ("lo", max(mean - lo, 0.0)),
                             ("hi", max(hi - mean, 0.0)), ("methods", stat.get("method")), ("n", stat.get("n"))):
            data[field].append(value)
    return data


def _bar_labels(data: Mapping[str, list[Any]], kind: str) -> list[str]:
    fmt = "{:.1f}%" if kind == "rate" else ("{:,.0f}" if kind == "tokens" else "{:.2f}")
    return [fmt.format(m) + (WILSON_MARK if method == "wilson" else "")
            for m, method in zip(data["means"], data["methods"], strict=True)]


def _n_note(ns: Sequence[Any]) -> str:
    known = sorted({n for n in ns if n is not None})
    if not known:
        return ""
    return f"n = {known[0]} scenarios" if len(known) == 1 else f"n = {known[0]}-{known[-1]} scenarios"


def _scale_axis(ax: Any, values: Sequence[float], tops: Sequence[float], kind: str) -> str:
    # a percentage keeps its linear 0-100 reading; tokens, counts and seconds may span orders of magnitude
    scale = "linear" if kind == "rate" else value_scale(values)
    if scale == "linear":
        ax.set_ylim(0, max(tops) * 1.18 or 1.0)
        return ""
    positive = [v for v in values if v > 0]
    if scale == "symlog":
        ax.set_yscale("symlog", linthresh=min(positive))
    else:
        ax.set_yscale("log")
    ax.set_ylim(min(positive) / 2 if scale == "log" else 0, max(tops) * 3)
    return ", log scale"


def bar_figure(summary: Mapping[str, Any], key: str) -> Figure | None:
    """One metric per design with its 95% interval as error bars; every bar labelled with its value (zeros
    too), a log axis where the values span an order of magnitude, the interval method in the subtitle.
    None if no design has the metric."""
    data = _bar_data(summary, key)
    if not data["names"]:
        return None
    label, kind = METRICS[key]
    fig = _figure()
    ax = fig.add_subplot()
    bars = ax.bar(data["names"], data["means"], yerr=[data["lo"], data["hi"]], capsize=5, color="#4C72B0",
                  edgecolor="black", linewidth=0.5)
    ax.bar_label(bars, labels=_bar_labels(data, kind), padding=3, fontsize=9)
    n_note = _n_note(data["n"])
    ax.set_title(f"{label} by design\n({interval_note(data['methods'])}{'; ' + n_note if n_note else ''})",
                 fontsize=10)
    ax.set_xlabel("design")
    tops = [m + e for m, e in zip(data["means"], data["hi"], strict=True)]
    ax.set_ylabel(f"{label} ({_UNITS[kind]}{_scale_axis(ax, data['means'], tops, kind)})")
    ax.tick_params(axis="x", labelrotation=15)
    ax.grid(axis="y", alpha=0.3)
    return fig


def bar_chart(summary: Mapping[str, Any], key: str, path: Path) -> Path | None:
    """:func:`bar_figure` written as a PNG; None if no design has the metric."""
    fig = bar_figure(summary, key)
    return None if fig is None else _save(fig, path)


def _token_curves(summary: Mapping[str, Any]) -> tuple[str, dict[str, Sequence[Mapping[str, Any]]]]:
    # long scenarios show growth best: short ones crowd turn 1 and end before growth shows
    designs = main_designs(summary)
    long: dict[str, Sequence[Mapping[str, Any]]] = {
        d: (summary.get("long") or {}).get(d, {}).get("tokens_by_turn") or [] for d in designs}
    if any(long.values()):
        return "long scenarios", long
    return "all scenarios", {d: (summary.get("tokens_by_turn") or {}).get(d) or [] for d in designs}


def tokens_by_turn_plot(summary: Mapping[str, Any], path: Path) -> Path | None:
    """Mean input tokens per message against turn number, one line per design."""
    subset, curves = _token_curves(summary)
    if not any(curves.values()):
        return None
    fig = _figure(8, 4.8)
    ax = fig.add_subplot()
    for design, curve in curves.items():
        if curve:
            ax.plot([p["index"] + 1 for p in curve], [p["mean"] for p in curve], marker="o", markersize=3,
                    label=design)
    ax.set_title(f"Input tokens per message by turn ({subset})")
    ax.set_xlabel("turn number in the conversation")
    means = [p["mean"] for curve in curves.values() for p in curve if p.get("mean") is not None]
    log = value_scale(means) != "linear"
    if log:  # a full-history design's growth would flatten every trimmed design at the floor
        ax.set_yscale("symlog" if min(means) <= 0 else "log", **({"linthresh": 1.0} if min(means) <= 0 else {}))
    ax.set_ylabel(f"input tokens per message (mean{', log scale' if log else ''})")
    ax.grid(alpha=0.3)
    ax.legend()
    return _save(fig, path)


def latency_cdf_plot(summary: Mapping[str, Any], path: Path) -> Path | None:
    """Cumulative distribution of latency per message, one step line per design."""
    latency = summary.get("latency") or {}
    series = {d: (latency.get(d) or {}).get("values") or [] for d in main_designs(summary)}
    if not any(series.values()):
        return None
    fig = _figure()
    ax = fig.add_subplot()
    for design, values in series.items():
        if values:
            xs = sorted(values)
            ax.step(xs, [(i + 1) / len(xs) for i in range(len(xs))], where="post", label=design)
    ax.set_title("Latency per message: cumulative distribution")
    ax.set_xlabel("latency per message (virtual seconds)")
    ax.set_ylabel("fraction of messages at or below")
    ax.set_ylim(0, 1.02)
    ax.grid(alpha=0.3)
    ax.legend()
    return _save(fig, path)


def ablation_figure(summary: Mapping[str, Any]) -> Figure | None:
    """Task completion of each ablation minus its base's, with the paired 95% interval; every bar labelled
    with its difference, so a knob that changes nothing shows as +0.0 rather than as no bar. None without any."""
    rows = [(a["design"], a["paired"]) for a in summary.get("ablations") or [] if a["paired"].get("mean") is not None]
    if not rows:
        return None
    fig = _figure(8, 1.1 + 0.35 * len(rows))
    ax = fig.add_subplot()
    means = [100 * p["mean"] for _, p in rows]
    lo = [max(m - 100 * p["ci"][0], 0.0) if p.get("ci") else 0.0 for m, (_, p) in zip(means, rows, strict=True)]
    hi = [max(100 * p["ci"][1] - m, 0.0) if p.get("ci") else 0.0 for m, (_, p) in zip(means, rows, strict=True)]
    bars = ax.barh([d for d, _ in rows], means, xerr=[lo, hi], capsize=4, color="#C44E52", edgecolor="black",
                   linewidth=0.5)
    ax.bar_label(bars, labels=[f"{m:+.1f}" for m in means], padding=4, fontsize=8)
    ax.axvline(0, color="black", linewidth=0.8)
    ax.invert_yaxis()
    ax.set_title("One-knob ablations: task completion minus the base design's\n"
                 f"({interval_note([], paired=True)})", fontsize=10)
    ax.set_xlabel("difference (percentage points)")
    ax.grid(axis="x", alpha=0.3)
    return fig


def ablation_plot(summary: Mapping[str, Any], path: Path) -> Path | None:
    """:func:`ablation_figure` written as a PNG; None without ablations."""
    fig = ablation_figure(summary)
    return None if fig is None else _save(fig, path)


def write_plots(summary: Mapping[str, Any], out_dir: str | Path) -> list[Path]:
    """Write the comparison's PNGs into ``out_dir`` (created if needed) and return their paths.

    One bar chart per main metric that has data (designs on x, 95% interval error bars), input tokens per
    message against turn number, and the latency CDF.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = [bar_chart(summary, key, out / f"{key}.png") for key in BAR_METRICS]
    written.append(tokens_by_turn_plot(summary, out / "tokens_by_turn.png"))
    written.append(latency_cdf_plot(summary, out / "latency_cdf.png"))
    written.append(ablation_plot(summary, out / "ablations.png"))
    return [p for p in written if p is not None]
