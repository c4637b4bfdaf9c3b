"""What every node variant gets, and the one way nodes call the model.

A node is any callable ``(state, config) -> partial state update``; a variant is a class built from
``NodeDeps``. Users add variants to a runtime (``Runtime.variants.register``, or ``register_variant`` for the
process's default runtime) and name them in a design.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.runnables import RunnableConfig

from lg_harness.core.design import Design
from lg_harness.core.domain import Domain
from lg_harness.core.state import HarnessState, StateUpdate, TurnStats
from lg_harness.errors import RunError
from lg_harness.llm.decoding import Step
from lg_harness.llm.embeddings import Embedder, current_embedder
from lg_harness.llm.text_tools import invalid_as_calls
from lg_harness.memory.assembly import WORKING_STRATEGIES, StrategyRegistry
from lg_harness.nodes.calling import Calling, calling_for
from lg_harness.obs.tracing import bind_context, model_identity, model_span, record_model_response, span_event
from lg_harness.tools.errors import classify, retry_after_of
from lg_harness.tools.executor import Executor, renew_after_fork
from lg_harness.tools.registry import ToolRegistry, ToolSpec


class Node(Protocol):
    def __call__(self, state: HarnessState, config: RunnableConfig) -> StateUpdate: ...


@dataclass
class NodeDeps:
    """Collaborators passed in by ``build_graph``; nodes never reach for globals."""

    model: BaseChatModel
    registry: ToolRegistry
    executor: Executor
    design: Design
    domain: Domain
    resources: dict[str, Any] = field(default_factory=dict)  # the domain's backends, memory, audit
    clock: Callable[[], float] = time.time
    sleep: Callable[[float], None] = time.sleep  # waits after a model's 429 (virtual in evaluations)
    # What the runtime (graphs.runtime) shares between graphs; a graph built without one gets its own.
    model_calls: ModelCalls = field(default_factory=lambda: ModelCalls())
    embedder: Embedder = field(default_factory=current_embedder)
    strategies: StrategyRegistry = field(default_factory=lambda: WORKING_STRATEGIES)
    # how the model is asked for a step (nodes.calling), chosen once from the design's knobs
    calling: Calling = field(init=False)

    def __post_init__(self) -> None:
        self.calling = calling_for(self.design.knobs)


VariantFactory = Callable[[NodeDeps], Node]
F = TypeVar("F", bound=VariantFactory)  # a decorated class keeps its own type


class VariantRegistry:
    """Node variants by role and name, as designs name them (``variants: {intent: NAME}``).

    ``BUILTIN_VARIANTS`` holds the ones this library ships; each ``Runtime`` (``graphs.runtime``) starts from a
    copy of it, and variants registered on a runtime are that runtime's alone.
    """

    def __init__(self, entries: Mapping[str, Mapping[str, VariantFactory]] | None = None) -> None:
        self._by_role: dict[str, dict[str, VariantFactory]] = {role: dict(named) for role, named in
                                                               (entries or {}).items()}

    def register(self, role: str, name: str) -> Callable[[F], F]:
        """Class decorator: make ``name`` selectable for ``role`` in a design built on this registry."""

        def wrap(factory: F) -> F:
            self._by_role.setdefault(role, {})[name] = factory
            return factory

        return wrap

    def of(self, role: str) -> dict[str, VariantFactory]:
        """The variants of ``role`` by name."""
        return dict(self._by_role.get(role, {}))

    def copy(self) -> VariantRegistry:
        return VariantRegistry(self._by_role)


BUILTIN_VARIANTS = VariantRegistry()  # the library's own, filled as the node modules load
builtin_variant = BUILTIN_VARIANTS.register


class ModelCalls:
    """The threads model calls run on, so that a call can be given up at its deadline.

    One pool for every graph built on a runtime: a thread per call costs more than the simulated model
    itself. A call that hangs past its deadline keeps its worker busy until it returns, so the pool is
    larger than any graph's concurrency. The pool starts on first use and again in a forked child (a
    pre-forking server): the child inherits the pool but not its threads, and calls would wait forever.
    """

    def __init__(self, workers: int = 16) -> None:
        self.workers = workers
        self._pool: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()
        renew_after_fork(self)

    def submit(self, fn: Callable[..., Any], *args: Any) -> Future[Any]:
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="model-call")
            pool = self._pool
        return pool.submit(fn, *args)

    def close(self) -> None:
        """Let running calls finish on their own; later calls start a new pool."""
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=False)

    def after_fork(self) -> None:
        self._pool, self._lock = None, threading.Lock()




def thread_id(config: RunnableConfig) -> str:
    return str((config.get("configurable") or {}).get("thread_id", ""))


log = logging.getLogger("harness.model")


class ModelCallFailed(RunError):
    """The model raised or timed out; the node answers with a retryable 'busy' reply.

    ``stats`` is the caller's per-message counters with this failure counted (``model_failures``,
    ``model_error``), set by ``call_model``.
    """

    stats: TurnStats = {}


def _invoke_with_deadline(calls: ModelCalls, model: Any, messages: list[BaseMessage], timeout_s: float) -> AIMessage:
    future = calls.submit(bind_context(model.invoke), messages)
    try:
        return future.result(timeout=timeout_s)
    except FutureTimeout as err:
        if future.done():  # the model itself raised a TimeoutError (TimeoutError is FutureTimeout on 3.11)
            log.warning("model call failed: %s: %s", type(err).__name__, err)
            raise ModelCallFailed(f"{type(err).__name__}: {err}") from err
        log.warning("model call exceeded %.1f s", timeout_s)
        raise ModelCallFailed(f"model did not answer within {timeout_s:g} s") from err
    except Exception as err:  # noqa: BLE001 - any provider failure becomes a graceful reply
        log.warning("model call failed: %s: %s", type(err).__name__, err)
        raise ModelCallFailed(f"{type(err).__name__}: {err}") from err


MODEL_RATE_LIMIT_RETRIES = 2  # a provider's 429 is waited for (its Retry-After, capped) and tried again
MODEL_MAX_RETRY_AFTER_S = 30.0


def call_deadline_s(deps: NodeDeps, messages: Sequence[BaseMessage], tools: bool) -> float:
    """The knob ``model_timeout_s``, or longer for a model that says how slow it is on this machine
    (``worst_case_s``: the local model, from its measured speeds): half as long again as its worst case."""
    base = deps.design.knobs.model_timeout_s
    root = deps.model
    while (inner := getattr(root, "bound", None)) is not None:  # a RunnableBinding around the chat model
        root = inner
    worst = getattr(root, "worst_case_s", None)
    if not callable(worst):
        return base
    estimate = worst(messages, tools)
    return max(base, 1.5 * float(estimate)) if isinstance(estimate, int | float) else base


def _invoke_rate_limited(deps: NodeDeps, model: Any, messages: list[BaseMessage], deadline_s: float) -> AIMessage:
    """The model call; a 429 waits what the provider asked (1 s when it says nothing) and retries."""
    for attempt in range(MODEL_RATE_LIMIT_RETRIES + 1):
        try:
            return _invoke_with_deadline(deps.model_calls, model, messages, deadline_s)
        except ModelCallFailed as err:
            cause = err.__cause__
            if attempt == MODEL_RATE_LIMIT_RETRIES or cause is None or classify(cause) != "rate_limited":
                raise
            wait = retry_after_of(cause)
            wait = 1.0 if wait is None else wait
            if wait > MODEL_MAX_RETRY_AFTER_S:
                raise
            span_event("model.retry", attempt=attempt + 1, wait_s=wait, kind="rate_limited")
            deps.sleep(wait)
    raise AssertionError("unreachable")


def call_model(deps: NodeDeps, messages: Sequence[BaseMessage], stats: TurnStats,
               tools: Sequence[ToolSpec] = (), step: Step | None = None,
               shown: Sequence[ToolSpec] = (), schema: dict[str, Any] | None = None) -> tuple[AIMessage, TurnStats]:
    """One model call with the offered tools; returns the reply and updated per-message counters.

    ``step`` (``answer``, ``action``, or ``data`` with its JSON ``schema``) asks for decoding that fits it when the design's
    ``constrained_decoding`` is on and the provider can (``llm.decoding``); ``call`` is an action step that must
    call. ``shown`` are the tools the prompt lists whatever the step offers (``nodes.prompt_layout``), where the
    provider holds a step to its offered ones by grammar; elsewhere the prompt lists the offered tools only."""
    prepared = deps.calling.prepare(deps.model, messages, tools, step, shown, schema)  # the design's way
    model, messages, finish = prepared.model, prepared.messages, prepared.finish
    name, provider = model_identity(deps.model)
    audit = deps.resources.get("audit")
    started = time.perf_counter()
    deadline = call_deadline_s(deps, messages, bool(tools))
    # how much slower than the design's deadlines assume: the message's wall-clock quota stretches with it
    pace = max(float(stats.get("pace", 1.0)), deadline / deps.design.knobs.model_timeout_s)
    with model_span(name, provider=provider) as span:
        try:
            reply = _invoke_rate_limited(deps, model, list(messages), deadline)
        except ModelCallFailed as err:
            # The caller answers gracefully with these counters; the application turns a message the model
            # never answered into an error (graphs.model_health).
            err.stats = {**stats, "model_failures": stats.get("model_failures", 0) + 1, "model_error": str(err),
                         "pace": pace}
            if audit is not None:
                audit.record_model(name, {"messages": list(messages)}, None, status="error",
                                   error_type=type(err.__cause__).__name__,
                                   duration_ms=(time.perf_counter() - started) * 1000)
            raise
        record_model_response(span, reply)
    if finish is not None:
        reply = finish(reply)
    if reply.invalid_tool_calls:
        reply = invalid_as_calls(reply)
    if audit is not None:
        audit.record_model(name, {"messages": list(messages), "tools": [t.name for t in tools]}, reply,
                           duration_ms=(time.perf_counter() - started) * 1000)
    usage = getattr(reply, "usage_metadata", None) or {}
    new = stats.copy()
    new["model_calls"] = new.get("model_calls", 0) + 1
    new["pace"] = pace
    new["input_tokens"] = new.get("input_tokens", 0) + int(usage.get("input_tokens", 0))
    # What the provider served from its prompt cache, when it says (OpenAI-style APIs and the sim do; Ollama
    # does not, and "unknown" must not read as "no hits").
    details = usage.get("input_token_details") or {}
    if "cache_read" in details:
        new["cached_input_tokens"] = new.get("cached_input_tokens", 0) + int(details["cache_read"] or 0)
    new["output_tokens"] = new.get("output_tokens", 0) + int(usage.get("output_tokens", 0))
    # The simulated model reports modelled latency (virtual time); real models are timed on the wall.
    latency = (reply.response_metadata or {}).get("latency_s", time.perf_counter() - started)
    new["model_latency_s"] = round(new.get("model_latency_s", 0.0) + float(latency), 4)
    new["call_input_tokens"] = [*new.get("call_input_tokens", []), int(usage.get("input_tokens", 0))]
    # what this call could call, and how many of the message's tool calls had run before it: whether a tool
    # was still offered after it worked (``evals.fit_paths`` reads this)
    new["call_steps"] = [*new.get("call_steps", []), {"offered": [t.name for t in tools],
                                                      "after": int(stats.get("tool_calls", 0))}]
    if speed := (reply.response_metadata or {}).get("speed"):  # a local engine's own timings (llm.local)
        new["speed"] = {k: round(float((new.get("speed") or {}).get(k, 0)) + float(v), 3) for k, v in speed.items()}
    return reply, new
