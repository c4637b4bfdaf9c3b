"""Speed of the local model (``local:qwen2.5-coder-0.5b``) on this machine, through the real adapter.

For two prompt sizes built from the shop's system prompt and tool schemas (about 340 tokens: one tool;
about 1,500: seven tools) it times, on the wall, each call of a two-call conversation as the harness makes
it: call 1 is ``[system, user]`` and the model answers with a tool call; call 2 adds that call and its tool
result. Call 2 runs twice: cold (llama.cpp's KV cache emptied first, so the whole prompt is evaluated) and
warm (right after call 1, so only the tokens after the shared prefix are). llama.cpp's own counters split
each call into prompt evaluation and generation, giving prompt tokens/s and generation tokens/s. Every
figure is the median of ``--repeat`` runs ("best s" the fastest); the machine's load average is printed with
them, since other processes on the two cores slow every figure (the fastest run is the least disturbed).

Run ``.venv/bin/python -m lg_harness_lab.benchmarks.local_model_speed [--model qwen2.5-coder-0.5b] [--repeat 3]
[--json]`` (needs ``bash scripts/setup.sh --local-model``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from typing import TYPE_CHECKING, Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

if TYPE_CHECKING:
    from lg_harness.tools.registry import ToolRegistry, ToolSpec

SIZES = {"~340": ("get_order_status",),
         "~1500": ("search_products", "get_product", "get_order_status", "list_my_orders", "cancel_order",
                   "request_return", "file_complaint")}
QUESTION = "Where is my order ORD-10134?"
RESULT = {"order_id": "ORD-10134", "status": "shipped", "carrier": "DHL", "tracking_number": "JD014600012345",
          "placed_at": "2026-11-20", "items": [{"product": "Wireless Mouse M2", "qty": 1, "price": 24.99}]}


def _perf(model: Any) -> dict[str, float]:
    import llama_cpp  # pyright: ignore[reportMissingImports]  (the optional `local` extra)

    data = llama_cpp.llama_perf_context(model.engine().llama._ctx.ctx)
    return {"prompt_ms": data.t_p_eval_ms, "prompt_n": data.n_p_eval, "gen_ms": data.t_eval_ms,
            "gen_n": data.n_eval}


def _reset_perf(model: Any) -> None:
    import llama_cpp  # pyright: ignore[reportMissingImports]  (the optional `local` extra)

    llama_cpp.llama_perf_context_reset(model.engine().llama._ctx.ctx)


def _clear_cache(model: Any) -> None:
    """Forget the last prompt, so the next call evaluates every token."""
    llama = model.engine().llama
    llama.reset()
    llama._ctx.kv_cache_clear()


def _call(bound: Any, model: Any, messages: list[BaseMessage]) -> tuple[AIMessage, dict[str, float]]:
    _reset_perf(model)
    started = time.perf_counter()
    reply = bound.invoke(messages)
    wall = time.perf_counter() - started
    perf = _perf(model)
    usage = reply.usage_metadata or {}
    return reply, {"wall_s": wall, "prompt_tokens": usage.get("input_tokens", 0),
                   "cached_tokens": (usage.get("input_token_details") or {}).get("cache_read", 0),
                   "completion_tokens": usage.get("output_tokens", 0), **perf}


def _conversation_call2(first: AIMessage, base: list[BaseMessage]) -> list[BaseMessage]:
    call_id = first.tool_calls[0]["id"] if first.tool_calls else "call_0"
    if not first.tool_calls:  # the model answered in text: give call 2 a tool turn all the same
        first = AIMessage("", tool_calls=[{"name": "get_order_status", "args": {"order_id": "ORD-10134"},
                                           "id": call_id, "type": "tool_call"}])
    return [*base, first, ToolMessage(json.dumps(RESULT), tool_call_id=call_id)]


def _spec(registry: ToolRegistry, name: str) -> ToolSpec:
    spec = registry.get(name)
    if spec is None:
        raise KeyError(f"the shop has no tool '{name}'")
    return spec


def measure(model_name: str = "qwen2.5-coder-0.5b", repeat: int = 3) -> dict[str, Any]:
    """Run the conversations ``repeat`` times per prompt size; return per-size medians and raw runs."""
    from lg_harness.domains.shop import DOMAIN
    from lg_harness.llm.local import LocalChatModel, make_local

    registry = DOMAIN.registry()
    model = make_local(model_name)
    if not isinstance(model, LocalChatModel):  # make_local builds one; its signature says BaseChatModel
        raise TypeError(f"make_local gave a {type(model).__name__}, not a LocalChatModel")
    load_started = time.perf_counter()
    model.engine()
    load_s = time.perf_counter() - load_started
    sizes: dict[str, Any] = {}
    for label, names in SIZES.items():
        bound = model.bind_tools([_spec(registry, n).json_schema() for n in names])
        base: list[BaseMessage] = [SystemMessage(DOMAIN.system_prompt), HumanMessage(QUESTION)]
        runs: dict[str, list[dict[str, float]]] = {"call1_cold": [], "call2_warm": [], "call2_cold": []}
        for _ in range(repeat):
            _clear_cache(model)
            first, figures = _call(bound, model, base)
            runs["call1_cold"].append(figures)
            second = _conversation_call2(first, base)
            runs["call2_warm"].append(_call(bound, model, second)[1])  # prefix of call 1 still in the KV cache
            _clear_cache(model)
            runs["call2_cold"].append(_call(bound, model, second)[1])
        sizes[label] = {"tools": list(names), "runs": runs,
                        "median": {k: {f: statistics.median(r[f] for r in v) for f in v[0]} for k, v in runs.items()},
                        "best_wall_s": {k: min(r["wall_s"] for r in v) for k, v in runs.items()}}
    cold = [r for s in sizes.values() for k in ("call1_cold", "call2_cold") for r in s["runs"][k]]
    gen = [r for s in sizes.values() for v in s["runs"].values() for r in v]
    return {"model": model_name, "n_ctx": model.n_ctx, "n_threads": model.n_threads, "repeat": repeat,
            "load_s": load_s, "loadavg_1m": os.getloadavg()[0], "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY"), "cpus": os.cpu_count(), "sizes": sizes,
            "prompt_tokens_per_s": sum(r["prompt_n"] for r in cold) / (sum(r["prompt_ms"] for r in cold) / 1000),
            "gen_tokens_per_s": sum(r["gen_n"] for r in gen) / (sum(r["gen_ms"] for r in gen) / 1000)}


def table(fig: dict[str, Any]) -> str:
    lines = [f"local:{fig['model']}  n_ctx {fig['n_ctx']}, {fig['n_threads']} threads, median of {fig['repeat']}, "
             f"load average {fig['loadavg_1m']:.2f} on {fig['cpus']} CPUs, OMP_WAIT_POLICY "
             f"{fig.get('omp_wait_policy')}, model load {fig['load_s']:.2f} s",
             "",
             "| prompt | call | prompt tokens | from KV cache | completion tokens | s per call | best s | prompt tok/s | gen tok/s |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    names = {"call1_cold": "1st (cold)", "call2_cold": "2nd, no prefix reuse", "call2_warm": "2nd, prefix reused"}
    for label, size in fig["sizes"].items():
        for key in ("call1_cold", "call2_cold", "call2_warm"):
            m = size["median"][key]
            p_rate = m["prompt_n"] / (m["prompt_ms"] / 1000) if m["prompt_ms"] else float("nan")
            g_rate = m["gen_n"] / (m["gen_ms"] / 1000) if m["gen_ms"] else float("nan")
            lines.append(f"| {label} | {names[key]} | {m['prompt_tokens']:.0f} | {m['cached_tokens']:.0f} | "
                         f"{m['completion_tokens']:.0f} | {m['wall_s']:.2f} | {size['best_wall_s'][key]:.2f} | {p_rate:.0f} | "
                         f"{g_rate:.1f} |")
    lines += ["", f"prompt evaluation: {fig['prompt_tokens_per_s']:.0f} tokens/s (cold calls); "
                  f"generation: {fig['gen_tokens_per_s']:.1f} tokens/s (all calls)"]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--model", default="qwen2.5-coder-0.5b")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    figures = measure(args.model, args.repeat)
    print(json.dumps(figures, indent=1) if args.json else table(figures))


if __name__ == "__main__":
    main()
