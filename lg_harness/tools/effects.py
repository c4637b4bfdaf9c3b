"""Whether a tool changes the world, and why we think so: declared, annotated, or read from its own words.

A tool may say it (``changes_state`` on the function or in ``tool_meta``; an MCP server's ``readOnlyHint`` or
``destructiveHint``). When it says nothing, its name and then its description decide: a name that starts
with a reading verb (get, find, list, search, calculate...) or a description that opens with one reads; a
writing verb (cancel, create, update, send...) changes; anything else is treated as changing, the safe side
(asked before it runs, recorded in the change ledger). ``harness domains`` shows the verdict and its reason.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

READS = frozenset(re.findall(r"[a-z]+", """get find list search lookup look query read show fetch retrieve view check calculate
compute count describe estimate convert track status inspect browse preview quote summarize summarise
explain validate resolve locate whois ping echo diff log"""))
WRITES = frozenset(re.findall(r"[a-z]+", """create update delete remove cancel set add send post put patch submit file claim request
reset unlock lock book order pay refund return exchange modify change write approve reject assign close open
transfer escalate renew register subscribe unsubscribe archive restore move rename merge commit push publish
upload start stop restart run execute deploy grant revoke invite enroll redeem apply issue reopen reserve
place schedule mark edit replace clear purge"""))
_WORD = re.compile(r"[a-z]+")


@dataclass(frozen=True)
class Effect:
    changes: bool
    reason: str


def first_word(text: str) -> str:
    """The first word of a name or a sentence, lower case (``resetPassword``, ``reset_password`` -> reset)."""
    parts = _WORD.findall(re.sub(r"([a-z])([A-Z])", r"\1 \2", text).lower())
    return parts[0] if parts else ""


def infer(name: str, description: str = "") -> Effect:
    """The verdict for a tool that declares nothing, from its name, else its description's first verb."""
    verb = first_word(name)
    if verb in READS:
        return Effect(False, f"inferred: its name starts with '{verb}', which reads")
    if verb in WRITES:
        return Effect(True, f"inferred: its name starts with '{verb}', which changes")
    opening = first_word(description)
    if opening == "returns":  # "Returns the forecast": gives back, where "Return the item" sends back
        return Effect(False, "inferred: its description opens with 'returns', which reads")
    if opening in READS or (opening.endswith("s") and opening[:-1] in READS):
        return Effect(False, f"inferred: its description opens with '{opening}', which reads")
    if opening in WRITES or (opening.endswith("s") and opening[:-1] in WRITES):
        return Effect(True, f"inferred: its description opens with '{opening}', which changes")
    return Effect(True, "not declared, and neither its name nor its description says it only reads: treated "
                        "as changing (asked before it runs)")
