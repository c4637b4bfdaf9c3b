"""The desk's pages as HTML strings, from the dicts ``service.desk.ops`` returns.

Every value goes through ``esc`` (``html.escape`` with quotes): what a customer wrote, masks such as
``[email]`` and anything a tool returned arrive in the browser as text, never as markup. The pages work
without JavaScript for reading; ``assets/desk.js`` adds the live transcript and the buttons.
"""

from __future__ import annotations

import html
import time
from collections.abc import Iterable
from typing import Any
from urllib.parse import quote

from lg_harness.memory.transcript import author_label

NAV = (("/", "Threads"), ("/desk/handoffs", "Handoffs"), ("/desk/graph", "Graph"), ("/desk/stats", "Figures"),
       ("/docs", "API"))


def esc(value: Any) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def thread_url(thread_id: str, tail: str = "") -> str:
    return f"/desk/threads/{quote(thread_id, safe='')}{tail}"


def when(epoch: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(epoch)) if epoch else "-"


def page(title: str, body: str, *, agent: str | None = None, csrf: str = "", active: str = "") -> str:
    """The frame of every page: navigation, who is signed in, the body."""
    links = "".join(f'<a href="{href}"{" class=on" if href == active else ""}>{name}</a>' for href, name in NAV)
    who = (f'<span class="who">{esc(agent)}</span><form method="post" action="/desk/logout">'
           f'<button>Sign out</button></form>') if agent else ""
    return (f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{esc(title)} · lg-harness desk'
            f'</title><meta name="viewport" content="width=device-width, initial-scale=1">'
            f'<meta name="csrf" content="{esc(csrf)}"><link rel="stylesheet" href="/desk/assets/desk.css">'
            f'<script src="/desk/assets/desk.js" defer></script></head><body>'
            f'<header><strong>lg-harness desk</strong><nav>{links if agent else ""}</nav>{who}</header>'
            f'<main><p id="notice" role="status" hidden></p>{body}</main></body></html>')


def table(head: Iterable[str], rows: Iterable[Iterable[str]], cls: str = "") -> str:
    """A table of already escaped cells."""
    th = "".join(f"<th>{h}</th>" for h in head)
    tr = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return f'<table class="{cls}"><thead><tr>{th}</tr></thead><tbody>{tr}</tbody></table>'


def badge(status: str | None, taken_by: str | None = None) -> str:
    """Who has the thread: the bot, or a human (waiting, held) and who took it; ``desk.js`` keeps it current."""
    if not status:
        return '<span class="badge bot" data-handoff-badge>bot</span>'
    who = f" · {esc(taken_by)}" if taken_by else ""
    return f'<span class="badge {esc(status)}" data-handoff-badge>{esc(status)}{who}</span>'


def login_page(error: str = "") -> str:
    problem = f'<p class="error">{esc(error)}</p>' if error else ""
    body = (f'<h1>Sign in to the desk</h1>{problem}<form method="post" action="/desk/login" class="login">'
            '<label>Desk key <input type="password" name="key" autocomplete="current-password" autofocus>'
            '</label><button>Sign in</button></form><p class="dim">The desk takes a key of '
            '<code>HARNESS_DESK_KEYS</code> (each names one agent) or a proxy-set header from '
            '<code>HARNESS_TRUSTED_PROXIES</code>. Customers use the API.</p>')
    return page("Sign in", body)


def refused_page(message: str) -> str:
    return page("Not for this key", f'<h1>Not for this key</h1><p class="error">{esc(message)}</p>'
                '<form method="post" action="/desk/logout"><button>Sign in with another key</button></form>')


# -------------------------------------------------------------------------------------------- threads


def threads_page(rows: list[dict[str, Any]], search: str, **frame: Any) -> str:
    form = (f'<form class="search" method="get" action="/"><input name="q" value="{esc(search)}" '
            'placeholder="thread or user" aria-label="search threads"><button>Search</button></form>')
    body = table(("thread", "owner", "domain", "design", "phase", "turn", "handoff", "last activity"),
                 ([f'<a href="{thread_url(r["thread_id"])}">{esc(r["thread_id"])}</a>', esc(r["owner"] or "-"),
                   esc(r["domain"] or "-"), design_name(r["design"]), esc(r["phase"] or "-"), str(r["turn"]),
                   badge(r["handoff"], r["taken_by"]), when(r["last_at"])] for r in rows), "threads")
    empty = "" if rows else '<p class="dim">No threads yet' + (" match." if search else ".") + "</p>"
    return page("Threads", f"<h1>Threads</h1>{form}{body}{empty}", active="/", **frame)


