"""Run validated tool calls with deadlines and classified retries.

Retry policy by error class (``tools.errors.classify``): transient and timeout back off 1 s, 2 s, 4 s (at
most 3 retries); rate-limited waits at least Retry-After, then retries exactly once; validation, business
and internal errors never retry; permanent errors try ``ToolSpec.fallback`` once with the same arguments,
or end with a polite "service unavailable" message. A changing tool gets a stable
``ctx.idempotency_key`` for all its attempts, and a changing tool that is not idempotent is only retried
after a 429 (the backend refused it, so nothing was applied). With ``ctx.ledger`` a changing call is recorded
pending before it runs and settled after (``tools.ledger``): a call settled before answers from the record,
and one left pending by a crash runs again only if the tool honours the key.

``sleep`` and ``clock`` are injected so tests use a fake clock and nothing really waits. Deadlines are real
time: each attempt runs on a reusable daemon worker thread, so a tool that hangs costs the caller exactly
its deadline and is then abandoned (it never blocks the caller, the graph, or interpreter exit).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import dataclasses
import inspect
import json
import os
import queue
import re
import threading
import time
import uuid
import weakref
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Protocol

import pydantic

from lg_harness.errors import RunError, status_code_of
from lg_harness.obs.tracing import bind_context, record_tool_outcome, span_event, tool_span
from lg_harness.tools.context import ToolContext
from lg_harness.tools.errors import (
    TRANSIENT_TYPES,
    MalformedPayloadError,
    ToolTimeoutError,
    ValidationError,
    classify,
    retry_after_of,
)
from lg_harness.tools.registry import ToolRegistry, ToolSpec

LOG_ERROR_CHARS = 200  # ToolOutcome.error keeps the full text; the log record keeps this much


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how long to wait before trying a failed call again.

    Attributes:
        backoff: Waits before each retry of a transient error or timeout; its length is the retry count.
        rate_limit_retries: Retries after a 429.
        default_retry_after: Wait after a 429 that names no Retry-After.
        max_retry_after: A longer Retry-After is not worth holding the conversation: fail at once instead.
    """

    backoff: tuple[float, ...] = (1.0, 2.0, 4.0)
    rate_limit_retries: int = 1
    default_retry_after: float = 1.0
    max_retry_after: float = 60.0


@dataclass
class ToolOutcome:
    """What happened to one tool call; ``error`` keeps the original exception's class and message.

    ``timings_ms`` holds phases only (``validate_ms``, ``call_ms`` summed over attempts, ``wait_ms`` spent
    in backoff, ``fallback_ms``), so their sum is the call's duration and log readers may add them up.
    ``exception`` is the original class name, ``error`` the full message, ``cause`` the exception object
    itself (for logs and debuggers; never serialised). ``fallback`` names the tool that answered instead
    when the called one failed permanently.
    """

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
    fallback: str | None = None
    customer: dict[str, Any] | None = None  # the error's customer phrase: {"phrase": key, "values": {...}}
    ledger_key: str | None = None  # the change ledger's key, when the call was recorded there
    cause: BaseException | None = field(default=None, repr=False, compare=False)

    def content(self) -> str:
        """The text the model reads. Errors are labelled so they cannot pass for data."""
        if self.status == "ok":
            return json.dumps(self.result, ensure_ascii=False, separators=(",", ":"), default=str)
        return json.dumps({"error": {"type": self.error_type, "message": self.error}}, ensure_ascii=False)

    def record(self) -> dict[str, Any]:
        """The log entry: everything but the result; the error cut to ``LOG_ERROR_CHARS``.

        ``fallback`` appears only when a fallback tool answered, so ordinary records keep their keys.
        """
        error = self.error
        if error is not None and len(error) > LOG_ERROR_CHARS:
            error = error[: LOG_ERROR_CHARS - 1] + "…"
        data: dict[str, Any] = {
            "call_id": self.call_id, "name": self.name, "args": self.args, "status": self.status,
            "error_type": self.error_type, "error": error, "exception": self.exception,
            "attempts": self.attempts, "timings_ms": dict(self.timings_ms),
        }
        if self.fallback:
            data["fallback"] = self.fallback
        if self.customer:
            data["customer"] = self.customer
        if self.ledger_key:
            data["ledger_key"] = self.ledger_key
        return data


