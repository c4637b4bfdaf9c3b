"""A search's hits reach the model in the order of the customer's words (harness's goal stop): the model writes
a poor query and then takes the first hit. Real model, shop dev 0027: "你们家有空气炸锅卖不？多少钱一个" was
searched as "家", and the first hit, a ceramic mug, was looked up and priced as the air fryer."""

from __future__ import annotations

from lg_harness.core.design import load_design
from lg_harness.domains.helpdesk import DOMAIN as HELPDESK
from lg_harness.domains.shop import DOMAIN as SHOP
from lg_harness.graphs.app import Harness, Settings
from lg_harness.nodes.goal_stop import GoalStop, in_customer_order
from tests.support import ScriptedModel, patient_design

HITS = {"query": "家", "results": [{"product_id": "P1046", "name": "Ceramic mug", "name_zh": "陶瓷马克杯"},
                                    {"product_id": "P1010", "name": "Air fryer", "name_zh": "空气炸锅"},
                                    {"product_id": "P1001", "name": "Home lamp", "name_zh": "家用台灯"}]}


def test_hits_are_put_in_the_order_of_the_customers_words_in_any_language():
    zh = in_customer_order(HITS, "你们家有空气炸锅卖不？多少钱一个")
    assert [r["product_id"] for r in zh["results"]] == ["P1010", "P1001", "P1046"]
    en = in_customer_order(HITS, "How much is the air fryer?")
    assert en["results"][0]["product_id"] == "P1010" and en["query"] == "家"
    # nothing of the customer's in any hit: the tool's order stands
    assert in_customer_order(HITS, "hello there") == HITS


def test_only_searches_are_reordered():
    for domain, searches in ((SHOP, ["search_products"]), (HELPDESK, ["search_kb"])):
        stop = GoalStop(domain, domain.registry(), load_design("harness").knobs)
        assert [n for n in domain.registry().names() if stop.is_search(n)] == searches


def test_the_model_reads_the_hit_the_customer_asked_about_first(tmp_path):
    model = ScriptedModel()
    model.calls = [{"name": "search_products", "args": {"query": "家"}, "id": "s1", "type": "tool_call"}]
    with Harness(model, design=patient_design(), settings=Settings(data_dir=tmp_path)) as h:
        h.send("t", "你们家有空气炸锅卖不？多少钱一个", "U001")
    text = " ".join(str(m.content) for m in model.seen[1] if m.type == "tool")  # the search's result
    # the tool's own order puts slippers, a mug, a bottle and a kettle before the air fryer
    assert "空气炸锅" in text and "马克杯" in text and text.index("空气炸锅") < text.index("马克杯"), text
