"""Fault injection for tool backends: timeouts, 429 with Retry-After, 5xx and malformed payloads.

A ``FaultPlan`` wraps the functions of a registry. Each tool gets either a scripted sequence of outcomes
(scenario files: ``{"get_order_status": ["timeout", "ok"]}``) or seeded random faults at given rates.
Faults are raised as the exceptions a real HTTP backend produces, so each executor classifies them its way.
"""

from __future__ import annotations

import functools
import random
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from lg_harness.errors import UsageError
from lg_harness.tools.errors import RateLimitedError, ToolTimeoutError, TransientError
from lg_harness.tools.registry import ToolRegistry

FAULTS = ("ok", "timeout", "rate_limited", "server_error", "malformed")


class BackendHTTPError(TransientError):
    """A 5xx from the backend."""

    def __init__(self, message: str, status_code: int = 503) -> None:
        super().__init__(message)
        self.status_code = status_code


@dataclass
class FaultPlan:
    scripted: Mapping[str, Sequence[str]] = field(default_factory=dict)
    rates: Mapping[str, float] = field(default_factory=dict)  # fault name -> probability per call
    seed: int = 0
    retry_after_s: float = 2.0
    latency_s: float = 0.12  # virtual time one backend call takes
    virtual_elapsed: list[float] = field(default_factory=lambda: [0.0])
    clock: Callable[[], float] | None = None  # stamps events, e.g. an evaluation's virtual clock
    events: list[dict[str, Any]] = field(default_factory=list)
    _counts: dict[str, int] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        unknown = {f for seq in self.scripted.values() for f in seq} | set(self.rates)
        if bad := sorted(unknown - set(FAULTS)):
            raise UsageError(f"unknown tool faults {bad}; known: {', '.join(FAULTS)}")
        self._rng = random.Random(self.seed)

    def next_fault(self, tool: str) -> str:
        with self._lock:
            n = self._counts.get(tool, 0)
            self._counts[tool] = n + 1
            self.virtual_elapsed[0] += self.latency_s
            script = self.scripted.get(tool)
            fault = (script[n] if n < len(script) else "ok") if script is not None else self._draw()
            self.events.append({"tool": tool, "n": n, "fault": fault,
                                "t": round(self.clock(), 3) if self.clock else None})
            return fault

    def _draw(self) -> str:
        roll = self._rng.random()
        for fault, p in self.rates.items():
            if roll < p:
                return fault
            roll -= p
        return "ok"

    def wrap(self, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def faulty(*args: Any, **kwargs: Any) -> Any:
            fault = self.next_fault(name)
            if fault == "timeout":
                raise ToolTimeoutError(f"{name}: backend did not answer in time")
            if fault == "rate_limited":
                raise RateLimitedError(f"{name}: 429 Too Many Requests", retry_after=self.retry_after_s)
            if fault == "server_error":
                raise BackendHTTPError(f"{name}: 503 Service Unavailable")
            result = fn(*args, **kwargs)
            if fault == "malformed":
                return {"raw": "<html><body>502 Bad Gateway</body></html>" + str(result)[:40]}
            return result

        return faulty

    def apply(self, registry: ToolRegistry) -> ToolRegistry:
        """A new registry whose tools go through this plan (the original registry is untouched)."""
        specs = [registry.get(name) for name in registry.names()]
        return ToolRegistry([replace(s, fn=self.wrap(s.name, s.fn)) for s in specs if s is not None])
