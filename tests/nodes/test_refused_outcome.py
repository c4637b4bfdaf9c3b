"""A request's tool said no on the merits: that is the outcome, told with its reason, not a search for more.

Real model, shop test 0027: "can u add SUMMER25 to my account? saw it on a flyer" - claim_coupon refused (the
coupon expired), the model was offered the other candidates' lookups, called get_order_status with a made-up
id, and the customer was asked for an order number; the reason never reached them.
"""

from __future__ import annotations

from pathlib import Path

from lg_harness.graphs.app import Harness, Settings
from tests.support import patient_design


def test_a_refused_change_is_told_with_its_reason_and_nothing_more_is_asked(tmp_path: Path) -> None:
    with Harness("sim:clean", domain="shop", design=patient_design(), settings=Settings(data_dir=tmp_path)) as h:
        r = h.send("t", "can u add SUMMER25 to my account? saw it on a flyer", "U001")
    assert [(c["name"], c["error_type"]) for c in r.tool_calls] == [("claim_coupon", "business")], r.tool_calls
    assert "SUMMER25" in r.reply and "expired" in r.reply and r.missing_slots == [], r.reply
    assert "order number" not in r.reply


def test_a_refusal_that_names_the_step_first_is_not_the_outcome() -> None:
    """"Identity must be verified first: ... call verify_identity": the next step, not the answer."""
    from lg_harness.core.design import load_design
    from lg_harness.core.domain import load_domain
    from lg_harness.nodes.goal_stop import GoalStop, Step

    helpdesk = load_domain("helpdesk")
    stop = GoalStop(helpdesk, helpdesk.registry(), load_design("harness").knobs)

    def step(error: str) -> Step:
        return Step({"tool_log": [{"name": "request_access", "status": "error", "error_type": "business",
                                   "error": error}], "goal_tools": ["request_access"]}, {})

    assert not stop.refused_for_good(step("Identity must be verified first: call verify_identity"), {"request_access"})
    assert stop.refused_for_good(step("There is already a request REQ0001221 for github"), {"request_access"})