def transcript_items(rows: list[dict[str, Any]]) -> str:
    """Each row with who wrote it (the customer, the bot, or a human by name) and the customer message it
    belongs to; ``desk.js`` builds the same for rows that arrive live."""
    return "".join(f'<li class="msg {esc(r["role"])} by-{esc(r.get("author") or "unknown")}" '
                   f'data-seq="{int(r["seq"])}"><span class="role">{esc(author_label(r))} · turn {int(r["turn"])}'
                   f'</span><div class="text">{esc(r["content"])}</div></li>' for r in rows)


def handoff_box(view: dict[str, Any]) -> str:
    """Take, answer and release, for a thread waiting for or held by a human. It is on every thread page,
    hidden while the bot has the thread: ``desk.js`` shows and hides it as the thread's status changes
    (a handoff, a release from another page or the CLI), with no reload."""
    tid = esc(view["thread_id"])
    return (f'<section class="handoff" id="handoff-box"{"" if view["handoff"] else " hidden"}>'
            f'<h2>Handoff {badge(view["handoff"], view["taken_by"])}</h2>'
            f'<button data-action="take" data-thread="{tid}">Take</button>'
            f'<form class="answer" data-thread="{tid}"><textarea name="text" rows="3" '
            'placeholder="your answer to the customer" aria-label="answer"></textarea>'
            '<button>Send answer</button></form>'
            f'<button data-action="release" data-thread="{tid}">Release to the bot</button></section>')


def checkpoints_table(view: dict[str, Any]) -> str:
    tid = esc(view["thread_id"])
    rows = ([esc(c["step"]), esc(c["turn"]), esc(c["phase"]), esc(", ".join(c["next"]) or "-"),
             f'<span class="text">{esc(c["message"])}</span>', esc(c["created_at"][:19].replace("T", " ")),
             f'<button data-action="fork" data-thread="{tid}" data-checkpoint="{esc(c["checkpoint_id"])}">'
             'Fork from here</button>'] for c in view["checkpoints"])
    return table(("step", "turn", "phase", "next", "message", "saved", ""), rows, "checkpoints")


def design_name(design: str | None) -> str:
    """A preset's name, or a design file's name (its path on hover)."""
    if not design or "/" not in design:
        return esc(design or "-")
    return f'<span title="{esc(design)}">{esc(design.rsplit("/", 1)[-1])}</span>'


def thread_page(view: dict[str, Any], **frame: Any) -> str:
    tid = view["thread_id"]
    facts = (f'<dl class="facts"><dt>owner</dt><dd>{esc(view["owner"] or "-")}</dd><dt>domain</dt>'
             f'<dd>{esc(view["domain"])}</dd><dt>design</dt><dd>{design_name(view["design"])}</dd><dt>model</dt>'
             f'<dd>{esc(view["model"] or "-")}</dd><dt>phase</dt><dd id="phase">{esc(view["phase"] or "-")}</dd>'
             f'<dt>turn</dt><dd id="turn">{view["turn"]}</dd><dt>handoff</dt><dd id="handoff">'
             f'{badge(view["handoff"], view["taken_by"])}</dd></dl>')
    traces = " ".join(f'<a href="{thread_url(tid, f"/trace?turn={turn}")}">message {turn}</a>'
                      for turn in sorted(view["traces"])) or '<span class="dim">none recorded</span>'
    actions = table(("when", "agent", "action"), ([esc(a["ts"][:19].replace("T", " ")), esc(a["agent"]),
                                                   esc(a["action"])] for a in view["desk_actions"]), "log")
    last = max((int(r["seq"]) for r in view["transcript"]), default=0)
    body = (f'<h1>Thread <span class="text">{esc(tid)}</span></h1>{facts}{handoff_box(view)}'
            f'<h2>Transcript <span class="live" id="live">live</span></h2>'
            f'<ol id="transcript" data-thread="{esc(tid)}" data-after="{last}">'
            f'{transcript_items(view["transcript"])}</ol>'
            f'<h2>Traces</h2><p class="traces">{traces}</p>'
            f'<h2>Checkpoints</h2>{checkpoints_table(view)}'
            f'<h2>Desk log</h2>{actions if view["desk_actions"] else "<p class=dim>nothing yet</p>"}')
    return page(f"Thread {tid}", body, **frame)


