"""The ``harness`` console script, run as a user runs it: separate processes sharing one ``--data-dir``.

Subprocesses cost a few seconds each, so every test groups its assertions; the whole file starts fewer
than twenty processes. Expectations about shop data are read from the database in the data dir.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from lg_harness.domains.shop import nlu
from lg_harness.graphs.app import Harness, Settings
from tests.support import harness

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
STATUS_ZH = {"pending": ("待发货", "待处理"), "shipped": ("已发货",), "delivered": ("已签收", "已送达"),
             "cancelled": ("已取消",)}
RUN_KEYS = ("thread_id", "reply", "phase", "intent", "tool_calls", "usage", "checkpoint_id", "trace_id")
CALL_KEYS = ("id", "name", "args", "status", "error_type")
USAGE_KEYS = ("input_tokens", "output_tokens", "model_calls")


def run_json(data_dir: Path, thread: str, message: str) -> dict:
    proc = harness("run", message, "--thread", thread, "--data-dir", str(data_dir), "--json", cwd=data_dir)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    doc = json.loads(proc.stdout)  # exactly one JSON document: the whole of stdout parses
    check_run_document(doc, thread)
    return doc


def check_run_document(doc: dict, thread: str) -> None:
    assert isinstance(doc, dict)
    missing = [k for k in RUN_KEYS if k not in doc]
    assert not missing, f"--json lacks documented keys {missing}"
    assert doc["thread_id"] == thread
    assert isinstance(doc["reply"], str) and doc["reply"]
    assert isinstance(doc["phase"], str) and isinstance(doc["checkpoint_id"], str) and doc["checkpoint_id"]
    assert isinstance(doc["trace_id"], str) and doc["trace_id"], "each run is traced"
    assert isinstance(doc["tool_calls"], list)
    for call in doc["tool_calls"]:
        assert all(k in call for k in CALL_KEYS), call
        assert isinstance(call["args"], dict) and call["status"] in ("ok", "error", "blocked")
    assert all(isinstance(doc["usage"].get(k), int) for k in USAGE_KEYS), doc["usage"]


def ok_calls(doc: dict) -> list[tuple[str, dict]]:
    """Successful calls (the default sim may make, and the harness repair, a faulty attempt first)."""
    return [(c["name"], c["args"]) for c in doc["tool_calls"] if c["status"] == "ok"]


def state_of(data_dir: Path, thread: str) -> tuple:
    with Harness(settings=Settings(data_dir=data_dir)) as h:
        state = h.state(thread)
        return state["checkpoint_id"], state["values"], len(h.history(thread)), len(h.transcripts.read(thread))


# ================================================================================================ run


@pytest.mark.slow
def test_chinese_thread_across_processes_status_then_return(tmp_path, shop, u001_orders):
    order = u001_orders["delivered"][0]
    row = shop.query_one("SELECT status FROM orders WHERE id = ?", (order,))

    first = run_json(tmp_path, "zh", f"我的订单 {order} 到哪了？")
    assert first["intent"] == "order_status"
    assert ok_calls(first) == [("get_order_status", {"order_id": order})], first["tool_calls"]
    assert order in first["reply"] and any(word in first["reply"] for word in STATUS_ZH[row["status"]])
    assert nlu.language(first["reply"]) == "zh"
    assert first["usage"]["model_calls"] >= 1 and first["usage"]["input_tokens"] > 0

    asked = run_json(tmp_path, "zh", "我想退货")  # a new process: everything comes from the data dir
    assert asked["phase"] == "confirm" and order in asked["reply"] and nlu.language(asked["reply"]) == "zh"
    assert not shop.query("SELECT id FROM returns WHERE order_id = ?", (order,)), "nothing before the yes"
    second = run_json(tmp_path, "zh", "是的")  # the change runs on the yes, in yet another process
    assert second["intent"] == "return_order"
    assert [(n, a["order_id"]) for n, a in ok_calls(second)] == [("request_return", order)]
    assert nlu.language(second["reply"]) == "zh" and order in second["reply"]
    returns = shop.query("SELECT id FROM returns WHERE order_id = ?", (order,))
    assert len(returns) == 1 and f"RMA-{returns[0]['id']}" in second["reply"]
    assert second["checkpoint_id"] != first["checkpoint_id"]


@pytest.mark.slow
def test_english_thread_history_resume_and_fork_across_processes(tmp_path, shop, u001_orders):
    delivered, shipped = u001_orders["delivered"][0], u001_orders["shipped"][0]
    status = shop.query_one("SELECT status FROM orders WHERE id = ?", (delivered,))["status"]

    first = run_json(tmp_path, "en", f"Where is {delivered}? It should be here by now")
    assert ok_calls(first) == [("get_order_status", {"order_id": delivered})], first["tool_calls"]
    assert delivered in first["reply"] and status in first["reply"]
    second = run_json(tmp_path, "en", f"And where is {shipped}?")
    assert ok_calls(second) == [("get_order_status", {"order_id": shipped})], second["tool_calls"]

    hist = harness("history", "--thread", "en", "--data-dir", str(tmp_path), "--json", cwd=tmp_path)
    assert hist.returncode == 0, hist.stderr
    listing = json.loads(hist.stdout)
    ids = [c["checkpoint_id"] for c in listing["checkpoints"]]
    assert {first["checkpoint_id"], second["checkpoint_id"]} <= set(ids)
    assert all({"checkpoint_id", "step", "phase"} <= set(c) for c in listing["checkpoints"])

    with Harness(settings=Settings(data_dir=tmp_path)) as h:
        earlier = h.state("en", first["checkpoint_id"])["values"]
    resumed = harness("resume", "--thread", "en", "--checkpoint", first["checkpoint_id"], "--data-dir",
                      str(tmp_path), "--json", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    doc = json.loads(resumed.stdout)
    assert doc["forked_from"] == first["checkpoint_id"] and doc["checkpoint_id"] not in ids
    with Harness(settings=Settings(data_dir=tmp_path)) as h:
        assert h.state("en")["values"] == earlier, "after resume --checkpoint the thread is at that point"

    asked = run_json(tmp_path, "en", "I want to return it")
    assert asked["phase"] == "confirm" and delivered in asked["reply"]
    third = run_json(tmp_path, "en", "yes")
    assert [(n, a["order_id"]) for n, a in ok_calls(third)] == [("request_return", delivered)]
    assert shop.query_one("SELECT COUNT(*) FROM returns WHERE order_id = ?", (shipped,))[0] == 0


@pytest.mark.slow
def test_product_question_answers_from_product_data(tmp_path, shop):
    products = shop.query("SELECT id, name, price FROM products ORDER BY id")
    simple = [p for p in products if re.fullmatch(r"[A-Za-z]+ [A-Za-z]+", p["name"])]
    assert simple, "the seed has a product with a plain two-word name"
    product = simple[-1]
    doc = run_json(tmp_path, "prod", f"Do you have {product['name'].lower()}?")
    assert doc["intent"] == "product"
    assert ok_calls(doc) == [("search_products", {"query": product["name"].lower()})], doc["tool_calls"]
    assert product["name"] in doc["reply"] and product["id"] in doc["reply"]
    assert product["price"] in {float(n) for n in re.findall(r"\d+(?:\.\d+)?", doc["reply"])}


@pytest.mark.slow
def test_missing_slot_asks_and_calls_no_tool(tmp_path):
    doc = run_json(tmp_path, "ask", "where is my order?")
    assert doc["intent"] == "order_status"
    assert doc["tool_calls"] == []
    assert "order" in doc["reply"].lower() and "?" in doc["reply"]
    assert re.findall(r"ORD-\d{5}", doc["reply"]) in ([], ["ORD-12345"]), "no real order id is made up"


# ================================================================================================ graph, designs


def design_nodes() -> list[str]:
    from lg_harness.core.design import load_design
    from lg_harness.graphs.builder import build_graph
    from lg_harness.llm.sim import SimChatModel

    graph = build_graph(load_design("harness"), SimChatModel()).get_graph()
    return [n for n in graph.nodes if not n.startswith("__")]


@pytest.mark.slow
def test_graph_png(tmp_path):
    import matplotlib.image as mpimg

    out = tmp_path / "g.png"
    proc = harness("graph", "--format", "png", "-o", str(out), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    data = out.read_bytes()
    assert data.startswith(PNG_SIGNATURE)
    image = mpimg.imread(out)
    assert image.shape[0] > 100 and image.shape[1] > 100


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["mermaid", "ascii"])
def test_graph_text_formats_name_every_node(tmp_path, fmt):
    proc = harness("graph", "--format", fmt, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout
    nodes = design_nodes()
    assert {"intent", "collect", "action", "reply", "self_check", "handoff"} <= set(nodes)
    missing = [n for n in nodes if not re.search(rf"\b{re.escape(n)}\b", text)]
    assert not missing, f"{fmt} output lacks nodes {missing}"
    if fmt == "mermaid":
        assert "-->" in text or "-.->" in text, "mermaid output has edges"


def test_designs_json(tmp_path):
    from lg_harness.core.design import PRESETS, ROLES, Knobs

    proc = harness("designs", "--json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    by_name = {d["name"]: d for d in doc["designs"]}
    assert set(PRESETS) <= set(by_name) and "harness" in by_name
    for name, preset in PRESETS.items():
        d = by_name[name]
        assert d["variants"] == {r: preset.variant(r) for r in ROLES}
        assert set(d["knobs"]) == set(Knobs.model_fields)


# ================================================================================================ bad input


def bad_input_cases(tmp_path: Path, checkpoint_like: str) -> dict[str, tuple[list[str], str]]:
    blocker = tmp_path / "not-a-dir.txt"
    blocker.write_text("a regular file")
    data = ["--data-dir", str(tmp_path / "data")]
    return {
        "empty message": (["run", "", "--thread", "t", *data, "--json"], "empty"),
        "100 KB message": (["run", "x" * 100_000, "--thread", "t", *data, "--json"], "limit"),
        "unknown thread": (["history", "--thread", "no-such-thread", *data, "--json"], "unknown thread"),
        "unknown checkpoint": (["resume", "--thread", "t", "--checkpoint", checkpoint_like, *data, "--json"],
                               "unknown checkpoint"),
        "data dir under a file": (["run", "hello", "--thread", "t", "--data-dir", str(blocker / "data"), "--json"],
                                  "data dir"),
        "file as data dir": (["run", "hello", "--thread", "t", "--data-dir", str(blocker), "--json"], "data dir"),
    }


CASES = ["empty message", "100 KB message", "unknown thread", "unknown checkpoint", "data dir under a file",
         "file as data dir"]


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES)
def test_bad_input_one_error_line_no_traceback_state_unchanged(tmp_path, case):
    data_dir = tmp_path / "data"
    with Harness(settings=Settings(data_dir=data_dir)) as h:  # an existing conversation, set up in-process
        h.send("t", "hello", "U001")
        real = h.state("t")["checkpoint_id"]
    fake = re.sub(r"[0-9a-f]", "0", real[:-4]) + "beef"  # well-formed, but no such checkpoint
    before = state_of(data_dir, "t")

    args, hint = bad_input_cases(tmp_path, fake)[case]
    proc = harness(*args, cwd=tmp_path)
    assert proc.returncode != 0
    assert "Traceback" not in proc.stdout and "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("error:") and hint in lines[0], lines[0]
    # --json: stdout is the one document, the error and nothing of a half result (issue 17)
    assert json.loads(proc.stdout) == {"error": lines[0].removeprefix("error: ")}, "no half result on stdout"
    assert state_of(data_dir, "t") == before
