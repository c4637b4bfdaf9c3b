"""The audit log: every model input and output and every tool call, in SQLite in the data dir.

Spans say how long things took; the audit log keeps what was said, so a bad answer can be traced back to
the exact context the model saw. Rows carry thread, turn and trace id (filled from ``message_span``'s scope
when the caller does not pass them), so ``harness trace`` and the audit rows of one message line up.

Personal data is masked before a row is written (``Redactor``: phone numbers, also national ones of the
``PHONE_REGIONS`` read with Google's libphonenumber, emails (spelled out, spaced out, internationalised), street
addresses in English (lower case too) and Chinese, card numbers in any grouping by Luhn's check, IBANs by their
mod-97 check, national ids; the formats are listed in ``PII_FORMATS``; ids are never rewritten, see
``redact_value``): the audit file never holds the original,
encrypted or not, so a copied data dir or a leaked backup exposes no contact details. ``export`` applies the
redactor again on the way out (a custom one may mask more). ``stats`` turns the log
into the handful of numbers that say whether a deployment is healthy, each flagged against a threshold.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import sqlite3
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from lg_harness.obs.outcomes import HARNESS_STOPS, call_outcome  # noqa: F401 - re-exported
from lg_harness.obs.redact import (
    PII_FORMATS,
    Redactor,
    default_redactor,
    redact_value,
)
from lg_harness.obs.tracing import current_message, current_trace_id, outcome_dict, total_ms

AUDIT_FILE = "audit.sqlite"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS calls (
    id INTEGER PRIMARY KEY,
    ts TEXT NOT NULL,
    thread_id TEXT,
    turn INTEGER,
    trace_id TEXT,
    kind TEXT NOT NULL CHECK (kind IN ('model', 'tool')),
    name TEXT,
    input TEXT,
    output TEXT,
    input_tokens INTEGER,
    output_tokens INTEGER,
    duration_ms REAL,
    status TEXT NOT NULL,
    error_type TEXT
);
CREATE INDEX IF NOT EXISTS calls_by_message ON calls (thread_id, turn);
CREATE TABLE IF NOT EXISTS messages (
    id INTEGER PRIMARY KEY,
    ts TEXT NOT NULL,
    thread_id TEXT NOT NULL,
    turn INTEGER NOT NULL,
    trace_id TEXT,
    completed INTEGER NOT NULL,
    rounds INTEGER,
    latency_ms REAL,
    input_tokens INTEGER
);
CREATE INDEX IF NOT EXISTS messages_by_thread ON messages (thread_id, turn);
CREATE TABLE IF NOT EXISTS desk_actions (
    id INTEGER PRIMARY KEY,
    ts TEXT NOT NULL,
    agent TEXT NOT NULL,
    action TEXT NOT NULL,
    thread_id TEXT NOT NULL,
    detail TEXT
);
CREATE INDEX IF NOT EXISTS desk_actions_by_thread ON desk_actions (thread_id, id);
"""

# ---------------------------------------------------------------------------------------- serialising


def _message_dict(message: Any) -> dict[str, Any]:
    data = {"type": message.type, "content": to_jsonable(message.content)}
    for attr in ("name", "tool_calls", "tool_call_id", "status"):
        value = getattr(message, attr, None)
        if value:
            data[attr] = to_jsonable(value)
    return data


