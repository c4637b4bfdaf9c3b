"""Build the notebooks from the cell sources in this file: ``python notebooks/_build.py --execute`` (run
them and keep their outputs, as committed), plain (sources only) or ``--check`` (verify the sources).

Each notebook is one string below; a line ``# %% [markdown]`` starts a markdown cell (plain markdown follows)
and a line ``# %%`` starts a code cell. Cell ids are fixed; the committed ``.ipynb`` files carry the outputs
of one run on the current code (graphs and plots as PNG images, long text cut, no timings) so they read as
executed on GitHub, and the test suite executes them again and fails when a committed figure no longer
matches the fresh run's. Review and edit the sources here, then rebuild with ``--execute``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat

HERE = Path(__file__).resolve().parent
KERNELSPEC = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}

NB01 = r'''
# %% [markdown]
# 01 · Run a graph

Build a `Harness` (a model, a domain, a design, and settings naming its data dir), hold a short conversation and look at what each
message did: the reply, the tool calls, the usage, and the checkpointed state behind it.

The model is `sim:clean`: the offline simulated chat model with its fault profile switched off, so the
outputs below are deterministic and the assertions hold. Plain `sim` (the CLI default) carries the fitted
fault profile: invented arguments, repeated calls after errors, malformed arguments, timeouts. Everything
lives in a temporary data dir that is removed at the end.

# %%
import json
import logging
import tempfile

from lg_harness import Harness, Settings

# Each tool call's outcome is printed below beside its reply; the tool logger's lines would only repeat them.
logging.getLogger("harness.tools").setLevel(logging.ERROR)
workdir = tempfile.TemporaryDirectory(prefix="harness-nb01-")
h = Harness("sim:clean", "shop", "harness", Settings(data_dir=workdir.name))
print("design:", h.design.name)
print("data dir:", sorted(p.name for p in h.data_dir.iterdir() if not p.name.endswith(("-shm", "-wal"))))

# %%
# The shop is a real SQLite database in the data dir: take one of U001's delivered orders from it.
order = h.resources["shop"].query_one(
    "SELECT id, status FROM orders WHERE user_id = 'U001' AND status = 'delivered' ORDER BY id")
order_id, db_status = order["id"], order["status"]
print(f"shop database: {order_id} is {db_status}")


def send(text):
    """One user message on thread 'demo'; print the reply, the tool calls and the usage."""
    r = h.send("demo", text, user_id="U001")
    print(f"user: {text}")
    print(f"bot:  {r.reply}")
    for c in r.tool_calls:
        err = f" [{c['error_type']}]" if c["error_type"] else ""
        print(f"      tool {c['name']}({json.dumps(c['args'], ensure_ascii=False)}) -> {c['status']}{err}")
    u = r.usage
    print(f"      intent={r.intent} phase={r.phase} model_calls={u.model_calls} "
          f"input_tokens={u.input_tokens} output_tokens={u.output_tokens}")
    print(f"      path: {' > '.join(r.path)}")
    return r

# %%
status = send(f"Where is my order {order_id}?")
assert order_id in status.reply and db_status in status.reply

# %% [markdown]
"Return it" names no order: the harness fills the `order_id` slot from the fact card (what the user said
earlier), so the model sees the id and does not have to guess one. A return changes the shop, so the
harness first says what it will do and waits for a yes (the design knob `confirm_changes`).

# %%
asked = send("I want to return it")
assert asked.phase == "confirm" and order_id in asked.reply
ret = send("yes")
assert ret.tool_calls[0]["args"]["order_id"] == order_id and "RMA-" in ret.reply
print("slots of this message:", ret.slots)

# %%
zh = send("有没有蓝牙耳机？")   # "any bluetooth headphones?"
recall = send("What order number did I give you at the start?")
thanks = send("Thanks!")
assert zh.intent == "product" and "蓝牙耳机" in zh.reply and order_id in recall.reply

# %% [markdown]
The checkpointed state of the thread: the graph's phase and intent after the last message, the slots of the
current task, the fact card (what the user has stated), and the context account (input tokens per context
layer of the last model call). The checkpoint keeps a trimmed working set of messages; the full transcript
is in the transcript store.

# %%
snap = h.state("demo")
v = snap["values"]
print("checkpoint:", snap["checkpoint_id"], " next:", snap["next"], " turn:", v["turn"])
for key in ("phase", "intent", "slots", "fact_card", "constraints", "context_account", "totals"):
    print(f"{key:16} {json.dumps(v.get(key), ensure_ascii=False, default=str)}")
print(f"messages in the checkpoint: {len(v['messages'])}; in the transcript: {len(h.transcripts.read('demo'))}")

# %%
h.close()
workdir.cleanup()
'''

NB02 = r'''
# %% [markdown]
# 02 · Topology

Every design preset compiles to a LangGraph `StateGraph`. This notebook draws each one offline, as mermaid
text and as a PNG (`graphs.draw.draw_png` lays the graph out itself: no web service, no graphviz), then
shows what differs between the presets, side by side.

The graphs come from a `Harness` on a temporary data dir, so they are the graphs that actually run: a
design with long-term memory gets a `remember` node, one that waits for a human gets a `human` node.

# %%
import tempfile

from IPython.display import Image, Markdown, display

from lg_harness import Harness, Settings
from lg_harness.core.design import PRESETS, ROLES
from lg_harness.graphs.draw import draw_png

workdir = tempfile.TemporaryDirectory(prefix="harness-nb02-")
graphs = {}
for name in PRESETS:
    with Harness("sim:clean", "shop", name, Settings(data_dir=workdir.name)) as h:
        graphs[name] = h.graph.get_graph()
print({name: len(g.nodes) for name, g in graphs.items()})

# %% [markdown]
Node names are roles, so the six graphs have nearly the same shape: most of what a design changes happens
*inside* the nodes (which variant runs, with which knobs), and the topology changes only where a design adds
or drops a part. So each picture says under every node which variant runs there, and draws in orange what
differs from `harness`, the default: a node whose variant differs, a node or an edge `harness` does not have.
Solid arrows are fixed edges; dashed ones are conditional edges (the guards), labelled where the target
differs from the route's name (the self-check's "done" leads on to `remember`).

# %%
base, base_graph = PRESETS["harness"], graphs["harness"]


def edges(g):
    return {(e.source, e.target) for e in g.edges}


def variants(design, g):
    return {n: design.variant(n) for n in g.nodes if n in ROLES}


def differs(design, g):
    nodes = {n for n, variant in variants(design, g).items() if variant != base.variant(n)}
    nodes |= {n for n in g.nodes if n not in base_graph.nodes}
    return nodes | (edges(g) - edges(base_graph))


for name, g in graphs.items():
    print(f"design {name}: mermaid")
    print(g.draw_mermaid())
    display(Image(data=draw_png(g, title=f"design: {name}", notes=variants(PRESETS[name], g),
                                marked=differs(PRESETS[name], g))))

# %% [markdown]
The same, side by side: what runs in each node (`context` builds every model call's messages), the edges
not every design has, and the knobs on which the designs differ. **Bold** is where a design differs from
`harness`; `—` is a node or an edge the design does not have.

# %%
names = list(PRESETS)


def side_by_side(head, rows):
    lines = [f"| {head} | " + " | ".join(names) + " |", "|---" * (len(names) + 1) + "|"]
    for label, cells in rows:
        shown = [f"**{c}**" if c != cells[names.index("harness")] else c for c in cells]
        lines.append(f"| {label} | " + " | ".join(shown) + " |")
    return Markdown("\n".join(lines).replace("__end__", "END").replace("__start__", "START"))


every_node = list(dict.fromkeys(n for g in graphs.values() for n in g.nodes if n not in ("__start__", "__end__")))
node_rows = [(n, [PRESETS[d].variant(n) if n in ROLES and n in graphs[d].nodes else "✓" if n in graphs[d].nodes
                  else "—" for d in names]) for n in every_node]
node_rows.append(("context", [PRESETS[d].variant("context") for d in names]))
display(side_by_side("node", node_rows))

shared = set.intersection(*(edges(g) for g in graphs.values()))
some = sorted(set.union(*(edges(g) for g in graphs.values())) - shared)
print(f"{len(shared)} edges are in every design; these are not:")
display(side_by_side("edge", [(f"{s} → {t}", ["✓" if (s, t) in edges(graphs[d]) else "—" for d in names])
                              for s, t in some]))

knobs = {k: [getattr(PRESETS[d].knobs, k) for d in names] for k in base.knobs.model_dump()}
display(side_by_side("knob", [(k, [str(v) for v in vals]) for k, vals in knobs.items() if len(set(map(str, vals))) > 1]))

# %%
workdir.cleanup()
'''

NB03 = r'''
# %% [markdown]
# 03 · Resume and fork

Every user message is one run of the graph on a thread; the checkpointer (SQLite in the data dir) keeps the
state at the end of every message (`Settings(durability="sync")` keeps every step of it too). So a
conversation survives the process that held it, and any earlier checkpoint can become the head of the
thread again: the next message then continues from there (a fork).

Model `sim:clean` (no faults) keeps the outputs deterministic; `sim` would add its fitted fault profile.

# %%
import logging
import tempfile

from lg_harness import Harness, Settings

# Each tool call's outcome is printed below beside its reply; the tool logger's lines would only repeat them.
logging.getLogger("harness.tools").setLevel(logging.ERROR)
workdir = tempfile.TemporaryDirectory(prefix="harness-nb03-")
h = Harness("sim:clean", "shop", "harness", Settings(data_dir=workdir.name))
first, second = [r["id"] for r in h.resources["shop"].query(
    "SELECT id FROM orders WHERE user_id = 'U001' AND status = 'pending' ORDER BY id LIMIT 2")]
for text in (f"Where is my order {first}?", f"And where is {second}?"):
    r = h.send("t1", text, user_id="U001")
    print(f"user: {text}\nbot:  {r.reply}")
print("the fact card's current order:", h.state("t1")["values"]["fact_card"]["last_order_id"])

# %% [markdown]
Drop the `Harness` (as if the process ended) and open a new one on the same data dir.

# %%
h.close()
del h
h = Harness("sim:clean", "shop", "harness", Settings(data_dir=workdir.name))
history = h.history("t1")
turn_of = {c.checkpoint_id: h.state("t1", c.checkpoint_id)["values"].get("turn") for c in history}
print(f"{'step':>4}  {'turn':>4}  {'phase':9} {'next':14} checkpoint")
for c in history:
    print(f"{c.step:>4}  {turn_of[c.checkpoint_id] or '-':>4}  {c.phase:9} {','.join(c.next) or '(end)':14} {c.checkpoint_id}")

# %%
# Resume: where the thread stands now (the newest checkpoint).
head = h.state("t1")
print("head:", head["checkpoint_id"], "next:", head["next"] or "(waiting for the next message)")
print("current order:", head["values"]["fact_card"]["last_order_id"])
assert head["values"]["fact_card"]["last_order_id"] == second

# %% [markdown]
Fork from the end of the first message: the newest checkpoint of turn 1 with nothing left to run. The fork
copies it to the head of the thread; nothing is deleted, the second message's checkpoints stay in the history
(`h.history(thread, every=True)`), while `h.history(thread)` lists the branch the thread goes on from.

# %%
end_of_turn_1 = next(c for c in history if not c.next and turn_of[c.checkpoint_id] == 1)
new_head = h.fork("t1", end_of_turn_1.checkpoint_id)
print(f"forked from {end_of_turn_1.checkpoint_id}; new head {new_head}")
print("current order after the fork:", h.state("t1")["values"]["fact_card"]["last_order_id"])

# %%
# Continue: "it" now means the first order, because the thread follows the fork.
r = h.send("t1", "Please cancel it", user_id="U001")
print(f"bot:  {r.reply}")  # a change waits for the user's yes (design knob confirm_changes)
assert r.phase == "confirm" and first in r.reply
r = h.send("t1", "yes", user_id="U001")
print(f"bot:  {r.reply}")
for c in r.tool_calls:
    print(f"      tool {c['name']}({c['args']}) -> {c['status']}")
assert r.tool_calls[0]["name"] == "cancel_order" and r.tool_calls[0]["args"]["order_id"] == first
users = [m.content for m in h.state("t1")["values"]["messages"] if m.type == "human"]
print("thread after the fork, user messages:", users)
assert not any(second in u for u in users)
print(f"checkpoints now: {len(h.history('t1', every=True))} (were {len(history)}); "
      f"on the thread's branch: {len(h.history('t1'))}")

# %% [markdown]
A fork rewinds the conversation, not the world: tool side effects stay in the shop database. Changing
tools carry an idempotency key (thread + tool call id), so re-running a step after a resume applies its
change once.

# %%
print({r["id"]: r["status"] for r in h.resources["shop"].query(
    "SELECT id, status FROM orders WHERE id IN (?, ?) ORDER BY id", (first, second))})
h.close()
workdir.cleanup()
'''

NB04 = r'''
# %% [markdown]
# 04 · A/B designs

Three designs on the same scenarios: `naive` (the first customer-service bot: every tool, full history, raw
errors), `state-machine` (its rework) and `harness` (this project's default). `run_compare` plays every
scenario on every design with the `sim` model and its fitted fault profile (seeded per cell, so reruns
give the same records), with tool faults injected by the backend; latency is modelled in virtual seconds.

This is a demo-sized subset (8 scenarios spread over the suite's kinds, 1 seed). For a decision, run
`harness compare --designs naive,state-machine,harness --seeds 3` on the full suite.

# %%
import logging
import tempfile
from pathlib import Path

from IPython.display import Image, Markdown, display

from lg_harness_lab.evals.compare import run_compare
from lg_harness_lab.evals.formatting import fmt_stat, table
from lg_harness_lab.evals.metrics import METRICS, aggregate
from lg_harness_lab.evals.plots import write_plots
from lg_harness_lab.evals.report import render_report
from lg_harness.domains.shop import DOMAIN as SHOP
from lg_harness_lab.evals.scenario import load_scenarios, spread
from lg_harness_lab.evals.scenario_sets import scenario_path

# The tool errors and the simulated model's timeouts of these runs are the faults the comparison injects and
# measures: every run record keeps them, and a cell that crashed is named below. Their log lines would only
# bury the results.
logging.getLogger("harness.tools").setLevel(logging.ERROR)
logging.getLogger("harness.model").setLevel(logging.ERROR)

DESIGNS = ["naive", "state-machine", "harness"]
workdir = tempfile.TemporaryDirectory(prefix="harness-nb04-")
out = Path(workdir.name)
suite = load_scenarios(scenario_path(SHOP))
subset = spread(suite, 8)
print(f"{len(subset)} of {len(suite)} scenarios:")
for s in subset:
    print(f"  {s.id:28} {s.lang}  {len(s.turns)} turn(s)  {', '.join(s.tags)}")

# %%
# "sim:fitted" by name: plain "sim" follows SIMLM_PROFILE, which the test suite sets to another profile
records = run_compare(DESIGNS, subset, seeds=1, model="sim:fitted", out_dir=out / "ab", workers=1)
crashed = [r["cell"] for r in records if r.get("crash")]
print(f"{len(records)} cells; crashed: {crashed or 'none'}")

# %%
summary = aggregate(records, subset)
KEYS = ["task_completion", "turn_pass_rate", "arg_validity_emitted", "arg_validity_boundary", "intent_accuracy",
        "model_calls_per_msg", "input_tokens_per_msg", "latency_p50_s", "handoffs"]
# one row per metric: each figure with its 95% interval († Wilson's, on few scenario kinds) and its n
rows = [[METRICS[k][0], *(fmt_stat(summary["metrics"][d][k], METRICS[k][1]) for d in summary["designs"])]
        for k in KEYS]
display(Markdown("\n".join(table(["metric", *summary["designs"]], rows))))

# %%
plots = {p.stem: p for p in write_plots(summary, out / "plots")}
print("written:", ", ".join(sorted(plots)))
for name in ("task_completion", "input_tokens_per_msg", "model_calls_per_msg", "latency_cdf"):
    if name in plots:
        display(Image(filename=str(plots[name])))

# %% [markdown]
The report `harness compare` writes (`report.md`) from the same summary: the main tables with 95% intervals
(a cluster bootstrap over scenario kinds, Wilson's on few kinds) and n beside every figure, the write-ups'
figures next to what this run measured, paired differences against `harness`, completion by tag. On 8
scenarios the intervals are wide and most differences are not significant, and claims about long
conversations have no data in this subset.

# %%
display(Markdown(render_report(summary, command="notebooks/04_ab_designs.ipynb")))

# %%
workdir.cleanup()
'''

NB05 = r'''
# %% [markdown]
# 05 · A custom node and a custom tool

Extend the harness without touching its code: write a tool and a node variant, register them, name the
variant in a design (a copy of `harness`), run a conversation that uses both, and compare the new design
with `harness`.

- the tool, `track_order_status(ctx, order_id)`: an order's status with an estimated delivery date,
  computed from the shop database;
- the variant, reply `survey`: the built-in reply, plus a short satisfaction question after a task.
  `register_variant` adds it to the process's default runtime, which every `Harness` and `harness compare`
  cell in this kernel uses; to keep a variant apart, register it on a runtime of your own
  (`runtime = Runtime()`, `runtime.variants.register("reply", "survey")`, `Settings(runtime=runtime)`).

The conversation uses `sim:clean` (deterministic, no faults); the comparison uses `sim:fitted` (the default `sim` profile, named so that `SIMLM_PROFILE` cannot change it).

# %%
import dataclasses
import logging
import tempfile
from datetime import datetime, timedelta
from pathlib import Path

import yaml
from IPython.display import Markdown, display

from lg_harness import Harness, Settings
from lg_harness.domains.shop import DOMAIN as SHOP
from lg_harness.tools.context import ToolContext
from lg_harness.tools.errors import NotFoundError
from lg_harness.domains.shop.backend import shop_db, shop_now
from lg_harness.domains.shop.tools import OrderId

# Each tool call's outcome is printed below beside its reply (and the comparison keeps them in its run records);
# the tool logger's lines would only repeat them.
logging.getLogger("harness.tools").setLevel(logging.ERROR)
TRANSIT_DAYS = {"SF Express": 2, "YTO Express": 3, "ZTO Express": 4}


def track_order_status(ctx: ToolContext, order_id: OrderId) -> dict:
    """Track one of the user's orders: its status and the estimated delivery date. Use it when the user
    asks where an order is or when it will arrive and you know the order number.

    Args:
        order_id: The order number, e.g. ORD-10042.
    """
    row = shop_db(ctx).query_one("SELECT * FROM orders WHERE id = ? AND user_id = ?", (order_id, ctx.user_id))
    if row is None:
        raise NotFoundError(f"Order {order_id} was not found in your account.")
    days = TRANSIT_DAYS.get(row["carrier"] or "", 3)
    since = {"pending": (row["created_at"], 2 + days), "shipped": (row["updated_at"], days)}.get(row["status"])
    eta = None
    if since:  # not before tomorrow: a late parcel is still on its way
        due = datetime.fromisoformat(since[0]) + timedelta(days=since[1])
        eta = max(due, shop_now() + timedelta(days=1)).date().isoformat()
    return {"order": row["id"], "status": row["status"], "estimated_delivery": eta}


track_order_status.changes_state = False  # a lookup: a tool that does not say so is treated as changing


registry = SHOP.registry()          # a fresh registry of the shop's tools ...
spec = registry.register(track_order_status)   # ... plus ours: schema from the type hints and docstring
print(spec.json_schema())

# %%
from lg_harness import register_variant
from lg_harness.nodes.reply import ModelReply, lang_of

SURVEY = {"en": "Did that help? (yes/no)", "zh": "这个回答对您有帮助吗？"}


@register_variant("reply", "survey")
class SurveyReply(ModelReply):
    """The built-in reply; after a message that ran tools, one satisfaction question is appended."""

    def __call__(self, state, config):
        update = super().__call__(state, config)
        if state.get("tool_log") and update.get("reply"):
            update["reply"] += "\n" + SURVEY.get(lang_of(state), SURVEY["en"])
        return update

# %% [markdown]
Plug both in. The variant is named in a design: a copy of `harness` with `reply: survey`. The tool goes into
a copy of the shop domain, into the route of its `order_status` intent (ahead of `get_order_status`; at most
three tools are offered per call). Routes belong to the domain value passed in, so nothing process-wide
changes and nothing needs undoing.

The simulated model picks a tool by words in its name (for an order-status question: `order_status`,
`track`, `status`, first match in the order offered), which is why the tool is called `track_order_status`;
a real model reads the description. It words answers only for the shop's own result kinds and quotes any
other result as JSON, so the replies below show the tool's result as it came back.

# %%
from lg_harness.domains.shop import DOMAIN as SHOP
from lg_harness.core.design import load_design


def with_tracking(intent):
    if intent.name != "order_status":
        return intent
    return dataclasses.replace(intent, route=dataclasses.replace(intent.route, tools=("track_order_status",
                                                                                     *intent.route.tools)))


shop_plus = dataclasses.replace(SHOP, name="shop-plus", tools=(*SHOP.tools, track_order_status),
                                intents=tuple(with_tracking(i) for i in SHOP.intents))
print(shop_plus.route("order_status"))

base = load_design("harness")
design = base.model_copy(deep=True, update={
    "name": "harness-survey", "description": "harness with a satisfaction question after each task",
    "variants": {**base.variants, "reply": "survey"}})
print({r: design.variant(r) for r in design.variants if design.variant(r) != base.variant(r)})

# %%
workdir = tempfile.TemporaryDirectory(prefix="harness-nb05-")
h = Harness("sim:clean", shop_plus, design, Settings(data_dir=Path(workdir.name) / "chat"))
shipped, pending = (h.resources["shop"].query_one("SELECT id FROM orders WHERE user_id = 'U001' AND status = ? ORDER BY id", (s,))["id"]
                    for s in ("shipped", "pending"))
replies = []
for text in (f"When will my order {shipped} arrive?", f"我的订单 {pending} 什么时候到？", "Thanks!"):
    r = h.send("t1", text, user_id="U001")
    replies.append(r)
    print(f"user: {text}\nbot:  {r.reply}")
    for c in r.tool_calls:
        print(f"      tool {c['name']}({c['args']}) -> {c['status']}")
h.close()
assert all(r.tool_calls[0]["name"] == "track_order_status" for r in replies[:2])
assert "estimated delivery" in replies[0].reply.lower() and replies[0].reply.endswith(SURVEY["en"])
assert replies[1].reply.endswith(SURVEY["zh"]) and SURVEY["en"] not in replies[2].reply

# %% [markdown]
Compare with `harness` on a tiny subset. `run_compare` takes designs by name or file, so the custom design is
written to a YAML file. `workers=1` runs the cells in this kernel, where the `survey` variant is registered
(worker processes would have to import it). The comparison's cells use the shop's own tools, so it measures
the variant; the new tool serves no scenario of the suite.

# %%
from lg_harness_lab.evals.compare import run_compare
from lg_harness_lab.evals.metrics import METRICS, aggregate
from lg_harness_lab.evals.report import fmt_value
from lg_harness.domains.shop import DOMAIN as SHOP
from lg_harness_lab.evals.scenario import load_scenarios, spread
from lg_harness_lab.evals.scenario_sets import scenario_path

design_file = Path(workdir.name) / "harness-survey.yaml"
design_file.write_text(yaml.safe_dump(design.model_dump(), allow_unicode=True, sort_keys=False), encoding="utf-8")
subset = spread(load_scenarios(scenario_path(SHOP)), 4)
records = run_compare(["harness", str(design_file)], subset, seeds=1, model="sim:fitted",
                      out_dir=Path(workdir.name) / "ab", workers=1)
summary = aggregate(records, subset)
KEYS = ["task_completion", "turn_pass_rate", "arg_validity_emitted", "arg_validity_boundary", "model_calls_per_msg",
        "input_tokens_per_msg"]
variant_of = {"harness": base.variant("reply"), design.name: design.variant("reply")}
lines = ["| design | reply variant | " + " | ".join(METRICS[k][0] for k in KEYS) + " | replies with the survey |",
         "|---" * (len(KEYS) + 3) + "|"]
for d in summary["designs"]:
    turns = [t for r in records if r["design"] == d for t in r["turns"]]
    asked = sum(any(q in t["reply"] for q in SURVEY.values()) for t in turns)
    cells = [fmt_value(summary["metrics"][d][k]["mean"], METRICS[k][1]) for k in KEYS]
    lines.append(f"| {d} | {variant_of[d]} | " + " | ".join(cells) + f" | {asked} of {len(turns)} |")
display(Markdown("\n".join(lines)))

# %%
workdir.cleanup()
'''

NB06 = r'''
# %% [markdown]
# 06 · Bring your own domain

The harness core knows no shop: everything that varies by domain is one `Domain` value, passed in like the
model. A page of code brings a new one: a lending library with one identifier type (`BOOK-1234`), two
tools (one changes state), two task intents and a phrase to ask for a missing book. The entity marker in the
tool's type tells the harness which argument names a book, so entity alignment, canonical ids, grounding and
the fact card work without lists of argument names.

# %%
import logging
import tempfile
from typing import Annotated

from pydantic import Field

from lg_harness import Harness, Settings
from lg_harness.core.domain import Domain, Intent, Route
from lg_harness.tools.context import ToolContext
from lg_harness.tools.entities import Entity, EntityType

# Each tool call's outcome is printed below beside its reply; the tool logger's lines would only repeat them.
logging.getLogger("harness.tools").setLevel(logging.ERROR)
BookId = Annotated[str, Entity("book"), Field(pattern=r"^BOOK-\d{4}$", description="Book id, e.g. BOOK-0042.")]
TITLES = {"BOOK-0042": "The Hitchhiker's Guide to the Galaxy", "BOOK-0007": "Dune"}


def get_book(ctx: ToolContext, book_id: BookId) -> dict:
    """Look up a library book by its id: its title and how often its loan was renewed.

    Args:
        book_id: The book's id.
    """
    return {"book_id": book_id, "title": TITLES[book_id], "renewals": ctx.extras["loans"].get(book_id, 0)}


def renew_loan(ctx: ToolContext, book_id: BookId) -> dict:
    """Renew (extend) the loan of a borrowed library book by two weeks.

    Args:
        book_id: The borrowed book's id.
    """
    loans = ctx.extras["loans"]
    loans[book_id] = loans.get(book_id, 0) + 1
    return {"book_id": book_id, "status": "renewed", "renewals": loans[book_id]}


get_book.changes_state = False  # say which tools only read: undeclared ones are confirmed as changes
renew_loan.changes_state = True

library = Domain(
    name="library",
    system_prompt="You are a library assistant. Use the tools offered; never invent book ids.",
    intents=(
        Intent("renew", rules={"en": ("renew", "extend")},
               route=Route(required=(("book_id",),), tools=("renew_loan", "get_book"))),
        Intent("book_info", rules={"en": ("book", "about")}, entity_hint="book",
               route=Route(required=(("book_id",),), tools=("get_book",))),
    ),
    entity_types=(EntityType("book", r"(?i:book)-(\d{4})", canonical="BOOK-{0}", examples=("BOOK-0042",),
                             slot="book_id", remember=True),),
    tools=(get_book, renew_loan),
    phrases={"ask_book_id": {"en": "Which book? Its id looks like BOOK-1234."}},
    default_user="reader-1",
    open_resources=lambda path_for: {"loans": {}},
)
print({spec: library.tool_entities(library.registry().get(spec)) for spec in library.registry().names()})

# %% [markdown]
Run it like any domain: the same graph, design and simulated model. `sim` understands a request from the tool
schemas and the conversation alone (`simlm`), so it works on a domain it has never seen. "the first
one" picks the first book mentioned, from the fact card that remembers mentions in order. A renewal
changes something, so `harness` asks first (in the core's generic words, as this domain has no
`change_renew_loan` phrase) and renews on the yes.

# %%
workdir = tempfile.TemporaryDirectory(prefix="harness-nb06-")
h = Harness("sim:clean", library, "harness", Settings(data_dir=workdir.name))
for text in ("Tell me about BOOK-0042", "and about book-0007?", "Renew the first one I asked about", "yes"):
    r = h.send("t1", text, user_id="reader1")
    print(f"user: {text}\nbot:  {r.reply}")
    for c in r.tool_calls:
        print(f"      tool {c['name']}({c['args']}) -> {c['status']}")
print("renewals:", h.resources["loans"])
print("fact card:", {k: v for k, v in r.values["fact_card"].items() if "book" in k})  # the state after the last message
h.close()

# %% [markdown]
The bundled packs are domains like this one, found through the `lg_harness.domains` entry-point group (a pack
you `pip install` registers there too): `shop` and `helpdesk`, an IT service desk whose password resets wait
for the caller's identity to be verified.

# %%
from lg_harness.core.domain import installed_domains, load_domain

print(sorted(installed_domains()))
helpdesk = load_domain("helpdesk")
with Harness("sim:clean", helpdesk, settings=Settings(data_dir=f"{workdir.name}/helpdesk")) as hd:
    ticket = hd.resources["helpdesk"].query("SELECT id FROM tickets WHERE owner_id = 'E1001' ORDER BY id")[0]["id"]
    r = hd.send("t1", f"What is the status of {ticket}?", user_id="E1001")
    print(f"user: What is the status of {ticket}?\nbot:  {r.reply}")
    for c in r.tool_calls:
        print(f"      tool {c['name']}({c['args']}) -> {c['status']}")
workdir.cleanup()
'''


NOTEBOOKS = {
    "01_run_a_graph": NB01,
    "02_topology": NB02,
    "03_resume": NB03,
    "04_ab_designs": NB04,
    "05_custom_node": NB05,
    "06_bring_your_own_domain": NB06,
}


def split_cells(source: str) -> list[tuple[str, str]]:
    """``(kind, text)`` per cell, kind ``markdown`` or ``code``, from a ``# %%``-marked source."""
    cells: list[tuple[str, list[str]]] = []
    for line in source.strip("\n").splitlines():
        if line.startswith("# %%"):
            cells.append(("markdown" if "[markdown]" in line else "code", []))
        elif not cells:
            raise ValueError(f"text before the first cell marker: {line!r}")
        else:
            cells[-1][1].append(line)
    return [(kind, "\n".join(lines).strip("\n")) for kind, lines in cells]