def format_validation_error(name: str, err: pydantic.ValidationError) -> str:
    """One line the model can act on: which argument, what is wrong, what it sent."""
    parts = []
    for e in err.errors():
        loc = ".".join(str(p) for p in e["loc"]) or "(arguments)"
        parts.append(f"{loc}: {e['msg']}" + (f" (got {e['input']!r})" if e["type"] != "missing" else ""))
    return f"invalid arguments for {name}: " + "; ".join(parts)


def unavailable_message(name: str, err: BaseException, fallback_error: BaseException | None = None) -> str:
    """The polite text for a permanent failure, keeping the original message for the log."""
    text = (f"The {name} service is unavailable at the moment. Please apologise to the customer and offer "
            f"another way (try again later, or a human agent). Original error: {err}")
    if fallback_error is not None:
        text += f" (fallback also failed: {type(fallback_error).__name__}: {fallback_error})"
    return text


# ------------------------------------------------------------------------------------------ invocation


async def _await(awaitable: Awaitable[Any]) -> Any:
    return await awaitable


def _run_awaitable(awaitable: Awaitable[Any]) -> Any:
    """Result of an awaitable from synchronous code, whether or not this thread runs an event loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(_await(awaitable))
    # asyncio.run refuses to nest inside a running loop: give the coroutine a thread with its own loop
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="async-tool") as thread:
        return thread.submit(asyncio.run, _await(awaitable)).result()


class _Job:
    """One function to run on a worker, and where its result or error lands."""

    __slots__ = ("box", "done", "fn")

    def __init__(self, fn: Callable[[], Any]) -> None:
        self.fn = fn
        self.box: dict[str, Any] = {}
        self.done = threading.Event()

    def execute(self) -> None:
        """Run the function; ``done`` is set by the caller of this method."""
        try:
            self.box["result"] = self.fn()
        except BaseException as err:  # noqa: BLE001 - handed to the waiting caller's thread
            self.box["error"] = err


class DeadlineWorkers:
    """Daemon threads that run tool attempts, so a caller can stop waiting at the deadline.

    A new thread per attempt costs about half a millisecond; reusing idle workers costs a queue hop. A
    worker stuck in a hung tool is simply abandoned (daemon: it never blocks interpreter exit), and a new
    worker starts whenever none is idle. Idle workers leave after ``idle_exit_s``.

    A ``Runtime`` (``graphs.runtime``) owns one for every executor built on it; an executor built alone gets
    its own.

    Invariant: workers blocked on the queue == ``idle`` tokens + jobs queued for them.
    """

    def __init__(self, idle_exit_s: float = 60.0) -> None:
        self.idle_exit_s = idle_exit_s
        self._jobs: queue.SimpleQueue[_Job] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._idle = 0
        renew_after_fork(self)

    def run(self, fn: Callable[[], Any], timeout: float | None, name: str) -> Any:
        """``fn()`` on a worker thread, waiting at most ``timeout`` seconds (None: as long as it takes).

        Raises:
            ToolTimeoutError: ``fn`` did not finish in time; it keeps running, abandoned, on its worker.
        """
        # the caller's context variables (tracing, LangChain callbacks) follow the call onto the worker
        context = contextvars.copy_context()
        job = self.submit(lambda: context.run(fn))
        if not job.done.wait(timeout):
            raise ToolTimeoutError(f"{name} did not answer within {timeout:g} s")
        if "error" in job.box:
            raise job.box["error"]
        return job.box["result"]

    def submit(self, fn: Callable[[], Any]) -> _Job:
        job = _Job(fn)
        with self._lock:
            start_worker = self._idle == 0
            if not start_worker:
                self._idle -= 1  # claim an idle worker: it will take this job off the queue
        self._jobs.put(job)
        if start_worker:
            threading.Thread(target=self._work, name="tool-worker", daemon=True).start()
        return job

    def _work(self) -> None:
        while True:
            try:
                job = self._jobs.get(timeout=self.idle_exit_s)
            except queue.Empty:
                with self._lock:
                    if self._idle > 0:  # an unclaimed token: nobody counts on this worker, leave
                        self._idle -= 1
                        return
                continue  # a submitter claimed us just now: its job is on the way
            job.execute()
            with self._lock:
                self._idle += 1
            # idle before done: a caller that submits again right after its answer reuses this worker
            job.done.set()
            del job  # an idle worker must not keep the last call's graph and model alive

    def after_fork(self) -> None:
        # A forked child inherits the idle count but not the worker threads: start from none.
        self._jobs, self._lock, self._idle = queue.SimpleQueue(), threading.Lock(), 0


class ForkRenewed(Protocol):
    def after_fork(self) -> None: ...


_FORKED: weakref.WeakSet[ForkRenewed] = weakref.WeakSet()


def renew_after_fork(pool: ForkRenewed) -> None:
    """Call ``pool.after_fork()`` in a forked child (a pre-forking server, the chaos benchmark): the child
    inherits a pool's state but not its threads, and calls would wait for workers that do not exist."""
    _FORKED.add(pool)


