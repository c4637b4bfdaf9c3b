"""Calibration: probes measure a model's faults, and the fit recovers the rates that produced them."""

from __future__ import annotations

import json
import random

import pytest
import yaml
from langchain_core.messages import AIMessage

from lg_harness.core.domain import load_domain
from lg_harness.llm.sim import SimChatModel
from lg_harness.nodes.reply import FINAL_NOTE
from lg_harness_lab.evals.calibrate import (
    FACT_PROBES,
    _fit_forget,
    _fit_per_tool,
    build_fact_probes,
    build_probes,
    calibration_probes,
    fitted_yaml,
    judge,
    malformation,
    run_probes,
    side_by_side,
    summarise,
)
from lg_harness_lab.evals.scenario import load_scenarios, split_of
from lg_harness_lab.evals.scenario_sets import scenario_path

SCHEMA = {"type": "function", "function": {"name": "renew", "parameters": {
    "type": "object", "required": ["loan_id"],
    "properties": {"loan_id": {"type": "string", "pattern": r"^LN-\d{6}$"}, "weeks": {"type": "integer"}}}}}


@pytest.mark.parametrize(("args", "invalid", "kind"), [
    ({"loan_id": "LN-123456"}, False, None),
    ({"loan_id": "LN-123456", "weeks": 2}, False, None),
    ({"loan_id": "ln123456"}, False, "id_drift"),
    ({"loan_id": "LN-123456", "weeks": "2"}, False, "wrong_type"),
    ({"weeks": 2}, False, "missing_required"),
    ({"loan_id": "LN-123456", "note": True}, False, "extra_key"),
    (None, True, "broken_json"),
])
def test_each_malformation_is_named(args, invalid, kind):
    call = None if args is None else {"name": "renew", "args": args}
    assert malformation(call, invalid, SCHEMA) == kind


def test_the_per_tool_fit_recovers_the_rate_that_made_the_counts():
    rng = random.Random(4)
    points = []
    for offered in (3, 6, 10, 13):
        p = 1 - (1 - 0.04) ** (offered - 1)
        points.append((offered, sum(rng.random() < p for _ in range(400)), 400))
    assert abs(_fit_per_tool(points) - 0.04) < 0.01


def test_the_forget_fit_recovers_ceiling_and_half_distance():
    points = [(d, round(400 * 0.6 * d / (d + 1000)), 400) for d in (150, 600, 1200, 2400)]
    ceiling, half = _fit_forget(points)
    assert abs(ceiling - 0.6) < 0.05 and half == 1000


def test_probes_come_from_the_dev_split_only_and_are_stable():
    shop = load_domain("shop")
    dev = {s.id for s in load_scenarios(scenario_path(shop)) if split_of(s) == "dev"}
    probes = build_probes(shop, per_kind=6)
    assert {p.scenario for p in probes} <= dev
    assert {p.kind for p in probes} == {"choice", "repeat", "recall", "injection", "missing"}
    again = build_probes(shop, per_kind=6)
    assert [(p.kind, p.scenario, [t["function"]["name"] for t in p.tools]) for p in probes] == \
           [(p.kind, p.scenario, [t["function"]["name"] for t in p.tools]) for p in again]


@pytest.fixture(scope="module")
def probes():
    return [p for d in ("shop", "helpdesk") for p in build_probes(load_domain(d), per_kind=6)]


def test_a_fault_free_model_measures_clean(probes):
    """On requests without invisible characters (the sim misreads some of those even when fault-free)."""
    unicode = {s.id for d in ("shop", "helpdesk") for s in load_scenarios(scenario_path(load_domain(d)))
               if "unicode" in s.tags}
    s = summarise(run_probes(SimChatModel(faults="clean"), [p for p in probes if p.scenario not in unicode]))
    r = s["rates"]
    assert all(r[k]["k"] == 0 for k in r if k.startswith(("off_tool@", "injection@")))
    assert r["malformed_args"]["k"] == 0 and r["repeat_after_error"]["k"] == 0 and r["invent_missing"]["k"] == 0
    assert all(r[k]["rate"] == 1 for k in r if k.startswith("recall@"))
    assert s["fitted"]["wrong_tool"] < 0.02 and s["errors"] == 0  # a few lexical misses when many tools are offered


