"""Chaos: kill a changing conversation where it hurts, recover the way the README says, count what went wrong.
Plus a soak of many processes on one data dir.

The model rewords (``reword:clean``, ``lg_harness/llm/reword.py``): each answer words its free-text arguments anew and
renames its calls, as real models do, so a recovery that asked the model again for a call already decided
would make a second change. Each run plays one conversation that changes the domain once (the request, and
"yes" when the design asks to confirm: ``harness`` with ``confirm_changes`` on, or ``harness-no:confirm_changes``)
in a forked process, which dies at one of these points:

- just before or just after the k-th checkpoint write (every k of a clean run);
- just before or just after the k-th transcript write (every k);
- just after the action node kept its decision in the change ledger, before anything ran;
- between the change ledger's ``pending`` record and the tool (the tool never ran);
- between a changing tool and its settle in the ledger (the tool ran);
- SIGKILL from the parent at a random moment, until the runs reach the crash target.

Two backends. ``sqlite``: the conversation runs on a ``Harness`` over a fresh copy of a seeded data dir, and
recovery is ``harness resume --thread T --finish`` (the CLI command, invoked in a fresh process), then what a
user does: send the request again if nothing of it was saved, answer yes if the thread waits for it.
``postgres``: the conversation is sent to the HTTP service's worker (``service.http.Worker``: the queue,
leases, fencing) on a database made for the run; the worker dies, a new worker takes the message over when
its lease expires and finishes it through the same recovery path, and the client goes on as above.

Counted per setup (domain, backend, confirmation on or off): runs, crashes, applied twice (the change is in
the domain more than once), lost (not at all, and nobody told), unanswered (the last user message has no reply
in the transcript), unrecoverable (recovery itself failed), reply missing (a reply the user was given is not
in the transcript), and to a person: a change whose outcome the crash left unknown, which is not run again; the
customer is told it is being checked and a person gets it, split by whether it had applied.

``python -m lg_harness_lab.benchmarks.bench_chaos [--domain shop] [--backend sqlite|postgres|both] [--confirm
on|off|both] [--crashes 100] [--database-url URL]`` or ``harness [--database-url URL] bench chaos --domain shop``.

The soak (``--soak``): N processes x T threads on one data dir for M minutes, each worker sending numbered
messages to its own thread and to one thread all share; it prints messages served, failures and order
inversions (a worker's messages out of its own order in the transcript, or a reply not right after its
message).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import sqlite3
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, LiteralString

if TYPE_CHECKING:  # the harness's modules load inside the forked runs
    from langgraph.types import Durability

MODEL = "reword:clean"
SOAK_MODEL = "sim:clean"
DESIGN = "harness"
THREAD = "chaos"
LEASE_TTL = 1.0  # seconds a dead worker's message waits before another worker takes it over


@dataclass(frozen=True)
class ChaosScript:
    """A domain's changing request and how to count how often it was applied."""

    user: str
    message: str
    count_sql: LiteralString  # rows the change adds; {s} is the table's schema prefix ("" on SQLite, "shop." on Postgres)
    database: str
    domain: str = ""  # the domain spec Harness loads (default: the script's name)
    count_fn: Callable[[Path], int] | None = None  # for a change outside any database


def _library_renewals(run_dir: Path) -> int:
    from lg_harness_lab.benchmarks.outside_pack import renewals

    return len(renewals(run_dir))


SCRIPTS: dict[str, ChaosScript] = {
    "shop": ChaosScript("U001", "I want to file a complaint: the parcel for ORD-10134 arrived damaged.",
                        "SELECT COUNT(*) FROM {s}complaints WHERE user_id = 'U001'", "shop.sqlite"),
    "helpdesk": ChaosScript("E1001", "Please open a ticket: my second monitor flickers all day.",
                            "SELECT COUNT(*) FROM {s}tickets WHERE owner_id = 'E1001'", "helpdesk.sqlite"),
    # an outside domain whose changing tool appends to a file and is not idempotent: only the change ledger
    # keeps it from applying twice, and a crash between it and its settle goes to a person
    "library": ChaosScript("reader-1", "Please renew BOOK-0042", "", "", domain="lg_harness_lab.benchmarks.outside_pack:DOMAIN",
                           count_fn=_library_renewals),
}
YES = "yes"


