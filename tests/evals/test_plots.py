"""The comparison's plots cannot be misread (issue 30, item 7): every design visible, zeros labelled, a log
axis where values span orders of magnitude, and the subtitle names the interval method actually used."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from matplotlib.figure import Figure

from lg_harness_lab.evals.plots import (
    LOG_SPAN,
    ablation_figure,
    ablation_plot,
    bar_figure,
    interval_note,
    value_scale,
)

DESIGNS = ["naive", "framework-default", "custom-lightweight", "state-machine", "layered", "harness"]


def _summary(key: str, values: Mapping[str, float], method: str = "cluster-bootstrap", n: int = 36) -> dict:
    metrics = {d: {key: {"mean": v, "ci": [v * 0.9, v * 1.1], "method": method, "n": n}} for d, v in values.items()}
    return {"designs": list(values), "metrics": metrics, "ablations": []}


def _bar(summary: Mapping[str, Any], key: str) -> Figure:
    fig = bar_figure(summary, key)
    assert fig is not None, "a summary with values draws a figure"
    return fig


def _labels(fig) -> list[str]:
    return [t.get_text() for t in fig.axes[0].texts]


def test_values_spanning_an_order_of_magnitude_get_a_log_axis():
    tokens = dict(zip(DESIGNS, [7823, 34770, 1745, 1421, 1500, 1307], strict=True))
    fig = _bar(_summary("input_tokens_per_msg", tokens), "input_tokens_per_msg")
    ax = fig.axes[0]
    assert ax.get_yscale() == "log" and "log scale" in ax.get_ylabel()
    # the smallest bar stands clearly above the floor of the axis
    assert ax.get_ylim()[0] < min(tokens.values()) / 1.5
    assert _labels(fig) == ["7,823", "34,770", "1,745", "1,421", "1,500", "1,307"]


def test_close_values_keep_a_linear_axis_and_zero_bars_are_labelled():
    rates = dict(zip(DESIGNS, [0.0, 0.0, 0.0, 0.0, 0.0, 0.05], strict=True))
    fig = _bar(_summary("internal_text", rates), "internal_text")
    assert fig.axes[0].get_yscale() == "linear"
    assert _labels(fig) == ["0.0%"] * 5 + ["5.0%"]
    spread = _bar(_summary("internal_text", {"naive": 0.5, "harness": 0.01}), "internal_text")
    assert spread.axes[0].get_yscale() == "linear"  # a percentage keeps its 0-100 reading
    assert value_scale([1, 2, 9.9]) == "linear" and value_scale([1, LOG_SPAN]) == "log"
    assert value_scale([0, 1, 50]) == "symlog" and value_scale([0, 0, 3]) == "linear"


def test_the_subtitle_names_the_interval_method_the_figures_used():
    wilson = _bar(_summary("task_completion", {"naive": 0.5, "harness": 1.0}, method="wilson", n=2),
                  "task_completion")
    title = wilson.axes[0].get_title()
    assert "Wilson" in title and "bootstrap" not in title and "n = 2 scenarios" in title
    assert _labels(wilson) == ["50.0%†", "100.0%†"]
    boot = _bar(_summary("task_completion", {"naive": 0.5, "harness": 0.7}), "task_completion")
    assert "cluster bootstrap" in boot.axes[0].get_title() and "Wilson" not in boot.axes[0].get_title()
    assert "Wilson" in interval_note(["cluster-bootstrap", "wilson"]) and "bootstrap" in interval_note(["wilson", "x"])
    assert interval_note([], paired=True).startswith("error bars: paired 95% interval, cluster bootstrap")


def test_an_ablation_that_changes_nothing_shows_its_zero(tmp_path: Path):
    from matplotlib.image import imread

    ablations = [{"design": f"harness-no:{k}", "paired": {"mean": m, "ci": [m - 0.05, m + 0.05], "clusters": 12}}
                 for k, m in (("self_check", -0.117), ("normalize_args", 0.0), ("clean_results", 0.0))]
    summary = {"designs": ["harness"], "ablations": ablations}
    fig = ablation_figure(summary)
    assert fig is not None
    assert _labels(fig) == ["-11.7", "+0.0", "+0.0"]
    assert "paired 95% interval, cluster bootstrap" in fig.axes[0].get_title()
    path = ablation_plot(summary, tmp_path / "ablations.png")
    assert path is not None and imread(path).shape[0] > 100
