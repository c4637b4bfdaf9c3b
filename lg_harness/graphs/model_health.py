"""A message the model never answered is an error for the caller, not a reply.

The nodes answer a failed model call with a polite 'busy' reply so the graph always ends cleanly and the
checkpoint keeps the message; the application then reports the failure: when every model call of a
message failed (the model is unreachable, rejects the key, or times out on every call) ``send`` raises
``ModelUnavailable`` with one line that says what to do.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lg_harness.errors import RunError


class ModelUnavailable(RunError):
    """No model call of the message got an answer; the service maps it to 503."""


def unanswered(stats: Mapping[str, Any]) -> str | None:
    """The last model error of a message none of whose model calls got an answer, else None."""
    if stats.get("model_failures") and not stats.get("model_calls"):
        return str(stats.get("model_error") or "no answer")
    return None


def _hint(detail: str) -> str:
    low = detail.lower()
    if "simtimeout" in low or "simulated" in low:  # the sim's own fault: nothing to tune on this machine
        return ("it was a fault the simulated model injects on purpose (its fault profile), not a problem with "
                "your setup: send the message again, or use --model sim:clean for the sim without faults")
    if any(w in low for w in ("401", "403", "unauthori", "api key", "authentication", "permission")):
        return "the endpoint rejected the key: check OPENAI_API_KEY (or the provider's key variable)"
    if any(w in low for w in ("did not answer within", "timeout", "timed out")):
        return "raise --model-timeout or the design knob model_timeout_s, or use a smaller model"
    if "404" in low or "not found" in low:
        return "the server does not have that model: pull it (ollama pull NAME) or pick another --model"
    return "check that the model server runs and is reachable (OLLAMA_HOST, OPENAI_BASE_URL), or pass another --model"


def model_unavailable(model: str | None, detail: str, thread_id: str) -> ModelUnavailable:
    name = f"model '{model}'" if model else "the model"
    return ModelUnavailable(f"{name} gave no answer ({detail}); {_hint(detail)}. The message is kept on "
                            f"thread '{thread_id}': send it again once the model answers")
