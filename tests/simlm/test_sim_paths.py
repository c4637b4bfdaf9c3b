"""The sim fitted on each design's path (issue 45, item 3): no design's wording recognised, faults that
persist when a caller only asks again, the real model's repeats and restatements where each design meets them,
and the rates measured from real-model cells."""

from __future__ import annotations

import json

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from lg_harness_lab.evals import fit_paths
from lg_harness_lab.evals.reply_quality import restates_request
from simlm.brain import respond
from simlm.faults import Dice, FaultProfile, load_profiles
from simlm.provider import Provider, draw_key
from tests.simlm.test_simlm import LIBRARY, tool

RESULT = {"loan_id": "LN-123456", "due_date": "2025-03-01", "renewals_left": 2}


def _asked_with(data_turn: str) -> list:
    return [HumanMessage("When is LN-123456 due?"), HumanMessage(data_turn)]


def test_data_handed_over_in_any_words_is_answered_not_taken_for_a_request():
    # Neither the harness's header nor its request to reply: a listing of facts is data whoever wrote it.
    for turn in ("Here is what the records say:\n- due date: 2025-03-01\n- renewals left: 2\nPlease answer.",
                 "due date: 2025-03-01\nrenewals left: 2",
                 "记录如下：\n- due date：2025-03-01\n请回答。"):
        reply = respond(_asked_with(turn), LIBRARY, profile=FaultProfile(), dice=Dice(0, "d"))
        assert not reply.tool_calls and "2025-03-01" in reply.text, turn


def test_a_customer_line_with_a_colon_is_still_a_request():
    reply = respond([HumanMessage("Hi"), HumanMessage("loan: LN-123456, when is it due?")], LIBRARY,
                    profile=FaultProfile(), dice=Dice(0, "d"))
    assert [c["name"] for c in reply.tool_calls] == ["get_loan"]


def test_a_note_that_only_asks_again_draws_the_same_fault():
    messages = [SystemMessage("You help library members."), HumanMessage("Renew LN-123456 please")]
    note = SystemMessage("The request needs one of the tools offered: call it now.")
    assert draw_key([*messages, note], LIBRARY) == draw_key(messages, LIBRARY)
    assert draw_key([*messages[:-1], HumanMessage("Renew LN-654321 please")], LIBRARY) != draw_key(messages, LIBRARY)
    # End to end: a model that declines half the time declines again, seed for seed, when only a note is added.
    declines = FaultProfile(skip_call=0.5)
    wire_tools = LIBRARY
    body = [{"role": "system", "content": messages[0].content}, {"role": "user", "content": messages[1].content}]
    noted = [*body, {"role": "system", "content": note.content}]
    first = [not Provider(declines, seed).complete({"messages": body, "tools": wire_tools})["choices"][0]["message"]
             .get("tool_calls") for seed in range(24)]
    again = [not Provider(declines, seed).complete({"messages": noted, "tools": wire_tools})["choices"][0]["message"]
             .get("tool_calls") for seed in range(24)]
    assert first == again and 0 < sum(first) < 24


def _after_success(profile: FaultProfile, tools: list[dict], seed: int = 0) -> AIMessage:
    messages = [HumanMessage("When is LN-123456 due?"),
                AIMessage("", tool_calls=[{"name": "get_loan", "args": {"loan_id": "LN-123456"}, "id": "call_a1",
                                           "type": "tool_call"}]),
                ToolMessage(json.dumps(RESULT), tool_call_id="call_a1")]
    return respond(messages, tools, profile=profile, dice=Dice(seed, "after"))


def test_the_call_that_worked_is_made_again_while_its_tool_is_offered():
    again = _after_success(FaultProfile(repeat_after_success=1.0), LIBRARY)
    assert [(c["name"], c["args"]) for c in again.tool_calls] == [("get_loan", {"loan_id": "LN-123456"})]
    without_it = [t for t in LIBRARY if t["function"]["name"] != "get_loan"]
    assert "get_loan" not in {c["name"] for c in _after_success(FaultProfile(repeat_after_success=1.0), without_it).tool_calls}


def test_a_restated_request_is_told_back_and_the_judge_sees_it():
    told_back = _after_success(FaultProfile(restate_request=1.0), [])
    assert "2025-03-01" not in told_back.text and restates_request(told_back.text)
    zh = respond([HumanMessage("LN-123456 什么时候到期？"),
                  AIMessage("", tool_calls=[{"name": "get_loan", "args": {"loan_id": "LN-123456"}, "id": "c1",
                                             "type": "tool_call"}]),
                  ToolMessage(json.dumps(RESULT), tool_call_id="c1")], [],
                 profile=FaultProfile(restate_request=1.0), dice=Dice(0, "z"))
    assert restates_request(zh.text)
    assert not restates_request(_after_success(FaultProfile(), []).text)


