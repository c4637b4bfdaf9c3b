"""Run 2 of ``harness bench local``: six messages a thread, the two ``harness`` arms only (no ``naive``).

Writes ``run2.json`` beside this file and prints the table, the replies and the targets."""

import json
from pathlib import Path

from lg_harness_lab.benchmarks.bench_local import format_table, notes, run_bench_local, targets

figures = run_bench_local(messages=6, designs=("harness", "harness+stable_prefix"))
out = Path(__file__).with_name("run2.json")
out.write_text(json.dumps({"bench": "local", "figures": figures}, indent=1, ensure_ascii=False), encoding="utf-8")
for section in (format_table(figures), "\n".join(notes(figures)), "\n".join(targets(figures))):
    print(section, end="\n\n")
