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


@pytest.mark.slow
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


def test_importing_the_embedder_leaves_the_environment_alone() -> None:
    # A library import must not change a user's process; the Hugging Face defaults are set only when an
    # embedder or tokenizer is built (llm.embeddings.quiet_offline_hf), and never over a user's own value.
    import subprocess
    import sys

    code = ("import os; before = dict(os.environ); import lg_harness.llm.embeddings as e; "
            "assert dict(os.environ) == before, set(os.environ) ^ set(before); "
            "e.count_tokens('hello'); assert os.environ['TOKENIZERS_PARALLELISM'] == 'false'; "
            "assert os.environ['HF_HUB_OFFLINE'] == 'mine'")
    env = {"PATH": "/usr/bin:/bin", "HF_HUB_OFFLINE": "mine"}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
