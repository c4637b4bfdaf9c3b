"""Saved llama.cpp states, so a prompt that shares a long prefix with any recent call (not only the last
one) skips re-reading it.

llama.cpp keeps one KV cache: the last call's tokens. A harness step that offers other tools than the one
before (the intent label with none, the action step with three, the answer with none) changes the prompt
right after the system message, so with one slot each call re-reads everything after it. Keeping the
state of each recent call (``llama_state_get_data``: the used KV cells, about 12 KB a token for the 0.5B
model) and restoring the one with the longest common prefix lets the next action step of a conversation
start from the previous action step's tokens. Saving the scores array, as ``Llama.save_state`` does, is
not needed (the suffix decode refreshes the logits) and would cost hundreds of MB a state.

The cache is per engine and in memory; its size is capped in bytes (``HARNESS_LOCAL_CACHE_MB``, default
512), least recently used first out.
"""

from __future__ import annotations

import ctypes
import os
from collections import OrderedDict
from typing import Any

import numpy as np

DEFAULT_MB = 512


def _common(a: np.ndarray, b: np.ndarray) -> int:
    n = min(len(a), len(b))
    if n == 0:
        return 0
    diff = np.nonzero(a[:n] != b[:n])[0]
    return int(diff[0]) if len(diff) else n


class PrefixStates:
    """States of recent calls keyed by their tokens (prompt and what was generated)."""

    def __init__(self, capacity_bytes: int | None = None) -> None:
        mb = float(os.environ.get("HARNESS_LOCAL_CACHE_MB", DEFAULT_MB))
        self.capacity = int(mb * 1024 * 1024) if capacity_bytes is None else capacity_bytes
        self.states: OrderedDict[int, tuple[np.ndarray, bytes]] = OrderedDict()
        self.size = 0
        self._next = 0

    def best(self, tokens: np.ndarray) -> tuple[int, int | None]:
        """The longest prefix of ``tokens`` any saved state holds, and that state's handle."""
        found, handle = 0, None
        for key, (saved, _) in self.states.items():
            n = _common(saved, tokens)
            if n > found:
                found, handle = n, key
        return found, handle

    def save(self, llama: Any) -> None:
        """The engine's current state (its KV cells for ``llama._input_ids``)."""
        import llama_cpp  # pyright: ignore[reportMissingImports]  (the optional `local` extra)

        if self.capacity <= 0:
            return
        size = llama_cpp.llama_state_get_size(llama._ctx.ctx)
        buffer = (ctypes.c_uint8 * int(size))()
        written = int(llama_cpp.llama_state_get_data(llama._ctx.ctx, buffer, size))
        data = bytes(buffer[:written])
        tokens = np.array(llama._input_ids, dtype=np.intc)
        # a state whose tokens extend another's replaces it: the longer one serves every prompt the shorter did
        for key, (saved, old) in list(self.states.items()):
            if len(saved) <= len(tokens) and _common(saved, tokens) == len(saved):
                del self.states[key]
                self.size -= len(old)
        self.states[self._next] = (tokens, data)
        self._next += 1
        self.size += len(data)
        while self.size > self.capacity and self.states:
            _, (_, old) = self.states.popitem(last=False)
            self.size -= len(old)

    def restore(self, llama: Any, handle: int) -> int:
        """Load a saved state into the engine; returns how many tokens it holds."""
        import llama_cpp  # pyright: ignore[reportMissingImports]  (the optional `local` extra)

        tokens, data = self.states[handle]
        self.states.move_to_end(handle)
        buffer = (ctypes.c_uint8 * len(data)).from_buffer_copy(data)
        if llama_cpp.llama_state_set_data(llama._ctx.ctx, buffer, len(data)) != len(data):
            raise RuntimeError("llama.cpp did not take the saved state back")
        llama.input_ids[: len(tokens)] = tokens
        llama.n_tokens = len(tokens)
        llama._requires_eval = True  # the logits are not restored: the next decode refreshes them
        return len(tokens)
