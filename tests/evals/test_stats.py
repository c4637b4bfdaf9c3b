"""The statistics of an A/B comparison: Wilson and cluster-bootstrap intervals, scenario clusters, the dev/test
split, and argument validity measured at the model's emission and at the tool boundary."""

from __future__ import annotations

import json
from collections import Counter

import numpy as np
import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from lg_harness.core.domain import load_domain
from lg_harness_lab.evals import stats
from lg_harness_lab.evals.clusters import cluster_of
from lg_harness_lab.evals.metrics import aggregate, arg_validity
from lg_harness_lab.evals.runner import tool_calls_of
from lg_harness_lab.evals.scenario import DEV_FRACTION, Scenario, Turn, load_scenarios, select_split, split_of
from lg_harness_lab.evals.scenario_sets import scenario_path
from tests.support import patient_design, u001_order

# ------------------------------------------------------------------------------------------------ Wilson


@pytest.mark.parametrize(("k", "n", "lo", "hi"), [
    (31, 34, 0.7704, 0.9695),  # the "91.2% on 34 turns is [77%, 97%]"
    (0, 10, 0.0, 0.2775),
    (10, 10, 0.7225, 1.0),
    (5, 10, 0.2366, 0.7634),
    (1, 1, 0.2065, 1.0),
])
def test_wilson_matches_known_values(k, n, lo, hi):
    assert stats.wilson(k, n) == pytest.approx([lo, hi], abs=1e-4)


def test_wilson_without_trials_has_no_interval():
    assert stats.wilson(0, 0) is None


# -------------------------------------------------------------------------------------------- bootstrap


def _clusters(rates: list[float], size: int = 10) -> tuple[list[float], list[float]]:
    return [r * size for r in rates], [float(size)] * len(rates)


def test_bootstrap_of_identical_designs_contains_zero_and_says_so():
    rng = np.random.default_rng(1)
    per_cluster = {f"k{i}": [float(rng.integers(0, 11)), 10.0] for i in range(20)}
    diff = stats.paired(per_cluster, dict(per_cluster))
    assert diff["mean"] == 0.0 and diff["ci"][0] <= 0.0 <= diff["ci"][1]
    assert diff["significant"] is False and diff["clusters"] == 20


def test_bootstrap_separates_clearly_different_designs():
    rng = np.random.default_rng(2)
    good = {f"k{i}": [float(rng.integers(8, 11)), 10.0] for i in range(20)}  # ~90%
    bad = {f"k{i}": [float(rng.integers(2, 5)), 10.0] for i in range(20)}  # ~30%
    diff = stats.paired(good, bad)
    assert diff["significant"] and diff["ci"][0] > 0.4
    assert stats.paired(bad, good)["ci"][1] < -0.4


def test_paired_noise_around_no_difference_is_not_significant():
    # two designs that differ only by noise on each cluster, half a point up and half down
    base = {f"k{i}": [5.0, 10.0] for i in range(12)}
    other = {f"k{i}": [5.0 + (1 if i % 2 else -1), 10.0] for i in range(12)}
    assert not stats.paired(other, base)["significant"]


def test_intervals_are_reproducible_and_contain_the_pooled_value():
    num, den = _clusters([0.9, 0.8, 1.0, 0.7, 0.9, 0.6, 0.85])
    first, again = stats.ratio_ci(num, den), stats.ratio_ci(num, den)
    assert first == again, "a fixed seed: the same records give the same interval"
    assert first is not None
    pooled = sum(num) / sum(den)
    assert first[0] <= pooled <= first[1] and first[0] < first[1]


def test_estimate_uses_wilson_on_few_clusters_and_the_bootstrap_on_many():
    few = stats.estimate({"a": [9, 10], "b": [8, 10]}, proportion=True)
    assert few["method"] == "wilson" and few["ci"] == pytest.approx(stats.wilson(17, 20))
    many = stats.estimate({f"k{i}": [8, 10] for i in range(8)}, proportion=True)
    assert many["method"] == "cluster-bootstrap" and many["ci"] == pytest.approx([0.8, 0.8])
    assert stats.estimate({})["mean"] is None


def test_percentile_interval_brackets_the_pooled_percentile():
    groups = [np.random.default_rng(i).exponential(3.0, 60).tolist() for i in range(15)]
    ci = stats.percentile_ci(groups, 50)
    assert ci is not None
    assert ci[0] <= float(np.percentile(np.concatenate(groups), 50)) <= ci[1]


# ------------------------------------------------------------------------------------------- clusters


def test_cluster_is_the_template_for_generated_and_the_kind_for_handwritten():
    assert cluster_of({"id": "gen-order_status-en-0003", "tags": ["en", "single"]}) == "gen-order_status"
    assert cluster_of({"id": "gen-order_status-zh-0011", "tags": ["zh", "single"]}) == "gen-order_status"
    assert cluster_of({"id": "hd-reset-flow-zh-02", "tags": ["zh", "multi-turn"]}) == "hd-reset-flow"
    hand = {"id": "hw-injection-03", "tags": ["handwritten", "zh", "single", "injection", "adversarial"]}
    assert cluster_of(hand) == "hw:injection"
    assert cluster_of({"id": "mine-1", "tags": ["en", "single", "billing"]}) == "billing"
    assert cluster_of({"id": "mine-2", "tags": ["en"]}) == "mine-2"


