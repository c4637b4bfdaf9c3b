"""The table harness compare prints cannot be misread (issue 30, item 7): n and intervals beside every
figure, "too few to tell" where few scenarios stand behind one, the verdict against the baseline, and design
names never cut at 80 or 100 columns."""

from __future__ import annotations

import io

from rich.console import Console

from lg_harness_lab.cli import summary_tables
from lg_harness_lab.evals.formatting import console_cell, console_diff

DESIGNS = ["naive", "harness-with:self_check=off", "peer:openai-agents", "harness"]


def _stat(mean: float, lo: float, hi: float, n: int = 36, method: str = "cluster-bootstrap") -> dict:
    return {"mean": mean, "ci": [lo, hi], "method": method, "n": n, "unit": "scenarios"}


def _summary() -> dict:
    metrics = {}
    for i, design in enumerate(DESIGNS):
        rate = 0.4 + 0.1 * i
        metrics[design] = {
            "task_completion": _stat(rate, rate - 0.15, rate + 0.12),
            "arg_validity_emitted": _stat(0.7, 0.6, 0.8), "arg_validity_boundary": _stat(0.8, 0.7, 0.9),
            "model_calls_per_msg": _stat(1.7, 1.5, 1.9), "input_tokens_per_msg": _stat(1307 * (i + 1), 1200, 9000),
            "latency_p50_s": _stat(2.4, 2.0, 3.0),
            # two recall turns in two scenarios: 100% against 0% says nothing
            "early_reference": _stat(1.0 if design == "harness" else 0.0, 0.34 if design == "harness" else 0.0,
                                     1.0 if design == "harness" else 0.66, n=2, method="wilson"),
            "unrequested_changes": _stat(3.0, 1.0, 5.0),
        }
    paired = [{"design": d, "baseline": "harness", "mean": -0.1, "ci": [-0.267, 0.067], "clusters": 12,
               "significant": False, "n": 36} for d in DESIGNS[:-1]]
    paired[0].update(ci=[-0.3, -0.02], significant=True)
    return {"designs": DESIGNS, "baseline": "harness", "n_scenarios": 36, "split": "test", "metrics": metrics,
            "paired": paired}


def _render(width: int) -> str:
    out = io.StringIO()
    console = Console(file=out, width=width, color_system=None)
    for table in summary_tables(_summary(), width):
        console.print(table)
    return out.getvalue()


def test_design_names_are_never_cut_at_80_or_100_columns():
    for width in (80, 100, 160):
        text = _render(width)
        assert max(len(line) for line in text.splitlines()) <= width
        for design in DESIGNS:
            assert design in text, (width, design, text)
        # every figure whole: naive's completion interval and harness's token figure, on one line each
        assert "[25.0–52.0]" in text and "5,228" in text and "…" not in text, text


def test_every_figure_has_its_interval_and_few_scenarios_are_flagged():
    text = _render(160)
    assert "[25.0–52.0]" in text  # naive's completion interval, beside its 40.0%
    assert "too few to tell" in text and "n=2" in text  # the early-reference figures rest on two scenarios
    assert "significantly lower" in text and "not significant" in text
    assert console_cell(_stat(1.0, 0.34, 1.0, n=2, method="wilson"), "rate", 36) == \
        "100.0%\n[34.0–100.0]†\nn=2\ntoo few to tell"
    assert console_cell(_stat(0.5, 0.4, 0.6, n=20), "rate", 36) == "50.0%\n[40.0–60.0]\nn=20"
    assert console_cell(_stat(0.5, 0.4, 0.6), "rate", 36) == "50.0%\n[40.0–60.0]"
    assert console_diff({"mean": 0.2, "ci": [0.1, 0.3], "clusters": 3, "significant": True, "n": 4}) == \
        "+20.0 pp\n[+10.0, +30.0]\ntoo few to tell"
