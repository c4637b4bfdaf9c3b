"""Entity types: what an identifier looks like, its canonical form, and how the harness treats it.

A domain declares its entity types (an order number, a ticket, an asset tag); a tool argument is tied to
one either by a marker in its annotation, ``Annotated[str, Entity("order"), Field(pattern=...)]``, or by a
schema ``pattern`` that one of the type's examples matches. The harness then knows, for any domain and
without lists of argument names, which arguments must come from the conversation (entity alignment), how
to write them canonically, which values a reply must ground, and what the fact card remembers.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

# Dash variants users type for "-" (en dash, em dash, minus, full-width hyphen...).
_DASHES = re.compile("[\u2010-\u2015\u2212\ufe58\ufe63\uff0d]")
_INVISIBLE = re.compile("[\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff\u00ad]")


def normalise_text(text: str) -> str:
    """NFKC (full-width digits and letters), dash variants as '-', invisible characters dropped."""
    return _DASHES.sub("-", _INVISIBLE.sub("", unicodedata.normalize("NFKC", text or "")))


@dataclass(frozen=True)
class Entity:
    """Marker for ``Annotated``: this argument (or each item of this list) names an entity of ``type``."""

    type: str


@dataclass(frozen=True)
class EntityType:
    """One kind of identifier a domain's users and tools exchange.

    Attributes:
        name: The type's name, used by markers (``Entity("order")``).
        pattern: A regex that finds a mention in free text. Its groups, if any, feed ``canonical``.
        canonical: A format string over the pattern's groups (``"ORD-{0}"``); empty keeps the match as
            written (upper-cased when ``upper``).
        examples: Values in canonical form; a tool argument whose schema pattern matches one is this type.
        slot: The slot (and fact-card key stem) a mention fills, e.g. ``order_id``; empty fills none.
        remember: Keep every mention in order on the fact card ("the first one I gave you").
        ground: A reply that states such a value must have it from a tool result or the user.
        upper: Canonical values are upper case (an argument value is also tried upper-cased).
        card: Put the latest mention on the fact card.
        card_key: Fact-card key for the latest mention (default ``last_<slot>``).
        exclude: Canonical values that look like this type but are not (``"ORD"`` is no coupon).
    """

    name: str
    pattern: str
    canonical: str = ""
    examples: tuple[str, ...] = ()
    slot: str = ""
    remember: bool = False
    ground: bool = True
    upper: bool = False
    card: bool = True
    card_key: str = ""
    exclude: tuple[str, ...] = ()
    regex: re.Pattern[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # Boundaries by character class, not \b: "查一下ORD-10172" has no word boundary before the id.
        bounded = rf"(?<![A-Za-z0-9])(?:{self.pattern})(?![A-Za-z0-9])"
        object.__setattr__(self, "regex", re.compile(bounded))

    @property
    def latest_key(self) -> str:
        return self.card_key or (f"last_{self.slot}" if self.slot else "")

    def _form(self, match: re.Match[str]) -> str:
        value = self.canonical.format(*match.groups()) if self.canonical else match.group(0)
        return value.upper() if self.upper else value

    def _forms(self, text: str) -> list[str]:
        return [v for m in self.regex.finditer(normalise_text(text)) if (v := self._form(m)) not in self.exclude]

    def find(self, text: str) -> list[str]:
        """Distinct canonical mentions in ``text``, ordered by their last appearance (``[-1]`` is latest)."""
        return list(reversed(dict.fromkeys(reversed(self._forms(text)))))

    def in_order(self, text: str) -> list[str]:
        """Distinct canonical mentions in ``text``, ordered by their first appearance."""
        return list(dict.fromkeys(self._forms(text)))

    def canonicalize(self, value: str) -> str | None:
        """The canonical form when ``value`` is exactly one mention of this type, else None."""
        found = self.find(value)
        if not found and self.upper:
            found = self.find(normalise_text(value).strip().upper())
        return found[0] if len(found) == 1 else None

    def matches_schema(self, pattern: str) -> bool:
        """Whether a JSON-schema ``pattern`` accepts this type's examples (so the argument is this type)."""
        try:
            compiled = re.compile(pattern)
        except re.error:
            return False
        return bool(self.examples) and all(compiled.search(e) for e in self.examples)


def find_mentions(types: Sequence[EntityType], text: str) -> dict[str, list[str]]:
    """Entity type -> distinct canonical mentions in ``text`` (``[-1]`` latest); types with none left out.

    A value found by an earlier type is not found again by a later, looser one (an order id is no coupon
    code), so a domain declares its types from the most specific to the most general.
    """
    try:
        found = _mentions(tuple(types), text)
    except TypeError:  # a type given a list where a tuple belongs is no cache key: found the long way
        found = _mentions.__wrapped__(tuple(types), text)
    return {name: list(values) for name, values in found.items()}


