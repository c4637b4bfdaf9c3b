"""Chaos: kill the process at every checkpoint write and at random moments of a changing conversation,
recover the way the README says, and count what went wrong. Plus a soak of many processes on one data dir.

Each run is a fresh copy of a seeded data dir and a conversation that changes the domain once (the request,
and "yes" when the design asks to confirm). A forked child plays it and dies: ``os._exit`` just before or just
after the k-th checkpoint write (every k of a clean run), or SIGKILL from the parent at a random moment.
Then, in fresh processes as a user would: ``Harness.finish`` (``harness resume --thread T --finish``); if
nothing was pending and the transcript does not hold the request, the request is sent again; if the thread
waits for a confirmation, the user answers yes. The model is the simulated one, which issues fresh tool-call
ids on every call (a replay never repeats an id).

Besides the checkpoint writes, one run dies between a changing tool and its settle in the change ledger
(``tools.ledger``). The domains are the shop and the helpdesk (changes through their backends'
``changes_once``) and ``library``, an outside pack (``benchmarks/outside_pack.py``) whose changing tool
appends to a file and is not idempotent.

Counted per domain: runs, crashes, applied twice (the change is in the backend more than once), lost (not
at all, and nobody told), unanswered (the last user message has no reply in the transcript), unrecoverable
(recovery itself failed), and to a person: a change whose outcome the crash left unknown, which is not run
again; the customer is told it is being checked and a person gets it, split by whether it had applied. ``python -m lg_harness.benchmarks.bench_chaos [--domain shop] [--random 60] [--soak MINUTES]`` or
``harness bench chaos --domain shop``.

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
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

MODEL = "sim:clean"
DESIGN = "harness"
THREAD = "chaos"


@dataclass(frozen=True)
class ChaosScript:
    """A domain's changing request and how to count how often it was applied."""

    user: str
    message: str
    count_sql: str  # rows the change adds, in the domain's database ("" : count_fn counts instead)
    database: str
    domain: str = ""  # the domain spec Harness loads (default: the script's name)
    count_fn: Callable[[Path], int] | None = None  # for a change outside any database


def _library_renewals(run_dir: Path) -> int:
    from lg_harness.benchmarks.outside_pack import renewals

    return len(renewals(run_dir))


SCRIPTS: dict[str, ChaosScript] = {
    "shop": ChaosScript("U001", "I want to file a complaint: the parcel for ORD-10134 arrived damaged.",
                        "SELECT COUNT(*) FROM complaints WHERE user_id = 'U001'", "shop.sqlite"),
    "helpdesk": ChaosScript("E1001", "Please open a ticket: my second monitor flickers all day.",
                            "SELECT COUNT(*) FROM tickets WHERE owner_id = 'E1001'", "helpdesk.sqlite"),
    # an outside domain whose changing tool appends to a file and is not idempotent: only the change ledger
    # keeps it from applying twice, and a crash between it and its settle goes to a person
    "library": ChaosScript("reader-1", "Please renew BOOK-0042", "", "", domain="lg_harness.benchmarks.outside_pack:DOMAIN",
                           count_fn=_library_renewals),
}


def domain_spec(name: str) -> str:
    return SCRIPTS[name].domain or name
YES = "yes"


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


def crash_at_write(k: int, after: bool) -> Callable[[], int]:
    """Patch the SQLite saver so the process dies at its k-th write (``put`` or ``put_writes``), just before
    it or just after it committed. Returns a counter reader (for the clean run, k = 0)."""
    from langgraph.checkpoint.sqlite import SqliteSaver

    count = {"n": 0}
    for name in ("put", "put_writes"):
        real = getattr(SqliteSaver, name)

        def patched(self, *args, _real=real, **kwargs):
            count["n"] += 1
            if count["n"] == k and not after:
                os._exit(137)
            result = _real(self, *args, **kwargs)
            if count["n"] == k and after:
                os._exit(137)
            return result

        setattr(SqliteSaver, name, patched)
    return lambda: count["n"]


def crash_at_settle() -> None:
    """Patch the change ledger so the process dies after a changing tool returned, before its settle."""
    from lg_harness.tools.ledger import SqliteLedger

    def died(self, key, result):
        os._exit(137)

    SqliteLedger.settle = died


def converse(data_dir: Path, domain: str, script: ChaosScript) -> list[str]:
    """What the user does: the request, and yes if the harness asks to confirm."""
    from lg_harness.graphs.app import Harness

    with Harness(data_dir, DESIGN, MODEL, domain=domain_spec(domain)) as h:
        replies = [h.send(THREAD, script.message, script.user)["reply"]]
        if h.last_values.get("pending_change"):
            replies.append(h.send(THREAD, YES, script.user)["reply"])
    return replies


