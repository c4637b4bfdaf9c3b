"""Runs 3 and 6-8 of ``harness bench local``: ``python reports/bench-local/run.py NAME`` (four messages a thread,
``harness``, ``harness+stable_prefix`` and ``naive``; each run was made on the code of its day, see README.md).

Writes ``NAME.json`` beside this file and prints the table, the replies and the targets (kept as ``NAME.txt``)."""

import json
import sys
from pathlib import Path

from lg_harness.benchmarks.bench_local import format_table, notes, run_bench_local, targets

name = sys.argv[1] if len(sys.argv) > 1 else "run"
figures = run_bench_local(messages=4, designs=("harness", "harness+stable_prefix", "naive"))
out = Path(__file__).with_name(f"{name}.json")
out.write_text(json.dumps({"bench": "local", "figures": figures}, indent=1, ensure_ascii=False), encoding="utf-8")
for section in (format_table(figures), "\n".join(notes(figures)), "\n".join(targets(figures))):
    print(section, end="\n\n")
