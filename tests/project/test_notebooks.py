"""The notebooks run top to bottom on the offline defaults and show what their text says.

Each notebook is executed with nbclient (kernel ``python3``, working directory the repository root) and its
outputs are checked against the shop database and the design presets, not only for having run. The files
themselves must be what ``notebooks/_build.py --execute`` generates: sources in one place, committed executed.
"""

from __future__ import annotations

import ast
import base64
import copy
import importlib.util
import re
import tempfile
import time
from pathlib import Path
from types import ModuleType

import nbformat
import pytest
from nbclient import NotebookClient

pytestmark = [pytest.mark.docs, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "notebooks"
CELL_TIMEOUT_S = 120
CJK = re.compile(r"[\u4e00-\u9fff]")
IMAGES = {"02_topology": 6, "04_ab_designs": 4}  # the graphs of the six presets; four plots of the comparison


def _builder() -> ModuleType:
    spec = importlib.util.spec_from_file_location("notebooks_build", NOTEBOOKS / "_build.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def execute(name: str) -> nbformat.NotebookNode:
    """Run the committed notebook again, and fail if its committed figures are not the fresh run's."""
    committed = nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)
    nb = nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)
    client = NotebookClient(nb, timeout=CELL_TIMEOUT_S, kernel_name="python3",
                            resources={"metadata": {"path": str(ROOT)}})
    started = time.perf_counter()
    client.execute()
    print(f"{name}: executed in {time.perf_counter() - started:.1f} s")
    # every notebook works in a TemporaryDirectory named after it and removes it at the end
    assert not list(Path(tempfile.gettempdir()).glob(f"harness-nb{name[:2]}-*")), "temporary data dir left behind"
    assert_same_figures(name, committed, _builder().keep_small(copy.deepcopy(nb)))  # as it would be committed
    return nb


# What may differ between two runs of the same code: ids drawn at random, dates and the temporary folders.
VOLATILE = [
    re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"),  # checkpoint and trace ids
    re.compile(r"^Date: .*$", re.M),  # when report.md was rendered
    re.compile(r"harness-nb\d\d-\w+"),  # the notebook's temporary data dir
]
FIGURE = re.compile(r"\d+(?:[.,]\d+)*")


def figures(nb: nbformat.NotebookNode) -> list[list[str]]:
    """The numbers each code cell shows (printed, or in a displayed table or text), volatile parts masked."""
    shown = []
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        texts = []
        for out in cell.get("outputs", []):
            if out.get("name") == "stderr":  # no figures there: the committed notebooks show none (checked apart)
                continue
            data = out.get("data") or {}
            texts.append(out.get("text") or next((data[m] for m in ("text/markdown", "text/html", "text/plain")
                                                  if m in data), ""))
        text = "\n".join(texts)
        for pattern in VOLATILE:
            text = pattern.sub("", text)
        shown.append(FIGURE.findall(text))
    return shown


def _stale(name: str, cell: int, old: list[str], new: list[str]) -> str:
    at = next((k for k, (a, b) in enumerate(zip(old, new, strict=False)) if a != b), min(len(old), len(new)))
    return (f"{name}, code cell {cell}: the committed output shows {old[at:at + 6]} where this code gives "
            f"{new[at:at + 6]} ({len(old)} and {len(new)} figures); run python notebooks/_build.py --execute")


def assert_same_figures(name: str, committed: nbformat.NotebookNode, fresh: nbformat.NotebookNode) -> None:
    for cell, (old, new) in enumerate(zip(figures(committed), figures(fresh), strict=True), start=1):
        assert old == new, _stale(name, cell, old, new)


def outputs(nb: nbformat.NotebookNode) -> list[dict]:
    return [o for cell in nb.cells if cell.cell_type == "code" for o in cell.get("outputs", [])]


def stdout(nb: nbformat.NotebookNode) -> str:
    return "".join(o["text"] for o in outputs(nb) if o["output_type"] == "stream" and o["name"] == "stdout")


def rich(nb: nbformat.NotebookNode, mime: str) -> list[str]:
    """Every displayed value of one MIME type, in order."""
    return [o["data"][mime] for o in outputs(nb)
            if o["output_type"] in ("display_data", "execute_result") and mime in o.get("data", {})]


def bot_lines(text: str) -> list[str]:
    return [line.removeprefix("bot:").strip() for line in text.splitlines() if line.startswith("bot:")]


def tables(nb: nbformat.NotebookNode) -> list[str]:
    """Tables shown as markdown or HTML (a pandas DataFrame)."""
    return [t for t in rich(nb, "text/markdown") + rich(nb, "text/html") if "|---" in t or "<table" in t]


