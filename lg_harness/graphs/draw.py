"""Offline rendering of LangGraph topologies as PNG or ASCII.

langchain-core's ``draw_mermaid_png`` calls a web service and ``draw_png`` needs pygraphviz, so this
module lays the graph out itself (a small Sugiyama-style layering) and draws it with matplotlib's Agg
canvas. Data units are inches, so text and box sizes do not depend on the size of the graph.
"""

from __future__ import annotations

import io
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from statistics import median
from typing import Any

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.font_manager import FontProperties
from matplotlib.patches import Ellipse, FancyArrowPatch, FancyBboxPatch
from matplotlib.path import Path as MplPath
from matplotlib.textpath import TextPath

START, END = "__start__", "__end__"
ROW_GAP, COL_GAP, BOX_H, LOOP_W, DPI = 1.0, 0.5, 0.42, 0.45, 120
NODE_FC, NODE_EC, TERM_FC, EDGE_C = "#e8f0fe", "#3b5b92", "#dfe6e9", "#4a4a4a"
MARK_FC, MARK_C = "#fdebd0", "#d35400"  # what ``marked`` picks out: a node's fill, its border and marked edges


def draw_ascii(graph: Any) -> str:
    """Render ``graph`` as text.

    Args:
        graph: A ``langchain_core.runnables.graph.Graph``.

    Returns:
        grandalf's ASCII drawing, or an edge list when it cannot draw the graph.
    """
    try:
        return graph.draw_ascii()
    except Exception:  # grandalf's edge routing raises on self-loops, and may be missing entirely
        lines = [f"{e.source} -> {e.target}{' (conditional)' if e.conditional else ''}" for e in graph.edges]
        return "\n".join(["nodes: " + ", ".join(graph.nodes), *lines])


def _text_w(text: str, size: float, weight: str = "normal") -> float:
    # TextPath measures the real glyphs, so boxes fit their labels without a renderer; it fails on "".
    if not text:
        return 0.0
    return TextPath((0, 0), text, size=size, prop=FontProperties(weight=weight)).get_extents().width / 72


def _split(graph: Any) -> tuple[list[tuple[str, str]], list[tuple[str, str]], list[str], list[str]]:
    """Split edges into forward (acyclic), back and self-loop edges by DFS from START."""
    succ: dict[str, list[str]] = {n: [] for n in graph.nodes}
    for e in graph.edges:
        succ[e.source].append(e.target)
    state: dict[str, int] = {}
    order: list[str] = []
    fwd, back, loops = [], [], []

    def visit(v: str) -> None:
        state[v] = 1
        order.append(v)
        for t in succ[v]:
            if t == v:
                loops.append(v)
            elif state.get(t) == 1:
                back.append((v, t))
            else:
                fwd.append((v, t))
                if t not in state:
                    visit(t)
        state[v] = 2

    for v in sorted(graph.nodes, key=lambda n: n != START):  # START first, then insertion order
        if v not in state:
            visit(v)
    return list(dict.fromkeys(fwd)), list(dict.fromkeys(back)), loops, order


def _layout(fwd: list, back: list, order: list[str], ext: dict) -> tuple[dict, dict]:
    """Assign rows (longest path), insert dummies for long edges, order and place each row.

    Back edges are laid out reversed, keyed ``(target, source, True)``, so a pair of opposite edges
    between the same nodes keeps two separate chains of dummies.
    """
    dag = [(s, t, False) for s, t in fwd] + [(t, s, True) for s, t in back]
    row = dict.fromkeys(order, 0)
    for _ in order:  # DFS preorder is not topological, so relax until stable (graphs are tiny)
        for s, t, _rev in dag:
            row[t] = max(row[t], row[s] + 1)
    if END in row:  # END always sits alone at the bottom so exits read top to bottom
        row[END] = max([r for v, r in row.items() if v != END], default=0) + 1
    chains: dict[tuple[str, str, bool], list[str]] = {}
    for i, (s, t, rev) in enumerate(dag):
        dummies = [f"\0{i}.{r}" for r in range(row[s] + 1, row[t])]
        for d, r in zip(dummies, range(row[s] + 1, row[t]), strict=True):
            row[d], ext[d] = r, (0.1, 0.1)
        chains[(s, t, rev)] = [s, *dummies, t]
    segs = [(a, b) for c in chains.values() for a, b in zip(c, c[1:], strict=False)]
    rows = [[v for v in row if row[v] == r] for r in range(max(row.values()) + 1)]
    x = _place(rows, segs, ext)
    _straighten(rows, [c[1:-1] for c in chains.values() if len(c) > 3], x, ext)
    # wide fan-outs get taller rows, so their curves stay steep enough to tell apart
    span = [max([abs(x[a] - x[b]) for a, b in segs if row[a] == r] or [0.0]) for r in range(len(rows))]
    y = [-sum(min(max(ROW_GAP, 0.25 * d), 2 * ROW_GAP) for d in span[:r]) for r in range(len(rows))]
    return {v: (x[v], y[row[v]]) for v in row}, chains


