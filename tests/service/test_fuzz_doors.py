"""A fuzzer on every door (issue 40, item 6): property-based HTTP fuzzing of ``harness serve`` and of the LangGraph
server (``langgraph dev``) from each one's own OpenAPI schema, with Schemathesis.

How it works. Each door is started offline on a free port with two customers (A = U001, B = U002), the desk and
the sim model, and its world is seeded through the door itself: three threads per customer with real messages
(so there are real thread, checkpoint, run and message ids, a thread waiting for a human and one waiting for a
"yes" to cancel an order). The schema the door serves at ``/openapi.json`` is loaded with
``schemathesis.openapi.from_dict``, and for every operation Schemathesis' Hypothesis strategies give a fixed set
of cases, half from positive and half from negative generation, each with a plan Hypothesis draws beside it.
They are drawn in a child process with ``PYTHONHASHSEED=0`` and Hypothesis derandomized (no example database,
no shrinking), so every run sends the same cases. At send time the plan swaps generated values for real ones:
ids in the path, the query and the body (``thread_id``, ``checkpoint_id``, ``run_id``, ``assistant_id``,
``message_id``, ``cron_id``, ``interrupt_id`` and id lists) from a pool of both customers' ids, which grows with
the ids the door hands out; message texts from phrases that make the shop's tools run on both customers'
orders ("cancel my order ORD-...", "yes", "list my orders", ...); a third of the bodies cut down to their ids
and message, so they get past validation; and on the LangGraph server, real v2 commands (``run.start``,
``input.respond`` on the handoff's interrupt) and A2A ``message/send`` with a pooled thread as context.

The same cases are then sent as four callers, in this order: nobody (no key, or an unknown key), customer B,
customer A, the desk, each request on a connection of its own. Each response is checked:

- no 5xx and no dropped connection (a response that takes longer than the deadline is listed, not failed);
- no cross-customer read: a response to B holds none of A's private values (the order ids, tracking numbers,
  email, phone, address and name the shop keeps for A, the ids the server made for A's threads, checkpoints and
  runs, a marker written in A's messages), and the other way round; a response to nobody holds neither's. A
  value the caller sent in that request (an id echoed in a 404) or an order id the caller typed in any earlier
  message is not counted; one order of each customer is never typed, so it stays a witness;
- no cross-customer write: A's world (the shop's rows of A's orders, returns, complaints, handoffs and coupons;
  A's threads as A lists them, with their transcripts, checkpoints, state and runs; the desk's queue entries for
  A) is the same after nobody's and B's calls as before them, and B's the same after A's. Each world is read
  once it holds still, a customer's own runs still waiting cancelled before someone else's phase.

The desk may read and change every thread; its calls are checked for 5xx only, and go last. A 5xx met while
reading a world is a finding too, with the request that made the thread it failed on.

Bounded for CI: ``HARNESS_FUZZ_EXAMPLES`` cases per operation (default 32 on harness serve's 19 operations, 12
on the LangGraph server's 70), a deadline on every request, an event stream read for half a second. Both doors
take two to three minutes on two cores. A JSON summary (requests per door and caller, statuses per operation,
server errors, cross-customer reads and writes, each finding with a curl line that reproduces it) is written to
the test's tmp dir (and merged into ``HARNESS_FUZZ_REPORT`` when set); its counts are in the assertion message.

Needs schemathesis (the dev extra) and, for the LangGraph door, ``langgraph-cli[inmem]``.
"""

from __future__ import annotations

import json
import os
import pickle
import re
import socket
import sqlite3
import subprocess
import sys
import threading
import time
import uuid
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from importlib.util import find_spec
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

schemathesis = pytest.importorskip("schemathesis", reason="the fuzzer needs schemathesis (the dev extra)")
import requests  # noqa: E402  (schemathesis' transport; installed with it)
from hypothesis import HealthCheck, Phase, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from hypothesis.errors import HypothesisWarning, Unsatisfiable  # noqa: E402
from schemathesis.generation.case import Case  # noqa: E402
from schemathesis.generation.modes import GenerationMode  # noqa: E402

pytestmark = [
    pytest.mark.slow,
    # hypothesis-jsonschema overrides the standard email formats when Schemathesis builds a strategy
    pytest.mark.filterwarnings("ignore::hypothesis.errors.HypothesisWarning"),
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
]

EXAMPLES = int(os.environ.get("HARNESS_FUZZ_EXAMPLES") or 0)  # cases per operation; 0: each door's default
CALLERS = ("nobody", "B", "A", "desk")  # the order of the phases
USERS = {"A": "U001", "B": "U002"}
MARKERS = {"A": "kiwi-gate-4417", "B": "plum-gate-2290"}  # written in each customer's messages
REQUEST_DEADLINE_S = 20.0  # a response must be complete in this time
STREAM_WINDOW_S = 0.5  # an event stream is read this long, then closed (a live stream never ends by itself)
ID_KEYS = {"thread_id": "thread", "checkpoint_id": "checkpoint", "run_id": "run", "assistant_id": "assistant",
           "message_id": "message", "cron_id": "cron", "thread_ids": "thread", "run_ids": "run",
           "interrupt_id": "interrupt"}
MEANINGFUL = {"text", "input", "command", "checkpoint", "metadata", "limit"}
UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
PHRASES = ("where is my order {order}?", "cancel my order {order}", "yes", "yes, please do it",
           "I want to return order {order}, it arrived broken", "list my orders", "I want to talk to a human",
           "I want to file a complaint about order {order}: it never arrived", "what is the tracking number of {order}?",
           "cancel {order} and {order2}")


# ----------------------------------------------------------------------------------------------- the record


@dataclass
class Finding:
    kind: str  # server_error | cross_read | cross_write
    caller: str
    operation: str
    status: int | str
    detail: str
    reproduce: str


