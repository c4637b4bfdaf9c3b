"""``harness serve``: the harness as an HTTP service (FastAPI on uvicorn), one or many worker processes.

Every message goes through the per-thread queue (``service.leases``): the request adds a row, whichever
worker's executor holds the thread's lease serves it, and the request waits for the row's outcome (or streams
its node events as server-sent events). So several workers behind one port, or several machines on one
Postgres, serve each thread one message at a time in arrival order, and a message whose worker dies is
finished by another when the lease expires.

Settings come from the environment (``harness serve`` sets them for its workers): ``HARNESS_DATA_DIR``,
``HARNESS_DATABASE_URL``, ``HARNESS_CHROMA_URL``, ``HARNESS_DOMAIN``, ``HARNESS_DESIGN``, ``HARNESS_MODEL``,
``HARNESS_LEASE_TTL`` (seconds, default 30), ``HARNESS_SERVE_THREADS`` (messages one worker runs at once,
default 2), ``HARNESS_BUSY_POLICY`` (``enqueue`` | ``reject`` | ``interrupt``), ``HARNESS_DURABILITY``
(``sync`` | ``exit`` | ``async``: when a message's steps are saved, ``graphs.app.Harness``).

Authentication (one of them is required): ``HARNESS_API_KEYS`` maps keys to users, ``key=U001,key2=U002``,
sent as ``Authorization: Bearer <key>``. Or ``HARNESS_TRUSTED_USER_HEADER`` names a header a proxy in front sets
to the authenticated user id, believed only on connections from ``HARNESS_TRUSTED_PROXIES``. The desk
(handoffs, every thread, the web desk at ``/``) signs in with keys of its own, ``HARNESS_DESK_KEYS=key=alice``,
or a header believed only from configured proxies (``service.desk.auth``).
The user never comes from the request body, and no header a client sets makes it the desk.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
import threading
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, get_args

from fastapi import Request
from langgraph.types import Durability

from lg_harness.core.domain import default_domain
from lg_harness.errors import HarnessError, RunError
from lg_harness.graphs.model_health import ModelUnavailable
from lg_harness.graphs.result import SendResult
from lg_harness.service import http_guard
from lg_harness.service.desk.auth import AGENT
from lg_harness.service.http_errors import error_body, error_response
from lg_harness.service.http_guard import unknown_thread
from lg_harness.service.leases import POLICIES, Claim, ThreadBusy, ThreadQueue
from lg_harness.service.thread_names import public_id, shadow_id

RESULT_STATES = ("done", "failed", "cancelled", "abandoned")
UNAVAILABLE = "model_unavailable"  # marks a failed message whose model never answered


def failure_status(row: dict[str, Any]) -> int:
    """The HTTP status of a message that did not finish: 409 cancelled, 503 when the model could not be
    reached (retry later), else 422 (the request itself could not be served)."""
    if row.get("status") == "cancelled":
        return 409
    result = row.get("result")
    return 503 if isinstance(result, dict) and result.get(UNAVAILABLE) else 422


def failure_code(row: dict[str, Any]) -> str:
    """The error code of a message that did not finish (``service.http_errors``), as ``failure_status``."""
    return {409: "cancelled", 503: "model_unavailable"}.get(failure_status(row), "message_failed")


@dataclass
class ServiceSettings:
    data_dir: Path
    database_url: str | None
    chroma_url: str | None
    domain: str = "shop"
    design: str = "harness"
    model: str = "sim"
    lease_ttl: float = 30.0
    threads: int = 2
    policy: str = "enqueue"
    api_keys: dict[str, str] = field(default_factory=dict)
    user_header: str | None = None
    desk_keys: dict[str, str] = field(default_factory=dict)  # key -> the human agent's name
    desk_header: str | None = None
    trusted_proxies: tuple[Any, ...] = ()  # ipaddress networks the proxy headers are believed from
    desk_supervisors: frozenset[str] = frozenset()  # agents who may release a thread another agent holds
    ops_keys: dict[str, str] = field(default_factory=dict)  # keys that open only /metrics and /readyz
    max_body_bytes: int = http_guard.DEFAULT_MAX_BODY  # larger request bodies are refused before they are read
    durability: str = "exit"  # when a message's steps are saved (Harness durability)

    @classmethod
    def from_env(cls) -> ServiceSettings:
        from lg_harness.service.desk.auth import desk_settings, parse_keys

        env = os.environ
        keys = parse_keys("HARNESS_API_KEYS", env.get("HARNESS_API_KEYS", ""))
        settings = cls(data_dir=Path(env.get("HARNESS_DATA_DIR") or ".harness"),
                       database_url=env.get("HARNESS_DATABASE_URL") or None,
                       chroma_url=env.get("HARNESS_CHROMA_URL") or None, domain=env.get("HARNESS_DOMAIN") or default_domain()[0],
                       design=env.get("HARNESS_DESIGN") or "harness", model=env.get("HARNESS_MODEL") or "sim",
                       lease_ttl=float(env.get("HARNESS_LEASE_TTL") or 30), threads=int(env.get("HARNESS_SERVE_THREADS") or 2),
                       policy=env.get("HARNESS_BUSY_POLICY") or "enqueue", api_keys=keys,
                       durability=env.get("HARNESS_DURABILITY") or "exit",
                       max_body_bytes=_positive_int("HARNESS_MAX_BODY_BYTES", env.get("HARNESS_MAX_BODY_BYTES"),
                                                    http_guard.DEFAULT_MAX_BODY),
                       user_header=env.get("HARNESS_TRUSTED_USER_HEADER") or None, **desk_settings(env))
        settings.check()
        return settings

    def check(self) -> None:
        if not self.api_keys and not self.user_header and not self.desk_keys:
            raise HarnessError("harness serve needs authentication: set HARNESS_API_KEYS=key=user_id[,...] or "
                               "HARNESS_TRUSTED_USER_HEADER=<header your proxy sets to the user id>")
        for name, header in (("HARNESS_TRUSTED_USER_HEADER", self.user_header),
                             ("HARNESS_DESK_HEADER", self.desk_header)):
            if header and not self.trusted_proxies:
                raise HarnessError(f"{name} is believed only from the proxy that sets it: set "
                                   "HARNESS_TRUSTED_PROXIES=<its address> too (127.0.0.1 for a proxy on this host)")
        if self.policy not in POLICIES:
            raise HarnessError(f"HARNESS_BUSY_POLICY must be one of {', '.join(POLICIES)}, got '{self.policy}'")
        if self.durability not in get_args(Durability):
            raise HarnessError(f"HARNESS_DURABILITY must be one of {', '.join(get_args(Durability))}, got "
                               f"'{self.durability}'")


def _positive_int(name: str, raw: str | None, default: int) -> int:
    if not raw:
        return default
    if not raw.strip().isdigit() or int(raw) <= 0:
        raise HarnessError(f"{name} is a number of bytes, e.g. {default}; got '{raw}'")
    return int(raw)


class Metrics:
    """Counters for ``/metrics`` in Prometheus' text format (per worker process)."""

    BUCKETS = (0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.served: dict[str, int] = {}
        self.recovered = 0
        self.latency_counts = [0] * (len(self.BUCKETS) + 1)
        self.latency_sum = 0.0
        self.requests: dict[str, int] = {}

    def message(self, status: str, seconds: float, recovered: bool) -> None:
        with self.lock:
            self.served[status] = self.served.get(status, 0) + 1
            self.recovered += int(recovered)
            self.latency_sum += seconds
            index = next((i for i, b in enumerate(self.BUCKETS) if seconds <= b), len(self.BUCKETS))
            self.latency_counts[index] += 1

    def request(self, route: str) -> None:
        with self.lock:
            self.requests[route] = self.requests.get(route, 0) + 1

    def text(self, depth: dict[str, int], worker: str) -> str:
        lines = ["# HELP harness_messages_served_total Messages this worker served, by outcome.",
                 "# TYPE harness_messages_served_total counter"]
        with self.lock:
            for status, n in sorted(self.served.items()):
                lines.append(f'harness_messages_served_total{{worker="{worker}",status="{status}"}} {n}')
            lines += ["# HELP harness_messages_recovered_total Messages this worker finished after another's lease "
                      "expired.", "# TYPE harness_messages_recovered_total counter",
                      f'harness_messages_recovered_total{{worker="{worker}"}} {self.recovered}',
                      "# HELP harness_message_run_seconds Time this worker spent serving one message.",
                      "# TYPE harness_message_run_seconds histogram"]
            cumulative = 0
            for bound, count in zip((*self.BUCKETS, "+Inf"), self.latency_counts, strict=True):
                cumulative += count
                lines.append(f'harness_message_run_seconds_bucket{{worker="{worker}",le="{bound}"}} {cumulative}')
            lines += [f'harness_message_run_seconds_sum{{worker="{worker}"}} {self.latency_sum:.6f}',
                      f'harness_message_run_seconds_count{{worker="{worker}"}} {cumulative}',
                      "# HELP harness_http_requests_total Requests this worker answered, by route.",
                      "# TYPE harness_http_requests_total counter"]
            for route, n in sorted(self.requests.items()):
                lines.append(f'harness_http_requests_total{{worker="{worker}",route="{route}"}} {n}')
        lines += ["# HELP harness_queue_messages Messages in the shared queue, by status (all workers).",
                  "# TYPE harness_queue_messages gauge"]
        lines += [f'harness_queue_messages{{status="{s}"}} {n}' for s, n in sorted(depth.items())]
        return "\n".join(lines) + "\n"


class Worker:
    """One worker process: its harness, the queue, the executor threads and the waiters of its requests."""

    def __init__(self, settings: ServiceSettings) -> None:
        from lg_harness.graphs.app import Harness
        from lg_harness.graphs.settings import Settings

        self.settings = settings
        self.harness = Harness(settings.model, settings.domain, settings.design, Settings(
            data_dir=settings.data_dir, database_url=settings.database_url, chroma_url=settings.chroma_url,
            durability=settings.durability))  # type: ignore[arg-type]  # checked in Settings
        stores = self.harness.stores
        if stores.queue is None:  # embedded: the queue is a file in the data dir, for this one process
            stores.queue = ThreadQueue.sqlite(Path(settings.data_dir) / "queue.sqlite", ttl=settings.lease_ttl)
            stores._owned.append(stores.queue)
        self.queue: ThreadQueue = stores.queue
        self.queue.ttl = settings.lease_ttl
        self.metrics = Metrics()
        self.stop = threading.Event()
        self.wake = threading.Event()
        self.local = threading.local()
        self.harness.on_update = self._on_update
        self.executors = [threading.Thread(target=self._serve_loop, name=f"executor-{i}", daemon=True)
                          for i in range(max(1, settings.threads))]

    def start(self) -> None:
        for t in self.executors:
            t.start()

    def close(self) -> None:
        self.stop.set()
        self.wake.set()
        for t in self.executors:
            if t.ident is not None:  # started
                t.join(timeout=self.settings.lease_ttl)
        self.harness.close()

    # -- executing claimed messages

    def _serve_loop(self) -> None:
        idle = 0.01
        while not self.stop.is_set():
            try:
                claim = self.queue.claim()
            except Exception:  # noqa: BLE001 - the database blinked; try again shortly
                claim = None
            if claim is None:
                self.wake.wait(idle)
                self.wake.clear()
                idle = min(idle * 2, 0.1)
                continue
            idle = 0.01
            self.serve(claim)

    def serve(self, claim: Claim) -> None:
        started = time.monotonic()
        status, result, error = "done", None, None
        cancel = threading.Event()
        self.local.claim, self.local.cancel, self.local.firm = claim, cancel, False
        try:
            with self.queue.holding(claim, cancel), self._held(claim.thread_id):
                result = self._execute(claim)
        except ModelUnavailable as exc:  # not the request's fault: the client may retry later (503)
            status, error, result = "failed", str(exc), {UNAVAILABLE: True}
        except HarnessError as exc:
            status, error = "failed", str(exc)
        except Exception as exc:  # noqa: BLE001 - the outcome is stored for the waiting client, not lost
            status, error = "failed", f"{type(exc).__name__}: {exc}"
        finally:
            self.local.claim, self.local.firm = None, False
        if cancel.is_set() and status == "failed":
            status = "cancelled"
            self._note_interrupted(claim)
        self.queue.complete(claim, status, result, error)
        self.metrics.message(status, time.monotonic() - started, claim.recovered)

    def _note_interrupted(self, claim: Claim) -> None:
        """An interrupted message gets a line in the transcript where its reply would be, so the conversation
        still reads as message and answer (the newer message's reply comes next)."""
        if claim.kind != "send":
            return
        from lg_harness.nodes.phrases import say
        from lg_harness.tools.text import language

        try:
            rows = self.harness.transcripts.read(claim.thread_id)
            if rows and rows[-1]["role"] == "user":
                lang = "zh" if language(rows[-1]["content"]) == "zh" else "en"
                self.harness.transcripts.append(claim.thread_id, rows[-1]["turn"], "assistant",
                                                say("interrupted", lang, self.harness.domain))
        except Exception:  # noqa: BLE001 - a note for readers: the outcome itself is already decided
            pass

    def _held(self, thread_id: str) -> Any:
        held = getattr(self.harness.order, "held", None)
        return held(thread_id) if held else contextlib.nullcontext()

    def _execute(self, claim: Claim) -> dict[str, Any]:
        h, p, thread = self.harness, claim.payload, claim.thread_id
        if claim.kind == "finish":
            return h.finish(thread, p.get("checkpoint_id")).to_dict()
        if claim.kind == "human_reply":
            from lg_harness.service.desk import ops

            return ops.answer(h, p.get("agent") or AGENT, thread, p["text"])
        snapshot = h.graph.get_state(h.config(thread))
        turn = int(snapshot.values.get("turn") or 0)
        # A message that answers a confirmation settles a change: a newer message never interrupts it (two
        # racing "yes" would otherwise leave the change unmade, or made with no reply); the newer one waits.
        self.local.firm = bool(snapshot.values.get("pending_change"))
        if claim.recovered and claim.turn_before is not None and (done := self._recover(claim, snapshot)) is not None:
            return done.to_dict()
        self.queue.note_turn(claim, turn)
        return h.send(thread, p["text"], p.get("user_id"), p.get("role")).to_dict()

    def _recover(self, claim: Claim, snapshot: Any) -> SendResult | None:
        """Another worker started this message and died: complete what it left through the harness's one
        recovery path (``Harness.complete``), or None when nothing of the message was saved (send it)."""
        h, thread = self.harness, claim.thread_id
        turn = int(snapshot.values.get("turn") or 0)
        started = turn > (claim.turn_before or 0) or bool(snapshot.tasks)
        if not started and h.unanswered_message(thread, snapshot.values) != (turn + 1, h.check_message(claim.payload["text"])):
            return None
        done = h.complete(thread)
        # None: it ran to the end and its reply is in the transcript; the worker died before storing the outcome
        return done if done is not None else h.result(thread, h.graph.get_state(h.config(thread)), [])

    def _on_update(self, thread_id: str, update: dict[str, Any]) -> None:
        claim = getattr(self.local, "claim", None)
        if claim is None or claim.thread_id != thread_id:
            return
        for node, values in update.items():
            keys = sorted(values) if isinstance(values, dict) else []
            self.queue.add_event(claim, {"node": node, "keys": keys})
            # once tools have run, the message finishes: its reply says what they did
            self.local.firm = self.local.firm or node == "execute"
        asked = self.queue.cancelled(claim)  # checked at every node, not only on renewal
        if self.local.cancel.is_set() and not asked:  # the lease was lost: another worker may hold the thread
            raise HarnessError("interrupted: this worker lost the thread's lease")
        if asked and not self.local.firm:
            self.local.cancel.set()
            raise HarnessError("interrupted by a newer message on the thread")

    # -- answering requests

    def submit(self, thread_id: str, kind: str, payload: dict[str, Any], policy: str | None) -> int:
        mid = self.queue.enqueue(thread_id, kind, payload, policy=policy or self.settings.policy)
        self.wake.set()
        return mid


def _queued(row: dict[str, Any] | None, message_id: int) -> dict[str, Any]:
    """The queue row of a message this worker queued; missing only if a prune removed it meanwhile."""
    if row is None:
        raise LookupError(f"message {message_id} is not in the thread queue")
    return row


class Waiters:
    """Requests waiting for their messages' outcomes: one query per tick for all of this worker's waiters."""

    def __init__(self, queue: ThreadQueue, tick: float = 0.025) -> None:
        self.queue = queue
        self.tick = tick
        self.futures: dict[int, list[asyncio.Future]] = {}
        self.task: asyncio.Task | None = None

    async def wait(self, message_id: int) -> dict[str, Any]:
        fut = asyncio.get_running_loop().create_future()
        self.futures.setdefault(message_id, []).append(fut)
        await fut
        return _queued(await asyncio.to_thread(self.queue.get, message_id), message_id)

    async def run(self) -> None:
        while True:
            await asyncio.sleep(self.tick)
            if not self.futures:
                continue
            try:
                states = await asyncio.to_thread(self.queue.statuses, list(self.futures))
            except Exception:  # noqa: BLE001 - try again next tick
                continue
            for mid, status in states.items():
                if status in RESULT_STATES:
                    for fut in self.futures.pop(mid, []):
                        if not fut.done():
                            fut.set_result(status)


class Api:
    """What the routes share: the settings, this worker's runtime, authentication and ownership."""

    def __init__(self, settings: ServiceSettings) -> None:
        self.settings = settings
        self.state: dict[str, Any] = {}

    @property
    def rt(self) -> Worker:
        return self.state["runtime"]

    def caller(self, request: Request) -> str:
        """The user id, or ``AGENT`` for the desk (``service.desk.auth``: never from a header a client sets)."""
        from fastapi import HTTPException

        from lg_harness.service.desk.auth import identify

        s = self.settings
        if (user := identify(s, request)) is not None:
            return user
        raise HTTPException(401, "authenticate with Authorization: Bearer <key>"
                            + (f" or the {s.user_header} header" if s.user_header else ""))

    def thread_for(self, thread_id: str, user: str, *, new_ok: bool = False) -> str:
        """The harness thread behind the id a caller named (the desk names any thread as it is).

        Each customer names threads in a space of their own: an id another customer already holds leads to the
        caller's own thread of that name (``shadow_id``), created by a message like any new one. So a send on a
        taken id answers as one on a free id, a read answers 404 as for a missing one, and nobody learns which
        ids are taken by asking. ``new_ok``: a message may start a thread."""
        h = self.rt.harness
        if user != AGENT and h.owner_of(thread_id) not in (None, user):
            thread_id = shadow_id(user, thread_id)
        owner = h.owner_of(thread_id)
        exists = owner is not None or h.thread_exists(thread_id)
        if (exists and user != AGENT and owner not in (None, user)) or (not exists and not new_ok):
            raise unknown_thread(public_id(user, thread_id))
        return thread_id

    async def enqueue(self, thread_id: str, kind: str, payload: dict[str, Any], policy: str | None) -> int:
        return await asyncio.to_thread(self.rt.submit, thread_id, kind, payload, policy)

    async def finished(self, mid: int, shown: str) -> Any:
        """The message's outcome as a response; ``shown``: the thread id the caller used (never rewritten)."""
        from fastapi.responses import JSONResponse

        row = await self.state["waiters"].wait(mid)
        if row["status"] == "done":
            return JSONResponse({**row["result"], "thread_id": shown, "message_id": mid})
        status = failure_status(row)
        return error_response(status, row["error"] or row["status"], code=failure_code(row), message_id=mid)

    async def stream(self, mid: int, thread_id: str) -> AsyncIterator[str]:  # thread_id: as the caller named it
        """Server-sent events: ``queued``, one ``node`` per graph node as it finishes, then ``result``/``error``."""
        q = self.rt.queue
        yield _sse("queued", {"message_id": mid, "thread_id": thread_id})
        seen, final = 0, None
        while final is None:
            row = _queued(await asyncio.to_thread(q.get, mid), mid)
            final = row if row["status"] in RESULT_STATES else None
            for seq, event in await asyncio.to_thread(q.events, mid, seen):
                seen = seq
                yield _sse("node", event)
            if final is None:
                await asyncio.sleep(0.05)
        if final["status"] == "done":
            yield _sse("result", {**final["result"], "thread_id": thread_id, "message_id": mid})
        else:  # the shape of every error the service answers
            yield _sse("error", error_body(failure_status(final), final["error"] or final["status"],
                                           code=failure_code(final), message_id=mid))


class RequestLog:
    """One line per request on stderr: worker, method, path, status, milliseconds. Never a query string or a
    body: they may carry a customer's words."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        began, status = time.monotonic(), 500

        async def sending(message: Any) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            ms = (time.monotonic() - began) * 1000
            print(f"harness serve [{os.getpid()}]: {scope['method']} {scope['path']} {status} {ms:.0f} ms",
                  file=sys.stderr, flush=True)


def create_app(settings: ServiceSettings | None = None) -> Any:
    """The ASGI app (``uvicorn --factory lg_harness.service.http:create_app``); OpenAPI docs at ``/docs``."""
    from fastapi import FastAPI
    from fastapi.responses import JSONResponse

    api = Api(settings or ServiceSettings.from_env())

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        runtime = await asyncio.to_thread(Worker, api.settings)
        runtime.start()
        waiters = Waiters(runtime.queue)
        waiters.task = asyncio.create_task(waiters.run())
        api.state.update(runtime=runtime, waiters=waiters)
        if os.environ.get("HARNESS_REQUEST_LOG") == "1":
            print(f"harness serve [{os.getpid()}]: worker ready", file=sys.stderr, flush=True)
        try:
            yield
        finally:
            waiters.task.cancel()
            await asyncio.to_thread(runtime.close)
            if os.environ.get("HARNESS_REQUEST_LOG") == "1":
                print(f"harness serve [{os.getpid()}]: worker stopped",
                      file=sys.stderr, flush=True)

    # docs_url=None: Swagger UI is served from the installed package, not a CDN (service.desk.api).
    app = FastAPI(title="lg-harness", version="0.1.0", lifespan=lifespan, docs_url=None, redoc_url=None,
                  description="The harness as an HTTP service: messages, node events, threads, handoffs, "
                              "and the web desk at /.")

    @app.exception_handler(HarnessError)
    async def harness_error(request: Request, exc: HarnessError) -> JSONResponse:
        # A usage error is the caller's to fix (400); a busy thread waits its turn (409); any other run error
        # (the model down, a lease lost, an outcome not known yet) is ours, and the same request may work later.
        if isinstance(exc, ThreadBusy):
            return error_response(409, exc, code="thread_busy")
        if isinstance(exc, ModelUnavailable):
            return error_response(503, exc, code="model_unavailable")
        return error_response(503 if isinstance(exc, RunError) else 400, exc)

    http_guard.install(app, api.settings)
    if os.environ.get("HARNESS_REQUEST_LOG") == "1":  # harness serve sets it; tests and embedders stay quiet
        app.add_middleware(RequestLog)
    _message_routes(app, api)
    _thread_routes(app, api)
    _ops_routes(app, api)
    from lg_harness.service.desk.api import add_desk

    add_desk(app, api)
    return app


def _message_routes(app: Any, api: Api) -> None:
    from fastapi import Body, Depends, HTTPException
    from fastapi.responses import JSONResponse, StreamingResponse

    @app.post("/threads/{thread_id}/messages", summary="Send one user message; the reply as `harness run --json`")
    async def send(thread_id: str, text: str = Body(embed=True),
                   policy: str | None = Body(None, embed=True, description="enqueue | reject | interrupt"),
                   wait: bool = Body(True, embed=True), user: str = Depends(api.caller)) -> Any:
        api.rt.metrics.request("send")
        if user == AGENT:
            raise HTTPException(403, "the human-agent desk answers with /handoffs/{thread_id}/reply")
        tid = await asyncio.to_thread(api.thread_for, thread_id, user, new_ok=True)
        api.rt.harness.check_message(text)  # before it is queued: a message no store can keep is refused here
        mid = await api.enqueue(tid, "send", {"text": text, "user_id": user, "role": None}, policy)
        if not wait:
            return JSONResponse({"message_id": mid, "status": "queued"}, status_code=202)
        return await api.finished(mid, thread_id)

    @app.post("/threads/{thread_id}/messages/stream", summary="Send a message and stream its node events (SSE)")
    async def send_stream(thread_id: str, text: str = Body(embed=True),
                          policy: str | None = Body(None, embed=True), user: str = Depends(api.caller)) -> Any:
        api.rt.metrics.request("stream")
        if user == AGENT:
            raise HTTPException(403, "the human-agent desk answers with /handoffs/{thread_id}/reply")
        tid = await asyncio.to_thread(api.thread_for, thread_id, user, new_ok=True)
        api.rt.harness.check_message(text)
        mid = await api.enqueue(tid, "send", {"text": text, "user_id": user, "role": None}, policy)
        return StreamingResponse(api.stream(mid, thread_id), media_type="text/event-stream")

    @app.get("/messages/{message_id}", summary="A message's place in its thread's queue and its outcome")
    async def message(message_id: int, user: str = Depends(api.caller)) -> Any:
        row = await asyncio.to_thread(api.rt.queue.get, message_id)
        sender = row["payload"].get("user_id") if row is not None else None
        if row is None or (user != AGENT and sender not in (user, None)):
            raise HTTPException(404, f"unknown message {message_id}")
        # a row that names its sender is the caller's, even before its thread exists (queued, not started yet)
        if sender is None:
            await asyncio.to_thread(api.thread_for, row["thread_id"], user)
        shown = public_id(user, row["thread_id"])
        result = {**row["result"], "thread_id": shown} if isinstance(row["result"], dict) else row["result"]
        return {**{k: row[k] for k in ("id", "kind", "status", "error", "worker", "attempts", "created_at",
                                       "started_at", "finished_at")}, "thread_id": shown, "result": result}


def _thread_routes(app: Any, api: Api) -> None:
    from fastapi import Body, Depends

    from lg_harness.graphs.thread_history import public_state

    @app.get("/threads/{thread_id}/history", summary="The thread's checkpoints, as `harness history --json`")
    async def history(thread_id: str, user: str = Depends(api.caller)) -> Any:
        tid = await asyncio.to_thread(api.thread_for, thread_id, user)
        rows = await asyncio.to_thread(api.rt.harness.history, tid)
        return {"thread_id": thread_id, "checkpoints": [r.__dict__ for r in rows]}

    @app.get("/threads/{thread_id}/transcript", summary="Every user message and reply on the thread")
    async def transcript(thread_id: str, user: str = Depends(api.caller)) -> Any:
        tid = await asyncio.to_thread(api.thread_for, thread_id, user)
        await asyncio.to_thread(api.rt.harness.require_thread, tid)
        return {"thread_id": thread_id, "messages": await asyncio.to_thread(api.rt.harness.transcripts.read, tid)}

    @app.get("/threads/{thread_id}/state", summary="Where the thread stands, as `harness resume --json`")
    async def thread_state(thread_id: str, checkpoint_id: str | None = None, user: str = Depends(api.caller)) -> Any:
        tid = await asyncio.to_thread(api.thread_for, thread_id, user)
        st = await asyncio.to_thread(api.rt.harness.state, tid, checkpoint_id)
        return {"thread_id": thread_id, "domain": api.rt.harness.domain.name, "checkpoint_id": st["checkpoint_id"],
                "forked_from": None, "next": st["next"], **public_state(st["values"])}

    @app.post("/threads/{thread_id}/fork", summary="Continue the thread from an earlier checkpoint")
    async def fork(thread_id: str, request: Request, checkpoint_id: str = Body(embed=True),
                   user: str = Depends(api.caller)) -> Any:
        tid = await asyncio.to_thread(api.thread_for, thread_id, user)

        def do() -> dict[str, Any]:
            h = api.rt.harness
            with h.order.turn(tid):  # never while a message runs on the thread
                h.fork(tid, checkpoint_id)
                st = h.state(tid)
            if user == AGENT:  # every desk action is audited under the agent's name
                from lg_harness.service.desk import ops
                from lg_harness.service.desk.auth import agent_of

                ops.note_fork(h, agent_of(request), tid, checkpoint_id)
            return {"thread_id": thread_id, "domain": h.domain.name, "checkpoint_id": st["checkpoint_id"],
                    "forked_from": checkpoint_id, "next": st["next"], **public_state(st["values"])}

        return await asyncio.to_thread(do)

    @app.post("/threads/{thread_id}/finish", summary="Finish the message the thread stopped in")
    async def finish(thread_id: str, checkpoint_id: str | None = Body(None, embed=True),
                     user: str = Depends(api.caller)) -> Any:
        tid = await asyncio.to_thread(api.thread_for, thread_id, user)
        mid = await api.enqueue(tid, "finish", {"checkpoint_id": checkpoint_id, "user_id": user}, "enqueue")
        return await api.finished(mid, thread_id)


def _ops_routes(app: Any, api: Api) -> None:
    from fastapi import Body, Depends, HTTPException
    from fastapi.responses import PlainTextResponse

    def agent(user: str = Depends(api.caller)) -> str:
        if user != AGENT:
            raise HTTPException(403, "only the human-agent desk may do this")
        return user

    @app.get("/handoffs", summary="Threads waiting for and held by a human, as `harness handoff list --json`")
    async def handoffs(user: str = Depends(agent)) -> Any:
        from lg_harness.service.desk import ops

        return await asyncio.to_thread(ops.queue, api.rt.harness)

    @app.post("/handoffs/{thread_id}/reply", summary="The human agent's answer; the human holds the thread "
              "until `release`")
    async def handoff_reply(thread_id: str, request: Request, text: str = Body(embed=True),
                            user: str = Depends(agent)) -> Any:
        from lg_harness.service.desk import ops
        from lg_harness.service.desk.auth import agent_of

        who = agent_of(request)
        await asyncio.to_thread(ops.check_holder, api.rt.harness, who, thread_id)  # 409 at once, not in the queue
        mid = await api.enqueue(thread_id, "human_reply", {"text": text, "agent": who}, "enqueue")
        return await api.finished(mid, thread_id)

    @app.get("/healthz", summary="The worker process is up")
    async def healthz() -> Any:
        return {"status": "ok", "pid": os.getpid(), "worker": api.rt.queue.worker}

    def operator(request: Request) -> str:
        """``/readyz`` and ``/metrics`` show queue depths and the stores: an ops key or the desk, never anyone."""
        from lg_harness.service.desk.auth import credential

        key = credential(api.settings, request)
        if key is not None and key in api.settings.ops_keys:
            return api.settings.ops_keys[key]
        if api.caller(request) != AGENT:
            raise HTTPException(403, "only an ops key (HARNESS_OPS_KEYS) or the desk reads this")
        return AGENT

    @app.get("/readyz", summary="The worker can reach its stores (an ops key or the desk)")
    async def readyz(who: str = Depends(operator)) -> Any:
        try:
            depth = await asyncio.to_thread(api.rt.queue.depth)
            if api.settings.chroma_url:
                await asyncio.to_thread(api.rt.harness.stores._chroma.heartbeat)
        except Exception as exc:  # noqa: BLE001 - not ready, and why
            return error_response(503, f"a store does not answer: {type(exc).__name__}: {exc}", code="not_ready")
        return {"status": "ready", "backend": api.rt.harness.stores.backend, "queue": depth}

    @app.get("/metrics", response_class=PlainTextResponse, summary="Prometheus metrics of this worker (an ops "
             "key or the desk)")
    async def metrics(who: str = Depends(operator)) -> str:
        depth = await asyncio.to_thread(api.rt.queue.depth)
        return api.rt.metrics.text(depth, api.rt.queue.worker)


def _sse(event: str, data: dict[str, Any]) -> str:
    return f"event: {event}\ndata: {json.dumps(data, ensure_ascii=False, default=str)}\n\n"
