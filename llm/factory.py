"""Model specs to chat models: ``sim``, ``ollama:<model>``, ``openai:<model>``."""

from __future__ import annotations

import contextlib
import os
from typing import Any

from langchain_core.language_models import BaseChatModel
from lg_harness.tools.errors import HarnessError

SPEC_HELP = ("use 'sim' (faults on), 'sim:clean', 'sim:<profile>:<seed>', 'ollama:<model>' "
             "(e.g. ollama:qwen2.5:7b) or 'openai:<model>'")


def make_model(spec: str, *, timeout: float = 15.0, domain: Any = None) -> BaseChatModel:
    """A chat model from a spec string. Real models read their endpoint and key from the usual env vars.

    ``domain``: only read for ``sim``, which uses the domain's own simulated brain when it has one
    (``Domain.sim_brain``) and the domain-general brain otherwise; ``sim:general`` always takes the latter.
    """
    kind, _, name = spec.partition(":")
    if kind == "sim":
        return _sim(name, getattr(domain, "sim_brain", None))
    if kind == "ollama" and name:
        from langchain_ollama import ChatOllama

        host = os.environ.get("OLLAMA_HOST", "http://127.0.0.1:11434")
        if not host.startswith("http"):
            host = "http://" + host
        return ChatOllama(model=name, base_url=host, temperature=0, client_kwargs={"timeout": timeout})
    if kind == "openai" and name:
        from langchain_openai import ChatOpenAI

        if not os.environ.get("OPENAI_API_KEY"):
            raise HarnessError("openai models need OPENAI_API_KEY (and OPENAI_BASE_URL for other endpoints)")
        return ChatOpenAI(model=name, base_url=os.environ.get("OPENAI_BASE_URL") or None, temperature=0,
                          timeout=timeout, max_retries=0)
    raise HarnessError(f"unknown model spec '{spec}': {SPEC_HELP}")


def close_model(model: BaseChatModel) -> None:
    """Close the HTTP clients a real chat model holds (ChatOllama, ChatOpenAI); the sim holds none."""
    for name in ("_client", "client", "root_client", "_async_client", "async_client", "root_async_client"):
        client = getattr(model, name, None)
        inner = getattr(client, "_client", client)  # ollama.Client wraps an httpx.Client
        close = getattr(inner, "close", None)
        if callable(close) and not getattr(inner, "is_closed", False):
            with contextlib.suppress(Exception):  # an async client closes with its loop; nothing to do here
                close()


def _sim(rest: str, brain: Any = None) -> BaseChatModel:
    """``sim``, ``sim:clean``, ``sim:realistic:7``, ``sim:7``, ``sim:general:clean``: a fault profile and a
    seed, both optional, and ``general`` for the domain-general brain whatever the domain brings."""
    from lg_harness.llm.sim import SimChatModel
    from lg_harness.llm.sim_faults import PROFILES

    profile, seed = "realistic", 0
    for part in filter(None, rest.split(":")):
        if part.isdigit():
            seed = int(part)
        elif part in PROFILES:
            profile = part
        elif part == "general":
            brain = None
        else:
            raise HarnessError(f"unknown sim option '{part}': profiles {', '.join(PROFILES)}, 'general', "
                               "or a seed number")
    return SimChatModel(seed=seed, faults=profile, brain=brain)