def to_jsonable(value: Any) -> Any:
    """A JSON-ready copy: LangChain messages as ``{type, content, tool_calls...}``, dataclasses and pydantic
    models as dicts, anything else unknown as its ``str``."""
    if value is None or isinstance(value, str | int | float | bool):
        return value
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [to_jsonable(v) for v in value]
    if hasattr(value, "type") and hasattr(value, "content"):  # a LangChain message, without importing it
        return _message_dict(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return to_jsonable(dataclasses.asdict(value))
    if callable(dump := getattr(value, "model_dump", None)):
        return to_jsonable(dump())
    return str(value)


def _dump(value: Any) -> str:
    return json.dumps(to_jsonable(value), ensure_ascii=False)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


# --------------------------------------------------------------------------------------------- stats


@dataclass(frozen=True)
class Thresholds:
    """Where each audit statistic starts to be a problem."""

    token_budget: int = 4096  # input tokens a message may use; flagged above token_budget_share of it
    token_budget_share: float = 0.8
    tool_failure_rate: float = 0.10
    model_calls_per_message: float = 10.0
    task_completion: float = 0.85  # flagged below
    p99_latency_s: float = 30.0


DEFAULT_THRESHOLDS = Thresholds()


@dataclass(frozen=True)
class StatRow:
    """One statistic: its value (None without data), the threshold, and whether it crosses it.

    ``rule`` is ``">"`` (flagged above the threshold) or ``"<"`` (flagged below); ``unit`` is one of
    ``tokens``, ``ratio``, ``calls``, ``s``.
    """

    metric: str
    value: float | None
    threshold: float
    flagged: bool
    rule: str = ">"
    unit: str = ""


def _row(metric: str, value: float | None, threshold: float, rule: str, unit: str) -> StatRow:
    crossed = value is not None and (value > threshold if rule == ">" else value < threshold)
    return StatRow(metric, value, threshold, crossed, rule, unit)


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def p99(values: Sequence[float]) -> float | None:
    """The 99th percentile by nearest rank (with under 100 values, the largest)."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(math.ceil(0.99 * len(ordered)) - 1, 0)]


# ----------------------------------------------------------------------------------------- audit log


class AuditLog:
    """Model and tool calls, and one row per user message, in one SQLite file; safe across threads.

    Example:
        audit = AuditLog.in_dir(data_dir)
        audit.record_model("sim", messages, reply, duration_ms=812.0)     # inside message_span: scope filled
        rows = audit.export(thread_id="t1")                                # redacted
    """

    def __init__(self, path: str | Path, redactor: Redactor = default_redactor) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.redactor = redactor
        self._lock = threading.Lock()
        # Tool calls may be recorded from executor threads; the lock serialises use of the one connection.
        self._conn = sqlite3.connect(str(self.path), check_same_thread=False, timeout=30)
        self._conn.row_factory = sqlite3.Row
        with self._lock, self._conn:
            self._conn.execute("PRAGMA journal_mode=WAL")  # the CLI reads while another process writes
            self._conn.execute("PRAGMA synchronous=NORMAL")  # a commit per call: see graphs.storage
            self._conn.executescript(_SCHEMA)

    @classmethod
    def in_dir(cls, data_dir: str | Path, redactor: Redactor = default_redactor) -> AuditLog:
        """The audit log of a data dir: ``<data dir>/audit.sqlite``."""
        return cls(Path(data_dir) / AUDIT_FILE, redactor)

    def warm(self) -> None:
        """Run the redactor once on every documented format (a harness opening, not a customer's message):
        libphonenumber compiles its per-region patterns on first use, 2-3 ms each."""
        for _, _, example in PII_FORMATS:
            self.redactor(example)

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def __enter__(self) -> AuditLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- writing

    @staticmethod
    def _scope(thread_id: str | None, turn: int | None, trace_id: str | None) -> tuple[str | None, int | None,
                                                                                       str | None]:
        scope = current_message()
        if scope is not None:
            thread_id = scope.thread_id if thread_id is None else thread_id
            turn = scope.turn if turn is None else turn
        return thread_id, turn, trace_id or current_trace_id()

    def _masked(self, value: Any) -> str:
        """The JSON text to store: personal data masked before it reaches the disk (no original is kept)."""
        return json.dumps(redact_value(to_jsonable(value), self._redact_text), ensure_ascii=False)

    @functools.cached_property
    def _redact_text(self) -> Redactor:
        # Each model call's input repeats the conversation so far: every string is masked once, not per call
        # (a redactor is a function of the text).
        return functools.lru_cache(maxsize=16384)(self.redactor)

    def _insert(self, table: str, row: dict[str, Any]) -> int:
        cols = ", ".join(row)
        marks = ", ".join("?" for _ in row)
        with self._lock, self._conn:
            cur = self._conn.execute(f"INSERT INTO {table} ({cols}) VALUES ({marks})", tuple(row.values()))
        return int(cur.lastrowid or 0)

    def record_model(self, name: str, input: Any, output: Any, *, input_tokens: int | None = None,
                     output_tokens: int | None = None, duration_ms: float = 0.0, status: str = "ok",
                     error_type: str | None = None, thread_id: str | None = None, turn: int | None = None,
                     trace_id: str | None = None) -> int:
        """Store one model call.

        Args:
            name: The model's name.
            input: What the model was sent (messages, and the offered tool names if useful).
            output: Its reply (an ``AIMessage``), or None when the call failed.
            input_tokens: Defaults to the reply's ``usage_metadata``.
            output_tokens: Defaults to the reply's ``usage_metadata``.
            duration_ms: Wall time of the call.
            status: ``ok`` or ``error``.
            error_type: The original exception class on failure.
            thread_id: Defaults to the enclosing ``message_span``'s thread.
            turn: Defaults to the enclosing ``message_span``'s turn.
            trace_id: Defaults to the current trace.

        Returns:
            The row id.
        """
        usage = getattr(output, "usage_metadata", None) or {}
        thread_id, turn, trace_id = self._scope(thread_id, turn, trace_id)
        return self._insert("calls", {
            "ts": _now(), "thread_id": thread_id, "turn": turn, "trace_id": trace_id, "kind": "model",
            "name": name, "input": self._masked(input), "output": self._masked(output),
            "input_tokens": int(input_tokens if input_tokens is not None else usage.get("input_tokens", 0)),
            "output_tokens": int(output_tokens if output_tokens is not None else usage.get("output_tokens", 0)),
            "duration_ms": float(duration_ms), "status": status, "error_type": error_type})

    def record_tool(self, name: str, input: Any, output: Any, *, duration_ms: float = 0.0, status: str = "ok",
                    error_type: str | None = None, thread_id: str | None = None, turn: int | None = None,
                    trace_id: str | None = None) -> int:
        """Store one tool call: ``input`` its arguments, ``output`` its result or error; scope as in
        ``record_model``. Returns the row id."""
        thread_id, turn, trace_id = self._scope(thread_id, turn, trace_id)
        return self._insert("calls", {
            "ts": _now(), "thread_id": thread_id, "turn": turn, "trace_id": trace_id, "kind": "tool",
            "name": name, "input": self._masked(input), "output": self._masked(output), "input_tokens": None,
            "output_tokens": None, "duration_ms": float(duration_ms), "status": status, "error_type": error_type})

    def record_tool_outcome(self, outcome: Any, result: Any = None, **scope: Any) -> int:
        """Store a ``ToolOutcome`` (or its record dict): the original exception class as ``error_type``.

        ``ToolOutcome.record()`` drops the result, so pass ``result`` (or the outcome object itself, whose
        ``result`` is read) to keep what the tool returned.
        """
        data = outcome_dict(outcome)
        status = call_outcome(data.get("status"), data.get("error_type"))
        ok = status == "ok"
        if ok:
            output = result if result is not None else getattr(outcome, "result", data.get("result"))
        else:
            # The log record cuts the error short; the audit keeps the outcome's full message.
            message = getattr(outcome, "error", None) or data.get("error")
            output = {"error": {"type": data.get("error_type"), "class": data.get("exception"), "message": message}}
        return self.record_tool(data.get("name") or "", data.get("args") or {}, output,
                                duration_ms=total_ms(data.get("timings_ms") or {}), status=status,
                                error_type=None if ok else (data.get("exception") or data.get("error_type")), **scope)

    def record_message(self, thread_id: str, turn: int, completed: bool, rounds: int, latency_ms: float,
                       input_tokens: int, *, trace_id: str | None = None) -> int:
        """Store the outcome of one user message (one row per message; a later row for it wins)."""
        return self._insert("messages", {
            "ts": _now(), "thread_id": thread_id, "turn": int(turn), "trace_id": trace_id or current_trace_id(),
            "completed": int(bool(completed)), "rounds": int(rounds), "latency_ms": float(latency_ms),
            "input_tokens": int(input_tokens)})

    # -- reading

    MARK = "?"  # the driver's parameter placeholder

    def _select(self, sql: str, thread_id: str | None, kind: str | None = None) -> list[Any]:
        """Run ``sql`` with ``{where}`` filled by the optional thread and call-kind filters."""
        conds, params = [], []
        if thread_id is not None:
            conds.append(f"thread_id = {self.MARK}")
            params.append(thread_id)
        if kind is not None:
            conds.append(f"kind = {self.MARK}")
            params.append(kind)
        where = (" WHERE " + " AND ".join(conds)) if conds else ""
        return self._fetch(sql.format(where=where), params)

    def _fetch(self, sql: str, params: list[Any]) -> list[Any]:
        with self._lock:
            return self._conn.execute(sql, params).fetchall()

    def export(self, thread_id: str | None = None, redact: bool = True, *,
               redactor: Redactor | None = None) -> list[dict[str, Any]]:
        """Model and tool calls in the order they happened, ``input``/``output`` parsed from JSON.

        Args:
            thread_id: Only this thread's calls; None for all.
            redact: Mask personal data in every string of ``input`` and ``output``.
            redactor: Overrides the log's redactor for this export.
        """
        rows = self._select("SELECT * FROM calls{where} ORDER BY id", thread_id)
        mask = redactor or self.redactor
        out = []
        for row in rows:
            item = dict(row)
            for key in ("input", "output"):
                value = json.loads(item[key]) if item[key] is not None else None
                item[key] = redact_value(value, mask) if redact else value
            out.append(item)
        return out

    def messages(self, thread_id: str | None = None) -> list[dict[str, Any]]:
        """The per-message rows, oldest first."""
        return [dict(r) for r in self._select("SELECT * FROM messages{where} ORDER BY id", thread_id)]

    def _per_message(self, thread_id: str | None) -> list[dict[str, Any]]:
        """Tokens, model calls, completion and latency per (thread, turn).

        Model-call rows win for tokens and calls (they are what the model really read); a message without
        any falls back to the figures its ``record_message`` row carries.
        """
        merged: dict[tuple[Any, Any], dict[str, Any]] = {}
        for m in self.messages(thread_id):  # later rows for the same message overwrite earlier ones
            merged[(m["thread_id"], m["turn"])] = {"input_tokens": m["input_tokens"] or 0, "calls": m["rounds"] or 0,
                                                   "completed": bool(m["completed"]), "latency_ms": m["latency_ms"]}
        sql = ("SELECT thread_id, turn, SUM(input_tokens) AS tokens, COUNT(*) AS calls FROM calls{where}"
               " GROUP BY thread_id, turn")
        model_rows = self._select(sql, thread_id, kind="model")
        for r in model_rows:
            if r["thread_id"] is None and r["turn"] is None:
                continue  # recorded outside any message: cannot be charged to one
            entry = merged.setdefault((r["thread_id"], r["turn"]), {"completed": None, "latency_ms": None})
            entry.update(input_tokens=r["tokens"] or 0, calls=r["calls"])
        return list(merged.values())

    def _tool_failure_rate(self, thread_id: str | None) -> float | None:
        """Failed calls among those that reached a tool: the harness's own holds and blocks are not failures."""
        sql = ("SELECT COUNT(*) AS total, COALESCE(SUM(CASE WHEN status = 'error' THEN 1 ELSE 0 END), 0) AS failed"
               " FROM calls{where} AND status NOT IN ('held', 'blocked')")
        row = self._select(sql, thread_id, kind="tool")[0]
        return row["failed"] / row["total"] if row["total"] else None

    def harness_stops(self, thread_id: str | None = None) -> dict[str, Any]:
        """Tool calls the harness held (a change awaiting the customer's yes) or blocked (a repeat, a tool not
        offered, a forbidden one, an invented argument), counted apart from tool failures, with the error
        classes behind them: ``{"held": n, "blocked": n, "by_class": {"DuplicateCall": n, ...}}``."""
        sql = ("SELECT status, COALESCE(error_type, '') AS cls, COUNT(*) AS n FROM calls{where}"
               " AND status IN ('held', 'blocked') GROUP BY status, error_type ORDER BY status, error_type")
        out: dict[str, Any] = {"held": 0, "blocked": 0, "by_class": {}}
        for row in self._select(sql, thread_id, kind="tool"):
            out[row["status"]] += row["n"]
            out["by_class"][row["cls"]] = out["by_class"].get(row["cls"], 0) + row["n"]
        return out

    # -- the desk's actions

    def record_desk(self, agent: str, action: str, thread_id: str, detail: Any = None) -> int:
        """Store one action of a human agent at the desk (take, answer, release, fork) under their identity;
        ``detail`` (an answer's text, a checkpoint id) is masked like every other row."""
        return self._insert("desk_actions", {"ts": _now(), "agent": agent, "action": action, "thread_id": thread_id,
                                             "detail": None if detail is None else self._masked(detail)})

    def desk_actions(self, thread_id: str | None = None) -> list[dict[str, Any]]:
        """The desk's actions, oldest first, ``detail`` parsed from JSON."""
        rows = self._fetch("SELECT * FROM desk_actions" + (f" WHERE thread_id = {self.MARK}" if thread_id else "")
                           + " ORDER BY id", [thread_id] if thread_id else [])
        return [{**dict(r), "detail": json.loads(r["detail"]) if r["detail"] is not None else None} for r in rows]

    def stats(self, thresholds: Thresholds = DEFAULT_THRESHOLDS, *, token_budget: int | None = None,
              thread_id: str | None = None) -> list[StatRow]:
        """Health figures from the log, each flagged against ``thresholds``.

        Args:
            thresholds: Where each figure becomes a problem.
            token_budget: Overrides ``thresholds.token_budget`` (input tokens per message).
            thread_id: Only this thread; None for the whole log.

        Returns:
            Rows for input tokens per message (mean, max), tool failure rate, model calls per message,
            task completion and p99 latency per message; ``value`` is None where there is no data.
        """
        t = thresholds
        budget = (token_budget or t.token_budget) * t.token_budget_share
        per = self._per_message(thread_id)
        tokens = [float(m["input_tokens"]) for m in per]
        calls = [float(m["calls"]) for m in per]
        done = [m["completed"] for m in per if m["completed"] is not None]
        latency = [m["latency_ms"] / 1000 for m in per if m["latency_ms"] is not None]
        return [
            _row("input tokens / message (mean)", _mean(tokens), budget, ">", "tokens"),
            _row("input tokens / message (max)", max(tokens) if tokens else None, budget, ">", "tokens"),
            _row("tool failure rate", self._tool_failure_rate(thread_id), t.tool_failure_rate, ">", "ratio"),
            _row("model calls / message", _mean(calls), t.model_calls_per_message, ">", "calls"),
            _row("task completion", _mean([float(d) for d in done]), t.task_completion, "<", "ratio"),
            _row("latency p99 / message", p99(latency), t.p99_latency_s, ">", "s"),
        ]