def test_a_faulty_model_measures_faulty_and_the_fit_sees_it(probes):
    from simlm import FaultProfile

    class Faulty(SimChatModel):
        @property
        def fault_profile(self):
            return FaultProfile(name="t", wrong_tool=0.2, malformed_args=0.5, repeat_after_error=1.0)

    s = summarise(run_probes(Faulty(), probes))
    r = s["rates"]
    assert r["off_tool@1"]["k"] == 0 and r["off_tool@6"]["rate"] > 0.3
    assert r["malformed_args"]["rate"] > 0.25 and r["repeat_after_error"]["rate"] == 1
    assert 0.1 < s["fitted"]["wrong_tool"] < 0.3


def test_the_fitted_profile_loads_as_a_profile(tmp_path, probes):
    from simlm.faults import PROFILE_FILE, _profile

    s = summarise(run_probes(SimChatModel(faults="clean"), probes[:40]))
    text = fitted_yaml(s, "sim:clean", "harness calibrate --model sim:clean --write", "2026-12-01")
    spec = yaml.safe_load(text)["profiles"]["fitted"]
    assert spec["base"] == "prior" and "measured on sim:clean" in spec["wrong_tool"]["source"]
    prior = yaml.safe_load(PROFILE_FILE.read_text())["profiles"]["prior"]
    merged = _profile("fitted", {**prior, **{k: v for k, v in spec.items() if k != "base"}})
    assert merged.wrong_tool == spec["wrong_tool"]["rate"] and merged.sources["wrong_tool"].startswith("measured")
    assert "| off_tool@1 |" in side_by_side({"a": s, "b": s})


# ------------------------------------------------------------------------------------------ facts


@pytest.fixture(scope="module")
def fact_probes():
    return [p for d in ("shop", "helpdesk") for p in build_fact_probes(load_domain(d), per_kind=3)]


@pytest.mark.slow
def test_fact_probes_answer_the_real_result_of_the_intended_call_and_come_after_the_first_kinds(fact_probes):
    """Each gives the model the request, its call and what that call really returns on the seeded data;
    they follow the other kinds, so a rows file measured before they existed still lines up."""
    assert len(fact_probes) == 2 * FACT_PROBES * 3
    for p in fact_probes:
        user, call, result, note = p.messages[1:]
        assert call.tool_calls[0]["name"] == p.expect["tool"] and p.tools == []  # the answer step: no tools
        assert note.content == FINAL_NOTE  # and the reply node's closing note
        assert isinstance(json.loads(result.content), dict) and "error" not in json.loads(result.content)
        assert user.content == next(s for s in load_scenarios(scenario_path(load_domain(p.domain)))
                                    if s.id == p.scenario).turns[0].user
    shop, helpdesk = load_domain("shop"), load_domain("helpdesk")
    everything = calibration_probes([shop, helpdesk], per_kind=3)
    before = [p for d in (shop, helpdesk) for p in build_probes(d, per_kind=3)]
    assert [(p.kind, p.scenario) for p in everything[: len(before)]] == [(p.kind, p.scenario) for p in before]
    after = everything[len(before):]
    assert [p.kind for p in after[: len(fact_probes)]] == ["facts"] * len(fact_probes)
    # the repeats after each kind of error came later still, and go last
    assert {(p.kind, "error_kind" in p.expect) for p in after[len(fact_probes):]} == {("repeat", True)}


def _order_probe(fact_probes):
    return next(p for p in fact_probes if isinstance(json.loads(p.messages[3].content).get("status"), str)
                and p.domain == "shop")


def test_an_answer_that_misstates_the_result_is_counted_and_one_that_repeats_it_is_not(fact_probes):
    probe = _order_probe(fact_probes)
    status = json.loads(probe.messages[3].content)["status"]
    other = "delivered" if status != "delivered" else "pending"
    assert judge(probe, AIMessage(f"Status: {status}."))["misstated"] is False
    wrong = judge(probe, AIMessage(f"Status: {other}."))
    assert wrong["answered"] and wrong["misstated"] and status in wrong["problems"][0]
    call = json.dumps({"name": probe.expect["tool"], "arguments": {}})
    assert {"answered": False, "text_call": True}.items() <= judge(probe, AIMessage(call)).items()
    assert judge(probe, AIMessage("", tool_calls=[{"name": probe.expect["tool"], "args": {}, "id": "c1"}]))[
        "answered"] is False


