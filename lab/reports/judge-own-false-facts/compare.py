"""Every committed cell's replies, judged for false facts two ways: the harness's self-check
(``lg_harness/nodes/fact_check.py``, what the judge used before) and the judge's own reading by value
(``lab/lg_harness_lab/evals/false_facts.py``). Nothing is run again.

    .venv/bin/python lab/reports/judge-own-false-facts/compare.py > lab/reports/judge-own-false-facts/README.md
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from lg_harness.nodes.fact_check import contradictions
from lg_harness_lab.evals import customer_grade as grade
from lg_harness_lab.evals.false_facts import results
from lg_harness_lab.evals.metrics import record_domain
from lg_harness_lab.evals.reply_quality import false_facts, reply_language

ROOT = Path(__file__).resolve().parents[3]
BOTH = False  # list the replies both call false too


def by_the_check(turn: dict, domain, user_text: str) -> list[str] | None:
    """The judge's reading before: the harness's fact check on the message's own results."""
    found = results(turn.get("tool_calls") or [])
    if not found or not turn.get("reply"):
        return None
    if grade.data_dump(turn["reply"]):
        return []
    evidence = json.dumps(found, ensure_ascii=False, default=str) + "\n" + user_text
    return [c.problem for c in contradictions(turn["reply"], found, domain.claims, domain.currency, evidence)]


def main() -> None:
    files = sorted((ROOT / "lab" / "reports").glob("**/cells.jsonl"))
    judged = old = new = 0
    differ = []
    for path in files:
        for line in path.read_text(encoding="utf-8").splitlines():
            cell = json.loads(line)
            domain, seen, refused = record_domain(cell), [], False
            for turn in cell["turns"]:
                said = str(turn.get("user") or "")
                before = by_the_check(turn, domain, said)
                now = false_facts(turn, domain, said, seen, reply_language(turn, said, cell.get("lang") or "en"), refused)
                seen += results(turn.get("tool_calls") or [])
                refused = refused or any(c.get("status") != "ok" for c in turn.get("tool_calls") or [])
                if before is None:
                    continue
                judged, old, new = judged + 1, old + bool(before), new + bool(now)
                if bool(before) != bool(now) or (BOTH and before and now):
                    differ.append((cell["cell"], path.parent.relative_to(ROOT / "lab" / "reports"), turn["reply"],
                                   before, now))
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT).stdout.strip()
    print("# False facts: the harness's fact check against the judge's own reading\n")
    print(f"Made by `python lab/reports/judge-own-false-facts/compare.py` at `{head}` from the {len(files)} committed "
          "`cells.jsonl` files (nothing run again). A reply is judged when its message had a tool result that worked.\n")
    print("| replies judged | false by the harness's check (the judge before) | false by the judge's own reading |")
    print("| --- | --- | --- |")
    print(f"| {judged} | {old} | {new} |\n")
    print("Every reply the two disagree on:\n")
    print("| cell | report | reply | the check said | the judge says |\n| --- | --- | --- | --- | --- |")
    for cell, folder, reply, before, now in sorted(differ, key=lambda d: (str(d[1]), d[0])):
        clean = lambda text: str(text).replace("|", "/").replace("\n", " ")[:220]  # noqa: E731
        print(f"| {cell} | {folder} | {clean(reply)} | {clean('; '.join(before)) or 'nothing false'} | "
              f"{clean('; '.join(now or [])) or 'nothing false'} |")


if __name__ == "__main__":
    main()