def recover(data_dir: Path, domain: str, script: ChaosScript) -> dict[str, Any]:
    """The README's recovery, as a new process does it: finish, resend what was never recorded, answer."""
    from lg_harness.graphs.app import Harness
    from lg_harness.tools.errors import HarnessError

    steps = []
    with Harness(data_dir, DESIGN, MODEL, domain=domain_spec(domain)) as h:
        try:
            h.finish(THREAD)
            steps.append("finish")
        except HarnessError as err:
            if "no unfinished message" not in str(err) and "waits for a human" not in str(err) \
                    and "unknown thread" not in str(err):
                raise
        told = h.transcripts.read(THREAD)
        if not any(r["role"] == "user" and r["content"] == script.message for r in told):
            h.send(THREAD, script.message, script.user)
            steps.append("resend")
        values = h.state(THREAD)["values"] if h.thread_exists(THREAD) else {}
        if values.get("pending_change"):
            h.send(THREAD, YES, script.user)
            steps.append("yes")
            values = h.state(THREAD)["values"]
        checked = bool((values.get("handoff") or {}).get("uncertain_changes"))
    return {"steps": steps, "to_person": checked}


# ---------------------------------------------------------------------------------------------- runs


@dataclass
class Tally:
    runs: int = 0
    crashes: int = 0
    applied_twice: int = 0
    lost: int = 0
    unanswered: int = 0
    unrecoverable: int = 0
    # an uncertain change handed to a person (the customer told it is being checked), by what the person finds
    to_person_applied: int = 0
    to_person_not_applied: int = 0
    problems: list[str] = field(default_factory=list)

    def figures(self) -> dict[str, int]:
        return {k: getattr(self, k) for k in ("runs", "crashes", "applied_twice", "lost", "unanswered",
                                              "unrecoverable", "to_person_applied", "to_person_not_applied")}


def applied(run_dir: Path, script: ChaosScript, baseline: int) -> int:
    if script.count_fn is not None:
        return script.count_fn(run_dir) - baseline
    with sqlite3.connect(run_dir / script.database) as conn:
        return int(conn.execute(script.count_sql).fetchone()[0]) - baseline


def unanswered(run_dir: Path) -> bool:
    """The thread's last user message has no reply after it (or the request never reached the transcript)."""
    path = run_dir / "transcripts.sqlite"
    if not path.exists():
        return True
    with sqlite3.connect(path) as conn:
        roles = [r[0] for r in conn.execute("SELECT role FROM transcript WHERE thread_id = ? ORDER BY seq", (THREAD,))]
    return not roles or roles[-1] != "assistant"


def one_run(template: Path, work: Path, domain: str, script: ChaosScript, baseline: int, tally: Tally,
            label: str, crash: tuple[int, bool] | None = None, kill_after: float | None = None,
            at_settle: bool = False) -> None:
    run_dir = work / f"run-{tally.runs}"
    shutil.copytree(template, run_dir)
    tally.runs += 1

    def play() -> list[str]:
        if crash is not None:
            crash_at_write(*crash)
        if at_settle:
            crash_at_settle()
        return converse(run_dir, domain, script)

    outcome, detail = in_child(play, kill_after=kill_after)
    if outcome == "died":
        tally.crashes += 1
    elif outcome == "error":
        tally.problems.append(f"{label}: the conversation failed without a crash: {detail}")
    recovered, info = in_child(lambda: recover(run_dir, domain, script))
    if recovered != "ok":
        tally.unrecoverable += 1
        tally.problems.append(f"{label}: recovery failed: {info}")
    to_person = recovered == "ok" and info["to_person"]
    count = applied(run_dir, script, baseline)
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
    if unanswered(run_dir):
        tally.unanswered += 1
        tally.problems.append(f"{label}: unanswered")
    shutil.rmtree(run_dir, ignore_errors=True)


def warm(domain: str) -> None:
    """Import and load in the parent what every child needs (modules, the embedder, the domain's intent
    prototypes), so each forked run pays only for its own work. Nothing that starts threads or opens files."""
    from lg_harness.core.domain import load_domain
    from lg_harness.graphs.app import Harness  # noqa: F401
    from lg_harness.llm.embeddings import count_tokens, embed
    from lg_harness.nodes.classify import classify

    embed(["warm up"])
    count_tokens("warm up")
    classify(load_domain(domain_spec(domain)), SCRIPTS[domain].message)