def test_the_judge_reads_restatements_both_ways():
    for told_back in ("You asked me to find the order ID for the order with the ID ORD-10144.",
                      "You want to know the status of INC0012346.", "Your request is to reset the password.",
                      "So, you asked about ORD-10134.", "您问的是订单 ORD-10134 的状态。", "你想查询工单状态。"):
        assert restates_request(told_back), told_back
    for answer in ("Your order ORD-10134 has shipped with UPS.", "It is due on 1 March 2025.",
                   "您的订单 ORD-10134 已发货。", "You have 2 renewals left.", "You can return it within 30 days."):
        assert not restates_request(answer), answer


def _cell(design: str, turns: list[dict]) -> dict:
    return {"design": design, "model": "local:qwen2.5-coder-0.5b", "turns": turns}


def _turn(reply: str, *names_ok: tuple[str, str]) -> dict:
    return {"reply": reply, "tool_calls": [{"name": n, "args": {"id": "1"}, "status": s} for n, s in names_ok]}


def test_rates_are_read_per_design_path_from_real_cells():
    records = [
        _cell("harness", [_turn("You asked me about 1.", ("get", "ok"), ("get", "error")),
                          _turn("It shipped.", ("get", "ok"))]),
        _cell("naive", [_turn("It shipped.", ("get", "ok"), ("get", "ok")), _turn("Hello", )]),
        _cell("peer:langchain-mw", [_turn("It shipped.", ("get", "error"))]),
    ]
    found = fit_paths.tallies(records)
    assert found["repeat_after_success"] == {"replay/constrained": [1, 2], "replay/free": [1, 1]}
    assert found["restate_request"] == {"facts/constrained": [1, 2], "replay/free": [0, 1]}
    steps = fit_paths.answer_steps(found, "test")
    assert steps["replay/constrained"]["repeat_after_success"]["rate"] == 0.5
    assert steps["facts/constrained"]["restate_request"]["n"] == 2


def test_a_repeat_counts_only_where_a_later_step_still_offered_the_tool():
    """A design that answers once its goal worked offers nothing to repeat: where the cell records its steps,
    such a message is not evidence of the repeat rate (it would pull the rate down)."""
    offered_again = _turn("It shipped.", ("get", "ok"), ("get", "error"))
    offered_again["call_steps"] = [{"offered": ["get"], "after": 0}, {"offered": ["get"], "after": 1}]
    answered = _turn("It shipped.", ("get", "ok"))
    answered["call_steps"] = [{"offered": ["get"], "after": 0}, {"offered": [], "after": 1}]
    found = fit_paths.tallies([_cell("harness", [offered_again, answered])])
    assert found["repeat_after_success"] == {"replay/constrained": [1, 1]}
    assert found["restate_request"] == {"facts/constrained": [0, 2]}  # both replies still answered a result


def test_the_fitted_profile_carries_the_path_rates_with_their_evidence():
    fitted = load_profiles()["fitted"]
    for path, fault in (("replay/constrained", "repeat_after_success"), ("replay/free", "repeat_after_success"),
                        ("facts/constrained", "restate_request")):
        assert 0 < fitted.answer_rate(fault, *path.split("/")) <= 1, (path, fault)
        assert fitted.evidence[f"answer_steps.{path}.{fault}"]["n"] > 20
    # the rates measured with no tool offered are kept beside them
    assert "call_after_result" in fitted.answer_steps["facts/constrained"]
    assert fitted.answer_rate("restate_request", "replay", "free") < 0.05


def test_a_second_tool_shape_does_not_change_the_data_reading():
    tools = [*LIBRARY, tool("get_member", "Get a member's details.", {"member_id": {"type": "string"}}, ["member_id"])]
    reply = respond(_asked_with("- due date: 2025-03-01\n- renewals left: 2"), tools, profile=FaultProfile(),
                    dice=Dice(1, "d"))
    assert "2025-03-01" in reply.text


def test_an_example_the_assistant_showed_is_copied_when_a_value_is_invented():
    messages = [HumanMessage("Renew my loan please"),
                AIMessage("Which loan? Give its id, e.g. LN-777777."),
                HumanMessage("the one from last week")]
    copied = respond(messages, LIBRARY, profile=FaultProfile(invent_missing=1.0), dice=Dice(0, "e"))
    assert [(c["name"], c["args"]) for c in copied.tool_calls] == [("renew_loan", {"loan_id": "LN-777777"})]
    described = respond([messages[0]], LIBRARY, profile=FaultProfile(invent_missing=1.0), dice=Dice(0, "e"))
    assert [c["args"] for c in described.tool_calls] == [{"loan_id": "LN-123456"}]  # the schema's own example


VERIFY = [tool("reset_pin", "Reset the member's PIN. Only after verify_member succeeded.",
               {"member_id": {"type": "string", "pattern": r"^M\d{4}$"}}, ["member_id"]),
          tool("verify_member", "Verify the member by their birth year.",
               {"member_id": {"type": "string", "pattern": r"^M\d{4}$"}, "year": {"type": "integer"}},
               ["member_id", "year"])]


