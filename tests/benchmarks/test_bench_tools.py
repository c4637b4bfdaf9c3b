"""The tool benchmark runs and reports every figure (no timing assertions: machines differ)."""

import sys
from pathlib import Path

# lab/lg_harness_lab/benchmarks/ sits at the repository root but is not an installed package
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from lg_harness_lab.benchmarks.bench_tools import format_table, run_bench_tools  # noqa: E402

FIGURES = ("bare_us", "harness_us", "harness_inline_us", "validate_us", "finish_us", "overhead_ratio",
           "parallel_wall_s", "parallel_sum_s", "parallel_ratio")


def test_bench_tools_runs_with_small_numbers():
    figures = run_bench_tools(n=20, parallel_calls=5, tool_seconds=0.01)
    for key in FIGURES:
        assert isinstance(figures[key], float) and figures[key] > 0, key
    assert figures["n"] == 20 and figures["finish"] in ("clean_result", "content")
    table = format_table(figures)
    assert "bare function call" in table and "5 parallel calls of 10 ms" in table
