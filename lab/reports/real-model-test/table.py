"""The real model's test-split cells of every design run so far, judged at HEAD, beside the sim's cells of the
same runs: task completion, how far the sim is, how many verdicts agree, and each design against `harness`.

    .venv/bin/python lab/reports/real-model-test/table.py [test|heldout]

Each folder ``<design>-<domain>[-again|-<commit>]`` holds one run (``commit.txt``: the code it ran; ``real/`` and ``sim/``
the cells). Nothing is run again; verdicts are the current judge's reading of the recorded cells.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from lg_harness_lab.evals.clusters import cluster_of
from lg_harness_lab.evals.metrics import cell_metrics
from lg_harness_lab.evals.scenario import load_scenarios
from lg_harness_lab.evals.stats import paired, wilson

HERE = Path(__file__).resolve().parent
PACKS = HERE.parents[1] / "lg_harness_lab" / "packs"
SPLITS = {"test": (HERE, "goals/test.yaml"), "heldout": (HERE.parent / "real-model-heldout", "scenarios/heldout/goals.yaml")}


def verdicts(cells: Path, scenarios: dict) -> dict[str, bool]:
    out = {}
    for line in cells.read_text(encoding="utf-8").splitlines():
        cell = json.loads(line)
        if cell["scenario"] in scenarios:
            out[cell["scenario"]] = bool(cell_metrics(cell, scenarios[cell["scenario"]])["success"])
    return out


def by_cluster(passed: dict[str, bool], scenarios: dict) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {}
    for sid, ok in passed.items():
        acc = out.setdefault(cluster_of(scenarios[sid]), [0.0, 0.0])
        acc[0] += ok
        acc[1] += 1
    return out


def commit_of(run: Path) -> str:
    return (run / "commit.txt").read_text().split()[0] if (run / "commit.txt").exists() else "?"


def committed(run: Path) -> int:
    """When the run's code was committed (its commit's time): the newest run of a design is its last word."""
    out = subprocess.run(["git", "show", "-s", "--format=%ct", commit_of(run)], capture_output=True, text=True,
                         cwd=HERE)
    return int(out.stdout.strip() or 0)


def pct(k: float, n: int) -> str:
    lo, hi = wilson(k, n) or (0.0, 0.0)
    return f"{100 * k / n:.1f}% [{100 * lo:.1f}–{100 * hi:.1f}]"


def main(split: str = "test") -> None:
    folder, pack_file = SPLITS[split]
    print("| domain | design | commit | n | real | sim | sim − real | same verdict | against `harness` at its newest run |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for domain in ("helpdesk", "shop"):
        scenarios = {s.id: s for s in load_scenarios(PACKS / domain / pack_file)}
        runs = sorted(p for p in folder.iterdir() if p.is_dir() and (p / "real" / "cells.jsonl").exists()
                      and f"-{domain}" in p.name)
        done = [r for r in runs if r.name.startswith(f"harness-{domain}")
                and len(verdicts(r / "real" / "cells.jsonl", scenarios)) == len(scenarios)]
        if not done:
            continue
        base_run = max(done, key=committed)  # the newest run of every scenario
        base = verdicts(base_run / "real" / "cells.jsonl", scenarios)
        for run in runs:
            real = verdicts(run / "real" / "cells.jsonl", scenarios)
            sim = verdicts(run / "sim" / "cells.jsonl", scenarios) if (run / "sim" / "cells.jsonl").exists() else {}
            both = [s for s in real if s in sim]
            design = run.name.partition(f"-{domain}")[0]
            commit = commit_of(run)
            n, k = len(real), sum(real.values())
            sim_rate = sum(sim[s] for s in both) / len(both) if both else None
            real_rate = sum(real[s] for s in both) / len(both) if both else None
            same = sum(real[s] == sim[s] for s in both) / len(both) if both else None
            common = [s for s in real if s in base]  # a run still going is compared on what it has done
            diff = "" if run == base_run else paired(by_cluster({s: real[s] for s in common}, scenarios),
                                                     by_cluster({s: base[s] for s in common}, scenarios))
            against = "" if not diff else (f"{100 * diff['mean']:+.1f} pp [{100 * diff['ci'][0]:+.1f}, "
                                           f"{100 * diff['ci'][1]:+.1f}]" + (" significant" if diff["significant"] else ""))
            print(f"| {domain} | {design} | `{commit}` | {n} | "
                  f"{pct(k, n)} | {'' if sim_rate is None else f'{100 * sim_rate:.1f}%'} | "
                  f"{'' if sim_rate is None or real_rate is None else f'{100 * (sim_rate - real_rate):+.1f} pp'} | "
                  f"{'' if same is None else f'{100 * same:.1f}%'} | {against} |")


if __name__ == "__main__":
    import sys

    main(sys.argv[1] if len(sys.argv) > 1 else "test")
