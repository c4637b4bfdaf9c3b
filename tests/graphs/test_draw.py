"""Tests for the offline graph renderer in ``graphs.draw``."""

from __future__ import annotations

import io
from collections.abc import Hashable
from typing import TypedDict

import matplotlib.image as mpimg
import numpy as np
import pytest
from langgraph.graph import END, START, StateGraph

from lg_harness.graphs.draw import draw_ascii, draw_png

NODES = ["intent", "collect", "action", "reply", "self_check", "handoff"]
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


class _State(TypedDict, total=False):
    step: int


def _noop(state: _State) -> dict:
    return {}


def _build_graph():
    """A support-agent shaped graph with a self-loop (action) and a back edge (self_check -> reply)."""
    g = StateGraph(_State)
    for name in NODES:
        g.add_node(name, _noop)
    g.add_edge(START, "intent")
    # path_map dicts make every conditional target known to get_graph()
    g.add_conditional_edges("intent", lambda s: "collect", {"collect": "collect", "handoff": "handoff"})
    g.add_edge("collect", "action")
    g.add_conditional_edges("action", lambda s: "done", {"again": "action", "done": "reply"})
    g.add_edge("reply", "self_check")
    checks: dict[Hashable, str] = {"retry": "reply", "ok": END, "escalate": "handoff"}
    g.add_conditional_edges("self_check", lambda s: "ok", checks)
    g.add_edge("handoff", END)
    return g.compile().get_graph()


@pytest.fixture(scope="module")
def graph():
    return _build_graph()


@pytest.fixture(scope="module")
def png(graph) -> bytes:
    return draw_png(graph, title="support agent")


def _decode(data: bytes) -> np.ndarray:
    return mpimg.imread(io.BytesIO(data), format="png")


def test_graph_has_self_loop_and_back_edge(graph):
    edges = {(e.source, e.target): e for e in graph.edges}
    assert edges[("action", "action")].conditional
    assert edges[("self_check", "reply")].data == "retry"


def test_png_signature(png):
    assert png.startswith(PNG_SIGNATURE)


def test_png_decodes_to_a_sensible_non_flat_image(png):
    img = _decode(png)
    assert img.ndim == 3
    height, width = img.shape[:2]
    assert height > 200 and width > 200
    assert len(np.unique(img.reshape(-1, img.shape[2]), axis=0)) > 10
    assert img.std() > 0.01


def test_png_written_to_path(graph, tmp_path):
    out = tmp_path / "sub.png"
    data = draw_png(graph, out)
    assert out.read_bytes() == data
    data_str = draw_png(graph, str(tmp_path / "str.png"))
    assert (tmp_path / "str.png").read_bytes() == data_str


def test_no_file_without_path(graph, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    draw_png(graph)
    assert list(tmp_path.iterdir()) == []


def test_deterministic(graph, png):
    again = draw_png(_build_graph(), title="support agent")
    assert again == png
    np.testing.assert_array_equal(_decode(again), _decode(png))


def test_title_changes_image(graph, png):
    assert draw_png(graph) != png


def test_two_node_graph():
    g = StateGraph(_State)
    g.add_node("only", _noop)
    g.add_edge(START, "only")
    g.add_edge("only", END)
    data = draw_png(g.compile().get_graph())
    assert data.startswith(PNG_SIGNATURE)
    assert min(_decode(data).shape[:2]) > 200


def test_draw_ascii_names_every_node(graph):
    text = draw_ascii(graph)
    for name in NODES:
        assert name in text
    # grandalf cannot route the self-loop, so this graph takes the edge-list fallback
    assert "action -> action (conditional)" in text


def test_draw_ascii_uses_grandalf_when_it_can():
    g = StateGraph(_State)
    g.add_node("only", _noop)
    g.add_edge(START, "only")
    g.add_edge("only", END)
    compiled = g.compile().get_graph()
    assert draw_ascii(compiled) == compiled.draw_ascii()
