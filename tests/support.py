"""Helpers several test modules share (fixtures live in conftest.py)."""

from __future__ import annotations

import dataclasses
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import Field

from lg_harness.core.design import Design, load_design
from lg_harness.domains.shop.backend import ShopDB
from lg_harness.llm.embeddings import Embedder
from lg_harness.tools.registry import ToolRegistry, ToolSpec

HARNESS = Path(sys.executable).with_name("harness")


def harness(*args: str, cwd: Path, timeout: float = 240) -> subprocess.CompletedProcess:
    """Run the ``harness`` console script offline, without the caller's HARNESS_* settings."""
    assert HARNESS.exists(), f"console script not installed next to {sys.executable}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("HARNESS_")}
    env["HF_HUB_OFFLINE"] = "1"
    return subprocess.run([str(HARNESS), *args], capture_output=True, text=True, timeout=timeout, cwd=cwd, env=env)


class RecordingEmbedder(Embedder):
    """An embedder as in a fresh process (nothing loaded, nothing memoised) that lists the texts it runs
    through the model (memo hits are not listed)."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[str] = []

    def compute(self, text: str) -> Any:
        self.seen.append(text)
        return super().compute(text)


def change_key(thread: str, turn: int, name: str, args: dict[str, Any]) -> str:
    """The idempotency key ``nodes.action`` gives a changing call: thread, message, tool and a hash of the
    call (never its text), so the same call of the same message always gets the same key."""
    import hashlib

    from lg_harness.nodes.action import call_signature

    return f"{thread}:{turn}:{name}:" + hashlib.sha256(call_signature(name, args).encode()).hexdigest()[:32]


def patient_design(name: str = "harness") -> Design:
    """A preset with a long wall-clock model deadline: sim latency is virtual, and a loaded CI machine must
    not turn a sim call into a 'busy' reply. Everything else is the preset as shipped."""
    design = load_design(name)
    design.knobs.model_timeout_s = 120.0
    return design


def without_goal_stop() -> Design:
    """``patient_design`` without answer_after_goal: the model is offered its tool again after the result, so
    the identical-call guard is what stops a repeat (as in every design that does not stop at the goal)."""
    design = patient_design()
    design.knobs.answer_after_goal = False
    return design


def u001_order(status: str, shop: ShopDB | None = None) -> str:
    """U001's first order with ``status``, from ``shop`` or a fresh copy of the seeded shop (same ids)."""
    db = shop or ShopDB.fresh_copy()
    try:
        row = db.query_one("SELECT id FROM orders WHERE user_id = 'U001' AND status = ? ORDER BY id", (status,))
        assert row is not None, f"the seed no longer gives U001 a {status} order"
        return row["id"]
    finally:
        if shop is None:
            db.close()


def tool_spec(registry: ToolRegistry, name: str) -> ToolSpec:
    """The spec of ``name``, a tool the test expects ``registry`` to hold."""
    spec = registry.get(name)
    assert spec is not None, f"no tool {name!r} in the registry"
    return spec


class ScriptedModel(BaseChatModel):
    """Emits ``calls`` (with the ids given, even none or repeated) when tools are offered and the last message
    is the user's; otherwise a short text answer that names what the tool results said."""

    calls: list[dict[str, Any]] = Field(default_factory=list)
    seen: list[list[Any]] = Field(default_factory=list)
    offered: list[bool] = Field(default_factory=list)  # per call: were tools bound

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools, **kwargs):
        return self.bind(tools=tools, **kwargs)

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        self.seen.append(list(messages))
        self.offered.append(bool(kwargs.get("tools")))
        if kwargs.get("tools") and messages and messages[-1].type == "human":
            msg = AIMessage("", tool_calls=[dict(c) for c in self.calls])
        else:
            last_user = max((i for i, m in enumerate(messages) if m.type == "human"), default=-1)
            # A model reads the results inside the harness's delimiters; it does not echo the delimiters.
            results = [re.sub(r"</?tool_result[^>]*>", "", m.text) for m in messages[last_user + 1:]
                       if isinstance(m, ToolMessage)]
            msg = AIMessage("Done: " + " | ".join(results) if results else "How can I help?")
        return ChatResult(generations=[ChatGeneration(message=msg)])


class ConfirmingUser:
    """A ``Harness`` used by a user who means every change they ask for: when the reply asks to confirm one
    (``harness`` has ``confirm_changes`` on), they answer yes in their language, as the scripted scenarios
    do (lab/lg_harness_lab/evals/runner.py). ``send`` returns the result of the yes, with the calls of both messages and the
    request's intent; everything else is the harness itself."""

    def __init__(self, h) -> None:
        self._h = h

    def __getattr__(self, name: str):
        return getattr(self._h, name)

    def send(self, thread_id, text, user_id=None, role=None):
        first = self._h.send(thread_id, text, user_id, role)
        if not first.values.get("pending_change"):
            return first
        lang = (first.values.get("fact_card") or {}).get("language") or "en"
        second = self._h.send(thread_id, "是的" if lang == "zh" else "yes", user_id, role)
        return dataclasses.replace(second, tool_calls=first.tool_calls + second.tool_calls, intent=first.intent)


def real_model_missing() -> str | None:
    """Why the real local model (Qwen2.5-Coder-0.5B through llama-cpp-python) cannot run here, or None. A test
    that needs it skips with this reason; CI, which builds it, turns such a skip into a failure (conftest)."""
    import importlib.util

    from lg_harness.llm import local_weights

    if importlib.util.find_spec("llama_cpp") is None:
        return "llama-cpp-python is not installed (bash scripts/setup.sh --local-model)"
    spec = local_weights.SPECS["qwen2.5-coder-0.5b"]
    if (local_weights.model_dir() / spec.filename).is_file():
        return None
    try:
        local_weights.part_files(spec)
    except local_weights.WeightsError as err:
        return f"the Qwen2.5-Coder-0.5B GGUF is not installed: {err}"
    return None


def real_model(test: Any) -> Any:
    """Mark a test that runs the real local model: markers ``real_model`` and ``slow`` (``-m "not real_model"``
    leaves it out), and a skip that says what to install where the model is missing (a failure in CI, conftest)."""
    missing = real_model_missing()
    return pytest.mark.slow(pytest.mark.real_model(pytest.mark.skipif(missing is not None, reason=str(missing))(test)))


class ScriptedChat(BaseChatModel):
    """A chat model whose every step is ``decide(offered, messages)``: a call ``(name, args)`` or words."""

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self.bind(tools=tools, **kwargs)

    def decide(self, offered: list[str], messages: list[Any]) -> tuple[str, dict[str, Any]] | str:
        raise NotImplementedError

    def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any) -> ChatResult:
        out = self.decide([t["function"]["name"] for t in kwargs.get("tools") or []], list(messages))
        message = AIMessage(out) if isinstance(out, str) else AIMessage("", tool_calls=[
            {"name": out[0], "args": out[1], "id": f"c{len(messages)}", "type": "tool_call"}])
        return ChatResult(generations=[ChatGeneration(message=message)])
