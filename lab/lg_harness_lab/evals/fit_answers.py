"""The answer-step rates per presentation and decoding, fitted from the answer-step probes' rows.

The first ``facts`` probes measured one answer step: the result replayed as a tool message, free decoding.
The answer-step probes (``evals.answer_probes``, ``harness calibrate --answer-steps``) ask the same answers
in every presentation of the result (``replay``, ``facts``, ``both``) with free and constrained decoding;
their rows say whether the reply was words or data. From them, per ``<presentation>/<decoding>``:

- ``call_after_result``: the reply is a call (written as text, or as a tool call) instead of an answer;
- ``echo_result``: of the replies that are not calls, the share that is data (JSON, field lines, nothing).

Each carries k, n and its Wilson interval, for ``FaultProfile.answer_steps`` (``sim/simlm/fitted.yaml``), so
the sim can answer each presentation at its own measured rates where it can tell which one a request uses.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from lg_harness.tools.textcalls import TextCallParseError, parse_tool_calls
from lg_harness_lab.evals.stats import wilson


def _is_call(row: Mapping[str, Any]) -> bool:
    text = str(row.get("reply") or "").strip()
    if row.get("tool_call") or not text:
        return bool(row.get("tool_call"))
    try:
        return bool(parse_tool_calls(text))
    except TextCallParseError:
        return text.lstrip().startswith(("{", "<tool_call>"))


def _rate(k: int, n: int) -> dict[str, Any]:
    interval = wilson(k, n)  # None when n is 0
    return {"rate": round(k / n, 4) if n else 0.0, "k": k, "n": n,
            "ci": [round(x, 4) for x in interval] if interval is not None else None}


def fit_answer_steps(rows: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """``{"<presentation>/<decoding>": {"call_after_result": {...}, "echo_result": {...}}}`` from the rows."""
    groups: dict[str, list[Mapping[str, Any]]] = {}
    for row in rows:
        if "error" not in row and row.get("presentation") and row.get("decoding"):
            groups.setdefault(f"{row['presentation']}/{row['decoding']}", []).append(row)
    out = {}
    for key, chosen in sorted(groups.items()):
        calls = [r for r in chosen if _is_call(r)]
        answers = [r for r in chosen if not _is_call(r)]
        out[key] = {"call_after_result": _rate(len(calls), len(chosen)),
                    "echo_result": _rate(sum(bool(r.get("data")) for r in answers), len(answers))}
    return out
