"""What kind of failure a tool result reports, read from its words as a model reads them.

A small model does not repeat every failed call alike: a message that says to try again later invites the
same call again, one that names a malformed argument or a missing record invites a different call or a
question, and a refusal that explains why ("already shipped") invites an answer. The calibration probes
measure the identical repeat per kind; the sim rolls the kind's rate (``FaultProfile.repeat_rate``).

The words are ordinary English and Chinese failure wording; no harness's error format is assumed (a
framework's ``Error: ToolException(...)`` reads the same way as ``{"error": {"message": ...}}``).
"""

from __future__ import annotations

import re

KINDS = ("transient", "validation", "not_found", "refusal")

_TRANSIENT = re.compile(r"temporar\w*|unavailable|timed? ?out|try again|rate.?limit\w*|too many requests|"
                        r"overloaded|server error|\b5\d\d\b|\b429\b|busy|超时|稍后再试|繁忙", re.I)
_NOT_FOUND = re.compile(r"not found|does not exist|doesn't exist|no such|unknown \w+ id|no \w+ with|"
                        r"找不到|不存在|没有找到", re.I)
_VALIDATION = re.compile(r"invalid|validation|should match|must match|pattern|is required|field required|"
                         r"missing|expected (?:a|an|one)|not a valid|too (?:short|long)|malformed|格式|无效", re.I)


def error_kind(text: str) -> str:
    """``transient``, ``not_found``, ``validation`` or ``refusal`` (a well-formed request turned down)."""
    for kind, words in (("transient", _TRANSIENT), ("not_found", _NOT_FOUND), ("validation", _VALIDATION)):
        if words.search(text):
            return kind
    return "refusal"
