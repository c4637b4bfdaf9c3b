"""The real peer frameworks as rows of ``harness compare``: each runs a scenario end to end through its own
loop, reaches the real backend, and yields run records the metric code scores like a design's."""

from __future__ import annotations

import asyncio
import json
import warnings
from collections.abc import Iterator

import pytest
from typer.testing import CliRunner

from lg_harness.core.design import load_design
from lg_harness.domains.shop.backend import ShopDB
from lg_harness.errors import HarnessError
from lg_harness.graphs.builder import check_design
from lg_harness_lab.evals.compare import run_compare
from lg_harness_lab.evals.metrics import aggregate, cell_metrics
from lg_harness_lab.evals.runner import run_cell
from lg_harness_lab.evals.scenario import Scenario
from lg_harness_lab.peers import PEERS, get_peer

ALL = tuple(PEERS)


@pytest.fixture(autouse=True)
def _close_the_loop_a_peer_leaves() -> Iterator[None]:
    """openai-agents' ``Runner.run_sync`` leaves an open event loop set as the thread's loop, on purpose (to
    reuse it). Closed here: otherwise a later test on this worker that sets a loop (``asyncio.run``) drops the
    last reference and fails on the unclosed loop's ResourceWarning, whichever test that happens to be."""
    yield
    policy = asyncio.get_event_loop_policy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            loop = policy.get_event_loop()
        except RuntimeError:  # no loop set
            return
    if not loop.is_running():
        loop.close()
        policy.set_event_loop(None)


def seeded_status(order_id: str) -> str:
    db = ShopDB.fresh_copy()
    try:
        return db.query_one("SELECT status FROM orders WHERE id = ?", (order_id,))["status"]
    finally:
        db.close()


def status_scenario(sid: str = "peer-status-1", faults: dict | None = None) -> Scenario:
    # Background tool faults are drawn from the id: these ids let the first few calls through.
    return Scenario.model_validate({
        "id": sid, "user_id": "U001", "role": "customer", "tags": ["single", "en"], "tool_faults": faults or {},
        "turns": [{"user": "Where is my order ORD-10134?",
                   "expect": {"tools": [{"name": "get_order_status", "args": {"order_id": "ORD-10134"}}],
                              "reply_contains": ["shipped"], "completes_task": True}}]})


@pytest.mark.parametrize("peer", ALL)
def test_each_peer_runs_a_scenario_to_the_backend_and_the_metrics_score_it(peer):
    scenario = status_scenario()
    record = run_cell(load_design(peer), scenario, 0, "sim:clean", "shop")
    assert record["design"] == peer and record["domain"] == "shop" and len(record["turns"]) == 1
    turn = record["turns"][0]
    calls = [c for c in turn["tool_calls"] if c["name"] == "get_order_status"]
    assert calls and calls[0]["reached_tool"] and calls[0]["status"] == "ok"
    # The result came from the seeded backend through the fault plan, not from the adapter.
    assert calls[0]["result"]["status"] == seeded_status("ORD-10134") == "shipped"
    assert any(e["tool"] == "get_order_status" for e in record["fault_events"])
    assert turn["model_calls"] >= 2 and turn["input_tokens"] > 0 and turn["latency_s"] > 0
    verdict = cell_metrics(record, scenario)
    assert verdict["success"], verdict["turns"]
    assert verdict["counts"]["args_boundary"] == [1, 1]
    json.dumps(record)  # a record goes to cells.jsonl as it is


def test_bare_langchain_ends_on_a_tool_timeout_and_tool_retry_middleware_recovers():
    faults = {"get_order_status": ["timeout", "ok"]}
    bare = run_cell(load_design("peer:langchain"), status_scenario("peer-timeout", faults), 0, "sim:clean", "shop")
    turn = bare["turns"][0]
    assert turn["reply"] == "" and "ToolTimeoutError" in turn["error"]
    assert turn["tool_calls"][0]["status"] == "error" and turn["tool_calls"][0]["error_type"] == "timeout"
    mw = run_cell(load_design("peer:langchain-mw"), status_scenario("peer-timeout", faults), 0, "sim:clean", "shop")
    call = mw["turns"][0]["tool_calls"][0]
    assert call["status"] == "ok" and call["attempts"] == 2
    # The retry waited on the virtual clock (ToolRetryMiddleware's backoff), not on the wall clock.
    first, second = [e for e in mw["fault_events"] if e["tool"] == "get_order_status"][:2]
    assert second["t"] - first["t"] >= 0.5


def test_langchain_human_in_the_loop_pauses_the_thread_and_later_messages_wait():
    scenario = Scenario.model_validate({
        "id": "peer-human", "user_id": "U001", "tags": ["handoff", "multi-turn", "en"],
        "turns": [{"user": "I want to talk to a human agent, please transfer me.", "expect": {"handoff": True}},
                  {"user": "Hello? Anyone there?", "expect": {"handoff": True}}]})
    record = run_cell(load_design("peer:langchain-mw"), scenario, 0, "sim:clean", "shop")
    first, second = record["turns"]
    held = [c for c in first["tool_calls"] if c["name"] == "transfer_to_human"]
    assert first["handoff"] and held and held[0]["status"] == "pending" and not held[0]["reached_tool"]
    assert second["handoff"] and second["path"] == [] and second["model_calls"] == 0
    # Without the middleware the handoff tool just runs, and the bot answers the next message itself.
    bare = run_cell(load_design("peer:langchain"), scenario, 0, "sim:clean", "shop")
    assert bare["turns"][1]["path"] and bare["turns"][1]["model_calls"] >= 1


def test_peers_are_rows_of_a_comparison_with_paired_differences(tmp_path):
    scenarios = [status_scenario("peer-a1"), status_scenario("peer-b1")]
    names = ["harness", "peer:langchain", "peer:pydantic-ai"]
    records = run_compare(names, scenarios, seeds=1, model="sim:clean", out_dir=tmp_path, workers=1)
    summary = aggregate(records, scenarios, order=names)
    assert summary["designs"] == names
    assert {p["design"] for p in summary["paired"]} == {"peer:langchain", "peer:pydantic-ai"}
    assert {d: summary["metrics"][d]["task_completion"]["mean"] for d in names} == dict.fromkeys(names, 1.0), [t.get("error") for r in records for t in r["turns"]]
    from lg_harness_lab.evals.report import render_report

    text = render_report(summary, "harness compare --designs " + ",".join(names))
    assert "## Peer frameworks" in text and "role masking" in text


def test_peer_names_are_listed_drawn_and_refused_where_they_cannot_run():
    from lg_harness.service.cli import app

    runner = CliRunner()
    listed = json.loads(runner.invoke(app, ["designs", "--json"]).stdout)
    assert [p["name"] for p in listed["peers"]] == list(PEERS)
    assert all(p["version"] for p in listed["peers"]) and all(p["lacks"] for p in listed["peers"])
    drawn = runner.invoke(app, ["graph", "--design", "peer:langchain", "--format", "mermaid"])
    assert drawn.exit_code == 0 and "model" in drawn.stdout and "tools" in drawn.stdout
    with_mw = runner.invoke(app, ["graph", "--design", "peer:langchain-mw", "--format", "mermaid"])
    assert "HumanInTheLoopMiddleware" in with_mw.stdout
    no_graph = runner.invoke(app, ["graph", "--design", "peer:openai-agents"])
    assert no_graph.exit_code == 1
    with pytest.raises(HarnessError, match="peer framework"):
        check_design(load_design("peer:langchain"))
    with pytest.raises(HarnessError, match="unknown peer"):
        get_peer("peer:autogen")
