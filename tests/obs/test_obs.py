"""Observability: span nesting and attributes, the file exporter and its tree view, the no-op mode, the
audit log (redaction, statistics) and the two tool-call log styles."""

from __future__ import annotations

import io
import json
import logging
import re
import sqlite3
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.trace import StatusCode
from rich.console import Console

from lg_harness.obs.audit import AuditLog, Thresholds
from lg_harness.obs.redact import RegexRedactor, default_redactor
from lg_harness.obs.render import load_trace, span_tree, stats_table
from lg_harness.obs.tracing import (
    TOOL_LOGGERS,
    JsonLogFormatter,
    TracingConfigError,
    bind_context,
    capture_spans,
    configure_logging,
    current_message,
    current_trace_id,
    get_tracer,
    message_span,
    model_identity,
    model_span,
    node_span,
    record_model_response,
    record_tool_outcome,
    setup_tracing,
    shutdown_tracing,
    span_event,
    tool_span,
    trace_file,
    traced_node,
    tracing_enabled,
    use_provider,
)
from lg_harness.tools.context import ToolContext
from lg_harness.tools.errors import RateLimitedError
from lg_harness.tools.executor import RetryPolicy, ToolExecutor, ToolOutcome
from lg_harness.tools.registry import ToolRegistry


@pytest.fixture(autouse=True)
def _no_tracing_left_behind(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv("HARNESS_TRACE", raising=False)
    yield
    shutdown_tracing()
    use_provider(None)


# ------------------------------------------------------------------------------------ a synthetic turn


def broken_lookup(order_id: str) -> dict:
    """Look an order up (always fails: a bug in the tool).

    Args:
        order_id: The order id.
    """
    raise ValueError(f"cannot parse order {order_id}")


class Flaky429:
    """A backend that answers 429 with Retry-After until its quota is used up."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, query: str) -> dict:
        """Search products.

        Args:
            query: Words to look for.
        """
        self.calls += 1
        raise RateLimitedError("429 Too Many Requests", retry_after=2.5)


def executor_with_tools() -> ToolExecutor:
    registry = ToolRegistry()
    registry.register(broken_lookup, name="get_order", timeout=None)
    registry.register(Flaky429(), name="search_products", timeout=None)

    # The executor opens the tool span itself and adds a tool.retry event before each wait.
    return ToolExecutor(registry, RetryPolicy(backoff=(), rate_limit_retries=1), sleep=lambda seconds: None)


def run_tool(executor: ToolExecutor, name: str, call_id: str, args: dict):
    return executor.run({"id": call_id, "name": name, "args": args}, ToolContext(user_id="U001"))


def synthetic_turn(thread: str = "t1", turn: int = 3) -> str:
    """message > intent node, action node > (model call, failing tool, 429 tool), guard stop; returns trace id."""
    executor = executor_with_tools()
    with message_span(thread, "U001", turn):
        trace_id = current_trace_id()
        assert trace_id is not None, "a message span under tracing has a trace"
        with node_span("intent"):
            pass
        with node_span("action"):
            with model_span("sim", provider="harness-sim") as span:
                reply = AIMessage("", tool_calls=[{"id": "c1", "name": "get_order", "args": {"order_id": "X"}}],
                                  usage_metadata={"input_tokens": 812, "output_tokens": 64, "total_tokens": 876},
                                  response_metadata={"model_name": "sim-1", "finish_reason": "tool_calls"})
                record_model_response(span, reply)
            run_tool(executor, "get_order", "c1", {"order_id": "ORD-10001"})
            run_tool(executor, "search_products", "c2", {"query": "headphones"})
        span_event("guard.stop", reason="max_rounds", rounds=10)
    return trace_id


def render_text(renderable) -> str:
    console = Console(file=io.StringIO(), record=True, width=200, color_system=None)
    console.print(renderable)
    return console.export_text()


def by_name(spans) -> dict:
    return {s.name: s for s in spans}


def test_spans_nest_under_the_message_and_carry_genai_and_tool_attributes():
    with capture_spans() as exporter:
        trace_id = synthetic_turn()
    spans = by_name(exporter.get_finished_spans())
    assert set(spans) == {"message", "node intent", "node action", "chat sim", "execute_tool get_order",
                          "execute_tool search_products"}
    root, action = spans["message"], spans["node action"]
    assert root.parent is None
    assert trace_id == f"{root.context.trace_id:032x}"
    assert {f"{s.context.trace_id:032x}" for s in spans.values()} == {trace_id}
    assert spans["node intent"].parent.span_id == root.context.span_id
    assert action.parent.span_id == root.context.span_id
    for child in ("chat sim", "execute_tool get_order", "execute_tool search_products"):
        assert spans[child].parent.span_id == action.context.span_id
    assert root.attributes["harness.thread_id"] == "t1" and root.attributes["harness.turn"] == 3

    model = spans["chat sim"].attributes
    assert model["gen_ai.operation.name"] == "chat"
    assert model["gen_ai.request.model"] == "sim"
    assert model["gen_ai.response.model"] == "sim-1"
    assert model["gen_ai.usage.input_tokens"] == 812 and model["gen_ai.usage.output_tokens"] == 64
    assert list(model["gen_ai.response.finish_reasons"]) == ["tool_calls"]
    assert model["gen_ai.provider.name"] == "harness-sim" and model["gen_ai.system"] == "harness-sim"


def test_a_failing_tool_records_the_original_exception_class():
    with capture_spans() as exporter:
        synthetic_turn()
    span = by_name(exporter.get_finished_spans())["execute_tool get_order"]
    attrs = span.attributes
    assert attrs["error.type"] == "ValueError"  # not the category ("internal") nor a framework wrapper
    assert attrs["harness.tool.error_type"] == "internal"
    assert attrs["exception.message"] == "cannot parse order ORD-10001"
    assert attrs["gen_ai.tool.name"] == "get_order" and attrs["gen_ai.tool.call.id"] == "c1"
    assert attrs["harness.tool.status"] == "error" and attrs["harness.tool.attempts"] == 1
    assert attrs["harness.tool.validate_ms"] >= 0 and attrs["harness.tool.call_ms"] >= 0
    assert span.status.status_code is StatusCode.ERROR
    assert "ValueError" in span.status.description


def test_a_429_tool_span_has_its_status_code_and_the_retry_event():
    with capture_spans() as exporter:
        synthetic_turn()
    span = by_name(exporter.get_finished_spans())["execute_tool search_products"]
    assert span.attributes["http.response.status_code"] == 429
    assert span.attributes["error.type"] == "RateLimitedError"
    assert span.attributes["harness.tool.attempts"] == 2
    retries = [e for e in span.events if e.name == "tool.retry"]
    assert len(retries) == 1
    assert retries[0].attributes["wait_s"] == 2.5 and retries[0].attributes["error_type"] == "RateLimitedError"


def test_the_http_status_is_read_from_the_original_exception():
    class HTTPStatusError(Exception):
        status_code = 503

    outcome = ToolOutcome(call_id="c3", name="track", args={}, status="error", error_type="transient",
                          exception="HTTPStatusError", error="503 Service Unavailable", attempts=4,
                          timings_ms={"validate_ms": 0.1, "call_ms": 40.0, "wait_ms": 7000.0})
    outcome.cause = HTTPStatusError("503 Service Unavailable")  # what the executor keeps on a failure
    with capture_spans() as exporter, tool_span("track", "c3") as span:
        record_tool_outcome(span, outcome)
    attrs = exporter.get_finished_spans()[0].attributes
    assert attrs["http.response.status_code"] == 503 and attrs["error.type"] == "HTTPStatusError"
    assert attrs["harness.tool.wait_ms"] == 7000.0 and attrs["harness.tool.attempts"] == 4


def test_guard_stop_event_lands_on_the_message_span():
    with capture_spans() as exporter:
        synthetic_turn()
    events = by_name(exporter.get_finished_spans())["message"].events
    assert [(e.name, e.attributes["reason"]) for e in events] == [("guard.stop", "max_rounds")]


def test_an_exception_through_a_span_is_recorded_with_its_class_and_not_swallowed():
    with (capture_spans() as exporter, pytest.raises(ValueError, match="x" * 10),
          message_span("t1", "U001", 1), tool_span("calc", "c9")):
        raise ValueError("x" * 500)
    spans = by_name(exporter.get_finished_spans())
    for name in ("execute_tool calc", "message"):
        assert spans[name].attributes["error.type"] == "ValueError"
        assert len(spans[name].attributes["exception.message"]) == 200
        assert spans[name].status.status_code is StatusCode.ERROR


def test_a_wrapped_exception_is_recorded_as_its_original_cause():
    class ModelCallFailed(Exception):
        pass

    with capture_spans() as exporter, pytest.raises(ModelCallFailed), model_span("sim"):
        try:
            raise ConnectionRefusedError("connection refused")
        except OSError as err:
            raise ModelCallFailed(f"{type(err).__name__}: {err}") from err
    attrs = exporter.get_finished_spans()[0].attributes
    assert attrs["error.type"] == "ConnectionRefusedError"
    assert attrs["exception.message"] == "connection refused"
    assert attrs["harness.error.wrapper"] == "ModelCallFailed"


def test_a_langgraph_interrupt_is_not_an_error():
    from langgraph.errors import GraphInterrupt

    with capture_spans() as exporter, pytest.raises(GraphInterrupt), node_span("human"):
        raise GraphInterrupt(())
    span = exporter.get_finished_spans()[0]
    assert span.status.status_code is StatusCode.UNSET
    assert [e.name for e in span.events] == ["graph.interrupt"]


def test_bind_context_keeps_worker_thread_spans_under_their_parent():
    def work() -> None:
        with tool_span("get_order", "c1"):
            pass

    with capture_spans() as exporter, node_span("action") as parent, ThreadPoolExecutor(2) as pool:
        pool.submit(bind_context(work)).result()
        pool.submit(work).result()  # unbound: the span starts a trace of its own
    tools = [s for s in exporter.get_finished_spans() if s.name.startswith("execute_tool")]
    assert tools[0].parent.span_id == parent.get_span_context().span_id
    assert tools[1].parent is None


def test_traced_node_wraps_a_state_config_node():
    seen = []
    node = traced_node("intent", lambda state, config: seen.append((state, config)) or {"phase": "collect"})
    with capture_spans() as exporter:
        assert node({"turn": 1}, {"configurable": {}}) == {"phase": "collect"}
    assert seen == [({"turn": 1}, {"configurable": {}})]
    assert exporter.get_finished_spans()[0].attributes["harness.node"] == "intent"


def test_traced_nodes_nest_under_the_message_in_a_real_langgraph_run():
    from langgraph.graph import END, START, StateGraph
    from typing_extensions import TypedDict

    class State(TypedDict, total=False):
        a: int
        b: int
        c: int

    def make(key: str):
        def node(state: State, config) -> dict:
            assert "configurable" in config  # LangGraph still passes the config through the wrapper
            return {key: 1}

        return node

    graph = StateGraph(State)
    for key in "abc":
        graph.add_node(key, traced_node(key, make(key)))
    graph.add_edge(START, "a")
    graph.add_edge("a", "b")
    graph.add_edge("a", "c")  # b and c run in parallel on LangGraph's worker threads
    graph.add_edge("b", END)
    graph.add_edge("c", END)
    app = graph.compile()
    with capture_spans() as exporter, message_span("t1", "U001", 1) as root:
        app.invoke({}, {"configurable": {"thread_id": "t1"}})
    nodes = [s for s in exporter.get_finished_spans() if s.name.startswith("node ")]
    assert sorted(s.name for s in nodes) == ["node a", "node b", "node c"]
    assert {s.parent.span_id for s in nodes} == {root.get_span_context().span_id}


def test_model_identity_of_the_sim_model():
    from lg_harness.llm.sim import SimChatModel

    assert model_identity(SimChatModel()) == ("sim", "simlm")


# --------------------------------------------------------------------------------- exporters and files


def test_file_exporter_writes_jsonl_that_load_trace_and_span_tree_render(tmp_path):
    provider = setup_tracing(tmp_path, ["file"])
    assert provider is not None and tracing_enabled()
    synthetic_turn("t1", 1)
    last = synthetic_turn("t1", 2)
    synthetic_turn("t2", 1)
    shutdown_tracing()

    lines = trace_file(tmp_path).read_text(encoding="utf-8").splitlines()
    rows = [json.loads(line) for line in lines]
    assert len(rows) == 18
    assert set(rows[0]) >= {"name", "trace_id", "span_id", "parent_id", "start_ns", "end_ns", "duration_ms",
                            "attributes", "events", "status"}
    spans = load_trace(tmp_path, thread_id="t1")
    assert {s["trace_id"] for s in spans} == {last} and len(spans) == 6
    tool = next(s for s in spans if s["name"] == "execute_tool search_products")
    assert tool["events"][0]["attributes"]["wait_s"] == 2.5 and tool["status"]["code"] == "ERROR"
    assert load_trace(tmp_path, trace_id=last) == spans
    assert load_trace(tmp_path, thread_id="nobody") == []

    text = render_text(span_tree(spans))
    assert text.splitlines()[0].startswith("message")
    for expected in ("node action", "chat sim", "tokens 812→64", "execute_tool get_order", "✗ ValueError",
                     "tool.retry", "wait_s=2.5", "http=429", "guard.stop", " ms"):
        assert expected in text
    # nesting is drawn: the tool line is indented deeper than its node line
    indent = {name: next(len(line) - len(line.lstrip(" │├└─")) for line in text.splitlines() if name in line)
              for name in ("node action", "execute_tool get_order")}
    assert indent["execute_tool get_order"] > indent["node action"]


def test_load_trace_skips_a_torn_last_line(tmp_path):
    setup_tracing(tmp_path, ["file"])
    synthetic_turn()
    shutdown_tracing()
    with trace_file(tmp_path).open("a", encoding="utf-8") as fh:
        fh.write('{"name": "half')
    assert len(load_trace(tmp_path, thread_id="t1")) == 6


def test_exporters_from_env_and_bad_names(tmp_path, monkeypatch):
    monkeypatch.setenv("HARNESS_TRACE", " File ")
    assert setup_tracing(tmp_path) is not None
    monkeypatch.setenv("HARNESS_TRACE", "none")
    assert setup_tracing(tmp_path, default=["file"]) is None and not tracing_enabled()
    monkeypatch.delenv("HARNESS_TRACE")
    assert setup_tracing(tmp_path, default=["file"]) is not None
    with pytest.raises(TracingConfigError, match="valid: console, otlp, file"):
        setup_tracing(tmp_path, ["jaeger"])
    with pytest.raises(TracingConfigError, match="needs a data dir"):
        setup_tracing(None, ["file"])


def test_console_exporter_writes_to_stderr_not_stdout(capsys):
    setup_tracing(None, ["console"])
    with node_span("intent"):
        pass
    shutdown_tracing()
    captured = capsys.readouterr()
    assert captured.out == "" and '"name": "node intent"' in captured.err


def test_otlp_exporter_is_imported_lazily_and_configured_from_the_standard_env(monkeypatch):
    import opentelemetry.exporter.otlp.proto.grpc.trace_exporter as otlp

    built = []

    class Recording(otlp.OTLPSpanExporter):
        def __init__(self, *args, **kwargs) -> None:
            super().__init__(*args, **kwargs)
            built.append((args, kwargs))

    monkeypatch.setattr(otlp, "OTLPSpanExporter", Recording)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4317")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_INSECURE", "true")
    assert setup_tracing(None, ["otlp"]) is not None and tracing_enabled()
    assert built == [((), {})]  # no arguments: endpoint, headers and TLS come from OTEL_EXPORTER_OTLP_*
    shutdown_tracing()  # nothing was recorded, so nothing is sent


# ------------------------------------------------------------------------------------------ no-op mode


class CountingExporter(SpanExporter):
    def __init__(self) -> None:
        self.calls = 0

    def export(self, spans):
        self.calls += 1
        return SpanExportResult.SUCCESS


def test_without_configuration_nothing_is_recorded_or_exported(tmp_path):
    counting = CountingExporter()
    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(SimpleSpanProcessor(counting))
    use_provider(provider)
    with node_span("warm"):
        pass
    assert counting.calls == 1  # the spy works when a provider is set
    use_provider(None)
    assert setup_tracing(tmp_path) is None and not tracing_enabled()

    with message_span("t1", "U001", 1) as root:
        assert not root.is_recording() and current_trace_id() is None
        scope = current_message()
        assert scope is not None and scope.thread_id == "t1"  # the audit scope works without tracing
        with node_span("action"), model_span("sim") as span:
            record_model_response(span, AIMessage("hi"))
            span_event("guard.stop", reason="max_rounds")
        assert bind_context(len) is len
    assert counting.calls == 1
    assert current_message() is None
    assert not trace_file(tmp_path).exists()
    assert type(get_tracer()).__name__ == "NoOpTracer"
    provider.shutdown()


# ----------------------------------------------------------------------------------------------- audit


EN = ("Call me at (555) 123-4567 or mail jane.doe@example.com; ship to 123 Main St, Springfield, IL 62704. "
      "Order ORD-10134 placed 2024-05-01 for 2 items, the usual way.")
ZH = "我的手机是13812345678，邮箱 zhang.san@qq.com，请寄到上海市浦东新区世纪大道100号1号楼201室，订单ORD-10001"


def test_default_redactor_masks_english_contact_data_and_keeps_ids():
    assert default_redactor(EN) == ("Call me at [phone] or mail [email]; ship to [address]. Order ORD-10134 "
                                    "placed 2024-05-01 for 2 items, the usual way.")
    assert default_redactor("Send it to 42 Elm Avenue Apt 5, or +44 20 7946 0958") == \
        "Send it to [address], or [phone]"


def test_default_redactor_masks_chinese_contact_data_and_keeps_ids():
    assert default_redactor(ZH) == "我的手机是[phone]，邮箱 [email]，请寄到[address]，订单ORD-10001"
    assert default_redactor("电话：+86 138-1234-5678，地址北京市朝阳区建国路88号。座机010-12345678") == \
        "电话：[phone]，地址[address]。座机[phone]"


def test_audit_stores_everything_and_exports_redacted(tmp_path):
    audit = AuditLog.in_dir(tmp_path)
    with capture_spans(), message_span("t1", "U001", 2):
        trace_id = current_trace_id()
        reply = AIMessage(f"Noted: {ZH}", usage_metadata={"input_tokens": 900, "output_tokens": 40,
                                                          "total_tokens": 940})
        audit.record_model("sim", [HumanMessage(EN)], reply, duration_ms=12.5)
        failed = ToolOutcome(call_id="c1", name="update_address", args={"address": "123 Main St"},
                             status="error", error_type="internal", exception="ValueError",
                             error="bad address 123 Main St", attempts=1, timings_ms={"validate_ms": 1.0,
                                                                                       "call_ms": 2.0})
        audit.record_tool_outcome(failed)
    audit.record_model("sim", [HumanMessage("hello")], AIMessage("hi"), thread_id="t2", turn=1)

    rows = audit.export(thread_id="t1")
    assert [(r["kind"], r["thread_id"], r["turn"], r["trace_id"]) for r in rows] == \
        [("model", "t1", 2, trace_id), ("tool", "t1", 2, trace_id)]
    model, tool = rows
    assert model["input_tokens"] == 900 and model["output_tokens"] == 40 and model["duration_ms"] == 12.5
    assert model["input"][0]["content"] == default_redactor(EN)
    assert model["output"]["content"] == "Noted: " + default_redactor(ZH)
    assert tool["error_type"] == "ValueError" and tool["status"] == "error" and tool["duration_ms"] == 3.0
    assert tool["input"] == {"address": "[address]"}
    assert tool["output"]["error"] == {"type": "internal", "class": "ValueError", "message": "bad address [address]"}

    # Masked before it is written: no original on disk, not even for export(redact=False).
    raw = audit.export(thread_id="t1", redact=False)
    assert raw[0]["input"][0]["content"] == default_redactor(EN) != EN
    assert "jane.doe@example.com" not in json.dumps(rows)
    with sqlite3.connect(tmp_path / "audit.sqlite") as conn:
        stored = json.dumps([list(r) for r in conn.execute("SELECT input, output FROM calls")], ensure_ascii=False)
    assert "jane.doe@example.com" not in stored and "123 Main St" not in stored
    custom = audit.export(thread_id="t2", redactor=RegexRedactor([("greeting", re.compile("hi"))]))
    assert custom[0]["output"]["content"] == "[greeting]"
    assert len(audit.export()) == 3
    audit.close()


def fill_audit(audit: AuditLog, *, big: int, tool_failures: int, completed: list[bool], latencies: list[float]):
    for turn, (done, latency) in enumerate(zip(completed, latencies, strict=True), start=1):
        calls = 12 if turn == 1 else 2
        tokens = big if turn == 1 else 1000
        for _ in range(calls):
            audit.record_model("sim", [], None, input_tokens=tokens // calls, output_tokens=10, thread_id="t1",
                               turn=turn)
        audit.record_message("t1", turn, done, rounds=calls, latency_ms=latency, input_tokens=tokens)
    for i in range(10):
        audit.record_tool("get_order", {}, {}, status="error" if i < tool_failures else "ok", thread_id="t1", turn=1)


def test_stats_flag_what_crosses_the_thresholds(tmp_path):
    audit = AuditLog(tmp_path / "a.sqlite")
    fill_audit(audit, big=6000, tool_failures=2, completed=[True, False, True], latencies=[1000, 2000, 45000])
    rows = {r.metric: r for r in audit.stats()}
    assert rows["input tokens / message (mean)"].value == pytest.approx((6000 + 1000 + 1000) / 3)
    assert rows["input tokens / message (mean)"].threshold == pytest.approx(4096 * 0.8)
    assert not rows["input tokens / message (mean)"].flagged
    assert rows["input tokens / message (max)"].value == 6000 and rows["input tokens / message (max)"].flagged
    assert rows["tool failure rate"].value == pytest.approx(0.2) and rows["tool failure rate"].flagged
    assert rows["model calls / message"].value == pytest.approx(16 / 3) and not rows["model calls / message"].flagged
    assert rows["task completion"].value == pytest.approx(2 / 3) and rows["task completion"].flagged
    assert rows["latency p99 / message"].value == 45.0 and rows["latency p99 / message"].flagged

    relaxed = {r.metric: r.flagged for r in audit.stats(Thresholds(tool_failure_rate=0.25), token_budget=8192)}
    assert not relaxed["input tokens / message (max)"] and not relaxed["tool failure rate"]

    table = stats_table(audit.stats())
    assert [r.style for r in table.rows] == [None, "red", "red", None, "red", "red"]
    audit.close()


def test_stats_of_a_healthy_or_empty_log(tmp_path):
    audit = AuditLog(tmp_path / "a.sqlite")
    assert all(r.value is None and not r.flagged for r in audit.stats())
    fill_audit(audit, big=3000, tool_failures=1, completed=[True] * 3, latencies=[900, 1200, 2500])
    rows = audit.stats()
    assert not any(r.flagged for r in rows), rows
    text = render_text(stats_table(rows))
    assert "10.0%" in text and "> 3,277" in text
    audit.close()


# ------------------------------------------------------------------------------------------------ logs


def log_lines(fn, record) -> list[dict]:
    stream = io.StringIO()
    logger = logging.getLogger(f"harness.test_obs.{fn.__name__}")
    logger.propagate = False
    handler = configure_logging("DEBUG", stream, logger=logger.name)
    try:
        fn(logger, record)
    finally:
        logger.removeHandler(handler)
    return [json.loads(line) for line in stream.getvalue().splitlines()]


FAILED_429 = ToolOutcome(call_id="c2", name="search_products", args={"query": "headphones"}, status="error",
                         error_type="rate_limited", exception="RateLimitedError", error="429 Too Many Requests",
                         attempts=2, timings_ms={"validate_ms": 0.4, "call_ms": 2503.2})


def test_full_tool_log_keeps_class_args_attempts_and_phases():
    with capture_spans(), message_span("t1", "U001", 1):
        trace_id = current_trace_id()
        [line] = log_lines(TOOL_LOGGERS["full"], FAILED_429)
    assert line["level"] == "WARNING" and line["trace_id"] == trace_id and line["span_id"]
    assert line["tool"] == "search_products" and line["tool_args"] == {"query": "headphones"}
    assert line["exception"] == "RateLimitedError" and line["error_type"] == "rate_limited"
    assert line["attempts"] == 2
    assert line["timings_ms"] == {"validate_ms": 0.4, "call_ms": 2503.2}
    assert "RateLimitedError(rate_limited): 429 Too Many Requests" in line["message"]


def test_opaque_tool_log_says_only_failed_and_one_duration():
    [line] = log_lines(TOOL_LOGGERS["opaque"], FAILED_429)
    assert line["message"] == "ToolExecutionFailed (2504 ms)"
    assert line["duration_ms"] == pytest.approx(2503.6)
    assert "RateLimitedError" not in json.dumps(line) and "search_products" not in json.dumps(line)
    [ok] = log_lines(TOOL_LOGGERS["opaque"], {"status": "ok", "timings_ms": {"call_ms": 5.0}})
    assert ok["message"] == "ok (5 ms)" and ok["level"] == "INFO"


def test_json_formatter_extras_exceptions_and_idempotent_configure():
    stream = io.StringIO()
    logger = logging.getLogger("harness.test_obs.formatter")
    logger.propagate = False
    configure_logging("INFO", io.StringIO(), logger=logger.name)
    handler = configure_logging("INFO", stream, logger=logger.name)
    try:
        assert [h for h in logger.handlers if isinstance(h.formatter, JsonLogFormatter)] == [handler]
        logger.info("hello %s", "世界", extra={"order_id": "ORD-1", "level": "not a level"})
        try:
            raise KeyError("k")
        except KeyError:
            logger.exception("boom")
    finally:
        logger.removeHandler(handler)
    first, second = (json.loads(line) for line in stream.getvalue().splitlines())
    assert first["message"] == "hello 世界" and first["order_id"] == "ORD-1" and first["level"] == "INFO"
    assert first["trace_id"] is None and first["logger"] == "harness.test_obs.formatter"
    assert second["exc_type"] == "KeyError" and "Traceback" in second["exc"]
