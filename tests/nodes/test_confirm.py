"""Confirm before changing: a state-changing call runs only after the user's explicit yes to exactly it.

The knob ``confirm_changes`` is on in ``harness`` and off in the designs rebuilt from the write-ups. The
question names the change in the user's language and no tool; questions, hypotheticals, a no or any other
next message change nothing; a pinned constraint still blocks.
"""

from __future__ import annotations

import pytest

from lg_harness.core.design import PRESETS
from lg_harness.core.domain import load_domain
from lg_harness.graphs.app import Harness, Settings
from lg_harness.nodes.confirm import answer_to_confirmation, confirmation_question
from lg_harness_lab.evals import runner
from lg_harness_lab.evals.metrics import cell_metrics
from lg_harness_lab.evals.runner import run_cell
from lg_harness_lab.evals.scenario import Scenario
from tests.support import patient_design, u001_order

MODEL = "sim:clean"


@pytest.mark.parametrize("text", ["yes", "Yes!", "yes please", "ok, go ahead", "Sure.", "confirm", "是", "是的",
                                  "好的", "确认", "可以",
                                  # the goal customer's yes on the real model (helpdesk dev 0007), and a thanks after a yes
                                  "是的，请办理。", "可以，谢谢！"])
def test_an_explicit_yes(text):
    assert answer_to_confirmation(text) == "yes"


@pytest.mark.parametrize("text", ["no", "No, I was only asking.", "wait", "Actually no, I changed my mind",
                                  "yes, but don't cancel it", "不用", "算了，不取消了", "不了", "别"])
def test_a_no_or_a_changed_mind(text):
    assert answer_to_confirmation(text) == "no"


@pytest.mark.parametrize("text", ["谢谢", "yes?", "yes if it is free", "what would change?", "Should I?", "可以吗？",
                                  "Where is my order ORD-10134?", "如果我取消会怎样"])
def test_anything_else_is_not_consent(text):
    assert answer_to_confirmation(text) == "other"


def test_the_knob_is_on_in_harness_only():
    assert PRESETS["harness"].knobs.confirm_changes
    assert not any(d.knobs.confirm_changes for name, d in PRESETS.items() if name != "harness")


def test_the_question_names_the_change_in_the_users_language_and_no_tool():
    shop = load_domain("shop")
    call = {"name": "cancel_order", "args": {"order_id": "ORD-10185"}}
    en, zh = confirmation_question([call], shop, "en"), confirmation_question([call], shop, "zh")
    assert "cancel order ORD-10185" in en and "取消订单 ORD-10185" in zh
    assert "cancel_order" not in en + zh
    generic = confirmation_question([{"name": "renew_loan", "args": {"book_id": "BOOK-0042"}}], shop, "en")
    assert "BOOK-0042" in generic and "renew_loan" not in generic


def status(h, order):
    return h.resources["shop"].query_one("SELECT status FROM orders WHERE id = ?", (order,))["status"]


def test_a_change_waits_for_yes_and_then_runs_once(tmp_path):
    with Harness(MODEL, design=patient_design(), settings=Settings(data_dir=tmp_path)) as h:
        order = u001_order("pending", shop=h.resources["shop"])
        asked = h.send("c", f"Please cancel {order}", "U001")
        assert asked.phase == "confirm" and f"cancel order {order}" in asked.reply
        assert [c["error_type"] for c in asked.tool_calls] == ["needs_confirmation"]
        assert status(h, order) == "pending", "nothing changed before the yes"
        done = h.send("c", "yes", "U001")
        assert [(c["name"], c["status"]) for c in done.tool_calls] == [("cancel_order", "ok")]
        assert status(h, order) == "cancelled" and done.phase == "done"
        again = h.send("c", "yes", "U001")
        assert again.tool_calls == [], "a second yes confirms nothing"
        assert h.resources["shop"].query_one("SELECT COUNT(*) FROM idempotency")[0] == 1


@pytest.mark.parametrize("answer", ["no", "Actually, I changed my mind.", "Where is my order ORD-10134?"])
def test_anything_but_yes_changes_nothing(tmp_path, answer):
    with Harness(MODEL, design=patient_design(), settings=Settings(data_dir=tmp_path)) as h:
        order = u001_order("pending", shop=h.resources["shop"])
        h.send("c", f"Please cancel {order}", "U001")
        h.send("c", answer, "U001")
        assert status(h, order) == "pending"
        late = h.send("c", "yes", "U001")
        assert not any(c["name"] == "cancel_order" and c["status"] == "ok" for c in late.tool_calls)
        assert status(h, order) == "pending", "the question was forgotten: a later yes does not revive it"


@pytest.mark.parametrize("question", ["Should I cancel {order}?", "How do I cancel {order}?",
                                      "If I cancelled {order}, would I get a refund?", "我应该取消订单 {order} 吗？"])
def test_questions_and_hypotheticals_change_nothing(tmp_path, question):
    with Harness(MODEL, design=patient_design(), settings=Settings(data_dir=tmp_path)) as h:
        order = u001_order("pending", shop=h.resources["shop"])
        h.send("q", question.format(order=order), "U001")
        assert status(h, order) == "pending"


