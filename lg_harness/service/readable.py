"""A thread as a person reads it in the terminal: ``harness chat``'s ``/state`` and ``/history``, and
``harness history --transcript``.

The state holds what the harness wrote for the model (results and errors wrapped as ``<tool_result ...>`` and
``<tool_error ...>``, counters, epoch times); a person gets labelled lines with the wrappers taken off
(``tools.cleaning.readable``). The transcript shows who wrote each message: the customer, the bot, or a human
at the desk by name (``memory.transcript.author_label``).
"""

from __future__ import annotations

from typing import Any

from lg_harness.memory.transcript import author_label
from lg_harness.tools.cleaning import readable


def _value(value: Any) -> str:
    if isinstance(value, dict):
        return ", ".join(f"{k}={_value(v)}" for k, v in value.items() if v not in (None, "", [], {}))
    if isinstance(value, list | tuple):
        return ", ".join(_value(v) for v in value)
    return readable(str(value))


def state_lines(values: dict[str, Any]) -> list[str]:
    """Where a thread stands, one labelled line per thing known (nothing for what is empty)."""
    stats = values.get("turn_stats") or {}
    handoff = values.get("handoff") or {}
    card = dict(values.get("fact_card") or {})
    steps = card.pop("open_steps", None) or []
    lines = [f"turn {values.get('turn') or 0} · phase {values.get('phase') or '-'} · intent "
             f"{values.get('intent') or '-'}"]
    shown = [("asked for", values.get("slots")), ("still needed", values.get("missing_slots")), ("known", card),
             ("the customer asked", values.get("constraints")),
             ("handoff", {k: handoff.get(k) for k in ("ticket", "reason")} if handoff else None)]
    lines += [f"{label}: {_value(value)}" for label, value in shown if value]
    lines += [f"open step: {_value(step)}" for step in steps]
    if stats:
        lines.append(f"last message: {stats.get('model_calls', 0)} model calls, {stats.get('tool_calls', 0)} tool "
                     f"calls ({stats.get('tool_errors', 0)} failed), {float(stats.get('elapsed_s') or 0):.2f} s")
    if summary := values.get("summary"):
        lines += ["summary:", *(f"  {readable(line)}" for line in str(summary).splitlines() if line.strip())]
    if reply := values.get("reply"):
        lines.append(f"last reply: {reply}")
    return lines


def transcript_lines(rows: list[dict[str, Any]]) -> list[str]:
    """``[turn] who: text`` for each row: a customer message and every answer to it share its turn."""
    return [f"[{row['turn']}] {author_label(row)}: {row['content']}" for row in rows]
