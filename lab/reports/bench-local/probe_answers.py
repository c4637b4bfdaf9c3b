"""Answer steps on the real model with every tool listed in the prompt, and without (issue 42).

The harness (``harness`` with the knob ``stable_prefix`` on) answers six shop questions on the local model. At each
answer step this probe also asks the engine, with the same settings and grammar (words, not data), for the answer
to four presentations of the results, once with every tool the customer may use listed in the prompt (what a
prefix that never changes within a thread needs) and once with none listed:

- ``replay``: the call and its result as chat messages (what ``harness`` answers from);
- ``replay+note``: the same and the note to answer now;
- ``facts``: the results in words in a user turn, the call and result taken out;
- ``both``: the call, the result and the facts turn.

Prints each answer; writes ``probe_answers.json`` beside this file. About 6 minutes on 2 cores.
"""

import json
from pathlib import Path

from lg_harness.core.design import load_design
from lg_harness.domains.shop import DOMAIN
from lg_harness.graphs.app import Harness, Settings
from lg_harness.llm.local import LocalChatModel
from lg_harness.nodes.presentation import facts_turn
from lg_harness.nodes.reply import FINAL_NOTE

QUESTIONS = ["Where is my order ORD-10134?", "Do you sell wireless bluetooth headphones?",
             "Which coupons can I use right now?", "Show me my orders please", "我的订单 ORD-10144 到哪了？",
             "Tell me more about P1003"]

model = LocalChatModel(model_name="qwen2.5-coder-0.5b")
engine = model.engine()
complete = type(engine).complete
every_tool = [s.json_schema() for s in DOMAIN.registry().offer(None, "customer")]
found: list[dict] = []


answer_steps: list[tuple[list, dict]] = []


def recording(self, messages, tools, **kw):
    """The engine as it is; an answer step's prompt is kept to be asked again after the message (asked inside
    the harness's call, the extra answers would count against its deadline)."""
    if (kw.get("grammar") or "").startswith("root ::= zq-text") and messages[-1]["role"] == "tool":
        answer_steps.append((list(messages), dict(kw)))
    return complete(self, messages, tools, **kw)


def probe(replay: list, kw: dict) -> None:
    results = [(m.get("name") or "", json.loads(m["content"].split(">", 1)[1].rsplit("<", 1)[0]))
               for m in replay if m["role"] == "tool"]
    lang = "zh" if any("\u4e00" <= ch <= "\u9fff" for m in replay if m["role"] == "user" for ch in m["content"]) else "en"
    facts = {"role": "user", "content": facts_turn(results, lang, DOMAIN.registry(), DOMAIN).content}
    base = [m for m in replay if not (m["role"] == "tool" or (m["role"] == "assistant" and m.get("tool_calls")))]
    shapes = {"replay": replay, "replay+note": [*replay, {"role": "system", "content": FINAL_NOTE}],
              "facts": [*base, facts], "both": [*replay, facts]}
    row = {"question": [m["content"] for m in replay if m["role"] == "user"][-1], "answers": {}}
    for name, prompt in shapes.items():
        for listed, tool_list in (("every tool", every_tool), ("no tool", None)):
            text = complete(engine, prompt, tool_list, **kw)["text"]
            row["answers"][f"{name}, {listed}"] = text
            print(f"  [{name}, {listed}] {text[:200]!r}", flush=True)
    found.append(row)


type(engine).complete = recording
design = load_design("harness")
design = design.model_copy(update={"knobs": design.knobs.model_copy(update={"stable_prefix": True})})
with Harness(model, domain="shop", design=design, settings=Settings(data_dir=None)) as h:
    for i, question in enumerate(QUESTIONS):
        print("Q:", question, flush=True)
        print("  => reply:", repr(h.send(f"p{i}", question, "U001").reply), flush=True)
        while answer_steps:
            probe(*answer_steps.pop(0))
Path(__file__).with_name("probe_answers.json").write_text(json.dumps(found, ensure_ascii=False, indent=1), encoding="utf-8")
