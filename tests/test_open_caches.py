"""Nothing lazy in the first message: what messages need is built when the harness opens (``graphs.warm``).

The embedder, the tokenizer and the domain's intent example vectors used to be built inside the first message
that needed them (1.4-1.6 s in the first message the rules could not classify). Now the first message
embeds only itself, and a reopened data dir reads the example vectors from its cache instead of embedding.
"""

from __future__ import annotations

import numpy as np
import pytest
from lg_harness.domains.shop import nlu
from lg_harness.graphs import warm as warm_module
from lg_harness.graphs.app import Harness
from lg_harness.llm import embeddings, minilm
from lg_harness.nodes import classify

try:
    from support import patient_design
except ImportError:  # tests/ imported as a package
    from tests.support import patient_design

# No rule of the shop matches it: the classifier falls back to the nearest example by embeddings.
UNRULED = "could you suggest a present for my dad"


def forget_embeddings() -> None:
    """As in a fresh process: no model loaded, no vector memoised, no example matrix built."""
    embeddings._embed_one.cache_clear()
    embeddings._preloaded.clear()
    minilm.bundled.cache_clear()
    classify._examples.cache_clear()
    nlu._prototype_matrix.cache_clear()


@pytest.fixture
def computed(monkeypatch):
    """Texts the embedder is run on from now on."""
    seen: list[str] = []
    compute = embeddings._compute_one

    def recording(name, text):
        seen.append(text)
        return compute(name, text)

    monkeypatch.setattr(embeddings, "_compute_one", recording)
    return seen


def test_the_first_message_embeds_only_itself(tmp_path, computed):
    forget_embeddings()
    with Harness(tmp_path, patient_design(), "sim:clean") as h:
        assert minilm.bundled.cache_info().currsize == 1, "the embedder is loaded when the harness opens"
        examples = warm_module.example_texts(h.domain)
        assert examples and set(examples) <= set(computed), "the examples are embedded at open"
        computed.clear()
        h.send("t", UNRULED, "U001")
        assert computed == [classify.clean_text(UNRULED)], "one embedding for the message, nothing else"
        assert nlu._prototype_matrix.cache_info().currsize == 1, "the message went to the example classifier"


def test_a_reopened_data_dir_reads_the_example_vectors_from_its_cache(tmp_path, computed):
    forget_embeddings()
    with Harness(tmp_path, patient_design(), "sim:clean") as h:
        texts = warm_module.example_texts(h.domain)
        [cached] = (tmp_path / warm_module.CACHE_DIR).glob("intent-examples-shop-*.npz")
        first = embeddings.embed(texts)
    forget_embeddings()
    computed.clear()
    with Harness(tmp_path, patient_design(), "sim:clean"):
        assert not set(texts) & set(computed), "read from the cache, not embedded again"
        assert np.array_equal(embeddings.embed(texts), first)
    assert list((tmp_path / warm_module.CACHE_DIR).glob("*.npz")) == [cached]


def test_another_version_of_the_examples_gets_a_cache_file_of_its_own(tmp_path):
    one = warm_module.cache_file(tmp_path, nlu_domain(), ["a", "b"])
    two = warm_module.cache_file(tmp_path, nlu_domain(), ["a", "b", "c"])
    assert one is not None and two is not None, "a data dir gets a cache file"
    assert one != two and one.parent == two.parent == tmp_path / warm_module.CACHE_DIR


def nlu_domain():
    from lg_harness.core.domain import load_domain

    return load_domain("shop")