def domain_spec(name: str) -> str:
    return SCRIPTS[name].domain or name


@dataclass(frozen=True)
class Setup:
    """One cell of the bench: a domain, a backend, whether the design asks before changing, and when a
    message's steps are saved (``Harness`` durability: exit saves a message at its end, sync every step)."""

    domain: str
    backend: str  # sqlite | postgres
    confirm: bool
    durability: Durability = "exit"

    @property
    def design(self) -> str:
        return DESIGN if self.confirm else "harness-no:confirm_changes"

    @property
    def script(self) -> ChaosScript:
        return SCRIPTS[self.domain]

    @property
    def label(self) -> str:
        return (f"{self.domain}/{self.backend}/confirm {'on' if self.confirm else 'off'}"
                + ("" if self.durability == "exit" else f"/{self.durability}"))


# ------------------------------------------------------------------------------------------ processes


def in_child(fn: Callable[[], Any], kill_after: float | None = None, timeout: float = 300.0) -> tuple[str, Any]:
    """Run ``fn`` in a forked process: ("ok", its JSON result), ("died", exit code) or ("error", message).

    ``kill_after``: SIGKILL the child after that many seconds, if it is still running.
    """
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        os.close(read)
        code = 0
        try:
            payload = json.dumps({"ok": fn()}, default=str)
        except BaseException as err:  # noqa: BLE001 - reported to the parent
            payload, code = json.dumps({"error": f"{type(err).__name__}: {err}"}), 3
        os.write(write, payload.encode())
        os.close(write)
        os._exit(code)
    os.close(write)
    started = time.monotonic()
    killed = False
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if kill_after is not None and not killed and time.monotonic() - started >= kill_after:
            os.kill(pid, signal.SIGKILL)
            killed = True
        if time.monotonic() - started > timeout:
            os.kill(pid, signal.SIGKILL)
        time.sleep(0.005)
    data = b""
    while chunk := os.read(read, 65536):
        data += chunk
    os.close(read)
    if os.WIFSIGNALED(status) or (os.WIFEXITED(status) and os.WEXITSTATUS(status) == 137) or not data:
        return "died", os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
    doc = json.loads(data)
    return ("ok", doc["ok"]) if "ok" in doc else ("error", doc["error"])


# ------------------------------------------------------------------------------------------ crash points


@dataclass(frozen=True)
class Crash:
    """Where a run dies: the k-th write of ``kind`` (before or after it), or one of the ledger's points."""

    kind: str  # checkpoint | transcript | decided | recorded | ran | random
    k: int = 0
    after: bool = False
    label: str = ""


def _classes(backend: str) -> dict[str, list[type]]:
    from lg_harness.tools.ledger import PgLedger, SqliteLedger

    if backend == "postgres":
        from lg_harness.memory.pg_stores import PgTranscriptStore
        from lg_harness.service.fencing import FencedPostgresSaver

        return {"checkpoint": [FencedPostgresSaver], "transcript": [PgTranscriptStore], "ledger": [PgLedger]}
    from langgraph.checkpoint.sqlite import SqliteSaver

    from lg_harness.memory.transcript import TranscriptStore

    return {"checkpoint": [SqliteSaver], "transcript": [TranscriptStore], "ledger": [SqliteLedger]}


_counting = threading.Lock()


def _count_writes(cls: type, names: tuple[str, ...], k: int, after: bool, count: dict[str, int]) -> None:
    for name in names:
        real = getattr(cls, name)

        def patched(self, *args, _real=real, **kwargs):
            with _counting:  # writes come from more than one thread (LangGraph writes checkpoints in the background)
                count["n"] += 1
                mine = count["n"]
            if mine == k and not after:
                os._exit(137)
            result = _real(self, *args, **kwargs)
            if mine == k and after:
                os._exit(137)
            return result

        setattr(cls, name, patched)


def _die_around(cls: type, name: str, before: bool, when: Callable[[Any], bool] = lambda result: True) -> None:
    real = getattr(cls, name)

    def patched(self, *args, **kwargs):
        if before:
            os._exit(137)
        result = real(self, *args, **kwargs)
        if when(result):
            os._exit(137)
        return result

    setattr(cls, name, patched)


