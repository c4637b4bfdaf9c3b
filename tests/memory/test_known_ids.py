"""Every id a thread has shown is known: correct lookup -> write chains run, ids never shown are refused.

Issue 26: the invented-id check read only the bounded working set, so a write using an id that a lookup
returned turns earlier (compressed or windowed out since) was refused as invented. The check now reads the
thread's record of every id the customer typed or a tool result returned (``memory.known_ids``).
"""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage

from lg_harness import Harness, Parts, Settings, load_domain
from lg_harness.core.state import MAX_KNOWN_IDS, remember_ids
from lg_harness.memory.known_ids import ids_in_result, ids_in_text, invented_args, names_in_text, seen_text
from tests.fixtures.chains import RETAIL, ChainModel, helpdesk_tasks, retail_tasks, run_task, say, shop_tasks
from tests.support import patient_design

CASES = {"retail": (RETAIL + ":DOMAIN", retail_tasks, 4), "shop": ("shop", shop_tasks, 3),
         "helpdesk": ("helpdesk", helpdesk_tasks, 2)}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(CASES))
def test_correct_chains_are_never_refused_and_unseen_ids_always_are(name):
    spec, tasks, n = CASES[name]
    domain = load_domain(spec)
    total: dict[str, int] = {}
    for uid, turns, unseen in tasks(domain)[:n]:
        for key, value in run_task(domain, "harness", uid, turns, unseen).items():
            total[key] = total.get(key, 0) + value
    assert total["invented"] == 0, total  # no false rejection of a correct call
    assert total["calls"] == total["ok"] and total["broken"] == 0, total  # every planned call ran
    assert total["writes"] > 0 or name == "helpdesk", total  # lookup -> write chains, not only lookups
    assert total["unseen"] == len([u for _, _, us in tasks(domain)[:n] for u in us]), total
    assert total["unseen_refused"] == total["unseen"] > 0, total  # every id never shown is refused


def test_an_id_compressed_out_of_the_working_set_is_still_known():
    """The gift card a lookup showed in turn 1 is gone from the stored messages by turn 7, and the write
    that pays with it runs."""
    domain = load_domain(RETAIL + ":DOMAIN")
    uid, turns, _ = retail_tasks(domain)[0]
    model = ChainModel(plan=dict(turns))
    thread = uid + "-thread"
    assert domain.fresh_resources is not None
    with Harness(model, domain=domain, design=patient_design(),
                 settings=Settings(data_dir=None, parts=Parts(resources=domain.fresh_resources()))) as h:
        for text, _ in turns[:6]:
            say(h, uid, text)
        gift = next(k for k in model.memory["get_user_details"][0]["payment_methods"] if k.startswith("gift"))
        values = h.state(thread)["values"]
        assert gift.upper() not in seen_text(values), "the lookup should have left the working set"
        assert gift.upper() in values["known_ids"]
        text = turns[6][0]
        assert "gift card" in text
        [asked] = h.send(thread, text, uid).tool_calls
        assert asked["name"] == "modify_pending_order_payment" and asked["error_type"] == "needs_confirmation"
        assert asked["args"] is not None and asked["args"]["payment_method_id"] == gift
        done = h.send(thread, "yes", uid)
        assert [(c["name"], c["status"]) for c in done.tool_calls] == [("modify_pending_order_payment", "ok")]


def test_ids_are_known_per_thread_only():
    """Another customer's thread that never showed the id refuses it, though this harness ran it elsewhere."""
    domain = load_domain(RETAIL + ":DOMAIN")
    (a, turns, _), (b, _, _) = retail_tasks(domain)[:2]
    model = ChainModel(plan=dict(turns[:2]))
    assert domain.fresh_resources is not None
    with Harness(model, domain=domain, design=patient_design(),
                 settings=Settings(data_dir=None, parts=Parts(resources=domain.fresh_resources()))) as h:
        for text, _ in turns[:2]:
            h.send("a", text, a)
        order = model.memory["get_order_details"][0]["order_id"]
        model.plan["Show me that order"] = [lambda m: ("get_order_details", {"order_id": order})]
        [call] = h.send("b", "Show me that order", b).tool_calls
        assert call["error_type"] == "invented_argument"


def test_ids_are_read_from_text_and_from_every_part_of_a_result():
    assert ids_in_text("I'm mia_garcia_4516, order #W2378156. Thanks!") == ["MIA_GARCIA_4516", "#W2378156"]
    result = {"payment_methods": {"credit_card_4466831": {"source": "credit_card"}}, "orders": ["#W2378156"],
              "item_id": 1008292230, "note": "Replaced by order #W0000001 on request."}
    found = ids_in_result(result)
    for value in ("CREDIT_CARD_4466831", "#W2378156", "1008292230", "#W0000001", "CREDIT_CARD"):
        assert value in found
    assert "REPLACED BY ORDER #W0000001 ON REQUEST." not in found  # text with spaces is no id itself


def test_the_record_is_bounded_and_keeps_the_newest():
    known = remember_ids([], [f"ID{i}" for i in range(MAX_KNOWN_IDS + 50)])
    assert len(known) == MAX_KNOWN_IDS and known[-1] == f"ID{MAX_KNOWN_IDS + 49}" and "ID0" not in known
    again = remember_ids(known, [known[0]])
    assert again[-1] == known[0] and len(again) == MAX_KNOWN_IDS


def test_lists_are_checked_item_by_item():
    state = {"known_ids": ["1008292230"], "messages": [AIMessage("")]}
    call = {"name": "x", "args": {"item_ids": ["1008292230", "9999999999"], "note": "free text"}}
    assert invented_args(call, state, {"item_ids": "item"}) == ["item_ids"]
    assert invented_args({"args": {"item_ids": ["1008292230"]}}, state, {"item_ids": "item"}) == []


def test_what_a_message_names_leaves_out_counts_dates_and_amounts():
    assert names_in_text("Where is my order ORD-10005? And ord-10005 again") == ["ORD-10005"]
    assert names_in_text("Cancel #W2378156 and pay with credit_card_4466831") == ["#W2378156", "CREDIT_CARD_4466831"]
    assert names_in_text("订单ORD-10001的状态") == ["ORD-10001"]  # no spaces around it
    assert names_in_text("my 2 orders of 2026-12-01 came to 20.00 in total, by order_id") == []
    assert names_in_text("我的订单10001到哪了") == []


def test_a_one_word_value_the_model_respelled_is_put_back_as_the_customer_wrote_it():
    """The 0.5B model wrote "Lisboa" for the customer's "Lisbon", and the weather server knows only Lisbon."""
    from langchain_core.messages import HumanMessage

    from lg_harness.memory.known_ids import customer_spelling

    state = {"messages": [HumanMessage("What's the weather forecast for Lisbon?")]}
    assert customer_spelling({"city": "Lisboa", "days": 3}, state) == {"city": "Lisbon", "days": 3}
    assert customer_spelling({"city": "Lisbon"}, state) == {"city": "Lisbon"}  # said: kept
    assert customer_spelling({"city": "Porto"}, state) == {"city": "Porto"}  # nothing close: the model's own
    assert customer_spelling({"city": "Lisboa"}, state, skip=("city",)) == {"city": "Lisboa"}  # an identifier
    assert customer_spelling({"q": "Lisboa weather"}, state) == {"q": "Lisboa weather"}  # not one word
    two = {"messages": [HumanMessage("Lisbon or Lisbos, whichever you know")]}
    assert customer_spelling({"city": "Lisboa"}, two) == {"city": "Lisboa"}  # two candidates: no guess
