"""A heavyweight framework's tool-execution defaults, rebuilt for the ``framework-default`` design.

Same interface as :class:`tools.executor.ToolExecutor`, different behaviour, on purpose:

- no argument validation before the call beyond what Python itself raises (a missing or unknown keyword);
- every failure is wrapped into one ``ToolExecutionFailed`` (error_type ``tool_execution_failed``): the
  original class is hidden, so nothing downstream can tell a 429 from a typo in an argument;
- every failure is retried blindly, up to 3 times, after a fixed short delay (through the injected
  ``sleep``), even a 429 (its Retry-After is ignored) and a validation error;
- one total duration in the log (``timings_ms == {"total_ms": ...}``), no per-phase timings;
- no idempotency key is added: the context goes to the tool as the caller built it.

It exists to be measured against the classified executor, not to be used in production.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from lg_harness.tools.context import ToolContext
from lg_harness.tools.errors import ToolExecutionFailed
from lg_harness.tools.executor import DeadlineWorkers, RetryPolicy, ToolOutcome, invoke_tool, parse_args
from lg_harness.tools.registry import ToolRegistry, ToolSpec


class FrameworkExecutor:
    """Runs tool calls the way a framework does with its defaults: wrap every error, retry blindly.

    Args:
        registry: The tools.
        policy: Accepted for interface parity with ``ToolExecutor``; ignored (no classified retries here).
        sleep: Injected wait, so tests do not really sleep.
        clock: Injected clock for the one total duration.
        max_concurrency: Parallel calls at once in ``run_many``.
        max_retries: Blind retries after the first attempt.
        retry_delay: Fixed wait before each retry, whatever the error was.
        workers: Threads that run attempts under a tool's deadline (a runtime's, else the executor's own).
    """

    def __init__(self, registry: ToolRegistry, policy: RetryPolicy | None = None, *,
                 sleep: Callable[[float], None] = time.sleep, clock: Callable[[], float] = time.perf_counter,
                 max_concurrency: int = 5, max_retries: int = 3, retry_delay: float = 0.5,
                 workers: DeadlineWorkers | None = None) -> None:
        self.registry = registry
        self.policy = policy or RetryPolicy()
        self.sleep = sleep
        self.clock = clock
        self.max_concurrency = max_concurrency
        self.max_retries = max_retries
        self.retry_delay = retry_delay
        self.workers = workers or DeadlineWorkers()

    def validate(self, name: str, args: Any) -> tuple[ToolSpec, dict[str, Any]]:
        """Only look the tool up: the arguments go to the function as the model wrote them."""
        spec = self.registry.get(name)
        if spec is None:
            raise ToolExecutionFailed(f"Error executing tool {name}: tool not found")
        args = parse_args(args)
        return spec, dict(args) if isinstance(args, dict) else {}

    def run(self, call: Mapping[str, Any], ctx: ToolContext) -> ToolOutcome:
        """Attempt the call up to ``1 + max_retries`` times; any failure becomes ``ToolExecutionFailed``."""
        outcome = ToolOutcome(call_id=call.get("id") or "", name=call.get("name", ""), args=call.get("args") or {})
        start = self.clock()
        last: BaseException | None = None
        for attempt in range(self.max_retries + 1):
            if attempt:
                self.sleep(self.retry_delay)
            outcome.attempts += 1
            try:
                spec, args = self.validate(outcome.name, outcome.args)
                outcome.result = invoke_tool(spec, args, ctx, self.workers)
                last = None
                break
            except Exception as err:  # noqa: BLE001 - the framework's default: catch all, retry all
                last = err
        if last is not None:
            self._wrap(outcome, last)
        outcome.timings_ms = {"total_ms": (self.clock() - start) * 1000}
        return outcome

    def run_many(self, calls: Sequence[Mapping[str, Any]], ctx_for: Callable[[Mapping[str, Any]], ToolContext]
                 ) -> list[ToolOutcome]:
        """Run calls concurrently (at most ``max_concurrency`` at once); outcomes in call order."""
        if len(calls) <= 1:
            return [self.run(c, ctx_for(c)) for c in calls]
        contexts = [ctx_for(c) for c in calls]
        with ThreadPoolExecutor(max_workers=min(self.max_concurrency, len(calls))) as pool:
            futures = [pool.submit(self.run, c, ctx) for c, ctx in zip(calls, contexts, strict=True)]
            return [f.result() for f in futures]

    async def arun(self, call: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
        """``run`` for async callers."""
        return await asyncio.to_thread(self.run, call, ctx)

    @staticmethod
    def _wrap(outcome: ToolOutcome, err: BaseException) -> None:
        # the framework's one error type: the message survives, the class (and so the cause) does not
        wrapped = err if isinstance(err, ToolExecutionFailed) else ToolExecutionFailed(
            f"Error executing tool {outcome.name}: {err}")
        outcome.status = "error"
        outcome.result = None
        outcome.error_type = wrapped.error_type
        outcome.exception = type(wrapped).__name__
        outcome.error = str(wrapped)
        outcome.cause = wrapped