def user_orders(status: str) -> list[str]:
    """U001's order ids with ``status`` in the seeded shop every fresh data dir gets."""
    from lg_harness.domains.shop.backend import ShopDB

    with ShopDB.open() as db:
        return [r["id"] for r in db.query(
            "SELECT id FROM orders WHERE user_id = 'U001' AND status = ? ORDER BY id", (status,))]


def test_notebooks_are_built_from_their_sources_and_committed_executed():
    build = _builder()
    assert sorted(p.stem for p in NOTEBOOKS.glob("*.ipynb")) == sorted(build.NOTEBOOKS)
    for name in build.NOTEBOOKS:
        path = NOTEBOOKS / f"{name}.ipynb"
        nb = nbformat.read(path, as_version=4)
        assert build.sources(nb) == build.sources(build.build(name)), \
            f"{path.name} is stale: run notebooks/_build.py --execute"
        assert 5 <= len(nb.cells) <= 12
        code = [c for c in nb.cells if c.cell_type == "code"]
        # Executed, in order, with what they showed kept: real images, no stray log lines, no timings.
        assert [c.execution_count for c in code] == list(range(1, len(code) + 1)), f"{path.name} is not executed"
        assert any(c.outputs for c in code), f"{path.name} has no outputs"
        assert path.stat().st_size < 400_000, f"{path.name} is too large to commit"
        shown = [o for c in code for o in c.outputs]
        assert not [o for o in shown if o.get("name") == "stderr"], f"{path.name} shows log lines or warnings"
        assert build.IMAGE_REPR not in nbformat.writes(nb), f"{path.name} has an image committed as its text"
        images = [o["data"]["image/png"] for o in shown if "image/png" in (o.get("data") or {})]
        assert len(images) >= IMAGES.get(name, 0), f"{path.name} shows {len(images)} images"
        assert all(base64.b64decode(i)[:8] == b"\x89PNG\r\n\x1a\n" for i in images)


@pytest.mark.slow
def test_01_run_a_graph_shows_real_order_status_tool_calls_and_state():
    nb = execute("01_run_a_graph")
    text = stdout(nb)
    order_id = user_orders("delivered")[0]
    replies = bot_lines(text)
    assert any(order_id in r and "delivered" in r for r in replies), replies
    assert f'request_return({{"order_id": "{order_id}"' in text and "RMA-" in text
    chinese = [r for r in replies if CJK.search(r)]
    # listed in Chinese: a product id with its Chinese name (a sentence, no longer a bullet of every field)
    assert chinese and re.search(r"P\d{4}（[^）\n]*蓝牙耳机", text), replies
    recall = next(r for r in replies if "start" in r.lower())
    assert order_id in recall, replies
    assert re.search(r"model_calls=\d+ input_tokens=[1-9]\d* output_tokens=[1-9]", text)
    for key in ("phase", "intent", "slots", "fact_card", "context_account"):
        assert re.search(rf"^{key} +\S", text, re.M), key
    assert re.search(rf'^fact_card .*"first_order_id": "{order_id}"', text, re.M)


@pytest.mark.slow
def test_02_topology_draws_every_preset_and_its_differences():
    from lg_harness.core.design import PRESETS
    from lg_harness.core.routing.route import NODES

    nb = execute("02_topology")
    assert len(rich(nb, "image/png")) == len(PRESETS) == 6
    blocks = dict(re.findall(r"^design (\S+): mermaid\n(.*?)(?=^design \S+: mermaid|\Z)", stdout(nb), re.M | re.S))
    assert list(blocks) == list(PRESETS)
    for name, design in PRESETS.items():
        expected = {"__start__", "__end__", *NODES, "execute"}  # action decides, execute runs
        expected |= {"human"} if design.knobs.wait_for_human else set()
        expected |= {"remember"} if design.knobs.long_term_memory else set()
        drawn = set(re.findall(r"^\t(\w+)[(\[]", blocks[name], re.M))
        assert drawn == expected, name
        assert "graph TD;" in blocks[name]
    # What differs, side by side: a column per design, a row per node (the variant that runs there), edge and
    # knob; designs without long-term memory have no remember node.
    shown = {t.split("|")[1].strip(): t for t in tables(nb)}
    assert {"node", "edge", "knob"} <= set(shown)
    for table in shown.values():
        assert table.splitlines()[0] == "| " + " | ".join([table.split("|")[1].strip(), *PRESETS]) + " |"
    remember = next(r for r in shown["node"].splitlines() if r.startswith("| remember |"))
    assert [c.strip().strip("*") for c in remember.split("|")[2:-1]] == [
        "✓" if d.knobs.long_term_memory else "—" for d in PRESETS.values()]
    assert "| intent | **llm** |" in shown["node"] and "| confirm_changes |" in shown["knob"]
    # The pictures mark in orange what differs from harness: naive's has marks, harness's none.
    marks = [_accent_pixels(png) for png in rich(nb, "image/png")]
    assert marks[list(PRESETS).index("naive")] > 100 and marks[list(PRESETS).index("harness")] == 0, marks