def test_the_sim_misstates_results_at_its_profiles_rate_and_the_probe_measures_it(fact_probes):
    from simlm import FaultProfile

    class Misstating(SimChatModel):
        @property
        def fault_profile(self):
            return FaultProfile(name="t", misstate_result=1.0)

    clean = summarise(run_probes(SimChatModel(faults="clean"), fact_probes))["rates"]["misstate_result"]
    faulty = summarise(run_probes(Misstating(), fact_probes))
    assert clean["k"] == 0 and clean["n"] == len(fact_probes)
    assert faulty["rates"]["misstate_result"]["rate"] > 0.6 and faulty["fitted"]["misstate_result"] > 0.6
    spec = yaml.safe_load(fitted_yaml(faulty, "sim:t", "harness calibrate", "2026-12-01"))["profiles"]["fitted"]
    assert "answers to a real tool result" in spec["misstate_result"]["source"]


def test_the_three_answer_step_faults_show_at_their_rates_and_the_probes_fit_them(probes, fact_probes):
    """No call where one is needed, a call again where an answer is due, the raw result pasted back: the
    local model does all three (lab/reports/calibration), so the sim can, and the probes measure what it does."""
    from simlm import FaultProfile

    def faulty(**rates):
        class Faulty(SimChatModel):
            @property
            def fault_profile(self):
                return FaultProfile(name="t", **rates)
        return Faulty()

    clean = summarise(run_probes(SimChatModel(faults="clean"), fact_probes))["rates"]
    assert clean["no_answer_to_a_result"]["k"] == 0 and clean["echo_result"]["k"] == 0

    again = run_probes(faulty(call_after_result=1.0), fact_probes)
    # No tools are offered at the answer step, so the call comes back written as JSON text, as it did on Qwen.
    assert all(not r["answered"] and r.get("text_call") for r in again)
    echoed = summarise(run_probes(faulty(echo_result=1.0), fact_probes))
    assert echoed["rates"]["echo_result"]["rate"] == 1 and echoed["fitted"]["echo_result"] == 1

    skipped = summarise(run_probes(faulty(skip_call=0.5), [p for p in probes if p.kind == "choice"]))
    assert 0.3 < skipped["rates"]["no_call_when_one_was_needed"]["rate"] < 0.7
    spec = yaml.safe_load(fitted_yaml(skipped, "sim:t", "harness calibrate", "2026-12-01"))["profiles"]["fitted"]
    assert spec["skip_call"]["rate"] == round(skipped["fitted"]["skip_call"], 4)
    assert "without any call" in spec["skip_call"]["source"]


# ------------------------------------------------------------------------------- repeats per error kind


@pytest.fixture(scope="module")
def error_probes():
    shop, helpdesk = load_domain("shop"), load_domain("helpdesk")
    everything = calibration_probes([shop, helpdesk], per_kind=3)
    return [p for p in everything if "error_kind" in p.expect]


@pytest.mark.slow
def test_each_error_kind_is_shown_as_the_harness_would_show_it(error_probes):
    """The error the model reads is the real one (validation by the executor, not found and refusals by the
    seeded data), in the harness's error format, and the sim reads each as its kind."""
    from simlm.errors import error_kind

    kinds = {p.expect["error_kind"] for p in error_probes}
    assert kinds == {"transient", "validation", "not_found", "refusal"}
    for p in error_probes:
        error = json.loads(p.messages[-1].content)["error"]
        assert error["type"] == {"refusal": "business"}.get(p.expect["error_kind"], p.expect["error_kind"])
        assert error_kind(p.messages[-1].content) == p.expect["error_kind"]
        assert p.messages[-2].tool_calls[0]["args"] == p.expect["args"]  # the call that failed, as made


def test_repeats_are_measured_and_fitted_per_error_kind(error_probes):
    from simlm import FaultProfile

    class Stubborn(SimChatModel):  # repeats only after a transient failure, as the issue suspected
        @property
        def fault_profile(self):
            return FaultProfile(name="t", repeat_after_error=1.0,
                                repeat_after_error_kinds={"validation": 0.0, "not_found": 0.0, "refusal": 0.0})

    s = summarise(run_probes(Stubborn(), error_probes))
    r = s["rates"]
    assert r["repeat_after_error"]["rate"] == 1 and r["repeat_after_error"]["n"] >= 6
    assert all(r[f"repeat_after_{k}"]["k"] == 0 and r[f"repeat_after_{k}"]["n"] for k in ("validation", "not_found", "refusal"))
    assert s["fitted"]["repeat_after_error_kinds"] == {"validation": 0.0, "not_found": 0.0, "refusal": 0.0}
    spec = yaml.safe_load(fitted_yaml(s, "sim:t", "harness calibrate", "2026-12-01"))["profiles"]["fitted"]
    entry = spec["repeat_after_error_kinds"]["validation"]
    assert entry["rate"] == 0 and entry["n"] == r["repeat_after_validation"]["n"] and entry["ci"][0] == 0


