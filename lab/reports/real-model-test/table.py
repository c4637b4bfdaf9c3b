"""The real model's test-split cells of every design run so far, judged at HEAD, beside the sim's cells of the
same runs: task completion, how far the sim is, how many verdicts agree, and each design against `harness`.

    .venv/bin/python lab/reports/real-model-test/table.py

Each folder ``<design>-<domain>[-again]`` holds one run (``commit.txt``: the code it ran; ``real/`` and ``sim/``
the cells). Nothing is run again; verdicts are the current judge's reading of the recorded cells.
"""

from __future__ import annotations

import json
from pathlib import Path

from lg_harness_lab.evals.clusters import cluster_of
from lg_harness_lab.evals.metrics import cell_metrics
from lg_harness_lab.evals.scenario import load_scenarios
from lg_harness_lab.evals.stats import paired, wilson

HERE = Path(__file__).resolve().parent
PACKS = HERE.parents[1] / "lg_harness_lab" / "packs"


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


def pct(k: float, n: int) -> str:
    lo, hi = wilson(k, n) or (0.0, 0.0)
    return f"{100 * k / n:.1f}% [{100 * lo:.1f}–{100 * hi:.1f}]"


def main() -> None:
    print("| domain | design | commit | n | real | sim | sim − real | same verdict | against `harness` at its newest run |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for domain in ("helpdesk", "shop"):
        scenarios = {s.id: s for s in load_scenarios(PACKS / domain / "goals" / "test.yaml")}
        runs = sorted(p for p in HERE.iterdir() if p.is_dir() and (p / "real" / "cells.jsonl").exists()
                      and p.name.split("-again")[0].endswith(f"-{domain}"))
        again = HERE / f"harness-{domain}-again"
        base_run = again if (again / "real" / "cells.jsonl").exists() else HERE / f"harness-{domain}"
        base = verdicts(base_run / "real" / "cells.jsonl", scenarios)
        for run in runs:
            real = verdicts(run / "real" / "cells.jsonl", scenarios)
            sim = verdicts(run / "sim" / "cells.jsonl", scenarios) if (run / "sim" / "cells.jsonl").exists() else {}
            both = [s for s in real if s in sim]
            design = run.name.removesuffix("-again").removesuffix(f"-{domain}")
            commit = (run / "commit.txt").read_text().split()[0] if (run / "commit.txt").exists() else "?"
            n, k = len(real), sum(real.values())
            sim_rate = sum(sim[s] for s in both) / len(both) if both else None
            real_rate = sum(real[s] for s in both) / len(both) if both else None
            same = sum(real[s] == sim[s] for s in both) / len(both) if both else None
            diff = "" if run == base_run else paired(by_cluster(real, scenarios), by_cluster(base, scenarios))
            against = "" if not diff else (f"{100 * diff['mean']:+.1f} pp [{100 * diff['ci'][0]:+.1f}, "
                                           f"{100 * diff['ci'][1]:+.1f}]" + (" significant" if diff["significant"] else ""))
            print(f"| {domain} | {design}{' (again)' if run.name.endswith('-again') else ''} | `{commit}` | {n} | "
                  f"{pct(k, n)} | {'' if sim_rate is None else f'{100 * sim_rate:.1f}%'} | "
                  f"{'' if sim_rate is None or real_rate is None else f'{100 * (sim_rate - real_rate):+.1f} pp'} | "
                  f"{'' if same is None else f'{100 * same:.1f}%'} | {against} |")


if __name__ == "__main__":
    main()
