"""The context and graph benchmarks at tiny sizes: documented keys, positive figures, structural claims.

Timings depend on the machine and are never asserted. Token counts and database sizes are fixed by the
deterministic ``sim:clean`` model, so the claims that rest on them are checked here.
"""

from __future__ import annotations

import re

import pytest

from lg_harness.core.domain import Domain
from lg_harness.domains.helpdesk import DOMAIN as HELPDESK
from lg_harness.domains.helpdesk.db import HelpdeskDB
from lg_harness.domains.shop import DOMAIN as SHOP
from lg_harness.domains.shop.backend import ShopDB
from lg_harness.domains.shop.bench import customer_facts
from lg_harness.errors import HarnessError
from lg_harness.nodes.classify import classify
from lg_harness_lab.benchmarks import bench_context, bench_graph
from lg_harness_lab.benchmarks.bench_context import BYTE_FRACTIONS, STRATEGIES, TOKEN_FRACTIONS, sample_turns
from tests.support import tool_spec

STRATEGY_KEYS = {"tokens", "token_stand_ins", "token_ratio", "checkpoint_bytes", "checkpoint_ratio", "db_bytes",
                 "waiting_turns", "recall_reply", "recall_ok", "tokens_by_turn", "seconds", "fresh_tokens",
                 "over_fresh"}
SIDE_KEYS = {"ms_first", "ms_last", "ratio", "db_bytes", "db_file_bytes", "checkpoint_rows",
             "latest_checkpoint_bytes", "ms_per_message"}
TRACING_KEYS = {"messages", "off_ms", "on_ms", "ratio", "overhead_ms", "spans", "spans_per_message"}


@pytest.fixture(scope="module")
def context_figures() -> dict:
    return bench_context.run_bench_context(turns=6, long_turns=12)


@pytest.fixture(scope="module")
def graph_figures() -> dict:
    # 40 messages: create_agent's database grows with the square of the thread and passes ours after ~15.
    return bench_graph.run_bench_graph(messages=40, trace_messages=2)


# ------------------------------------------------------------------------------------------- helpers


def test_sampled_turns_are_the_issues_at_full_size() -> None:
    assert sample_turns(40, TOKEN_FRACTIONS) == [1, 10, 20, 30, 40]
    assert sample_turns(200, BYTE_FRACTIONS) == [10, 50, 100, 200]
    assert bench_graph.windows(200) == (range(1, 21), range(181, 201))


def test_a_turn_without_model_call_is_reported_from_the_nearest_one() -> None:
    samples, stand_ins = bench_context.token_samples({1: 500, 2: 0, 3: 700}, [1, 2, 3])
    assert samples == {1: 500, 2: 500, 3: 700}  # a tie goes to the earlier turn
    assert stand_ins == {2: 1}


def test_scripts_ask_only_about_the_users_own_orders() -> None:
    shop = ShopDB.fresh_copy()
    own = {r["id"] for r in shop.query("SELECT id FROM orders WHERE user_id = ?", (SHOP.default_user,))}
    facts = customer_facts(shop)
    assert SHOP.bench is not None
    texts = [*bench_context.script_messages(facts, 80, SHOP.bench.messages),
             *bench_graph.script_messages(facts, 20, SHOP.bench.graph_messages)]
    asked = {o for t in texts for o in re.findall(r"ORD-\d{5}", t)}
    assert asked and asked <= own
    assert "{" not in "".join(texts)


def test_design_for_full_trims_nothing_and_quotas_are_out_of_the_way() -> None:
    full = bench_context.design_for("full", 200)
    assert full.variant("context") == "full"
    assert full.knobs.window_messages >= 20 * 200
    hybrid = bench_context.design_for("hybrid", 200)
    assert hybrid.variant("context") == "hybrid"
    assert hybrid.knobs.session_quota_tool_calls > 200 * hybrid.knobs.turn_quota_tool_calls


# ------------------------------------------------------------------------------------------- context


