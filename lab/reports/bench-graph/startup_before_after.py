"""Start-up CPU of the light commands, before (main's CLI) and after (this branch's), in interleaved rounds.

    .venv/bin/python lab/reports/bench-graph/startup_before_after.py /work/main/.venv/bin/harness > lab/reports/bench-graph/startup.txt

Each round runs, for each CLI in turn, ``python -c pass`` and the four light commands once (``history`` on a
thread of a fresh data dir written by this branch); the figures are medians over the rounds, as ratios to the
bare interpreter of the same CLI's rounds (``benchmarks.bench_graph.startup_cpu``).
"""

from __future__ import annotations

import statistics
import sys
import tempfile
from pathlib import Path

from lg_harness.graphs.app import Harness, Settings
from lg_harness_lab.benchmarks.bench_graph import THREAD, startup_cpu

ROUNDS = 5


def main(before_cli: str) -> None:
    after_cli = str(Path(sys.executable).with_name("harness"))
    with tempfile.TemporaryDirectory() as tmp:
        with Harness("sim:clean", design="harness", settings=Settings(data_dir=Path(tmp))) as h:
            for text in ("Where is my order ORD-10134?", "thanks", "Show me my orders please"):
                h.send(THREAD, text, "U001")
        runs: dict[str, list[dict]] = {"before": [], "after": []}
        for _ in range(ROUNDS):
            for label, cli in (("before", before_cli), ("after", after_cli)):
                runs[label].append(startup_cpu(Path(tmp), "U001", [cli], rounds=1)["cpu_s"])
    print(f"start-up CPU (user + system), median of {ROUNDS} interleaved rounds; x = ratio to `python -c pass`")
    print(f"{'command':16s} {'before s':>9s} {'x':>6s} {'after s':>9s} {'x':>6s}")
    bare = {k: statistics.median(r["python -c pass"] for r in v) for k, v in runs.items()}
    for command in runs["after"][0]:
        cells = []
        for label in ("before", "after"):
            s = statistics.median(r[command] for r in runs[label])
            cells += [f"{s:9.3f}", f"{s / bare[label]:6.1f}"]
        print(f"{command:16s} {' '.join(cells)}")


if __name__ == "__main__":
    main(sys.argv[1])
