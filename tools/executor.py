"""Run validated tool calls with deadlines and classified retries.

Retry policy by error class (tools/errors.py): transient and timeout back off 1 s, 2 s, 4 s (at most 3
retries); rate-limited waits Retry-After then retries once; validation and business errors never retry.
``sleep`` and ``clock`` are injected so tests use a fake clock and nothing really waits.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import asdict, dataclass, field
from typing import Any

import pydantic

from tools.context import ToolContext
from tools.errors import (
    RateLimitedError,
    ToolError,
    ToolTimeoutError,
    TransientError,
    ValidationError,
)
from tools.registry import ToolRegistry, ToolSpec


@dataclass(frozen=True)
class RetryPolicy:
    backoff: tuple[float, ...] = (1.0, 2.0, 4.0)
    rate_limit_retries: int = 1


@dataclass
class ToolOutcome:
    """What happened to one tool call; ``error`` keeps the original exception's class and message."""

    call_id: str
    name: str
    args: dict[str, Any]
    status: str = "ok"  # ok | error
    result: Any = None
    error_type: str | None = None
    error: str | None = None
    exception: str | None = None
    attempts: int = 0
    timings_ms: dict[str, float] = field(default_factory=dict)

    def content(self) -> str:
        """The text the model reads. Errors are labelled so they cannot pass for data."""
        if self.status == "ok":
            return json.dumps(self.result, ensure_ascii=False, separators=(",", ":"), default=str)
        return json.dumps({"error": {"type": self.error_type, "message": self.error}}, ensure_ascii=False)

    def record(self) -> dict[str, Any]:
        data = asdict(self)
        data.pop("result")
        return data


def format_validation_error(name: str, err: pydantic.ValidationError) -> str:
    parts = []
    for e in err.errors():
        loc = ".".join(str(p) for p in e["loc"]) or "(arguments)"
        parts.append(f"{loc}: {e['msg']}" + (f" (got {e['input']!r})" if e["type"] != "missing" else ""))
    return f"invalid arguments for {name}: " + "; ".join(parts)


class ToolExecutor:
    """Validates and runs tool calls from one model turn, independent calls concurrently."""

    def __init__(self, registry: ToolRegistry, policy: RetryPolicy | None = None, *,
                 sleep: Callable[[float], None] = time.sleep, clock: Callable[[], float] = time.perf_counter,
                 max_concurrency: int = 5) -> None:
        self.registry = registry
        self.policy = policy or RetryPolicy()
        self.sleep = sleep
        self.clock = clock
        self.max_concurrency = max_concurrency

    def validate(self, name: str, args: Any) -> tuple[ToolSpec, dict[str, Any]]:
        spec = self.registry.get(name)
        if spec is None:
            known = ", ".join(sorted(self.registry.names()))
            raise ValidationError(f"unknown tool '{name}'; available tools: {known}")
        if not isinstance(args, dict):
            raise ValidationError(f"arguments for {name} must be a JSON object, got {type(args).__name__}")
        try:
            parsed = spec.args_model.model_validate(args)
        except pydantic.ValidationError as err:
            raise ValidationError(format_validation_error(name, err)) from err
        return spec, parsed.model_dump()

    def run(self, call: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
        outcome = ToolOutcome(call_id=call.get("id") or "", name=call.get("name", ""), args=call.get("args") or {})
        start = self.clock()
        try:
            spec, args = self.validate(outcome.name, outcome.args)
        except ValidationError as err:
            return self._fail(outcome, err, start, "validate_ms")
        outcome.timings_ms["validate_ms"] = (self.clock() - start) * 1000
        return self._call_with_retries(spec, args, ctx, outcome)

    def run_many(self, calls: Sequence[dict[str, Any]], ctx_for: Callable[[dict[str, Any]], ToolContext]
                 ) -> list[ToolOutcome]:
        """Run calls concurrently (bounded); results come back in call order, matched by id."""
        if len(calls) <= 1:
            return [self.run(c, ctx_for(c)) for c in calls]
        with ThreadPoolExecutor(max_workers=min(self.max_concurrency, len(calls))) as pool:
            futures = [pool.submit(self.run, c, ctx_for(c)) for c in calls]
            return [f.result() for f in futures]

    def _call_with_retries(self, spec: ToolSpec, args: dict[str, Any], ctx: ToolContext,
                           outcome: ToolOutcome) -> ToolOutcome:
        transient_left = list(self.policy.backoff)
        rate_left = self.policy.rate_limit_retries
        call_start = self.clock()
        while True:
            outcome.attempts += 1
            try:
                outcome.result = self._invoke(spec, args, ctx)
                outcome.timings_ms["call_ms"] = (self.clock() - call_start) * 1000
                return outcome
            except RateLimitedError as err:
                if rate_left <= 0:
                    return self._fail(outcome, err, call_start, "call_ms")
                rate_left -= 1
                self.sleep(max(err.retry_after, 0.0))
            except TransientError as err:
                if not transient_left:
                    return self._fail(outcome, err, call_start, "call_ms")
                self.sleep(transient_left.pop(0))
            except Exception as err:  # noqa: BLE001 - classified below, original kept for logs
                return self._fail(outcome, err, call_start, "call_ms")

    def _invoke(self, spec: ToolSpec, args: dict[str, Any], ctx: ToolContext) -> Any:
        call_args = (ctx,) if spec.wants_context else ()
        fn = spec.fn

        def target() -> Any:
            if inspect.iscoroutinefunction(fn):
                # A fresh loop in this worker thread works whether or not the caller already runs one.
                return asyncio.run(fn(*call_args, **args))
            return fn(*call_args, **args)

        pool = ThreadPoolExecutor(max_workers=1)
        future = pool.submit(target)
        try:
            return future.result(timeout=spec.timeout)
        except FutureTimeout as err:
            raise ToolTimeoutError(f"{spec.name} did not answer within {spec.timeout:g} s") from err
        finally:
            pool.shutdown(wait=False)

    def _fail(self, outcome: ToolOutcome, err: BaseException, start: float, timing: str) -> ToolOutcome:
        outcome.status = "error"
        outcome.error_type = err.error_type if isinstance(err, ToolError) else "internal"
        outcome.exception = type(err).__name__
        outcome.error = str(err) or type(err).__name__
        outcome.timings_ms[timing] = (self.clock() - start) * 1000
        return outcome
