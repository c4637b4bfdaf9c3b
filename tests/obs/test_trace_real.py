"""Traces of real messages through the harness (not synthetic spans): the span tree, GenAI attributes, tool
retries with their HTTP status, the original error class, guard stops; then the same through the CLI's
file traces, ``harness trace`` and ``harness stats``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import Field

from lg_harness.core.design import Design
from lg_harness.domains.shop import DOMAIN as SHOP
from lg_harness.graphs.app import Harness, Parts, Settings
from lg_harness.obs.tracing import capture_spans
from lg_harness.tools.executor import ToolExecutor
from lg_harness.tools.faults import FaultPlan
from tests.support import harness, patient_design, u001_order, without_goal_stop

MODEL = "sim:clean"






def traced_message(data_dir: Path, order: str, script: list[str], model: BaseChatModel | str = MODEL,
                   design: Design | None = None):
    """One message with get_order_status failing as scripted; returns (result, spans, plan, waits)."""
    plan = FaultPlan(scripted={"get_order_status": script})
    registry = plan.apply(SHOP.registry())
    waits: list[float] = []
    executor = ToolExecutor(registry, sleep=waits.append)  # a fake sleep: nothing really waits
    with Harness(model, design=design or patient_design(),
                 settings=Settings(data_dir=data_dir,
                                   parts=Parts(registry=registry, executor=executor))) as h, \
            capture_spans() as exporter:
        result = h.send("t", f"Where is my order {order}?", "U001")
    return result, list(exporter.get_finished_spans()), plan, waits


def hexid(value: int, width: int) -> str:
    return f"{value:0{width}x}"


def children(spans, parent) -> list:
    return [s for s in spans if s.parent is not None and s.parent.span_id == parent.context.span_id]


def test_a_rate_limited_lookup_gives_a_span_tree_with_genai_attributes_and_the_retry(tmp_path):
    order = u001_order("shipped")
    result, spans, plan, waits = traced_message(tmp_path / "data", order, ["rate_limited", "ok"])
    assert [(c["name"], c["status"]) for c in result.tool_calls] == [("get_order_status", "ok")]

    # message > nodes > model and tool spans, all in the run's trace
    [root] = [s for s in spans if s.name == "message"]
    assert root.parent is None
    assert {hexid(s.context.trace_id, 32) for s in spans} == {result.trace_id}
    assert root.attributes["harness.thread_id"] == "t" and root.attributes["harness.turn"] == 1
    nodes = children(spans, root)
    assert nodes and all(s.name.startswith("node ") for s in nodes)
    assert [s.name for s in nodes][:3] == ["node intent", "node collect", "node action"]
    models = [s for s in spans if s.attributes.get("harness.span.kind") == "model"]
    assert models and all(s.parent.span_id in {n.context.span_id for n in nodes} for s in models)
    for span in models:
        attrs = span.attributes
        assert attrs["gen_ai.operation.name"] == "chat"
        assert attrs["gen_ai.request.model"] == "sim"
        assert attrs["gen_ai.usage.input_tokens"] > 0 and attrs["gen_ai.usage.output_tokens"] > 0
    assert sum(s.attributes["gen_ai.usage.input_tokens"] for s in models) == result.usage.input_tokens
    assert len(models) == result.usage.model_calls

    # the tool span: under the execute node (action decides the call, execute runs it), with the retry after
    # the 429 and its status code
    [tool] = [s for s in spans if s.name == "execute_tool get_order_status"]
    assert tool.parent.span_id in {n.context.span_id for n in nodes if n.name == "node execute"}
    assert tool.attributes["gen_ai.operation.name"] == "execute_tool"
    assert tool.attributes["gen_ai.tool.call.id"] == result.tool_calls[0]["id"]
    assert tool.attributes["harness.tool.status"] == "ok" and tool.attributes["harness.tool.attempts"] == 2
    [retry] = [e for e in tool.events if e.name == "tool.retry"]
    assert retry.attributes["wait_s"] >= plan.retry_after_s
    assert waits == [retry.attributes["wait_s"]], "the executor waited what the event says"
    codes = {tool.attributes.get("http.response.status_code"), retry.attributes.get("http.response.status_code")}
    assert 429 in codes, ("the 429 that caused the retry is recorded on neither the tool span nor its "
                          f"tool.retry event: span {dict(tool.attributes)}, event {dict(retry.attributes)}")


def test_a_failing_tool_records_the_original_exception_class(tmp_path):
    order = u001_order("shipped")
    result, spans, _, waits = traced_message(tmp_path / "data", order, ["server_error"] * 4)
    assert [(c["name"], c["status"]) for c in result.tool_calls] == [("get_order_status", "error")]
    [tool] = [s for s in spans if s.name == "execute_tool get_order_status"]
    attrs = tool.attributes
    assert attrs["error.type"] == "BackendHTTPError", "the backend's own class, not a category or a wrapper"
    assert attrs["harness.tool.error_type"] == "transient"
    assert attrs["http.response.status_code"] == 503
    assert attrs["harness.tool.attempts"] == 4 and len(waits) == 3
    assert "503" in attrs["exception.message"]
    assert tool.status.status_code.name == "ERROR"
    assert [e.name for e in tool.events] == ["tool.retry"] * 3


class RepeatingModel(BaseChatModel):
    """Every call asks for the same ``get_order_status`` call, each time with a fresh id."""

    order_id: str
    count: list = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "repeating"

    def bind_tools(self, tools, **kwargs) -> RepeatingModel:
        return self

    def _generate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
        self.count.append(1)
        call = {"name": "get_order_status", "args": {"order_id": self.order_id}, "id": f"loop-{len(self.count)}",
                "type": "tool_call"}
        return ChatResult(generations=[ChatGeneration(message=AIMessage("", tool_calls=[call]))])


def test_a_guard_stop_is_an_event_in_the_trace(tmp_path):
    order = u001_order("shipped")
    result, spans, _, _ = traced_message(tmp_path / "data", order, [], model=RepeatingModel(order_id=order),
                                         design=without_goal_stop())  # the identical-call guard, not the goal
    assert any(c["error_type"] == "duplicate_call" for c in result.tool_calls)
    stops = [(s.name, e) for s in spans for e in s.events if e.name == "guard.stop"]
    assert len(stops) == 1, [(s.name, [e.name for e in s.events]) for s in spans]
    span_name, event = stops[0]
    assert "identical" in event.attributes["reason"] and event.attributes["rounds"] == 2
    assert {hexid(s.context.trace_id, 32) for s in spans} == {result.trace_id}


# ------------------------------------------------------------------------------------------ the CLI



@pytest.mark.slow
def test_cli_trace_and_stats_show_the_message(tmp_path):
    order = u001_order("shipped")
    data = tmp_path / "data"
    proc = harness("run", f"Where is my order {order}?", "--thread", "tr", "--model", MODEL, "--data-dir", str(data),
                   "--json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    run = json.loads(proc.stdout)
    assert run["trace_id"]

    proc = harness("trace", "--thread", "tr", "--data-dir", str(data), "--json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["trace_id"] == run["trace_id"]
    spans = doc["spans"]
    assert {s["trace_id"] for s in spans} == {run["trace_id"]}
    names = [s["name"] for s in spans]
    assert "message" in names and "node action" in names and "execute_tool get_order_status" in names
    assert any(s["attributes"].get("gen_ai.operation.name") == "chat" for s in spans)
    [root] = [s for s in spans if s["name"] == "message"]
    assert root["parent_id"] is None and root["attributes"]["harness.thread_id"] == "tr"
    ids = {s["span_id"] for s in spans}
    assert all(s["parent_id"] in ids for s in spans if s is not root), "one tree"

    proc = harness("trace", "--thread", "tr", "--data-dir", str(data), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "execute_tool" in proc.stdout and proc.stdout.lstrip().startswith("message")

    proc = harness("stats", "--data-dir", str(data), "--json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(proc.stdout)["stats"]
    assert rows and all({"metric", "value", "threshold", "flagged"} <= set(r) for r in rows)
    by_metric = {r["metric"]: r for r in rows}
    assert by_metric["model calls / message"]["value"] == run["usage"]["model_calls"]
    assert by_metric["tool failure rate"]["value"] == 0
