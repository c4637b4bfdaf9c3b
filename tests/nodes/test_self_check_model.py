"""The model-based self-check: the model judges grounding; the simulated model does it honestly."""

from lg_harness.core.design import load_design
from lg_harness.graphs.app import Harness, Settings
from lg_harness.nodes.self_check import parse_verdict


def test_verdict_parsing_is_strict_about_problems_and_lenient_about_garbage() -> None:
    assert parse_verdict('{"ok": false, "problems": ["ORD-99999 not in evidence"]}') == {
        "ok": False, "problems": ["ORD-99999 not in evidence"]}
    assert parse_verdict('{"ok": true, "problems": []}')["ok"] is True
    assert parse_verdict("I think it is fine")["ok"] is True  # an unreadable verdict must not block the reply


def test_model_check_passes_a_grounded_answer_with_one_extra_call(tmp_path) -> None:
    design = load_design("harness").model_copy(deep=True)
    design.variants["self_check"] = "model"
    with Harness("sim:clean", design=design, settings=Settings(data_dir=tmp_path)) as h:
        r = h.send("t", "where is my order ORD-10144?", "U001")
        assert r.phase == "done" and "delivered" in r.reply
        assert r.usage.model_calls == 3  # tool call, answer, verification
        assert r.values["check"] == {"ok": True, "problems": []}


def test_the_simulated_verifier_flags_an_invented_identifier() -> None:
    """The harness's own verification prompt, sent to the simulated model as any model would get it."""
    from langchain_core.messages import HumanMessage, SystemMessage

    from lg_harness.llm.sim import SimChatModel
    from lg_harness.nodes.self_check import VERIFY_PROMPT

    def verdict(answer: str, evidence: str) -> dict:
        prompt = f"ANSWER:\n{answer}\n\nEVIDENCE:\n{evidence}"
        return parse_verdict(SimChatModel(faults="clean").invoke([SystemMessage(VERIFY_PROMPT), HumanMessage(prompt)]).text)

    bad = verdict("Order ORD-10999 is shipped.", "ORD-10144")
    assert bad["ok"] is False and "ORD-10999" in bad["problems"][0]
    assert verdict("Order ORD-10144 is shipped.", '{"order_id": "ORD-10144", "status": "shipped"}')["ok"] is True