def build(name: str) -> nbformat.NotebookNode:
    """The notebook ``name`` with no outputs and cell ids ``cell-01``, ``cell-02``, ..."""
    nb = nbformat.v4.new_notebook()
    nb.metadata = {"kernelspec": dict(KERNELSPEC), "language_info": {"name": "python"}}
    for i, (kind, text) in enumerate(split_cells(NOTEBOOKS[name]), start=1):
        make = nbformat.v4.new_markdown_cell if kind == "markdown" else nbformat.v4.new_code_cell
        nb.cells.append(make(text, id=f"cell-{i:02d}"))
    nbformat.validate(nb)
    return nb


def render(name: str) -> str:
    return nbformat.writes(build(name)) + "\n"


MAX_TEXT = 4000  # characters kept of one text output, so committed notebooks stay small
PNG_COLOURS = 64  # committed images get a palette of this many colours: the same picture in a quarter of the bytes
IMAGE_REPR = "<IPython.core.display.Image object>"


def small_png(b64: str) -> str:
    """A base64 PNG re-encoded with a ``PNG_COLOURS`` palette (drawings and plots are flat colours)."""
    import base64
    import io

    from PIL import Image

    out = io.BytesIO()
    with Image.open(io.BytesIO(base64.b64decode(b64))) as image:
        image.convert("RGB").quantize(colors=PNG_COLOURS, method=Image.Quantize.MEDIANCUT).save(
            out, format="PNG", optimize=True)
    return base64.b64encode(out.getvalue()).decode("ascii")


