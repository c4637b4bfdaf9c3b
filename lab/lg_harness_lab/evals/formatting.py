"""How figures are written in the report: a value, its 95% interval and the n it rests on, side by side."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from lg_harness_lab.evals.stats import MIN_CLUSTERS

NA = "n/a"
WILSON_MARK = "†"  # the interval is Wilson's on the pooled count (too few scenario kinds to resample)


def cell(text: Any) -> str:
    # a pipe inside a value would split the markdown table
    return str(text).replace("|", "\\|").replace("\n", " ")


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[str]:
    lines = ["| " + " | ".join(cell(h) for h in headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return lines


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


def _bare(value: float, kind: str) -> str:
    # interval ends without the unit: "80.1" for a rate, "1,402" for tokens
    return f"{100 * value:.1f}" if kind == "rate" else fmt_value(value, kind).removesuffix(" s")


def fmt_interval(ci: Sequence[float] | None, kind: str) -> str:
    return f"[{_bare(ci[0], kind)}–{_bare(ci[1], kind)}]" if ci else ""


def fmt_n(stat: Mapping[str, Any]) -> str:
    """``n=36`` (scenarios), with the units a per-turn or per-call rate pools: ``n=36, 412 calls``."""
    n = stat.get("n")
    if n is None:
        return ""
    unit, units = stat.get("unit"), stat.get("units")
    if unit and unit != "scenarios" and units is not None:
        return f"n={n}, {units:,.0f} {unit}"
    return f"n={n}"


def fmt_stat(stat: Mapping[str, Any] | None, kind: str, *, with_n: bool = True) -> str:
    """``value [lo–hi] (n=...)``: the pooled value, its 95% interval and what it rests on."""
    if not stat or stat.get("mean") is None:
        return NA
    mark = WILSON_MARK if stat.get("method") == "wilson" else ""
    text = f"{fmt_value(stat['mean'], kind)} {fmt_interval(stat.get('ci'), kind)}{mark}".rstrip()
    n = fmt_n(stat) if with_n else ""
    return f"{text} ({n})" if n else text


def fmt_diff(diff: Mapping[str, Any] | None, kind: str) -> str:
    """A paired difference: ``-4.7 pp [-6.3, -3.0]`` for rates, relative units otherwise."""
    if not diff or diff.get("mean") is None:
        return NA
    scale, unit = (100.0, " pp") if kind == "rate" else (1.0, "")
    ci = diff.get("ci")

    def num(v: float) -> str:
        return {"rate": f"{scale * v:+.1f}", "tokens": f"{v:+,.0f}"}.get(kind, f"{v:+.2f}")

    span = f" [{num(ci[0])}, {num(ci[1])}]" if ci else ""
    return f"{num(diff['mean'])}{unit}{span}"


def significance(diff: Mapping[str, Any] | None) -> str:
    """What a paired difference's interval says: significant, no significant difference, or too few kinds."""
    if not diff or diff.get("ci") is None:
        return NA
    if diff.get("clusters", 0) < MIN_CLUSTERS:
        return f"too few scenario kinds to tell ({diff.get('clusters', 0)})"
    if not diff.get("significant"):
        return "no significant difference"
    return "significantly higher" if diff["mean"] > 0 else "significantly lower"


# ------------------------------------------------------------------------------------ the console table

# Below this many scenarios behind a figure, no verdict is given: a handful of runs cannot tell.
MIN_SCENARIOS = 10
TOO_FEW = "too few scenarios to tell"
CONSOLE_LEGEND = (f"[lo–hi]: 95% interval (cluster bootstrap over scenario kinds; {WILSON_MARK} Wilson's on few "
                  f"kinds); n: scenarios; 'too few to tell': under {MIN_SCENARIOS} scenarios; report.md has the rest")


def console_cell(stat: Mapping[str, Any] | None, kind: str, scenarios: int | None = None) -> str:
    """One figure of the terminal table: the value, its interval on the next line, and its n where it rests on
    fewer scenarios than the design ran (an early-reference rate on 2 recall turns), flagged under
    ``MIN_SCENARIOS``."""
    if not stat or stat.get("mean") is None:
        return NA
    mark = WILSON_MARK if stat.get("method") == "wilson" else ""
    lines = [fmt_value(stat["mean"], kind)]
    if stat.get("ci"):
        lines.append(fmt_interval(stat["ci"], kind) + mark)
    n = stat.get("n")
    if isinstance(n, int) and n < MIN_SCENARIOS:
        lines += [f"n={n}", "too few to tell"]
    elif isinstance(n, int) and n != scenarios:
        lines.append(f"n={n}")
    return "\n".join(lines)


def console_diff(diff: Mapping[str, Any] | None) -> str:
    """A paired completion difference for the terminal: ``-10.0 pp`` over its interval and its verdict."""
    if not diff or diff.get("mean") is None:
        return NA
    if (diff.get("n") or 0) < MIN_SCENARIOS:
        verdict = "too few to tell"
    else:
        verdict = {"no significant difference": "not significant"}.get(significance(diff), significance(diff))
    value, _, span = fmt_diff(diff, "rate").partition(" [")
    return "\n".join([value, *([f"[{span}"] if span else []), verdict])


def column_groups(headers: Sequence[str], rows: Sequence[Sequence[str]], width: int, keep: int = 2) -> list[list[int]]:
    """Split a table's columns into groups that each fit ``width`` characters, every group led by the first
    ``keep`` columns (the design and its n), so no name or figure is ever cut or folded: a narrow terminal
    gets two or three tables instead of one unreadable one. A column is as wide as its longest line, plus
    3 for the border and padding."""
    def need(i: int) -> int:
        lines = [line for text in (headers[i], *(r[i] for r in rows)) for line in str(text).splitlines()]
        return max((len(line) for line in lines), default=1) + 3

    lead = sum(need(i) for i in range(keep)) + 1
    groups: list[list[int]] = []
    used = width  # start a new group at the first column
    for i in range(keep, len(headers)):
        if used + need(i) > width and (not groups or len(groups[-1]) > keep):
            groups.append(list(range(keep)))
            used = lead
        groups[-1].append(i)
        used += need(i)
    return groups or [list(range(len(headers)))]