class OutcomeUncertainError(RunError):
    """A changing call started earlier whose result was never recorded: it may or may not have applied."""


class _KeyLocks:
    """One lock per ledger key in use in this process (dropped when no caller holds it)."""

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._locks: dict[str, list[Any]] = {}  # key -> [lock, holders]

    @contextlib.contextmanager
    def hold(self, key: str) -> Iterator[None]:
        with self._guard:
            entry = self._locks.setdefault(key, [threading.Lock(), 0])
            entry[1] += 1
        try:
            with entry[0]:
                yield
        finally:
            with self._guard:
                entry[1] -= 1
                if entry[1] == 0:
                    self._locks.pop(key, None)


# Process-wide on purpose, unlike the workers: it guards a change recorded in a shared database, and two
# harnesses of one process (whatever their runtimes) must not run the same keyed change at once.
_KEY_LOCKS = _KeyLocks()


def _fresh_after_fork() -> None:
    global _KEY_LOCKS
    _KEY_LOCKS = _KeyLocks()  # a lock another thread held at the fork would never be released here
    for pool in list(_FORKED):
        pool.after_fork()


os.register_at_fork(after_in_child=_fresh_after_fork)


def call_tool(spec: ToolSpec, args: dict[str, Any], ctx: ToolContext) -> Any:
    """One call of the tool's function in this thread; an awaitable result is awaited."""
    if not spec.wants_context:
        result = spec.fn(**args)
    elif spec.context_keyword:
        result = spec.fn(**args, **{spec.context_keyword: ctx})
    else:
        result = spec.fn(ctx, **args)
    return _run_awaitable(result) if inspect.isawaitable(result) else result


def invoke_tool(spec: ToolSpec, args: dict[str, Any], ctx: ToolContext, workers: DeadlineWorkers) -> Any:
    """One attempt under the tool's deadline on ``workers``; a tool without deadline runs inline (async ones
    excepted)."""
    if spec.timeout is None and not spec.is_async:
        return call_tool(spec, args, ctx)
    return workers.run(lambda: call_tool(spec, args, ctx), spec.timeout, spec.name)


def keyed_context(ctx: ToolContext, call_id: str) -> ToolContext:
    """``ctx`` with an idempotency key, made once per call so every retry carries the same one."""
    if ctx.idempotency_key:
        return ctx
    suffix = call_id or uuid.uuid4().hex
    return dataclasses.replace(ctx, idempotency_key=f"{ctx.thread_id}:{suffix}")