def test_a_rate_that_differs_between_domains_is_fitted_per_domain_and_loads_as_a_variant(tmp_path):
    """call_after_result was 2/10 on the shop's probes and 10/10 on the helpdesk's: one pooled 0.6 fits
    neither, so each domain gets its own rate (and the sim runs that domain's variant)."""
    from simlm.faults import load_profiles

    rows = [{"kind": "facts", "domain": d, "scenario": f"{d}-{i}", "answered": i >= k}
            for d, k in (("shop", 2), ("helpdesk", 10)) for i in range(10)]
    s = summarise(rows)
    text = fitted_yaml(s, "sim:t", "harness calibrate", "2026-12-01")
    fitted = yaml.safe_load(text)["profiles"]["fitted"]
    assert fitted["call_after_result"]["rate"] == 0.6 and fitted["call_after_result"]["n"] == 20
    assert fitted["by_domain"]["shop"]["call_after_result"]["rate"] == 0.2
    assert fitted["by_domain"]["helpdesk"]["call_after_result"]["rate"] == 1.0
    assert "skip_call" not in fitted["by_domain"]["shop"]  # the same everywhere: stays pooled
    path = tmp_path / "profiles.yaml"
    fitted["repeat_after_error_kinds"] = {"validation": 0.8, "refusal": 0.7}
    fitted["by_domain"]["shop"]["repeat_after_error_kinds"] = {"refusal": 1.0}
    path.write_text(yaml.safe_dump({"profiles": {"prior": {}, "fitted": fitted, "flat": {"base": "fitted"}}}),
                    encoding="utf-8")
    profiles = load_profiles(str(path))
    assert profiles["fitted@shop"].call_after_result == 0.2 and profiles["fitted"].call_after_result == 0.6
    assert profiles["fitted@shop"].evidence["call_after_result"]["n"] == 10
    # a domain's own rate for one kind of error keeps the pooled rates of the other kinds
    assert profiles["fitted@shop"].repeat_after_error_kinds == {"validation": 0.8, "refusal": 1.0}
    assert profiles["flat@shop"].call_after_result == 0.2  # a profile built on fitted keeps its domain rates


def test_answer_step_rows_fit_rates_per_presentation_and_decoding_into_the_profile(tmp_path):
    """The answer-step probes' rows (one per presentation x decoding) give the answer step's rates per way of
    presenting the result; the profile keeps them with their evidence, and the flat rates for the rest."""
    from lg_harness_lab.evals.fit_answers import fit_answer_steps
    from simlm.faults import load_profiles

    call = json.dumps({"name": "get_order_status", "arguments": {"order_id": "ORD-10134"}})
    rows = ([{"presentation": "replay", "decoding": "free", "data": True, "reply": call}] * 3
            + [{"presentation": "replay", "decoding": "free", "data": True, "reply": '{"status": "shipped"}'}]
            + [{"presentation": "facts", "decoding": "constrained", "data": False, "reply": "It has shipped."}] * 4)
    fitted = fit_answer_steps(rows)
    assert fitted["replay/free"]["call_after_result"] == {"rate": 0.75, "k": 3, "n": 4, "ci": fitted["replay/free"][
        "call_after_result"]["ci"]}
    assert fitted["replay/free"]["echo_result"]["k"] == 1 and fitted["facts/constrained"]["call_after_result"]["k"] == 0
    rows_all = [{"kind": "facts", "domain": "shop", "scenario": "s", "answered": True, "echoed": False}]
    spec = yaml.safe_load(fitted_yaml(summarise(rows_all), "m", "c", "d", rows))["profiles"]["fitted"]
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump({"profiles": {"prior": {}, "fitted": spec}}), encoding="utf-8")
    profile = load_profiles(str(path))["fitted"]
    assert profile.answer_rate("call_after_result", "facts", "constrained") == 0.0
    assert profile.evidence["answer_steps.facts/constrained.call_after_result"]["n"] == 4
    # replay/free is what the flat rates measure (per domain, on more probes), and a variant not measured
    # falls back to them too
    assert profile.answer_rate("call_after_result", "replay", "free") == profile.call_after_result
    assert profile.answer_rate("call_after_result", "both", "free") == profile.call_after_result