def test_a_prerequisite_is_skipped_at_its_rate():
    asked = [HumanMessage("Reset the PIN of M1234, born 1990")]
    kept = respond(asked, VERIFY, profile=FaultProfile(), dice=Dice(0, "p"))
    skipped = respond(asked, VERIFY, profile=FaultProfile(skip_prerequisite=1.0), dice=Dice(0, "p"))
    assert [c["name"] for c in kept.tool_calls] == ["verify_member"]
    assert [c["name"] for c in skipped.tool_calls] == ["reset_pin"]


def test_a_skipped_prerequisite_is_read_from_real_cells():
    needs = {"reset_pin": {"verify_member"}}
    assert fit_paths.skipped_prerequisite([{"name": "reset_pin"}], needs, set()) is True
    assert fit_paths.skipped_prerequisite([{"name": "verify_member"}, {"name": "reset_pin"}], needs, set()) is False
    assert fit_paths.skipped_prerequisite([{"name": "reset_pin"}], needs, {"verify_member"}) is None
    assert fit_paths.skipped_prerequisite([{"name": "get_loan"}], needs, set()) is None


# -- the scripted customer answers a confirmation question in words, for every design and peer


def test_a_confirmation_question_is_read_from_the_words_alone():
    from lg_harness_lab.evals.customer import asks_permission

    for waiting in ("To confirm: I will cancel order ORD-10134. Reply yes to go ahead, or no to leave everything as it is.",
                    "请确认：我将取消订单 ORD-10134。回复“是”继续，回复“不”则不做任何更改。",
                    "I can cancel ORD-10134 for you. Shall I go ahead?", "Do you want me to reset it now?",
                    "If you can't wait, shall I pass you to a technician?"):
        assert asks_permission(waiting), waiting
    for not_waiting in ("Could you confirm your email address?", "Your order ORD-10134 has shipped.",
                        "Anything else I can help with?", "Which order do you mean?"):
        assert not asks_permission(not_waiting), not_waiting


def test_a_peer_that_asks_in_words_gets_its_confirmation_answered_in_the_same_turn():
    from lg_harness_lab.evals.scenario import Scenario
    from lg_harness_lab.peers.recorder import PeerCell

    scenario = Scenario.model_validate({"id": "s1", "user_id": "U001", "lang": "en", "turns": [
        {"user": "Cancel ORD-10134", "expect": {}}, {"user": "Thanks", "expect": {}}]})
    cell = PeerCell("peer:test", scenario, 0, domain="shop")
    heard: list[str] = []

    def send(text: str) -> dict:
        heard.append(text)
        return {"reply": "I can cancel ORD-10134. Shall I go ahead?" if len(heard) == 1 else "Done.", "path": ["agent"]}

    record = cell.play(send)
    assert heard == ["Cancel ORD-10134", "yes", "Thanks"]
    assert len(record["turns"]) == 2 and record["turns"][0]["confirmation"]["answer"] == "yes"
    assert record["turns"][0]["reply"] == "Done."


def test_a_path_the_new_cells_never_reach_keeps_its_earlier_rate_and_source():
    new = {"replay/free": {"repeat_after_success": {"rate": 0.8, "k": 8, "n": 10, "source": "dev"}}}
    earlier = {"replay/free": {"repeat_after_success": {"rate": 0.5, "k": 1, "n": 2, "source": "old"}},
               "replay/constrained": {"repeat_after_success": {"rate": 0.98, "k": 64, "n": 65, "source": "old"}}}
    merged = fit_paths.kept_beside(new, earlier)
    assert merged["replay/free"]["repeat_after_success"]["source"] == "dev"  # new evidence wins
    assert merged["replay/constrained"]["repeat_after_success"]["n"] == 65  # unmeasured here: kept


def test_a_message_that_reached_the_call_and_made_none_is_read_per_path():
    """The real model on the free path often answers without the call once every slot is known; a grammar
    that only admits a call cannot. Read per path; messages that never reached the action step do not count."""
    skipped = {**_turn("The priority is 1."), "path": ["intent", "collect", "action", "reply"], "intent": "ticket_status"}
    called = {**_turn("It is new.", ("get_ticket", "ok")), "path": ["intent", "collect", "action", "execute"],
              "intent": "ticket_status"}
    asked = {**_turn("Which ticket?"), "path": ["intent", "collect"], "intent": "ticket_status"}
    records = [{**_cell("layered", [skipped, called, asked]), "domain": "helpdesk"},
               {**_cell("harness", [called]), "domain": "helpdesk"}]
    found = fit_paths.tallies(records)
    assert found["skip_call"] == {"replay/free": [1, 2], "replay/constrained": [0, 1]}