@lru_cache(maxsize=4096)
def _mentions(types: tuple[EntityType, ...], text: str) -> dict[str, tuple[str, ...]]:
    # Memoised: every message reads the same tool results and conversation again (known ids, the fact
    # check, the fact card), and the answer depends on the types and the text only.
    out: dict[str, tuple[str, ...]] = {}
    taken: set[str] = set()
    for t in types:
        found = [v for v in t.find(text) if v not in taken and v.replace("-", "") not in taken]
        if found:
            out[t.name] = tuple(found)
            taken.update(found)
            taken.update(v.replace("-", "") for v in found)
    return out


def user_facing(types: Sequence[EntityType]) -> list[EntityType]:
    """The types users give (they fill a slot or a fact-card key); the rest are only grounded in replies."""
    return [t for t in types if t.slot or t.card_key]


def card_updates(types: Sequence[EntityType], texts: Sequence[str], card: dict[str, Any],
                 cap: int = 12) -> dict[str, Any]:
    """Fact-card updates for what ``texts`` (user messages, oldest first) mention.

    Per type: its latest mention under ``latest_key``; for ``remember`` types also every mention in order of
    first appearance under ``<slot>s`` (the newest ``cap``) and the very first under ``first_<slot>``, which
    outlives any window ("which order did I give you at the start?").
    """
    updates: dict[str, Any] = {}
    facing = user_facing(types)
    for text in texts:
        for name, values in find_mentions(facing, text).items():
            t = next(x for x in facing if x.name == name)
            if t.latest_key and t.card:
                updates[t.latest_key] = values[-1]
            if t.remember and t.slot:
                known = updates.get(f"{t.slot}s", card.get(f"{t.slot}s")) or []
                # in order of first appearance; ``values`` already left out what a stricter type took
                fresh = [v for v in t.in_order(text) if v in values]
                merged = list(dict.fromkeys([*known, *fresh]))
                updates[f"{t.slot}s"] = merged[-cap:]
                if not card.get(f"first_{t.slot}") and f"first_{t.slot}" not in updates:
                    updates[f"first_{t.slot}"] = merged[0]
    return updates


def _marker(metadata: Iterable[Any]) -> str | None:
    return next((m.type for m in metadata if isinstance(m, Entity)), None)


def entity_of_annotation(annotation: Any) -> str | None:
    """The entity type an annotation marks: ``Annotated[str, Entity(t)]`` or ``list[Annotated[...]]``."""
    from typing import get_args, get_origin

    found = _marker(getattr(annotation, "__metadata__", ()))
    if found:
        return found
    return next((t for arg in get_args(annotation) if get_origin(arg) is not None or hasattr(arg, "__metadata__")
                 if (t := entity_of_annotation(arg))), None)


def entity_args(fields: dict[str, Any], schema: dict[str, Any], types: Sequence[EntityType]) -> dict[str, str]:
    """Argument name -> entity type: a marker first, then a declared type the schema fits, then one derived.

    A declared type fits an argument when one of its examples matches the argument's schema ``pattern`` or its
    name is the argument's (``order`` for ``order_id``). Where several fit (a payment id also matches a loose
    user-id pattern), the argument's name and description decide, never the order of declaration; where
    they cannot, nothing declared is taken. An argument no declared type fits gets the type derived from its
    own schema (``derived_type``), so a domain of tools alone still knows which arguments are identifiers.

    Args:
        fields: The arguments model's ``model_fields`` (pydantic ``FieldInfo`` with ``metadata``).
        schema: The tool's JSON-schema ``parameters``.
        types: The domain's declared entity types.
    """
    out: dict[str, str] = {}
    for name, info in fields.items():
        marked = _marker(getattr(info, "metadata", ())) or entity_of_annotation(getattr(info, "annotation", None))
        if marked:
            out[name] = marked
    for name, prop in (schema.get("properties") or {}).items():
        if name in out:
            continue
        declared = _declared_fit(name, prop, types)
        derived = derived_type(name, prop)
        if declared is not None or derived is not None:
            out[name] = declared.name if declared is not None else derived.name  # type: ignore[union-attr]
    return out


# -------------------------------------------------------------------------------- types from tool schemas

# An argument named like an identifier: order_id, item_ids, code, sku, ticket_number.
_ID_NAME = re.compile(r"(?:^|_)(?:id|ids|code|codes|sku|skus|number|ref)$")
_AFFIXES = re.compile(r"^(?:new|old|original|current|target|source)_|(?:_ids?|_codes?|_skus?|_numbers?|_refs?|s)$")
_FORMATS = {"uuid": r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}",
            "email": r"[\w.+-]+@[\w-]+\.[\w.-]+"}
# An identifier whose shape the schema does not give: the argument is tied, but no text is searched for it.
_NO_TEXT = r"(?!)"
# Examples a description gives: "such as '#W0000000'", "e.g. ORD-10042", "like `A1`".
_EXAMPLE = re.compile(r"(?:e\.g\.,?|such as|for example,?|like|for instance,?)\s+['\"`]?([^\s'\"`,;]+?)['\"`]?(?=[\s,;).]|$)",
                      re.I)
