"""A scenario's cluster, the unit the report's bootstrap resamples (``evals.stats``): its kind.

Apart from ``evals.stats`` and ``evals.scenario`` because both need it: ``spread`` samples a suite across
kinds, the intervals resample them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

# A scenario's kind for sampling: its rarest, most telling tag first.
KIND_ORDER = ("long", "injection", "unicode", "tool-faults", "correction", "negation", "confirmation", "role",
              "adversarial",
              "slot-filling", "handoff", "referential", "multi-turn", "single")

# A generated scenario id: <prefix>-<template>-<lang>-<number> (lab/lg_harness_lab/evals/generators/).
_GENERATED = re.compile(r"^(?P<family>.+)-(?:en|zh)-\d+$")
# Tags that say nothing about a scenario's kind: its provenance, language and shape.
_NOT_A_KIND = frozenset({"handwritten", "heldout", "held-out", "dev-goal", "test-goal", "en", "zh", "single",
                         "multi-turn"})


def _field(scenario: Any, name: str) -> Any:
    return scenario.get(name) if isinstance(scenario, Mapping) else getattr(scenario, name, None)


def cluster_of(scenario: Any) -> str:
    """The scenario's kind, the unit the bootstrap resamples. The rule, first match wins:

    1. A handwritten scenario (tag ``handwritten``) clusters by its first kind tag, ``hw:<tag>``: the first
       tag of ``KIND_ORDER`` it carries (its literal first tag is ``handwritten`` for every one of them and
       the next is its language, so neither says what it is about), e.g. ``hw:injection``, ``hw:single``.
    2. A generated scenario's id names its template: ``gen-order_status-en-0003`` is ``gen-order_status``,
       ``hd-reset-flow-zh-02`` is ``hd-reset-flow``. Both languages of a template are one cluster: they share
       the template's structure, tools and expectations.
    3. Anything else (a user's own file): its first tag that is not provenance, language or shape, else its
       own id (a cluster of one: the bootstrap then resamples scenarios).

    Accepts a ``Scenario``, its dict form, or a cell/record with ``scenario`` (the id) and ``tags``.
    """
    sid = str(_field(scenario, "id") or _field(scenario, "scenario") or "")
    tags = list(_field(scenario, "tags") or [])
    if "handwritten" in tags:
        return "hw:" + next((t for t in KIND_ORDER if t in tags), "single")
    if match := _GENERATED.match(sid):
        return match["family"]
    return next((t for t in tags if t not in _NOT_A_KIND), sid)
