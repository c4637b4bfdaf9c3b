"""A Chinese customer reads Chinese labels: an English field label in a Chinese reply ("Orders：", "Verified：",
"warranty until是") is put in Chinese from the field's words, and one that has no Chinese label makes the reply
the wrong language for the self-check (it is regenerated or rendered)."""

from __future__ import annotations

import pytest

from lg_harness.core.domain import load_domain
from lg_harness.nodes.customer_text import wrong_language
from lg_harness.nodes.render_answer import labels_in_chinese

HELPDESK, SHOP = load_domain("helpdesk"), load_domain("shop")


@pytest.mark.parametrize(("reply", "domain", "fixed"), [
    ("共有 1 项Orders：ORD-10147（已取消）。", SHOP, "共有 1 项订单：ORD-10147（已取消）。"),
    ("员工 E1014（Nora Jensen）：Verified：是。", HELPDESK, "员工 E1014（Nora Jensen）：身份已验证：是。"),
    ("资产 LT-04214：状态是使用中，warranty until是2026年11月25日，under warranty：是。", HELPDESK,
     "资产 LT-04214：状态是使用中，保修截止是2026年11月25日，在保修期内：是。"),
    ("申请 REQ0001226：状态是审批中，Next step是由您的经理批准。", HELPDESK, "申请 REQ0001226：状态是审批中，下一步是由您的经理批准。"),
    # the PyPI time server's convert_time on the real model ("上海现在几点？", lab/reports/own-tools-local)
    ("time difference是-9.0h。时间是2026年12月7日 23:08。", None, "时间差是-9.0h。时间是2026年12月7日 23:08。"),
])
def test_an_english_label_in_a_chinese_reply_is_put_in_chinese(reply, domain, fixed):
    assert wrong_language(reply, "zh")
    assert labels_in_chinese(reply, domain) == fixed
    assert not wrong_language(fixed, "zh")


def test_names_codes_and_values_are_left_alone():
    for reply in ["员工 E1014（Nora Jensen）：身份已验证。", "优惠券 DOUBLE11：满111享89折。", "系统是vpn，状态是审批中。",
                  "共有 1 项结果：KB0001008（会议室加入Teams会议）。"]:
        assert labels_in_chinese(reply, HELPDESK) == reply and not wrong_language(reply, "zh")


def test_a_label_without_a_chinese_word_stays_and_the_reply_is_the_wrong_language():
    reply = "工单 INC0012346：Frobnication：是。"
    assert labels_in_chinese(reply, HELPDESK) == reply and wrong_language(reply, "zh")


def test_a_value_as_code_writes_it_becomes_words_in_the_customers_language():
    """The real model wrote 'its status as "in_repair"' (helpdesk held-out, 2026-12-07): the results' values in
    code form become words, in Chinese the result's own Chinese word where it has one."""
    from lg_harness.nodes.render_answer import values_in_words

    assert values_in_words('Its status is "in_repair".', [{"status": "in_repair"}], "en", HELPDESK) == \
        'Its status is "in repair".'
    assert values_in_words("状态是in_repair。", [{"status": "in_repair", "status_zh": "维修中"}], "zh", HELPDESK) == \
        "状态是维修中。"
    # only the results' own values; file names and other words stay
    assert values_in_words("see setup_vpn.pkg and reset_password", [{"x": "setup_vpn"}], "en", HELPDESK) == \
        "see setup_vpn.pkg and reset_password"
