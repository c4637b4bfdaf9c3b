"""Answer-step probes: how a model answers a tool result, per presentation of the result and per decoding.

Each probe is one answer step from the ``dev`` split of a domain's scenarios: the customer's request, the
intended read call, and its real result (on a fresh copy of the domain's data, cleaned as the harness
cleans it). It is asked in every presentation of ``nodes.presentation`` (``replay``, ``facts``, ``both``) and
with free or constrained decoding (``llm.decoding``: a grammar on llama.cpp, ``response_format`` where the
provider has it). A reply is judged as the comparison judges what the customer reads:

- ``words_with_fact``: words, not data, and the fact the scenario expects (its ``reply_contains`` /
  ``reply_contains_any``);
- ``data``: JSON, field lines, a Python literal or a call written as text instead of words
  (``evals.customer_grade.data_dump``);
- ``wrong_language``: not in the customer's language (``evals.customer_grade``); ``false_facts``: a value the
  result contradicts (``evals.false_facts``); ``third_person``: "the customer" instead of "you".

The reading is the judge's own, as in the comparison; until 2026-12-07 it was the harness's self-check's
(``nodes.customer_text``, ``nodes.fact_check``). ``lab/reports/answer-step-probes/rejudge.py`` reads the saved
rows both ways.

Rows are saved after every call, so a slow model's run stops and goes on where it was.
"""

from __future__ import annotations

import json
import random
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from lg_harness.core.domain import Domain
from lg_harness.llm.decoding import constrain
from lg_harness.nodes.presentation import PRESENTATIONS, present
from lg_harness.nodes.reply import FINAL_NOTE
from lg_harness.tools.cleaning import clean_result
from lg_harness_lab.evals import customer_grade as grade
from lg_harness_lab.evals.false_facts import false_facts
from lg_harness_lab.evals.scenario import Scenario, load_scenarios, split_of
from lg_harness_lab.evals.scenario_sets import scenario_path
from lg_harness_lab.evals.stats import wilson

DECODINGS = ("free", "constrained")
_SKIP_TAGS = {"injection", "adversarial", "tool-faults"}
_THIRD_PERSON = re.compile(r"\bthe (?:customer|user)\b|\bthis (?:response|result|output) (?:indicates|shows)\b|"
                           r"该用户|该客户|用户的", re.I)


@dataclass
class AnswerProbe:
    domain: str
    scenario: str
    lang: str
    question: str
    call: dict[str, Any]
    result: Any
    facts_all: list[str] = field(default_factory=list)
    facts_any: list[str] = field(default_factory=list)


def _expects_a_read(domain: Domain, s: Scenario) -> bool:
    turn = s.turns[0]
    e = turn.expect
    return (len(s.turns) == 1 and not _SKIP_TAGS & set(s.tags) and bool(e.tools)
            and e.tools[0].name not in domain.changing_tools() and bool(e.reply_contains or e.reply_contains_any))


def _result(domain: Domain, s: Scenario, call: dict[str, Any]) -> Any:
    from lg_harness_lab.evals.calibrate import _real_result

    content = _real_result(domain, s, call)
    return None if content is None else json.loads(content)


def answer_probes(domain: Domain, *, split: str = "dev", per_lang: int = 2, seed: int = 0) -> list[AnswerProbe]:
    """``per_lang`` probes per language of the domain, from single-turn read requests with expected facts."""
    rng = random.Random(f"{seed}:{domain.name}:answers")
    scenarios = [s for s in load_scenarios(scenario_path(domain)) if split == "all" or split_of(s) == split]
    candidates = [s for s in scenarios if _expects_a_read(domain, s)]
    rng.shuffle(candidates)
    probes: list[AnswerProbe] = []
    for lang in ("en", "zh"):
        for s in (c for c in candidates if c.lang == lang):
            if sum(p.lang == lang for p in probes) >= per_lang:
                break
            tools = s.turns[0].expect.tools
            if not tools:
                raise ValueError(f"{s.id}: _expects_a_read kept a turn that expects no tool call")
            want = tools[0]
            call = {"name": want.name, "args": dict(want.args), "id": "call_probe_1", "type": "tool_call"}
            result = _result(domain, s, call)
            if result is None:
                continue
            e = s.turns[0].expect
            probes.append(AnswerProbe(domain.name, s.id, lang, s.turns[0].user, call, result,
                                      list(e.reply_contains), list(e.reply_contains_any)))
    return probes


def probe_messages(probe: AnswerProbe, domain: Domain, presentation: str) -> list[BaseMessage]:
    """The answer step as the reply node builds it, for one presentation."""
    seen = clean_result(probe.result, tool=probe.call["name"])
    turn = [SystemMessage(domain.system_prompt), HumanMessage(probe.question), AIMessage("", tool_calls=[probe.call]),
            ToolMessage(seen, tool_call_id=probe.call["id"])]
    notes = [FINAL_NOTE] if presentation == "replay" else []
    return present(turn, notes, presentation, [(probe.call["name"], probe.result)], probe.lang, domain.registry(), domain)


