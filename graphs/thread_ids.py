"""What a thread id may be: printable text, no controls, no blank, no surrounding space, at most 200 characters.

A thread id is typed by people (``--thread``), sent in URLs and shown on the desk and in logs. A NUL cuts it
short in C libraries, a right-to-left override (U+202E) shows ``evil\u202egnp.exe`` as ``evilexe.png``, a blank
one looks like no thread at all, and a lone surrogate cannot be stored. Every way in (the ``Harness``, so the
CLI and the HTTP service) checks it here and says which rule it broke.
"""

from __future__ import annotations

import unicodedata

from lg_harness.tools.errors import HarnessError

MAX_THREAD_ID = 200


def check_thread_id(thread_id: object) -> str:
    """``thread_id`` if it is a valid thread id, else a ``HarnessError`` naming what is wrong."""
    if not isinstance(thread_id, str) or not thread_id.strip():
        raise HarnessError("the thread id is empty; name the thread, e.g. --thread order-help")
    if len(thread_id) > MAX_THREAD_ID:
        raise HarnessError(f"the thread id is {len(thread_id):,} characters; the limit is {MAX_THREAD_ID}")
    if thread_id != thread_id.strip():
        raise HarnessError("the thread id starts or ends with a space; leave the spaces out")
    bad = next((c for c in thread_id if not c.isprintable()), None)
    if bad is not None:
        name = unicodedata.name(bad, "") if unicodedata.category(bad) != "Cs" else "an unpaired surrogate"
        raise HarnessError(f"the thread id holds U+{ord(bad):04X} {name}".rstrip() + "; use printable "
                           "characters only (letters, digits, - _ . : /)")
    return thread_id
