"""Transcripts the issue asks to see (issue 45, must show), picked from comparison cells of goal scenarios:

- per domain, a turn where the goal customer answers a question the agent asked (kind ``give``, ``unknown``):
  the old script sent its next line whatever the reply asked;
- a design other than ``harness`` whose confirmation question got a yes or no in words (``confirm``,
  ``decline``): the old runner answered only ``harness``'s pending-change state.

    python lab/reports/customer-transcripts/pick.py CELLS.jsonl... > lab/reports/customer-transcripts/README.md
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path


def _conversation(record: dict) -> list[str]:
    lines = []
    for turn in record["turns"]:
        how = turn.get("customer") or "open"
        lines.append(f"- **customer** ({how}): {turn.get('user', '')}")
        calls = ", ".join(f"{c['name']}({json.dumps(c.get('args') or {}, ensure_ascii=False)}) {c.get('status')}"
                          for c in turn.get("tool_calls") or [])
        lines.append(f"- **{record['design']}**: {turn.get('reply', '')}" + (f"  \n  _calls: {calls}_" if calls else ""))
    return lines


_PERSON = re.compile(r"colleague|technician|person|human|agent|人工|同事|技术员", re.I)


def _first(records: list[dict], kinds: set[str], designs: set[str] | None, domain: str,
           offers: bool = False) -> dict | None:
    """The first cell where the customer wrote a line of ``kinds``; for a yes or no, one given to a question
    about a change (not to an offer of a person)."""
    for record in records:
        if record.get("domain") != domain or (designs is not None and record["design"] not in designs):
            continue
        turns = record["turns"]
        for before, turn in zip(turns, turns[1:], strict=False):
            if turn.get("customer") not in kinds:
                continue
            if kinds & {"confirm", "decline"} and not offers and _PERSON.search(before.get("reply") or ""):
                continue
            return record
    return None


def main(paths: list[str]) -> None:
    records = [json.loads(line) for p in paths for line in Path(p).read_text(encoding="utf-8").splitlines() if line]
    out = ["# The goal customer in transcripts (issue 45)", "",
           "Picked by `python lab/reports/customer-transcripts/pick.py " + " ".join(paths) + "` from the cells named there. "
           "Each customer line says how the customer came to write it: `open` (its opening), `give` (a fact the "
           "reply asked for), `unknown` (asked for something it does not know), `confirm`/`decline` (a yes or no "
           "in words to a confirmation question), `again` (its question was not answered), `next` (its next task).",
           ""]
    for domain in sorted({r.get("domain") for r in records}):
        for title, kinds, designs in (
                ("answers a question the old script would have ignored", {"give", "unknown"}, None),
                ("a design other than harness gets its confirmation answered in words", {"confirm", "decline"},
                 {r["design"] for r in records} - {"harness"})):
            found = _first(records, kinds, designs, domain)
            out += [f"## {domain}: {title}", ""]
            if found is None and kinds & {"confirm", "decline"}:
                # no design but harness asks to confirm a change (confirm_changes is harness's knob alone); what
                # they ask a yes or no for is an offer of a person, answered in words the same way
                found = _first(records, kinds | {"offer"}, designs, domain, offers=True)
                if found is not None:
                    out += ["No design other than `harness` asked to confirm a change in these cells; this one's "
                            "yes or no answers its offer of a person, in words, as a change's would be "
                            "(`tests/simlm/test_sim_paths.py` has a peer asking about a change).", ""]
            if found is None:
                out += ["None in these cells.", ""]
                continue
            out += [f"`{found['cell']}` on `{found['model']}`", "", *_conversation(found), ""]
    print("\n".join(out))


if __name__ == "__main__":
    main(sys.argv[1:])
