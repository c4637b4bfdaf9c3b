"""Reports say how sure they are (issue 17, item 7): report.md links its plots, every claim row carries
n, and a claim on too few scenarios gets no verdict."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from lg_harness.core.domain import load_domain
from lg_harness_lab.evals.claims import MIN_SCENARIOS, TOO_FEW, claim_rows
from lg_harness_lab.evals.compare import run_compare, write_outputs
from lg_harness_lab.evals.metrics import aggregate
from lg_harness_lab.evals.scenario import load_scenarios, select_split, spread
from lg_harness_lab.evals.scenario_sets import scenario_path


def _compare(tmp_path: Path, n: int) -> tuple[dict, list[Path]]:
    suite = spread(select_split(load_scenarios(scenario_path(load_domain("shop"), "builtin")), "test"), n)
    records = run_compare(["naive", "harness"], suite, seeds=1, model="sim:clean", out_dir=tmp_path, workers=1)
    summary = aggregate(records, suite, split="test", order=["naive", "harness"])
    return summary, write_outputs(summary, tmp_path, "harness compare --designs naive,harness")


@pytest.mark.slow
def test_a_quick_comparison_does_not_call_claims_reproduced(tmp_path: Path) -> None:
    summary, files = _compare(tmp_path, 4)
    report = (tmp_path / "report.md").read_text(encoding="utf-8")
    rows = claim_rows(summary)
    judged = [r for r in rows if not r["verdict"].startswith("n/a")]
    assert judged and all(r["verdict"].startswith(TOO_FEW) for r in judged), [r["verdict"] for r in judged]
    assert all(r["n"].startswith("n=") for r in judged)
    assert "| reproduced |" not in report and "meets claim" not in report
    assert TOO_FEW in report
    # Every plot written beside the report is linked from it, by a path relative to the report.
    plots = [f for f in files if f.suffix == ".png"]
    assert plots
    for plot in plots:
        assert f"]({plot.name})" in report, plot.name
    assert all((tmp_path / link).exists() for link in re.findall(r"\]\(([^)]+\.png)\)", report))
    # One seed has no spread across seeds: nothing claims a zero one ("+/- 0.0", "± 0", [x, x] over seeds).
    assert not re.search(r"(?:\+/-|±)\s*0(?:\.0+)?\b", report)
    results = json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))
    seed_cis = [m.get("seed_ci", "absent") for d in results["metrics"].values() for m in d.values()
                if isinstance(m, dict) and "per_seed" in m]
    assert seed_cis and all(ci is None for ci in seed_cis), seed_cis[:3]


def test_several_seeds_keep_their_spread() -> None:
    from lg_harness_lab.evals.metrics import _seed_stats

    assert _seed_stats({0: 0.5, 1: 0.7})["seed_ci"][0] < 0.5 < 0.7 < _seed_stats({0: 0.5, 1: 0.7})["seed_ci"][1]
    assert _seed_stats({0: 0.5})["seed_ci"] is None and _seed_stats({0: 0.5, 1: None})["seed_ci"] is None


@pytest.mark.slow
def test_enough_scenarios_get_a_verdict(tmp_path: Path) -> None:
    summary, _ = _compare(tmp_path, MIN_SCENARIOS + 2)
    calls = next(r for r in claim_rows(summary) if r["claim"].startswith("Model calls per request"))
    assert calls["verdict"] in ("reproduced", "not reproduced") and calls["n"] == f"n={MIN_SCENARIOS + 2}"
