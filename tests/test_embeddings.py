"""The NumPy MiniLM encoder gives the same embeddings as sentence-transformers on the same weights."""

import numpy as np
import pytest
from lg_harness.llm.embeddings import bundled_model_dir, count_tokens, embed, sentence_embed

TEXTS = [
    "where is my order ORD-10134?",
    "我的订单到哪了？",
    "Do you sell wireless bluetooth headphones in black?",
    "ok",
    "The customer prefers email over phone calls. " * 20,  # long input, several hundred tokens
    "",
]


@pytest.fixture(scope="module")
def reference() -> np.ndarray:
    return sentence_embed(TEXTS, str(bundled_model_dir()))


def test_numpy_encoder_matches_sentence_transformers(reference: np.ndarray) -> None:
    ours = embed(TEXTS)
    assert ours.shape == reference.shape == (len(TEXTS), 384)
    cosines = (ours * reference).sum(axis=1)
    assert cosines.min() > 0.9999, cosines
    assert np.allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)


def test_similar_questions_score_higher_than_unrelated() -> None:
    a, b, c = embed(["where is my package", "when will my parcel arrive", "do you sell running shoes"])
    assert a @ b > a @ c + 0.2


def test_token_counting_is_offline_and_counts_chinese_per_character() -> None:
    assert count_tokens("") == 0
    assert count_tokens("订单") == 2
    assert count_tokens("where is my order") == 4
