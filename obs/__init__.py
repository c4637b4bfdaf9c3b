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

from lg_harness.obs.audit import (
    DEFAULT_THRESHOLDS,
    AuditLog,
    Redactor,
    RegexRedactor,
    StatRow,
    Thresholds,
    default_redactor,
)
from lg_harness.obs.render import load_trace, span_tree, stats_table
from lg_harness.obs.tracing import (
    TOOL_LOGGERS,
    JsonLogFormatter,
    JsonlSpanExporter,
    MessageScope,
    TracingConfigError,
    bind_context,
    capture_spans,
    configure_logging,
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
    "DEFAULT_THRESHOLDS", "TOOL_LOGGERS", "AuditLog", "JsonLogFormatter", "JsonlSpanExporter", "MessageScope",
    "Redactor", "RegexRedactor", "StatRow", "Thresholds", "TracingConfigError", "bind_context", "capture_spans",
    "configure_logging", "current_message", "current_span_id", "current_trace_id", "default_redactor", "get_tracer",
    "load_trace", "log_tool_call_full", "log_tool_call_opaque", "mark_error", "message_span", "model_identity",
    "model_span", "node_span", "outcome_dict", "record_model_response", "record_tool_outcome", "root_cause", "set_model_attributes",
    "setup_tracing", "shutdown_tracing", "span_event", "span_tree", "stats_table", "tool_span", "trace_file",
    "traced_node", "tracing_enabled", "use_provider",
]
