"""Drawing traces and audit statistics for the terminal (rich), from the files in the data dir."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from rich.table import Table
from rich.text import Text
from rich.tree import Tree

from lg_harness.obs.audit import StatRow
from lg_harness.obs.tracing import trace_file

# Attributes worth a glance in the tree, in display order, with their short labels.
_KEY_ATTRS = (
    ("harness.thread_id", "thread"),
    ("harness.turn", "turn"),
    ("gen_ai.response.finish_reasons", "finish"),
    ("harness.model.tool_calls", "tool calls"),
    ("harness.tool.status", "status"),
    ("harness.tool.attempts", "attempts"),
    ("http.response.status_code", "http"),
)
_PHASES = (("harness.tool.validate_ms", "validate"), ("harness.tool.call_ms", "call"),
           ("harness.tool.parse_ms", "parse"))
_HIDDEN_EVENTS = frozenset({"exception"})  # its class and message are already on the span's own line


# --------------------------------------------------------------------------------------------- loading


def read_spans(path: str | Path) -> list[dict[str, Any]]:
    """Every span in a JSON-lines file; a line cut short by a crash is skipped, not fatal."""
    path = Path(path)
    if not path.exists():
        return []
    spans = []
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            try:
                item = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(item, dict) and "trace_id" in item:
                spans.append(item)
    return spans


def _start(span: dict[str, Any]) -> int:
    return int(span.get("start_ns") or 0)


def _is_message(span: dict[str, Any]) -> bool:
    return (span.get("attributes") or {}).get("harness.span.kind") == "message"


def _last_trace_id(spans: Sequence[dict[str, Any]], thread_id: str | None) -> str | None:
    roots = [s for s in spans if _is_message(s)
             and (thread_id is None or (s.get("attributes") or {}).get("harness.thread_id") == thread_id)]
    if not roots and thread_id is None:
        roots = list(spans)  # no message spans at all: the newest trace of any kind
    return max(roots, key=_start)["trace_id"] if roots else None


def load_trace(data_dir: str | Path, thread_id: str | None = None,
               trace_id: str | None = None) -> list[dict[str, Any]]:
    """The spans of one trace from ``<data dir>/traces/spans.jsonl``, oldest first.

    Args:
        data_dir: The harness data dir.
        thread_id: Take the thread's last message (message spans carry ``harness.thread_id``).
        trace_id: Take exactly this trace (wins over ``thread_id``).

    Returns:
        The spans, or an empty list when there is no such trace (or no file).
    """
    spans = read_spans(trace_file(data_dir))
    wanted = trace_id or _last_trace_id(spans, thread_id)
    if wanted is None:
        return []
    return sorted((s for s in spans if s.get("trace_id") == wanted), key=_start)


# -------------------------------------------------------------------------------------------- drawing


def _fmt(value: Any) -> str:
    if isinstance(value, list):
        return ",".join(str(v) for v in value)
    if isinstance(value, float):
        return f"{value:.1f}"
    return str(value)


def span_details(attrs: dict[str, Any]) -> list[str]:
    """The attributes worth a glance, as short ``label=value`` texts (tokens, thread, status, phases)."""
    parts = []
    if "gen_ai.usage.input_tokens" in attrs or "gen_ai.usage.output_tokens" in attrs:
        parts.append(f"tokens {attrs.get('gen_ai.usage.input_tokens', '?')}→"
                     f"{attrs.get('gen_ai.usage.output_tokens', '?')}")
    parts += [f"{label}={_fmt(attrs[key])}" for key, label in _KEY_ATTRS if key in attrs]
    phases = [f"{label} {attrs[key]:.1f}" for key, label in _PHASES if isinstance(attrs.get(key), int | float)]
    if phases:
        parts.append("(" + ", ".join(phases) + " ms)")
    return parts


def span_label(span: dict[str, Any]) -> Text:
    """One line per span: name, duration, key attributes, and the error in red."""
    attrs = span.get("attributes") or {}
    failed = (span.get("status") or {}).get("code") == "ERROR"
    label = Text(span.get("name", "?"), style="bold red" if failed else "bold")
    label.append(f"  {float(span.get('duration_ms') or 0):.1f} ms", style="cyan")
    details = span_details(attrs)
    if details:
        label.append("  " + "  ".join(details), style="dim")
    if failed:
        error = attrs.get("error.type") or "error"
        message = attrs.get("exception.message")
        label.append(f"  ✗ {error}" + (f": {message}" if message else ""), style="red")
    return label


def event_label(event: dict[str, Any]) -> Text:
    """An event under its span: ``• tool.retry attempt=1 wait_s=2.0``."""
    label = Text(f"• {event.get('name', '?')}", style="yellow")
    attrs = event.get("attributes") or {}
    if attrs:
        label.append("  " + " ".join(f"{k}={_fmt(v)}" for k, v in attrs.items()), style="dim")
    return label


def _grow(branch: Tree, span: dict[str, Any], children: dict[str | None, list[dict[str, Any]]]) -> None:
    # Events and child spans in time order, so a retry shows between the attempts it separates.
    items: list[tuple[int, int, Any]] = [(int(e.get("ts_ns") or 0), 0, e) for e in span.get("events") or []
                                         if e.get("name") not in _HIDDEN_EVENTS]
    items += [(_start(c), 1, c) for c in children.get(span.get("span_id"), [])]
    for _, is_span, item in sorted(items, key=lambda x: (x[0], x[1])):
        if is_span:
            _grow(branch.add(span_label(item)), item, children)
        else:
            branch.add(event_label(item))


def _newest_trace(spans: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    spans = list(spans)
    wanted = _last_trace_id(spans, None)
    return [s for s in spans if s.get("trace_id") == wanted]


def span_forest(spans: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], dict[str | None, list[dict[str, Any]]]]:
    """The spans' roots (usually one; several when the process died before writing the root) and each span's
    children by span id, both in start order."""
    ids = {s.get("span_id") for s in spans}
    children: dict[str | None, list[dict[str, Any]]] = defaultdict(list)
    roots = []
    for span in sorted(spans, key=_start):
        if span.get("parent_id") in ids:
            children[span["parent_id"]].append(span)
        else:
            roots.append(span)
    return roots, children


def span_tree(spans: list[dict[str, Any]]) -> Tree:
    """The last message's spans as a tree (nesting by parent id), with durations and key attributes.

    ``spans`` are dicts as the ``file`` exporter writes them (``load_trace``); when they hold several
    traces, the newest is drawn.
    """
    spans = _newest_trace(spans)
    if not spans:
        return Tree(Text("no spans recorded: run with HARNESS_TRACE=file", style="dim"))
    roots, children = span_forest(spans)
    if len(roots) == 1:
        tree = Tree(span_label(roots[0]))
        _grow(tree, roots[0], children)
        return tree
    # The root was not written (the process died mid-message): draw the orphans side by side.
    tree = Tree(Text(f"trace {spans[0].get('trace_id')}", style="bold"))
    for root in roots:
        _grow(tree.add(span_label(root)), root, children)
    return tree


def fmt_stat(value: float | None, unit: str) -> str:
    if value is None:
        return "-"
    if unit == "ratio":
        return f"{value:.1%}"
    if unit == "tokens":
        return f"{value:,.0f}"
    if unit == "s":
        return f"{value:.2f} s"
    return f"{value:.2f}"


def stats_table(rows: Sequence[StatRow]) -> Table:
    """Audit statistics with their thresholds; flagged rows in red."""
    table = Table("metric", "value", "threshold", "flag", title="audit stats")
    for row in rows:
        table.add_row(row.metric, fmt_stat(row.value, row.unit),
                      f"{row.rule} {fmt_stat(row.threshold, row.unit)}", "⚠" if row.flagged else "",
                      style="red" if row.flagged else None)
    return table
