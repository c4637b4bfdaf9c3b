"""A ``Runtime`` owns what harnesses share: variants, strategies, worker threads, the embedder.

What a user relies on: a variant registered on one runtime is selectable there and nowhere else; harnesses on
two runtimes share no memo and no threads; code handed no embedder (a domain's own classifier) uses the
runtime of the harness whose message it serves, not the process default; the process default changes only
through an explicit call.
"""

from __future__ import annotations

import pytest
from langchain_core.runnables import RunnableConfig

from lg_harness import (
    Harness,
    Runtime,
    Settings,
    UsageError,
    default_runtime,
    register_variant,
    set_default_runtime,
)
from lg_harness.core.state import HarnessState, StateUpdate
from lg_harness.llm import embeddings
from lg_harness.nodes.base import BUILTIN_VARIANTS, NodeDeps
from tests.support import RecordingEmbedder, patient_design

# No keyword rule of the shop matches it: the shop's own classifier embeds it (llm.embeddings.embed).
UNRULED = "could you suggest a present for my dad"


class Survey:
    """A reply variant that asks one question, whatever happened."""

    def __init__(self, deps: NodeDeps) -> None:
        self.deps = deps

    def __call__(self, state: HarnessState, config: RunnableConfig) -> StateUpdate:
        return {"reply": "How did we do today, from 1 to 5?", "phase": "done"}


def survey_design():
    design = patient_design()
    return design.model_copy(update={"name": "survey", "variants": {**design.variants, "reply": "survey"}})


def test_a_variant_registered_on_a_runtime_is_that_runtimes_alone():
    mine = Runtime()
    mine.variants.register("reply", "survey")(Survey)
    with Harness("sim:clean", design=survey_design(), settings=Settings(data_dir=None, runtime=mine)) as h:
        assert h.send("t", "hello", "U001").reply == "How did we do today, from 1 to 5?"
    with pytest.raises(UsageError, match="unknown reply variant 'survey'; valid: model"):
        Harness("sim:clean", design=survey_design(), settings=Settings(data_dir=None, runtime=Runtime()))
    with pytest.raises(UsageError, match="unknown reply variant 'survey'"):
        Harness("sim:clean", design=survey_design(),
                settings=Settings(data_dir=None))  # the process default did not get it either
    assert "survey" not in BUILTIN_VARIANTS.of("reply")


def test_register_variant_adds_to_the_default_runtime_only(monkeypatch):
    fresh = Runtime()
    set_default_runtime(fresh)
    try:
        assert default_runtime() is fresh
        register_variant("reply", "survey")(Survey)
        with Harness("sim:clean", design=survey_design(), settings=Settings(data_dir=None)) as h:
            assert h.runtime is fresh
            assert h.send("t", "hello", "U001").reply.startswith("How did we do")
        assert "survey" not in Runtime().variants.of("reply")
    finally:
        set_default_runtime(None)
    assert default_runtime() is not fresh and "survey" not in default_runtime().variants.of("reply")


def test_harnesses_on_two_runtimes_share_no_embeddings_or_threads(tmp_path):
    one, two = RecordingEmbedder(), RecordingEmbedder()
    first, second = Runtime(embedder=one), Runtime(embedder=two)
    default_before = embeddings.default_embedder().computed
    with Harness("sim:clean", design=patient_design(),
                 settings=Settings(data_dir=tmp_path / "a", runtime=first)) as a, \
            Harness("sim:clean", design=patient_design(),
                    settings=Settings(data_dir=tmp_path / "b", runtime=second)) as b:
        one.seen.clear()
        two.seen.clear()
        a.send("t", UNRULED, "U001")
        # the shop's own classifier (handed no embedder) used the runtime of the harness it served
        assert one.seen == [UNRULED] and two.seen == []
        b.send("t", UNRULED, "U001")
        assert two.seen == [UNRULED], "a memo is its runtime's: the second runtime computes its own"
        assert a.graph is not b.graph
    assert embeddings.default_embedder().computed == default_before, "the process default was never used"
    assert first.model_calls is not second.model_calls and first.tool_workers is not second.tool_workers


def test_a_closed_runtime_still_serves_a_later_message():
    runtime = Runtime()
    with Harness("sim:clean", design=patient_design(),
                 settings=Settings(data_dir=None, runtime=runtime)) as h:
        h.send("t", "Where is my order ORD-10134?", "U001")
        runtime.close()  # e.g. a notebook cell that closed it early: the next call starts a new pool
        assert "ORD-10134" in h.send("t", "and where is it now?", "U001").reply