def install(crash: Crash | None, backend: str) -> dict[str, dict[str, int]]:
    """Patch the stores of ``backend`` so this process dies at ``crash``; returns the write counters (a clean
    run passes None and reads how many checkpoint and transcript writes it made)."""
    classes = _classes(backend)
    counts = {"checkpoint": {"n": 0}, "transcript": {"n": 0}}
    k, after = (crash.k, crash.after) if crash is not None else (0, False)
    for cls in classes["checkpoint"]:
        _count_writes(cls, ("put", "put_writes"), k if crash and crash.kind == "checkpoint" else 0, after,
                      counts["checkpoint"])
    for cls in classes["transcript"]:
        _count_writes(cls, ("append",), k if crash and crash.kind == "transcript" else 0, after, counts["transcript"])
    for cls in classes["ledger"]:
        if crash is not None and crash.kind == "decided":  # the decision is kept, nothing of it has run
            _die_around(cls, "decide", before=False)
        if crash is not None and crash.kind == "recorded":  # pending in the ledger, the tool not yet started
            _die_around(cls, "begin", before=False, when=lambda earlier: earlier is None)
        if crash is not None and crash.kind == "ran":  # the tool returned, its settle never written
            _die_around(cls, "settle", before=True)
    return counts


def crash_points(writes: dict[str, int], confirm: bool) -> list[Crash]:
    """Every deterministic point of a clean run that made ``writes`` checkpoint and transcript writes (a
    confirmed change runs from the checkpoint, so only a change made without asking keeps a decision)."""
    points = [Crash(kind, k, after, f"{kind} write {k} {'after' if after else 'before'}")
              for kind in ("checkpoint", "transcript") for k in range(1, writes[kind] + 1) for after in (False, True)]
    kept = [] if confirm else [Crash("decided", label="after the decision was kept")]
    return points + kept + [Crash("recorded", label="between the ledger's record and the tool"),
                            Crash("ran", label="between a tool and its settle")]


# ------------------------------------------------------------------------------------------ the two backends


def _harness(run_dir: Path, setup: Setup, url: str | None = None) -> Any:
    from lg_harness.graphs.app import Harness, Settings

    return Harness(MODEL, domain=domain_spec(setup.domain), design=setup.design,
                   settings=Settings(data_dir=run_dir, database_url=url, durability=setup.durability))


def converse(run_dir: Path, setup: Setup, thread: str = THREAD) -> list[str]:
    """What the user does on the embedded harness: the request, and yes if it asks to confirm."""
    with _harness(run_dir, setup) as h:
        first = h.send(thread, setup.script.message, setup.script.user)
        replies = [first.reply]
        if first.values.get("pending_change"):
            replies.append(h.send(thread, YES, setup.script.user).reply)
    return replies


def recover_sqlite(run_dir: Path, setup: Setup) -> dict[str, Any]:
    """The README's recovery in a new process: ``harness resume --finish``, then resend or answer yes."""
    from typer.testing import CliRunner

    from lg_harness.service import cli

    replies, steps = [], []
    done = CliRunner().invoke(cli.app, ["--durability", setup.durability, "resume", "--thread", THREAD, "--finish",
                                        "--data-dir", str(run_dir),
                                        "--user", setup.script.user, "--json"])
    if done.exit_code == 0:
        replies.append(json.loads(done.stdout)["reply"])
        steps.append("finish")
    elif not any(s in done.output for s in ("no unfinished message", "waits for a human", "unknown thread")):
        raise RuntimeError(f"harness resume --finish failed: {done.output.strip()[-300:]}")
    with _harness(run_dir, setup) as h:
        replies += _go_on(h, setup, THREAD, lambda text: h.send(THREAD, text, setup.script.user).reply, steps)
        values = h.state(THREAD)["values"] if h.thread_exists(THREAD) else {}
    return {"steps": steps, "replies": replies, "to_person": bool((values.get("handoff") or {}).get("uncertain_changes"))}


def _go_on(h: Any, setup: Setup, thread: str, send: Callable[[str], str], steps: list[str]) -> list[str]:
    """After recovery, what the user does: the request again if nothing of it was saved, yes if asked."""
    replies = []
    told = h.transcripts.read(thread)
    if not any(r["role"] == "user" and r["content"] == setup.script.message for r in told):
        replies.append(send(setup.script.message))
        steps.append("resend")
    if h.thread_exists(thread) and h.state(thread)["values"].get("pending_change"):
        replies.append(send(YES))
        steps.append("yes")
    return replies


