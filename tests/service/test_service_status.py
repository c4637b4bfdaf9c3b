"""The status the HTTP service answers for a message that did not finish: a model that could not be reached
is the service's trouble (503, retry later), not a bad request."""

from __future__ import annotations

import contextlib
import threading
from types import SimpleNamespace
from typing import Any

from lg_harness.errors import HarnessError
from lg_harness.graphs.model_health import ModelUnavailable
from lg_harness.service.http import UNAVAILABLE, Worker, failure_status
from lg_harness.service.leases import Claim


def test_failure_status_by_outcome():
    assert failure_status({"status": "cancelled"}) == 409
    assert failure_status({"status": "failed", "result": {UNAVAILABLE: True}}) == 503
    assert failure_status({"status": "failed", "result": None}) == 422
    assert failure_status({"status": "abandoned"}) == 422


def _serve(raised: Exception) -> dict:
    stored: dict = {}

    def execute(claim):
        raise raised

    # A stand-in for the runtime with only what serve touches (Any: it is deliberately not a Worker).
    fake: Any = SimpleNamespace(
        local=threading.local(), queue=SimpleNamespace(
            holding=lambda claim, cancel: contextlib.nullcontext(),
            complete=lambda claim, status, result, error: stored.update(status=status, result=result, error=error)),
        _held=lambda thread_id: contextlib.nullcontext(), _execute=execute,
        metrics=SimpleNamespace(message=lambda *a: None))
    Worker.serve(fake, Claim(id=1, thread_id="t", kind="send", payload={}, attempts=1, recovered=False,
                              turn_before=None))
    return stored


def test_a_model_that_never_answered_is_stored_as_unavailable():
    row = _serve(ModelUnavailable("the model at http://localhost:1 did not answer"))
    assert row["status"] == "failed" and failure_status(row) == 503
    other = _serve(HarnessError("message too long"))
    assert other["status"] == "failed" and failure_status(other) == 422
