"""The real local model inside the harness: how near the engine's own speed, how much of each prompt is cached.

One run, one process, one engine (``local:qwen2.5-coder-0.5b`` by default), every figure a ratio against a
baseline measured in the same run:

1. **The engine alone.** llama.cpp is timed without the harness, before and after the conversations: a cold
   read of a whole prompt (the domain's system prompt and every tool), a read of its last 200 tokens after
   the rest is cached (the size of what a harness call reads), and 64 tokens written without a grammar.
   The machine's load average, its CPUs, the threads and the OpenMP wait policy are printed with them.
2. **Conversations.** Each design (``harness``; ``harness-no:stable_prefix``, the same without the knob that keeps
   a prompt prefix in place; ``naive``) answers the same messages on two threads
   of its own. Everything is interleaved: message 1 of every thread of every design, then message 2, ..., so
   the load of the machine falls on all alike, and each thread's saved engine state must survive the others'
   calls in between. Each design has saved states of its own and starts its turn from an empty engine: two
   designs that send the same prompt do not read each other's. Per call: prompt tokens, tokens served from a saved state, tokens read and written
   with llama.cpp's own timings; per message: model calls, tokens written, wall seconds, and time to first
   token (from the message's start to the end of its first call's prompt reading: the harness's work before
   the call, restoring a saved state, reading what is new).

Figures: the engine's tokens/s inside each design against the raw ones, the cached share of prompt tokens from
each thread's second call on, time to first token on messages 2+ against message 1, seconds per message of
``harness`` against ``naive`` and against ``harness-no:stable_prefix``.

Run ``harness bench local [--domain NAME]`` or ``python -m lg_harness_lab.benchmarks.bench_local`` (needs
``bash scripts/setup.sh --local-model``; about 10 minutes on 2 cores).
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Sequence
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.messages import BaseMessage
from langchain_core.outputs import ChatResult
from pydantic import PrivateAttr

from lg_harness.core.design import Design, load_design
from lg_harness.core.domain import Domain
from lg_harness.errors import UsageError
from lg_harness.graphs.app import Harness, Settings
from lg_harness.llm.local import LocalChatModel, engine_env
from lg_harness.llm.local_weights import get_spec
from lg_harness.llm.prompt_cache import PrefixStates
from lg_harness_lab.benchmarks import progress
from lg_harness_lab.benchmarks.bench_context import bench_domain, lift_quotas, script_messages
from lg_harness_lab.benchmarks.printing import print_report

DESIGNS = ("harness", "harness-no:stable_prefix", "naive")
SUFFIX = 200  # tokens the engine reads after a cached prefix in the raw figure: about what a harness call reads
WRITE = 64
RAW_TASK = "Write a detailed description of a pair of wireless headphones for the product page."
# Targets (issue 42)
ENGINE_SHARE, CACHED_SHARE, TTFT_SHARE, SPEEDUP = 0.8, 0.8, 0.2, 0.33


class TimedLocal(LocalChatModel):
    """The local model, keeping each call's start time, tokens and llama.cpp timings."""

    _calls: list[dict[str, Any]] = PrivateAttr(default_factory=list)

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None,
                  run_manager: CallbackManagerForLLMRun | None = None, **kwargs: Any) -> ChatResult:
        started = time.perf_counter()
        result = super()._generate(messages, stop, run_manager, **kwargs)
        reply = result.generations[0].message
        usage = getattr(reply, "usage_metadata", None) or {}
        meta = reply.response_metadata or {}
        self._calls.append({"started": started, "latency_s": float(meta.get("latency_s", 0.0)),
                            "prompt_tokens": int(usage.get("input_tokens", 0)),
                            "cached_tokens": int((usage.get("input_token_details") or {}).get("cache_read", 0)),
                            "tools": len(kwargs.get("tools") or []), **meta.get("speed", {})})
        return result

    def calls_since(self, started: float) -> list[dict[str, Any]]:
        return [c for c in self._calls if c["started"] >= started]


def _perf(llama: Any) -> Any:
    import llama_cpp  # pyright: ignore[reportMissingImports]  (the optional `local` extra)

    return llama_cpp.llama_perf_context(llama._ctx.ctx)


def _reset_perf(llama: Any) -> None:
    import llama_cpp  # pyright: ignore[reportMissingImports]  (the optional `local` extra)

    llama_cpp.llama_perf_context_reset(llama._ctx.ctx)


