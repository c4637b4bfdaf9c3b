"""``harness compare --agreement``: the same cells on the sim and on a second model, side by side (issue 45)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from lg_harness_lab.evals.agreement import rows


def test_rows_compare_rates_and_count_cells_with_the_same_verdict() -> None:
    real = {("harness", f"s{i}", 0): i < 6 for i in range(10)}
    sim = {("harness", f"s{i}", 0): i < 9 for i in range(10)} | {("naive", "s0", 0): True}
    [row, empty] = rows(real, sim, ["harness", "naive"])
    assert (row["n"], row["real"], row["sim"]) == (10, 0.6, 0.9)
    assert row["gap"] == pytest.approx(0.3) and row["agreement"] == pytest.approx(0.7) and not row["trusted"]
    assert row["disagree"] == ["s6#0 (real fail)", "s7#0 (real fail)", "s8#0 (real fail)"]
    assert empty["n"] == 0 and not empty["trusted"], "a design with no cell on both models is never trusted"


@pytest.mark.slow
def test_the_command_runs_both_models_and_writes_the_table(tmp_path: Path) -> None:
    from lg_harness.service.cli import app

    out = tmp_path / "agree"
    result = CliRunner().invoke(app, ["compare", "--designs", "naive,harness", "--limit", "3", "--model",
                                      "reword:clean", "--agreement", "sim:clean", "--out", str(out), "--workers", "1"])
    assert result.exit_code == 0, result.output
    text = (out / "agreement.md").read_text()
    assert "| harness | 3 |" in text and "| naive | 3 |" in text and "sim (sim:clean)" in text
    assert (out / "real" / "cells.jsonl").is_file() and (out / "sim" / "cells.jsonl").is_file()
    bad = CliRunner().invoke(app, ["compare", "--agreement", "sim", "--out", str(out)])
    assert bad.exit_code != 0 and "real --model" in bad.output