@pytest.mark.parametrize("domain", ["shop", "helpdesk"])
def test_every_shipped_scenario_has_a_cluster_that_groups_several(domain):
    suite = load_scenarios(scenario_path(load_domain(domain)))
    clusters = Counter(cluster_of(s) for s in suite)
    assert 20 <= len(clusters) < len(suite) / 3, clusters


# ---------------------------------------------------------------------------------------------- split


@pytest.mark.parametrize("domain", ["shop", "helpdesk"])
def test_split_is_stable_about_30_percent_dev_and_handwritten_is_test(domain):
    suite = load_scenarios(scenario_path(load_domain(domain)))
    first = [split_of(s) for s in suite]
    assert first == [split_of(Scenario.model_validate(s.model_dump())) for s in suite], "depends on the scenario only"
    generated = [s for s in suite if not {"handwritten", "heldout"} & set(s.tags)]
    share = sum(split_of(s) == "dev" for s in generated) / len(generated)
    assert abs(share - DEV_FRACTION) < 0.08, share
    assert all(split_of(s) == "test" for s in suite if "handwritten" in s.tags)
    assert all(split_of(s) == "heldout" for s in suite if "heldout" in s.tags)
    parts = [{s.id for s in select_split(suite, name)} for name in ("dev", "test", "heldout")]
    assert sum(map(len, parts)) == len(suite) == len(set().union(*parts)), "the three splits partition the suite"
    assert len(parts[2]) >= 60, "the held-out split ships with the domain"
    assert select_split(suite, "all") == suite


def test_split_of_a_known_id_does_not_move():
    # pinned: if the hash rule changes, every report's test split changes with it
    assert split_of(Scenario(id="gen-order_status-en-0001", turns=[Turn(user="x")])) == "test"
    assert split_of(Scenario(id="gen-product-en-0003", turns=[Turn(user="x")])) == "dev"
    assert split_of(Scenario(id="gen-product-en-0003", tags=["held-out"], turns=[Turn(user="x")])) == "test"


def test_summary_names_its_split_and_counts():
    sc = Scenario(id="gen-product-en-0003", tags=["en", "single"], turns=[Turn(user="hi")])
    rec = {"cell": "harness|x|0", "design": "harness", "scenario": sc.id, "seed": 0, "tags": sc.tags,
           "turns": [{"index": 0, "reply": "hello", "tool_calls": [], "path": ["intent"]}], "fault_events": []}
    summary = aggregate([rec], [sc], split="dev")
    assert summary["split"] == "dev" and summary["splits"] == {"dev": 1, "test": 0, "heldout": 0} and summary["n_clusters"] == 1


# ------------------------------------------------------------------------ emitted vs boundary validity


class SlipThenAnswer(BaseChatModel):
    """Asks for the order in the format slip the normaliser repairs ('ord10134'), then answers in text."""

    order: str

    @property
    def _llm_type(self) -> str:
        return "slip-then-answer"

    def bind_tools(self, tools, **kwargs):
        return self

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        if isinstance(messages[-1], ToolMessage):
            message = AIMessage(f"Order {self.order}: {messages[-1].content[:200]}")
        else:
            slip = self.order.lower().replace("-", "")
            message = AIMessage("", tool_calls=[{"name": "get_order_status", "args": {"order_id": slip},
                                                 "id": f"call_{len(messages)}", "type": "tool_call"}])
        return ChatResult(generations=[ChatGeneration(message=message)])


def _record_of(design: str, order: str, scenario: Scenario) -> dict:
    from lg_harness.domains.shop.backend import ShopDB
    from lg_harness.graphs.app import Harness, Parts, Settings

    shop = ShopDB.fresh_copy()
    h = Harness(SlipThenAnswer(order=order), domain="shop", design=patient_design(design),
                settings=Settings(data_dir=None, parts=Parts(resources={"shop": shop})))
    try:
        calls = tool_calls_of(h.send("t", scenario.turns[0].user, "U001").values)
    finally:
        h.close()
        shop.close()
    return {"design": design, "domain": "shop", "scenario": scenario.id, "seed": 0, "tags": [],
            "turns": [{"index": 0, "reply": "", "tool_calls": calls}]}


def test_a_rewritten_call_is_invalid_as_emitted_and_valid_at_the_boundary():
    order = u001_order("shipped")
    scenario = Scenario(id="slip", user_id="U001", turns=[Turn(user=f"Where is my order {order}?")])
    record = _record_of("harness", order, scenario)
    first = record["turns"][0]["tool_calls"][0]
    assert first["emitted_args"] == {"order_id": order.lower().replace("-", "")}
    assert first["args"] == {"order_id": order} and first["reached_tool"] is True and first["status"] == "ok"
    emitted, boundary = (arg_validity(record, scenario, at=at) for at in ("emitted", "boundary"))
    assert emitted["valid"] < emitted["total"] and boundary["rate"] == 1.0, (emitted, boundary)
    json.dumps(record)  # run records are JSON lines

    # without the rewrite (naive normalises nothing) the two points of measurement agree
    plain = _record_of("naive", order, scenario)
    assert arg_validity(plain, scenario, at="emitted")["rate"] == arg_validity(plain, scenario, at="boundary")["rate"]
