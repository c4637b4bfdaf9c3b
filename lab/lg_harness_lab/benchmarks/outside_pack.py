"""A domain from outside the harness whose changing tool calls an outside system the harness cannot roll back.

A library desk: ``renew_loan`` appends a line to ``renewals.log`` in the data dir (in memory without one),
standing for any external API. It ignores the idempotency key and says so (``idempotent`` is left False),
so nothing but the harness's change ledger stands between a crash and a second renewal. The chaos benchmark
and ``tests/tools/test_change_ledger.py`` use it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

from pydantic import Field

from lg_harness.core.domain import Domain, Intent, Route
from lg_harness.tools.context import ToolContext
from lg_harness.tools.entities import Entity, EntityType
from lg_harness.tools.errors import NotFoundError

BookId = Annotated[str, Entity("book"), Field(pattern=r"^BOOK-\d{4}$", description="Book id, e.g. BOOK-0042.")]
BOOKS = {"BOOK-0042": "The Hitchhiker's Guide to the Galaxy", "BOOK-0007": "Dune"}
LOG = "renewals.log"


class Outbox:
    """The outside system: every renewal it is asked for is one more line, whoever asks and however often."""

    def __init__(self, path: str) -> None:
        self.path = None if path == ":memory:" else Path(path)
        self.lines: list[str] = []

    def append(self, record: dict) -> None:
        line = json.dumps(record, sort_keys=True)
        if self.path is None:
            self.lines.append(line)
            return
        with self.path.open("a", encoding="utf-8") as f:
            f.write(line + "\n")
            f.flush()

    def renewals(self) -> list[dict]:
        lines = self.path.read_text(encoding="utf-8").splitlines() if self.path and self.path.exists() else self.lines
        return [json.loads(x) for x in lines if x.strip()]


def _outbox(ctx: ToolContext) -> Outbox:
    return ctx.extras["outbox"]


def get_book(ctx: ToolContext, book_id: BookId) -> dict:
    """Look up a library book by its id: its title and how often its loan was renewed.

    Args:
        book_id: The book's id.
    """
    if book_id not in BOOKS:
        raise NotFoundError(f"No book {book_id}.")
    count = sum(r["book_id"] == book_id for r in _outbox(ctx).renewals())
    return {"book_id": book_id, "title": BOOKS[book_id], "renewals": count}


def renew_loan(ctx: ToolContext, book_id: BookId) -> dict:
    """Renew (extend) the loan of a borrowed library book by two weeks.

    Args:
        book_id: The borrowed book's id.
    """
    if book_id not in BOOKS:
        raise NotFoundError(f"No book {book_id}.")
    _outbox(ctx).append({"book_id": book_id, "user": ctx.user_id, "key": ctx.idempotency_key})
    return {"book_id": book_id, "status": "renewed"}


renew_loan.changes_state = True  # and not idempotent: the outside system has no idempotency keys


def renew_loan_keyed(ctx: ToolContext, book_id: BookId) -> dict:
    """Renew (extend) the loan of a borrowed library book by two weeks.

    Args:
        book_id: The borrowed book's id.
    """
    if any(r.get("key") == ctx.idempotency_key for r in _outbox(ctx).renewals()):
        return {"book_id": book_id, "status": "renewed"}  # this key was applied already: an outside system's dedupe
    return renew_loan(ctx, book_id)


renew_loan_keyed.__name__ = "renew_loan"
renew_loan_keyed.changes_state = True
renew_loan_keyed.idempotent = True  # it honours ctx.idempotency_key


def open_backends(path_for) -> dict:
    return {"outbox": Outbox(path_for(LOG))}


def renewals(data_dir: str | Path) -> list[dict]:
    """What the outside system holds: one record per renewal it applied."""
    return Outbox(str(Path(data_dir) / LOG)).renewals()


def _domain(renew) -> Domain:
    return Domain(
        name="library",
        description="a lending library's desk",
        system_prompt="You are a library assistant. Use the tools offered; never invent book ids.",
        intents=(
            Intent("renew", kind="task", rules={"en": ("renew", "extend")},
                   route=Route(required=(("book_id",),), tools=("renew_loan", "get_book"))),
            Intent("book_info", kind="task", rules={"en": ("book", "about")}, entity_hint="book",
                   route=Route(required=(("book_id",),), tools=("get_book",))),
            Intent("greeting", kind="conversational", rules={"en": ("hello", "hi")}),
        ),
        entity_types=(EntityType("book", r"BOOK-(\d{4})", canonical="BOOK-{0}", examples=("BOOK-0042",),
                                 slot="book_id", remember=True),),
        tools=(get_book, renew),
        phrases={"ask_book_id": {"en": "Which book? Its id looks like BOOK-1234."}},
        default_user="reader-1",
        open_resources=open_backends,
    )


DOMAIN = _domain(renew_loan)
# The same desk on an outside system that deduplicates by idempotency key.
DOMAIN_KEYED = _domain(renew_loan_keyed)
