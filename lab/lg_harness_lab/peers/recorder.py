"""The one recorder every peer framework runs through: the cell's world in, our run record out.

A peer cell meets exactly what a design's cell meets in ``evals.runner.run_cell``: fresh copies of the
domain's backends, the same seeded fault plan on every tool (scripted faults plus background rates), the
same virtual clock, and the same model spec (the sim with its profile and the cell's seed, or a real
model). What differs is who runs the loop: the framework, with its own tool type, its own argument
validation, its own retries and its own memory.

The recorder sees two things and nothing of the framework's internals:

- every model response (through :class:`RecordedChatModel`, the chat model every adapter calls): its
  usage, its virtual latency and the tool calls the model emitted, valid or not;
- every call that reached a domain tool (through :meth:`PeerCell.run_tool`, the function every adapter's
  tool type wraps): the arguments after the framework validated them, each attempt, and how it ended.

From those it writes turns with the fields ``evals.runner`` writes, so ``evals.metrics`` scores a peer
with the same code as a design. A call the model emitted that never reached the tool (the framework's
validation refused it) is kept with ``reached_tool: False``.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import ConfigDict
from pydantic_core import to_jsonable_python

from lg_harness.core.domain import Domain, load_domain
from lg_harness.llm.factory import close_model, make_model
from lg_harness.tools.context import ToolContext
from lg_harness.tools.errors import classify
from lg_harness.tools.executor import call_tool
from lg_harness.tools.faults import FaultPlan
from lg_harness.tools.registry import ToolSpec
from lg_harness_lab.evals.customer import asks_permission
from lg_harness_lab.evals.runner import (
    BACKGROUND_RATES,
    VirtualClock,
    cell_id,
    confirmation_answer,
    customer_for,
    model_spec_for,
    with_confirmation,
)
from lg_harness_lab.evals.world import World

THREAD = "eval"


@dataclass
class CallLog:
    """One tool call the model emitted, and what became of it."""

    call_id: str
    name: str
    emitted_args: Any
    args: Any = None
    reached_tool: bool = False
    status: str = "error"
    error_type: str | None = "validation"  # until it reaches the tool: the framework refused the arguments
    exception: str | None = None
    attempts: int = 0
    result: Any = None

    def record(self) -> dict[str, Any]:
        return {"name": self.name, "args": self.args if self.reached_tool else self.emitted_args,
                "emitted_args": self.emitted_args, "reached_tool": self.reached_tool, "status": self.status,
                "error_type": self.error_type, "exception": self.exception, "attempts": self.attempts,
                "result": self.result}


@dataclass
class TurnLog:
    """What happened during one user message."""

    index: int
    calls: list[CallLog] = field(default_factory=list)
    model_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int | None = None
    call_input_tokens: list[int] = field(default_factory=list)
    model_latency_s: float = 0.0
    speed: dict[str, float] = field(default_factory=dict)  # a local engine's timings, summed (llm.local)
    started: tuple[float, float] = (0.0, 0.0)


class RecordedChatModel(BaseChatModel):
    """The cell's chat model, as every peer calls it: each response is recorded, then handed back unchanged.

    ``bind_tools`` keeps the tools as OpenAI function schemas and binds them to the inner model per call,
    so the inner model (the sim, a local model, an endpoint) reads them the way it always does.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    inner: BaseChatModel
    cell: Any  # the PeerCell
    model_name: str = "peer-model"

    @property
    def _llm_type(self) -> str:
        return "peer-recorded"

    def bind_tools(self, tools: Sequence[Any], *, tool_choice: str | None = None, **kwargs: Any) -> Any:
        return self.bind(peer_tools=[convert_to_openai_tool(t) for t in tools], **kwargs)

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None,
                  run_manager: CallbackManagerForLLMRun | None = None, peer_tools: list[dict] | None = None,
                  **kwargs: Any) -> ChatResult:
        model = self.inner.bind_tools(peer_tools) if peer_tools else self.inner
        reply = model.invoke(messages, stop=stop, **kwargs)
        self.cell.model_response(reply)
        return ChatResult(generations=[ChatGeneration(message=reply)])


