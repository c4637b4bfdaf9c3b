"""Observability: traces (OpenTelemetry), JSON logs, the audit log and their terminal views.

Wiring recipe (who calls what):

- CLI start: ``setup_tracing(data_dir, default=("file",))`` (``HARNESS_TRACE`` = console, otlp, file, none
  wins) and ``configure_logging(level, sys.stderr)`` instead of ``logging.basicConfig``.
- ``Harness``: ``AuditLog.in_dir(data_dir)`` into ``resources["audit"]``; in ``_run``,
  ``with message_span(thread_id, user_id, turn):`` around the graph stream, ``current_trace_id()`` inside it
  for the result's ``trace_id``, then ``audit.record_message(...)``.
- ``build_graph``: ``graph.add_node(role, traced_node(role, node))``.
- ``call_model``: ``with model_span(*model_identity(deps.model)) as span:`` around the try/except, then
  ``record_model_response(span, reply)`` and ``audit.record_model(...)``. A wrapper raised ``from`` the
  original (``ModelCallFailed``, ``HarnessError``) is recorded as the original class.
- executor: ``with tool_span(name, call_id) as span:`` around ``run``'s body, then
  ``record_tool_outcome(span, outcome)``; ``span_event("tool.retry", attempt=..., wait_s=..., error_type=...)``
  before each backoff sleep; ``pool.submit(bind_context(self.run), ...)`` so worker-thread spans keep
  their parent.
- action node: ``TOOL_LOGGERS[knob](log, outcome)`` and ``audit.record_tool_outcome(outcome)`` per outcome.
- guards / memory / handoff: ``span_event("guard.stop", reason=...)`` and friends.
- ``harness trace``: ``span_tree(load_trace(data_dir, thread_id=T))``; stats: ``stats_table(audit.stats())``.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

# name -> module that defines it, imported on first use: a command that only logs (``harness history``)
# must not load OpenTelemetry and LangChain with the package.
_EXPORTS = {
    "AuditLog": "lg_harness.obs.audit",
    "DEFAULT_THRESHOLDS": "lg_harness.obs.audit",
    "Redactor": "lg_harness.obs.redact",
    "RegexRedactor": "lg_harness.obs.redact",
    "StatRow": "lg_harness.obs.audit",
    "Thresholds": "lg_harness.obs.audit",
    "default_redactor": "lg_harness.obs.redact",
    "JsonLogFormatter": "lg_harness.obs.logs",
    "configure_logging": "lg_harness.obs.logs",
    "load_trace": "lg_harness.obs.render",
    "span_tree": "lg_harness.obs.render",
    "stats_table": "lg_harness.obs.render",
    "JsonlSpanExporter": "lg_harness.obs.tracing",
    "MessageScope": "lg_harness.obs.tracing",
    "TOOL_LOGGERS": "lg_harness.obs.tracing",
    "TracingConfigError": "lg_harness.obs.tracing",
    "bind_context": "lg_harness.obs.tracing",
    "capture_spans": "lg_harness.obs.tracing",
    "current_message": "lg_harness.obs.tracing",
    "current_span_id": "lg_harness.obs.tracing",
    "current_trace_id": "lg_harness.obs.tracing",
    "get_tracer": "lg_harness.obs.tracing",
    "log_tool_call_full": "lg_harness.obs.tracing",
    "log_tool_call_opaque": "lg_harness.obs.tracing",
    "mark_error": "lg_harness.obs.tracing",
    "message_span": "lg_harness.obs.tracing",
    "model_identity": "lg_harness.obs.tracing",
    "model_span": "lg_harness.obs.tracing",
    "node_span": "lg_harness.obs.tracing",
    "outcome_dict": "lg_harness.obs.tracing",
    "record_model_response": "lg_harness.obs.tracing",
    "record_tool_outcome": "lg_harness.obs.tracing",
    "root_cause": "lg_harness.obs.tracing",
    "set_model_attributes": "lg_harness.obs.tracing",
    "setup_tracing": "lg_harness.obs.tracing",
    "shutdown_tracing": "lg_harness.obs.tracing",
    "span_event": "lg_harness.obs.tracing",
    "tool_span": "lg_harness.obs.tracing",
    "trace_file": "lg_harness.obs.tracing",
    "traced_node": "lg_harness.obs.tracing",
    "tracing_enabled": "lg_harness.obs.tracing",
    "use_provider": "lg_harness.obs.tracing",
}

if TYPE_CHECKING:
    from lg_harness.obs.audit import DEFAULT_THRESHOLDS, AuditLog, StatRow, Thresholds
    from lg_harness.obs.logs import (
        JsonLogFormatter,
        configure_logging,
    )
    from lg_harness.obs.redact import Redactor, RegexRedactor, default_redactor
    from lg_harness.obs.render import (
        load_trace,
        span_tree,
        stats_table,
    )
    from lg_harness.obs.tracing import (
        TOOL_LOGGERS,
        JsonlSpanExporter,
        MessageScope,
        TracingConfigError,
        bind_context,
        capture_spans,
        current_message,
        current_span_id,
        current_trace_id,
        get_tracer,
        log_tool_call_full,
        log_tool_call_opaque,
        mark_error,
        message_span,
        model_identity,
        model_span,
        node_span,
        outcome_dict,
        record_model_response,
        record_tool_outcome,
        root_cause,
        set_model_attributes,
        setup_tracing,
        shutdown_tracing,
        span_event,
        tool_span,
        trace_file,
        traced_node,
        tracing_enabled,
        use_provider,
    )

__all__ = [
    "AuditLog",
    "DEFAULT_THRESHOLDS",
    "JsonLogFormatter",
    "JsonlSpanExporter",
    "MessageScope",
    "Redactor",
    "RegexRedactor",
    "StatRow",
    "TOOL_LOGGERS",
    "Thresholds",
    "TracingConfigError",
    "bind_context",
    "capture_spans",
    "configure_logging",
    "current_message",
    "current_span_id",
    "current_trace_id",
    "default_redactor",
    "get_tracer",
    "load_trace",
    "log_tool_call_full",
    "log_tool_call_opaque",
    "mark_error",
    "message_span",
    "model_identity",
    "model_span",
    "node_span",
    "outcome_dict",
    "record_model_response",
    "record_tool_outcome",
    "root_cause",
    "set_model_attributes",
    "setup_tracing",
    "shutdown_tracing",
    "span_event",
    "span_tree",
    "stats_table",
    "tool_span",
    "trace_file",
    "traced_node",
    "tracing_enabled",
    "use_provider",
]


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(_EXPORTS[name]), name)
    globals()[name] = value
    return value