def _has_fact(text: str, probe: AnswerProbe) -> bool:
    folded = text.casefold()
    held = all(f.casefold() in folded for f in probe.facts_all)
    return held and (not probe.facts_any or any(f.casefold() in folded for f in probe.facts_any))


def judge_answer(probe: AnswerProbe, reply: AIMessage, domain: Domain) -> dict[str, Any]:
    text = (reply.text or "").strip()
    data = bool(reply.tool_calls) or not text or grade.data_dump(text)
    false = [] if data else false_facts(text, [probe.result], probe.lang, domain, probe.question)
    return {"words_with_fact": not data and _has_fact(text, probe), "data": data,
            "wrong_language": not data and grade.wrong_language(text, probe.lang), "false_facts": bool(false),
            "third_person": bool(_THIRD_PERSON.search(text)), "reply": text[:400]}


def _ask(model: BaseChatModel, messages: list[BaseMessage], decoding: str) -> AIMessage:
    if decoding == "free":
        return model.invoke(messages)
    bound = constrain(model, "answer")
    return bound.finish(bound.runnable.invoke(messages))


def run_answer_probes(model: BaseChatModel, probes: Sequence[AnswerProbe], domains: dict[str, Domain],
                      rows: list[dict[str, Any]] | None = None, save: Callable[[list[dict[str, Any]]], object] | None = None,
                      progress: Callable[[int, int], None] | None = None) -> list[dict[str, Any]]:
    """Every probe in every presentation and decoding; rows already in ``rows`` are kept, not asked again."""
    rows = list(rows or [])
    done = {(r["scenario"], r["presentation"], r["decoding"]) for r in rows}
    total = len(probes) * len(PRESENTATIONS) * len(DECODINGS)
    for probe in probes:
        for presentation in PRESENTATIONS:
            for decoding in DECODINGS:
                if (probe.scenario, presentation, decoding) in done:
                    continue
                domain = domains[probe.domain]
                started = time.perf_counter()
                try:
                    verdict = judge_answer(probe, _ask(model, probe_messages(probe, domain, presentation), decoding),
                                           domain)
                except Exception as err:  # noqa: BLE001 - a failed call is a measured outcome
                    verdict = {"error": f"{type(err).__name__}: {err}"[:300]}
                rows.append({"domain": probe.domain, "scenario": probe.scenario, "lang": probe.lang,
                             "presentation": presentation, "decoding": decoding, **verdict,
                             "seconds": round(time.perf_counter() - started, 2)})
                if save:
                    save(rows)
                if progress:
                    progress(len(rows), total)
    return rows


KINDS = ("words_with_fact", "data", "wrong_language", "false_facts", "third_person")


def _cell(rows: list[dict[str, Any]], key: str) -> str:
    n = len(rows)
    k = sum(bool(r.get(key)) for r in rows)
    interval = wilson(k, n)
    if interval is None:  # no rows
        return "n/a"
    lo, hi = interval
    return f"{k}/{n} [{lo * 100:.0f}-{hi * 100:.0f}%]"


def answer_table(rows: Sequence[dict[str, Any]]) -> str:
    """Markdown: one row per presentation x decoding, each kind as k/n with a Wilson 95% interval."""
    lines = ["| presentation | decoding | " + " | ".join(k.replace("_", " ") for k in KINDS) + " | errors |",
             "|---|---|" + "---|" * (len(KINDS) + 1)]
    for presentation in PRESENTATIONS:
        for decoding in DECODINGS:
            chosen = [r for r in rows if r["presentation"] == presentation and r["decoding"] == decoding]
            ok = [r for r in chosen if "error" not in r]
            lines.append(f"| {presentation} | {decoding} | " + " | ".join(_cell(ok, k) for k in KINDS)
                         + f" | {len(chosen) - len(ok)} |")
    return "\n".join(lines)


def write_report(rows: Sequence[dict[str, Any]], out_dir: Path, model: str, command: str, n_probes: int) -> Path:
    path = out_dir / "README.md"
    examples = "\n".join(f"- `{r['presentation']}/{r['decoding']}` {r['scenario']} ({r['lang']}): "
                         f"{json.dumps(r.get('reply', r.get('error', '')), ensure_ascii=False)[:220]}"
                         for r in rows if r["presentation"] in ("replay", "facts"))
    path.write_text(
        f"# Answer-step probes on {model}\n\nCommand: `{command}`\n\n{n_probes} answer steps (request, intended "
        "read call, its real result) from the dev split of shop and helpdesk, each asked in every presentation "
        "of the result and with free or constrained decoding. k/n with Wilson 95% intervals; a reply counts as "
        "words with the fact when it is not data and states the fact the scenario expects.\n\n"
        f"{answer_table(list(rows))}\n\n## Replies\n\n{examples}\n", encoding="utf-8")
    return path