def raw_engine(model: LocalChatModel, domain: Domain) -> dict[str, float]:
    """llama.cpp's speeds with nothing of the harness: a cold whole-prompt read, a read of its last ``SUFFIX``
    tokens after the rest is cached, and ``WRITE`` tokens written unconstrained."""
    engine = model.engine()
    tools = [t.json_schema() for t in domain.registry().offer(None, "customer")]
    rendered = engine.formatter(messages=[{"role": "system", "content": domain.system_prompt},
                                          {"role": "user", "content": RAW_TASK}], tools=tools)
    with engine.lock:
        llama = engine.llama
        tokens = llama.tokenize(rendered.prompt.encode("utf-8"), add_bos=not rendered.added_special, special=True)
        llama.reset()
        llama._ctx.kv_cache_clear()
        _reset_perf(llama)
        llama.create_completion(prompt=tokens, max_tokens=1, temperature=0.0)
        cold = _perf(llama)
        llama.reset()
        llama._ctx.kv_cache_clear()
        llama.create_completion(prompt=tokens[:-SUFFIX], max_tokens=1, temperature=0.0)
        _reset_perf(llama)
        llama.create_completion(prompt=tokens, max_tokens=WRITE, temperature=0.0, repeat_penalty=1.0)
        warm = _perf(llama)
        llama.reset()  # the next call starts from a saved state or from nothing, not from this prompt
    return {"prompt_tokens": len(tokens), "cold_read_tok_s": cold.n_p_eval / (cold.t_p_eval_ms / 1000),
            "read_tok_s": warm.n_p_eval / (warm.t_p_eval_ms / 1000), "read_tokens": int(warm.n_p_eval),
            "write_tok_s": warm.n_eval / (warm.t_eval_ms / 1000), "written": int(warm.n_eval)}


def message_figures(calls: Sequence[dict[str, Any]], started: float, wall_s: float) -> dict[str, Any]:
    """One message's figures from its calls (``TimedLocal``'s records)."""
    first = calls[0] if calls else None
    ttft = (first["started"] - started + first["latency_s"] - first.get("generation_s", 0.0)) if first else wall_s
    return {"wall_s": wall_s, "calls": len(calls), "ttft_s": ttft,
            "prompt_tokens": sum(c["prompt_tokens"] for c in calls),
            "cached_tokens": sum(c["cached_tokens"] for c in calls),
            "generated": sum(int(c.get("generated_tokens", 0)) for c in calls), "per_call": list(calls)}


def design_of(spec: str) -> Design:
    """A design spec, or ``<design>+<knob>``: that design with a switch knob turned on (``harness+stable_prefix``)."""
    base, plus, knob = spec.partition("+")
    design = lift_quotas(load_design(base))
    if not plus:
        return design
    if not isinstance(getattr(design.knobs, knob, None), bool):
        raise UsageError(f"'{knob}' is not a switch knob of a design; switch knobs: "
                           f"{', '.join(k for k, v in design.knobs.model_dump().items() if isinstance(v, bool))}")
    return design.model_copy(update={"name": spec, "knobs": design.knobs.model_copy(update={knob: True})})


def converse(model: TimedLocal, domain: Domain, texts: dict[str, list[str]], designs: Sequence[str] = DESIGNS
             ) -> dict[str, list[dict[str, Any]]]:
    """Each design's threads (``texts``: thread -> messages), interleaved message by message; the messages'
    figures per design, in the order sent."""
    out: dict[str, list[dict[str, Any]]] = {d: [] for d in designs}
    harnesses = {d: Harness(model, domain=domain, design=design_of(d),
                            settings=Settings(data_dir=None)) for d in designs}
    # Each design keeps its own saved states and starts from an empty engine: the same message on the same
    # customer gives two designs the same prompt, and one must not read the other's from its cache.
    engine = model.engine()
    shared, own = engine.states, {d: PrefixStates() for d in designs}
    try:
        rounds = max(len(t) for t in texts.values())
        for i in range(rounds):
            progress.tick(i, rounds)
            for design, h in harnesses.items():
                engine.states = own[design]
                engine.llama.reset()  # what the engine holds is the design before's
                for thread, messages in texts.items():
                    if i >= len(messages):
                        continue
                    started = time.perf_counter()
                    result = h.send(f"{design}-{thread}", messages[i], domain.default_user)
                    wall = time.perf_counter() - started
                    out[design].append({"thread": thread, "index": i + 1, "text": messages[i], "reply": result.reply,
                                        **message_figures(model.calls_since(started), started, wall)})
    finally:
        engine.states = shared
        for h in harnesses.values():
            h.close()
    return out


