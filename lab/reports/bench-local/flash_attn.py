"""llama.cpp with and without its fused attention (``flash_attn``) on this machine: a cold read of 1,900 prompt
tokens, then 48 tokens written after 1,500, alternating the two settings twice in one run.

``python lab/reports/bench-local/flash_attn.py`` (needs ``bash scripts/setup.sh --local-model``); its output is kept
as ``flash_attn.txt``."""

import time
from pathlib import Path

from lg_harness.llm.local import LocalChatModel

PATH = LocalChatModel(model_name="qwen2.5-coder-0.5b").gguf_path()  # importing llm.local sets the OpenMP wait
TEXT = (Path(__file__).parents[3] / "README.md").read_text(encoding="utf-8")[:9000]


def once(flash_attn: bool) -> tuple[float, float]:
    from llama_cpp import Llama  # pyright: ignore[reportMissingImports]  (the optional `local` extra)

    llama = Llama(model_path=PATH, n_ctx=4096, n_threads=2, n_threads_batch=2, n_batch=512, flash_attn=flash_attn,
                  verbose=False)
    tokens = llama.tokenize(TEXT.encode())
    started = time.perf_counter()
    llama.eval(tokens[:1900])
    read = 1900 / (time.perf_counter() - started)
    llama.reset()
    llama.eval(tokens[:1500])
    started, written = time.perf_counter(), 0
    for _ in llama.generate([], temp=0.0, reset=False):
        written += 1
        if written == 48:
            break
    return read, written / (time.perf_counter() - started)


figures: dict[bool, list[tuple[float, float]]] = {False: [], True: []}
for setting in (False, True, False, True):
    figures[setting].append(once(setting))
    print(f"flash_attn={setting}: read {figures[setting][-1][0]:.1f} tokens/s, write {figures[setting][-1][1]:.1f}")
off, on = ([sum(v[i] for v in figures[s]) / 2 for i in (0, 1)] for s in (False, True))
print(f"with / without: read x{on[0] / off[0]:.2f}, write x{on[1] / off[1]:.2f}")
