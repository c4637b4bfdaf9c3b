"""Who is at the desk: the desk role comes from credentials of its own, never from a flag a client sets.

- ``HARNESS_DESK_KEYS=key=alice,key2=bob``: each key names one human agent (``Authorization: Bearer <key>``,
  or the desk's login cookie in a browser). A key in ``HARNESS_API_KEYS`` whose user is ``@agent`` is the
  desk too (the LangGraph server shares that setting), under the identity ``@agent``.
- ``HARNESS_DESK_HEADER=X-Desk-Agent`` with ``HARNESS_TRUSTED_PROXIES=127.0.0.1,10.0.0.0/8``: the header names
  the agent, and is believed only on a connection from one of those addresses (the authenticating proxy in
  front). The customer header (``HARNESS_TRUSTED_USER_HEADER``) is believed only from them too, and neither
  header setting starts without proxies configured. The address is the socket's peer: ``harness serve`` runs
  uvicorn without proxy headers, so no ``X-Forwarded-For`` a client sends moves it.

The browser keeps its key in an ``HttpOnly``, ``SameSite=Strict`` cookie; a request that changes anything with
that cookie must also carry ``X-CSRF-Token``, a digest of the key that only the desk's own pages know.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
from collections.abc import Mapping
from typing import Any

from lg_harness.service.http_guard import AGENT
from lg_harness.tools.errors import HarnessError

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
    return {"desk_keys": keys, "desk_header": header, "trusted_proxies": tuple(proxies)}


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


def csrf_token(key: str) -> str:
    """What the desk's pages send back with a change: it proves the request came from a page of ours."""
    return hashlib.sha256(f"lg-harness desk csrf:{key}".encode()).hexdigest()[:32]


def credential(request: Any) -> str | None:
    """The key the request presents: a bearer key, or the desk's login cookie (with its CSRF check)."""
    from fastapi import HTTPException

    auth = request.headers.get("authorization", "")
    if auth.lower().startswith("bearer "):
        return auth[7:].strip()
    key = request.cookies.get(COOKIE)
    if key and request.method not in SAFE_METHODS:
        sent = request.headers.get(CSRF_HEADER, "")
        if not hmac.compare_digest(sent, csrf_token(key)):
            raise HTTPException(403, "a change from the desk's cookie needs the X-CSRF-Token of its pages")
    return key or None


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

    key = credential(request)
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
