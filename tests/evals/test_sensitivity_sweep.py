"""The sensitivity sweep: each fitted rate at both ends of its measured interval, and where the ranking
flips (``evals.sensitivity``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from lg_harness.errors import HarnessError
from lg_harness.llm.factory import make_model
from lg_harness.llm.sim import SimChatModel
from lg_harness_lab.evals.sensitivity import flips, render_sweep, sweep_variants, sweep_verdict
from simlm import FaultProfile


@pytest.fixture
def measured(monkeypatch):
    """A fitted profile whose rates carry their evidence, as ``harness calibrate --write`` writes them."""
    import simlm.faults as faults

    fitted = FaultProfile(name="fitted@t", skip_call=0.15, call_after_result=0.2, repeat_after_error=1.0,
                          repeat_after_error_kinds={"validation": 0.3},
                          answer_steps={"facts/constrained": {"call_after_result": 0.0}},
                          evidence={"skip_call": {"k": 6, "n": 40, "ci": [0.07, 0.29]},
                                    "call_after_result": {"k": 2, "n": 10, "ci": [0.057, 0.51]},
                                    "repeat_after_error": {"k": 10, "n": 10, "ci": [0.72, 1.0]},
                                    "repeat_after_error_kinds.validation": {"k": 3, "n": 10, "ci": [0.11, 0.6]},
                                    "answer_steps.facts/constrained.call_after_result": {"k": 0, "n": 8,
                                                                                         "ci": [0.0, 0.32]}})
    monkeypatch.setattr(faults, "load_profiles", lambda path=None: {"fitted@t": fitted, "clean": faults.CLEAN})
    return fitted


def sim_profile(spec: str) -> FaultProfile:
    """The fault profile of the simulated model ``spec`` names."""
    model = make_model(spec)
    assert isinstance(model, SimChatModel)
    return model.fault_profile


def test_each_rate_is_swept_to_both_ends_of_its_interval_and_the_sim_runs_it(measured):
    variants = sweep_variants("fitted@t", ["call_after_result", "repeat_after_error"])
    assert [v["slug"] for v in variants] == ["fitted", "call_after_result-low", "call_after_result-high",
                                             "repeat_after_error-low", "repeat_after_error-high"]
    high = sim_profile(f"sim:{variants[2]['profile']}:3")
    assert high.call_after_result == 0.51 and high.skip_call == 0.15  # the others stay as fitted
    # the answer step presented another way moves to its own interval's end with the flat rate
    assert high.answer_rate("call_after_result", "facts", "constrained") == 0.32
    low = sim_profile(f"sim:{variants[3]['profile']}")
    # every kind of error moves to its own interval's end with the transient rate
    assert low.repeat_after_error == 0.72 and low.repeat_rate("validation") == 0.11


def test_a_rate_without_a_measured_interval_cannot_be_swept(measured):
    with pytest.raises(HarnessError, match="invent_missing"):
        sweep_variants("fitted@t", ["invent_missing"])


def _ranking(**rates: float) -> list[Mapping[str, Any]]:
    rows = sorted(rates.items(), key=lambda kv: -kv[1])
    return [{"rank": i + 1, "design": d, "task_completion": {"mean": r, "ci": [r - 0.1, r + 0.1], "n": 30},
             "paired": None} for i, (d, r) in enumerate(rows)]


def test_the_verdict_names_the_rate_under_which_the_order_flips():
    base = _ranking(harness=0.63, naive=0.55, layered=0.50)
    variants = [{"slug": "fitted", "label": "as fitted", "param": None},
                {"slug": "car-high", "label": "call_after_result high (51%)", "param": "call_after_result"},
                {"slug": "skip-low", "label": "skip_call low (7%)", "param": "skip_call"}]
    data = {"fitted": {"ranking": base},
            "car-high": {"ranking": _ranking(harness=0.60, naive=0.667, layered=0.5)},
            "skip-low": {"ranking": _ranking(harness=0.70, naive=0.60, layered=0.52)}}
    assert flips(base, data["car-high"]["ranking"]) == [("harness", "naive")]
    verdict = sweep_verdict(data, variants)
    assert verdict["leader"] == "harness" and not verdict["leader_holds"]
    assert list(verdict["flips"]) == ["call_after_result"]
    summaries = {k: {"designs": [r["design"] for r in v["ranking"]], "baseline": "harness", "split": "test",
                     "n_scenarios": 30, "n_clusters": 9, "seeds": [0], "paired": [],
                     "metrics": {r["design"]: {"task_completion": r["task_completion"]} for r in v["ranking"]}}
                 for k, v in data.items()}
    text = render_sweep(summaries, [{**v, "profile": v["slug"]} for v in variants], "harness compare --sweep default")
    assert "The ranking flips with `call_after_result`: at call_after_result high (51%), naive overtakes harness" in text
    assert "skip_call" not in text.split("## Verdict")[1].split("## Ranking")[0]
