"""JSON log lines for every harness process, without loading the tracing stack.

``configure_logging`` is what every CLI command calls first; tracing (OpenTelemetry, LangChain's run
context) is imported only by the commands that run messages, and once it is, each line carries the
current trace and span ids.
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime
from typing import Any

_STD_RECORD_KEYS = frozenset(vars(logging.LogRecord("", 0, "", 0, "", (), None))) | {"message", "asctime"}
_HANDLER_MARK = "_harness_json_handler"


class JsonLogFormatter(logging.Formatter):
    """One JSON object per line: ts, level, logger, message, trace_id, span_id, then any ``extra`` fields."""

    def format(self, record: logging.LogRecord) -> str:
        extras = {k: v for k, v in vars(record).items() if k not in _STD_RECORD_KEYS and not k.startswith("_")}
        data: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            # A record logged outside any span (another thread) may carry the ids as extras.
            "trace_id": _current("current_trace_id") or extras.pop("trace_id", None),
            "span_id": _current("current_span_id") or extras.pop("span_id", None),
        }
        for key, value in extras.items():
            data.setdefault(key, value)  # the fixed fields stay reliable even if an extra reuses a name
        if record.exc_info and record.exc_info[0] is not None:
            data["exc_type"] = record.exc_info[0].__name__
            data["exc"] = self.formatException(record.exc_info)
        return json.dumps(data, ensure_ascii=False, default=str)


def configure_logging(level: int | str = "INFO", stream: Any = None, logger: str | None = None) -> logging.Handler:
    """Send ``logger`` (root by default) to ``stream`` (stderr by default) as JSON lines.

    Calling it again replaces the handler it installed before instead of adding a second one.

    Returns:
        The installed handler.
    """
    target = logging.getLogger(logger)
    for handler in list(target.handlers):
        if getattr(handler, _HANDLER_MARK, False):
            target.removeHandler(handler)
    handler = logging.StreamHandler(stream if stream is not None else sys.stderr)
    setattr(handler, _HANDLER_MARK, True)
    handler.setFormatter(JsonLogFormatter())
    target.addHandler(handler)
    target.setLevel(level.upper() if isinstance(level, str) else level)
    return handler


def _current(getter: str) -> str | None:
    """The current span's id, if tracing is loaded at all (no span can exist before it is)."""
    tracing = sys.modules.get("lg_harness.obs.tracing")
    return getattr(tracing, getter)() if tracing is not None else None