@pytest.mark.slow
def test_context_figures_have_the_documented_keys(context_figures: dict) -> None:
    f = context_figures
    assert f["token_turns"] == [1, 2, 3, 4, 6]
    assert f["byte_turns"] == [1, 3, 6, 12]
    assert set(f["strategies"]) == set(STRATEGIES)
    for s in f["strategies"].values():
        assert set(s) >= STRATEGY_KEYS
        assert all(s["tokens"][t] > 0 for t in f["token_turns"])
        assert all(s["checkpoint_bytes"][t] > 0 for t in f["byte_turns"])
        assert s["token_ratio"] > 0 and s["checkpoint_ratio"] > 0
        assert s["waiting_turns"] == 0
        assert s["recall_ok"] is None  # six turns end before the recall question


@pytest.mark.slow
def test_full_history_costs_more_tokens_than_hybrid_at_the_last_turn(context_figures: dict) -> None:
    s, last = context_figures["strategies"], context_figures["token_turns"][-1]
    assert s["full"]["tokens"][last] > s["hybrid"]["tokens"][last]


@pytest.mark.slow
def test_fresh_thread_baseline_isolates_what_the_history_adds(context_figures: dict) -> None:
    s, turns = context_figures["strategies"], context_figures["token_turns"]
    for figures in s.values():
        assert set(figures["fresh_tokens"]) == set(turns) and all(n > 0 for n in figures["fresh_tokens"].values())
    # Turn 1 has no history either way; later, the full history adds more than the bounded context.
    assert s["hybrid"]["over_fresh"][1] == pytest.approx(1.0, abs=0.15)
    assert s["full"]["over_fresh"][turns[-1]] > s["hybrid"]["over_fresh"][turns[-1]]


@pytest.mark.slow
def test_hybrid_checkpoint_stays_flat_while_full_grows(context_figures: dict) -> None:
    s = context_figures["strategies"]
    *_, earlier, last = context_figures["byte_turns"]

    def growth(name: str) -> float:
        return s[name]["checkpoint_bytes"][last] / s[name]["checkpoint_bytes"][earlier]

    assert growth("hybrid") <= 1.5
    assert growth("full") > growth("hybrid")


@pytest.mark.slow
def test_context_report_names_every_strategy_and_target(context_figures: dict) -> None:
    table = bench_context.format_table(context_figures)
    assert all(name in table for name in STRATEGIES)
    verdicts = bench_context.targets(context_figures)
    assert len(verdicts) == 3
    assert all(v.startswith(("met: ", "NOT MET: ")) for v in verdicts)
    assert bench_context.notes(context_figures)


# ------------------------------------------------------------------------------------------- graph


@pytest.mark.slow
def test_graph_figures_have_the_documented_keys(graph_figures: dict) -> None:
    f = graph_figures
    assert f["first_window"] == [1, 4] and f["last_window"] == [37, 40]
    for side in ("ours", "create_agent"):
        assert set(f[side]) >= SIDE_KEYS
        assert all(f[side][k] > 0 for k in SIDE_KEYS - {"ms_per_message"})
        assert len(f[side]["ms_per_message"]) == 40
    assert f["db_ratio"] > 0
    assert set(f["tracing"]) >= TRACING_KEYS
    assert f["tracing"]["off_ms"] > 0 and f["tracing"]["on_ms"] > 0


@pytest.mark.slow
def test_create_agent_database_is_larger_than_ours(graph_figures: dict) -> None:
    ours, theirs = graph_figures["ours"], graph_figures["create_agent"]
    assert theirs["db_bytes"] > ours["db_bytes"]
    assert graph_figures["db_ratio"] < 1
    # It resends and stores the whole thread: its newest checkpoint outgrows ours, which stays bounded.
    assert theirs["latest_checkpoint_bytes"] > ours["latest_checkpoint_bytes"]
    assert theirs["messages_in_state"] >= 2 * 40


@pytest.mark.slow
def test_create_agent_ran_the_shop_tools_cleanly(graph_figures: dict) -> None:
    assert graph_figures["create_agent"]["tool_errors"] == 0


