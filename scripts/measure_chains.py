"""Correct lookup -> write chains on a domain: how many the harness refuses, and whether unseen ids are refused.

A scripted model plays the ground truth: each user message has planned calls whose ids come from results the
model saw earlier in the conversation (it remembers every result it was shown, as a model with the whole
conversation would). Each planned call is what a correct agent does, so any ``invented_argument`` refusal of
one is a false rejection. After each conversation one more message plays each write again with one id
swapped for a real id of the same kind that the conversation never showed (another customer's): every one of
those must be refused before the tool runs.

Run: ``.venv/bin/python scripts/measure_chains.py [--design harness] [--json]`` (all three domains).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository root: tests.fixtures is there
from lg_harness import load_domain  # noqa: E402
from tests.fixtures.chains import (  # noqa: E402
    LATER_REQUESTS,
    REQUESTS,
    RETAIL,
    helpdesk_tasks,
    offers,
    retail_tasks,
    run_task,
    shop_tasks,
)

TASKS = {"retail": (RETAIL + ":DOMAIN", retail_tasks), "retail-declared": (RETAIL + ":DECLARED", retail_tasks),
         "shop": ("shop", shop_tasks), "helpdesk": ("helpdesk", helpdesk_tasks)}


def measure(name: str, design: str) -> dict[str, int]:
    spec, tasks = TASKS[name]
    domain = load_domain(spec)
    total: dict[str, int] = {}
    for uid, turns, unseen in tasks(domain):
        for k, v in run_task(domain, design, uid, turns, unseen).items():
            total[k] = total.get(k, 0) + v
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--design", default="harness")
    parser.add_argument("--domains", default=",".join(TASKS))
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--offers", action="store_true", help="the tools offered per request instead")
    args = parser.parse_args()
    if args.offers:
        for title, requests in (("requests", REQUESTS), ("later requests", LATER_REQUESTS)):
            rows = offers(args.design, requests)
            print(f"design {args.design}, {title}: the right tool offered for "
                  f"{sum(w in o for _, w, o in rows)}/{len(rows)}\n")
            print("| request | serving tool | offered |\n| --- | --- | --- |")
            for text, wanted, offered in rows:
                print(f"| {text} | {wanted} {'yes' if wanted in offered else 'NO'} | {', '.join(offered)} |")
            print()
        return
    rows = {n: measure(n, args.design) for n in args.domains.split(",")}
    if args.json:
        json.dump(rows, sys.stdout)
        return
    print(f"design {args.design}")
    print("| domain | planned calls | writes | ok | false rejections (invented id) | not offered | other errors "
          "| chain broken | unseen ids refused |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for n, r in rows.items():
        print(f"| {n} | {r['calls']} | {r['writes']} | {r['ok']} | {r['invented']} | {r['not_offered']} | "
              f"{r['other_error']} | {r['broken']} | {r['unseen_refused']}/{r['unseen']} |")


if __name__ == "__main__":
    main()
