"""Traces and structured logs: one trace per user message, a span per node, model call and tool call.

Nothing is recorded until ``setup_tracing`` is told where spans go (argument, or env ``HARNESS_TRACE`` =
comma list of ``console``, ``otlp``, ``file``). Until then every helper here is a no-op that opens no span
and calls no exporter, so the hooks can stay in the hot path.

The harness keeps its own ``TracerProvider`` and never installs the global one: an application or a test
that sets the global OpenTelemetry provider is left alone. Tests swap in their own provider with
``use_provider`` (or ``capture_spans``), which wins over ``setup_tracing`` while it is set. Spans still use
OpenTelemetry's context, so they nest under whatever span is current, across LangGraph's worker threads
(LangGraph copies the context into them) and across our own pools when ``bind_context`` wraps the task.
"""

from __future__ import annotations

import contextvars
import dataclasses
import functools
import json
import logging
import os
import sys
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

from langchain_core.runnables import RunnableConfig
from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    ConsoleSpanExporter,
    SimpleSpanProcessor,
    SpanExporter,
    SpanExportResult,
)
from opentelemetry.trace import INVALID_SPAN, NoOpTracer, Span, Status, StatusCode, Tracer

from lg_harness.errors import UsageError, status_code_of
from lg_harness.obs.logs import JsonLogFormatter, configure_logging  # noqa: F401 - re-exported
from lg_harness.obs.outcomes import call_outcome

ENV_VAR = "HARNESS_TRACE"
EXPORTERS = ("console", "otlp", "file")
SERVICE_NAME = "lg-harness"
TRACER_NAME = "lg_harness"
MESSAGE_CUT = 200  # exception.message length: enough to read the cause, short enough for any backend
_OFF_WORDS = frozenset({"", "none", "off", "0", "false", "no"})

log = logging.getLogger("harness.obs")
F = TypeVar("F", bound=Callable[..., Any])


class TracingConfigError(UsageError):
    """``HARNESS_TRACE`` or the exporters argument names something that cannot be set up."""


# ------------------------------------------------------------------------------------ provider state


@dataclass
class _Slot:
    provider: TracerProvider | None = None
    tracer: Tracer | None = None


_configured = _Slot()  # set by setup_tracing
_override = _Slot()  # set by use_provider (tests); wins while set
_NOOP_TRACER = NoOpTracer()
_state_lock = threading.Lock()


def _fill(slot: _Slot, provider: TracerProvider | None) -> None:
    slot.provider = provider
    slot.tracer = provider.get_tracer(TRACER_NAME) if provider is not None else None


def _active_tracer() -> Tracer | None:
    # Read without the lock: slots are swapped whole and a reader seeing the old tracer is harmless.
    return _override.tracer or _configured.tracer


def tracing_enabled() -> bool:
    """True when spans are recorded somewhere (a configured exporter or a provider set by a test)."""
    return _active_tracer() is not None


def get_tracer() -> Tracer:
    """The harness's tracer: the test override, else the configured provider's, else a no-op tracer."""
    return _active_tracer() or _NOOP_TRACER


def use_provider(provider: TracerProvider | None) -> TracerProvider | None:
    """Route harness spans to ``provider`` (``None`` removes the override); returns the previous override.

    The caller owns ``provider`` and shuts it down; ``setup_tracing`` never touches an override.
    """
    with _state_lock:
        previous = _override.provider
        _fill(_override, provider)
    return previous


@contextmanager
def capture_spans() -> Iterator[Any]:
    """Record harness spans in memory for the block; yields the ``InMemorySpanExporter``.

    Example:
        with capture_spans() as exporter:
            harness.send("t1", "where is ORD-10001?", "U001")
        names = [s.name for s in exporter.get_finished_spans()]
    """
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    previous = use_provider(provider)
    try:
        yield exporter
    finally:
        use_provider(previous)
        provider.shutdown()


# ------------------------------------------------------------------------------------------ setup


def trace_file(data_dir: str | Path) -> Path:
    """Where the ``file`` exporter writes: ``<data dir>/traces/spans.jsonl``."""
    return Path(data_dir) / "traces" / "spans.jsonl"


