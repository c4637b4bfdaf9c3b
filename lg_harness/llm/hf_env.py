"""What the Hugging Face libraries read from the environment: offline, quiet, no tokenizer threads that a fork
would inherit. Set (where the user has not) by ``quiet_offline_hf`` when an embedder or tokenizer is built,
before those libraries are imported; importing this module (or ``llm.embeddings``) changes nothing."""

from __future__ import annotations

import os

HF_DEFAULTS = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "TOKENIZERS_PARALLELISM": "false",
    "HF_HUB_DISABLE_PROGRESS_BARS": "1",
    "TRANSFORMERS_VERBOSITY": "error",
}


def quiet_offline_hf() -> None:
    """Set the Hugging Face defaults above, keeping any the user set; called when an embedder is built."""
    for name, value in HF_DEFAULTS.items():
        os.environ.setdefault(name, value)