def _accent_pixels(png: str) -> int:
    """Pixels of ``graphs.draw.MARK_C`` (what a picture marks) in a base64 PNG."""
    import io

    import numpy as np
    from PIL import Image

    from lg_harness.graphs.draw import MARK_C

    pixels = np.asarray(Image.open(io.BytesIO(base64.b64decode(png))).convert("RGB")).reshape(-1, 3)
    accent = np.array([int(MARK_C[i:i + 2], 16) for i in (1, 3, 5)])
    return int((np.abs(pixels.astype(int) - accent).sum(axis=1) < 30).sum())


@pytest.mark.slow
def test_03_resume_continues_from_the_fork():
    nb = execute("03_resume")
    text = stdout(nb)
    first, second = user_orders("pending")[:2]
    for turn in (1, 2):  # the history listed after reopening holds the end of both messages
        assert re.search(rf"^ *\d+ +{turn} +done +\(end\) +[0-9a-f-]{{36}}$", text, re.M), turn
    assert f"current order: {second}" in text and f"current order after the fork: {first}" in text
    assert f"cancel_order({{'order_id': '{first}'" in text
    assert any(first in r and "cancelled" in r for r in bot_lines(text))
    line = next(x for x in text.splitlines() if x.startswith("thread after the fork, user messages:"))
    users = ast.literal_eval(line.split(":", 1)[1].strip())
    # the working set after the fork: this task's messages, and nothing of the second message forked away
    assert users[-2:] == ["Please cancel it", "yes"] and not any(second in u for u in users), users
    assert f"'{first}': 'cancelled', '{second}': 'pending'" in text


@pytest.mark.slow
def test_04_ab_designs_shows_metrics_table_and_plots():
    nb = execute("04_ab_designs")
    text = stdout(nb)
    assert "8 of " in text and "24 cells" in text and "crashed: none" in text
    main = tables(nb)[0]
    # a markdown table, or a DataFrame's HTML where pandas is installed
    assert all(re.search(rf"\|\s*{d}\s*\||<th>{d}</th>", main) for d in ("naive", "state-machine", "harness")), main
    assert "Task completion" in main and "Input tokens per message" in main
    assert len(rich(nb, "image/png")) >= 1
    assert any("## Figures from the write-ups" in m for m in rich(nb, "text/markdown"))


@pytest.mark.slow
def test_05_custom_node_and_tool_are_used_and_compared():
    nb = execute("05_custom_node")
    text = stdout(nb)
    shipped = user_orders("shipped")[0]
    assert f"tool track_order_status({{'order_id': '{shipped}'}}) -> ok" in text
    replies = bot_lines(text)
    assert any(re.search(r"estimated delivery(?::| is) \d{4}-\d\d-\d\d", r, re.I) for r in replies), replies
    assert "Did that help? (yes/no)" in text and "这个回答对您有帮助吗？" in text
    table = next(t for t in tables(nb) if "reply variant" in t)
    survey = re.search(r"^\| harness-survey \| survey \|.*\| (\d+) of (\d+) \|$", table, re.M)
    plain = re.search(r"^\| harness \| \w+ \|.*\| 0 of (\d+) \|$", table, re.M)
    assert survey and plain, table
    assert 0 < int(survey.group(1)) <= int(survey.group(2))



@pytest.mark.slow
def test_06_bring_your_own_domain_runs_a_page_of_code_and_the_helpdesk():
    nb = execute("06_bring_your_own_domain")
    text = stdout(nb)
    assert "{'get_book': {'book_id': 'book'}, 'renew_loan': {'book_id': 'book'}}" in text
    assert "tool get_book({'book_id': 'BOOK-0042'}) -> ok" in text and "Dune" in text
    assert "tool get_book({'book_id': 'BOOK-0007'}) -> ok" in text  # "book-0007" read in canonical form
    assert "tool renew_loan({'book_id': 'BOOK-0042'}) -> ok" in text  # "the first one" is the first book
    assert "renewals: {'BOOK-0042': 1}" in text
    assert "['helpdesk', 'shop']" in text
    assert re.search(r"tool get_ticket\(\{'ticket_id': 'INC\d{7}'\}\) -> ok", text)