@pytest.mark.slow
def test_tracing_arm_wrote_spans(graph_figures: dict) -> None:
    assert graph_figures["tracing"]["spans"] > 0


@pytest.mark.slow
def test_graph_report_prints_both_systems_and_targets(graph_figures: dict) -> None:
    table = bench_graph.format_table(graph_figures)
    assert "ours" in table and "create_agent" in table and "tracing" in table
    verdicts = bench_graph.targets(graph_figures)
    assert len(verdicts) == 4 and "CPU" in verdicts[1]
    assert all(v.startswith(("met: ", "NOT MET: ")) for v in verdicts)
    assert bench_graph.notes(graph_figures)


@pytest.mark.slow
def test_the_default_saves_each_message_once_and_the_sync_row_every_step(graph_figures: dict) -> None:
    """Ours (durability "exit", the default) leaves one checkpoint per message; the third system, the same
    harness with durability="sync", saves every step (and prunes all but the ends of older messages)."""
    assert "ours, sync" in bench_graph.format_table(graph_figures)
    ours, synced = graph_figures["ours"], graph_figures["ours_sync"]
    assert ours["checkpoint_rows"] == graph_figures["messages"]
    assert synced["checkpoint_rows"] > ours["checkpoint_rows"]
    assert len(synced["cpu_ms_per_message"]) == len(ours["cpu_ms_per_message"]) == graph_figures["messages"]


@pytest.mark.slow
def test_unseen_window_embeds_what_names_nothing_and_is_reported(graph_figures: dict) -> None:
    """The first window again on new threads, every text new to the embedder: each message that names no
    identifier is embedded for recall (so at least those; 0 if the memo were not emptied), one that names
    one is recalled by the name, and a message embeds at most its own text and one the tool offer compares."""
    u = graph_figures["unseen"]
    first = graph_figures["first_window"]
    assert u["messages"] == first[1] - first[0] + 1
    assert 0 < u["named"] < u["messages"]  # the script mixes both kinds
    assert u["messages"] - u["named"] <= u["embedded"] <= 2 * u["messages"]
    for side in ("ours", "create_agent"):
        assert u[side]["ms"] > 0 and u[side]["cpu_ms"] > 0
    assert u["vs_create_agent"]["ms"] == pytest.approx(u["ours"]["ms"] / u["create_agent"]["ms"])
    assert f"{u['named']} messages named an identifier" in bench_graph.format_table(graph_figures)


# ------------------------------------------------------------------------------------------- other domains


HELPDESK_SMALL = ("full", "hybrid")


@pytest.fixture(scope="module")
def helpdesk_context_figures() -> dict:
    return bench_context.run_bench_context(turns=6, long_turns=12, strategies=HELPDESK_SMALL, domain="helpdesk")


def test_helpdesk_script_placeholders_resolve_from_the_seeded_desk() -> None:
    db, bench, user = HelpdeskDB.fresh_copy(), HELPDESK.bench, HELPDESK.default_user
    assert bench is not None
    facts = bench.facts({"helpdesk": db}, user)
    assert len(bench.messages) == 40
    texts = [*bench_context.script_messages(facts, 80, bench.messages),
             *bench_graph.script_messages(facts, 20, bench.graph_messages)]
    assert "{" not in "".join(texts) and all(facts.values())
    own = {r["id"] for r in db.query("SELECT id FROM tickets WHERE owner_id = ?", (user,))}
    own |= {r["id"] for r in db.query("SELECT id FROM assets WHERE employee_id = ?", (user,))}
    own |= {r["id"] for r in db.query("SELECT id FROM access_requests WHERE employee_id = ?", (user,))}
    asked = {i for t in texts for i in re.findall(r"\b(?:INC\d{7}|REQ\d{7}|(?:LT|MN|PH)-\d{5})\b", t)}
    assert asked and asked <= own  # the employee's own tickets, devices and requests only
    articles = {r["id"] for r in db.query("SELECT id FROM kb_articles WHERE audience = 'all'")}
    assert {a for t in texts for a in re.findall(r"KB\d{7}", t)} <= articles
    # The recall question asks for the ticket of turn 1.
    assert bench.recall_question in bench.messages and bench.recall_turn > 30
    assert facts[bench.recall_key] in bench.messages[0].format(**facts)
    assert re.fullmatch(r"INC\d{7}", facts[bench.recall_key])


