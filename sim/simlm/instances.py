"""One string a regex accepts, written the way a model fills a format it was shown (``^E\\d{4}$`` -> ``E2345``).

The stdlib's own regex parser gives the pattern's tree; the walk takes the first choice of every class and
alternative and the fewest repeats, and writes digits as a run so an invented id looks like an id.
"""

from __future__ import annotations

import re
import re._parser
from typing import Any

# The parser's opcodes are made when it is imported (re._constants._makecodes), so no type stub names them.
sre: Any = re._parser

_DIGITS = "1234567890"
_CATEGORY = {sre.CATEGORY_DIGIT: "1", sre.CATEGORY_WORD: "a", sre.CATEGORY_SPACE: " "}


class _Unwritable(Exception):
    """A construct the walk does not write (lookarounds, back-references, negated classes)."""


def _first_char(items: Any) -> str:
    for op, av in items:
        if op == sre.LITERAL:
            return chr(av)
        if op == sre.RANGE:
            return chr(av[0])
        if op == sre.CATEGORY and av in _CATEGORY:
            return _CATEGORY[av]
    raise _Unwritable


def _write(items: Any, out: list[str]) -> None:
    for op, av in items:
        if op == sre.LITERAL:
            out.append(chr(av))
        elif op in (sre.IN, sre.CATEGORY):
            ch = _first_char(av if op == sre.IN else [(op, av)])
            out.append(_DIGITS[len(out) % len(_DIGITS)] if ch.isdigit() else ch)
        elif op in (sre.MAX_REPEAT, sre.MIN_REPEAT, sre.POSSESSIVE_REPEAT):
            for _ in range(av[0]):
                _write(av[2], out)
        elif op == sre.SUBPATTERN:
            _write(av[-1], out)
        elif op == sre.BRANCH:
            _write(av[1][0], out)
        elif op == sre.ANY:
            out.append("x")
        elif op != sre.AT:  # anchors write nothing
            raise _Unwritable


def instance_of(pattern: str) -> str | None:
    """A string ``pattern`` accepts, or None when the pattern uses what the walk cannot write."""
    out: list[str] = []
    try:
        _write(sre.parse(pattern), out)
    except (re.error, _Unwritable):
        return None
    value = "".join(out)
    return value if re.search(pattern, value) else None