def resolve_exporters(exporters: Sequence[str] | None, default: Sequence[str] = ()) -> list[str]:
    """Exporter names from the argument, else ``HARNESS_TRACE``, else ``default``; validated, deduplicated.

    Raises:
        TracingConfigError: a name is not one of ``console``, ``otlp``, ``file``.
    """
    if exporters is None:
        env = os.environ.get(ENV_VAR)
        exporters = env.split(",") if env is not None else default
    names = [n.strip().lower() for n in exporters]
    names = list(dict.fromkeys(n for n in names if n not in _OFF_WORDS))
    unknown = [n for n in names if n not in EXPORTERS]
    if unknown:
        raise TracingConfigError(f"unknown trace exporter '{unknown[0]}' (from {ENV_VAR} or --trace); "
                                 f"valid: {', '.join(EXPORTERS)}, comma-separated, or 'none'")
    return names


def _otlp_exporter() -> SpanExporter:
    try:  # imported only when asked for: grpc is slow to import and most runs never export
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
    except ImportError as err:
        raise TracingConfigError("trace exporter 'otlp' needs the OTLP gRPC exporter: "
                                 "pip install opentelemetry-exporter-otlp-proto-grpc") from err
    return OTLPSpanExporter()  # endpoint, headers, TLS, timeout: the standard OTEL_EXPORTER_OTLP_* vars


def _processor(name: str, data_dir: Path | None) -> SpanProcessor:
    if name == "console":
        # stderr: stdout carries exactly one JSON document under --json.
        return SimpleSpanProcessor(ConsoleSpanExporter(out=sys.stderr))
    if name == "otlp":
        return BatchSpanProcessor(_otlp_exporter())
    if data_dir is None:
        raise TracingConfigError("trace exporter 'file' needs a data dir (spans go to <data dir>/traces)")
    # Synchronous on purpose: a CLI process may exit right after the message, and a line per span is cheap.
    return SimpleSpanProcessor(JsonlSpanExporter(trace_file(data_dir)))


def setup_tracing(data_dir: Path | None, exporters: Sequence[str] | None = None, *,
                  default: Sequence[str] = ()) -> TracerProvider | None:
    """Configure where harness spans go; replaces (and shuts down) the provider of an earlier call.

    Args:
        data_dir: The data dir; the ``file`` exporter writes ``traces/spans.jsonl`` under it.
        exporters: Names among ``console``, ``otlp``, ``file``; ``None`` reads ``HARNESS_TRACE``.
        default: Used when ``exporters`` is None and ``HARNESS_TRACE`` is unset (the CLI may pass
            ``("file",)`` so ``harness trace`` has something to show). ``HARNESS_TRACE=none`` still disables.

    Returns:
        The new provider, or None when nothing is configured (helpers are then no-ops).

    Raises:
        TracingConfigError: an unknown exporter name, ``file`` without a data dir, or ``otlp`` not installed.
    """
    names = resolve_exporters(exporters, default)
    processors = [_processor(n, Path(data_dir) if data_dir is not None else None) for n in names]
    provider = None
    if processors:
        provider = TracerProvider(resource=Resource.create({"service.name": SERVICE_NAME}))
        for p in processors:
            provider.add_span_processor(p)
    with _state_lock:
        old = _configured.provider
        _fill(_configured, provider)
    if old is not None:
        old.shutdown()
    return provider


def shutdown_tracing() -> None:
    """Flush and close the configured provider; helpers become no-ops (a test override stays)."""
    with _state_lock:
        old = _configured.provider
        _fill(_configured, None)
    if old is not None:
        old.shutdown()


# ---------------------------------------------------------------------------------------- file export


def _jsonable_attrs(attrs: Mapping[str, Any] | None) -> dict[str, Any]:
    return {k: list(v) if isinstance(v, tuple) else v for k, v in (attrs or {}).items()}


