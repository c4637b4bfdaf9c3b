"""The saved probe rows read again with the judge's own reading (``evals.customer_grade``, ``evals.false_facts``),
beside what they recorded when the harness's self-check detectors read them (``nodes.customer_text``,
``nodes.fact_check``). Nothing is asked of a model again: the replies are the saved ones (the first 400
characters of an answer-step reply, 300 of a calibration answer).

    .venv/bin/python lab/reports/answer-step-probes/rejudge.py
"""

from __future__ import annotations

import json
from pathlib import Path

from langchain_core.messages import AIMessage

from lg_harness.core.domain import load_domain
from lg_harness.nodes.customer_text import only_data
from lg_harness_lab.evals.answer_probes import answer_probes, judge_answer
from lg_harness_lab.evals.calibrate import build_fact_probes, judge

ROOT = Path(__file__).resolve().parents[3]
KINDS = ("data", "wrong_language", "false_facts")


def answer_steps() -> None:
    rows = json.loads((ROOT / "lab/reports/answer-step-probes/rows-local_qwen2.5-coder-0.5b.json").read_text())
    domains = {name: load_domain(name) for name in {r["domain"] for r in rows}}
    probes = {p.scenario: p for d in domains.values() for p in answer_probes(d)}
    judged = [(r, judge_answer(probes[r["scenario"]], AIMessage(r["reply"]), domains[r["domain"]]))
              for r in rows if "error" not in r and r["scenario"] in probes]
    print(f"## Answer-step probes ({len(judged)} replies)\n")
    print("| kind | as recorded | read again |\n| --- | --- | --- |")
    for kind in KINDS:
        print(f"| {kind} | {sum(bool(r[kind]) for r, _ in judged)} | {sum(bool(n[kind]) for _, n in judged)} |")
    for r, n in judged:
        for kind in KINDS:
            if bool(r[kind]) != bool(n[kind]):
                print(f"\n- {r['scenario']} {r['presentation']}/{r['decoding']} `{kind}`: recorded {r[kind]}, now "
                      f"{n[kind]}: {json.dumps(r['reply'], ensure_ascii=False)[:200]}")


def calibration_facts() -> None:
    rows = json.loads((ROOT / "lab/reports/calibration/rows-local_qwen2.5-coder-0.5b.json").read_text())
    facts = [r for r in rows if r["kind"] == "facts" and r.get("answered")]
    probes = {p.scenario: p for name in {r["domain"] for r in facts} for p in build_fact_probes(load_domain(name))}
    judged = [(r, judge(probes[r["scenario"]], AIMessage(r["answer"]))) for r in facts if r["scenario"] in probes]
    print(f"\n## Calibration fact probes ({len(judged)} answers)\n")
    print("| kind | as recorded | read again |\n| --- | --- | --- |")
    for kind in ("echoed", "misstated"):
        # rows saved before ``echoed`` was recorded: the fit read them with the harness's ``only_data``
        before = sum(bool(r.get(kind, only_data(r["answer"]) if kind == "echoed" else False)) for r, _ in judged)
        print(f"| {kind} | {before} | {sum(bool(n.get(kind)) for _, n in judged)} |")


if __name__ == "__main__":
    answer_steps()
    calibration_facts()
