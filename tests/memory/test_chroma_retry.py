"""A Chroma server's transient internal error does not fail the message that touched long-term memory.

Seen in the four-worker test: one query answered ``InternalError: Error executing plan: Internal error:
Error creating hnsw segment ...`` and the whole message failed (HTTP 422). The same call a moment later works.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import chromadb
import pytest
from chromadb.config import Settings
from chromadb.errors import InternalError, InvalidArgumentError

from lg_harness.memory.chroma_retry import RetryingCollection
from lg_harness.memory.experiences import ExperienceStore

HNSW = "Error executing plan: Internal error: Error creating hnsw segment reader: Nothing found on disk"


class Flaky:
    """A real collection whose next ``failures`` queries fail as the server's did."""

    def __init__(self, collection: Any, failures: int) -> None:
        self.collection, self.failures, self.calls = collection, failures, 0

    def query(self, *args: Any, **kwargs: Any) -> Any:
        self.calls += 1
        if self.failures:
            self.failures -= 1
            raise InternalError(HNSW)
        return self.collection.query(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.collection, name)


class Client:
    def __init__(self, failures: int, path: Path) -> None:
        self.real = chromadb.PersistentClient(path=str(path), settings=Settings(anonymized_telemetry=False))
        self.failures = failures
        self.flaky: Flaky | None = None

    def get_or_create_collection(self, *args: Any, **kwargs: Any) -> Flaky:
        self.flaky = Flaky(self.real.get_or_create_collection(*args, **kwargs), self.failures)
        return self.flaky


def test_experiences_are_written_and_found_through_two_transient_server_errors(tmp_path: Path) -> None:
    client = Client(failures=2, path=tmp_path / "chroma")
    store = ExperienceStore(client=client, collection="retry-a", clock=lambda: 1000.0)
    written = store.add_many("U001", ["get_order_status(order_id=ORD-10134) succeeded: status=shipped"],
                             kind="outcome")
    assert len(written) == 1 and client.flaky is not None and client.flaky.calls == 3
    hits = store.search("U001", "where is order ORD-10134", k=3)
    assert [h.id for h in hits] == written


def test_an_error_that_is_not_transient_is_not_retried() -> None:
    calls = []

    class Broken:
        def query(self, **_: Any) -> Any:
            calls.append(1)
            raise InvalidArgumentError("n_results must be a positive integer")

    with pytest.raises(InvalidArgumentError):
        RetryingCollection(Broken(), sleep=lambda _s: None).query(n_results=0)
    assert calls == [1]


def test_a_server_that_keeps_failing_still_fails_after_a_few_tries() -> None:
    calls = []

    class Down:
        def get(self, **_: Any) -> Any:
            calls.append(1)
            raise InternalError(HNSW)

    with pytest.raises(InternalError):
        RetryingCollection(Down(), sleep=lambda _s: None).get(ids=["x"])
    assert len(calls) == 4