def test_a_coupon_question_claims_nothing(tmp_path):
    with Harness(MODEL, design=patient_design(), settings=Settings(data_dir=tmp_path)) as h:
        h.send("q", "Can I use SAVE20 on an order of 250?", "U001")
        assert h.resources["shop"].query_one("SELECT COUNT(*) FROM idempotency")[0] == 0


def test_a_pinned_constraint_still_blocks(tmp_path):
    with Harness(MODEL, design=patient_design(), settings=Settings(data_dir=tmp_path)) as h:
        order = u001_order("pending", shop=h.resources["shop"])
        h.send("pin", "Please never cancel any of my orders.", "U001")
        asked = h.send("pin", f"Cancel {order}", "U001")
        h.send("pin", "yes", "U001")
        assert status(h, order) == "pending"
        assert "constraint" in [c["error_type"] for c in asked.tool_calls] or asked.phase != "confirm"


def test_designs_without_the_knob_change_at_once(tmp_path):
    with Harness(MODEL, design=patient_design("layered"), settings=Settings(data_dir=tmp_path)) as h:
        order = u001_order("pending", shop=h.resources["shop"])
        h.send("c", f"Please cancel {order}", "U001")
        assert status(h, order) == "cancelled"


def scenario(user: str, confirm: str | None, expect: dict) -> Scenario:
    return Scenario.model_validate({"id": "t-confirm", "user_id": "U001", "tags": ["confirmation"],
                                    "turns": [{"user": user, "confirm": confirm, "expect": expect}]})


def test_the_runner_answers_the_question_and_the_metric_counts_unrequested_changes():
    order = u001_order("pending")
    yes = scenario(f"Please cancel {order}", None, {"tools": [{"name": "cancel_order", "args": {"order_id": order}}]})
    rec = run_cell(patient_design(), yes, 1, MODEL)
    [turn] = rec["turns"]
    assert turn["confirmation"]["answer"] == "yes" and cell_metrics(rec, yes)["success"]
    assert cell_metrics(rec, yes)["sums"]["unrequested_changes"] == 0

    asking = scenario(f"Should I cancel {order}?", "No, I was only asking.", {"no_changes": True})
    held = run_cell(patient_design(), asking, 1, MODEL)
    assert cell_metrics(held, asking)["success"] and cell_metrics(held, asking)["sums"]["unrequested_changes"] == 0
    blind = run_cell(patient_design("layered"), asking, 1, MODEL)
    m = cell_metrics(blind, asking)
    assert not m["success"] and m["sums"]["unrequested_changes"] == 1, "the design without the knob cancelled"


def test_a_customer_who_declined_answers_no_unless_the_script_says_otherwise():
    """The scripted customer does not contradict themselves: one the scenario tags as declining answers the
    confirmation question with a no, in their language, and nothing changes; one who asked for a change the
    backend must refuse still means it (yes), so a missing check is not hidden by a polite no."""
    order = u001_order("pending")
    declining = scenario(f"Please cancel {order}", None, {"no_changes": True}).model_copy(
        update={"tags": ["changed-mind", "negation"]})
    rec = run_cell(patient_design(), declining, 1, MODEL)
    [turn] = rec["turns"]
    assert answer_to_confirmation(turn["confirmation"]["answer"]) == "no"
    m = cell_metrics(rec, declining)
    assert m["success"] and m["sums"]["unrequested_changes"] == 0

    zh = declining.model_copy(update={"lang": "zh"})
    assert answer_to_confirmation(runner.confirmation_answer(zh, zh.turns[0])) == "no"
    refused = declining.model_copy(update={"tags": ["refused", "other-user"]})
    assert runner.confirmation_answer(refused, refused.turns[0]) == "yes"
    wants = scenario(f"Please cancel {order}", None, {}).model_copy(update={"tags": ["changed-mind"]})
    assert runner.confirmation_answer(wants, wants.turns[0]) == "yes", "a turn that expects the change gets a yes"
    own = scenario(f"Please cancel {order}", "yep go ahead", {"no_changes": True}).model_copy(
        update={"tags": ["changed-mind"]})
    assert runner.confirmation_answer(own, own.turns[0]) == "yep go ahead", "the script's own answer wins"


def test_a_change_the_outcome_asks_for_is_not_unrequested_though_the_turn_names_no_tool():
    """Held-out scenarios say what the backend must show, not which calls make it: their requested change is
    judged on the diff, and only a change on a turn that names its tools (or none) counts as unrequested."""
    order = u001_order("pending")
    wanted = Scenario.model_validate({
        "id": "t-outcome", "user_id": "U001", "turns": [{"user": f"Please cancel {order}"}],
        "outcome": {"changes": [{"table": "orders", "op": "update", "key": {"id": order},
                                 "set": {"status": "cancelled"}}]}})
    m = cell_metrics(run_cell(patient_design(), wanted, 1, MODEL), wanted)
    assert m["success"] and m["sums"]["unrequested_changes"] == 0 and m["sums"]["wrong_changes"] == 0
    unasked = wanted.model_copy(update={"outcome": None, "turns": [wanted.turns[0].model_copy(
        update={"expect": wanted.turns[0].expect.model_copy(update={"tools": []})})]})
    assert cell_metrics(run_cell(patient_design(), unasked, 1, MODEL), unasked)["sums"]["unrequested_changes"] == 1