# ------------------------------------------------------------------------------------------- trace


def span_rows(span: dict[str, Any], children: dict[Any, list[dict[str, Any]]], origin: int, total: float,
              depth: int = 0) -> list[list[str]]:
    """A span and its descendants as table rows: name (indented by depth) with its key attributes and error,
    duration, the tool's outcome, and a bar placed on the message's timeline."""
    from lg_harness.obs.render import span_details

    attrs = span.get("attributes") or {}
    failed = (span.get("status") or {}).get("code") == "ERROR"
    start = (int(span.get("start_ns") or 0) - origin) / 1e6
    ms = float(span.get("duration_ms") or 0)
    left = min(100 * start / total, 99.5)
    width = min(max(100 * ms / total, 0.5), 100 - left)
    outcome = ""
    if "harness.tool.status" in attrs:
        status, kind = str(attrs["harness.tool.status"]), attrs.get("harness.tool.error_type")
        outcome = f'<span class="outcome {esc(status)}">{esc(status)}{" · " + esc(kind) if kind else ""}</span>'
    error = (f'<div class="error">✗ {esc(attrs.get("error.type") or "error")}: '
             f'{esc(attrs.get("exception.message") or "")}</div>') if failed else ""
    name = (f'<div class="name{" failed" if failed else ""}" style="padding-left:{depth * 1.1:.1f}rem">'
            f'{esc(span.get("name"))}<div class="attrs">{esc("  ".join(span_details(attrs)))}</div>{error}</div>')
    bar = f'<span class="bar"><i style="margin-left:{left:.2f}%;width:{width:.2f}%"></i></span>'
    rows = [[name, f'<span class="ms">{ms:.1f} ms</span>', outcome, bar]]
    for child in children.get(span.get("span_id"), []):
        rows += span_rows(child, children, origin, total, depth + 1)
    return rows


def trace_page(found: dict[str, Any], **frame: Any) -> str:
    from lg_harness.obs.render import span_forest

    tid, spans = found["thread_id"], found["spans"]
    turns = " ".join(f'<a href="{thread_url(tid, f"/trace?turn={t}")}"{" class=on" if t == found["turn"] else ""}>'
                     f'message {t}</a>' for t in found["turns"])
    head = (f'<h1>Trace of message {esc(found["turn"])} on <a href="{thread_url(tid)}">{esc(tid)}</a></h1>'
            f'<p class="traces">{turns}</p><p class="dim">trace {esc(found["trace_id"] or "-")}</p>')
    if not spans:
        return page("Trace", head + '<p class="dim">No spans recorded for this message: traces go to the data dir '
                    'of the worker that served it (HARNESS_TRACE=file, the default of harness serve).</p>', **frame)
    roots, children = span_forest(spans)
    origin = min(int(s.get("start_ns") or 0) for s in spans)
    total = max((int(s.get("end_ns") or 0) - origin) / 1e6 for s in spans) or 1.0
    rows = [row for root in roots for row in span_rows(root, children, origin, total)]
    return page("Trace", head + table(("span", "duration", "tool outcome", "timeline"), rows, "spans")
                + tool_calls_table(found["tool_calls"]), **frame)


def dump(value: Any) -> str:
    import json

    return esc(json.dumps(value, ensure_ascii=False))


