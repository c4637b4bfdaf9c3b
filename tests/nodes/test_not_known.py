"""A customer who does not know the number we asked for gets their records listed, not the same question again.

Real model, helpdesk test 0006: "我有几个工单已经解决了？是哪个？" was asked for a ticket number; "这个我不知道。" got the
same question, twice, then a hand-off.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from lg_harness.core.domain import load_domain
from lg_harness.graphs.app import Harness, Settings
from lg_harness.nodes.not_known import browse_intent, not_known
from tests.support import patient_design


@pytest.mark.parametrize("text", ["I don't know the number, sorry", "no idea", "这个我不知道。", "忘了"])
def test_saying_you_do_not_know_is_read(text: str) -> None:
    assert not_known(text)


@pytest.mark.parametrize("text", ["INC0012346", "I know it's the printer one", "是的"])
def test_an_answer_is_not_read_as_not_knowing(text: str) -> None:
    assert not not_known(text)


def test_the_list_that_answers_is_read_from_the_routes_and_tools() -> None:
    helpdesk, shop = load_domain("helpdesk"), load_domain("shop")
    assert browse_intent(helpdesk, ["ticket_id"]) == "my_tickets"
    assert browse_intent(helpdesk, ["asset_id"]) == "my_assets"
    assert browse_intent(shop, ["order_id"]) == "my_orders"
    assert browse_intent(helpdesk, ["employee_id"]) is None  # nothing lists employees: asked again


@pytest.mark.parametrize(("first", "second"), [("Any update on my ticket?", "I don't know the number, sorry"),
                                               ("我的打印机工单有进展吗？", "这个我不知道。")])
def test_a_lookup_whose_number_is_not_known_lists_the_customers_records(tmp_path: Path, first: str, second: str):
    with Harness("sim:clean", domain="helpdesk", design=patient_design(), settings=Settings(data_dir=tmp_path)) as h:
        asked = h.send("t", first, "E1001")
        if asked.missing_slots != ["ticket_id"]:
            pytest.fail(f"the first message should ask for the ticket: {asked.reply}")
        r = h.send("t", second, "E1001")
    assert [c["name"] for c in r.tool_calls][:1] == ["list_my_tickets"], r.tool_calls
    assert "INC0012346" in r.reply and r.missing_slots == [], r.reply


def test_a_change_whose_record_is_not_known_still_asks_which(tmp_path: Path) -> None:
    """A return needs the customer to say which order: nothing is listed in its place, nothing is changed."""
    with Harness("sim:clean", domain="shop", design=patient_design(), settings=Settings(data_dir=tmp_path)) as h:
        h.send("t", "我要退货", "U001")
        r = h.send("t", "不知道订单号", "U001")
    assert r.missing_slots == ["order_id"] and not r.tool_calls, r.reply
