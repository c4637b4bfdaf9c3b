"""The A/B comparison end to end: the CLI's outputs and its resumability, a run on the real-model client
path against the Ollama stand-in, and the simulated model's blindness to design labels and expectations.
"""

from __future__ import annotations

import gc
import json
import logging
import warnings
from pathlib import Path

import pytest
import yaml

from lg_harness.core.design import load_design
from lg_harness.domains.shop.backend import ShopDB
from lg_harness_lab.evals.compare import CELLS, read_cells, run_compare
from lg_harness_lab.evals.runner import run_cell
from lg_harness_lab.evals.scenario import Scenario, Turn, load_scenarios
from tests.standins.ollama_server import OllamaStandIn
from tests.support import harness

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def u001_orders() -> dict[str, str]:
    """One order of U001 per status, from the seeded shop every evaluation cell starts from."""
    db = ShopDB.fresh_copy()
    try:
        out = {}
        for status in ("pending", "shipped", "delivered", "cancelled"):
            row = db.query_one("SELECT id FROM orders WHERE user_id = 'U001' AND status = ? ORDER BY id", (status,))
            assert row is not None, f"the seed no longer gives U001 a {status} order"
            out[status] = row["id"]
        return out
    finally:
        db.close()


@pytest.fixture
def harness_log_level():
    """run_compare may run cells in this process; whatever it does to logging must not leak into other tests."""
    logger = logging.getLogger("harness")
    level = logger.level
    yield level
    logger.setLevel(level)


# ------------------------------------------------------------------------------------------ (a) the CLI


@pytest.mark.slow
def test_compare_cli_writes_results_report_plots_and_resumes(tmp_path):
    out = tmp_path / "out"
    args = ["compare", "--designs", "naive,harness", "--limit", "4", "--seeds", "1", "--workers", "1",
            "--out", str(out), "--json"]
    first = harness(*args, cwd=tmp_path, timeout=300)
    assert first.returncode == 0, first.stderr
    doc = json.loads(first.stdout)
    assert doc["cells"] == 8, "4 scenarios x 2 designs x 1 seed"

    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert set(results["designs"]) == {"naive", "harness"}
    assert results["n_scenarios"] == 4
    report = (out / "report.md").read_text(encoding="utf-8")
    assert "harness compare --designs naive,harness --limit 4 --seeds 1 --workers 1" in report
    assert "naive" in report and "| harness |" in report
    pngs = sorted(out.glob("*.png"))
    assert pngs and all(p.read_bytes().startswith(PNG_SIGNATURE) for p in pngs)
    assert {str(p) for p in pngs} <= set(doc["files"])

    cells_file = out / CELLS
    lines = cells_file.read_text(encoding="utf-8").splitlines()
    cells = [json.loads(line)["cell"] for line in lines]
    assert len(cells) == 8 and len(set(cells)) == 8
    assert all(not r.get("crash") for r in read_cells(out)), [r.get("crash") for r in read_cells(out)]

    again = harness(*args, cwd=tmp_path, timeout=300)
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["cells"] == 8
    after = cells_file.read_text(encoding="utf-8").splitlines()
    assert after == lines, "the second run skipped every finished cell: nothing ran twice, nothing was appended"
    assert "harness compare" in (out / "report.md").read_text(encoding="utf-8")


# ------------------------------------------------------------------------------------------ (b) real-model path


@pytest.fixture
def ollama_server():
    with OllamaStandIn() as server:
        yield server
        assert server.errors == [], f"the stand-in failed: {server.errors}"


def open_ollama_clients(ignore: set[int]) -> list:
    """ChatOllama models still alive whose HTTP client was never closed (created after ``ignore`` was taken)."""
    from langchain_ollama import ChatOllama

    return [o for o in gc.get_objects() if isinstance(o, ChatOllama) and id(o) not in ignore
            and getattr(o, "_client", None) is not None and not o._client._client.is_closed]