class PeerCell:
    """One scenario x seed for one peer: the world it runs in, and the record of what it did."""

    def __init__(self, peer: str, scenario: Any, seed: int, model: str = "sim",
                 domain: Domain | str | None = None) -> None:
        self.peer, self.scenario, self.seed, self.model_spec = peer, scenario, seed, model
        self.domain = load_domain(domain)
        self.clock = VirtualClock()
        # The same faults a design's cell meets: they depend on the scenario and the seed only.
        fault_seed = int(hashlib.sha1(f"{scenario.id}|{seed}".encode()).hexdigest()[:12], 16) % 2**31
        self.plan = FaultPlan(scripted=scenario.tool_faults, rates=BACKGROUND_RATES, seed=fault_seed,
                              clock=self.clock.time)
        self.registry = self.plan.apply(self.domain.registry())
        self.backends = self.domain.fresh_resources() if self.domain.fresh_resources else {}
        user_id = scenario.user_id or self.domain.default_user
        found = self.domain.user(user_id, self.backends) or {}
        self.user = {"id": str(found.get("id") or user_id),
                     "role": scenario.role or str(found.get("role") or self.domain.default_role)}
        self.world = World(self.backends)
        self.inner_model = make_model(model_spec_for(model, seed, self.domain.name), domain=self.domain)
        self.chat_model = RecordedChatModel(inner=self.inner_model, cell=self)
        self.turn: TurnLog | None = None
        self.turns: list[dict[str, Any]] = []
        self._lock = threading.Lock()

    # -- what adapters use

    @property
    def tools(self) -> list[ToolSpec]:
        """Every tool of the domain, registered once, as frameworks register them (no per-role masking)."""
        return [spec for n in self.registry.names() if (spec := self.registry.get(n)) is not None]

    @property
    def handoff_tool(self) -> str | None:
        return self.domain.handoff.tool

    def tool_context(self) -> ToolContext:
        return ToolContext(user_id=self.user["id"], role=self.user["role"], thread_id=THREAD, extras=dict(self.backends))

    def model_response(self, reply: AIMessage) -> None:
        """Count one model call and note the tool calls it emitted (valid ones and unreadable ones)."""
        with self._lock:
            turn = self._current()
            usage = reply.usage_metadata or {}
            tokens = int(usage.get("input_tokens") or 0)
            turn.model_calls += 1
            turn.input_tokens += tokens
            turn.output_tokens += int(usage.get("output_tokens") or 0)
            turn.call_input_tokens.append(tokens)
            cached = (usage.get("input_token_details") or {}).get("cache_read")
            if cached is not None:
                turn.cached_input_tokens = (turn.cached_input_tokens or 0) + int(cached)
            turn.model_latency_s += float((reply.response_metadata or {}).get("latency_s") or 0.0)
            for key, value in ((reply.response_metadata or {}).get("speed") or {}).items():
                turn.speed[key] = round(turn.speed.get(key, 0.0) + float(value), 3)
            for call in reply.tool_calls:
                turn.calls.append(CallLog(call_id=str(call.get("id") or ""), name=call["name"],
                                          emitted_args=dict(call.get("args") or {})))
            for bad in reply.invalid_tool_calls:
                turn.calls.append(CallLog(call_id=str(bad.get("id") or ""), name=str(bad.get("name") or ""),
                                          emitted_args=bad.get("args")))

    def run_tool(self, spec: ToolSpec, call_id: str | None, kwargs: dict[str, Any]) -> Any:
        """Run the domain tool with arguments the framework has validated; raise what the backend raised.

        Every attempt (a framework's retry calls this again with the same call id) is counted on the call.
        """
        with self._lock:
            log = self._call_log(spec.name, call_id, kwargs)
            log.reached_tool = True
            log.args = to_jsonable_python(kwargs, fallback=str)
            log.attempts += 1
        try:
            result = call_tool(spec, kwargs, self.tool_context())
        except Exception as err:
            with self._lock:
                log.status, log.error_type, log.exception, log.result = "error", classify(err), type(err).__name__, None
            raise
        with self._lock:
            log.status, log.error_type, log.exception = "ok", None, None
            log.result = to_jsonable_python(result, fallback=str)
        return result

    def hold_for_human(self, name: str) -> None:
        """Calls of ``name`` this turn that a human-approval interrupt paused: not refused, never run."""
        with self._lock:
            for call in self._current().calls:
                if call.name == name and not call.reached_tool:
                    call.status, call.error_type = "pending", "awaiting_human"

    # -- turns

    def play(self, send: Callable[[str], dict[str, Any]]) -> dict[str, Any]:
        """Play every user turn through ``send(text) -> {"reply", "path", ...}``; return the run record.

        ``send`` may return ``waiting=True`` (the peer paused for a human: the bot is out of this message),
        ``handoff=True`` and ``stop_reason``; an exception from the framework ends that message with the
        error as the user would get it: no reply.
        """
        customer = customer_for(self.scenario, self.seed)  # the same customer every design meets
        try:
            text: str | None = customer.opening()
            while text is not None:
                record = self._message(send, text)
                if self.scenario.goal is None and "error" not in record and asks_permission(record["reply"]):
                    # the scripted customer answers a confirmation question in words, as part of the turn
                    answer = confirmation_answer(self.scenario, self.scenario.turns[len(self.turns)])
                    record = with_confirmation(record, self._message(send, answer), answer)
                self.turns.append(record)
                self.turns[-1]["world"] = self.world.turn_changes()
                if self.scenario.goal is not None:
                    self.turns[-1].update(user=text, customer=customer.events[-1].kind if customer.events else "open")
                text = customer.react(self.turns[-1]["reply"])
        finally:
            self.close()
        return {"cell": cell_id(self.peer, self.scenario.id, self.seed), "design": self.peer,
                "domain": self.domain.name, "scenario": self.scenario.id, "seed": self.seed,
                "model": self.model_spec, "tags": self.scenario.tags, "lang": self.scenario.lang,
                "turns": self.turns, "fault_events": self.plan.events, "world": self.world.changes()}

    def _message(self, send: Callable[[str], dict[str, Any]], text: str) -> dict[str, Any]:
        """The record of one message sent to the peer."""
        self.turn = TurnLog(index=len(self.turns), started=(self.plan.virtual_elapsed[0], self.clock.now))
        try:
            outcome = send(text)
        except Exception as err:  # noqa: BLE001 - what the user sees of a framework's exception
            outcome = {"reply": "", "path": ["error"], "error": f"{type(err).__name__}: {err}"[:500]}
        return self._turn_record(outcome)

    def _turn_record(self, outcome: dict[str, Any]) -> dict[str, Any]:
        turn = self._current()
        calls = [c.record() for c in turn.calls]
        tool_s = self.plan.virtual_elapsed[0] - turn.started[0] + self.clock.now - turn.started[1]
        handed_off = outcome.get("handoff")
        if handed_off is None:  # the domain's handoff tool ran: a human was asked for
            handed_off = any(c["name"] == self.handoff_tool and c["status"] == "ok" for c in calls)
        record = {
            "index": turn.index, "intent": "open", "reply": str(outcome.get("reply") or ""),
            "path": [] if outcome.get("waiting") else list(outcome.get("path") or ["agent"]),
            "phase": "handoff" if handed_off else "done", "handoff": bool(handed_off),
            "tool_calls": calls, "model_calls": turn.model_calls, "input_tokens": turn.input_tokens,
            "cached_input_tokens": turn.cached_input_tokens, "output_tokens": turn.output_tokens,
            "call_input_tokens": list(turn.call_input_tokens),
            "latency_s": round(turn.model_latency_s + tool_s, 4), "stop_reason": outcome.get("stop_reason"),
            "model_latency_s": round(turn.model_latency_s, 4), **({"speed": dict(turn.speed)} if turn.speed else {}),
        }
        if outcome.get("error"):
            record["error"] = outcome["error"]
        return record

    def _current(self) -> TurnLog:
        if self.turn is None:  # a call outside play(): a test driving an adapter by hand
            self.turn = TurnLog(index=0)
        return self.turn

    def _call_log(self, name: str, call_id: str | None, kwargs: dict[str, Any]) -> CallLog:
        calls = self._current().calls
        if call_id:
            found = next((c for c in calls if c.call_id == call_id), None)
            if found is not None:
                return found
        # No id from the framework: the oldest emitted call of this tool that has not reached it yet.
        found = next((c for c in calls if c.name == name and not c.reached_tool), None)
        if found is None:  # a call no model response announced (cannot happen with these frameworks)
            found = CallLog(call_id=call_id or "", name=name, emitted_args=to_jsonable_python(kwargs, fallback=str))
            calls.append(found)
        return found

    def close(self) -> None:
        close_model(self.inner_model)
        for backend in self.backends.values():
            if callable(getattr(backend, "close", None)):
                backend.close()
        self.backends = {}


@contextlib.contextmanager
def virtual_sleep(cell: PeerCell, *modules: Any) -> Iterator[None]:
    """Point ``time.sleep`` of the given framework modules at the cell's virtual clock for the run.

    Retry middleware waits with ``time.sleep``; in an evaluation those waits cost virtual time only, as
    the designs' executors' waits do. Each module's ``time`` is replaced by a view of the real module whose
    ``sleep`` is the clock's; nothing else changes.
    """

    class _Time:
        def __init__(self, real: Any) -> None:
            self._real = real

        def __getattr__(self, name: str) -> Any:
            return getattr(self._real, name)

        @staticmethod
        def sleep(seconds: float) -> None:
            cell.clock.sleep(seconds)

    saved = [(m, m.time) for m in modules]
    try:
        for module, real in saved:
            module.time = _Time(real)
        yield
    finally:
        for module, real in saved:
            module.time = real


def as_json(value: Any) -> str:
    """A tool result as the text frameworks hand back to the model."""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
