"""Tool executor: error taxonomy and retries on a fake clock, deadlines, parallel calls, idempotency.

Nothing here really waits for a backoff: ``sleep`` is a fake that records the waits and moves the fake
clock. Deadlines are real but tiny (0.05 s), and tools that "hang" block on an event released at teardown.
"""

import asyncio
import errno
import threading
import time
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Annotated

import pytest
from pydantic import Field

from lg_harness.domains.shop.backend import ShopDB, cancel_order
from lg_harness.tools.context import ToolContext
from lg_harness.tools.errors import (
    BusinessError,
    NotFoundError,
    PermanentError,
    RateLimitedError,
    ToolExecutionFailed,
    TransientError,
    ValidationError,
    classify,
    retry_after_of,
)
from lg_harness.tools.executor import LOG_ERROR_CHARS, DeadlineWorkers, RetryPolicy, ToolExecutor, ToolOutcome
from lg_harness.tools.framework_executor import FrameworkExecutor
from lg_harness.tools.registry import ToolRegistry, tool_meta

CTX = ToolContext(user_id="U001", thread_id="t1")


class FakeClock:
    """``clock`` and ``sleep`` for the executor: sleeping moves time forward and is recorded."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.sleeps: list[float] = []

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


class Scripted:
    """A tool body that raises the scripted exceptions in turn, then returns ``result``."""

    def __init__(self, *failures: BaseException, result: object = "done") -> None:
        self.failures = list(failures)
        self.result = result
        self.calls = 0

    def __call__(self, **kwargs: object) -> object:
        self.calls += 1
        if self.failures:
            raise self.failures.pop(0)
        return self.result


class Response:
    """The ``response`` of an HTTP error: its status code and headers."""

    def __init__(self, status_code: int, headers: dict[str, str]) -> None:
        self.status_code = status_code
        self.headers = headers


class HTTPError(Exception):
    """Shaped like httpx/requests/openai errors: a status code and response headers, on the error itself or
    (``on_response``) on its ``response``."""

    def __init__(self, status_code: int, headers: dict[str, str] | None = None, on_response: bool = False) -> None:
        super().__init__(f"HTTP {status_code}")
        if on_response:
            self.response = Response(status_code, headers or {})
        else:
            self.status_code = status_code
            self.headers = headers or {}


@pytest.fixture
def fake():
    return FakeClock()


@pytest.fixture
def release():
    """An event hanging tools wait on; set at teardown so no thread outlives the test for long."""
    event = threading.Event()
    yield event
    event.set()


def make(fake: FakeClock, body, name: str = "flaky", policy: RetryPolicy | None = None, **meta) -> ToolExecutor:
    """An executor with one tool ``name(x: int = 0)`` whose body is ``body``."""

    def tool_fn(x: int = 0) -> object:
        """A tool under test.

        Args:
            x: Any number.
        """
        return body(x=x)

    registry = ToolRegistry()
    registry.register(tool_fn, name=name, **meta)
    return ToolExecutor(registry, policy, sleep=fake.sleep, clock=fake.clock)


def run(executor: ToolExecutor, name: str = "flaky", args: dict | str | None = None, call_id: str = "c1"
        ) -> ToolOutcome:
    """Run one call; ``args`` may be a JSON string, as a model may send them."""
    return executor.run({"id": call_id, "name": name, "args": args or {}}, CTX)


# ----------------------------------------------------------------------------- transient and timeout


def test_transient_backs_off_1_2_4_then_gives_up_after_4_attempts(fake):
    body = Scripted(*[TransientError("upstream 503")] * 10)
    outcome = run(make(fake, body))
    assert fake.sleeps == [1.0, 2.0, 4.0]
    assert (outcome.attempts, body.calls) == (4, 4)
    assert (outcome.status, outcome.error_type, outcome.exception) == ("error", "transient", "TransientError")
    assert outcome.error == "upstream 503"
    assert outcome.timings_ms["wait_ms"] == 7000.0


def test_transient_recovers_and_keeps_the_result(fake):
    body = Scripted(ConnectionResetError("reset by peer"), OSError(errno.ECONNREFUSED, "refused"), result=42)
    outcome = run(make(fake, body))
    assert (outcome.status, outcome.result, outcome.attempts) == ("ok", 42, 3)
    assert fake.sleeps == [1.0, 2.0]


def test_timeouts_back_off_1_2_4_and_never_block_the_caller(fake, release):
    calls = []

    def hang(x: int) -> str:
        calls.append(x)
        release.wait(5)
        return "late"

    started = time.monotonic()
    outcome = run(make(fake, hang, timeout=0.05))
    elapsed = time.monotonic() - started
    assert fake.sleeps == [1.0, 2.0, 4.0]
    assert (outcome.attempts, len(calls)) == (4, 4)
    assert (outcome.error_type, outcome.exception) == ("timeout", "ToolTimeoutError")
    assert outcome.error is not None and "0.05 s" in outcome.error
    assert elapsed < 2.0  # four 0.05 s deadlines, not four 5 s hangs


def test_builtin_timeout_error_counts_as_timeout(fake):
    body = Scripted(TimeoutError("read timed out"), TimeoutError(), result="ok")
    outcome = run(make(fake, body))
    assert (outcome.status, outcome.attempts, fake.sleeps) == ("ok", 3, [1.0, 2.0])


def test_5xx_is_transient(fake):
    outcome = run(make(fake, Scripted(*[HTTPError(502)] * 5)))
    assert (outcome.error_type, outcome.exception, outcome.attempts) == ("transient", "HTTPError", 4)


# ---------------------------------------------------------------------------------------- rate limits


def test_429_waits_at_least_retry_after_then_retries_exactly_once(fake):
    body = Scripted(RateLimitedError("slow down", retry_after=7.5), RateLimitedError("still", retry_after=9))
    outcome = run(make(fake, body))
    assert fake.sleeps == [7.5] and fake.sleeps[0] >= 7.5
    assert (outcome.attempts, body.calls) == (2, 2)
    assert (outcome.error_type, outcome.exception, outcome.error) == ("rate_limited", "RateLimitedError", "still")


def test_429_then_success(fake):
    outcome = run(make(fake, Scripted(RateLimitedError("busy", retry_after=3), result={"ok": True})))
    assert (outcome.status, outcome.result, outcome.attempts, fake.sleeps) == ("ok", {"ok": True}, 2, [3])


@pytest.mark.parametrize("exc", [
    HTTPError(429, {"Retry-After": "12"}),
    HTTPError(429, {"retry-after": "12"}, on_response=True),
])
def test_http_429_reads_the_retry_after_header(fake, exc):
    outcome = run(make(fake, Scripted(exc, result="ok")))
    assert (outcome.status, fake.sleeps) == ("ok", [12.0])


def test_429_without_retry_after_waits_the_default(fake):
    outcome = run(make(fake, Scripted(HTTPError(429), result="ok"), policy=RetryPolicy(default_retry_after=2.5)))
    assert (outcome.status, fake.sleeps) == ("ok", [2.5])


def test_429_asking_for_too_long_fails_at_once(fake):
    body = Scripted(RateLimitedError("come back in an hour", retry_after=3600), result="ok")
    outcome = run(make(fake, body))
    assert (outcome.error_type, outcome.attempts, fake.sleeps) == ("rate_limited", 1, [])


# ------------------------------------------------------------------------------- never retried errors


def test_validation_error_is_never_retried_and_the_tool_never_called(fake):
    body = Scripted(result="unreachable")
    outcome = run(make(fake, body), args={"x": "not a number"})
    assert (outcome.status, outcome.error_type, outcome.exception) == ("error", "validation", "ValidationError")
    assert (outcome.attempts, body.calls, fake.sleeps) == (1, 0, [])
    assert outcome.error is not None
    assert "x: Input should be a valid integer" in outcome.error and "'not a number'" in outcome.error
    assert "call_ms" not in outcome.timings_ms


def test_validation_error_raised_by_the_tool_is_not_retried(fake):
    body = Scripted(ValidationError("idempotency key reused"), HTTPError(422))
    outcome = run(make(fake, body))
    assert (outcome.error_type, outcome.attempts, fake.sleeps) == ("validation", 1, [])


@pytest.mark.parametrize(("exc", "kind"), [
    (BusinessError("order already shipped"), "business"),
    (NotFoundError("no such order"), "not_found"),
    (HTTPError(403), "business"),
    (HTTPError(404, on_response=True), "not_found"),
    (KeyError("bug"), "internal"),
    (FileNotFoundError(errno.ENOENT, "no such file"), "internal"),
])
def test_business_and_internal_errors_are_not_retried(fake, exc, kind):
    body = Scripted(exc, result="unreachable")
    outcome = run(make(fake, body))
    assert (outcome.error_type, outcome.exception) == (kind, type(exc).__name__)
    assert (outcome.attempts, body.calls, fake.sleeps) == (1, 1, [])
    assert outcome.cause is exc


def test_unknown_tool_is_a_validation_error_listing_the_available_tools(fake):
    executor = make(fake, Scripted())
    executor.registry.register(lambda: None, name="other_tool")
    outcome = run(executor, name="get_weather")
    assert (outcome.error_type, outcome.attempts) == ("validation", 1)
    assert outcome.error == "unknown tool 'get_weather'; available tools: flaky, other_tool"


def test_arguments_may_arrive_as_a_json_string(fake):
    outcome = run(make(fake, lambda x: x * 2), args='{"x": 21}')
    assert outcome.result == 42
    bad = run(make(fake, lambda x: x), args="[1, 2]")
    assert bad.error == "arguments for flaky must be a JSON object, got list"


# ------------------------------------------------------------------------------- permanent and fallback


def test_permanent_error_uses_the_fallback_tool_once_with_the_same_args(fake):
    executor = make(fake, Scripted(PermanentError("warehouse API decommissioned")), fallback="cached_stock")
    seen = []

    def cached_stock(x: int = 0) -> dict:
        """Stock from the nightly cache."""
        seen.append(x)
        return {"x": x, "source": "cache"}

    executor.registry.register(cached_stock)
    outcome = run(executor, args={"x": 5})
    assert (outcome.status, outcome.result, outcome.fallback) == ("ok", {"x": 5, "source": "cache"}, "cached_stock")
    assert seen == [5] and outcome.attempts == 2 and fake.sleeps == []
    assert outcome.record()["fallback"] == "cached_stock"


def test_permanent_error_without_a_usable_fallback_says_the_service_is_unavailable(fake):
    executor = make(fake, Scripted(PermanentError("warehouse API decommissioned")), fallback="needs_other_args")

    def needs_other_args(sku: str) -> dict:
        """A fallback whose schema does not take the same arguments."""
        return {}

    executor.registry.register(needs_other_args)
    outcome = run(executor, args={"x": 5})
    assert (outcome.status, outcome.error_type, outcome.exception) == ("error", "permanent", "PermanentError")
    assert outcome.error is not None
    assert outcome.error.startswith("The flaky service is unavailable at the moment.")
    assert outcome.error.endswith("Original error: warehouse API decommissioned")
    assert outcome.attempts == 1 and outcome.fallback is None and "fallback" not in outcome.record()


def test_permanent_error_when_the_fallback_fails_too(fake):
    executor = make(fake, Scripted(PermanentError("gone")), fallback="also_broken")
    executor.registry.register(lambda x=0: 1 / 0, name="also_broken")
    outcome = run(executor)
    assert outcome.error_type == "permanent" and outcome.exception == "PermanentError"
    assert outcome.error is not None and "fallback also failed: ZeroDivisionError" in outcome.error


def test_permanent_error_without_fallback(fake):
    outcome = run(make(fake, Scripted(PermanentError("gone"))))
    assert outcome.error is not None
    assert outcome.error_type == "permanent" and "unavailable" in outcome.error and outcome.attempts == 1


# -------------------------------------------------------------------------------------- classification


@pytest.mark.parametrize(("exc", "kind"), [
    (TransientError("x"), "transient"),
    (RateLimitedError("x"), "rate_limited"),
    (PermanentError("x"), "permanent"),
    (TimeoutError(), "timeout"),
    (ConnectionRefusedError(), "transient"),
    (BrokenPipeError(), "transient"),
    (OSError(errno.ENETUNREACH, "unreachable"), "transient"),
    (PermissionError(errno.EACCES, "denied"), "internal"),
    (HTTPError(429), "rate_limited"),
    (HTTPError(408), "timeout"),
    (HTTPError(500), "transient"),
    (HTTPError(503, on_response=True), "transient"),
    (HTTPError(400), "validation"),
    (HTTPError(422), "validation"),
    (HTTPError(404), "not_found"),
    (HTTPError(409), "business"),
    (type("ReadTimeout", (Exception,), {})(), "timeout"),  # httpx-style, not a TimeoutError subclass
    (type("APIConnectionError", (Exception,), {})(), "transient"),
    (type("ToolException", (Exception,), {})(), "business"),
    (ValueError("bug"), "internal"),
])
def test_classify(exc, kind):
    assert classify(exc) == kind


def test_retry_after_forms():
    assert retry_after_of(RateLimitedError("x", retry_after=4)) == 4.0
    assert retry_after_of(HTTPError(429, {"Retry-After": "2.5"})) == 2.5
    assert retry_after_of(HTTPError(429, {"Retry-After": "soon"})) is None
    assert retry_after_of(HTTPError(429)) is None
    when = format_datetime(datetime.now(UTC) + timedelta(seconds=120), usegmt=True)
    wait = retry_after_of(HTTPError(429, {"Retry-After": when}, on_response=True))
    assert wait is not None and 100 < wait <= 120


# ------------------------------------------------------------------------------------------ async tools


async def double_later(x: int) -> int:
    """Double a number, asynchronously.

    Args:
        x: The number.
    """
    await asyncio.sleep(0)
    return 2 * x


def _async_executor(fake: FakeClock) -> ToolExecutor:
    registry = ToolRegistry()
    registry.register(double_later)
    return ToolExecutor(registry, sleep=fake.sleep, clock=fake.clock)


def test_async_tool_without_a_running_loop(fake):
    assert run(_async_executor(fake), "double_later", {"x": 4}).result == 8


def test_async_tool_called_from_inside_a_running_loop(fake):
    executor = _async_executor(fake)

    async def caller() -> tuple[ToolOutcome, ToolOutcome, list[ToolOutcome]]:
        blocking = run(executor, "double_later", {"x": 5})  # sync call while this loop runs
        awaited = await executor.arun({"id": "a", "name": "double_later", "args": {"x": 6}}, CTX)
        many = await executor.arun_many([{"id": f"m{i}", "name": "double_later", "args": {"x": i}} for i in range(3)],
                                        lambda call: CTX)
        return blocking, awaited, many

    blocking, awaited, many = asyncio.run(caller())
    assert (blocking.result, awaited.result) == (10, 12)
    assert [o.result for o in many] == [0, 2, 4]


def test_async_tool_deadline(fake, release):
    async def stuck(x: int = 0) -> int:
        """Never answers in time."""
        await asyncio.to_thread(release.wait, 5)
        return x

    registry = ToolRegistry()
    registry.register(stuck, timeout=0.05)
    outcome = ToolExecutor(registry, RetryPolicy(backoff=()), sleep=fake.sleep, clock=fake.clock).run(
        {"id": "s", "name": "stuck", "args": {}}, CTX)
    assert (outcome.error_type, outcome.attempts) == ("timeout", 1)


# --------------------------------------------------------------------------------------- parallel calls


def test_run_many_runs_at_most_five_at_once_and_keeps_call_order(fake):
    lock = threading.Lock()
    running = {"now": 0, "max": 0, "arrived": 0}
    first_five = threading.Barrier(5, timeout=5)

    def work(x: int) -> int:
        with lock:
            running["now"] += 1
            running["max"] = max(running["max"], running["now"])
            running["arrived"] += 1
            arrived = running["arrived"]
        if arrived <= 5:
            first_five.wait()  # only passes once five calls run together; a sixth would show in "max"
        with lock:
            running["now"] -= 1
        return x * 10

    executor = make(fake, work, name="work")
    calls = [{"id": f"call_{i}", "name": "work", "args": {"x": i}} for i in range(8)]
    contexts = []
    outcomes = executor.run_many(calls, lambda call: contexts.append(call["id"]) or CTX)
    assert running["max"] == 5
    assert [o.call_id for o in outcomes] == [c["id"] for c in calls]
    assert [o.result for o in outcomes] == [i * 10 for i in range(8)]
    assert contexts == [c["id"] for c in calls]


def test_run_many_isolates_failures(fake):
    executor = make(fake, lambda x: 1 / x, name="inverse")
    outcomes = executor.run_many([{"id": str(i), "name": "inverse", "args": {"x": i}} for i in (1, 0, 2)],
                                 lambda call: CTX)
    assert [o.status for o in outcomes] == ["ok", "error", "ok"]
    assert outcomes[1].exception == "ZeroDivisionError"


# ----------------------------------------------------------------------------------------- idempotency


class Ledger:
    """A fake changing backend with an idempotency table, and a network that loses the first answer."""

    def __init__(self) -> None:
        self.applied: list[int] = []
        self.by_key: dict[str, dict] = {}
        self.keys_seen: list[str] = []
        self.lose_answer = True

    def charge(self, ctx: ToolContext, amount: Annotated[int, Field(gt=0)]) -> dict:
        """Charge the user's account.

        Args:
            amount: Cents to charge.
        """
        self.keys_seen.append(ctx.idempotency_key)
        if ctx.idempotency_key not in self.by_key:
            self.applied.append(amount)
            self.by_key[ctx.idempotency_key] = {"charged": amount, "charge_no": len(self.applied)}
        if self.lose_answer:  # committed, but the caller never hears back
            self.lose_answer = False
            raise TransientError("connection reset after commit")
        return self.by_key[ctx.idempotency_key]


def test_changing_tool_applies_once_across_retries(fake):
    ledger = Ledger()
    registry = ToolRegistry()
    registry.register(ledger.charge, changes_state=True, idempotent=True)
    executor = ToolExecutor(registry, sleep=fake.sleep, clock=fake.clock)
    outcome = executor.run({"id": "call_9", "name": "charge", "args": {"amount": 500}}, CTX)
    assert (outcome.status, outcome.attempts, fake.sleeps) == ("ok", 2, [1.0])
    assert outcome.result == {"charged": 500, "charge_no": 1}
    assert ledger.applied == [500]
    # the executor made the key (thread + call id) once and every attempt carried it
    assert ledger.keys_seen == ["t1:call_9", "t1:call_9"]


def test_callers_key_is_kept(fake):
    ledger = Ledger()
    ledger.lose_answer = False
    registry = ToolRegistry()
    registry.register(ledger.charge, changes_state=True, idempotent=True)
    ctx = ToolContext(user_id="U001", thread_id="t1", idempotency_key="mine")
    ToolExecutor(registry, sleep=fake.sleep, clock=fake.clock).run({"id": "c", "name": "charge",
                                                                      "args": {"amount": 1}}, ctx)
    assert ledger.keys_seen == ["mine"]


def test_changing_tool_that_is_not_idempotent_is_not_retried_after_a_transient_error(fake):
    @tool_meta(changes_state=True, idempotent=False)
    def send_sms(x: int = 0) -> str:
        """Send a text message (the gateway has no idempotency keys)."""
        raise TransientError("gateway timeout after accepting?")

    registry = ToolRegistry()
    registry.register(send_sms)
    outcome = ToolExecutor(registry, sleep=fake.sleep, clock=fake.clock).run(
        {"id": "s", "name": "send_sms", "args": {}}, CTX)
    assert (outcome.error_type, outcome.attempts, fake.sleeps) == ("transient", 1, [])


def test_real_shop_cancel_applies_once_when_the_first_answer_is_lost(fake, tmp_path):
    db = ShopDB.open(tmp_path / "shop.db", seed=7)
    try:
        order = db.query_one("SELECT id FROM orders WHERE user_id = 'U001' AND status = 'pending' ORDER BY id")["id"]
        stock_before = {r["sku"]: r["stock"] for r in db.query(
            "SELECT v.sku, v.stock FROM variants v JOIN order_items i ON i.sku = v.sku WHERE i.order_id = ?", (order,))}
        lost = {"first": True}

        def cancel_over_flaky_network(ctx: ToolContext, order_id: str) -> dict:
            """Cancel an order through a network that drops the first answer."""
            result = cancel_order(ctx, order_id)
            if lost.pop("first", False):
                raise ConnectionResetError("answer lost after the shop committed")
            return result

        registry = ToolRegistry()
        registry.register(cancel_over_flaky_network, changes_state=True, idempotent=True)
        ctx = ToolContext(user_id="U001", thread_id="t-shop", extras={"shop": db})
        outcome = ToolExecutor(registry, sleep=fake.sleep, clock=fake.clock).run(
            {"id": "call_1", "name": "cancel_over_flaky_network", "args": {"order_id": order}}, ctx)
        assert (outcome.status, outcome.attempts) == ("ok", 2)
        assert outcome.result["status"] == "cancelled" and outcome.result["previous_status"] == "pending"
        stock_after = {r["sku"]: r["stock"] for r in db.query(
            "SELECT v.sku, v.stock FROM variants v JOIN order_items i ON i.sku = v.sku WHERE i.order_id = ?", (order,))}
        qty = {r["sku"]: r["qty"] for r in db.query("SELECT sku, qty FROM order_items WHERE order_id = ?", (order,))}
        assert stock_after == {sku: stock_before[sku] + qty[sku] for sku in qty}  # stock put back once
        assert db.query_one("SELECT COUNT(*) FROM idempotency WHERE key = 't-shop:call_1'")[0] == 1
    finally:
        db.close()


# -------------------------------------------------------------------------------------- outcome format


def test_outcome_keeps_the_full_error_and_logs_a_short_one(fake):
    long = "x" * 500
    outcome = run(make(fake, Scripted(BusinessError(long))))
    assert outcome.error == long
    record = outcome.record()
    assert len(record["error"]) == LOG_ERROR_CHARS and record["error"].endswith("…")
    assert set(record) == {"call_id", "name", "args", "status", "error_type", "error", "exception", "attempts",
                           "timings_ms"}
    assert outcome.content() == '{"error": {"type": "business", "message": "' + long + '"}}'


def test_phase_timings_on_the_fake_clock(fake):
    outcome = run(make(fake, Scripted(TransientError("blip"), result=1)))
    t = outcome.timings_ms
    assert set(t) == {"validate_ms", "call_ms", "wait_ms"}  # phases only: their sum is the duration
    assert t["wait_ms"] == 1000.0


# ------------------------------------------------------------------------- the framework-default contrast


def _framework(fake: FakeClock, body, **kwargs) -> FrameworkExecutor:
    executor = make(fake, body)
    return FrameworkExecutor(executor.registry, sleep=fake.sleep, clock=fake.clock, **kwargs)


def test_framework_retries_429_blindly_ignoring_retry_after(fake):
    body = Scripted(*[RateLimitedError("slow down", retry_after=30)] * 10)
    outcome = _framework(fake, body, retry_delay=0.5).run({"id": "c", "name": "flaky", "args": {}}, CTX)
    assert fake.sleeps == [0.5, 0.5, 0.5]  # never the 30 s the backend asked for
    assert (outcome.attempts, body.calls) == (4, 4)
    assert (outcome.error_type, outcome.exception) == ("tool_execution_failed", "ToolExecutionFailed")
    assert outcome.error == "Error executing tool flaky: slow down"
    assert isinstance(outcome.cause, ToolExecutionFailed)
    assert set(outcome.timings_ms) == {"total_ms"}
    # the classified executor: one retry after the full 30 s
    contrast = FakeClock()
    classified = run(make(contrast, Scripted(*[RateLimitedError("slow down", retry_after=30)] * 10)))
    assert (classified.attempts, contrast.sleeps, classified.error_type) == (2, [30], "rate_limited")


def test_framework_retries_validation_errors_and_does_not_validate_first(fake):
    calls = []

    def strict(x: int = 0) -> int:
        calls.append(x)
        return x + 1  # a str argument fails here, inside the tool, on every attempt

    outcome = _framework(fake, strict).run({"id": "c", "name": "flaky", "args": {"x": "seven"}}, CTX)
    assert calls == ["seven"] * 4 and outcome.attempts == 4 and len(fake.sleeps) == 3
    assert outcome.error is not None
    assert outcome.exception == "ToolExecutionFailed" and "TypeError" not in outcome.error
    contrast = FakeClock()
    body = Scripted()
    classified = run(make(contrast, body), args={"x": "seven"})
    assert (classified.attempts, body.calls, classified.error_type) == (1, 0, "validation")


def test_framework_wraps_unknown_tools_and_succeeds_normally(fake):
    framework = _framework(fake, Scripted(TransientError("blip"), result="fine"))
    ok = framework.run({"id": "c", "name": "flaky", "args": {}}, CTX)
    assert (ok.status, ok.result, ok.attempts, fake.sleeps) == ("ok", "fine", 2, [0.5])
    missing = framework.run({"id": "d", "name": "nope", "args": {}}, CTX)
    assert (missing.error_type, missing.attempts) == ("tool_execution_failed", 4)
    many = framework.run_many([{"id": "1", "name": "flaky", "args": {}}, {"id": "2", "name": "flaky", "args": {}}],
                              lambda call: CTX)
    assert [o.call_id for o in many] == ["1", "2"] and all(o.status == "ok" for o in many)


# ------------------------------------------------------------------------------------------ worker pool


def test_deadline_workers_reuse_idle_threads_and_replace_stuck_ones(release):
    workers = DeadlineWorkers(idle_exit_s=30)
    first = workers.submit(threading.current_thread)
    assert first.done.wait(2)
    second = workers.submit(threading.current_thread)
    assert second.done.wait(2)
    assert first.box["result"] is second.box["result"]  # the idle worker took the next job
    stuck = workers.submit(lambda: release.wait(5))
    meanwhile = workers.submit(threading.current_thread)
    assert meanwhile.done.wait(2) and not stuck.done.is_set()  # a hung tool does not hold up others
    release.set()
    assert stuck.done.wait(2)


def test_idle_deadline_workers_leave():
    workers = DeadlineWorkers(idle_exit_s=0.01)
    job = workers.submit(threading.current_thread)
    assert job.done.wait(2)
    worker = job.box["result"]
    worker.join(timeout=2)
    assert not worker.is_alive()
    again = workers.submit(lambda: "still served")
    assert again.done.wait(2) and again.box["result"] == "still served"
