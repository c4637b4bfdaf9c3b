"""One error root: a caller catches ``HarnessError`` for anything the harness raises on purpose, and a branch
to tell a bad call (``UsageError``: fix it) from a failed run (``RunError``: the same call may work later)."""

from __future__ import annotations

import pytest
from lg_harness.core.state import NotTheOwner
from lg_harness.graphs.model_health import ModelUnavailable
from lg_harness.nodes.base import ModelCallFailed
from lg_harness.tools.errors import TransientError, ValidationError
from lg_harness.tools.executor import OutcomeUncertainError

from lg_harness import HarnessError, RunError, UsageError


@pytest.mark.parametrize("error", [ValidationError, TransientError, ModelCallFailed, OutcomeUncertainError,
                                   ModelUnavailable])
def test_failures_while_running_are_run_errors(error: type[Exception]) -> None:
    assert issubclass(error, RunError) and issubclass(error, HarnessError)
    assert not issubclass(error, UsageError)


def test_a_message_from_another_user_is_a_usage_error_and_still_a_value_error() -> None:
    # LangGraph's state reducers raise it; callers that caught ValueError keep working.
    assert issubclass(NotTheOwner, UsageError) and issubclass(NotTheOwner, ValueError)


def test_a_bad_message_is_refused_with_a_usage_error() -> None:
    from lg_harness.graphs.app import Harness

    with Harness(None, "harness", "sim:clean") as h, pytest.raises(UsageError, match="empty message"):
        h.send("t1", "   ", "U001")
