"""A domain of tools alone offers the tools each request needs, keeps the cap, and traces the cut.

Issue 26: with no intents, every request was offered the first three registered tools (``calculate``,
``cancel_pending_order``, ``exchange_delivered_order_items`` in the retail domain): the right tool for 2 of
the 12 requests below, with no word that 13 tools were cut. Now the tools are ranked by relevance to the
request (lexical and embedding over names and descriptions).
"""

from __future__ import annotations

from typing import Any

import pytest

from lg_harness import Domain, Harness, Parts, Settings, load_domain
from lg_harness.obs.tracing import capture_spans
from tests.fixtures.chains import REQUESTS, RETAIL, ChainModel
from tests.support import patient_design


def fresh(domain: Domain) -> dict[str, Any]:
    """A fresh copy of the domain's seeded backends (the retail fixture has them)."""
    assert domain.fresh_resources is not None
    return domain.fresh_resources()


@pytest.mark.parametrize("design", ["harness", "state-machine", "layered"])
def test_the_right_tool_is_offered_for_each_request_and_the_cut_is_traced(design):
    domain = load_domain(RETAIL + ":DOMAIN")
    cap = patient_design(design).knobs.max_tools_offered
    missed = []
    for i, (text, wanted) in enumerate(REQUESTS):
        model = ChainModel()
        with Harness(model, domain=domain, design=patient_design(design),
                     settings=Settings(data_dir=None, parts=Parts(resources=fresh(domain)))) as h, \
                capture_spans() as exporter:
            h.send(f"t{i}", text, domain.default_user)
        offered = model.offers[0]
        assert len(offered) == cap < len(domain.registry())
        if wanted not in offered:
            missed.append((text, wanted, offered))
        [cut] = [e for s in exporter.get_finished_spans() for e in s.events if e.name == "tools.offer_cut"][:1]
        assert cut.attributes["left_out"] == len(domain.registry()) - cap
        assert cut.attributes["offered"].split(",") == offered
    assert not missed, missed


def test_a_confirmed_change_is_offered_whatever_the_yes_says():
    """The yes of a confirmation runs the confirmed call: ranking "yes" must not leave its tool out."""
    domain = load_domain(RETAIL + ":DOMAIN")
    data = fresh(domain)
    uid = domain.default_user
    order = next(o for o in data["retail"]["orders"].values() if o["user_id"] == uid and o["status"] == "pending")
    text = f"Cancel order {order['order_id']}, I ordered it by mistake"
    model = ChainModel(plan={text: [lambda m: ("cancel_pending_order", {"order_id": order["order_id"],
                                                                       "reason": "ordered by mistake"})]})
    with Harness(model, domain=domain, design=patient_design(),
                 settings=Settings(data_dir=None, parts=Parts(resources=data))) as h:
        asked = h.send("t", text, uid)
        assert asked.tool_calls[0]["error_type"] == "needs_confirmation"
        done = h.send("t", "yes", uid)
    assert [(c["name"], c["status"]) for c in done.tool_calls] == [("cancel_pending_order", "ok")]
    assert data["retail"]["orders"][order["order_id"]]["status"] == "cancelled"
