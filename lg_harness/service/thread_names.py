"""How a customer's thread id names a harness thread: each customer names threads in a space of their own.

An id another customer already holds leads to the caller's own thread of that name, stored under a shadow id
(the id, ``~``, a digest of the customer and the id), so asking with an id tells nobody whether it is taken.
The caller always sees the id they typed; the desk sees the stored one beside the thread's owner.
"""

from __future__ import annotations

import hashlib

from lg_harness.graphs.thread_ids import MAX_THREAD_ID
from lg_harness.service.desk.auth import AGENT

SHADOW_DIGITS = 12


def shadow_id(user: str, thread_id: str) -> str:
    """The harness id of ``user``'s own thread named ``thread_id`` when another customer holds that id."""
    digest = hashlib.sha256(f"{user}\0{thread_id}".encode()).hexdigest()[:SHADOW_DIGITS]
    return f"{thread_id[:MAX_THREAD_ID - SHADOW_DIGITS - 1]}~{digest}"


def public_id(user: str, thread_id: str) -> str:
    """The id ``user`` named a harness thread by: a shadow id shows as the id the customer used."""
    name, sep, digest = thread_id.rpartition("~")
    if user != AGENT and sep and len(digest) == SHADOW_DIGITS and shadow_id(user, name) == thread_id:
        return name
    return thread_id
