"""Who may read and run which thread on the LangGraph server: LangGraph's own auth hook (``langgraph.json``
``"auth": {"path": "./lg_harness/service/server_auth.py:auth"}``), enforced by the server itself.

Callers authenticate as for ``harness serve``: ``HARNESS_API_KEYS=key=U001,key2=U002`` maps bearer keys
(``Authorization: Bearer <key>``) to users; the user ``@agent`` is the human-agent desk. Without a key, or
with an unknown one, every request is refused (401): the server has no anonymous users.

- A thread created by a user is marked with its owner (metadata ``owner``); creating it again (``if_exists``),
  copying, reading it (state, history, runs), searching, updating, deleting and running on it are filtered to
  the owner, so another user's thread is simply not found (404; a create naming another user's thread id is
  refused, 409, and returns nothing of it). The desk sees every thread.
- Nobody but the desk writes a thread's state (403): the state holds the thread's user and the calls about to
  run. A metadata update keeps ``owner`` the caller's. And the graph itself checks every run's authenticated
  caller (``configurable.langgraph_auth_user_id``) against the thread's user before any tool runs
  (``core.state.acting_user``), so a state that names someone else acts for nobody.
- A run acts for its caller: the input's ``user`` is set to the caller with the role the domain records for
  them (a different id or role is refused, 403), so nobody sends a message as someone else or with more
  rights. Only the desk may resume a thread waiting for a human.
- Crons and the store are the desk's alone; assistants may be listed and read by any authenticated user.
"""

from __future__ import annotations

import os
from typing import Any

from langgraph_sdk import Auth

AGENT = "@agent"  # the human-agent desk, as in service.http_guard
OWNER = "owner"

auth = Auth()


def api_keys() -> dict[str, str]:
    """``HARNESS_API_KEYS`` as key -> user id (read on each request, so a key can be revoked by restart)."""
    keys = {}
    for pair in filter(None, (p.strip() for p in os.environ.get("HARNESS_API_KEYS", "").split(","))):
        key, sep, user = pair.partition("=")
        if sep and key and user:
            keys[key.strip()] = user.strip()
    return keys


@auth.authenticate
async def authenticate(authorization: str | None) -> Auth.types.MinimalUserDict:
    scheme, _, key = (authorization or "").partition(" ")
    if scheme.lower() != "bearer" or not key.strip():
        raise Auth.exceptions.HTTPException(status_code=401, detail="authenticate with Authorization: Bearer <key> "
                                            "(keys come from HARNESS_API_KEYS=key=user_id,...)")
    user = api_keys().get(key.strip())
    if user is None:
        raise Auth.exceptions.HTTPException(status_code=401, detail="unknown API key")
    return {"identity": user}


async def role_of(identity: str) -> str | None:
    """The caller's role as the server's domain records it (None: not a user of the domain)."""
    import asyncio

    def lookup() -> str | None:
        from lg_harness.core.domain import load_domain
        from lg_harness.service import server

        pack = load_domain(None)
        found = pack.user(identity, server.backends_for(pack, server.data_dir()))
        return str(found.get("role") or pack.default_role) if found else None

    # the domain's users live in its database: read them off the event loop (langgraph dev refuses blocking I/O)
    return await asyncio.to_thread(lookup)


def _is_desk(ctx: Auth.types.AuthContext) -> bool:
    return ctx.user.identity == AGENT


def _own(ctx: Auth.types.AuthContext) -> dict[str, str] | None:
    """The filter that limits a request to the caller's threads (none for the desk)."""
    return None if _is_desk(ctx) else {OWNER: ctx.user.identity}


@auth.on
async def desk_only(ctx: Auth.types.AuthContext, value: Any) -> bool:
    """Anything without its own rule below (crons, the store) belongs to the desk."""
    return _is_desk(ctx)


async def assistants_are_public(ctx: Auth.types.AuthContext, value: Any) -> bool:
    return True


# One handler for several actions, registered by call rather than by stacked decorators: each decorator
# returns the handler typed for its own action only (langgraph_sdk), which the next one refuses.
auth.on.assistants.search(assistants_are_public)
auth.on.assistants.read(assistants_are_public)


@auth.on.threads.create
async def mark_owner(ctx: Auth.types.AuthContext, value: Any) -> dict[str, str] | None:
    """A new thread is the caller's. The filter returned makes an existing thread of that id the caller's
    own or nothing: ``if_exists: do_nothing`` would otherwise hand back whoever's thread holds the id, and a
    copy (which creates) is the caller's too."""
    metadata = value.setdefault("metadata", {}) if isinstance(value, dict) else {}
    if metadata is None:
        metadata = value["metadata"] = {}
    metadata[OWNER] = ctx.user.identity
    return _own(ctx)


async def only_own_threads(ctx: Auth.types.AuthContext, value: Any) -> dict[str, str] | None:
    return _own(ctx)


auth.on.threads.delete(only_own_threads)


@auth.on.threads.update
async def update_own_metadata(ctx: Auth.types.AuthContext, value: Any) -> dict[str, str] | None:
    """A customer may cancel their own runs and change their own thread's metadata, never its owner; a state
    write (``POST /threads/{id}/state``, which reaches this hook with neither metadata nor an action) is the
    desk's alone: state holds the thread's user and the calls about to run, which decide what a run does."""
    if _is_desk(ctx):
        return None
    if not isinstance(value, dict) or ("metadata" not in value and not value.get("action")):
        raise Auth.exceptions.HTTPException(status_code=403, detail="a customer cannot write a thread's state: "
                                            "send a message with a run (POST /threads/{id}/runs)")
    metadata = value.get("metadata")
    if isinstance(metadata, dict) and OWNER in metadata:
        metadata[OWNER] = ctx.user.identity  # the owner is whoever is authenticated, whatever the body says
    return _own(ctx)


auth.on.threads.search(only_own_threads)
auth.on.threads.read(only_own_threads)


@auth.on.threads.create_run
async def run_as_caller(ctx: Auth.types.AuthContext, value: Any) -> dict[str, str] | None:
    kwargs = value.get("kwargs") or {}
    if not _is_desk(ctx):
        command = kwargs.get("command") or {}
        if command.get("resume") is not None:
            raise Auth.exceptions.HTTPException(status_code=403, detail="only the human-agent desk answers a "
                                                "thread waiting for a human")
        if command:  # update / goto write the state a run starts from, as a state write does
            raise Auth.exceptions.HTTPException(status_code=403, detail="a customer's run takes a message as "
                                                "input, not a command")
        graph_input = kwargs.get("input")
        if isinstance(graph_input, dict):
            given = graph_input.get("user")
            user = given if isinstance(given, dict) else {}
            claimed = str(user.get("id") or "").strip()
            if claimed and claimed != ctx.user.identity:
                raise Auth.exceptions.HTTPException(status_code=403, detail="a run acts for its caller: the "
                                                    "input's user id must be yours")
            role = await role_of(ctx.user.identity)
            if role is None:
                raise Auth.exceptions.HTTPException(status_code=403, detail=f"unknown user '{ctx.user.identity}' "
                                                    "in this server's domain")
            if user.get("role") and user["role"] != role:
                raise Auth.exceptions.HTTPException(status_code=403, detail=f"your role is '{role}'; a run "
                                                    "cannot claim another")
            graph_input["user"] = {"id": ctx.user.identity, "role": role}
        # a run that creates its thread marks the caller as its owner
        metadata = value.get("metadata")
        if metadata is None:
            metadata = value["metadata"] = {}
        metadata[OWNER] = ctx.user.identity
    return _own(ctx)