def span_to_dict(span: ReadableSpan) -> dict[str, Any]:
    """One finished span as the JSON object the ``file`` exporter writes (ids in hex, times in ns)."""
    ctx = span.get_span_context()
    if ctx is None:  # never for a span the SDK started and ended
        raise ValueError(f"span {span.name!r} has no span context")
    start, end = span.start_time or 0, span.end_time or 0
    return {
        "name": span.name,
        "trace_id": f"{ctx.trace_id:032x}",
        "span_id": f"{ctx.span_id:016x}",
        "parent_id": f"{span.parent.span_id:016x}" if span.parent else None,
        "kind": span.kind.name,
        "start_ns": start,
        "end_ns": end,
        "duration_ms": round((end - start) / 1e6, 3),
        "attributes": _jsonable_attrs(span.attributes),
        "events": [{"name": e.name, "ts_ns": e.timestamp, "attributes": _jsonable_attrs(e.attributes)}
                   for e in span.events],
        "status": {"code": span.status.status_code.name, "description": span.status.description},
    }


class JsonlSpanExporter(SpanExporter):
    """Appends finished spans to a JSON-lines file, one object per span (see ``span_to_dict``)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        data = "".join(json.dumps(span_to_dict(s), ensure_ascii=False, default=str) + "\n" for s in spans)
        try:
            # One O_APPEND write per batch: several CLI processes may share the file without interleaving lines.
            with self._lock:
                fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
                try:
                    os.write(fd, data.encode("utf-8"))
                finally:
                    os.close(fd)
        except OSError as err:
            log.warning("cannot write spans to %s: %s", self.path, err)  # tracing must never break a turn
            return SpanExportResult.FAILURE
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        return None

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


# ---------------------------------------------------------------------------------------- span helpers


@dataclass(frozen=True)
class MessageScope:
    """The user message being handled; lets the audit log fill thread and turn without extra plumbing."""

    thread_id: str
    user_id: str
    turn: int


_MESSAGE: contextvars.ContextVar[MessageScope | None] = contextvars.ContextVar("harness_message", default=None)


def current_message() -> MessageScope | None:
    """The scope opened by the innermost ``message_span`` (set even when tracing is off)."""
    return _MESSAGE.get()


def current_trace_id() -> str | None:
    """The current trace id as 32 hex digits, or None outside a recorded span."""
    ctx = trace.get_current_span().get_span_context()
    return f"{ctx.trace_id:032x}" if ctx.is_valid else None


def current_span_id() -> str | None:
    """The current span id as 16 hex digits, or None outside a recorded span."""
    ctx = trace.get_current_span().get_span_context()
    return f"{ctx.span_id:016x}" if ctx.is_valid else None


def _attr_value(value: Any) -> Any:
    if isinstance(value, str | bool | int | float):
        return value
    if isinstance(value, list | tuple):
        items = [_attr_value(v) for v in value if v is not None]
        # OpenTelemetry sequences must be homogeneous; mixed ones become strings.
        return items if len({type(i) for i in items}) <= 1 else [str(i) for i in items]
    return json.dumps(value, ensure_ascii=False, default=str)


def _attrs(values: Mapping[str, Any]) -> dict[str, Any]:
    return {k: _attr_value(v) for k, v in values.items() if v is not None}


def mark_error(span: Span, error_type: str, message: str) -> None:
    """Set ``error.type`` (the original class name), a cut ``exception.message`` and status ERROR."""
    if not span.is_recording():
        return
    cut = (message or "")[:MESSAGE_CUT]
    span.set_attributes({"error.type": error_type, "exception.message": cut})
    span.set_status(Status(StatusCode.ERROR, f"{error_type}: {cut}" if cut else error_type))


def _is_control_flow(exc: BaseException) -> bool:
    # LangGraph pauses (interrupt) and hands over by raising GraphBubbleUp subclasses: not failures.
    return any(cls.__name__ == "GraphBubbleUp" for cls in type(exc).__mro__)


def root_cause(exc: BaseException) -> BaseException:
    """The innermost exception of a ``raise ... from`` chain: what really failed under the wrappers."""
    seen = {id(exc)}
    while exc.__cause__ is not None and id(exc.__cause__) not in seen:
        exc = exc.__cause__
        seen.add(id(exc))
    return exc


def _record_exception(span: Span, exc: BaseException) -> None:
    if not span.is_recording():
        return
    if _is_control_flow(exc):
        span.add_event("graph.interrupt", {"type": type(exc).__name__})
        return
    # The harness wraps failures on purpose (ModelCallFailed, HarnessError for the CLI); the span names
    # what actually broke and keeps the wrapper beside it.
    cause = root_cause(exc)
    mark_error(span, type(cause).__name__, str(cause))
    if cause is not exc:
        span.set_attribute("harness.error.wrapper", type(exc).__name__)
    span.record_exception(exc)


# The no-op path hands out one shared null context: no generator, no span object, no context switch.
_NOOP_SPAN: AbstractContextManager[Span] = nullcontext(INVALID_SPAN)


@contextmanager
def _recording_span(tracer: Tracer, name: str, attributes: Mapping[str, Any], root: bool) -> Iterator[Span]:
    parent = otel_context.Context() if root else None
    # Exceptions are recorded here, not by the SDK, so error.type always names the original class.
    with tracer.start_as_current_span(name, context=parent, attributes=_attrs(attributes),
                                      record_exception=False, set_status_on_exception=False) as span:
        try:
            yield span
        except BaseException as exc:
            _record_exception(span, exc)
            raise


def _span(name: str, attributes: Mapping[str, Any], *, root: bool = False) -> AbstractContextManager[Span]:
    tracer = _active_tracer()
    if tracer is None:
        return _NOOP_SPAN
    return _recording_span(tracer, name, attributes, root)


@contextmanager
def message_span(thread_id: str, user_id: str | None, turn: int) -> Iterator[Span]:
    """The root span of one user message (a new trace even inside another span); yields the span.

    Also opens the ``current_message()`` scope, so audit rows recorded inside know their thread and turn.
    """
    token = _MESSAGE.set(MessageScope(thread_id, user_id or "", int(turn)))
    try:
        attrs = {"harness.span.kind": "message", "harness.thread_id": thread_id, "harness.user_id": user_id,
                 "harness.turn": int(turn), "gen_ai.conversation.id": thread_id}
        with _span("message", attrs, root=True) as span:
            yield span
    finally:
        _MESSAGE.reset(token)


def node_span(name: str) -> AbstractContextManager[Span]:
    """A graph node's run, nested under the current span (a context manager yielding the span)."""
    if _active_tracer() is None:
        return _NOOP_SPAN
    return _span(f"node {name}", {"harness.span.kind": "node", "harness.node": name})


