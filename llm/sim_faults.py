"""The simulated model's seeded fault profile and latency model.

Faults are drawn from a random generator seeded by the model's seed and the exact input of the call
(messages and tool schemas), so the same input always gets the same behaviour, whichever harness built it:
designs are treated alike, and a design that shows the model less noise triggers fewer faults.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass, fields


@dataclass(frozen=True)
class FaultProfile:
    """Probabilities of each misbehaviour; ``clean`` is all zeros."""

    invent_missing: float = 0.0        # invents an identifier the input does not contain instead of asking
    forget_middle: float = 0.0         # misses a fact that sits in the middle of a long input
    long_context_tokens: int = 1500    # inputs longer than this count as long
    repeat_after_error: float = 0.0    # calls the same tool again after an error result
    malformed_args: float = 0.0        # emits an argument with the wrong format
    # per extra tool offered: the general brain counts every tool beyond the first, the shop's legacy
    # brain every tool beyond three; the realistic rates were set for the latter (issue 13 refits them)
    wrong_tool_per_extra: float = 0.0  # picks a neighbouring tool
    extra_lookup_per_extra: float = 0.0  # makes an unneeded lookup first
    follow_injection: float = 0.0      # obeys an instruction found in a tool result when the tool is offered
    copy_invisible: float = 0.0        # copies invisible characters from the user's text into arguments
    timeout: float = 0.0               # does not answer in time
    invisible_prefix: float = 0.0      # puts an invisible character before a text tool call
    # Latency in virtual seconds: fixed + per input token + per output token.
    latency_base_s: float = 0.35
    latency_per_input_token_s: float = 0.0006
    latency_per_output_token_s: float = 0.025


PROFILES: dict[str, FaultProfile] = {
    "clean": FaultProfile(),
    # Calibrated so `naive` (ten tools on every call) lands near the write-ups' baseline: about 4.5 model
    # calls per tool-using request, 80% argument validity, 7-8 s per message (2-core run, 40 scenarios).
    "realistic": FaultProfile(invent_missing=0.6, forget_middle=0.5, repeat_after_error=0.6, malformed_args=0.08,
                              wrong_tool_per_extra=0.05, extra_lookup_per_extra=0.14, follow_injection=0.7,
                              copy_invisible=0.9, timeout=0.004, invisible_prefix=0.5),
}


def profile_names() -> list[str]:
    return list(PROFILES)


def profile_fields() -> list[str]:
    return [f.name for f in fields(FaultProfile)]


class Dice:
    """Deterministic draws for one model call: seeded by the model seed and the call's input."""

    def __init__(self, seed: int, key: str) -> None:
        digest = hashlib.sha256(f"{seed}:{key}".encode()).digest()
        self._rng = random.Random(int.from_bytes(digest[:8], "big"))

    def roll(self, p: float) -> bool:
        # Always draw, so one fault's probability does not shift the others' outcomes.
        return self._rng.random() < p

    def choice(self, items):
        return self._rng.choice(items)

    def randint(self, a: int, b: int) -> int:
        return self._rng.randint(a, b)


def latency_s(profile: FaultProfile, input_tokens: int, output_tokens: int) -> float:
    return (profile.latency_base_s + profile.latency_per_input_token_s * input_tokens
            + profile.latency_per_output_token_s * output_tokens)
