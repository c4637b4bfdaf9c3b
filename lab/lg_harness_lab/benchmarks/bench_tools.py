"""Tool-layer benchmark: the harness's own cost per call, and what parallel calls save.

Two figures, both measured in one run against a baseline from the same run:

1. Overhead per call of a no-op tool through the harness (argument validation, execution under a deadline,
   result cleaning with ``tools.cleaning.clean_result``, or ``ToolOutcome.content()`` where cleaning is not
   available) as mean microseconds over ``n`` calls, next to calling the bare function (ratio).
2. Wall time of ``parallel_calls`` parallel calls of a tool that takes ``tool_seconds`` (200 ms by default)
   against the sum of their own durations (ratio; about 1/5 = 0.2 for five calls).

Both use tools of their own, so the figures are the harness's and hold for every domain; ``domain`` only
checks that the domain loads and names it in the figures.

Run ``python -m lg_harness_lab.benchmarks.bench_tools`` (or ``harness bench tools [--domain NAME]``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from lg_harness.core.domain import Domain, load_domain
from lg_harness.tools.context import ToolContext
from lg_harness.tools.executor import ToolExecutor, ToolOutcome
from lg_harness.tools.registry import ToolRegistry

try:  # result cleaning is its own module; measure it when it is there
    from lg_harness.tools.cleaning import clean_result
except ImportError:  # pragma: no cover - depends on the checkout
    clean_result = None

CTX = ToolContext(user_id="bench", thread_id="bench")


def noop(x: int = 0) -> dict:
    """Do nothing, quickly.

    Args:
        x: Echoed back.
    """
    return {"ok": True, "x": x}


def _slow(seconds: float) -> Callable[..., dict]:
    def slow(i: int = 0) -> dict:
        """Take a while, like a backend call.

        Args:
            i: Which call this is.
        """
        time.sleep(seconds)
        return {"i": i}

    return slow


def _finish(outcome: ToolOutcome) -> str:
    """What the model would read: the cleaned result (or the plain content without the cleaner)."""
    if clean_result is not None and outcome.status == "ok":
        return clean_result(outcome.result, tool=outcome.name)
    return outcome.content()


def _mean_us(fn: Callable[[], Any], n: int) -> float:
    fn()  # warm caches (schema, imports) outside the measurement
    start = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - start) / n * 1e6


def measure_overhead(n: int) -> dict[str, float]:
    """Mean µs per call: bare function, harness with deadline thread, harness inline, and the parts."""
    registry = ToolRegistry()
    registry.register(noop)  # default deadline: each attempt in its own thread
    registry.register(noop, name="noop_inline", timeout=None)  # no deadline: runs in the caller's thread
    executor = ToolExecutor(registry)
    call = {"id": "b1", "name": "noop", "args": {"x": 1}}
    inline = {"id": "b2", "name": "noop_inline", "args": {"x": 1}}
    sample = executor.run(call, CTX)
    bare = _mean_us(lambda: noop(x=1), n)
    harness = _mean_us(lambda: _finish(executor.run(call, CTX)), n)
    return {
        "bare_us": bare,
        "harness_us": harness,
        "harness_inline_us": _mean_us(lambda: _finish(executor.run(inline, CTX)), n),
        "validate_us": _mean_us(lambda: executor.validate("noop", {"x": 1}), n),
        "finish_us": _mean_us(lambda: _finish(sample), n),
        "overhead_us": harness - bare,
        "overhead_ratio": harness / bare,
    }


def measure_parallel(calls: int, tool_seconds: float) -> dict[str, float]:
    """Wall time of ``calls`` parallel calls against the sum of their durations."""
    registry = ToolRegistry()
    registry.register(_slow(tool_seconds), name="slow")
    executor = ToolExecutor(registry, max_concurrency=max(calls, 1))
    batch = [{"id": f"p{i}", "name": "slow", "args": {"i": i}} for i in range(calls)]
    start = time.perf_counter()
    outcomes = executor.run_many(batch, lambda call: CTX)
    wall = time.perf_counter() - start
    summed = sum(o.timings_ms["call_ms"] for o in outcomes) / 1000
    return {"parallel_wall_s": wall, "parallel_sum_s": summed, "parallel_ratio": wall / summed}


def run_bench_tools(n: int = 5000, parallel_calls: int = 5, tool_seconds: float = 0.2,
                    domain: Domain | str = "shop") -> dict[str, Any]:
    """Measure both figures in one run.

    Args:
        n: Calls per overhead measurement.
        parallel_calls: How many slow calls run in parallel (the executor's cap is 5).
        tool_seconds: How long the slow tool takes.
        domain: A ``Domain`` or a spec for ``load_domain``, named in the figures (the tools measured are the
            benchmark's own, so the figures do not depend on it).

    Returns:
        The figures: ``bare_us``, ``harness_us``, ``harness_inline_us``, ``validate_us``, ``finish_us``,
        ``overhead_us``, ``overhead_ratio``, ``parallel_wall_s``, ``parallel_sum_s``, ``parallel_ratio``,
        and the settings (``domain``, ``n``, ``parallel_calls``, ``tool_seconds``, ``finish``).
    """
    figures: dict[str, Any] = {"domain": load_domain(domain).name, "n": n, "parallel_calls": parallel_calls, "tool_seconds": tool_seconds,
                               "finish": "clean_result" if clean_result is not None else "content"}
    figures.update(measure_overhead(n))
    figures.update(measure_parallel(parallel_calls, tool_seconds))
    return figures


def format_table(f: dict[str, Any]) -> str:
    """The figures as a small text table."""
    rows = [
        ("bare function call", f"{f['bare_us']:.2f} µs", "baseline"),
        (f"harness call (validate + run + {f['finish']})", f"{f['harness_us']:.1f} µs",
         f"x{f['overhead_ratio']:.0f}"),
        ("  of which validation", f"{f['validate_us']:.1f} µs", ""),
        (f"  of which {f['finish']}", f"{f['finish_us']:.1f} µs", ""),
        ("harness call, no deadline (inline)", f"{f['harness_inline_us']:.1f} µs",
         f"x{f['harness_inline_us'] / f['bare_us']:.0f}"),
        (f"{f['parallel_calls']} parallel calls of {f['tool_seconds'] * 1000:.0f} ms, wall",
         f"{f['parallel_wall_s'] * 1000:.0f} ms", f"{f['parallel_ratio']:.2f} of the sum"),
        ("  sum of their durations", f"{f['parallel_sum_s'] * 1000:.0f} ms", "baseline"),
    ]
    width = max(len(r[0]) for r in rows)
    lines = [f"{'measure':<{width}}  {'value':>12}  vs baseline", "-" * (width + 29)]
    lines += [f"{name:<{width}}  {value:>12}  {ratio}" for name, value, ratio in rows]
    return "\n".join(lines)


def main(domain: Domain | str = "shop") -> dict[str, Any]:
    """Run the benchmark, print the table, return the figures."""
    figures = run_bench_tools(domain=domain)
    print(format_table(figures))
    return figures


if __name__ == "__main__":
    main()
