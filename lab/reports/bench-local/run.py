"""Runs 3, 6-10 and 11 of ``harness bench local``: ``python lab/reports/bench-local/run.py NAME`` (four messages a thread,
``harness``, ``harness+stable_prefix`` and ``naive``, from run 11 ``harness``, ``harness-no:stable_prefix`` and
``naive``; each run was made on the code of its day, see README.md).

Writes ``NAME.json`` beside this file and prints the table, the replies and the targets (kept as ``NAME.txt``)."""

import json
import sys
from pathlib import Path

from lg_harness_lab.benchmarks.bench_local import format_table, notes, run_bench_local, targets

name = sys.argv[1] if len(sys.argv) > 1 else "run"
# From run 11 ``harness`` ships with the knob ``stable_prefix`` on: its arms are ``harness`` and ``harness-no:stable_prefix``.
BEFORE_11 = {"run3", "run6", "run7", "run8", "run9", "run10"}
DESIGNS = (("harness", "harness+stable_prefix", "naive") if name in BEFORE_11
           else ("harness", "harness-no:stable_prefix", "naive"))
figures = run_bench_local(messages=4, designs=DESIGNS)
out = Path(__file__).with_name(f"{name}.json")
out.write_text(json.dumps({"bench": "local", "figures": figures}, indent=1, ensure_ascii=False), encoding="utf-8")
for section in (format_table(figures), "\n".join(notes(figures)), "\n".join(targets(figures))):
    print(section, end="\n\n")