def parse_args(args: Any) -> Any:
    """Arguments as sent; a JSON string (text tool-call formats) is decoded to its object."""
    if isinstance(args, str):
        try:
            return json.loads(args)
        except json.JSONDecodeError:
            return args
    return args


@dataclass
class _RetryBudget:
    """What is left of the retries of one call."""

    policy: RetryPolicy
    retry_transient: bool
    backoff: list[float] = field(default_factory=list)
    rate_left: int = 0

    def __post_init__(self) -> None:
        self.backoff = list(self.policy.backoff) if self.retry_transient else []
        self.rate_left = self.policy.rate_limit_retries

    def wait_before_retry(self, kind: str, err: BaseException) -> float | None:
        """Seconds to wait before the next attempt, or None when the call should fail now."""
        if kind in TRANSIENT_TYPES and self.backoff:
            return self.backoff.pop(0)
        if kind == "rate_limited" and self.rate_left > 0:
            asked = retry_after_of(err)
            wait = self.policy.default_retry_after if asked is None else asked
            if wait > self.policy.max_retry_after:
                return None
            self.rate_left -= 1
            return wait
        return None


# -------------------------------------------------------------------------------------------- executor


_ERROR_PAGE = re.compile(r"<html|\b50[234] (?:Bad Gateway|Service Unavailable|Gateway Time-?out)", re.I)


def check_payload(result: Any) -> Any:
    """Refuse a proxy error page where data should be: it is a transient failure, retried like one."""
    text = result if isinstance(result, str) else result.get("raw") if isinstance(result, dict) and set(result) == {
        "raw"} else None
    if isinstance(text, str) and _ERROR_PAGE.search(text):
        raise MalformedPayloadError(f"malformed payload (an error page, not data): {text[:80]}")
    return result


class Executor(Protocol):
    """What the nodes need of an executor: ``ToolExecutor`` (classified retries) or
    ``tools.framework_executor.FrameworkExecutor`` (a framework's defaults), chosen by the design."""

    registry: ToolRegistry

    def validate(self, name: str, args: Any) -> tuple[ToolSpec, dict[str, Any]]: ...

    def run(self, call: Mapping[str, Any], ctx: ToolContext) -> ToolOutcome: ...

    def run_many(self, calls: Sequence[Mapping[str, Any]], ctx_for: Callable[[Mapping[str, Any]], ToolContext]
                 ) -> list[ToolOutcome]: ...