def _place(rows: list[list[str]], segs: list[tuple[str, str]], ext: dict) -> dict[str, float]:
    """Order rows by barycentre sweeps, then pull nodes toward their neighbours without overlap."""
    up = {v: [a for a, b in segs if b == v] for r in rows for v in r}
    down = {v: [b for a, b in segs if a == v] for r in rows for v in r}
    pos = {v: float(i) for r in rows for i, v in enumerate(r)}
    for sweep in range(8):
        nbrs = up if sweep % 2 == 0 else down
        for r in rows if sweep % 2 == 0 else rows[::-1]:
            bary = {v: sum(pos[u] for u in nbrs[v]) / len(nbrs[v]) if nbrs[v] else pos[v] for v in r}
            r.sort(key=lambda v, b=bary: (b[v], pos[v]))
            pos.update({v: float(i) for i, v in enumerate(r)})
    x = {v: 0.0 for v in pos}
    for sweep in range(9):  # odd, so the last sweep runs downward and the layout hangs from START
        nbrs = up if sweep % 2 == 0 else down
        for r in rows if sweep % 2 == 0 else rows[::-1]:
            # one-sided medians (unlike means of both sides) let chains line up exactly vertically
            want = [median([x[u] for u in nbrs[v]] or [x[v]]) for v in r]
            gaps = [ext[a][1] + ext[b][0] + COL_GAP for a, b in zip(r, r[1:], strict=False)]
            x.update(zip(r, _fit(want, gaps, [0.05 if v[0] == "\0" else 1.0 for v in r]), strict=True))
    return x


def _straighten(rows: list[list[str]], runs: list[list[str]], x: dict, ext: dict) -> None:
    """Move each long edge's dummies to one shared x where that fits, so long edges run straight."""
    where = {v: (r, i) for r in rows for i, v in enumerate(r)}

    def fits(d: str, c: float) -> bool:
        r, i = where[d]
        left = i == 0 or x[r[i - 1]] + ext[r[i - 1]][1] + ext[d][0] + COL_GAP <= c + 1e-9
        right = i == len(r) - 1 or c + ext[d][1] + ext[r[i + 1]][0] + COL_GAP <= x[r[i + 1]] + 1e-9
        return left and right

    for run in runs:
        for c in (max(x[d] for d in run), min(x[d] for d in run)):
            if all(fits(d, c) for d in run):
                x.update(dict.fromkeys(run, c))
                break


def _fit(want: list[float], gaps: list[float], weight: list[float]) -> list[float]:
    """Closest positions to ``want`` (weighted least squares) keeping neighbours ``gaps`` apart.

    Shifting by the cumulative gaps turns this into isotonic regression, solved by pooling adjacent
    violators, so a conflict moves both sides just enough instead of shoving a whole row.
    """
    offs = [sum(gaps[:i]) for i in range(len(want))]
    blocks: list[list[float]] = []  # [value, weight, count]
    for y, w in zip((a - o for a, o in zip(want, offs, strict=True)), weight, strict=True):
        blocks.append([y, w, 1])
        while len(blocks) > 1 and blocks[-2][0] > blocks[-1][0]:
            v2, w2, n2 = blocks.pop()
            v1, w1, n1 = blocks[-1]
            blocks[-1] = [(v1 * w1 + v2 * w2) / (w1 + w2), w1 + w2, n1 + n2]
    ys = [v for v, _, n in blocks for _ in range(int(n))]
    return [y + o for y, o in zip(ys, offs, strict=True)]


def _curve(pts: Sequence[tuple[float, float]], tans: Sequence[tuple[float, float]]) -> MplPath:
    """Cubic Bezier through ``pts`` leaving/entering each point along its tangent."""
    verts, codes = [pts[0]], [MplPath.MOVETO]
    for i, (p, q) in enumerate(zip(pts, pts[1:], strict=False)):
        tp, tq = tans[i], tans[i + 1]
        k = max(abs(q[1] - p[1]) / 2, 0.45)
        verts += [(p[0] + tp[0] * k, p[1] + tp[1] * k), (q[0] - tq[0] * k, q[1] - tq[1] * k), q]
        codes += [MplPath.CURVE4] * 3
    return MplPath(verts, codes)


