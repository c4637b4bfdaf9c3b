"""Nothing lazy in the first message: what messages need is built when the harness opens (``graphs.warm``).

The embedder, the tokenizer and the domain's intent example vectors used to be built inside the first message
that needed them (1.4-1.6 s in the first message the rules could not classify). Now the first message
embeds only itself, and a reopened data dir reads the example vectors from its cache instead of embedding.
"""

from __future__ import annotations

import numpy as np
import pytest

from lg_harness.graphs import warm as warm_module
from lg_harness.graphs.app import Harness, Settings
from lg_harness.graphs.runtime import Runtime
from lg_harness.nodes import classify
from tests.support import RecordingEmbedder, patient_design

# No rule of the shop matches it: the classifier falls back to the nearest example by embeddings.
UNRULED = "could you suggest a present for my dad"


@pytest.fixture
def embedder() -> RecordingEmbedder:
    return RecordingEmbedder()


def test_the_first_message_embeds_only_itself(tmp_path, embedder):
    with Harness("sim:clean", design=patient_design(),
                 settings=Settings(data_dir=tmp_path, runtime=Runtime(embedder=embedder))) as h:
        assert embedder.loaded, "the embedder is loaded when the harness opens"
        examples = warm_module.example_texts(h.domain)
        assert examples and set(examples) <= set(embedder.seen), "the examples are embedded at open"
        embedder.seen.clear()
        h.send("t", UNRULED, "U001")
        assert embedder.seen == [classify.clean_text(UNRULED)], "one embedding for the message, nothing else"


def test_a_reopened_data_dir_reads_the_example_vectors_from_its_cache(tmp_path, embedder):
    with Harness("sim:clean", design=patient_design(),
                 settings=Settings(data_dir=tmp_path, runtime=Runtime(embedder=embedder))) as h:
        texts = warm_module.example_texts(h.domain)
        [cached] = (tmp_path / warm_module.CACHE_DIR).glob("intent-examples-shop-*.npz")
        first = embedder.embed(texts)
    again = RecordingEmbedder()  # a new process: nothing memoised
    with Harness("sim:clean", design=patient_design(),
                 settings=Settings(data_dir=tmp_path, runtime=Runtime(embedder=again))):
        assert not set(texts) & set(again.seen), "read from the cache, not embedded again"
        assert np.array_equal(again.embed(texts), first)
    assert list((tmp_path / warm_module.CACHE_DIR).glob("*.npz")) == [cached]


def test_another_version_of_the_examples_gets_a_cache_file_of_its_own(tmp_path):
    one = warm_module.cache_file(tmp_path, nlu_domain(), ["a", "b"], "minilm")
    two = warm_module.cache_file(tmp_path, nlu_domain(), ["a", "b", "c"], "minilm")
    other_model = warm_module.cache_file(tmp_path, nlu_domain(), ["a", "b"], "another-model")
    assert one is not None and two is not None, "a data dir gets a cache file"
    assert len({one, two, other_model}) == 3 and one.parent == two.parent == tmp_path / warm_module.CACHE_DIR


def nlu_domain():
    from lg_harness.core.domain import load_domain

    return load_domain("shop")
