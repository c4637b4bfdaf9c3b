"""A task the customer's role cannot do ends in an outcome (issue 41, item 5): refused at once with the reason
and what to do instead, never a PIN collected for a step that was never going to run, never "How can I help
you today?" after the customer answered every question.

Helpdesk's ``unlock_account`` is for service-desk agents (the route's roles and the tool's). Before, an
employee's "I'm locked out, can you unlock it?" was asked for an employee id, then answered "How can I help
you today?" with nothing done and no pointer to the article on locked accounts.
"""

from __future__ import annotations

from pathlib import Path

from lg_harness.graphs.app import Harness, Settings
from tests.support import patient_design


def test_an_employee_asking_to_unlock_hears_why_not_and_what_to_do_and_can_take_the_offer(tmp_path: Path) -> None:
    with Harness("sim:clean", domain="helpdesk", design=patient_design(),
                 settings=Settings(data_dir=tmp_path)) as h:
        first = h.send("t", "I'm locked out, can you unlock it?", "E1001")
        assert "Only service-desk agents can unlock accounts" in first.reply
        assert "KB0001009" in first.reply and "30 minutes" in first.reply, "what to do instead: the article"
        assert "employee id" not in first.reply.lower() and "PIN" not in first.reply, "nothing is collected"
        assert first.missing_slots == [] and first.tool_calls == []
        second = h.send("t", "yes please", "E1001")
        assert second.phase == "handoff", "a yes takes the offered technician"
        assert "technician" in second.reply


def test_a_no_to_the_offer_is_taken_politely_in_chinese(tmp_path: Path) -> None:
    with Harness("sim:clean", domain="helpdesk", design=patient_design(),
                 settings=Settings(data_dir=tmp_path)) as h:
        first = h.send("t", "我的账户被锁了，能帮我解锁吗？", "E1001")
        assert "只有服务台人员才能解锁账户" in first.reply and "KB0001009" in first.reply
        second = h.send("t", "不用了，谢谢", "E1001")
        assert second.reply == "好的。还有什么可以帮您的吗？"
        assert second.phase != "handoff"


def test_an_agent_still_unlocks_after_confirming(tmp_path: Path) -> None:
    with Harness("sim:clean", domain="helpdesk", design=patient_design(),
                 settings=Settings(data_dir=tmp_path)) as h:
        asked = h.send("t", "A caller is locked out: please unlock the account of E1004.", "A9001", role="agent")
        assert asked.values.get("pending_change"), asked.reply
        done = h.send("t", "yes", "A9001", role="agent")
        assert [(c["name"], c["status"]) for c in done.tool_calls] == [("unlock_account", "ok")]


def test_a_domain_without_its_own_wording_gets_the_core_refusal(tmp_path: Path) -> None:
    from dataclasses import replace

    from lg_harness.core.domain import load_domain

    helpdesk = load_domain("helpdesk")
    plain = replace(helpdesk, phrases={k: v for k, v in helpdesk.phrases.items() if k != "refuse_unlock_account"})
    with Harness("sim:clean", domain=plain, design=patient_design(),
                 settings=Settings(data_dir=tmp_path)) as h:
        reply = h.send("t", "please unlock my account", "E1001").reply
    assert reply.startswith("Sorry, that is not something I can do for your account here.")