class ToolExecutor:
    """Validates and runs tool calls from one model turn, independent calls concurrently."""

    def __init__(self, registry: ToolRegistry, policy: RetryPolicy | None = None, *,
                 sleep: Callable[[float], None] = time.sleep, clock: Callable[[], float] = time.perf_counter,
                 max_concurrency: int = 5, workers: DeadlineWorkers | None = None) -> None:
        self.registry = registry
        self.policy = policy or RetryPolicy()
        self.sleep = sleep
        self.clock = clock
        self.max_concurrency = max_concurrency
        self.workers = workers or DeadlineWorkers()  # a runtime's (graphs.runtime), else the executor's own

    def validate(self, name: str, args: Any) -> tuple[ToolSpec, dict[str, Any]]:
        """The tool and its call arguments, or ``ValidationError`` saying what to fix.

        The returned arguments keep Python types (nested models, dates), ready for the call.
        """
        spec = self.registry.get(name)
        if spec is None:
            known = ", ".join(sorted(self.registry.names()))
            raise ValidationError(f"unknown tool '{name}'; available tools: {known}")
        args = parse_args(args)
        if not isinstance(args, dict):
            raise ValidationError(f"arguments for {name} must be a JSON object, got {type(args).__name__}")
        try:
            return spec, spec.parse(args)
        except pydantic.ValidationError as err:
            raise ValidationError(format_validation_error(name, err)) from err

    def run(self, call: Mapping[str, Any], ctx: ToolContext) -> ToolOutcome:
        """Validate and run one call ``{"id", "name", "args"}``; never raises for a tool's failure."""
        with tool_span(call.get("name", ""), call.get("id") or "") as span:
            outcome = self._run(call, ctx)
            record_tool_outcome(span, outcome)
        # no phrase named by the error: the tool's own words for this kind of failure, if it has them
        spec = self.registry.get(outcome.name)
        if outcome.status != "ok" and outcome.customer is None and spec is not None \
                and (key := spec.phrase_key(str(outcome.error_type))):
            outcome.customer = {"phrase": key, "values": {}}
        return outcome

    def _run(self, call: Mapping[str, Any], ctx: ToolContext) -> ToolOutcome:
        outcome = ToolOutcome(call_id=call.get("id") or "", name=call.get("name", ""), args=call.get("args") or {})
        start = self.clock()
        try:
            spec, args = self.validate(outcome.name, outcome.args)
        except ValidationError as err:
            outcome.attempts = 1  # the attempt ended at validation: the tool was never called
            self._fail(outcome, err, "validation")
            outcome.timings_ms["validate_ms"] = (self.clock() - start) * 1000
            return outcome
        outcome.timings_ms["validate_ms"] = (self.clock() - start) * 1000
        if spec.changes_state:
            ctx = keyed_context(ctx, outcome.call_id)
            if ctx.ledger is not None:
                self._recorded(spec, args, ctx, outcome)
                return outcome
        self._execute(spec, args, ctx, outcome)
        return outcome

    def _recorded(self, spec: ToolSpec, args: dict[str, Any], ctx: ToolContext, outcome: ToolOutcome) -> None:
        """Run a changing call between a ``pending`` record and its settle in the change ledger (tools.ledger)."""
        key, ledger = ctx.idempotency_key, ctx.ledger
        outcome.ledger_key = key
        # Two identical calls of one message may run at once: the second waits for the first's verdict.
        with _KEY_LOCKS.hold(key):
            earlier = ledger.begin(key, ctx.thread_id, spec.name, outcome.args)
            if earlier is not None and earlier.status == "settled":
                outcome.attempts, outcome.result = 0, earlier.result
                outcome.timings_ms["ledger_replay"] = 0.0
                span_event("change.replayed", tool=spec.name)
                return
            if earlier is not None and not spec.idempotent:
                # It may have applied before the process died; running it again could apply it twice.
                span_event("change.uncertain", tool=spec.name, attempts=earlier.attempts)
                self._fail(outcome, OutcomeUncertainError(
                    f"{spec.name} was started for this message before ({earlier.attempts} time(s)) and its "
                    "result was never recorded: it may have been applied. It is not run again; a person checks "
                    "it. Do not call it again."), "outcome_uncertain")
                return
            self._execute(spec, args, ctx, outcome)
            if outcome.status == "ok":
                ledger.settle(key, outcome.result)
            elif outcome.error_type == "timeout" and not spec.idempotent:
                span_event("change.uncertain", tool=spec.name, attempts=1)  # the timed-out attempt may commit
            else:
                ledger.fail(key, outcome.error_type, outcome.error)

    def run_many(self, calls: Sequence[Mapping[str, Any]], ctx_for: Callable[[Mapping[str, Any]], ToolContext]
                 ) -> list[ToolOutcome]:
        """Run calls concurrently (at most ``max_concurrency`` at once); outcomes come back in call order."""
        if len(calls) <= 1:
            return [self.run(c, ctx_for(c)) for c in calls]
        contexts = [ctx_for(c) for c in calls]  # in the caller's thread: ctx_for need not be thread-safe
        with ThreadPoolExecutor(max_workers=min(self.max_concurrency, len(calls)),
                                thread_name_prefix="tool-call") as pool:
            run = bind_context(self.run)  # spans in worker threads keep the message's trace as parent
            futures = [pool.submit(run, c, ctx) for c, ctx in zip(calls, contexts, strict=True)]
            return [f.result() for f in futures]

    async def arun(self, call: Mapping[str, Any], ctx: ToolContext) -> ToolOutcome:
        """``run`` for async callers, without blocking their event loop."""
        return await asyncio.to_thread(self.run, call, ctx)

    async def arun_many(self, calls: Sequence[Mapping[str, Any]],
                        ctx_for: Callable[[Mapping[str, Any]], ToolContext]) -> list[ToolOutcome]:
        """``run_many`` for async callers, without blocking their event loop."""
        return await asyncio.to_thread(self.run_many, calls, ctx_for)

    # ---------------------------------------------------------------------------------------- internals

    def _execute(self, spec: ToolSpec, args: dict[str, Any], ctx: ToolContext, outcome: ToolOutcome) -> None:
        """Attempts with classified retries, then the fallback for a permanent failure."""
        failure = self._attempts(spec, args, ctx, outcome)
        if failure is None:
            return
        err, kind = failure
        if kind == "permanent":
            self._permanent(spec, ctx, outcome, err)
        else:
            self._fail(outcome, err, kind)

    def _attempts(self, spec: ToolSpec, args: dict[str, Any], ctx: ToolContext,
                  outcome: ToolOutcome) -> tuple[BaseException, str] | None:
        """Try until success (None) or a failure that is not retried (the error and its class)."""
        # a changing tool that ignores idempotency keys might apply twice if a timed-out attempt did commit
        budget = _RetryBudget(self.policy, retry_transient=spec.idempotent or not spec.changes_state)
        timings = outcome.timings_ms
        while True:
            outcome.attempts += 1
            started = self.clock()
            try:
                outcome.result = check_payload(invoke_tool(spec, args, ctx, self.workers))
                return None
            except Exception as err:  # noqa: BLE001 - classified here, original kept on the outcome
                kind, failed_with, http_status = classify(err), type(err).__name__, status_code_of(err)
                wait = budget.wait_before_retry(kind, err)
                if wait is None:
                    return err, kind
            finally:
                timings["call_ms"] = timings.get("call_ms", 0.0) + (self.clock() - started) * 1000
            timings["wait_ms"] = timings.get("wait_ms", 0.0) + wait * 1000
            extra = {"http.response.status_code": http_status} if http_status is not None else {}
            span_event("tool.retry", attempt=outcome.attempts, wait_s=wait, error_type=failed_with, kind=kind, **extra)
            self.sleep(wait)

    def _permanent(self, spec: ToolSpec, ctx: ToolContext, outcome: ToolOutcome, err: BaseException) -> None:
        """Answer with the fallback tool if it accepts the same arguments, else a polite failure."""
        alt = self.registry.get(spec.fallback) if spec.fallback else None
        fallback_error: BaseException | None = None
        if alt is not None and alt.name != spec.name:
            started = self.clock()
            try:
                alt_args = alt.parse(parse_args(outcome.args))
                outcome.attempts += 1
                outcome.result = invoke_tool(alt, alt_args, ctx, self.workers)
                outcome.fallback = alt.name
                return
            except pydantic.ValidationError:
                pass  # its schema does not take these arguments: not a usable fallback for this call
            except Exception as alt_err:  # noqa: BLE001 - reported inside the polite message
                fallback_error = alt_err
            finally:
                outcome.timings_ms["fallback_ms"] = (self.clock() - started) * 1000
        self._fail(outcome, err, "permanent")
        outcome.error = unavailable_message(spec.name, err, fallback_error)

    @staticmethod
    def _fail(outcome: ToolOutcome, err: BaseException, kind: str) -> None:
        outcome.status = "error"
        outcome.result = None
        outcome.error_type = kind
        outcome.exception = type(err).__name__
        outcome.error = str(err) or type(err).__name__
        phrase = getattr(err, "phrase", None)
        outcome.customer = {"phrase": phrase, "values": dict(getattr(err, "phrase_values", {}))} if phrase else None
        outcome.cause = err