@dataclass
class Record:
    door: str
    requests: dict[str, int] = field(default_factory=lambda: dict.fromkeys(CALLERS, 0))
    cut_streams: int = 0  # event streams closed by the fuzzer after STREAM_WINDOW_S (not a finding)
    settled: int = 0  # a customer's own runs still waiting, cancelled before someone else's phase
    timeouts: list[str] = field(default_factory=list)  # requests with no complete answer in time (not a finding)
    statuses: dict[str, dict[str, int]] = field(default_factory=dict)  # operation -> status -> requests
    findings: list[Finding] = field(default_factory=list)
    seconds: float = 0.0
    timings: dict[str, float] = field(default_factory=dict)  # generating, snapshots, and each operation's requests

    def count(self, kind: str) -> int:
        return sum(f.kind == kind for f in self.findings)

    def summary(self) -> dict[str, Any]:
        groups: dict[tuple, dict[str, Any]] = {}
        for f in self.findings:  # one entry per kind, caller, operation and status, with its first reproducer
            key = (f.kind, f.caller, f.operation, f.status)
            entry = groups.setdefault(key, {"kind": f.kind, "caller": f.caller, "operation": f.operation,
                                            "status": f.status, "count": 0, "detail": f.detail,
                                            "reproduce": f.reproduce})
            entry["count"] += 1
        return {"door": self.door, "requests": sum(self.requests.values()), "requests_by_caller": self.requests,
                "server_errors": self.count("server_error"), "cross_customer_reads": self.count("cross_read"),
                "cross_customer_writes": self.count("cross_write"), "cut_streams": self.cut_streams,
                "timeouts": len(self.timeouts), "timed_out": self.timeouts[:10], "settled_runs": self.settled,
                "statuses": self.totals(), "seconds": round(self.seconds, 1),
                "slowest": {k: round(v, 1) for k, v in sorted(self.timings.items(), key=lambda kv: -kv[1])[:12]},
                "findings": list(groups.values()), "statuses_by_operation": self.statuses}

    def totals(self) -> dict[str, int]:
        totals: dict[str, int] = {}
        for by_status in self.statuses.values():
            for status, n in by_status.items():
                totals[status] = totals.get(status, 0) + n
        return dict(sorted(totals.items()))

    def line(self) -> str:
        s = self.summary()
        return (f"fuzz {self.door}: {s['requests']} requests ({', '.join(f'{k} {v}' for k, v in self.requests.items())})"
                f" in {s['seconds']} s; server errors {s['server_errors']}, cross-customer reads "
                f"{s['cross_customer_reads']}, cross-customer writes {s['cross_customer_writes']}")


def report(record: Record, tmp_path: Path) -> None:
    """Write the summary where CI keeps it, print its line, and fail with every finding listed."""
    summary = record.summary()
    text = json.dumps(summary, indent=2, ensure_ascii=False, default=str)
    (tmp_path / f"fuzz-{record.door}.json").write_text(text, encoding="utf-8")
    if target := os.environ.get("HARNESS_FUZZ_REPORT"):
        path = Path(target)
        path.parent.mkdir(parents=True, exist_ok=True)
        doc = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
        doc[record.door] = summary
        path.write_text(json.dumps(doc, indent=2, ensure_ascii=False, default=str), encoding="utf-8")
    print(record.line())
    listed = "\n".join(f"- [{g['kind']}] as {g['caller']}: {g['operation']} -> {g['status']} (x{g['count']}): "
                       f"{g['detail'][:300]}\n    {g['reproduce'][:1500]}" for g in summary["findings"])
    assert not record.findings, f"{record.line()}\n{listed}\n(summary: {tmp_path / f'fuzz-{record.door}.json'})"


# ----------------------------------------------------------------------------------------------- the world


@dataclass
class World:
    """What the fuzzer knows of the door's world: real ids to aim at and each customer's private values."""

    pool: dict[str, list[tuple[Any, str]]] = field(default_factory=dict)  # kind -> [(id, owner caller)]
    private: dict[str, set[str]] = field(default_factory=lambda: {"A": set(), "B": set()})
    orders: dict[str, list[str]] = field(default_factory=dict)  # caller -> their order ids
    spoken: list[str] = field(default_factory=list)  # the order ids the fuzzer's messages may name
    said: dict[str, set[str]] = field(default_factory=lambda: {c: set() for c in CALLERS})  # order ids typed
    origin: dict[str, Callable[[], str]] = field(default_factory=dict)  # id -> the request that handed it out

    def add(self, kind: str, value: Any, owner: str, origin: Callable[[], str] | None = None) -> None:
        known = self.pool.setdefault(kind, [])
        if value in (v for v, _ in known):
            return
        known.append((value, owner))
        if origin is not None:
            self.origin[str(value)] = origin
        # a customer's threads, checkpoints and runs are theirs when the server made their ids (UUIDs); a thread
        # id a client chose is a name, not a secret (on harness serve each customer names threads in a space of
        # their own, so B may well hold a thread called as A's): aimed at, not looked for
        if owner in self.private and kind in ("thread", "checkpoint", "run") and isinstance(value, str) and UUID.match(value):
            self.private[owner].add(value)

    def pick(self, kind: str, n: int) -> Any:
        known = self.pool.get(kind) or []
        return known[n % len(known)][0] if known else None

    def harvest(self, doc: Any, owner: str, origin: Callable[[], str] | None = None) -> None:
        """Ids a 2xx response handed its caller go into the pool (and into the caller's private values)."""
        if isinstance(doc, dict):
            for key, value in doc.items():
                kind = ID_KEYS.get(key)
                if kind and isinstance(value, str | int) and not isinstance(value, bool) and str(value).strip():
                    self.add(kind, value, owner, origin)
                elif isinstance(value, dict | list):
                    self.harvest(value, owner, origin)
        elif isinstance(doc, list):
            for item in doc[:200]:
                self.harvest(item, owner, origin)

    def made_by(self, text: str) -> str:
        """The requests that handed out the ids in ``text`` (what made the thread a read failed on)."""
        return "".join(f"\n    ({value} came from: {origin()})" for value, origin in self.origin.items()
                       if value in text and len(value) > 8)