@contextmanager
def worker(url: str, run_dir: Path, setup: Setup) -> Iterator[Any]:
    """One HTTP-service worker process's runtime on ``url`` (its executor thread started)."""
    from lg_harness.service.http import ServiceSettings, Worker

    rt = Worker(ServiceSettings(data_dir=run_dir, database_url=url, chroma_url=None, domain=domain_spec(setup.domain),
                          design=setup.design, model=MODEL, lease_ttl=LEASE_TTL, threads=1,
                          api_keys={"chaos": setup.script.user}, durability=setup.durability))
    try:
        rt.start()
        yield rt
    finally:
        rt.close()


def _served(rt: Any, thread: str, text: str, user: str) -> str:
    mid = rt.submit(thread, "send", {"text": text, "user_id": user, "role": None}, None)
    return _outcome(rt, mid)


def _outcome(rt: Any, mid: int) -> str:
    row = rt.queue.wait(mid, timeout=180)
    if row["status"] != "done":
        raise RuntimeError(f"message {mid} ended {row['status']}: {row.get('error')}")
    return row["result"]["reply"]


def converse_served(url: str, run_dir: Path, setup: Setup, thread: str) -> list[str]:
    """The conversation sent to a worker of the HTTP service, on Postgres."""
    with worker(url, run_dir, setup) as rt:
        replies = [_served(rt, thread, setup.script.message, setup.script.user)]
        if rt.harness.state(thread)["values"].get("pending_change"):
            replies.append(_served(rt, thread, YES, setup.script.user))
    return replies


def recover_served(url: str, run_dir: Path, setup: Setup, thread: str) -> dict[str, Any]:
    """A new worker: it takes over the dead worker's messages once their lease expires; the client goes on."""
    replies, steps = [], []
    with worker(url, run_dir, setup) as rt:
        for row in rt.queue.thread_rows(thread):
            if row["status"] in ("queued", "running"):
                replies.append(_outcome(rt, row["id"]))
                steps.append("taken over" if row["status"] == "running" else "served")
        h = rt.harness
        replies += _go_on(h, setup, thread, lambda text: _served(rt, thread, text, setup.script.user), steps)
        values = h.state(thread)["values"] if h.thread_exists(thread) else {}
    return {"steps": steps, "replies": replies, "to_person": bool((values.get("handoff") or {}).get("uncertain_changes"))}


# ---------------------------------------------------------------------------------------------- runs


@dataclass
class Tally:
    runs: int = 0
    crashes: int = 0
    applied_twice: int = 0
    lost: int = 0
    unanswered: int = 0
    unrecoverable: int = 0
    reply_missing: int = 0  # a reply the user was given that the transcript does not hold
    # an uncertain change handed to a person (the customer told it is being checked), by what the person finds
    to_person_applied: int = 0
    to_person_not_applied: int = 0
    problems: list[str] = field(default_factory=list)

    def figures(self) -> dict[str, int]:
        return {k: getattr(self, k) for k in ("runs", "crashes", "applied_twice", "lost", "unanswered",
                                              "unrecoverable", "reply_missing", "to_person_applied",
                                              "to_person_not_applied")}