def tool_calls_table(calls: list[dict[str, Any]]) -> str:
    """The message's tool calls from the audit log: arguments and results masked, the outcome as the harness
    counts it (``held`` and ``blocked`` are its own stops, not tool failures)."""
    if not calls:
        return ""
    rows = ([esc(c["name"]), f'<code class="text">{dump(c["input"])}</code>',
             f'<span class="outcome {esc(c["status"])}">{esc(c["status"])}</span>', esc(c["error_type"] or ""),
             f'{float(c["duration_ms"] or 0):.1f} ms', f'<code class="text">{dump(c["output"])}</code>']
            for c in calls)
    return "<h2>Tool calls</h2>" + table(("tool", "arguments (masked)", "outcome", "class", "time", "result"), rows,
                                         "calls")


# ---------------------------------------------------------------------------------------- handoffs


def queue_rows(rows: list[dict[str, Any]]) -> list[list[str]]:
    out = []
    for r in rows:
        tid, ho = r["thread_id"], r.get("handoff") or {}
        out.append([f'<a href="{thread_url(tid)}">{esc(tid)}</a>', esc((r.get("user") or {}).get("id", "-")),
                    esc(ho.get("ticket", "-")), esc(ho.get("reason", "-")),
                    f'<span class="text">{esc(r.get("last_message"))}</span>',
                    badge(r["status"], r.get("taken_by")),
                    f'<button data-action="take" data-thread="{esc(tid)}">Take</button> '
                    f'<a class="button" href="{thread_url(tid)}">Answer</a> '
                    + (f'<button data-action="release" data-thread="{esc(tid)}">Release</button>'
                       if r["status"] == "held" else "")])
    return out


def handoffs_page(q: dict[str, list[dict[str, Any]]], **frame: Any) -> str:
    head = ("thread", "user", "ticket", "reason", "last message (masked)", "status", "")
    waiting = table(head, queue_rows(q["waiting"]), "queue waiting") if q["waiting"] else \
        '<p class="dim">Nobody is waiting for a human.</p>'
    held = table(head, queue_rows(q["held"]), "queue held") if q["held"] else \
        '<p class="dim">No thread is held by a human.</p>'
    return page("Handoffs", f"<h1>Handoffs</h1><h2>Waiting for a human</h2>{waiting}<h2>Held by a human</h2>{held}",
                active="/desk/handoffs", **frame)


# ----------------------------------------------------------------------------------- graph, figures


def graph_page(design: str, mermaid: str, **frame: Any) -> str:
    body = (f'<h1>Design <span class="text">{esc(design)}</span></h1>'
            '<img class="graph" src="/desk/graph.png" alt="the design\'s graph">'
            f'<details><summary>Mermaid</summary><pre>{esc(mermaid)}</pre></details>')
    return page("Graph", body, active="/desk/graph", **frame)


def figures_page(view: dict[str, Any], **frame: Any) -> str:
    from lg_harness.obs.render import fmt_stat as _stat

    stats = table(("metric", "value", "threshold", "flag"),
                  ([esc(r["metric"]), esc(_stat(r["value"], r["unit"])), esc(f'{r["rule"]} {_stat(r["threshold"], r["unit"])}'),
                    "⚠" if r["flagged"] else ""] for r in view["stats"]), "stats")
    stops = view["harness_stops"]
    by_class = ", ".join(f"{esc(k)} {n}" for k, n in stops["by_class"].items()) or "-"
    q = view["queue"]
    uncertain = table(("thread", "tool", "attempts", "age (s)", "arguments (masked)"),
                      ([esc(u["thread_id"]), esc(u["tool"]), esc(u["attempts"]), esc(u["age_s"]), esc(u["args"])]
                       for u in view["uncertain_changes"])) if view["uncertain_changes"] else ""
    body = (f'<h1>Operator figures</h1>{stats}<h2>Calls the harness stopped itself</h2>'
            '<p class="dim">Held for the customer\'s yes or blocked before they ran (a repeat, a tool not offered, '
            'an invented argument): not tool failures, so not in the failure rate.</p>'
            + table(("held", "blocked", "by class"), [[str(stops["held"]), str(stops["blocked"]), by_class]], "stops")
            + '<h2>Queue</h2>' + table(("waiting for a human", "held by a human", "uncertain changes"),
                                        [[str(q["waiting_for_human"]), str(q["held_by_human"]),
                                          str(q["uncertain_changes"])]], "queue-counts") + uncertain)
    return page("Figures", body, active="/desk/stats", **frame)
