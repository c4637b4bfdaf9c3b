"""Who is at the desk: the desk role comes from credentials of its own, never from a flag a client sets.

- ``HARNESS_DESK_KEYS=key=alice,key2=bob``: each key names one human agent (``Authorization: Bearer <key>``,
  or the desk's login cookie in a browser). A key in ``HARNESS_API_KEYS`` whose user is ``@agent`` is the
  desk too (the LangGraph server shares that setting), under the identity ``@agent``.
- ``HARNESS_DESK_HEADER=X-Desk-Agent`` with ``HARNESS_TRUSTED_PROXIES=127.0.0.1,10.0.0.0/8``: the header names
  the agent, and is believed only on a connection from one of those addresses (the authenticating proxy in
  front). The customer header (``HARNESS_TRUSTED_USER_HEADER``) is believed only from them too, and neither
  header setting starts without proxies configured. The address is the socket's peer: ``harness serve`` runs
  uvicorn without proxy headers, so no ``X-Forwarded-For`` a client sends moves it.

The browser keeps a signed session in an ``HttpOnly``, ``SameSite=Strict`` cookie, never the key itself: the
session names the key only by a digest, expires after a working day and is signed with the key (HMAC), so any
worker that knows the key accepts it and removing the key ends its sessions. A request that changes anything
with that cookie must also carry ``X-CSRF-Token``, a digest of the session that only the desk's own pages know.

``HARNESS_DESK_SUPERVISORS=alice,bob`` names the agents who may release a thread another agent holds, and
``HARNESS_OPS_KEYS=key=prometheus`` keys that open only ``/metrics`` and ``/readyz`` (a desk key opens them too).
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import time
from collections.abc import Mapping
from typing import Any

from lg_harness.errors import HarnessError

AGENT = "@agent"  # the caller id of the human-agent desk: set here, from its credentials, never by a client
COOKIE = "harness_desk"
CSRF_HEADER = "x-csrf-token"
SAFE_METHODS = ("GET", "HEAD", "OPTIONS")


def parse_keys(name: str, text: str) -> dict[str, str]:
    """``key=name,key2=name2`` (an environment variable's value) as key -> name."""
    keys = {}
    for pair in filter(None, (p.strip() for p in text.split(","))):
        key, sep, who = pair.partition("=")
        if not sep or not key.strip() or not who.strip():
            raise HarnessError(f"{name} entries are key=user_id; got '{pair}'")
        keys[key.strip()] = who.strip()
    return keys


def desk_settings(env: Mapping[str, str]) -> dict[str, Any]:
    """The desk's settings from the environment, checked: keys, the proxy header and the proxies."""
    keys = parse_keys("HARNESS_DESK_KEYS", env.get("HARNESS_DESK_KEYS", ""))
    header = env.get("HARNESS_DESK_HEADER") or None
    proxies = []
    for item in filter(None, (p.strip() for p in env.get("HARNESS_TRUSTED_PROXIES", "").split(","))):
        try:
            proxies.append(ipaddress.ip_network(item, strict=False))
        except ValueError:
            raise HarnessError(f"HARNESS_TRUSTED_PROXIES entries are addresses or networks (10.0.0.0/8); "
                               f"got '{item}'") from None
    supervisors = frozenset(filter(None, (p.strip() for p in env.get("HARNESS_DESK_SUPERVISORS", "").split(","))))
    return {"desk_keys": keys, "desk_header": header, "trusted_proxies": tuple(proxies),
            "desk_supervisors": supervisors, "ops_keys": parse_keys("HARNESS_OPS_KEYS", env.get("HARNESS_OPS_KEYS", ""))}


def from_proxy(settings: Any, request: Any) -> bool:
    """The connection (the socket's peer, never a forwarded-for header) comes from a configured proxy."""
    if not settings.trusted_proxies:
        return False
    host = request.client.host if request.client else ""
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return any(address in net for net in settings.trusted_proxies)


SESSION_S = 12 * 3600  # a working day; then the agent signs in again


def csrf_token(session: str) -> str:
    """What the desk's pages send back with a change: it proves the request came from a page of ours."""
    return hashlib.sha256(f"lg-harness desk csrf:{session}".encode()).hexdigest()[:32]


def _key_id(key: str) -> str:
    return hashlib.sha256(f"lg-harness desk key:{key}".encode()).hexdigest()[:16]


def _signature(key: str, body: str) -> str:
    return hmac.new(key.encode(), body.encode(), hashlib.sha256).hexdigest()[:32]


def new_session(key: str, now: float | None = None) -> str:
    """The cookie value for a desk key: ``v1.<key digest>.<expiry>.<HMAC>``, the key itself nowhere in it."""
    body = f"v1.{_key_id(key)}.{int((now if now is not None else time.time()) + SESSION_S)}"
    return f"{body}.{_signature(key, body)}"


def desk_login_keys(settings: Any) -> list[str]:
    """The keys that open the desk: its own, and any API key whose user is ``@agent``."""
    return [*settings.desk_keys, *(k for k, user in settings.api_keys.items() if user == AGENT)]


def session_key(settings: Any, session: str, now: float | None = None) -> str | None:
    """The desk key a valid, unexpired session cookie was signed with (None: forged, expired or revoked)."""
    parts = session.split(".")
    if len(parts) != 4 or parts[0] != "v1" or not parts[2].isdigit():
        return None
    _, kid, expiry, sig = parts
    if int(expiry) < (now if now is not None else time.time()):
        return None
    body = session.rpartition(".")[0]
    for key in desk_login_keys(settings):
        if hmac.compare_digest(_key_id(key), kid) and hmac.compare_digest(_signature(key, body), sig):
            return key
    return None


def credential(settings: Any, request: Any) -> str | None:
    """The key the request presents: a bearer key, or the key behind the desk's session cookie (with its CSRF
    check); None when it presents neither."""
    from fastapi import HTTPException

    auth = request.headers.get("authorization", "")
    if auth.lower().startswith("bearer "):
        return auth[7:].strip()
    session = request.cookies.get(COOKIE)
    if not session:
        return None
    if request.method not in SAFE_METHODS:
        sent = request.headers.get(CSRF_HEADER, "")
        if not hmac.compare_digest(sent, csrf_token(session)):
            raise HTTPException(403, "a change from the desk's cookie needs the X-CSRF-Token of its pages")
    key = session_key(settings, session)
    if key is None:
        raise HTTPException(401, "the desk session has expired or its key was revoked: sign in again at /desk/login")
    return key


def at_desk(request: Any, agent: str) -> str:
    """Mark the request as the desk's, for ``agent_of``; the caller is the desk role."""
    request.state.desk_agent = agent
    return AGENT


def agent_of(request: Any) -> str:
    """The human agent a desk request acts for (the audit log's identity)."""
    return getattr(request.state, "desk_agent", None) or AGENT


def identify(settings: Any, request: Any) -> str | None:
    """The caller, or None when the request carries nothing this service knows (then: 401)."""
    from fastapi import HTTPException

    key = credential(settings, request)
    if key is not None:
        if (agent := settings.desk_keys.get(key)) is not None:
            return at_desk(request, agent)
        user = settings.api_keys.get(key)
        if user is None:
            raise HTTPException(401, "unknown API key")
        return at_desk(request, AGENT) if user == AGENT else user
    trusted = from_proxy(settings, request)
    if settings.desk_header and trusted and (agent := request.headers.get(settings.desk_header, "").strip()):
        return at_desk(request, agent)
    if settings.user_header and trusted and (user := request.headers.get(settings.user_header, "").strip()):
        if user.startswith("@"):  # "@agent" is a role, not a customer a proxy can name
            raise HTTPException(403, f"the {settings.user_header} header names a customer; the desk signs in "
                                "with its own keys (HARNESS_DESK_KEYS)")
        return user
    return None