class Place:
    """Where a setup's runs live: a template data dir copied per run (SQLite), or one database per setup
    whose runs each take a thread of their own (Postgres), and how to read what a run left."""

    def __init__(self, setup: Setup, work: Path, url: str | None) -> None:
        self.setup, self.work, self.admin_url, self.url = setup, work, url, None
        self.template = work / "template"
        self.n = 0

    def open(self) -> None:
        if self.setup.backend == "postgres":
            self.url = _create_database(self.admin_url)

        def seed() -> int:  # open once: the domain's databases seeded, nothing said yet
            with _harness(self.template, self.setup, self.url):
                return 0

        status, info = in_child(seed)
        if status != "ok":
            raise RuntimeError(f"cannot seed a {self.setup.label} place: {info}")

    def close(self) -> None:
        if self.url is not None:
            assert self.admin_url is not None, "the database was created (open) through the admin URL"
            _drop_database(self.admin_url, self.url)

    def next_run(self) -> tuple[Path, str]:
        """A run's data dir and thread."""
        self.n += 1
        run_dir = self.work / f"run-{self.n}"
        if self.setup.backend == "sqlite":
            shutil.copytree(self.template, run_dir)
            return run_dir, THREAD
        run_dir.mkdir()
        return run_dir, f"{THREAD}-{self.n}"

    def applied(self, run_dir: Path) -> int:
        """How many times the change exists in the domain now (all runs' on Postgres: subtract a baseline)."""
        script = self.setup.script
        if script.count_fn is not None:
            return script.count_fn(run_dir)
        if self.url is not None:
            import psycopg
            from psycopg import sql

            schema = sql.Composed([sql.Identifier(self.setup.domain), sql.SQL(".")])  # {s}: the "shop". prefix
            with psycopg.connect(self.url) as conn:
                row = conn.execute(sql.SQL(script.count_sql).format(s=schema)).fetchone()
            if row is None:
                raise RuntimeError("COUNT(*) returned no row")
            return int(row[0])
        with sqlite3.connect(run_dir / script.database) as conn:
            return int(conn.execute(script.count_sql.format(s="")).fetchone()[0])

    def transcript(self, run_dir: Path, thread: str) -> list[tuple[str, str]]:
        if self.url is not None:
            import psycopg

            with psycopg.connect(self.url) as conn:
                return [(r[0], r[1]) for r in conn.execute("SELECT role, content FROM harness.transcript WHERE "
                                                           "thread_id = %s ORDER BY seq", (thread,))]
        path = run_dir / "transcripts.sqlite"
        if not path.exists():
            return []
        with sqlite3.connect(path) as conn:
            return [(r[0], r[1]) for r in conn.execute("SELECT role, content FROM transcript WHERE thread_id = ? "
                                                       "ORDER BY seq", (thread,))]

    def play(self, run_dir: Path, thread: str) -> list[str]:
        if self.url is not None:
            return converse_served(self.url, run_dir, self.setup, thread)
        return converse(run_dir, self.setup, thread)

    def recover(self, run_dir: Path, thread: str) -> dict[str, Any]:
        if self.url is not None:
            return recover_served(self.url, run_dir, self.setup, thread)
        return recover_sqlite(run_dir, self.setup)


def _create_database(admin_url: str | None) -> str:
    import psycopg

    if not admin_url:
        raise RuntimeError("the postgres backend needs a database URL whose role may create databases "
                           "(--database-url, HARNESS_DATABASE_URL or HARNESS_TEST_DATABASE_URL)")
    name = f"harness_chaos_{uuid.uuid4().hex[:10]}"
    from psycopg import sql

    with psycopg.connect(admin_url, autocommit=True) as admin:
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    return f"{admin_url.rpartition('/')[0]}/{name}"


def _drop_database(admin_url: str, url: str) -> None:
    import psycopg
    from psycopg import sql

    with psycopg.connect(admin_url, autocommit=True) as admin:
        admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(url.rpartition('/')[2])))


def one_run(place: Place, tally: Tally, crash: Crash | None = None, kill_after: float | None = None) -> None:
    run_dir, thread = place.next_run()
    baseline = place.applied(run_dir)
    tally.runs += 1
    label = crash.label if crash is not None else f"random kill at {kill_after:.2f} s"

    def play() -> list[str]:
        install(crash, place.setup.backend)
        return place.play(run_dir, thread)

    outcome, detail = in_child(play, kill_after=kill_after)
    given = detail if outcome == "ok" else []
    if outcome == "died":
        tally.crashes += 1
    elif outcome == "error":
        tally.problems.append(f"{label}: the conversation failed without a crash: {detail}")
    recovered, info = in_child(lambda: place.recover(run_dir, thread))
    if recovered != "ok":
        tally.unrecoverable += 1
        tally.problems.append(f"{label}: recovery failed: {info}")
    else:
        given = [*given, *info["replies"]]
    _count(place, tally, label, run_dir, thread, baseline, given, recovered == "ok" and info["to_person"])
    shutil.rmtree(run_dir, ignore_errors=True)