def _edge(ax: Any, path: MplPath, dashed: bool, label: str | None, marked: bool = False) -> None:
    """Draw one edge with a solid head even when the line is dashed (``marked``: in the accent colour)."""
    color, lw = (MARK_C, 2.2) if marked else (EDGE_C, 1.2)
    ax.add_patch(FancyArrowPatch(path=path, arrowstyle="-", color=color, lw=lw, ls="--" if dashed else "-"))
    vertices = np.asarray(path.vertices, dtype=float)  # an ndarray; matplotlib's stubs say only "ArrayLike"
    (cx, cy), (ex, ey) = vertices[-2], vertices[-1]
    n = max(((ex - cx) ** 2 + (ey - cy) ** 2) ** 0.5, 1e-9)
    tail = (ex - (ex - cx) / n * 0.12, ey - (ey - cy) / n * 0.12)
    head = "-|>,head_length=7,head_width=3.5"
    ax.add_patch(FancyArrowPatch(tail, (ex, ey), arrowstyle=head, color=color, lw=lw, shrinkA=0, shrinkB=0))
    if label:
        segs = (len(vertices) - 1) // 3
        v = vertices[3 * (segs // 2) :]  # the middle joint, or the midpoint of the middle segment
        mx, my = v[0] if segs % 2 == 0 else (v[0] + 3 * v[1] + 3 * v[2] + v[3]) / 8
        box = {"boxstyle": "round,pad=0.15", "fc": "white", "ec": "none"}  # keeps labels legible over lines
        ax.text(mx, my, label, fontsize=8, ha="center", va="center", color="#333333", zorder=4, bbox=box)


def _node(ax: Any, xy: tuple[float, float], size: tuple[float, float], name: str, note: str | None = None,
          marked: bool = False) -> None:
    """Draw START/END as small ovals and everything else as a labelled rounded box (``note``: a second, small
    line under the name; ``marked``: in the accent colours)."""
    (x, y), (w, h) = xy, size
    if name in (START, END):
        ax.add_patch(Ellipse(xy, w, h, fc=TERM_FC, ec="#555555", lw=1.2, zorder=3))
        label, font = ("START" if name == START else "END"), {"fontsize": 8, "weight": "bold"}
    else:
        fc, ec, lw = (MARK_FC, MARK_C, 2.2) if marked else (NODE_FC, NODE_EC, 1.4)
        style = {"boxstyle": "round,pad=0,rounding_size=0.1", "fc": fc, "ec": ec, "lw": lw}
        ax.add_patch(FancyBboxPatch((x - w / 2, y - h / 2), w, h, zorder=3, **style))
        label, font = name, {"fontsize": 10}
    if note:
        ax.text(x, y + 0.075, label, ha="center", va="center", zorder=5, **font)
        ax.text(x, y - 0.1, note, ha="center", va="center", zorder=5, fontsize=7, color="#444444")
        return
    ax.text(x, y, label, ha="center", va="center", zorder=5, **font)


def _ports(chains: dict, xy: dict) -> dict[tuple[str, str, int], float]:
    """Spread the edges leaving (-1) or entering (+1) a node across its side, ordered by direction."""
    ends: dict[tuple[str, int], list] = {}
    for (s, t, _), c in chains.items():
        ends.setdefault((s, -1), []).append((xy[c[1]][0], (s, t)))
        ends.setdefault((t, 1), []).append((xy[c[-2]][0], (s, t)))
    off = {}
    for (_, side), items in ends.items():
        step = min(0.2, 0.5 / max(len(items) - 1, 1))
        for i, (_x, st) in enumerate(sorted(items)):
            off[(*st, side)] = (i - (len(items) - 1) / 2) * step
    return off


def draw_png(graph: Any, path: str | Path | None = None, title: str | None = None, *,
             notes: Mapping[str, str] | None = None, marked: Collection[Any] = ()) -> bytes:
    """Render ``graph`` top to bottom as a PNG without network access or graphviz.

    Conditional edges are dashed, edge data become labels, back edges arc round the side of their nodes
    and self-loops loop on a side no back edge uses.

    Args:
        graph: A ``langchain_core.runnables.graph.Graph`` (``compiled.get_graph()``).
        path: Where to write the PNG as well, if given.
        title: Optional caption drawn above the graph.
        notes: A short second line per node, under its name (which variant runs there, say).
        marked: Node names and ``(source, target)`` edges drawn in an accent colour (what differs from
            another graph, say).

    Returns:
        The PNG bytes.
    """
    notes = notes or {}
    meta: dict[tuple[str, str], tuple[list[str], bool]] = {}
    for e in graph.edges:  # parallel edges share one curve, so merge their labels
        labels, cond = meta.get((e.source, e.target), ([], False))
        extra = [] if e.data is None else [str(e.data)]
        meta[(e.source, e.target)] = (labels + extra, cond or e.conditional)
    fwd, back, loops, order = _split(graph)
    size = {n: (max(_text_w(graph.nodes[n].name, 10), _text_w(notes.get(n, ""), 7)) + 0.4, BOX_H)
            for n in graph.nodes}
    size.update({n: (0.8, 0.32) for n in (START, END) if n in size})
    # reserve room beside nodes for their self-loops and back-edge arcs
    arcs = {n for e in back for n in e}
    ext = {n: (w / 2 + LOOP_W * (n in loops), w / 2 + LOOP_W * (n in arcs)) for n, (w, _) in size.items()}
    xy, chains = _layout(fwd, back, order, ext)
    fig = Figure(dpi=DPI)
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_axis_off()
    for n in graph.nodes:
        _node(ax, xy[n], size[n], n if n in (START, END) else graph.nodes[n].name, notes.get(n), n in marked)
    ports = _ports({k: c for k, c in chains.items() if not k[2]}, xy)
    xs = [x + d for n, (x, _) in xy.items() if n in size for d in (-ext[n][0] - 0.3, ext[n][1] + 0.3)]
    busy: set[tuple[str, int]] = set()
    for s, t in sorted(meta, key=lambda e: e[0] == e[1]):  # self-loops last, so they can dodge back edges
        route = _route(s, t, (s, t) in back, chains, xy, size, ports, busy)
        _edge(ax, route, meta[(s, t)][1], ", ".join(meta[(s, t)][0]) or None, (s, t) in marked)
        route_x = np.asarray(route.vertices, dtype=float)[:, 0]
        xs += [float(route_x.min()) - 0.4, float(route_x.max()) + 0.4]  # room for bulges and labels
    ys = [y for x, y in xy.values()]
    top, bottom = max(ys) + 0.45 + 0.45 * bool(title), min(ys) - 0.45
    # widen symmetrically (never stretch) so a long title or a tiny graph still fits at 1 unit = 1 inch
    need = max(2.0, _text_w(title or "", 12, "bold") + 0.4)
    pad = max(0.0, need - (max(xs) - min(xs))) / 2
    left, right = min(xs) - pad, max(xs) + pad
    ax.set(xlim=(left, right), ylim=(bottom, top))
    fig.set_size_inches(right - left, top - bottom)
    if title:
        ax.text((left + right) / 2, top - 0.3, title, fontsize=12, weight="bold", ha="center", va="center")
    buf = io.BytesIO()
    FigureCanvasAgg(fig).print_png(buf, metadata={"Software": None})
    data = buf.getvalue()
    if path is not None:
        Path(path).write_bytes(data)
    return data


def _route(s: str, t: str, back: bool, chains: dict, xy: dict, size: dict, ports: dict, busy: set) -> MplPath:
    """Path for one edge: a side loop, a side arc for back edges, else down through its dummies.

    ``busy`` collects the (node, side) pairs back edges use, so a self-loop takes the other side.
    """
    (sx, sy), (sw, sh) = xy[s], size[s]
    if s == t:
        k = 1 if (s, -1) in busy and (s, 1) not in busy else -1
        x0 = sx + k * sw / 2
        loop = [(x0, sy + 0.1), (x0 + k * 0.55, sy + 0.45), (x0 + k * 0.55, sy - 0.45), (x0, sy - 0.1)]
        return MplPath(loop, [MplPath.MOVETO] + [MplPath.CURVE4] * 3)
    (tx, ty), (tw, th) = xy[t], size[t]
    if back:  # its chain runs target -> source in the layout
        mid = [xy[d] for d in chains[(t, s, True)][-2:0:-1]]
        # leave and enter on whichever side the long edge's dummies went, else on the right
        a, b = (1 if not mid or mid[0][0] >= sx else -1), (1 if not mid or mid[-1][0] >= tx else -1)
        pts = [(sx + a * sw / 2, sy), *mid, (tx + b * tw / 2, ty)]
        busy.update({(s, a), (t, b)})
        return _curve(pts, [(a, 0)] + [(0, 1)] * len(mid) + [(-b, 0)])
    mid = [xy[d] for d in chains[(s, t, False)][1:-1]]
    pts = [(sx + ports[(s, t, -1)], sy - sh / 2), *mid, (tx + ports[(s, t, 1)], ty + th / 2)]
    return _curve(pts, [(0, -1)] * len(pts))
