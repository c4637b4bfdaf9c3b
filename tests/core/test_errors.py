"""One error root: a caller catches ``HarnessError`` for anything the harness raises on purpose, and a branch
to tell a bad call (``UsageError``: fix it) from a failed run (``RunError``: the same call may work later)."""

from __future__ import annotations

import pytest

from lg_harness import HarnessError, RunError, UsageError
from lg_harness.core.state import NotTheOwner
from lg_harness.graphs.model_health import ModelUnavailable
from lg_harness.nodes.base import ModelCallFailed
from lg_harness.tools.errors import TransientError, ValidationError
from lg_harness.tools.executor import OutcomeUncertainError


@pytest.mark.parametrize("error", [ValidationError, TransientError, ModelCallFailed, OutcomeUncertainError,
                                   ModelUnavailable])
def test_failures_while_running_are_run_errors(error: type[Exception]) -> None:
    assert issubclass(error, RunError) and issubclass(error, HarnessError)
    assert not issubclass(error, UsageError)


def test_a_message_from_another_user_is_a_usage_error_and_still_a_value_error() -> None:
    # LangGraph's state reducers raise it; callers that caught ValueError keep working.
    assert issubclass(NotTheOwner, UsageError) and issubclass(NotTheOwner, ValueError)


def test_a_bad_message_is_refused_with_a_usage_error() -> None:
    from lg_harness.graphs.app import Harness, Settings

    with Harness("sim:clean", design="harness",
                 settings=Settings(data_dir=None)) as h, pytest.raises(UsageError, match="empty message"):
        h.send("t1", "   ", "U001")


def test_rules_that_do_not_compile_are_a_usage_error_and_rules_that_cannot_decide_a_run_error() -> None:
    from lg_harness.core.routing.errors import RuleRuntimeError, RuleSyntaxError

    assert issubclass(RuleSyntaxError, UsageError) and not issubclass(RuleSyntaxError, RunError)
    assert issubclass(RuleRuntimeError, RunError) and not issubclass(RuleRuntimeError, UsageError)


def test_every_error_the_project_defines_sits_in_one_branch() -> None:
    # A new error class directly under HarnessError would leave callers unable to tell "fix your call" from
    # "try again later"; walk every module of the package so such a class cannot slip in unseen.
    import importlib
    import pkgutil

    import lg_harness

    for info in pkgutil.walk_packages(lg_harness.__path__, "lg_harness."):
        if info.name.endswith("__main__"):  # running it is the command line, not a definition
            continue
        try:
            importlib.import_module(info.name)
        except ImportError:  # an optional extra this machine lacks (llama-cpp, a peer framework)
            continue

    def tree(cls: type) -> list[type]:
        return [cls, *(c for sub in cls.__subclasses__() for c in tree(sub))]

    loose = [c for c in tree(HarnessError) if c not in (HarnessError, UsageError, RunError)
             and c.__module__.startswith("lg_harness") and not issubclass(c, (UsageError, RunError))]
    assert loose == [], f"errors under HarnessError but in neither branch: {loose}"


def test_a_pack_authors_bench_script_mistake_is_a_usage_error_that_says_what_to_do() -> None:
    from lg_harness.core.domain import BenchScript

    with pytest.raises(UsageError, match="copy it from `messages`"):
        BenchScript(messages=("I am {user}",), facts=lambda r, u: {}, recall_question="who am I?", recall_key="user")
    with pytest.raises(UsageError, match=r"write \{order\} into messages\[0\]"):
        BenchScript(messages=("hi", "who am I?"), facts=lambda r, u: {}, recall_question="who am I?",
                    recall_key="order")