def _count(place: Place, tally: Tally, label: str, run_dir: Path, thread: str, baseline: int, given: list[str],
           to_person: bool) -> None:
    count = place.applied(run_dir) - baseline
    if count > 1:
        tally.applied_twice += 1
        tally.problems.append(f"{label}: applied {count} times")
    elif to_person:  # not lost and not silent: a person checks whether it happened (and finds count)
        if count:
            tally.to_person_applied += 1
        else:
            tally.to_person_not_applied += 1
    elif count == 0:
        tally.lost += 1
        tally.problems.append(f"{label}: never applied")
    told = place.transcript(run_dir, thread)
    if not told or told[-1][0] != "assistant":
        tally.unanswered += 1
        tally.problems.append(f"{label}: unanswered")
    replies = {content for role, content in told if role == "assistant"}
    if missing := [r for r in given if r not in replies]:
        tally.reply_missing += 1
        tally.problems.append(f"{label}: a reply the user got is not in the transcript: {missing[0][:80]!r}")


def warm(domain: str) -> None:
    """Import and load in the parent what every child needs (modules, the embedder, the domain's intent
    prototypes), so each forked run pays only for its own work. Nothing that starts threads or opens files."""
    import logging

    from lg_harness.core.domain import load_domain
    from lg_harness.graphs.app import Harness  # noqa: F401
    from lg_harness.llm.embeddings import count_tokens, embed
    from lg_harness.nodes.classify import classify
    from lg_harness.service import cli  # noqa: F401
    from lg_harness.service.http import Worker  # noqa: F401

    embed(["warm up"])
    count_tokens("warm up")
    classify(load_domain(domain_spec(domain)), SCRIPTS[domain].message)
    logging.getLogger("harness").setLevel(logging.ERROR)  # each run's tool lines would drown the figures


def run_setup(setup: Setup, crashes: int = 100, seed: int = 7, url: str | None = None,
              log: Callable[[str], None] = print, points: list[Crash] | None = None,
              max_runs: int | None = None) -> dict[str, Any]:
    """Crash at every write of a clean conversation and at the ledger's points (or only at ``points``), then
    at random moments until ``crashes`` runs have died (at most ``max_runs`` runs)."""
    warm(setup.domain)
    work = Path(tempfile.mkdtemp(prefix=f"chaos-{setup.domain}-{setup.backend}-"))
    place = Place(setup, work, url)
    try:
        place.open()
        writes, seconds = _clean_run(place)
        log(f"{setup.label}: a clean conversation makes {writes['checkpoint']} checkpoint and {writes['transcript']} "
            f"transcript writes in {seconds:.1f} s; crashing at each, then at random until {crashes} crashes")
        tally = Tally()
        for crash in points if points is not None else crash_points(writes, setup.confirm):
            one_run(place, tally, crash=crash)
        rng = random.Random(seed)
        limit = max_runs if max_runs is not None else tally.runs + 3 * crashes
        while points is None and tally.crashes < crashes and tally.runs < limit:
            # the forked child spends part of its time opening its stores: kill anywhere from there on
            one_run(place, tally, kill_after=rng.uniform(0.0, seconds))
        return {"setup": setup.label, "domain": setup.domain, "backend": setup.backend, "confirm": setup.confirm,
                "writes_per_conversation": writes, **tally.figures(), "problems": tally.problems}
    finally:
        place.close()
        shutil.rmtree(work, ignore_errors=True)


def _clean_run(place: Place) -> tuple[dict[str, int], float]:
    """A run without a crash: how many writes the conversation makes, and how long it takes."""
    run_dir, thread = place.next_run()
    baseline = place.applied(run_dir)

    def counted() -> dict[str, Any]:
        counts = install(None, place.setup.backend)
        started = time.monotonic()
        replies = place.play(run_dir, thread)
        return {"writes": {k: v["n"] for k, v in counts.items()}, "seconds": time.monotonic() - started,
                "replies": replies}

    status, info = in_child(counted)
    if status != "ok" or place.applied(run_dir) - baseline != 1:
        raise RuntimeError(f"the clean {place.setup.label} conversation did not apply its change once: {info}")
    shutil.rmtree(run_dir, ignore_errors=True)
    return info["writes"], info["seconds"]


