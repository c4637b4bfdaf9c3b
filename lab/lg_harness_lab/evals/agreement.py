"""Where the simulated model predicts the real one: the same cells on both, success side by side (issue 45).

``harness compare --agreement SIM --model REAL`` runs every (design, scenario, seed) on the real model and on
the sim, then writes ``agreement.md``: per design the success rate on each with its Wilson interval and n,
the difference, and the share of cells with the same verdict. The sim is trusted only where that share is high
and the rates are close; the table says plainly where it is not.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from lg_harness_lab.evals.formatting import table
from lg_harness_lab.evals.stats import wilson

TRUSTED_GAP = 0.10  # success rates within 10 points
TRUSTED_AGREEMENT = 0.80  # and at least 80% of cells with the same verdict


def verdicts(records: Sequence[Mapping[str, Any]], scenarios: Mapping[str, Any]) -> dict[tuple[str, str, Any], bool]:
    """(design, scenario, seed) -> success, for the records whose scenario is in ``scenarios``."""
    from lg_harness_lab.evals.metrics import cell_metrics

    out = {}
    for r in records:
        scenario = scenarios.get(str(r.get("scenario")))
        if scenario is not None and not r.get("crash"):
            out[(r["design"], r["scenario"], r.get("seed"))] = bool(cell_metrics(r, scenario)["success"])
    return out


def rows(real: Mapping[tuple[str, str, Any], bool], sim: Mapping[tuple[str, str, Any], bool],
         order: Sequence[str]) -> list[dict[str, Any]]:
    """One row per design over the cells both runs have."""
    out = []
    for design in order:
        both = [k for k in real if k[0] == design and k in sim]
        n = len(both)
        r, s = sum(real[k] for k in both), sum(sim[k] for k in both)
        same = sum(real[k] == sim[k] for k in both)
        gap = (s - r) / n if n else None
        agree = same / n if n else None
        out.append({"design": design, "n": n, "real": r / n if n else None, "real_ci": wilson(r, n) if n else None,
                    "sim": s / n if n else None, "sim_ci": wilson(s, n) if n else None, "gap": gap,
                    "agreement": agree, "agreement_ci": wilson(same, n) if n else None,
                    "trusted": n > 0 and abs(gap or 0) <= TRUSTED_GAP and (agree or 0) >= TRUSTED_AGREEMENT,
                    "disagree": sorted(f"{k[1]}#{k[2]} (real {'pass' if real[k] else 'fail'})"
                                       for k in both if real[k] != sim[k])})
    return out


def _pct(x: float | None, ci: Sequence[float] | None = None) -> str:
    if x is None:
        return "n/a"
    return f"{100 * x:.1f}%" + (f" [{100 * ci[0]:.1f}-{100 * ci[1]:.1f}]" if ci else "")


def write_agreement(found: list[dict[str, Any]], out_dir: Path, command: str, real: str, sim: str) -> Path:
    headers = ["design", "n", f"real ({real})", f"sim ({sim})", "sim - real", "same verdict", "trusted"]
    body = []
    for row in found:
        gap = "n/a" if row["gap"] is None else f"{100 * row['gap']:+.1f} pp"
        body.append([row["design"], str(row["n"]), _pct(row["real"], row["real_ci"]), _pct(row["sim"], row["sim_ci"]),
                     gap, _pct(row["agreement"], row["agreement_ci"]), "yes" if row["trusted"] else "**no**"])
    lines = [f"# Sim against the real model\n\nReproduce: `{command}`\n",
             f"Success of the same cells on both models, 95% Wilson intervals, n cells per design. The sim is "
             f"trusted for a design when its rate is within {100 * TRUSTED_GAP:.0f} points of the real one and at "
             f"least {100 * TRUSTED_AGREEMENT:.0f}% of cells get the same verdict.\n", *table(headers, body), ""]
    for row in found:
        if row["disagree"]:
            lines.append(f"- {row['design']}: verdicts differ on {', '.join(row['disagree'][:20])}"
                         + (" ..." if len(row["disagree"]) > 20 else ""))
    path = out_dir / "agreement.md"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def main(argv: Sequence[str] | None = None) -> int:
    """``agreement.md`` from cells already run: a real-model folder's cells against a sim folder's, on the
    scenario file both ran (a long real-model run is resumable, so its table can be written at any n, and a
    refitted sim can be set beside cells the real model ran before)."""
    import argparse
    import json
    import shlex
    import sys

    from lg_harness_lab.evals.scenario import load_scenarios

    parser = argparse.ArgumentParser(description=(main.__doc__ or "").split("\n\n")[0])
    parser.add_argument("real", type=Path, help="cells.jsonl of the real-model run")
    parser.add_argument("sim", type=Path, help="cells.jsonl of the sim run of the same cells")
    parser.add_argument("--scenarios", type=Path, action="append", required=True, help="scenario file(s) they ran")
    parser.add_argument("--designs", required=True, help="comma-separated, in table order")
    parser.add_argument("--out", type=Path, required=True, help="folder for agreement.md")
    args = parser.parse_args(argv)

    def cells(path: Path) -> list[dict[str, Any]]:
        return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]

    scenarios = {s.id: s for f in args.scenarios for s in load_scenarios(f)}
    real, sim = cells(args.real), cells(args.sim)
    models = sorted({str(r.get("model")) for r in real})
    found = rows(verdicts(real, scenarios), verdicts(sim, scenarios), args.designs.split(","))
    args.out.mkdir(parents=True, exist_ok=True)
    command = "python -m lg_harness_lab.evals.agreement " + shlex.join(sys.argv[1:] if argv is None else list(argv))
    print(write_agreement(found, args.out, command, ", ".join(models), f"{args.sim.parent.name}/"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
