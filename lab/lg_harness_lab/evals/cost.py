"""What a real model costs per message, per design: seconds, tokens, the prompt cache's share, tokens/s.

On a local CPU model the figures that decide whether a comparison is affordable are how long a message
takes, how much of each prompt the engine did not have to read again (a stable prefix: system prompt,
tools and early turns first), and how fast it reads and writes. They come from the run records: each
message's measured model time and tokens, and llama.cpp's own timings (``speed``: prompt tokens read and
tokens written, with the seconds each took; ``llm.local``). A model that does not report timings shows
n/a there.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from lg_harness_lab.evals.formatting import NA, table
from lg_harness_lab.evals.metrics import percentile


def _rate(num: float, den: float) -> float | None:
    return num / den if den else None


def design_cost(messages: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The cost figures of one design's messages (each a cell's ``messages`` entry)."""
    seconds = [float(m.get("latency_s") or 0.0) for m in messages]
    cached = [m for m in messages if m.get("cached_input_tokens") is not None]
    speed: dict[str, float] = defaultdict(float)
    for m in messages:
        for key, value in (m.get("speed") or {}).items():
            speed[key] += float(value)
    n = len(messages)
    return {
        "messages": n,
        "seconds_per_message": _rate(sum(seconds), n), "seconds_p50": percentile(seconds, 50),
        "input_tokens_per_message": _rate(sum(m.get("input_tokens") or 0 for m in messages), n),
        "cached_share": _rate(sum(m["cached_input_tokens"] for m in cached), sum(m.get("input_tokens") or 0 for m in cached)),
        "output_tokens_per_message": _rate(sum(m.get("output_tokens") or 0 for m in messages), n),
        "prompt_tokens_per_s": _rate(speed["prompt_eval_tokens"], speed["prompt_eval_s"]),
        "output_tokens_per_s": _rate(speed["generated_tokens"], speed["generation_s"]),
    }


def cost_by_design(summary: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    by: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for cell in summary.get("cells") or []:
        by[str(cell.get("design"))].extend(cell.get("messages") or [])
    return {d: design_cost(by[d]) for d in summary.get("designs") or [] if d in by}


def _f(value: float | None, fmt: str) -> str:
    return NA if value is None else format(value, fmt)


def cost_section(summary: Mapping[str, Any]) -> list[str]:
    """The report's section on what each message cost on the real model."""
    rows = [[d, c["messages"], _f(c["seconds_per_message"], ".1f"), _f(c["seconds_p50"], ".1f"),
             _f(c["input_tokens_per_message"], ",.0f"), _f(c["cached_share"] and 100 * c["cached_share"], ".1f"),
             _f(c["output_tokens_per_message"], ",.0f"), _f(c["prompt_tokens_per_s"], ".0f"),
             _f(c["output_tokens_per_s"], ".1f")] for d, c in cost_by_design(summary).items()]
    return ["## Real-model cost per message", "",
            "Measured on the machine that ran the cells (shared, so slower than an idle one). Cached: the share "
            "of prompt tokens the engine did not read again (the longest prefix it held from an earlier call). "
            "Read and written tokens/s are llama.cpp's own timings of prompt evaluation and generation.", "",
            *table(["Design", "Messages", "s/message", "s p50", "Prompt tokens/msg", "Cached %", "Output tokens/msg",
                    "Read tokens/s", "Written tokens/s"], rows), ""]


def cell_line(record: Mapping[str, Any]) -> str:
    """One line per finished real-model cell: how long it took, how fast the engine read and wrote."""
    turns = record.get("turns") or []
    cost = design_cost([{**t, "cached_input_tokens": t.get("cached_input_tokens")} for t in turns])
    written, read = cost["output_tokens_per_s"], cost["prompt_tokens_per_s"]
    cached = cost["cached_share"]
    return (f"{record.get('cell')}: {len(turns)} messages, {sum(float(t.get('latency_s') or 0) for t in turns):.1f} s"
            + (f", written {written:.1f} tokens/s" if written else "") + (f", read {read:.0f} tokens/s" if read else "")
            + (f", {100 * cached:.0f}% of prompt tokens cached" if cached is not None else ""))
