"""What a thread id may be: printable text, no controls, no blank, no surrounding space, at most 200 characters.

A thread id is typed by people (``--thread``), sent in URLs and shown on the desk and in logs. A NUL cuts it
short in C libraries, a right-to-left override (U+202E) shows ``evil\u202egnp.exe`` as ``evilexe.png``, a blank
one looks like no thread at all, and a lone surrogate cannot be stored. Look-alikes are refused too: an id not
in NFKC form (full-width ``ｔ１``) or mixing Latin, Greek and Cyrillic letters (a Cyrillic ``о`` in ``order``)
would make two threads that read the same on the desk. Every way in (the ``Harness``, so the
CLI and the HTTP service) checks it here and says which rule it broke.
"""

from __future__ import annotations

import unicodedata

from lg_harness.errors import HarnessError

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
    if unicodedata.normalize("NFKC", thread_id) != thread_id:
        raise HarnessError(f"the thread id is not in its plain form (NFKC: "
                           f"'{unicodedata.normalize('NFKC', thread_id)}'): full-width letters, ligatures and other "
                           "look-alike forms are refused; type it plainly")
    scripts = {script for c in thread_id if c.isalpha() and (script := _confusable_script(c))}
    if len(scripts) > 1:
        raise HarnessError(f"the thread id mixes {' and '.join(sorted(scripts))} letters, which look alike on the "
                           "desk; use one alphabet")
    return thread_id


def _confusable_script(char: str) -> str | None:
    """Latin, Greek or Cyrillic for a letter of those alphabets (their letters look alike), else None."""
    name = unicodedata.name(char, "")
    return next((s.title() for s in ("LATIN", "GREEK", "CYRILLIC") if name.startswith(s)), None)