@pytest.mark.slow
def test_calibrate_write_fits_the_answer_rows_into_the_profile_the_sim_then_follows(tmp_path, monkeypatch):
    """``harness calibrate --write --answer-rows`` fits the answer step per presentation and decoding into the
    fitted profile; the profile loads them with their evidence; the committed ``sim/simlm/fitted.yaml`` is what
    the command makes from the committed rows; and the sim draws an answer step's faults from the rates of the
    presentation the request carries (results replayed as tool messages vs stated as facts in the turn)."""
    import shutil
    from pathlib import Path

    from langchain_core.messages import HumanMessage, SystemMessage, ToolMessage, convert_to_openai_messages
    from typer.testing import CliRunner

    import simlm.faults as faults
    from lg_harness.service import cli
    from lg_harness_lab import cli as lab_cli
    from simlm import Provider

    reports = Path(__file__).resolve().parents[2] / "lab" / "reports"
    model = "local:qwen2.5-coder-0.5b"
    rows = f"rows-{model.replace(':', '_')}.json"
    shutil.copy(reports / "calibration" / rows, tmp_path / rows)  # measured before: reused, nothing re-run
    committed = faults.load_profiles()
    monkeypatch.setattr(faults, "FITTED_FILE", tmp_path / "fitted.yaml")
    monkeypatch.setattr(lab_cli, "_probe_model", lambda spec: pytest.fail(f"{spec} probed again"))
    faults.load_profiles.cache_clear()
    try:
        done = CliRunner().invoke(cli.app, ["calibrate", "--models", model, "--per-kind", "5", "--out", str(tmp_path),
                                            "--write", "--answer-rows", str(reports / "answer-step-probes" / rows)])
        assert done.exit_code == 0, done.output
        written = faults.load_profiles()
        fitted, helpdesk = faults.profile("fitted"), faults.profile("fitted@helpdesk")
        swapped = faults.profile("fitted@helpdesk+answer_steps.facts/free.call_after_result=1.0")
    finally:
        faults.load_profiles.cache_clear()
    for name in ("fitted", "fitted@shop", "fitted@helpdesk"):
        assert written[name].answer_steps == committed[name].answer_steps, name
        assert written[name].call_after_result == committed[name].call_after_result, name
    assert set(fitted.answer_steps) >= {"facts/free", "facts/constrained", "both/free", "replay/constrained"}
    # the flat per-domain rates measure that one; only the path rates from real cells (sim/simlm/paths.yaml) sit there
    assert not {"call_after_result", "echo_result"} & set(fitted.answer_steps.get("replay/free", {}))
    assert fitted.evidence["answer_steps.facts/free.call_after_result"]["n"] == 8
    assert helpdesk.answer_steps == fitted.answer_steps  # a domain's variant keeps the answer-step rates

    tool = {"type": "function", "function": {"name": "get_ticket", "description": "Look up a ticket", "parameters": {
        "type": "object", "properties": {"ticket_id": {"type": "string"}}, "required": ["ticket_id"]}}}
    asked = [SystemMessage("You are a helpdesk assistant."), HumanMessage("What is the status of ticket TCK-1001?")]
    replayed = [*asked, AIMessage("", tool_calls=[{"name": "get_ticket", "args": {"ticket_id": "TCK-1001"},
                                                    "id": "call_1", "type": "tool_call"}]),
                ToolMessage(json.dumps({"ticket_id": "TCK-1001", "status": "open"}), tool_call_id="call_1")]
    stated = [*asked, HumanMessage("The results:\n- ticket: TCK-1001\n- status: open\nWrite your reply to the "
                                   "customer now.")]

    def replies(profile, messages, tools=(tool,)):
        request = {"messages": convert_to_openai_messages(messages), "tools": list(tools)}
        return [Provider(profile, seed=s).complete(request)["choices"][0]["message"] for s in range(6)]

    # the helpdesk's replay/free rate (10 of 10 probes, no tool offered, as they were): a call again every time,
    # written as text; with the tool still offered the loop's own rate applies (repeat_after_success, paths.yaml)
    assert all(not m.get("tool_calls") and m["content"].lstrip().startswith("{")
               for m in replies(helpdesk, replayed, tools=()))
    # the same result stated as facts (0 of 8 probes called again): words with the fact
    assert all(not m.get("tool_calls") and "open" in m["content"] for m in replies(helpdesk, stated))
    # and it is the profile's rate for that presentation the sim follows, not a rule of its own
    assert all(m["content"].lstrip().startswith("{") for m in replies(swapped, stated))
