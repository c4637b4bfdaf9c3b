"""Run 8 of ``harness bench local``: four messages a thread, ``harness``, ``harness+stable_prefix`` and ``naive``, each design with saved engine states of its own.

Writes ``run8.json`` beside this file and prints the table, the replies and the targets."""

import json
from pathlib import Path

from lg_harness.benchmarks.bench_local import format_table, notes, run_bench_local, targets

figures = run_bench_local(messages=4, designs=("harness", "harness+stable_prefix", "naive"))
out = Path(__file__).with_name("run8.json")
out.write_text(json.dumps({"bench": "local", "figures": figures}, indent=1, ensure_ascii=False), encoding="utf-8")
for section in (format_table(figures), "\n".join(notes(figures)), "\n".join(targets(figures))):
    print(section, end="\n\n")