class TracedNode(Protocol):
    """A node LangGraph calls as ``(state, config)``: the parameter names are part of the type, as LangGraph's
    ``add_node`` reads them."""

    def __call__(self, state: Any, config: RunnableConfig) -> Any: ...


def traced_node(name: str, node: Callable[[Any, RunnableConfig], Any]) -> TracedNode:
    """Wrap a ``(state, config)`` node so each run is a ``node_span``; LangGraph still passes ``config``."""

    # Typed RunnableConfig: LangGraph reads the annotation to decide whether to pass the config (and warns
    # about anything else).
    def run(state: Any, config: RunnableConfig) -> Any:
        with node_span(name):
            return node(state, config)

    run.__name__ = f"traced_{name}"
    return run


def model_span(model_name: str, operation: str = "chat", provider: str | None = None
               ) -> AbstractContextManager[Span]:
    """One model call (GenAI semantic conventions), a context manager yielding the span; after the call,
    ``record_model_response(span, reply)``."""
    if _active_tracer() is None:
        return _NOOP_SPAN
    attrs = {"harness.span.kind": "model", "gen_ai.operation.name": operation,
             "gen_ai.request.model": model_name, "gen_ai.provider.name": provider, "gen_ai.system": provider}
    return _span(f"{operation} {model_name}", attrs)


def model_identity(model: Any) -> tuple[str, str]:
    """``(model name, provider)`` of a LangChain chat model, for ``model_span``."""
    name = getattr(model, "model_name", None) or getattr(model, "model", None) or type(model).__name__
    try:
        llm_type = str(model._llm_type)
    except (AttributeError, NotImplementedError):
        llm_type = type(model).__name__
    lowered = llm_type.lower()
    provider = next((p for p in ("ollama", "openai", "anthropic") if p in lowered), llm_type)
    return str(name), provider