_WORD = re.compile(r"[a-z]+")


def entity_stem(argument: str) -> str:
    """What an identifier argument names: ``order_id`` -> ``order``, ``new_item_ids`` -> ``item``."""
    stem = argument.lower()
    for _ in range(2):
        stem = _AFFIXES.sub("", stem) or stem
    return stem


def string_schema(prop: dict[str, Any]) -> dict[str, Any] | None:
    """The string schema an argument takes: itself, its array's items, or the string member of an
    ``anyOf``/``oneOf`` (an optional argument); None when it takes no string."""
    if prop.get("type") == "array" or "items" in prop:
        return string_schema(prop.get("items") or {})
    for key in ("anyOf", "oneOf"):
        found = next((t for m in prop.get(key) or () if isinstance(m, dict) and (t := string_schema(m))), None)
        if found is not None:
            return found
    kind = prop.get("type")
    return prop if kind == "string" or (isinstance(kind, list) and "string" in kind) else None


def _text_regex(pattern: str) -> str | None:
    """A schema pattern as a regex that finds mentions in text (anchors dropped), or None if not valid."""
    body = pattern[1:] if pattern.startswith("^") else pattern
    body = body[:-1] if body.endswith("$") and not body.endswith("\\$") else body
    try:
        re.compile(body)
        re.compile(pattern)
    except re.error:
        return None
    return body


def derived_type(argument: str, prop: dict[str, Any]) -> EntityType | None:
    """The entity type an argument's own schema says it takes: its ``pattern``, a ``format`` that names an
    identifier (``uuid``, ``email``), or a name that says it is one (``order_id``); None for other arguments.

    The type is named by the argument (``order_id`` -> ``order``), takes examples from the description that
    fit the pattern, and is grounded in replies when it has a shape to find.
    """
    text = string_schema(prop)
    if text is None or "enum" in text or "const" in text:
        return None
    pattern = text.get("pattern")
    regex = _text_regex(pattern) if isinstance(pattern, str) else None
    if regex is None:
        regex = _FORMATS.get(str(text.get("format")))
    if regex is None and not _ID_NAME.search(argument.lower()):
        return None
    description = str(text.get("description") or prop.get("description") or "")
    examples = tuple(e for e in _EXAMPLE.findall(description) if regex and re.fullmatch(regex, e))
    return EntityType(entity_stem(argument), regex or _NO_TEXT, examples=examples, ground=regex is not None)


def _words(*texts: str) -> set[str]:
    return {w for t in texts for w in _WORD.findall(t.lower().replace("_", " "))}


_GENERIC_STEMS = frozenset({"id", "code", "ref", "key", "value", "identifier", "number", "sku"})


def _declared_fit(argument: str, prop: dict[str, Any], types: Sequence[EntityType]) -> EntityType | None:
    """The declared type that fits an argument (see ``entity_args``), or None.

    One fit is taken unless the argument's name says it is something else (``product_id`` is no ``item``,
    though both are ten digits); several are told apart by the words of the argument's name and description.
    """
    text = string_schema(prop) or {}
    pattern = text.get("pattern")
    stem = entity_stem(argument)
    fits = [t for t in types if (isinstance(pattern, str) and t.matches_schema(pattern))
            or t.name == stem or (t.slot and t.slot == argument)]
    if len(fits) == 1:
        named_else = _ID_NAME.search(argument.lower()) and stem not in _GENERIC_STEMS
        return fits[0] if _named(fits[0], argument) or not named_else else None
    said = _words(argument, str(text.get("description") or prop.get("description") or ""))
    scores = [(len(_words(t.name, t.slot) & said), t) for t in fits]
    best = max((score for score, _ in scores), default=0)
    top = [t for score, t in scores if score == best]
    return top[0] if best and len(top) == 1 else None


def _named(t: EntityType, argument: str) -> bool:
    """Whether the argument's name says the type (``payment`` in ``payment_method_id``)."""
    return bool(_words(t.name, t.slot) & _words(argument))


def derived_types(schemas: Iterable[dict[str, Any]], declared: Sequence[EntityType] = ()) -> list[EntityType]:
    """The entity types the tools' own schemas give (``parameters`` of each), for the arguments no declared
    type fits: one per argument stem and shape (``item`` for ``item_ids`` and ``new_item_ids``)."""
    found: dict[str, EntityType] = {}
    taken = {t.name for t in declared}
    for params in schemas:
        for name, prop in (params.get("properties") or {}).items():
            if _declared_fit(name, prop, declared) is not None or (t := derived_type(name, prop)) is None:
                continue
            if t.name in taken or found.get(t.name, t).pattern != t.pattern:
                continue  # the same stem with another shape elsewhere: tied to the argument only
            found[t.name] = found.get(t.name) or t
    return list(found.values())


__all__ = ["Entity", "EntityType", "card_updates", "derived_type", "derived_types", "entity_args", "entity_of_annotation",
           "entity_stem", "find_mentions", "normalise_text", "string_schema", "user_facing"]