def _cut(text: str, mark: str) -> str:
    return text[:MAX_TEXT] + mark if len(text) > MAX_TEXT else text


def _joined_streams(outputs: list) -> list:
    """Consecutive prints to one stream as one output: how the kernel chunks them varies from run to run."""
    joined: list = []
    for out in outputs:
        last = joined[-1] if joined else None
        if (out.get("output_type") == "stream" and last is not None and last.get("output_type") == "stream"
                and last.get("name") == out.get("name")):
            last["text"] += out["text"]
        else:
            joined.append(out)
    return joined


def keep_small(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """What is committed of an executed notebook: no timings, images as small PNGs (their text stand-in
    dropped, so GitHub shows the picture), long text cut. The test suite applies the same to a fresh run
    before comparing its figures with the committed ones."""
    for cell in nb.cells:
        cell.metadata.pop("execution", None)
        if "outputs" in cell:
            cell.outputs = _joined_streams(cell.outputs)
        for out in cell.get("outputs", []):
            data = out.get("data") or {}
            if "image/png" in data:
                data["image/png"] = small_png(data["image/png"])
                if data.get("text/plain") == IMAGE_REPR:
                    data.pop("text/plain")
            if isinstance(out.get("text"), str):
                out["text"] = _cut(out["text"], "\n[... cut]\n")
            for mime, value in list(data.items()):
                if isinstance(value, str) and not mime.startswith("image/"):
                    data[mime] = _cut(value, "\n[... cut]")
    return nb


def executed(name: str) -> nbformat.NotebookNode:
    """The notebook run top to bottom (repository root as working directory), outputs kept small."""
    from nbclient import NotebookClient

    nb = build(name)
    NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(HERE.parent)}}).execute()
    keep_small(nb)
    nbformat.validate(nb)
    return nb


def sources(nb: nbformat.NotebookNode) -> list[tuple[str, str, str]]:
    """What a notebook is made of, outputs aside: (id, kind, source) per cell."""
    return [(c.get("id", ""), c.cell_type, c.source) for c in nb.cells]


def main(argv: list[str]) -> int:
    check, execute = "--check" in argv, "--execute" in argv
    stale = []
    for name in NOTEBOOKS:
        path = HERE / f"{name}.ipynb"
        current = nbformat.reads(path.read_text(encoding="utf-8"), as_version=4) if path.exists() else None
        fresh = current is not None and sources(current) == sources(build(name))
        if fresh and not execute:
            continue
        stale.append(path.name)
        if not check:
            path.write_text(nbformat.writes(executed(name) if execute else build(name)) + "\n", encoding="utf-8")
    if check and stale:
        print(f"out of date: {', '.join(stale)}; run: python notebooks/_build.py --execute", file=sys.stderr)
        return 1
    print(f"{'checked' if check else 'wrote'} {len(NOTEBOOKS)} notebooks" + (f" ({len(stale)} changed)" if stale else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