def set_model_attributes(span: Span, *, response_model: str | None = None, input_tokens: int | None = None,
                         output_tokens: int | None = None, finish_reasons: Sequence[str] | None = None) -> None:
    """Set the GenAI response attributes the caller knows; None values are skipped."""
    if not span.is_recording():
        return
    span.set_attributes(_attrs({
        "gen_ai.response.model": response_model,
        "gen_ai.usage.input_tokens": int(input_tokens) if input_tokens is not None else None,
        "gen_ai.usage.output_tokens": int(output_tokens) if output_tokens is not None else None,
        "gen_ai.response.finish_reasons": list(finish_reasons) if finish_reasons is not None else None,
    }))


def _finish_reasons(reply: Any, meta: Mapping[str, Any]) -> list[str]:
    # OpenAI says finish_reason, Ollama done_reason, Anthropic stop_reason.
    reason = meta.get("finish_reason") or meta.get("done_reason") or meta.get("stop_reason")
    if reason:
        return [str(reason)]
    return ["tool_calls" if getattr(reply, "tool_calls", None) else "stop"]


def record_model_response(span: Span, reply: Any) -> None:
    """Read usage, response model and finish reason from a LangChain ``AIMessage`` onto ``span``."""
    if not span.is_recording():
        return
    usage = getattr(reply, "usage_metadata", None) or {}
    meta = getattr(reply, "response_metadata", None) or {}
    set_model_attributes(span, response_model=meta.get("model_name") or meta.get("model"),
                         input_tokens=usage.get("input_tokens"), output_tokens=usage.get("output_tokens"),
                         finish_reasons=_finish_reasons(reply, meta))
    if getattr(reply, "tool_calls", None):
        span.set_attribute("harness.model.tool_calls", len(reply.tool_calls))


def tool_span(name: str, call_id: str | None) -> AbstractContextManager[Span]:
    """One tool call with all its attempts, a context manager yielding the span; after it,
    ``record_tool_outcome(span, outcome)``."""
    if _active_tracer() is None:
        return _NOOP_SPAN
    attrs = {"harness.span.kind": "tool", "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name,
             "gen_ai.tool.call.id": call_id}
    return _span(f"execute_tool {name}", attrs)


def outcome_dict(outcome: Any) -> dict[str, Any]:
    """A tool outcome as a dict: a ``ToolOutcome`` (without its result), a ``ToolCallRecord`` or a dict."""
    if isinstance(outcome, Mapping):
        return dict(outcome)
    if callable(getattr(outcome, "record", None)):
        return dict(outcome.record())
    if dataclasses.is_dataclass(outcome) and not isinstance(outcome, type):
        return dataclasses.asdict(outcome)
    return dict(vars(outcome))


def _status_code(data: Mapping[str, Any], outcome: Any) -> int | None:
    code = data.get("status_code") or data.get("http_status")
    if code:
        return int(code)
    cause = getattr(outcome, "cause", None)  # the executor keeps the original exception on the outcome
    return status_code_of(cause) if isinstance(cause, BaseException) else None


def record_tool_outcome(span: Span, outcome: Any) -> None:
    """Put a tool outcome on its span: name, call id, per-phase timings, HTTP status, status, attempts.

    Every ``*_ms`` phase becomes ``harness.tool.<phase>`` (``validate_ms``, ``call_ms``, ``parse_ms``,
    ``wait_ms``...). The HTTP status comes from ``status_code`` / ``http_status`` in the outcome, else from
    the original exception (``outcome.cause``) when it carries one. On failure ``error.type`` is the
    original exception class (``outcome.exception``, e.g. ``ValueError``), not the harness's error category,
    which goes to ``harness.tool.error_type``; the span status is ERROR. A call the harness held or blocked
    (``obs.outcomes``) is ``held`` or ``blocked``, not an error.
    """
    if not span.is_recording():
        return
    data = outcome_dict(outcome)
    status = data.get("status") or "ok"
    # held (a change waiting for the customer's yes) and blocked are the harness's own stops: named so, and
    # only a tool that failed marks its span as an error
    shown = call_outcome(status, data.get("error_type"))
    phases = {f"harness.tool.{k}": float(v) for k, v in (data.get("timings_ms") or {}).items()
              if k.endswith("_ms") and isinstance(v, int | float)}
    span.set_attributes(_attrs({
        "gen_ai.tool.name": data.get("name"),
        "gen_ai.tool.call.id": data.get("call_id") or data.get("id"),
        **phases,
        "http.response.status_code": _status_code(data, outcome),
        "harness.tool.status": shown,
        "harness.tool.attempts": data.get("attempts"),
        "harness.tool.fallback": data.get("fallback"),
    }))
    if status != "ok":
        span.set_attributes(_attrs({"harness.tool.error_type": data.get("error_type")}))
    if shown == "error":
        mark_error(span, data.get("exception") or data.get("error_type") or "ToolError", data.get("error") or "")