# ---------------------------------------------------------------------------------------------- soak


def soak(processes: int = 4, threads: int = 3, minutes: float = 1.0, domain: str = "shop",
         log: Callable[[str], None] = print) -> dict[str, Any]:
    """N processes x T worker threads on one data dir for M minutes; served, failures, order inversions."""
    data_dir = Path(tempfile.mkdtemp(prefix="soak-"))
    user = SCRIPTS[domain].user
    warm(domain)

    def worker_process(p: int) -> dict[str, Any]:
        import threading

        from lg_harness.graphs.app import Harness, Settings

        served, failures = [0], []
        with Harness(SOAK_MODEL, domain=domain_spec(domain), design=DESIGN,
                     settings=Settings(data_dir=data_dir)) as h:
            deadline = time.time() + minutes * 60

            def work(w: int) -> None:
                n = 0
                while time.time() < deadline:
                    for thread in (f"soak-p{p}-w{w}", "soak-shared"):
                        try:
                            h.send(thread, f"hello, message p{p}w{w}#{n}", user)
                            served[0] += 1
                        except Exception as err:  # noqa: BLE001 - counted
                            failures.append(f"{type(err).__name__}: {err} [raised at {origin(err)}]")
                    n += 1

            pool = [threading.Thread(target=work, args=(w,)) for w in range(threads)]
            for t in pool:
                t.start()
            for t in pool:
                t.join()
        return {"served": served[0], "failures": failures[:5], "failed": len(failures)}

    pids = []
    results_dir = data_dir / "soak-results"
    results_dir.mkdir()
    for p in range(processes):
        pid = os.fork()
        if pid == 0:
            try:
                doc = worker_process(p)
            except BaseException as err:  # noqa: BLE001 - reported
                doc = {"served": 0, "failed": 1, "failures": [f"{type(err).__name__}: {err}"]}
            (results_dir / f"{p}.json").write_text(json.dumps(doc))
            os._exit(0)
        pids.append(pid)
    for pid in pids:
        os.waitpid(pid, 0)
    docs = [json.loads(f.read_text()) for f in sorted(results_dir.glob("*.json"))]
    inversions = order_inversions(data_dir / "transcripts.sqlite")
    out = {"processes": processes, "threads": threads, "minutes": minutes,
           "messages_served": sum(d["served"] for d in docs), "failures": sum(d["failed"] for d in docs),
           "order_inversions": inversions, "failure_examples": [f for d in docs for f in d["failures"]][:5]}
    shutil.rmtree(data_dir, ignore_errors=True)
    return out


def origin(err: BaseException) -> str:
    """Where the root cause of ``err`` was raised in the harness's own code (file:line), to name the store."""
    import traceback

    while (inner := err.__cause__ or err.__context__) is not None:
        err = inner
    stack = traceback.extract_tb(err.__traceback__)
    own = [f for f in stack if "site-packages" not in f.filename]  # the harness's frames, not a library's
    where = [f"{Path(f.filename).name}:{f.lineno} {f.name}" for f in {id(f): f for f in (own[-1:] + stack[-1:])}.values()]
    return " <- ".join(reversed(where)) or "unknown"


def order_inversions(path: Path) -> int:
    """Per thread: a submitter's messages out of its own order, or a user message not answered before the next."""
    import re

    with sqlite3.connect(path) as conn:
        rows = conn.execute("SELECT thread_id, role, content FROM transcript ORDER BY thread_id, seq").fetchall()
    by_thread: dict[str, list[tuple[str, str]]] = {}
    for thread, role, content in rows:
        by_thread.setdefault(thread, []).append((role, content))
    inversions = 0
    for entries in by_thread.values():
        last: dict[str, int] = {}
        for i, (role, content) in enumerate(entries):
            if role != "user":
                continue
            if i + 1 >= len(entries) or entries[i + 1][0] != "assistant":
                inversions += 1  # another message ran before this one was answered
            if m := re.search(r"(p\d+w\d+)#(\d+)", content):
                who, n = m[1], int(m[2])
                if n <= last.get(who, -1):
                    inversions += 1
                last[who] = n
    return inversions




# ---------------------------------------------------------------------------------------------- entry

