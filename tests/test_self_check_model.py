"""The model-based self-check: the model judges grounding; the simulated model does it honestly."""

from lg_harness.core.design import load_design
from lg_harness.graphs.app import Harness
from lg_harness.nodes.self_check import parse_verdict


def test_verdict_parsing_is_strict_about_problems_and_lenient_about_garbage() -> None:
    assert parse_verdict('{"ok": false, "problems": ["ORD-99999 not in evidence"]}') == {
        "ok": False, "problems": ["ORD-99999 not in evidence"]}
    assert parse_verdict('{"ok": true, "problems": []}')["ok"] is True
    assert parse_verdict("I think it is fine")["ok"] is True  # an unreadable verdict must not block the reply


def test_model_check_passes_a_grounded_answer_with_one_extra_call(tmp_path) -> None:
    design = load_design("harness").model_copy(deep=True)
    design.variants["self_check"] = "model"
    with Harness(tmp_path, design, "sim:clean") as h:
        r = h.send("t", "where is my order ORD-10144?", "U001")
        assert r["phase"] == "done" and "delivered" in r["reply"]
        assert r["usage"]["model_calls"] == 3  # tool call, answer, verification
        assert h.last_values["check"] == {"ok": True, "problems": []}


def test_the_simulated_verifier_flags_an_invented_identifier() -> None:
    from lg_harness.domains.shop.sim_brain import verification_reply

    verdict = parse_verdict(verification_reply("ANSWER:\nOrder ORD-10999 is shipped.\n\nEVIDENCE:\nORD-10144").text)
    assert verdict["ok"] is False and "ORD-10999" in verdict["problems"][0]