def test_helpdesk_script_only_reads() -> None:
    registry = HELPDESK.registry()
    bench = HELPDESK.bench
    assert bench is not None
    facts = bench.facts({"helpdesk": HelpdeskDB.fresh_copy()}, HELPDESK.default_user)
    for text in {m.format(**facts) for m in (*bench.messages, *bench.graph_messages)}:
        intent, _ = classify(HELPDESK, text)
        kind = HELPDESK.kind(intent)
        assert kind in ("task", "conversational"), (text, intent, kind)
        changing = [t for t in HELPDESK.route(intent).tools if tool_spec(registry, t).changes_state]
        assert not changing, (text, intent, changing)
        if kind == "task":
            assert HELPDESK.route(intent).tools, (text, intent)
    assert classify(HELPDESK, bench.recall_question)[0] == "recall"


@pytest.mark.slow
def test_helpdesk_context_figures_have_the_shops_keys(helpdesk_context_figures: dict,
                                                      context_figures: dict) -> None:
    f = helpdesk_context_figures
    assert set(f) == set(context_figures)
    assert f["domain"] == "helpdesk" and context_figures["domain"] == "shop"
    assert f["token_turns"] == context_figures["token_turns"] and f["byte_turns"] == context_figures["byte_turns"]
    assert set(f["strategies"]) == set(HELPDESK_SMALL)
    for name, s in f["strategies"].items():
        assert set(s) == set(context_figures["strategies"][name])
        assert all(s["tokens"][t] > 0 for t in f["token_turns"])
        assert all(s["checkpoint_bytes"][t] > 0 for t in f["byte_turns"])
        assert s["waiting_turns"] == 0
        assert s["recall_ok"] is None
    last = f["token_turns"][-1]
    assert f["strategies"]["full"]["tokens"][last] > f["strategies"]["hybrid"]["tokens"][last]
    verdicts = bench_context.targets(f)
    assert len(verdicts) == 3 and all(v.startswith(("met: ", "NOT MET: ")) for v in verdicts)
    assert "hybrid" in bench_context.format_table(f) and bench_context.notes(f)


def test_a_domain_without_bench_script_is_refused() -> None:
    bare = Domain(name="bare")
    for run in (lambda: bench_context.run_bench_context(turns=2, long_turns=2, domain=bare),
                lambda: bench_graph.run_bench_graph(messages=2, trace_messages=1, domain=bare)):
        with pytest.raises(HarnessError, match="domain 'bare' has no bench script; add Domain.bench"):
            run()


def test_create_agent_gets_every_helpdesk_tool_with_the_harness_backends() -> None:
    resources, errors = {"helpdesk": HelpdeskDB.fresh_copy()}, []
    tools = bench_graph.domain_tools(HELPDESK, resources, HELPDESK.default_user, "t", errors)
    assert [t.name for t in tools] == HELPDESK.registry().names()
    ticket = next(t for t in tools if t.name == "get_ticket").invoke({"ticket_id": "INC0012346"})
    assert ticket["ticket_id"] == "INC0012346" and not errors


@pytest.mark.slow
def test_helpdesk_graph_bench_runs_the_desk_tools_cleanly() -> None:
    f = bench_graph.run_bench_graph(messages=10, trace_messages=1, domain="helpdesk")
    assert f["domain"] == "helpdesk"
    assert set(f["ours"]) >= SIDE_KEYS and set(f["create_agent"]) >= SIDE_KEYS
    assert f["create_agent"]["tool_errors"] == 0