def span_event(name: str, **attrs: Any) -> None:
    """Add an event to the current span (``tool.retry``, ``guard.stop``, ``context.compress``, ``handoff``...)."""
    span = trace.get_current_span()
    if span.is_recording():
        span.add_event(name, _attrs(attrs))


def bind_context(fn: F) -> F:
    """``fn`` running in the caller's trace context, for pools (``pool.submit(bind_context(f), ...)``).

    ``ThreadPoolExecutor`` does not carry context into its threads, so without this a tool span opened in
    a worker would start a trace of its own. Returns ``fn`` unchanged when tracing is off.
    """
    if not tracing_enabled():
        return fn
    ctx = otel_context.get_current()

    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> Any:
        token = otel_context.attach(ctx)
        try:
            return fn(*args, **kwargs)
        finally:
            otel_context.detach(token)

    return run  # type: ignore[return-value]


# --------------------------------------------------------------------------------------------- logs

def total_ms(timings: Mapping[str, Any]) -> float:
    """Sum of the ``*_ms`` phases of a tool call."""
    return float(sum(v for k, v in timings.items() if k.endswith("_ms") and isinstance(v, int | float)))


def log_tool_call_full(logger: logging.Logger, record: Any) -> None:
    """Everything about a tool call: name, id, args, status, original error class and message, attempts,
    and per-phase timings (the ``custom-lightweight`` / ``harness`` style)."""
    d = outcome_dict(record)
    timings = {k: round(float(v), 3) for k, v in (d.get("timings_ms") or {}).items()}
    status = d.get("status") or "ok"
    # A change held for the customer's yes is the harness working, not a failure: logged as held, at INFO; a
    # call the harness blocked says so; only a tool that failed is an error.
    outcome = call_outcome(status, d.get("error_type"))
    args = json.dumps(d.get("args") or {}, ensure_ascii=False, sort_keys=True, default=str)
    phases = " ".join(f"{k}={v:.1f}" for k, v in timings.items())
    failure = "" if outcome == "ok" else f" {d.get('exception')}({d.get('error_type')}): {d.get('error')}"
    message = f"tool {d.get('name')} {args} {outcome}{failure} attempts={d.get('attempts', 0)} {phases}".rstrip()
    extra = {"tool": d.get("name"), "call_id": d.get("call_id") or d.get("id"), "tool_args": d.get("args"),
             "status": status, "outcome": outcome, "error_type": d.get("error_type"),
             "exception": d.get("exception"), "error": d.get("error"), "attempts": d.get("attempts"),
             "timings_ms": timings, "total_ms": round(total_ms(timings), 3)}
    logger.log(logging.INFO if outcome in ("ok", "held") else logging.WARNING, message, extra=extra)


def log_tool_call_opaque(logger: logging.Logger, record: Any) -> None:
    """What a heavyweight framework logs by default: ``ok`` or ``ToolExecutionFailed`` and one duration."""
    d = outcome_dict(record)
    word = "ok" if (d.get("status") or "ok") == "ok" else "ToolExecutionFailed"
    duration = round(total_ms(d.get("timings_ms") or {}), 3)
    logger.log(logging.INFO if word == "ok" else logging.ERROR, "%s (%.0f ms)", word, duration,
               extra={"outcome": word, "duration_ms": duration})


TOOL_LOGGERS: dict[str, Callable[[logging.Logger, Any], None]] = {
    "full": log_tool_call_full,
    "opaque": log_tool_call_opaque,
}
