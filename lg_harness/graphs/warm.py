"""What a harness builds when it opens, so that no customer's first message pays for it.

Loading the embedder, importing its numeric libraries, embedding the domain's intent examples and reading
the tokenizer used to happen inside the first message that needed them (1.4-1.6 s in the first message the
rules could not classify). ``warm_caches`` does it when the harness opens. The example vectors are kept on
disk per domain version (``<data_dir>/cache/``: the file's name hashes the embedder and the texts, so a
changed domain or embedder writes a new file and a reopened harness reads instead of embedding).
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Any

from lg_harness.core.design import ROLES, Design
from lg_harness.core.domain import Domain
from lg_harness.core.parts import is_part
from lg_harness.llm.embeddings import Embedder
from lg_harness.nodes.base import VariantRegistry

CACHE_DIR = "cache"


def example_texts(domain: Domain) -> list[str]:
    """The domain's English intent examples, the texts the embedding classifiers compare a message with."""
    return [ex for intent in domain.intents for ex in intent.examples.get("en", ())]


def uses_embeddings(design: Design, domain: Domain, memory: Any, variants: VariantRegistry) -> bool:
    """Whether messages of this harness can need the embedder: long-term recall, or an intent variant that
    compares messages with the domain's examples (it says so: ``embeds_examples``, on its class or object)."""
    part = design.part("intent")
    intent = part if is_part(part) else variants.of("intent").get(str(part))
    classifies = bool(getattr(intent, "embeds_examples", False)) and (
        domain.classifier is not None or bool(example_texts(domain)))
    return memory is not None or classifies


def cache_file(data_dir: Path | None, domain: Domain, texts: list[str], model_name: str) -> Path | None:
    """Where the domain's example vectors are kept: one file per domain, embedder and set of texts."""
    if data_dir is None:
        return None
    digest = hashlib.sha256("\x1f".join([model_name, *texts]).encode()).hexdigest()[:16]
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", domain.name)
    return data_dir / CACHE_DIR / f"intent-examples-{safe}-{digest}.npz"


def warm_caches(design: Design, domain: Domain, data_dir: Path | None, memory: Any, embedder: Embedder,
                variants: VariantRegistry) -> None:
    """Build at open what the first message would otherwise build: tokenizer, embedder, example vectors."""
    from lg_harness.llm.embeddings import count_tokens
    from lg_harness.tools.text import keyword_pattern

    count_tokens("warm up")  # context assembly counts tokens in every message
    for role in ROLES:  # a variant given as an object warms its own caches (core.parts)
        if is_part(part := design.part(role)) and callable(warm := getattr(part, "warm", None)):
            warm(domain, embedder)
    for word in {w for intent in domain.intents for words in intent.rules.values() for w in words}:
        keyword_pattern(word.lower())  # compiling a keyword's pattern costs more than matching it
    if not uses_embeddings(design, domain, memory, variants):
        return
    embedder.warm_encoder()
    texts = example_texts(domain)
    if texts and domain.intents:  # an unsure classification compares the message with the tools' descriptions
        from lg_harness.nodes.offer import tool_texts

        texts = [*texts, *tool_texts(domain.registry().specs())]
    if texts:
        embedder.warm(texts, cache_file(data_dir, domain, texts, embedder.model_name))
        from lg_harness.nodes.classify import example_matrix

        example_matrix(domain, embedder)
