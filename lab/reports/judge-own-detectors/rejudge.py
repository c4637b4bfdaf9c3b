"""The committed real-model cells the README cites, judged again at HEAD: the judge reads replies with detectors of its
own (``lg_harness_lab/evals/customer_grade.py``) where it used the harness's self-check's. Nothing is run again: the
cells (what each design said and did) are the recorded ones.

    .venv/bin/python lab/reports/judge-own-detectors/rejudge.py > lab/reports/judge-own-detectors/README.md
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from lg_harness_lab.evals.metrics import cell_metrics
from lg_harness_lab.evals.scenario import load_scenarios

ROOT = Path(__file__).resolve().parents[3]
REPORTS = ROOT / "lab" / "reports"
PACKS = ROOT / "lab" / "lg_harness_lab" / "packs"
CITED = [  # report folder, scenario file, what the README calls it
    ("real-model-agreement-heldout-helpdesk/real", "helpdesk/scenarios/heldout/goals.yaml", "helpdesk heldout, three designs"),
    ("real-model-heldout-helpdesk-after/real", "helpdesk/scenarios/heldout/goals.yaml", "helpdesk heldout, after"),
    ("real-model-heldout-helpdesk-answers/real", "helpdesk/scenarios/heldout/goals.yaml", "helpdesk heldout, answers"),
    ("real-model-heldout-shop-answers/real", "shop/scenarios/heldout/goals.yaml", "shop heldout, answers"),
    ("real-model-test/harness-shop/real", "shop/goals/test.yaml", "shop test"),
    ("real-model-test/harness-helpdesk/real", "helpdesk/goals/test.yaml", "helpdesk test"),
]


HEADER = "| cells | design | n | as reported | judged now | net change (scenarios) |\n| --- | --- | --- | --- | --- | --- |"
SIM_AT = "8a1d708"  # the commit holding the sim goal tables (run at af19893) judged with the harness's detectors (the README's earlier table)
SIM = [("goals-test-sim-shop", "shop/goals/test.yaml"), ("goals-heldout-sim-shop", "shop/scenarios/heldout/goals.yaml"),
       ("goals-test-sim-helpdesk", "helpdesk/goals/test.yaml"),
       ("goals-heldout-sim-helpdesk", "helpdesk/scenarios/heldout/goals.yaml")]


def at_commit(path: str) -> str:
    return subprocess.run(["git", "show", f"{SIM_AT}:{path}"], capture_output=True, text=True, cwd=ROOT,
                          check=True).stdout


def rows(label: str, results: str, cells: str, scenarios: str) -> None:
    """One table row per design: the task completion ``results`` (a results.json's text) reported, and the
    ``cells`` (a cells.jsonl's text) judged now on the scenario file ``scenarios``."""
    stored = json.loads(results)["metrics"]
    by_id = {s.id: s for s in load_scenarios(PACKS / scenarios)}
    now: dict[str, dict[str, bool]] = {}
    for line in cells.splitlines():
        cell = json.loads(line)
        if cell["scenario"] in by_id:
            now.setdefault(cell["design"], {})[cell["scenario"]] = cell_metrics(cell, by_id[cell["scenario"]])["success"]
    for design, verdicts in now.items():
        before = stored.get(design, {}).get("task_completion", {}).get("mean")
        after = sum(verdicts.values()) / len(verdicts)
        print(f"| {label} | {design} | {len(verdicts)} | {'n/a' if before is None else f'{100 * before:.1f}%'} | "
              f"{100 * after:.1f}% | {'' if before is None else round((after - before) * len(verdicts))} |")


def main() -> None:
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT).stdout.strip()
    print("# The README's real-model cells, judged with the judge's own reading of replies\n")
    print(f"Made by `python lab/reports/judge-own-detectors/rejudge.py` at `{head}` from the committed cells (nothing run "
          "again). *As reported*: the figure in the report's `results.json`, judged when it was made, when the judge "
          "read replies with the harness's own self-check detectors. *Judged now*: the same cells at HEAD, the judge "
          "with detectors of its own (`lg_harness_lab/evals/customer_grade.py`).\n")
    print(HEADER)
    for folder, scenarios, name in CITED:
        rows(f"[{name}](../{folder.split('/')[0]}/)", (REPORTS / folder / "results.json").read_text(encoding="utf-8"),
             (REPORTS / folder / "cells.jsonl").read_text(encoding="utf-8"), scenarios)
    print(f"\n## The sim goal tables' cells of commit `{SIM_AT}`, judged again\n")
    print("The README's earlier sim table (the cells then committed, read from git): a negative change is replies "
          "the judge's own detectors fail and the harness's self-check passed.\n")
    print(HEADER)
    for folder, scenarios in SIM:
        rows(folder, at_commit(f"reports/{folder}/results.json"), at_commit(f"reports/{folder}/cells.jsonl"), scenarios)


if __name__ == "__main__":
    main()