def shop_private(db: Path, world: World) -> None:
    """Each customer's private values in the shop: orders, tracking numbers, email, phone, address, name."""
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        for caller, user in USERS.items():
            orders = conn.execute("SELECT id, tracking_no FROM orders WHERE user_id = ? ORDER BY id", (user,)).fetchall()
            world.orders[caller] = [o for o, _ in orders]
            world.private[caller] |= {o for o, _ in orders} | {t for _, t in orders if t}
            name, email, phone, address = conn.execute("SELECT name, email, phone, address FROM users WHERE id = ?",
                                                       (user,)).fetchone()
            world.private[caller] |= {name, email, phone, address, MARKERS[caller]}


def keep_one_unspoken(world: World, seeded: dict[str, tuple[str, ...]]) -> None:
    """The fuzzer's messages name every order but one of each customer's (the lowest id the seeding did not
    use): what a caller typed is theirs to see again, so an order nobody ever names stays a clean witness that
    another customer's orders were shown (a listing, a search)."""
    for caller, orders in world.orders.items():
        witness = min(o for o in orders if o not in seeded[caller])
        world.spoken += [o for o in orders if o != witness]


def shop_rows(db: Path, user: str) -> dict[str, Any]:
    """The shop's rows that are the customer's: orders, returns, complaints, handoffs, coupons, the user."""
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        mine = "SELECT id FROM orders WHERE user_id = :u"
        queries = {
            "user": "SELECT * FROM users WHERE id = :u",
            "orders": "SELECT id, status, total, tracking_no, carrier, updated_at FROM orders WHERE user_id = :u",
            "items": f"SELECT * FROM order_items WHERE order_id IN ({mine})",
            "returns": f"SELECT * FROM returns WHERE user_id = :u OR order_id IN ({mine})",
            "complaints": f"SELECT * FROM complaints WHERE user_id = :u OR order_id IN ({mine})",
            "handoffs": "SELECT * FROM handoffs WHERE user_id = :u",
            "coupons": "SELECT * FROM user_coupons WHERE user_id = :u",
        }
        return {name: sorted(map(list, conn.execute(sql + " ORDER BY 1", {"u": user}).fetchall()), key=repr)
                for name, sql in queries.items()}


def diff(before: Any, after: Any, path: str = "") -> str:
    """The first place two snapshots differ, as one line."""
    if isinstance(before, dict) and isinstance(after, dict):
        for key in sorted(set(before) | set(after), key=str):
            if before.get(key, "<absent>") != after.get(key, "<absent>"):
                return diff(before.get(key, "<absent>"), after.get(key, "<absent>"), f"{path}/{key}")
        return ""
    return f"{path}: {json.dumps(before, default=str)[:400]} -> {json.dumps(after, default=str)[:400]}"


# ----------------------------------------------------------------------------------------------- cases


@dataclass
class Planned:
    case: Case
    plan: list[int]  # drawn by Hypothesis: which generated values the sender swaps for real ones


GENERATE = ("import sys; sys.path.insert(0, sys.argv[1]); import test_fuzz_doors as fuzz; "
            "fuzz.generate(sys.argv[2], int(sys.argv[3]), sys.argv[4])")


