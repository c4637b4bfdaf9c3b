"""Model specs to chat models: ``sim``, ``ollama:<model>``, ``openai:<model>``."""

from __future__ import annotations

import contextlib
import os
from typing import TYPE_CHECKING, Any

from langchain_core.language_models import BaseChatModel

from lg_harness.errors import HarnessError

if TYPE_CHECKING:
    from lg_harness.llm.sim import SimChatModel

SPEC_HELP = ("use 'sim' (its default fault profile), 'sim:clean', 'sim:<profile>:<seed>', 'reword:clean' (the sim, rewording on every call), 'ollama:<model>' "
             "(e.g. ollama:qwen2.5:7b), 'openai:<model>' or 'local:<model>' (e.g. local:qwen2.5-coder-0.5b)")


def make_model(spec: str, *, timeout: float = 15.0, domain: Any = None) -> BaseChatModel:
    """A chat model from a spec string. Real models read their endpoint and key from the usual env vars.

    ``domain`` is accepted for callers that pass it and ignored: no model knows the domain it serves.
    """
    kind, _, name = spec.partition(":")
    if kind == "sim":
        return _sim(name)
    if kind == "paced":  # paced:<seconds>[:<sim options>]: the sim, taking real time per call (lg_harness/llm/paced.py)
        from lg_harness.llm.paced import PacedSimChatModel

        delay, _, rest = name.partition(":")
        try:
            seconds = float(delay)
        except ValueError:
            raise HarnessError(f"paced models need seconds per call first, e.g. paced:0.25:clean; got '{spec}'") from None
        sim = _sim(rest)
        return PacedSimChatModel(seed=sim.seed, faults=sim.faults, delay_s=seconds)
    if kind == "reword":  # reword[:<sim options>]: the sim, rewording free text and ids on every call (lg_harness/llm/reword.py)
        from lg_harness.llm.reword import RewordingSimChatModel

        sim = _sim(name)
        return RewordingSimChatModel(seed=sim.seed, faults=sim.faults)
    if kind == "local" and name:
        from lg_harness.llm.local import make_local

        return make_local(name)
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


def _sim(rest: str) -> SimChatModel:
    """``sim``, ``sim:clean``, ``sim:flat:7``, ``sim:7``: a fault profile from ``sim/simlm/profiles.yaml`` and a
    seed, both optional."""
    from lg_harness.llm.sim import SimChatModel
    from simlm import default_profile_name, has_profile, profile_names

    faults, seed = default_profile_name(), 0
    for part in filter(None, rest.split(":")):
        if part.isdigit():
            seed = int(part)
        elif has_profile(part):  # a profile, or one with rates overridden (``fitted+skip_call=0.3``)
            faults = part
        else:
            raise HarnessError(f"unknown sim option '{part}': profiles {', '.join(profile_names())}, or a seed number")
    return SimChatModel(seed=seed, faults=faults)