@pytest.mark.slow
@pytest.mark.real_model_wire
def test_compare_on_the_ollama_client_path(tmp_path, monkeypatch, ollama_server, harness_log_level):
    monkeypatch.setenv("OLLAMA_HOST", ollama_server.url)
    orders = u001_orders()
    status_of, returned = orders["shipped"], orders["delivered"]
    scenarios = [
        Scenario(id="wire-status", turns=[Turn(user=f"Where is my order {status_of}?")]),
        Scenario(id="wire-return", turns=[Turn(user=f"Where is my order {returned}?"),
                                          Turn(user="I want to return it, it is the wrong size")]),
    ]
    before = {id(o) for o in open_ollama_clients(set())}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        records = run_compare(["harness"], scenarios, seeds=1, model="ollama:qwen2.5:7b", out_dir=tmp_path / "out",
                              workers=1)
        gc.collect()  # what the cells dropped is finalised now, inside this test
        still_open = open_ollama_clients(before)
        for model in still_open:  # close them here, or their sockets are reported in whichever test runs next
            model._client._client.close()
    leaks = [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)]
    leaks += [f"ChatOllama({m.base_url}) still open" for m in still_open]

    by_scenario = {r["scenario"]: r for r in records}
    assert set(by_scenario) == {"wire-status", "wire-return"}
    assert all(not r.get("crash") for r in records), [r.get("crash") for r in records]

    def ok_calls(turn: dict) -> list[tuple[str, str | None]]:
        return [(c["name"], c["args"].get("order_id")) for c in turn["tool_calls"] if c["status"] == "ok"]

    [status_turn] = by_scenario["wire-status"]["turns"]
    assert ok_calls(status_turn) == [("get_order_status", status_of)], status_turn["tool_calls"]
    assert status_turn["tool_calls"][-1]["result"]["order_id"] == status_of
    assert status_of in status_turn["reply"] and status_turn["model_calls"] >= 2
    first, second = by_scenario["wire-return"]["turns"]
    assert ok_calls(first) == [("get_order_status", returned)], first["tool_calls"]
    assert ok_calls(second) == [("request_return", returned)], second["tool_calls"]
    assert returned in second["reply"]

    # the calls really went over Ollama's wire: tool schemas out, native tool calls and their results back
    bodies = [r["body"] for r in ollama_server.requests_to("/api/chat")]
    assert len(bodies) == sum(t["model_calls"] for r in records for t in r["turns"])
    assert all(b["model"] == "qwen2.5:7b" for b in bodies)
    sent_back = [m for b in bodies for m in b["messages"] if m["role"] == "tool"]
    assert any(status_of in m["content"] for m in sent_back) and any(returned in m["content"] for m in sent_back)

    assert not leaks, f"the comparison left model connections open after its cells ended: {leaks[:3]}"


def test_an_in_process_compare_leaves_the_callers_logging_alone(tmp_path, harness_log_level):
    logging.getLogger("harness").setLevel(logging.INFO)
    scenario = Scenario(id="hello", turns=[Turn(user="hello")])
    [record] = run_compare(["harness"], [scenario], seeds=1, model="sim:clean", out_dir=tmp_path, workers=1)
    assert not record.get("crash") and record["turns"][0]["reply"]
    assert logging.getLogger("harness").level == logging.INFO, \
        "run_compare(workers=1) runs cells in the caller's process and must not change its log levels"


def test_run_records_carry_what_the_prompt_cache_served():
    scenario = Scenario(id="cache", turns=[Turn(user="Where is my order ORD-10134?"),
                                            Turn(user="And what was in it?"), Turn(user="Any coupons for me?")])
    record = run_cell(load_design("harness"), scenario, 0, "sim:clean")
    cached = [t["cached_input_tokens"] for t in record["turns"]]
    assert all(isinstance(c, int) for c in cached) and sum(cached) > 0
    assert all(c <= t["input_tokens"] for c, t in zip(cached, record["turns"], strict=True))


