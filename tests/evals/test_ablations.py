"""One-knob ablations and part swaps, what two designs differ in, and the report's ablation and claim rows."""

from __future__ import annotations

import pytest

from lg_harness.core.design import PRESETS, ablation, ablations, load_design
from lg_harness.core.knobs import KNOB_OFF, Knobs, off_value
from lg_harness.errors import HarnessError
from lg_harness_lab.evals.ablations import ablation_specs, differences, parse
from lg_harness_lab.evals.claims import CLAIMS, claim_rows, compares
from lg_harness_lab.evals.metrics import aggregate
from lg_harness_lab.evals.report import render_report
from lg_harness_lab.evals.scenario import Scenario, Turn, TurnExpect


def knob_diff(a, b) -> dict:
    ka, kb = a.knobs.model_dump(), b.knobs.model_dump()
    return {k: (ka[k], kb[k]) for k in ka if ka[k] != kb[k]}


def test_each_ablation_differs_from_harness_in_exactly_one_knob():
    harness = load_design("harness")
    variants = ablations(harness)
    assert variants, "harness switches features on: it has ablations"
    seen = set()
    for variant in variants:
        diff = knob_diff(harness, variant)
        assert len(diff) == 1, (variant.name, diff)
        (knob, (_, new)), = diff.items()
        assert variant.name == f"harness-no:{knob}" and new == off_value(knob)
        assert variant.variants == harness.variants and variant.rules == harness.rules
        seen.add(knob)
    # every feature knob harness turns on is ablated, and every knob it moved off its default
    defaults = Knobs()
    expected = {k for k in Knobs.model_fields if getattr(harness.knobs, k) != off_value(k)}
    assert seen == expected
    assert {"normalize_args", "align_entities", "clean_results"} <= seen
    # a knob with no off state that harness moved from its default is ablated back to the default
    assert "context_budget_tokens" in seen and defaults.context_budget_tokens == off_value("context_budget_tokens")


def test_design_specs_load_and_bad_ones_fail_clearly():
    ablated = load_design("harness-no:normalize_args")
    assert ablated.knobs.normalize_args is False and ablated.name == "harness-no:normalize_args"
    swapped = load_design("harness-with:context=full")
    assert swapped.variant("context") == "full" and knob_diff(load_design("harness"), swapped) == {}
    assert differences(load_design("harness"), swapped) == ["context: hybrid -> full"]
    with pytest.raises(HarnessError, match="unknown knob"):
        load_design("harness-no:no_such_knob")
    with pytest.raises(HarnessError, match="unknown role"):
        load_design("harness-with:nope=x")
    with pytest.raises(HarnessError, match="unknown design"):
        load_design("nothing-no:normalize_args")
    assert set(KNOB_OFF) <= set(Knobs.model_fields)


def test_ablation_specs_and_what_their_names_say():
    specs = ablation_specs("harness")
    assert "harness-no:normalize_args" in specs and "harness-with:context=full" in specs
    assert all(load_design(s).name == s for s in specs)
    assert parse("harness-no:normalize_args") == {"base": "harness", "kind": "knob", "field": "normalize_args",
                                                   "value": False, "from": True}
    self_check = parse("harness-with:self_check=off")
    assert self_check is not None and self_check["from"] == "grounded"
    assert parse("state-machine") is None


def test_claims_say_whether_their_designs_differ_in_the_claimed_thing_only():
    for claim in CLAIMS:
        text = compares(claim.baseline, claim.target, claim.about)
        if claim.about:
            assert text.startswith("only "), (claim.claim, text)
        else:
            assert text.startswith("whole designs"), (claim.claim, text)
    # a pair that differs in more than the claimed knob is flagged, not passed off as that knob's effect
    assert compares("state-machine", "layered", ("context",)).startswith("CONFOUNDED")
    assert compares("harness-no:clean_results", "harness", ("clean_results",)) == "only clean_results: False -> True"


# ----------------------------------------------------------------------------------------- report rows


def _records(design: str, scenarios: list[Scenario], ok: bool) -> list[dict]:
    return [{"cell": f"{design}|{s.id}|0", "design": design, "scenario": s.id, "seed": 0, "tags": s.tags,
             "turns": [{"index": 0, "reply": "done" if ok else "sorry", "tool_calls": [], "path": ["intent"]}],
             "fault_events": []} for s in scenarios]


SUITE = [Scenario(id=f"gen-kind{i}-en-{j:04d}", tags=["en", "single"],
                  turns=[Turn(user="hi", expect=TurnExpect(reply_contains=["done"]))]) for i in range(8) for j in range(3)]


def test_the_report_has_an_ablations_section_with_paired_rows():
    records = (_records("harness", SUITE, True) + _records("harness-no:clean_results", SUITE, False)
               + _records("harness-no:normalize_args", SUITE, True))
    summary = aggregate(records, SUITE)
    rows = {a["design"]: a for a in summary["ablations"]}
    assert set(rows) == {"harness-no:clean_results", "harness-no:normalize_args"}
    hurt, same = rows["harness-no:clean_results"], rows["harness-no:normalize_args"]
    assert hurt["paired"]["mean"] == -1.0 and hurt["paired"]["significant"] and hurt["paired"]["n"] == 24
    assert same["paired"]["mean"] == 0.0 and not same["paired"]["significant"]
    text = render_report(summary, "harness compare --ablations", date="today")
    section = text.split("## Ablations", 1)[1].split("\n## ", 1)[0]
    assert "| clean_results: True -> False | knob | harness-no:clean_results |" in section
    assert "significantly lower" in section and "no significant difference" in section and "n=24, 8 kinds" in section
    # ablations stay out of the main tables; the claim on cleaned results reads its ablation
    assert "| harness-no:clean_results |" not in text.split("## Figures from the write-ups")[0]
    claim = next(r for r in claim_rows(summary) if r["claim"].startswith("Cleaned tool results"))
    assert claim["compares"] == "only clean_results: False -> True" and claim["significance"] == "significantly higher"
    assert claim["verdict"] == "reproduced" and claim["n"] == "n=24"


def test_every_preset_is_its_own_base_of_ablations():
    for name, design in PRESETS.items():
        for variant in ablations(design):
            assert len(knob_diff(design, variant)) == 1, (name, variant.name)
    assert ablation(load_design("naive"), "normalize_args").knobs == load_design("naive").knobs  # already off


def test_a_local_engine_report_says_how_busy_the_machine_was():
    """Real-model runs record each message's load average; the report states the engine's threads and the
    least, median and most load its messages saw, so a slow figure can be told from a busy machine."""
    records = _records("harness", SUITE[:3], True)
    for load, record in zip((0.5, 1.5, 3.0), records, strict=True):
        record["model"] = "local:qwen2.5-coder-0.5b"
        record["turns"][0].update(speed={"prompt_eval_tokens": 10, "prompt_eval_s": 0.1}, load_1m=load)
    summary = aggregate(records, SUITE[:3])
    assert summary["machine"]["load_1m"] == {"min": 0.5, "median": 1.5, "max": 3.0, "n": 3}
    text = render_report(summary, "harness compare --model local:qwen2.5-coder-0.5b", date="today")
    assert "load average (1 min) when its 3 messages ended: 0.50 least, 1.50 median, 3.00 most" in text
    assert aggregate(_records("harness", SUITE[:3], True), SUITE[:3])["machine"] == {}
