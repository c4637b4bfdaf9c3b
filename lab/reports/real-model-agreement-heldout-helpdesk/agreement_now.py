"""agreement.md from the cells this folder holds now, with the same code `harness compare --agreement` uses
(evals.agreement): the real-model run is long and resumable, so its table is written at any n.

    python lab/reports/real-model-agreement-heldout-helpdesk/agreement_now.py [SIM_FOLDER]

SIM_FOLDER defaults to sim/ (the sim as committed); sim-before/ holds the same cells on the sim before issue
45's path rates and decoupling (commit feaf1e9).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from lg_harness_lab.evals.agreement import rows, verdicts, write_agreement
from lg_harness_lab.evals.scenario import load_scenarios

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
COMMAND = ("harness compare --designs harness,layered,naive --domain helpdesk --scenarios "
           "lab/lg_harness_lab/packs/helpdesk/scenarios/heldout/goals.yaml --split heldout --agreement sim --model "
           "local:qwen2.5-coder-0.5b --model-timeout 240 --workers 1 --seeds 1 --limit 50 "
           "--out lab/reports/real-model-agreement-heldout-helpdesk")


def cells(folder: Path) -> list[dict]:
    return [json.loads(line) for line in (folder / "cells.jsonl").read_text(encoding="utf-8").splitlines() if line]


def main(sim: str = "sim") -> None:
    scenarios = {s.id: s for s in load_scenarios(ROOT / "lab/lg_harness_lab/packs/helpdesk/scenarios/heldout/goals.yaml")}
    found = rows(verdicts(cells(HERE / "real"), scenarios), verdicts(cells(HERE / sim), scenarios),
                 ["harness", "layered", "naive"])
    out = HERE if sim == "sim" else HERE / sim
    print(write_agreement(found, out, COMMAND, "local:qwen2.5-coder-0.5b", f"sim ({sim}/)"))


if __name__ == "__main__":
    main(*sys.argv[1:])