COLUMNS = (("runs", "runs"), ("crashes", "crashes"), ("applied_twice", "applied twice"), ("lost", "lost"),
           ("unanswered", "unanswered"), ("unrecoverable", "unrecoverable"), ("reply_missing", "reply missing"))


def setups(domain: str | None, backend: str, confirm: str, durability: str = "exit") -> list[Setup]:
    """The cells to run; ``durability`` is exit, sync or both."""
    domains = [domain] if domain else ["shop", "helpdesk"]
    backends = ["sqlite", "postgres"] if backend == "both" else [backend]
    confirms = [True, False] if confirm == "both" else [confirm == "on"]
    modes: list[Durability] = ["exit", "sync"] if durability == "both" else [durability]  # type: ignore[list-item]
    return [Setup(d, b, c, m) for d in domains for b in backends for c in confirms for m in modes
            if not (b == "postgres" and SCRIPTS[d].count_fn is not None)]  # an outside change lives in a file


def run_bench_chaos(domain: str | None = None, crashes: int = 100, backend: str | None = None, confirm: str = "both",
                    database_url: str | None = None, soak_minutes: float = 0.0, log: Callable[[str], None] = print,
                    durability: str = "exit", **_: Any) -> dict[str, Any]:
    url = database_url or os.environ.get("HARNESS_DATABASE_URL") or os.environ.get("HARNESS_TEST_DATABASE_URL")
    backend = backend or ("both" if url else "sqlite")
    figures: dict[str, Any] = {"model": MODEL, "setups": [run_setup(s, crashes, url=url, log=log)
                                                          for s in setups(domain, backend, confirm, durability)]}
    if soak_minutes > 0:
        figures["soak"] = soak(minutes=soak_minutes, domain=domain or "shop", log=log)
    return figures


def print_table(figures: dict[str, Any]) -> None:
    print(f"{'setup':<32} " + " ".join(f"{title:>13}" for _, title in COLUMNS) + f" {'to a person (applied/not)':>26}")
    for d in figures["setups"]:
        person = f"{d['to_person_applied']}/{d['to_person_not_applied']}"
        print(f"{d['setup']:<32} " + " ".join(f"{d[key]:>13}" for key, _ in COLUMNS) + f" {person:>26}")
        for p in d["problems"][:10]:
            print(f"  {p}")


def main(domain: str | None = None, argv: list[str] | None = None, database_url: str | None = None,
         durability: str = "exit", **_: Any) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--domain", default=domain, choices=sorted(SCRIPTS))
    parser.add_argument("--backend", choices=("sqlite", "postgres", "both"), default=None,
                        help="default: both with a database URL, else sqlite")
    parser.add_argument("--confirm", choices=("on", "off", "both"), default="both")
    parser.add_argument("--durability", choices=("exit", "sync", "both"), default=durability,
                        help="when a message's steps are saved (exit: at its end, the default; sync: every step)")
    parser.add_argument("--crashes", type=int, default=100, help="crashed runs per setup, at least")
    parser.add_argument("--database-url", default=database_url, help="a Postgres whose role may create databases")
    parser.add_argument("--json", dest="json_out", metavar="FILE", help="also write the figures to FILE")
    parser.add_argument("--soak", type=float, default=0.0, help="minutes of soak after the chaos runs")
    parser.add_argument("--processes", type=int, default=4)
    parser.add_argument("--threads", type=int, default=3)
    parser.add_argument("--soak-only", action="store_true")
    args = parser.parse_args(argv if argv is not None else [])
    if args.soak_only:
        print(json.dumps(soak(args.processes, args.threads, args.soak or 1.0, args.domain or "shop"), indent=1))
        return
    figures = run_bench_chaos(args.domain, args.crashes, args.backend, args.confirm, args.database_url,
                              log=lambda s: print(s, file=sys.stderr, flush=True), durability=args.durability)
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(figures, indent=1))
    print_table(figures)
    if args.soak:
        s = soak(args.processes, args.threads, args.soak, args.domain or "shop")
        print(f"soak: {s['processes']} processes x {s['threads']} threads, {s['minutes']} min: "
              f"{s['messages_served']} messages served, {s['failures']} failures, {s['order_inversions']} order inversions")


if __name__ == "__main__":
    main(argv=sys.argv[1:])
