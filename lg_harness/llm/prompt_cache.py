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
512), least recently used first out. With ``HARNESS_LOCAL_CACHE_DIR`` set, every saved state is also written
there (one ``.npz`` a state, in a folder per model file and context settings) and a new process starts from
them: each ``harness run`` is a process of its own, and its next message on a thread then reads only what
is new. The folder is capped too (``HARNESS_LOCAL_CACHE_DISK_MB``, default 2048), oldest files out.
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import os
from collections import OrderedDict
from pathlib import Path
from typing import Any

import numpy as np

DEFAULT_MB = 512
DEFAULT_DISK_MB = 2048


def _common(a: np.ndarray, b: np.ndarray) -> int:
    n = min(len(a), len(b))
    if n == 0:
        return 0
    diff = np.nonzero(a[:n] != b[:n])[0]
    return int(diff[0]) if len(diff) else n


class PrefixStates:
    """States of recent calls keyed by their tokens (prompt and what was generated)."""

    def __init__(self, capacity_bytes: int | None = None, directory: str | Path | None = None,
                 disk_bytes: int | None = None) -> None:
        mb = float(os.environ.get("HARNESS_LOCAL_CACHE_MB", DEFAULT_MB))
        self.capacity = int(mb * 1024 * 1024) if capacity_bytes is None else capacity_bytes
        self.states: OrderedDict[int, tuple[np.ndarray, bytes]] = OrderedDict()
        self.size = 0
        self._next = 0
        self.directory = Path(directory) if directory else None
        disk_mb = float(os.environ.get("HARNESS_LOCAL_CACHE_DISK_MB", DEFAULT_DISK_MB))
        self.disk_capacity = int(disk_mb * 1024 * 1024) if disk_bytes is None else disk_bytes
        self.on_disk: dict[Path, np.ndarray] = {}  # a state's file -> its tokens (the data is read when used)
        if self.directory is not None:
            self.directory.mkdir(parents=True, exist_ok=True)
            for path in sorted(self.directory.glob("*.npz")):
                with contextlib.suppress(OSError, ValueError, KeyError), np.load(path) as stored:
                    self.on_disk[path] = np.array(stored["tokens"], dtype=np.intc)

    def best(self, tokens: np.ndarray) -> tuple[int, int | None]:
        """The longest prefix of ``tokens`` any saved state holds, and that state's handle (a state found only
        on disk is read into memory first)."""
        found, handle = 0, None
        for key, (saved, _) in self.states.items():
            n = _common(saved, tokens)
            if n > found:
                found, handle = n, key
        path = max(self.on_disk, key=lambda p: _common(self.on_disk[p], tokens), default=None)
        if path is not None and _common(self.on_disk[path], tokens) > found:
            try:
                with np.load(path) as stored:
                    loaded = (np.array(stored["tokens"], dtype=np.intc), stored["data"].tobytes())
            except (OSError, ValueError, KeyError):  # removed or cut short meanwhile: as if never saved
                self.on_disk.pop(path, None)
                return found, handle
            handle = self._keep(*loaded)
            found = len(loaded[0])
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
        self._keep(tokens, data)
        if self.directory is not None:
            self._write(tokens, data)

    def _keep(self, tokens: np.ndarray, data: bytes) -> int:
        """Hold a state in memory; returns its handle."""
        # a state whose tokens extend another's replaces it: the longer one serves every prompt the shorter did
        for key, (saved, old) in list(self.states.items()):
            if len(saved) <= len(tokens) and _common(saved, tokens) == len(saved):
                del self.states[key]
                self.size -= len(old)
        handle = self._next
        self.states[handle] = (tokens, data)
        self._next += 1
        self.size += len(data)
        while self.size > self.capacity and len(self.states) > 1:
            _, (_, old) = self.states.popitem(last=False)
            self.size -= len(old)
        return handle

    def _write(self, tokens: np.ndarray, data: bytes) -> None:
        """The state as a file of the folder (written aside, then renamed: a reader never sees half of it);
        states it extends and the oldest files past the cap are removed."""
        assert self.directory is not None
        path = self.directory / f"{hashlib.sha1(tokens.tobytes()).hexdigest()[:20]}.npz"
        part = path.with_suffix(".part")
        try:
            with part.open("wb") as out:
                np.savez(out, tokens=tokens, data=np.frombuffer(data, dtype=np.uint8))
            part.replace(path)
        except OSError:
            return  # a full or read-only disk: the memory copy still serves this process
        self.on_disk[path] = tokens
        for other, saved in list(self.on_disk.items()):
            if other != path and len(saved) <= len(tokens) and _common(saved, tokens) == len(saved):
                self._forget(other)
        files = sorted(self.on_disk, key=lambda p: p.stat().st_mtime if p.exists() else 0)
        total = sum(p.stat().st_size for p in files if p.exists())
        while total > self.disk_capacity and len(files) > 1:
            oldest = files.pop(0)
            total -= oldest.stat().st_size if oldest.exists() else 0
            self._forget(oldest)

    def _forget(self, path: Path) -> None:
        self.on_disk.pop(path, None)
        with contextlib.suppress(OSError):
            path.unlink()

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
