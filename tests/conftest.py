"""Shared fixtures, and a guard that makes a real model call impossible by accident.

Every test runs with the network-backed chat models (``ChatOllama``, ``ChatOpenAI``) patched so that any
generation raises at once with a clear message. Nodes turn model failures into a polite 'busy' reply, so
the guard also records each attempt and fails the test at teardown: a blocked call can never pass
silently. Tests that really talk to a model opt in with ``@pytest.mark.real_model_wire``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

REAL_MODEL_MARKER = "real_model_wire"
# The methods a LangChain chat model generates through; the first two must exist or the guard is void.
_REQUIRED = ("_generate", "_agenerate")
_OPTIONAL = ("_stream", "_astream")


# The tests check the harness against a faulty model whose faults they were written for: the sourced priors.
# Reports use the measured `fitted` profile (the default for plain `sim` outside the tests).
os.environ.setdefault("SIMLM_PROFILE", "prior")


# Markers by what a test needs or costs (registered in pyproject.toml, [tool.pytest.ini_options]), so
# ``pytest -m "not slow"`` is the quick suite (README) and a machine without a browser, PostgreSQL or the local
# model can leave those out by name. CI runs everything.
NEEDS = ("real_model", "browser", "postgres", "docs")


@pytest.hookimpl(tryfirst=True)  # before ``-m`` deselects: the markers added here count there
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A test that takes the PostgreSQL server fixture is a ``postgres`` test, whatever file it is in; a test that
    needs the real model, a browser, PostgreSQL or builds the docs is also ``slow``, so ``-m "not slow"`` never
    starts one."""
    for item in items:
        if "postgres_server" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.postgres)
        if not item.get_closest_marker("slow") and any(item.get_closest_marker(name) for name in NEEDS):
            item.add_marker(pytest.mark.slow)


class RealModelCallBlocked(RuntimeError):
    """Raised instead of a real model call in tests not marked ``real_model_wire``."""


def _real_model_classes() -> list[type]:
    from langchain_ollama import ChatOllama
    from langchain_openai import ChatOpenAI
    from langchain_openai.chat_models.base import BaseChatOpenAI

    return [ChatOllama, ChatOpenAI, BaseChatOpenAI]


@pytest.fixture(autouse=True)
def _no_real_model_calls(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    attempts: list[str] = []
    if request.node.get_closest_marker(REAL_MODEL_MARKER):
        yield attempts
        return
    for cls in _real_model_classes():
        for name in _REQUIRED:
            assert hasattr(cls, name), (
                f"{cls.__module__}.{cls.__name__} has no {name}: update tests/conftest.py so real model calls "
                "stay blocked"
            )
        for name in (*_REQUIRED, *_OPTIONAL):
            if not hasattr(cls, name):
                continue
            label = f"{cls.__name__}.{name}"
            message = (f"real model call blocked in tests ({label}); use the 'sim' model, or mark the test "
                       f"@pytest.mark.{REAL_MODEL_MARKER} if it must reach a real endpoint")

            def blocked(*args: Any, _label: str = label, _message: str = message, **kwargs: Any) -> Any:
                attempts.append(_label)
                raise RealModelCallBlocked(_message)

            async def ablocked(*args: Any, _label: str = label, _message: str = message, **kwargs: Any) -> Any:
                attempts.append(_label)
                raise RealModelCallBlocked(_message)

            # _agenerate is awaited; the stream methods raise as soon as they are called.
            monkeypatch.setattr(cls, name, ablocked if name == "_agenerate" else blocked)
    yield attempts
    if attempts:  # a test that provokes the guard on purpose clears this list
        pytest.fail(f"a real model call was attempted (and blocked): {', '.join(attempts)}; "
                    f"tests use the 'sim' model unless marked @pytest.mark.{REAL_MODEL_MARKER}")


# ------------------------------------------------------------------------------------------- shop data


@pytest.fixture
def shop(tmp_path):
    """The seeded demo shop in this test's tmp_path (the same file a Harness on tmp_path uses)."""
    from lg_harness.domains.shop.backend import ShopDB

    db = ShopDB.open(tmp_path / "shop.sqlite")
    yield db
    db.close()


def patient_design(name: str = "harness"):
    """The preset with a longer wall-clock model deadline.

    ``model_timeout_s`` is real time while the sim's latency is virtual: on a loaded CI machine a sim call
    can pass 15 s and turn into a 'busy' reply. Deadlines are tested on their own, not by accident here.
    """
    from lg_harness.core.design import load_design

    design = load_design(name)
    design.knobs.model_timeout_s = max(design.knobs.model_timeout_s, 120.0)
    return design


@pytest.fixture
def harness_app(tmp_path):
    """A ``Harness`` on tmp_path with the default design (patient model deadline) and the ``sim`` model, used
    by a user who confirms the changes they ask for (``ConfirmingUser``)."""
    from lg_harness.graphs.app import Harness, Settings
    from tests.support import ConfirmingUser

    h = Harness(design=patient_design(), settings=Settings(data_dir=tmp_path))
    yield ConfirmingUser(h)
    h.close()


def orders_by_status(db, user_id: str) -> dict[str, list[str]]:
    rows = db.query("SELECT id, status FROM orders WHERE user_id = ? ORDER BY id", (user_id,))
    out: dict[str, list[str]] = {}
    for r in rows:
        out.setdefault(r["status"], []).append(r["id"])
    return out


@pytest.fixture
def u001_orders(shop) -> dict[str, list[str]]:
    """U001's order ids by status, read from the seeded database (never hard-coded in tests)."""
    found = orders_by_status(shop, "U001")
    for status in ("pending", "shipped", "delivered"):
        assert found.get(status), f"the seed no longer gives U001 a {status} order; tests need one"
    return found


# ------------------------------------------------------------------------------------------ recording sim


@pytest.fixture(scope="session")
def recording_sim_cls():
    """A ``SimChatModel`` subclass that keeps every call's input messages, offered tools and output.

    Its fault profile defaults to ``clean`` (node tests check the harness, not the model's faults); pass
    ``faults="prior"`` for the profile the ``sim`` spec uses.
    """
    from pydantic import Field

    from lg_harness.llm.sim import SimChatModel

    class RecordingSim(SimChatModel):
        faults: str = "clean"
        calls: list = Field(default_factory=list)

        def _generate(self, messages, stop=None, run_manager=None, **kwargs):
            result = super()._generate(messages, stop, run_manager, **kwargs)
            self.calls.append({
                "messages": list(messages),
                "tools": [t["function"]["name"] for t in kwargs.get("tools") or []],
                "output": result.generations[0].message,
            })
            return result

    return RecordingSim


# CI builds the real local model (.ci/run sets HARNESS_TEST_REQUIRE_LOCAL_MODEL=1): there a real-model test that
# skips because llama-cpp-python or the weights are missing is a failure, not a pass that checked nothing.
_LOCAL_MODEL_SKIPS = ("llama-cpp-python", "llama_cpp", "--local-model", "GGUF")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()
    if report.skipped and os.environ.get("HARNESS_TEST_REQUIRE_LOCAL_MODEL") == "1":
        reason = str(report.longrepr[-1]) if isinstance(report.longrepr, tuple) else str(report.longrepr)
        if any(marker in reason for marker in _LOCAL_MODEL_SKIPS):
            report.outcome = "failed"
            report.longrepr = f"{reason} (HARNESS_TEST_REQUIRE_LOCAL_MODEL=1: CI must run the real-model tests)"