def cases_for(document: dict[str, Any], examples: int, workdir: Path) -> list[tuple[str, list[Planned]]]:
    """Every operation's cases, the same on every run: drawn in a child process with PYTHONHASHSEED=0, since
    Schemathesis' negative mutations walk sets of strings, whose order changes with each process's hash seed
    (Hypothesis' derandomize alone leaves a few cases different from run to run)."""
    source, target = workdir / "openapi.json", workdir / "cases.pickle"
    source.write_text(json.dumps(document), encoding="utf-8")
    done = subprocess.run([sys.executable, "-c", GENERATE, str(Path(__file__).parent), str(source), str(examples),
                           str(target)], env={**os.environ, "PYTHONHASHSEED": "0"}, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, f"drawing the cases failed:\n{done.stderr[-3000:]}"
    schema = schemathesis.openapi.from_dict(document)
    operations = {op.label: op for op in (result.ok() for result in schema.get_all_operations())}
    drawn = pickle.loads(target.read_bytes())  # written just now by the child above
    return [(label, [Planned(Case(operations[label], *args, **kwargs), plan) for args, kwargs, plan in cases])
            for label, cases in drawn]


def generate(source: str, examples: int, target: str) -> None:
    """In the child: draw the cases and write them as plain data (a Case holds its operation, not picklable)."""
    schema = schemathesis.openapi.from_dict(json.loads(Path(source).read_text(encoding="utf-8")))
    out = [(label, [((p.case.method, p.case.path), {"path_parameters": p.case.path_parameters,
                                                    "headers": p.case.headers, "cookies": p.case.cookies,
                                                    "query": p.case.query, "body": p.case.body,
                                                    "media_type": p.case.media_type,
                                                    "multipart_content_types": p.case.multipart_content_types},
                     p.plan) for p in planned])
           for label, planned in draw_all(schema, examples)]
    Path(target).write_bytes(pickle.dumps(out))


def draw_all(schema: Any, examples: int) -> list[tuple[str, list[Planned]]]:
    """Every operation's cases: half from positive, half from negative generation, derandomized."""
    found: list[tuple[str, list[Planned]]] = []
    for result in schema.get_all_operations():
        operation = result.ok()
        planned: list[Planned] = []
        for mode, n in ((GenerationMode.POSITIVE, (examples + 1) // 2), (GenerationMode.NEGATIVE, examples // 2)):
            explicit = {}
            if mode is GenerationMode.NEGATIVE and plain_path(operation):
                # a plain string has no negation: Schemathesis would spend seconds rejecting the whole case, so
                # the path gets a placeholder that realise() swaps for a real id, and the rest is negated
                explicit["path_parameters"] = {name: PLACEHOLDER for name in path_names(operation)}
            planned += draw(operation.as_strategy(generation_mode=mode, **explicit), n)
        found.append((operation.label, planned))
    # reads first, then writes, then deletions: ids stay alive for most of each phase
    rank = {"GET": 0, "HEAD": 0, "POST": 1, "PUT": 1, "PATCH": 1, "DELETE": 2}
    return sorted(found, key=lambda item: (rank.get(item[0].split()[0], 1) + ("prune" in item[0]) * 2, item[0]))


PLACEHOLDER = "fz-placeholder"
PLAIN_KEYS = {"type", "title", "description"}


def path_names(operation: Any) -> list[str]:
    return [p.name for p in operation.path_parameters]


def plain_path(operation: Any) -> bool:
    """Whether the operation has path parameters and every one is a plain string (nothing to negate)."""
    schemas = [p.definition.get("schema", p.definition) for p in operation.path_parameters]
    return bool(schemas) and all(isinstance(s, dict) and s.get("type") == "string" and set(s) <= PLAIN_KEYS
                                 for s in schemas)


def draw(strategy: Any, n: int) -> list[Planned]:
    """``n`` cases of a strategy, each with its plan: Hypothesis derandomized (the same cases on every run), no
    example database, no shrinking (every case is sent as drawn)."""
    drawn: list[Planned] = []

    @settings(max_examples=n, derandomize=True, database=None, deadline=None, phases=[Phase.generate],
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large,
                                     HealthCheck.large_base_example])
    @given(case=strategy, plan=st.lists(st.integers(0, 2**16), min_size=16, max_size=16))
    def collect(case: Case, plan: list[int]) -> None:
        drawn.append(Planned(case, plan))

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", HypothesisWarning)
            collect()
    except Unsatisfiable:  # nothing to negate (an operation without parameters)
        pass
    return drawn


def stable(value: Any) -> str:
    """A JSON stand-in for what JSON cannot hold, the same in every process (no object address in it)."""
    return value.hex() if isinstance(value, bytes) else type(value).__name__


class Plan:
    """The choices realise() makes for one case: a generator seeded by Hypothesis' draw and the case itself
    (Hypothesis draws many all-zero lists, which alone would make every case choose alike), so the same case
    always gets the same choices."""

    def __init__(self, numbers: list[int], case: Case) -> None:
        import hashlib
        import random

        parts = json.dumps([numbers, case.path_parameters, case.query, case.body], default=stable, sort_keys=True)
        self.random = random.Random(hashlib.sha256(parts.encode("utf-8", "surrogatepass")).hexdigest())

    def next(self) -> int:
        return self.random.randrange(2**31)


def phrase(world: World, n: int, m: int) -> str:
    orders = world.spoken
    return PHRASES[n % len(PHRASES)].format(order=orders[m % len(orders)], order2=orders[(m // 7) % len(orders)])


def realise(item: Planned, world: World, door: str) -> Case:
    """The case with some generated values swapped for real ids and meaningful messages (as the plan says)."""
    case = item.case
    swapper = Swapper(world, Plan(item.plan, case), runs_take_input=door.startswith("langgraph"))
    path = dict(case.path_parameters or {})
    for key in sorted(path):
        swapper.swap(path, key)
    query = dict(case.query or {}) if isinstance(case.query, dict) else case.query
    if isinstance(query, dict):
        for key in sorted(query):
            swapper.swap(query, key)
    body = json.loads(json.dumps(case.body)) if isinstance(case.body, dict | list) else case.body
    if isinstance(body, dict) and swapper.plan.next() % 3 == 0:
        # a third of the bodies keep only their ids and message: a request that gets past validation and makes
        # the door act (a garbage option next to them would be refused before anything is looked up)
        body = {k: v for k, v in body.items() if k in ID_KEYS or k in MEANINGFUL}
    swapper.walk(body, 0)
    if (crafted := CRAFTED.get(f"{case.method.upper()} {case.path}")) and swapper.plan.next() % 2 == 0:
        body = crafted(swapper)  # half the bodies of a door that speaks a protocol of its own: a real command
    return Case(case.operation, case.method, case.path, path_parameters=path, headers=case.headers,
                cookies=case.cookies, query=query, body=body, media_type=case.media_type,
                multipart_content_types=case.multipart_content_types)


def command(swapper: Swapper) -> dict[str, Any]:
    """A v2 event-streaming command (``POST /threads/{id}/commands``): start a run with a customer's message, or
    answer a thread's interrupt (the desk's privilege: a thread waiting for a human)."""
    n = swapper.plan.next()
    if n % 2:
        return {"id": n % 1000, "method": "run.start",
                "params": {"assistant_id": "harness", "input": {"messages": [{"role": "user", "content": swapper.message()}]}}}
    return {"id": n % 1000, "method": "input.respond",
            "params": {"interrupt_id": str(swapper.world.pick("interrupt", n) or "x"), "namespace": [],
                       "response": {"text": "Refund sent. " + swapper.message()}}}


def a2a_message(swapper: Swapper) -> dict[str, Any]:
    """An A2A ``message/send`` whose context is a thread from the pool (a thread id is an A2A context id)."""
    n = swapper.plan.next()
    message = {"role": "user", "parts": [{"kind": "text", "text": swapper.message()}], "messageId": f"m-{n}"}
    if n % 3:
        message["contextId"] = str(swapper.world.pick("thread", n))
    return {"jsonrpc": "2.0", "id": n % 1000, "method": "message/send", "params": {"message": message}}


CRAFTED: dict[str, Callable[[Swapper], Any]] = {"POST /threads/{thread_id}/commands": command,
                                                 "POST /a2a/{assistant_id}": a2a_message}


@dataclass
class Swapper:
    world: World
    plan: Plan
    runs_take_input: bool  # the LangGraph server: a run's "input" becomes a customer's message

    def swap(self, container: dict, key: str) -> None:
        """An id for a real one from the pool (three times in four; a placeholder always)."""
        kind, n = ID_KEYS.get(key), self.plan.next()
        if kind is None or (n % 4 == 0 and container[key] != PLACEHOLDER):
            return
        if key.endswith("_ids"):
            picks = [self.world.pick(kind, n + k) for k in range(1 + n % 3)]
            container[key] = [p for p in picks if p is not None] or container[key]
        elif (real := self.world.pick(kind, n)) is not None:
            keep_int = isinstance(container[key], int | float) and isinstance(real, int)
            container[key] = real if keep_int else str(real)

    def message(self) -> str:
        return phrase(self.world, self.plan.next(), self.plan.next())

    def walk(self, node: Any, depth: int) -> None:
        """Ids and messages anywhere in the body (a few levels down)."""
        if depth > 3:
            return
        if isinstance(node, list):
            for item in node[:5]:
                self.walk(item, depth + 1)
        if not isinstance(node, dict):
            return
        for key in sorted(node, key=str):
            if key in ID_KEYS:
                self.swap(node, key)
            elif key == "text" and isinstance(node[key], str) and self.plan.next() % 3:
                node[key] = self.message()
            elif key == "input" and self.runs_take_input and self.plan.next() % 3:
                node[key] = {"messages": [{"role": "user", "content": self.message()}]}
            else:
                self.walk(node[key], depth + 1)


# ----------------------------------------------------------------------------------------------- sending


@dataclass
class Reply:
    status: int | str  # an int, or "no response: ..." when the connection failed
    text: str
    headers: dict[str, str]
    doc: Any
    cut: bool


def send(session: requests.Session, case: Case, base_url: str, headers: dict[str, str]) -> tuple[Reply, str]:
    """Send one case; the response read within the deadlines, and the request's own text."""
    kwargs = case.as_transport_kwargs(base_url=base_url, headers=headers)
    request_text = json.dumps([kwargs.get("url"), kwargs.get("params"), kwargs.get("json"), str(kwargs.get("data")),
                               dict(kwargs.get("headers") or {})], default=str, ensure_ascii=False)
    started = time.monotonic()
    try:
        with session.request(**kwargs, stream=True, timeout=(5, REQUEST_DEADLINE_S)) as resp:
            streaming = "event-stream" in resp.headers.get("content-type", "")
            chunks: list[bytes] = []
            with Cutter(resp, STREAM_WINDOW_S if streaming else REQUEST_DEADLINE_S) as cutter:
                try:
                    for chunk in resp.iter_content(4096):
                        chunks.append(chunk)
                except requests.RequestException:
                    if not cutter.fired:
                        raise
            raw = b"".join(chunks)
            text = raw.decode("utf-8", "replace")
            try:
                doc = json.loads(raw) if "json" in resp.headers.get("content-type", "") and not cutter.fired else None
            except ValueError:
                doc = None
            if cutter.fired and not streaming:
                return Reply(TIMEOUT, text, dict(resp.headers), doc, True), request_text
            return Reply(resp.status_code, text, dict(resp.headers), doc, cutter.fired), request_text
    except requests.Timeout:
        return Reply(TIMEOUT, "", {}, None, False), request_text
    except requests.RequestException as err:
        return Reply(f"no response ({type(err).__name__})", f"{err} after {time.monotonic() - started:.1f} s", {},
                     None, False), request_text


TIMEOUT = "timeout"  # no complete answer within REQUEST_DEADLINE_S: counted and listed, not a finding


class Cutter:
    """Closes a response's socket after ``seconds`` (an event stream that never ends, a response that takes too
    long): iter_content blocks until the next chunk, so a check between chunks could wait much longer."""

    def __init__(self, resp: Any, seconds: float) -> None:
        self.sock = getattr(getattr(resp.raw, "_connection", None), "sock", None)
        self.timer = threading.Timer(seconds, self.cut)
        self.timer.daemon = True
        self.fired = False

    def cut(self) -> None:
        self.fired = True
        try:
            if self.sock is not None:
                self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def __enter__(self) -> Cutter:
        self.timer.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.timer.cancel()


class OneConnectionPerRequest(requests.Session):
    """Every request on a new connection: after a 500 the server drops the connection it answered on, and a
    pooled connection reused at that moment reads as a reset that is the client's doing, not the server's."""

    def request(self, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        self.close()  # drops the pooled connections; the adapters open new ones
        return super().request(*args, **kwargs)


def new_session() -> requests.Session:
    session = OneConnectionPerRequest()
    session.trust_env = False  # straight to 127.0.0.1, whatever proxy the environment names
    session.headers["Connection"] = "close"
    return session


def reproduce(case: Case, headers: dict[str, str], base_url: str) -> str:
    """A curl line that sends the same request (the body as JSON text, surrogate escapes and all)."""
    import shlex
    from urllib.parse import urlencode

    kwargs = case.as_transport_kwargs(base_url=base_url, headers=headers)
    url = kwargs["url"]
    params = kwargs.get("params")
    if params:
        url += ("&" if "?" in url else "?") + (params if isinstance(params, str) else urlencode(params, doseq=True))
    parts = ["curl", "-X", kwargs["method"], url]
    for name, value in {**headers, **({"Content-Type": "application/json"} if "json" in kwargs else {})}.items():
        parts += ["-H", f"{name}: {value}"]
    if "json" in kwargs:
        parts += ["--data-binary", json.dumps(kwargs["json"])]
    elif kwargs.get("data") is not None:
        data = kwargs["data"]
        parts += ["--data-binary", data.decode("utf-8", "backslashreplace") if isinstance(data, bytes) else str(data)]
    return " ".join(shlex.quote(p) for p in parts)


@dataclass
class Door:
    name: str
    base_url: str
    document: dict[str, Any]  # the OpenAPI schema the door serves
    workdir: Path
    keys: dict[str, dict[str, str]]  # caller -> auth headers
    snapshot: Callable[[str], Any]  # caller -> that customer's world, as they and the shop see it
    world: World
    examples: int
    errors: list[Finding] = field(default_factory=list)  # 5xx the snapshots' own reads met
    settle: Callable[[str], int] = lambda caller: 0  # cancels the customer's waiting runs; how many


def reader(session: requests.Session, base_url: str, errors: list[Finding]) -> Callable[..., Any]:
    """A read for the snapshots: the JSON document, or the status and text when there is none (a 5xx is a
    finding: the owner could not read their own world)."""

    def read(caller: str, method: str, path: str, headers: dict[str, str], **kwargs: Any) -> Any:
        r = session.request(method, f"{base_url}{path}", headers=headers, timeout=60, **kwargs)
        if r.status_code >= 500:
            body = f" -d '{json.dumps(kwargs['json'])}' -H 'Content-Type: application/json'" if "json" in kwargs else ""
            auth = "".join(f" -H '{k}: {v}'" for k, v in headers.items())
            errors.append(Finding("server_error", caller, f"{method} {path} (reading the world)", r.status_code,
                                  r.text[:400], f"curl -X {method} '{r.url}'{auth}{body}"))
        try:
            return r.json() if r.status_code < 300 else {"status": r.status_code, "text": r.text[:400]}
        except ValueError:
            return {"status": r.status_code, "text": r.text[:400]}

    return read


WATCHED = {"nobody": ("A", "B"), "B": ("A",), "A": ("B",), "desk": ()}  # whose world each phase must leave alone


def fuzz(door: Door) -> Record:
    """Draw the cases, then send them as each caller in turn, checking every response and, after each phase,
    the worlds of the customers that phase must not touch."""
    record = Record(door.name)
    started = time.monotonic()
    operations = cases_for(door.document, door.examples, door.workdir)
    record.timings["generating cases"] = time.monotonic() - started
    session = new_session()
    before = {c: world_of(record, door, c, settle=True) for c in ("A", "B")}
    for caller in CALLERS:
        if caller == "A":  # B's world as it was before A's calls
            before["B"] = world_of(record, door, "B", settle=True)
        phase(record, door, session, operations, caller)
        for customer in WATCHED[caller]:
            now = world_of(record, door, customer, settle=False)
            if now != before[customer]:
                record.findings.append(Finding("cross_write", caller, f"{customer}'s world", "changed",
                                               diff(before[customer], now), f"after {caller}'s calls"))
    session.close()
    record.seconds = time.monotonic() - started
    return record


def phase(record: Record, door: Door, session: requests.Session, operations: list[tuple[str, list[Planned]]],
          caller: str) -> None:
    """Every case of every operation, sent as ``caller`` (nobody: no key for half, an unknown key for the rest)."""
    for label, planned in operations:
        for i, item in enumerate(planned):
            case = realise(item, door.world, door.name)
            headers = door.keys[caller] if caller != "nobody" else (
                {} if i % 2 == 0 else {"Authorization": "Bearer not-a-key"})
            began = time.monotonic()
            reply, request_text = send(session, case, door.base_url, headers)
            record.timings[label] = record.timings.get(label, 0.0) + time.monotonic() - began
            record.requests[caller] += 1
            by_status = record.statuses.setdefault(label, {})
            by_status[str(reply.status)] = by_status.get(str(reply.status), 0) + 1
            record.cut_streams += reply.cut
            judge(record, door, caller, label, case, headers, reply, request_text)


def world_of(record: Record, door: Door, customer: str, settle: bool) -> Any:
    """The customer's world once it holds still: their own work in flight (a message queued without waiting, a
    run that starts later) settles first, so a change seen afterwards is someone else's doing. ``settle``: cancel
    the customer's own runs still waiting (before a phase of someone else's calls, never after one)."""
    began = time.monotonic()
    try:
        if settle:
            record.settled += door.settle(customer)
        now = door.snapshot(customer)
        for _ in range(20):
            time.sleep(0.5)
            now, previous = door.snapshot(customer), now
            if now == previous:
                break
        return now
    finally:
        record.timings["snapshots"] = record.timings.get("snapshots", 0.0) + time.monotonic() - began
        for error in door.errors:  # a 5xx while reading the world: a finding, once, with what made the thread
            error.reproduce += door.world.made_by(error.reproduce)
            if (error.kind, error.operation) not in {(f.kind, f.operation) for f in record.findings}:
                record.findings.append(error)
        door.errors.clear()


def judge(record: Record, door: Door, caller: str, label: str, case: Case, headers: dict[str, str], reply: Reply,
          request_text: str) -> None:
    world = door.world
    for order in world.orders["A"] + world.orders["B"]:  # what a caller typed, they know
        if order in request_text:
            world.said[caller].add(order)
    if reply.status == TIMEOUT:
        record.timeouts.append(f"{caller}: {label}: {reproduce(case, headers, door.base_url)}"[:600])
    elif not isinstance(reply.status, int) or reply.status >= 500:
        record.findings.append(Finding("server_error", caller, label, reply.status, reply.text[:400],
                                       reproduce(case, headers, door.base_url)))
    others = {"nobody": ("A", "B"), "A": ("B",), "B": ("A",)}.get(caller, ())
    haystack = reply.text + json.dumps(reply.headers)
    leaked = sorted(v for o in others for v in door.world.private[o]
                    if v in haystack and v not in request_text and v not in world.said[caller])
    if leaked:
        record.findings.append(Finding("cross_read", caller, label, reply.status,
                                       f"response holds another customer's {leaked[:5]}: {reply.text[:300]}",
                                       reproduce(case, headers, door.base_url)))
    elif isinstance(reply.status, int) and 200 <= reply.status < 300 and caller in ("A", "B") and reply.doc is not None:
        world.harvest(reply.doc, caller, lambda: f"{label}: {reproduce(case, headers, door.base_url)}")


# ----------------------------------------------------------------------------------------------- harness serve


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


HARNESS_KEYS = {"A": "key-a", "B": "key-b"}
DESK_KEY = "key-alice"


@pytest.fixture(scope="module")
def harness_door(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Door]:
    import uvicorn

    from lg_harness.service.desk import api as desk_api
    from lg_harness.service.http import ServiceSettings, create_app

    work = tmp_path_factory.mktemp("fuzz-harness")
    from tests.support import patient_design

    design = work / "patient.json"  # a loaded CI machine must not turn a sim call into a 'busy' reply
    design.write_text(patient_design().model_dump_json(), encoding="utf-8")
    settings_ = ServiceSettings(data_dir=work / "data", database_url=None, chroma_url=None, design=str(design),
                         model="sim:clean", threads=1, lease_ttl=5.0,
                         api_keys={k: USERS[c] for c, k in HARNESS_KEYS.items()}, desk_keys={DESK_KEY: "alice"})
    app = create_app(settings_)
    live_span = desk_api.LIVE_SPAN_S
    desk_api.LIVE_SPAN_S = 0.3  # a live transcript answers for 25 s; the fuzzer reads each for a moment
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="critical", lifespan="on"))
    thread = threading.Thread(target=server.run, name="fuzz-harness-serve", daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{port}"
    session = new_session()
    try:
        deadline = time.monotonic() + 120
        while not up(session, f"{url}/healthz"):
            if time.monotonic() > deadline:
                pytest.fail("harness serve did not answer /healthz within 120 s")
            time.sleep(0.1)
        keys = {c: {"Authorization": f"Bearer {k}"} for c, k in HARNESS_KEYS.items()}
        keys["desk"] = {"Authorization": f"Bearer {DESK_KEY}"}
        world = World()
        shop = work / "data" / "shop.sqlite"
        shop_private(shop, world)
        world.add("thread", "fz-nobody-owns-this", "nobody")
        seed_harness(session, url, keys, world, shop)
        errors: list[Finding] = []
        views = HarnessViews(reader(session, url, errors), keys, shop)
        document = session.get(f"{url}/openapi.json", timeout=30).json()
        yield Door("harness-serve", url, document, work, keys, views.snapshot, world, EXAMPLES or 32, errors)
    finally:
        session.close()
        server.should_exit = True
        thread.join(timeout=30)
        desk_api.LIVE_SPAN_S = live_span


def up(session: requests.Session, url: str) -> bool:
    try:
        return session.get(url, timeout=2).status_code == 200
    except requests.RequestException:
        return False


def seed_harness(session: requests.Session, url: str, keys: dict[str, dict[str, str]], world: World,
                 shop: Path) -> None:
    """Three threads per customer through the service itself (an order's status and the customer's orders, a
    cancellation waiting for a yes, a handoff waiting for the desk); their ids and checkpoints go into the pool."""

    def say(caller: str, thread_id: str, text: str) -> None:
        r = session.post(f"{url}/threads/{thread_id}/messages", json={"text": text}, headers=keys[caller], timeout=60)
        assert r.status_code == 200, (thread_id, text, r.status_code, r.text)
        world.said[caller] |= {o for o in world.orders["A"] + world.orders["B"] if o in text}
        world.harvest(r.json(), caller)

    seeds = seeded_orders(shop)
    keep_one_unspoken(world, seeds)
    for caller, (shipped, pending) in seeds.items():
        tag = caller.lower()
        say(caller, f"fz-{tag}-orders", f"Where is my order {shipped}? ({MARKERS[caller]})")
        say(caller, f"fz-{tag}-orders", "list my orders")
        say(caller, f"fz-{tag}-cancel", f"cancel my order {pending}")  # waits for the customer's yes
        say(caller, f"fz-{tag}-human", f"I want to talk to a human. {MARKERS[caller]}")  # waits for the desk
        for thread_id in (f"fz-{tag}-orders", f"fz-{tag}-cancel", f"fz-{tag}-human"):
            world.add("thread", thread_id, caller)
            history = session.get(f"{url}/threads/{thread_id}/history", headers=keys[caller], timeout=30)
            for row in history.json()["checkpoints"]:
                world.add("checkpoint", row["checkpoint_id"], caller)


@dataclass
class HarnessViews:
    """A customer's world on harness serve: their threads as they list them (each one's transcript, checkpoints
    and state), the desk's queue entries for them, and the shop's rows."""

    read: Callable[..., Any]
    keys: dict[str, dict[str, str]]
    shop: Path

    def snapshot(self, caller: str) -> dict[str, Any]:
        h = self.keys[caller]
        listed = self.read(caller, "GET", "/threads", h, params={"limit": 500}).get("threads", [])
        threads = {}
        for row in listed:
            t = quote(row["thread_id"], safe="")
            threads[row["thread_id"]] = {"row": row, **{part: self.read(caller, "GET", f"/threads/{t}/{part}", h)
                                                         for part in ("transcript", "history", "state")}}
        queue = self.read("desk", "GET", "/handoffs", self.keys["desk"])
        theirs = {k: [e for e in v if (e.get("user") or {}).get("id") == USERS[caller]] for k, v in queue.items()
                  if isinstance(v, list)}
        return {"shop": shop_rows(self.shop, USERS[caller]), "threads": threads, "handoffs": theirs}


def test_fuzz_harness_serve(harness_door: Door, tmp_path: Path) -> None:
    report(fuzz(harness_door), tmp_path)


# ----------------------------------------------------------------------------------------------- langgraph dev


@pytest.fixture(scope="module")
def langgraph_door(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Door]:
    missing = [p for p in ("langgraph_cli", "langgraph_api", "langgraph_runtime_inmem") if find_spec(p) is None]
    if missing:
        pytest.skip(f"langgraph dev needs the dev extra (pip install 'langgraph-cli[inmem]'); missing {missing}")
    from lg_harness.domains.shop.backend import ShopDB
    from tests.service.test_langgraph_server import KEYS, start_langgraph_dev, stop, wait_until_up

    work = tmp_path_factory.mktemp("fuzz-langgraph")
    data = work / "data"
    data.mkdir()
    ShopDB.open(data / "shop.sqlite").close()  # seeded now, so the fuzzer knows whose orders are whose
    proc, url, log = start_langgraph_dev(work, data)
    session = new_session()
    try:
        wait_until_up(url, proc, log)
        by_user = {u: k for k, u in KEYS.items()}
        keys = {c: {"Authorization": f"Bearer {by_user[u]}"} for c, u in USERS.items()}
        keys["desk"] = {"Authorization": f"Bearer {by_user['@agent']}"}
        world = World()
        shop = data / "shop.sqlite"
        shop_private(shop, world)
        world.add("thread", str(uuid.UUID(int=0)), "nobody")
        for assistant in session.post(f"{url}/assistants/search", json={}, headers=keys["A"], timeout=30).json():
            world.add("assistant", assistant["assistant_id"], "public")
        world.add("assistant", "harness", "public")

        seed_langgraph(session, url, keys, world, shop)
        errors: list[Finding] = []
        views = LangGraphViews(reader(session, url, errors), keys, shop)
        document = session.get(f"{url}/openapi.json", timeout=30).json()
        yield Door("langgraph-dev", url, document, work, keys, views.snapshot, world, EXAMPLES or 12, errors,
                   views.settle)
    finally:
        session.close()
        stop(proc)


def seeded_orders(shop: Path) -> dict[str, tuple[str, str]]:
    """Each customer's first shipped and first pending order: the seeding asks where the one is and to cancel the
    other (which then waits for the customer's yes)."""
    with sqlite3.connect(f"file:{shop}?mode=ro", uri=True) as conn:
        def first(user: str, status: str) -> str:
            return conn.execute("SELECT id FROM orders WHERE user_id = ? AND status = ? ORDER BY id",
                                (user, status)).fetchone()[0]
        return {c: (first(u, "shipped"), first(u, "pending")) for c, u in USERS.items()}


def seed_langgraph(session: requests.Session, url: str, keys: dict[str, dict[str, str]], world: World,
                   shop: Path) -> None:
    """Three threads per customer through the server itself (an order's status and the customer's orders, a
    cancellation waiting for a yes, a handoff waiting for the desk); their ids, checkpoints, runs and the
    handoff's interrupt go into the pool."""

    def post(caller: str, path: str, body: dict[str, Any]) -> Any:
        r = session.post(f"{url}{path}", json=body, headers=keys[caller], timeout=120)
        assert r.status_code == 200, (path, body, r.status_code, r.text)
        return r.json()

    def get(caller: str, path: str) -> Any:
        r = session.get(f"{url}{path}", headers=keys[caller], timeout=60)
        assert r.status_code == 200, (path, r.status_code, r.text)
        return r.json()

    def say(caller: str, thread_id: str, text: str) -> None:
        post(caller, f"/threads/{thread_id}/runs/wait",
             {"assistant_id": "harness", "input": {"messages": [{"role": "user", "content": text}]}})
        world.said[caller] |= {o for o in world.orders["A"] + world.orders["B"] if o in text}

    seeds = seeded_orders(shop)
    keep_one_unspoken(world, seeds)
    for caller, (shipped, pending) in seeds.items():
        made = []
        for text in (f"Where is my order {shipped}? ({MARKERS[caller]})", f"cancel my order {pending}",
                     f"I want to talk to a human. {MARKERS[caller]}"):
            thread_id = post(caller, "/threads", {})["thread_id"]
            say(caller, thread_id, text)
            made.append(thread_id)
        say(caller, made[0], "list my orders")
        for thread_id in made:
            world.add("thread", thread_id, caller)
            for state in post(caller, f"/threads/{thread_id}/history", {"limit": 100}):
                world.add("checkpoint", state["checkpoint"]["checkpoint_id"], caller)
            for run in get(caller, f"/threads/{thread_id}/runs"):
                world.add("run", run["run_id"], caller)
            for interrupt in get(caller, f"/threads/{thread_id}/state").get("interrupts") or []:
                world.add("interrupt", interrupt["id"], caller)  # the thread waiting for a human


@dataclass
class LangGraphViews:
    """A customer's world on the LangGraph server, as they see it (their threads, each one's state and runs) and
    as the shop records it."""

    read: Callable[..., Any]
    keys: dict[str, dict[str, str]]
    shop: Path

    def threads(self, caller: str) -> list[dict[str, Any]]:
        listed = self.read(caller, "POST", "/threads/search", self.keys[caller], json={"limit": 1000})
        return listed if isinstance(listed, list) else [listed]

    def runs(self, caller: str, thread_id: str) -> Any:
        return self.read(caller, "GET", f"/threads/{thread_id}/runs", self.keys[caller], params={"limit": 1000})

    def snapshot(self, caller: str) -> dict[str, Any]:
        threads = {}
        for row in self.threads(caller):
            t = row.get("thread_id")
            runs = self.runs(caller, str(t))
            threads[t] = {"row": row, "state": self.read(caller, "GET", f"/threads/{t}/state", self.keys[caller]),
                          "runs": sorted((r["run_id"], r["status"]) for r in runs if isinstance(r, dict))
                          if isinstance(runs, list) else runs}
        return {"shop": shop_rows(self.shop, USERS[caller]), "threads": threads}

    def settle(self, caller: str) -> int:
        """Cancel the customer's own runs still pending or running (a run may be asked to start minutes later: it
        would change their world in the middle of someone else's phase); how many."""
        cancelled = 0
        for row in self.threads(caller):
            runs = self.runs(caller, str(row.get("thread_id")))
            for run in runs if isinstance(runs, list) else []:
                if run.get("status") in ("pending", "running"):
                    self.read(caller, "POST", f"/threads/{row['thread_id']}/runs/{run['run_id']}/cancel",
                              self.keys[caller], params={"wait": "true", "action": "interrupt"})
                    cancelled += 1
        return cancelled


def test_fuzz_langgraph_server(langgraph_door: Door, tmp_path: Path) -> None:
    report(fuzz(langgraph_door), tmp_path)