def test_resume_reruns_a_cell_whose_design_changed_and_reuses_the_rest(tmp_path, harness_log_level):
    scenario = Scenario(id="where", turns=[Turn(user="Where is my order ORD-10134?")])
    design = tmp_path / "mine.yaml"
    design.write_text(yaml.safe_dump({"name": "mine", "knobs": {"context_budget_tokens": 2000}}), encoding="utf-8")
    out = tmp_path / "out"
    first = run_compare(["harness", str(design)], [scenario], seeds=1, model="sim:clean", out_dir=out, workers=1)
    assert len(first) == 2 and all(r["fingerprint"] for r in first)

    design.write_text(yaml.safe_dump({"name": "mine", "knobs": {"context_budget_tokens": 900}}), encoding="utf-8")
    second = run_compare(["harness", str(design)], [scenario], seeds=1, model="sim:clean", out_dir=out, workers=1)
    by_design = {r["design"]: r for r in second}
    assert len(second) == 2 and by_design["harness"] == next(r for r in first if r["design"] == "harness")
    assert by_design["mine"]["fingerprint"] != next(r for r in first if r["design"] == "mine")["fingerprint"]
    assert len(read_cells(out)) == 3, "only the edited design's cell ran again"

    other_model = run_compare(["harness"], [scenario], seeds=1, model="sim", out_dir=out, workers=1)
    assert len(read_cells(out)) == 4 and other_model[0]["fingerprint"] != by_design["harness"]["fingerprint"]


# ------------------------------------------------------------------------------------------ (c) sim blindness

COMPARED = ("intent", "reply", "path", "phase", "handoff", "tool_calls", "model_calls", "input_tokens",
            "output_tokens", "call_input_tokens", "stop_reason")


def probe_scenario(orders: list[str]) -> dict:
    """A scenario with many tool calls, so background backend faults have chances to show up."""
    turns = [{"user": f"Where is my order {order}?",
              "expect": {"intent": "order_status", "tools": [{"name": "get_order_status", "args": {"order_id": order}}]}}
             for order in orders]
    turns += [{"user": "Do you have bluetooth headphones?", "expect": {"intent": "product"}},
              {"user": "What coupons can I get?", "expect": {"intent": "coupons"}},
              {"user": "Do you have running shoes?", "expect": {"intent": "product"}},
              {"user": "Do you have a yoga mat?", "expect": {"intent": "product"}}]
    return {"id": "sim-blind", "tags": ["multi-turn", "en"], "turns": turns}


def observed(record: dict) -> list[dict]:
    return [{k: turn.get(k) for k in COMPARED} for turn in record["turns"]]


def probe(tmp_path: Path) -> tuple[dict, Scenario]:
    db = ShopDB.fresh_copy()
    try:
        orders = [r["id"] for r in db.query("SELECT id FROM orders WHERE user_id = 'U001' ORDER BY id")]
    finally:
        db.close()
    data = probe_scenario(orders)
    return data, Scenario.model_validate(data)


def test_the_sim_answers_the_same_whatever_the_expectations(tmp_path):
    data, scenario = probe(tmp_path)
    design = load_design("harness")
    base = run_cell(design, scenario, 0, "sim")
    assert len(base["turns"]) == len(scenario.turns)

    # same id and user turns, other expectations (loaded from a file): the model never sees expectations
    other = {**data, "turns": [{"user": t["user"], "expect": {"intent": "complaint", "no_tools": True,
                                                             "reply_contains": ["nothing like this"]}}
                               for t in data["turns"]]}
    path = tmp_path / "other.yaml"
    path.write_text(yaml.safe_dump([other], allow_unicode=True), encoding="utf-8")
    [loaded] = load_scenarios(path)
    assert [t.user for t in loaded.turns] == [t.user for t in scenario.turns]
    assert loaded.turns[0].expect != scenario.turns[0].expect
    expected_differently = run_cell(design, loaded, 0, "sim")
    assert observed(expected_differently) == observed(base)
    assert expected_differently["fault_events"] == base["fault_events"]


@pytest.mark.slow
def test_the_sim_answers_the_same_whatever_the_design_is_called(tmp_path):
    """The same design under other names, same scenario and seed: the run must be the same, backend faults
    included (an A/B comparison must not hand two designs different luck because of their names)."""
    _, scenario = probe(tmp_path)
    design = load_design("harness")
    base = run_cell(design, scenario, 0, "sim")
    for label in ("harness-renamed", "other-label", "B"):
        relabelled = run_cell(design.model_copy(update={"name": label}), scenario, 0, "sim")
        assert relabelled["fault_events"] == base["fault_events"], \
            f"the same scenario and seed must meet the same backend faults whatever the design is called ({label})"
        assert observed(relabelled) == observed(base), f"the design's name ({label}) changed what the run saw or did"