def run_domain(domain: str, random_kills: int = 60, seed: int = 7, log: Callable[[str], None] = print,
               points: list[int] | None = None) -> dict[str, Any]:
    """Crash at every checkpoint write of a clean conversation (or only at ``points``), then at random."""
    script = SCRIPTS[domain]
    warm(domain)
    work = Path(tempfile.mkdtemp(prefix=f"chaos-{domain}-"))
    try:
        template = work / "template"

        def seed_dir() -> int:  # open once: the domain's databases seeded, nothing said yet
            from lg_harness.graphs.app import Harness

            with Harness(template, DESIGN, MODEL, domain=domain_spec(domain)):
                pass
            return 0

        status, info = in_child(seed_dir)
        if status != "ok":
            raise RuntimeError(f"cannot seed a {domain} data dir: {info}")
        baseline = applied(template, script, 0)

        # A clean run: how many checkpoint writes the conversation makes, and how long it takes.
        clean = work / "clean"
        shutil.copytree(template, clean)

        def counted() -> dict[str, Any]:
            writes = crash_at_write(0, False)
            started = time.monotonic()
            replies = converse(clean, domain, script)
            return {"writes": writes(), "seconds": time.monotonic() - started, "replies": replies}

        status, info = in_child(counted)
        if status != "ok" or applied(clean, script, baseline) != 1:
            raise RuntimeError(f"the clean {domain} conversation did not apply its change once: {info}")
        writes, seconds = info["writes"], info["seconds"]
        log(f"{domain}: clean conversation makes {writes} checkpoint writes in {seconds:.1f} s; crashing at each, "
            f"before and after it commits, then {random_kills} random kills")
        tally = Tally()
        for k in points if points is not None else range(1, writes + 1):
            for after in (False, True):
                one_run(template, work, domain, script, baseline, tally, f"write {k} {'after' if after else 'before'}",
                        crash=(k, after))
        # between a changing tool and its settle in the change ledger (the crash a ledger exists for)
        one_run(template, work, domain, script, baseline, tally, "between a tool and its settle", at_settle=True)
        rng = random.Random(seed)
        for i in range(random_kills):
            # the forked child spends part of its time opening the data dir: kill anywhere from there on
            one_run(template, work, domain, script, baseline, tally, f"random kill {i}",
                    kill_after=rng.uniform(0.0, seconds))
        return {"domain": domain, "writes_per_conversation": writes, **tally.figures(), "problems": tally.problems}
    finally:
        shutil.rmtree(work, ignore_errors=True)


# ---------------------------------------------------------------------------------------------- soak


def soak(processes: int = 4, threads: int = 3, minutes: float = 1.0, domain: str = "shop",
         log: Callable[[str], None] = print) -> dict[str, Any]:
    """N processes x T worker threads on one data dir for M minutes; served, failures, order inversions."""
    data_dir = Path(tempfile.mkdtemp(prefix="soak-"))
    user = SCRIPTS[domain].user
    warm(domain)

    def worker_process(p: int) -> dict[str, Any]:
        import threading

        from lg_harness.graphs.app import Harness

        served, failures = [0], []
        with Harness(data_dir, DESIGN, MODEL, domain=domain_spec(domain)) as h:
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


def run_bench_chaos(domain: str | None = None, random_kills: int = 60, soak_minutes: float = 0.0,
                    log: Callable[[str], None] = print) -> dict[str, Any]:
    domains = [domain] if domain else list(SCRIPTS)
    figures: dict[str, Any] = {"model": MODEL, "design": DESIGN,
                               "domains": [run_domain(d, random_kills, log=log) for d in domains]}
    if soak_minutes > 0:
        figures["soak"] = soak(minutes=soak_minutes, domain=domains[0], log=log)
    return figures


def main(domain: str | None = None, argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--domain", default=domain, choices=sorted(SCRIPTS))
    parser.add_argument("--random", type=int, default=60, help="random-moment kills per domain")
    parser.add_argument("--soak", type=float, default=0.0, help="minutes of soak after the chaos runs")
    parser.add_argument("--processes", type=int, default=4)
    parser.add_argument("--threads", type=int, default=3)
    parser.add_argument("--soak-only", action="store_true")
    args = parser.parse_args(argv if argv is not None else [])
    if args.soak_only:
        print(json.dumps(soak(args.processes, args.threads, args.soak or 1.0, args.domain or "shop"), indent=1))
        return
    figures = run_bench_chaos(args.domain, args.random, log=lambda s: print(s, file=sys.stderr))
    print(f"{'domain':<10} {'runs':>5} {'crashes':>8} {'applied twice':>14} {'lost':>5} {'unanswered':>11} "
          f"{'unrecoverable':>14} {'to a person (applied/not)':>26}")
    for d in figures["domains"]:
        person = f"{d['to_person_applied']}/{d['to_person_not_applied']}"
        print(f"{d['domain']:<10} {d['runs']:>5} {d['crashes']:>8} {d['applied_twice']:>14} {d['lost']:>5} "
              f"{d['unanswered']:>11} {d['unrecoverable']:>14} {person:>26}")
        for p in d["problems"][:10]:
            print(f"  {p}")
    if args.soak:
        s = soak(args.processes, args.threads, args.soak, args.domain or "shop")
        print(f"soak: {s['processes']} processes x {s['threads']} threads, {s['minutes']} min: "
              f"{s['messages_served']} messages served, {s['failures']} failures, {s['order_inversions']} order inversions")


if __name__ == "__main__":
    main(argv=sys.argv[1:])