def _rate(calls: Sequence[dict[str, Any]], n: str, s: str) -> float:
    seconds = sum(float(c.get(s, 0.0)) for c in calls)
    return sum(int(c.get(n, 0)) for c in calls) / seconds if seconds else float("nan")


def summary(messages: Sequence[dict[str, Any]], raw: dict[str, float]) -> dict[str, Any]:
    """A design's figures over its messages."""
    calls = [c for m in messages for c in m["per_call"]]
    later = [c for thread in {m["thread"] for m in messages}
             for c in [c for m in messages if m["thread"] == thread for c in m["per_call"]][1:]]
    first_msgs = [m for m in messages if m["index"] == 1]
    later_msgs = [m for m in messages if m["index"] > 1]
    read, write = _rate(calls, "prompt_eval_tokens", "prompt_eval_s"), _rate(calls, "generated_tokens", "generation_s")
    ttft1 = statistics.mean(m["ttft_s"] for m in first_msgs)
    ttft2 = statistics.mean(m["ttft_s"] for m in later_msgs) if later_msgs else float("nan")
    return {"messages": len(messages), "s_per_message": statistics.mean(m["wall_s"] for m in messages),
            "p50_s": statistics.median(m["wall_s"] for m in messages),
            "calls_per_message": statistics.mean(m["calls"] for m in messages),
            "generated_per_message": statistics.mean(m["generated"] for m in messages),
            "read_tok_s": read, "write_tok_s": write, "read_vs_raw": read / raw["read_tok_s"],
            "write_vs_raw": write / raw["write_tok_s"],
            "cached_share_from_call_2": sum(c["cached_tokens"] for c in later) / max(1, sum(c["prompt_tokens"] for c in later)),
            "cached_share_all": sum(c["cached_tokens"] for c in calls) / max(1, sum(c["prompt_tokens"] for c in calls)),
            "ttft_first_s": ttft1, "ttft_later_s": ttft2, "ttft_ratio": ttft2 / ttft1 if ttft1 else float("nan")}


