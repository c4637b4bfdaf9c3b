"""The simulated model's fault profile: what goes wrong, how often, and why we think so.

Profiles live in ``profiles.yaml`` beside this file, each fault with its source. Rates are smooth
functions of what the model sees, so no design's knob value sits on a threshold:

- a wrong or a needless extra tool: ``1 - (1 - rate) ** (tools_offered - 1)``, rising with every tool;
- a fact recalled from earlier in the input: lost with ``forget * d / (d + forget_half_tokens)``, where
  ``d`` is how many tokens of input follow it (distance, and so context length);
- injected instructions in data: obeyed with ``follow_injection * delimited_factor ** layers`` where
  ``layers`` counts how clearly the text is marked as data (inside a JSON string, inside quotes);
- argument malformations of several kinds, each with its own share;
- an answer written from tool results misstates one of their values (``simlm.misstate``);
- no call where one is needed, a call again where an answer is due (written as text when no tools are
  offered, as small models do), and an answer that pastes the raw result: flat rates, as measured;
- the identical call again after an error, at a rate per kind of error (``simlm.errors``), and after a success
  while its tool is still offered (``repeat_after_success``);
- an answer that tells the request back instead of answering it (``restate_request``); a tool called before the
  one its description says must succeed first (``skip_prerequisite``);
- the answer step's rates per way of presenting results and decoding (``answer_steps``), measured where each
  design's path has them: with no tool offered in the answer-step probes, in the tool loop from real-model
  comparison cells (``paths.yaml``).

A profile may carry ``by_domain: {<domain>: {<fault>: ...}}``: where the calibration probes measured a rate
that differs between domains' prompts, ``<profile>@<domain>`` (e.g. ``fitted@shop``) is the profile with that
domain's rates. The sim itself never knows a domain; whoever runs it picks the variant (``evals.runner``).

Faults are drawn from a random generator seeded by the model's seed and the input of the call (the
conversation and the tools; system notes after its last message left out, ``simlm.provider.draw_key``), so the
same input always gets the same behaviour, whichever harness built it, and a note that only asks again does not
roll the dice again.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass, field, fields, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

PROFILE_FILE = Path(__file__).with_name("profiles.yaml")
FITTED_FILE = Path(__file__).with_name("fitted.yaml")  # written by `harness calibrate --write`
# Rates measured on each design's path in real-model comparison cells (``evals.fit_paths --write``), merged
# over the profiles of the same name in the two files above.
PATHS_FILE = Path(__file__).with_name("paths.yaml")


def profiles_digest() -> str:
    """The fault profiles as they are now (both files): a harness's cached cells on the sim key on it, so a
    refit or an edit reruns them."""
    return hashlib.sha256(b"".join(f.read_bytes() for f in (PROFILE_FILE, FITTED_FILE, PATHS_FILE)
                                   if f.exists())).hexdigest()[:16]


MALFORMATIONS = ("id_drift", "wrong_type", "missing_required", "extra_key", "broken_json")


@dataclass(frozen=True)
class FaultProfile:
    """Rates of each misbehaviour; all zeros (``clean``) is a model that never errs."""

    name: str = "custom"
    calibrated: bool = False           # a rate was set to land on a target figure: reports label the row
    invent_missing: float = 0.0        # invents a required value the input does not contain instead of asking
    forget: float = 0.0                # ceiling of the chance to miss a fact far back in the input
    forget_half_tokens: int = 2000     # distance (tokens after the fact) at which half that ceiling applies
    repeat_after_error: float = 0.0    # calls the same tool with the same arguments after a transient error
    # ... after the other kinds of error (``simlm.errors``): validation, not_found, refusal; a kind not
    # given repeats at ``repeat_after_error``
    repeat_after_error_kinds: dict[str, float] = field(default_factory=dict)
    malformed_args: float = 0.0        # a call carries one malformed argument
    malformation_mix: dict[str, float] = field(default_factory=lambda: {k: 1.0 for k in MALFORMATIONS})
    wrong_tool: float = 0.0            # per tool offered beyond the first: picks a neighbouring tool
    wrong_tool_to_read: float | None = None  # share of wrong picks that go to a read-only tool (None: any tool)
    extra_lookup: float = 0.0          # per tool offered beyond the first: makes an unneeded lookup first
    per_tool: bool = True              # False: the two above are flat per call, whatever the tools offered
    follow_injection: float = 0.0      # obeys an instruction found in undelimited data
    delimited_factor: float = 0.3      # each layer of clear delimiting multiplies that chance
    copy_invisible: float = 0.0        # copies invisible characters from the user's text into arguments
    timeout: float = 0.0               # does not answer in time
    invisible_prefix: float = 0.0      # puts an invisible character before a call written as text
    misstate_result: float = 0.0       # an answer from tool results states one of their values wrongly
    skip_call: float = 0.0             # answers the user without the tool call the request needs
    call_after_result: float = 0.0     # calls the tool again instead of answering from its result
    # makes the call that just worked again while its tool is still offered (inside a tool loop)
    repeat_after_success: float = 0.0
    restate_request: float = 0.0       # answers by telling the customer's request back instead of answering it
    skip_prerequisite: float = 0.0     # calls a tool before the one its description says must succeed first
    echo_result: float = 0.0           # answers by pasting the tool result's raw text
    context_window: int = 4096         # tokens the model reads; older messages are dropped beyond it
    # Latency in virtual seconds: fixed + per input token not served from cache + per output token.
    latency_base_s: float = 0.35
    latency_per_input_token_s: float = 0.0006
    latency_per_output_token_s: float = 0.025
    sources: dict[str, str] = field(default_factory=dict, compare=False)
    # What each measured rate rests on: fault -> {k, n, ci} (the 95% interval the sensitivity run sweeps)
    evidence: dict[str, dict[str, Any]] = field(default_factory=dict, compare=False)
    # The answer step's rates per way of presenting the result and decoding ("facts/constrained" ->
    # {call_after_result: 0.1, echo_result: 0.0}), fitted from the answer-step probes; a request whose
    # presentation the sim cannot tell, or one not measured, uses the flat rates above.
    answer_steps: dict[str, dict[str, float]] = field(default_factory=dict)

    def answer_rate(self, fault: str, presentation: str | None = None, decoding: str = "free") -> float:
        """``call_after_result`` or ``echo_result`` for an answer step presented and decoded this way."""
        measured = self.answer_steps.get(f"{presentation}/{decoding}", {}) if presentation else {}
        flat: float = getattr(self, fault)
        return float(measured.get(fault, flat))

    def repeat_rate(self, kind: str) -> float:
        """The chance of the identical call again after an error of ``kind`` (``simlm.errors.KINDS``)."""
        return self.repeat_after_error_kinds.get(kind, self.repeat_after_error)

    def by_tools(self, rate: float, tools_offered: int) -> float:
        if not self.per_tool:
            return rate if tools_offered > 1 else 0.0
        return 1.0 - (1.0 - rate) ** max(tools_offered - 1, 0)

    def forget_chance(self, distance_tokens: int) -> float:
        d = max(distance_tokens, 0)
        return self.forget * d / (d + self.forget_half_tokens) if self.forget else 0.0

    def injection_chance(self, layers: int) -> float:
        return self.follow_injection * self.delimited_factor ** layers


CLEAN = FaultProfile(name="clean")
_FIELDS = {f.name for f in fields(FaultProfile)}
_EVIDENCE_KEYS = ("k", "n", "ci")
DOMAIN_MARK = "@"  # ``fitted@shop``: the profile with the rates its probes measured on one domain's prompts


def _profile(name: str, spec: dict[str, Any]) -> FaultProfile:
    values: dict[str, Any] = {"name": name}
    sources: dict[str, str] = {}
    evidence: dict[str, dict[str, Any]] = {}
    for key, value in spec.items():
        if key in ("calibrated", "per_tool"):
            values[key] = bool(value)
            continue
        if key not in _FIELDS or key in ("name", "sources", "evidence"):
            known = ", ".join(sorted(_FIELDS - {"name", "sources", "evidence"}))
            raise ValueError(f"profile '{name}': unknown fault '{key}' (known: {known})")
        if key == "repeat_after_error_kinds":  # each kind may carry its own source and evidence, like a rate
            value = {kind: _rate(v, f"{key}.{kind}", sources, evidence) for kind, v in (value or {}).items()}
        if key == "answer_steps":  # variant -> fault -> rate, each with its evidence
            value = {variant: {f: _rate(v, f"{key}.{variant}.{f}", sources, evidence) for f, v in rates.items()}
                     for variant, rates in (value or {}).items()}
        values[key] = _rate(value, key, sources, evidence) if isinstance(value, dict) and "rate" in value else value
    mix = values.get("malformation_mix")
    if mix is not None and set(mix) - set(MALFORMATIONS):
        raise ValueError(f"profile '{name}': unknown malformation {sorted(set(mix) - set(MALFORMATIONS))}")
    return FaultProfile(**values, sources=sources, evidence=evidence)


def _rate(value: Any, key: str, sources: dict[str, str], evidence: dict[str, dict[str, Any]]) -> Any:
    """A rate as written: a number, or ``{rate, source, k, n, ci}`` whose source and evidence are kept."""
    if not (isinstance(value, dict) and "rate" in value):
        return value
    sources[key] = str(value.get("source", ""))
    if "n" in value:
        evidence[key] = {k: value[k] for k in _EVIDENCE_KEYS if k in value}
    return value["rate"]


def _raw(path: Path) -> dict[str, Any]:
    return (yaml.safe_load(path.read_text(encoding="utf-8")) or {}).get("profiles") or {} if path.exists() else {}


@lru_cache(maxsize=4)
def load_profiles(path: str | None = None) -> dict[str, FaultProfile]:
    """Profiles by name from the hand-written file and the measured one beside it; a profile may start
    from another (``base:``)."""
    raw = {**_raw(Path(path or PROFILE_FILE)), **({} if path else _raw(FITTED_FILE))}
    for name, spec in ({} if path else _raw(PATHS_FILE)).items():
        raw[name] = _merged(raw.get(name, {}), spec)
    out: dict[str, FaultProfile] = {"clean": CLEAN}

    def resolved(name: str, seen: tuple[str, ...] = ()) -> dict[str, Any]:
        if name in seen:
            raise ValueError(f"profile '{name}': circular base")
        spec = dict(raw[name])
        base = spec.pop("base", None)
        inherited = resolved(base, (*seen, name)) if base else {}
        merged = _merged(inherited, spec)
        # per-domain overrides merge too: a profile built on ``fitted`` keeps fitted's domain rates
        below, own = inherited.get("by_domain") or {}, spec.get("by_domain") or {}
        if below or own:
            merged["by_domain"] = {d: {**below.get(d, {}), **own.get(d, {})} for d in {*below, *own}}
        return merged

    for name in raw:
        spec = resolved(name)
        by_domain = spec.pop("by_domain", None) or {}
        out[name] = _profile(name, spec)
        for domain, overrides in sorted(by_domain.items()):
            out[f"{name}{DOMAIN_MARK}{domain}"] = _profile(f"{name}{DOMAIN_MARK}{domain}", _merged(spec, overrides))
    return out


def _merged(below: dict[str, Any], above: dict[str, Any]) -> dict[str, Any]:
    """``above`` over ``below``; the repeat rates per kind of error merge kind by kind, so a profile (or a
    domain's variant) that sets one kind keeps the others'."""
    out = dict(below)
    for key, value in above.items():
        old = out.get(key)
        if key == "answer_steps" and isinstance(old, dict):  # path by path, fault by fault
            out[key] = {path: {**old.get(path, {}), **rates} for path, rates in {**old, **value}.items()}
        else:
            out[key] = {**old, **value} if key == "repeat_after_error_kinds" and isinstance(old, dict) else value
    return out


OVERRIDE_MARK = "+"  # ``fitted@shop+skip_call=0.29``: a profile with some rates set to other values


def profile(name: str) -> FaultProfile:
    """A profile by name; ``<name>+<fault>=<rate>[+...]`` is that profile with those rates replaced (a
    sensitivity sweep runs each fitted rate at the ends of its interval this way). A kind of error's
    repeat rate is ``repeat_after_error_kinds.<kind>``."""
    base, *overrides = name.split(OVERRIDE_MARK)
    profiles = load_profiles()
    if base not in profiles:
        raise KeyError(f"unknown sim profile '{base}' (known: {', '.join(profiles)})")
    found = profiles[base]
    return _overridden(found, name, overrides) if overrides else found


_TABLES = ("repeat_after_error_kinds", "answer_steps")  # overridden as <table>.<key>=<rate>


def _overridden(found: FaultProfile, name: str, overrides: list[str]) -> FaultProfile:
    changes: dict[str, Any] = {"name": name}
    kinds = dict(found.repeat_after_error_kinds)
    steps = {variant: dict(rates) for variant, rates in found.answer_steps.items()}
    for item in overrides:
        key, sep, value = item.partition("=")
        try:
            rate = float(value)
        except ValueError:
            rate = None
        field_name, _, sub = key.partition(".")
        numeric = isinstance(getattr(found, field_name, None), int | float) and not isinstance(
            getattr(found, field_name, None), bool)
        if not sep or rate is None or not (numeric or (field_name in _TABLES and sub)):
            raise KeyError(f"bad sim profile override '{item}' in '{name}': use <fault>=<number>, e.g. skip_call=0.3")
        if field_name == "answer_steps":  # answer_steps.<presentation>/<decoding>.<fault>
            variant, _, fault = sub.rpartition(".")
            steps.setdefault(variant, {})[fault] = rate
        elif sub:
            kinds[sub] = rate
        else:
            changes[field_name] = rate
    return replace(found, **changes, repeat_after_error_kinds=kinds, answer_steps=steps)


def has_profile(name: str) -> bool:
    try:
        profile(name)
    except KeyError:
        return False
    return True


def profile_names() -> list[str]:
    return list(load_profiles())


def default_profile_name() -> str:
    """The profile plain ``sim`` runs with: ``$SIMLM_PROFILE``, else the one the profile file names."""
    import os

    return os.environ.get("SIMLM_PROFILE") or str(yaml.safe_load(PROFILE_FILE.read_text(encoding="utf-8")).get("default", "clean"))


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

    def weighted(self, weights: dict[str, float]) -> str:
        keys = [k for k, w in weights.items() if w > 0]
        return self._rng.choices(keys, [weights[k] for k in keys])[0]

    def randint(self, a: int, b: int) -> int:
        return self._rng.randint(a, b)


def latency_s(profile: FaultProfile, input_tokens: int, output_tokens: int) -> float:
    return (profile.latency_base_s + profile.latency_per_input_token_s * input_tokens
            + profile.latency_per_output_token_s * output_tokens)
