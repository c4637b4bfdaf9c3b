"""``harness compare --split``, ``--ablations`` and ``--profiles`` end to end on a tiny subset."""

from __future__ import annotations

import json

import pytest

from lg_harness.core.domain import load_domain
from lg_harness_lab.evals.scenario import load_scenarios, split_of
from lg_harness_lab.evals.scenario_sets import scenario_path
from tests.support import harness

pytestmark = pytest.mark.slow


def test_split_selects_the_scenarios_and_the_report_says_which(tmp_path):
    out = tmp_path / "dev"
    run = harness("compare", "--designs", "harness", "--split", "dev", "--limit", "3", "--workers", "1",
                  "--out", str(out), "--json", cwd=tmp_path, timeout=300)
    assert run.returncode == 0, run.stderr
    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert results["split"] == "dev" and results["splits"] == {"dev": 3, "test": 0, "heldout": 0}
    by_id = {s.id: s for s in load_scenarios(scenario_path(load_domain("shop")))}
    assert all(split_of(by_id[c["scenario"]]) == "dev" for c in results["cells"])
    assert "Split: dev (3 scenarios in " in (out / "report.md").read_text(encoding="utf-8")
    bad = harness("compare", "--split", "train", "--out", str(tmp_path / "x"), cwd=tmp_path, timeout=60)
    assert bad.returncode != 0 and "unknown split" in bad.stderr


def test_two_splits_run_in_one_folder_and_the_headline_puts_them_side_by_side(tmp_path):
    """``--split test,heldout``: one cells file, each split's report in its own folder, and headline.md with
    both splits' outcome-judged completion and paired differences in one table."""
    import yaml

    shop = load_domain("shop")
    picked = [s for s in load_scenarios(scenario_path(shop)) if split_of(s) == "test"
              and s.outcome is not None and len(s.turns) == 1][:4]
    rows = [s.model_dump(exclude_none=True) for s in picked]
    for row in rows[2:]:
        row["id"], row["tags"] = f"ho-shop-{row['id']}", ["heldout", *row["tags"]]
    file = tmp_path / "mixed.yaml"
    file.write_text(yaml.safe_dump(rows, allow_unicode=True), encoding="utf-8")
    out = tmp_path / "both"
    run = harness("compare", "--designs", "naive,harness", "--scenarios", str(file), "--split", "test,heldout",
                  "--workers", "1", "--out", str(out), "--json", cwd=tmp_path, timeout=600)
    assert run.returncode == 0, run.stderr
    for split in ("test", "heldout"):
        results = json.loads((out / split / "results.json").read_text(encoding="utf-8"))
        assert results["split"] == split and results["n_scenarios"] == 2 and results["splits"][split] == 2
    assert len((out / "cells.jsonl").read_text().splitlines()) == 8
    headline = (out / "headline.md").read_text(encoding="utf-8")
    assert "| Design | test: completion | test: vs harness | heldout: completion | heldout: vs harness |" in headline
    assert "| harness |" in headline and "(baseline)" in headline and "heldout: wrong changes" in headline


def test_ablations_add_one_design_per_knob_and_a_report_section(tmp_path):
    out = tmp_path / "abl"
    run = harness("compare", "--designs", "harness", "--ablations", "--limit", "1", "--workers", "2",
                  "--out", str(out), "--json", cwd=tmp_path, timeout=600)
    assert run.returncode == 0, run.stderr
    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert "harness-no:normalize_args" in results["designs"] and "harness-with:context=full" in results["designs"]
    assert {a["design"] for a in results["ablations"]} == set(results["designs"]) - {"harness"}
    report = (out / "report.md").read_text(encoding="utf-8")
    assert "| normalize_args: True -> False | knob | harness-no:normalize_args |" in report


def test_profiles_run_once_per_profile_and_write_the_sensitivity_table(tmp_path):
    out = tmp_path / "prof"
    run = harness("compare", "--designs", "naive,harness", "--profiles", "clean,flat", "--limit", "2",
                  "--workers", "1", "--out", str(out), "--json", cwd=tmp_path, timeout=600)
    assert run.returncode == 0, run.stderr
    doc = json.loads(run.stdout)
    assert set(doc["profiles"]) == {"clean", "flat"}
    for profile in ("clean", "flat"):
        assert (out / profile / "report.md").is_file() and doc["profiles"][profile]["cells"] == 4
        cells = [json.loads(line) for line in (out / profile / "cells.jsonl").read_text().splitlines()]
        assert all(not c.get("crash") for c in cells), [c.get("crash") for c in cells]
    table = (out / "sensitivity.md").read_text(encoding="utf-8")
    assert "| Rank | clean | flat |" in table and "## Paired difference from harness" in table
    data = json.loads((out / "sensitivity.json").read_text(encoding="utf-8"))
    ranks = [r["rank"] for r in data["clean"]["ranking"]]
    assert ranks[0] == 1 and ranks == sorted(ranks) and len(ranks) == 2  # equal completion shares a rank
    assert {r["design"] for r in data["flat"]["ranking"]} == {"naive", "harness"}
    unknown = harness("compare", "--profiles", "nope", "--out", str(tmp_path / "y"), cwd=tmp_path, timeout=60)
    assert unknown.returncode != 0 and "nope" in unknown.stderr