def run_bench_local(domain: Domain | str = "shop", model: str = "qwen2.5-coder-0.5b", messages: int = 4,
                    designs: Sequence[str] = DESIGNS) -> dict[str, Any]:
    """Measure everything in one run (see the module doc); ``messages`` per thread, two threads per design."""
    loaded, bench = bench_domain(domain)
    get_spec(model)
    timed = TimedLocal(model_name=model, **engine_env())
    load_before = os.getloadavg()[0]
    progress.stage("engine alone")
    raw_before = raw_engine(timed, loaded)
    facts = bench.facts(loaded.fresh_resources() if loaded.fresh_resources else {}, loaded.default_user)
    script = list(bench.graph_messages or bench.messages)
    texts = {"a": script_messages(facts, messages, script),
             "b": script_messages(facts, messages, script[len(script) // 2:] + script[:len(script) // 2])}
    progress.stage("conversations")
    convo = converse(timed, loaded, texts, designs)
    progress.stage("engine alone, again")
    raw_after = raw_engine(timed, loaded)
    raw = {k: (raw_before[k] + raw_after[k]) / 2 for k in raw_before}
    figures: dict[str, Any] = {
        "domain": loaded.name, "model": model, "n_threads": timed.n_threads, "n_ctx": timed.n_ctx,
        "cpus": os.cpu_count(), "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY"), "flash_attn": timed.flash_attn,
        "loadavg_1m": {"start": load_before, "end": os.getloadavg()[0]},
        "raw": raw, "raw_before": raw_before, "raw_after": raw_after, "messages_per_thread": messages,
        "designs": {d: summary(m, raw) for d, m in convo.items()}, "transcripts": convo}
    d = figures["designs"]
    if "harness" in d:
        figures["vs"] = {other: d["harness"]["s_per_message"] / d[other]["s_per_message"] for other in d if other != "harness"}
    return figures


# ------------------------------------------------------------------------------------------- report

def format_table(f: dict[str, Any]) -> str:
    raw = f["raw"]
    lines = [f"local:{f['model']} on {f['domain']}: {f['n_threads']} threads, {f['cpus']} CPUs, OMP_WAIT_POLICY "
             f"{f['omp_wait_policy']}, fused attention {'on' if f.get('flash_attn') else 'off'}, "
             f"load average {f['loadavg_1m']['start']:.2f} at the start, "
             f"{f['loadavg_1m']['end']:.2f} at the end",
             f"engine alone (mean of before and after): cold read {raw['cold_read_tok_s']:.0f} tok/s "
             f"({raw['prompt_tokens']:.0f} tokens), read after a cached prefix {raw['read_tok_s']:.0f} tok/s "
             f"({raw['read_tokens']:.0f} tokens), write {raw['write_tok_s']:.1f} tok/s",
             "",
             "| design | msgs | s/msg | p50 s | calls/msg | tokens written/msg | read tok/s (x raw) | write tok/s (x raw) "
             "| cached share, calls 2+ | TTFT msg 1 s | TTFT msgs 2+ s (x msg 1) |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for name, s in f["designs"].items():
        lines.append(f"| {name} | {s['messages']} | {s['s_per_message']:.1f} | {s['p50_s']:.1f} | "
                     f"{s['calls_per_message']:.2f} | {s['generated_per_message']:.0f} | {s['read_tok_s']:.0f} "
                     f"(x{s['read_vs_raw']:.2f}) | {s['write_tok_s']:.1f} (x{s['write_vs_raw']:.2f}) | "
                     f"{s['cached_share_from_call_2']:.0%} | {s['ttft_first_s']:.1f} | {s['ttft_later_s']:.1f} "
                     f"(x{s['ttft_ratio']:.2f}) |")
    for other, ratio in (f.get("vs") or {}).items():
        lines.append(f"s/msg harness / {other}: x{ratio:.2f}")
    return "\n".join(lines)


def notes(f: dict[str, Any]) -> list[str]:
    """Each design's replies on thread a (``naive``'s aside: the baseline)."""
    out: list[str] = []
    for name, transcript in f["transcripts"].items():
        if name != "naive":
            out += [f"Replies ({name}, thread a):"]
            out += [f"  {m['index']}. {m['text']} -> {m['reply']}" for m in transcript if m["thread"] == "a"]
    return out


def targets(f: dict[str, Any]) -> list[str]:
    """The issue's targets against this run's figures, for each design but ``naive`` (the baseline), each said
    plainly as met or NOT met."""
    out: list[str] = []
    naive = (f["designs"].get("naive") or {}).get("s_per_message")
    for name, d in f["designs"].items():
        if name == "naive":
            continue

        def said(ok: bool, text: str, name: str = name) -> str:
            return f"{'met' if ok else 'NOT MET'} ({name}): {text}"

        first = [m for m in f["transcripts"][name] if m["thread"] == "a" and m["index"] == 1][0]
        out += [said(min(d["read_vs_raw"], d["write_vs_raw"]) >= ENGINE_SHARE,
                     f"engine tokens/s in the harness at least {ENGINE_SHARE:.0%} of raw: read x{d['read_vs_raw']:.2f}, "
                     f"write x{d['write_vs_raw']:.2f}"),
                said(d["cached_share_from_call_2"] >= CACHED_SHARE,
                     f"cached share from each thread's second call at least {CACHED_SHARE:.0%}: "
                     f"{d['cached_share_from_call_2']:.0%}"),
                said(d["ttft_ratio"] <= TTFT_SHARE, f"time to first token on messages 2+ at most {TTFT_SHARE:g}x "
                     f"message 1's, two threads interleaved: x{d['ttft_ratio']:.2f}"),
                said(first["calls"] <= 2 and first["generated"] <= 60,
                     f"the first question ({first['text']!r}): at most 2 calls and 60 tokens written: "
                     f"{first['calls']} calls, {first['generated']} tokens")]
        if naive:
            ratio = d["s_per_message"] / naive
            out.append(said(ratio <= SPEEDUP, f"s/msg {name} / naive at most {SPEEDUP:g}: x{ratio:.2f}"))
    return out


def main(domain: Domain | str = "shop") -> dict[str, Any]:
    """Run the benchmark in ``domain``, print the table, the notes and the targets, return the figures."""
    figures = run_bench_local(domain=domain)
    print_report(figures, format_table, notes, targets)
    return figures


if __name__ == "__main__":
    main()
