"""How well each way of understanding a message names what it asks, on messages labelled by a person.

The labels (``lab/reports/intent-probe/dev-labels.yaml``) were written by someone who read the messages and the
intents' descriptions only, never the rules. Every message is classified four ways:

- ``rules``: the keyword rules (and embeddings) taken as they decide, sure or not (``nodes.classify.classify``);
- ``sure``: the same, but only where they are sure (confidence 1.0); elsewhere ``unknown``;
- ``model``: the model alone, with the domain's intents and their descriptions, decoding held to the labels
  (the ``hybrid`` intent variant's request: the intents described);
- ``hybrid``: the rules where they are sure, else the model, whose ``unknown`` keeps the rules' candidate
  (the ``hybrid`` variant);
- ``model_if_unknown``: the rules wherever they name an intent, the model only where they name none.

A message is right when the first label is named; a message with several requests is right when any of them
is (the several-requests step splits those). Tune on the dev labels only.

    python -m lg_harness_lab.evals.intent_probe lab/reports/intent-probe/dev-labels.yaml --model local:qwen2.5-coder-0.5b \
        --out lab/reports/intent-probe/local-qwen2.5-coder-0.5b
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import yaml
from langchain_core.messages import HumanMessage, SystemMessage

from lg_harness_lab.evals.stats import wilson

WAYS = ("rules", "sure", "model", "hybrid", "model_if_unknown")


def model_label(model: Any, domain: Any, text: str) -> tuple[str, float, float]:
    """The model's label for ``text`` (as ``LLMIntent`` asks), its confidence, and the seconds it took."""
    from lg_harness.llm.decoding import constrain
    from lg_harness.nodes.intent import classify_prompt, label_schema, parse_intent_json, still_asked

    bound = constrain(model, "data", schema=label_schema(domain))
    began = time.perf_counter()
    for attempt in range(3):  # a timeout or a 429 is tried again, as the harness's own call would be
        try:
            reply = bound.finish(bound.runnable.invoke([SystemMessage(classify_prompt(domain, described=True)),
                                                        HumanMessage(still_asked(text))]))
        except Exception:  # noqa: BLE001 - any failure of the provider: another try, then "unknown"
            if attempt == 2:
                return "unknown", 0.0, time.perf_counter() - began
            continue
        label, confidence = parse_intent_json(reply.text, domain.intent_names())
        return label, confidence, time.perf_counter() - began
    raise AssertionError("unreachable")


def classify_row(row: dict[str, Any], domain: Any, model: Any) -> dict[str, Any]:
    from lg_harness.llm.embeddings import current_embedder
    from lg_harness.nodes.classify import UNKNOWN
    from lg_harness.nodes.intent import understood

    rules, sure = understood(SimpleNamespace(domain=domain, embedder=current_embedder()), row["text"])  # type: ignore[arg-type]
    label, _, seconds = model_label(model, domain, row["text"])
    hybrid = rules if sure >= 1.0 else (label if label != UNKNOWN else rules)
    return {**row, "rules": rules, "rules_sure": sure >= 1.0, "sure": rules if sure >= 1.0 else UNKNOWN,
            "model": label, "hybrid": hybrid, "model_s": round(seconds, 2)}


def right(row: dict[str, Any], way: str) -> bool:
    if way == "model_if_unknown":  # read from the two columns: no call of its own
        return (row["rules"] if row["rules"] != "unknown" else row["model"]) in row["intents"]
    return row[way] in row["intents"]


def table(rows: Sequence[dict[str, Any]]) -> str:
    out = ["| domain | lang | n | " + " | ".join(WAYS) + " | rules sure on | right when sure |",
           "|---|---|---|" + "---|" * len(WAYS) + "---|---|"]
    groups: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        groups[(r["domain"], r["lang"])].append(r)
        groups[(r["domain"], "all")].append(r)
    for (domain, lang), rs in sorted(groups.items()):
        cells = []
        for way in WAYS:
            k = sum(right(r, way) for r in rs)
            lo, hi = wilson(k, len(rs)) or (0.0, 1.0)  # never None here: every group holds a message
            cells.append(f"{100 * k / len(rs):.1f}% [{100 * lo:.0f}-{100 * hi:.0f}]")
        sure = [r for r in rs if r["rules_sure"]]
        sure_right = sum(right(r, "rules") for r in sure)
        out.append(f"| {domain} | {lang} | {len(rs)} | " + " | ".join(cells) +
                   f" | {len(sure)}/{len(rs)} | {sure_right}/{len(sure)} |")
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("labels")
    parser.add_argument("--model", default="sim")
    parser.add_argument("--out", required=True)
    parser.add_argument("--model-timeout", type=float, default=240.0)
    args = parser.parse_args(argv)
    from lg_harness.llm.factory import make_model
    from lg_harness_lab.evals.metrics import domain_of

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    done_file = out / "rows.jsonl"
    done = {(r["domain"], r["scenario"], r["task"], r["ask"]): r for r in
            (json.loads(line) for line in done_file.read_text(encoding="utf-8").splitlines() if line)} \
        if done_file.exists() else {}
    labels = yaml.safe_load(Path(args.labels).read_text(encoding="utf-8"))
    models: dict[str, Any] = {}
    rows = []
    for row in labels:
        key = (row["domain"], row["scenario"], row["task"], row["ask"])
        if key in done:  # resumable: a row once classified is kept
            rows.append(done[key])
            continue
        domain = domain_of(row["domain"])
        model = models.setdefault(row["domain"], make_model(args.model, timeout=args.model_timeout, domain=domain))
        result = classify_row(row, domain, model)
        rows.append(result)
        with done_file.open("a", encoding="utf-8") as f:
            f.write(json.dumps(result, ensure_ascii=False) + "\n")
    load = Path("/proc/loadavg").read_text().split()[:3] if Path("/proc/loadavg").exists() else []
    seconds = sorted(r["model_s"] for r in rows)
    report = [f"# Intent probe: {args.model} on {args.labels}", "",
              f"Reproduce: `python -m lg_harness_lab.evals.intent_probe {args.labels} --model {args.model} --out {args.out}`",
              "", f"{len(rows)} labelled messages; machine {platform.machine()}, load average at the end "
              f"{' '.join(load)}; model seconds per message p50 {seconds[len(seconds) // 2]:.2f}.", "",
              "Right: the way names the message's first labelled intent (any of them for a message with several).",
              "", table(rows), ""]
    wrong = [r for r in rows if not right(r, "hybrid")]
    report += ["## Where `hybrid` is wrong", ""] + [
        f"- {r['domain']} {r['scenario']}: {r['text'][:90]!r} labelled {r['intents']}, rules {r['rules']}"
        f"{' (sure)' if r['rules_sure'] else ''}, model {r['model']}" for r in wrong]
    (out / "report.md").write_text("\n".join(report) + "\n", encoding="utf-8")
    print(table(rows))


if __name__ == "__main__":
    main()
