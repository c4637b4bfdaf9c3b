"""The rule language's tokenizer: one line of rule text into tokens, with errors that name the column."""

from __future__ import annotations

import math
import re
from typing import Any, NamedTuple

from lg_harness.core.routing.errors import RuleSyntaxError


class Token(NamedTuple):
    """One lexical token. ``kind``: name, number, string, op, arrow, minus, punct or eol."""

    kind: str
    text: str
    value: Any
    line: int
    column: int


KEYWORDS = frozenset({"if", "when", "and", "or", "not", "in", "true", "false", "null"})
COMPARISONS = frozenset({"==", "!=", "<", "<=", ">", ">="})
_OPERATOR_HINTS = {"=": "==", "&&": "and", "&": "and", "||": "or", "|": "or", "!": "not", "=>": ">= or ->",
                   "=<": "<=", "<>": "!="}
_NUMBER = re.compile(r"\d+(?:\.\d+)?(?:[eE][+-]?\d+)?", re.ASCII)
# '-' is its own token so that `x>=-1` reads as `x >= -1`, and `->` is matched before it.
_SCANNER = re.compile(r"""
    (?P<space>\s+)
  | (?P<comment>\#.*)
  | (?P<number>\d+(?:\.\d+)?(?:[eE][+-]?\d+)?[A-Za-z0-9_.]*)
  | (?P<name>[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)
  | (?P<arrow>->)
  | (?P<minus>-)
  | (?P<op>[=!<>~&|+*/%^@]+)
  | (?P<punct>[()\[\],:])
""", re.VERBOSE | re.ASCII)
_ESCAPES = {"\\": "\\", '"': '"', "'": "'", "n": "\n", "t": "\t"}
_CLOSERS = {")": "(", "]": "["}
_BRACKET_NAMES = {"(": "parentheses", "[": "brackets"}


def _scan_string(text: str, start: int, line: int) -> tuple[Token, int]:
    quote, pos, chars = text[start], start + 1, []
    while pos < len(text) and text[pos] != quote:
        if text[pos] == "\\":
            escape = text[pos + 1:pos + 2]
            if escape not in _ESCAPES:
                raise RuleSyntaxError(line, f"unknown escape '\\{escape}' in string {text[start:pos + 2]}",
                                      token=text[start:pos + 2])
            chars.append(_ESCAPES[escape])
            pos += 2
        else:
            chars.append(text[pos])
            pos += 1
    if pos >= len(text):
        raise RuleSyntaxError(line, f"unterminated string {text[start:].rstrip()}", token=text[start:])
    return Token("string", text[start:pos + 1], "".join(chars), line, start), pos + 1


def _number_token(text: str, line: int, column: int) -> Token:
    if not _NUMBER.fullmatch(text):
        raise RuleSyntaxError(line, f"bad number '{text}'", token=text)
    value = float(text) if any(c in text for c in ".eE") else int(text)
    if isinstance(value, float) and not math.isfinite(value):
        raise RuleSyntaxError(line, f"number out of range '{text}'", token=text)
    return Token("number", text, value, line, column)


def _op_token(text: str, line: int, column: int) -> Token:
    if text not in COMPARISONS:
        hint = _OPERATOR_HINTS.get(text)
        suffix = f" (did you mean '{hint}'?)" if hint else ""
        raise RuleSyntaxError(line, f"unknown operator '{text}'{suffix}", token=text)
    return Token("op", text, text, line, column)


def _make_token(kind: str, text: str, line: int, column: int) -> Token:
    if kind == "number":
        return _number_token(text, line, column)
    if kind == "op":
        return _op_token(text, line, column)
    return Token(kind, text, text, line, column)


def _track_brackets(token: Token, stack: list[Token]) -> None:
    if token.kind != "punct":
        return
    if token.text in _BRACKET_NAMES:
        stack.append(token)
    elif token.text in _CLOSERS:
        opener = _CLOSERS[token.text]
        if not stack:
            raise RuleSyntaxError(token.line, f"unbalanced {_BRACKET_NAMES[opener]}: unexpected '{token.text}' "
                                  f"at column {token.column + 1}", token=token.text)
        if stack[-1].text != opener:
            last = stack[-1]
            raise RuleSyntaxError(token.line, f"unbalanced {_BRACKET_NAMES[last.text]}: '{last.text}' at column "
                                  f"{last.column + 1} closed by '{token.text}'", token=token.text)
        stack.pop()


def tokenize_line(text: str, line: int) -> list[Token]:
    """The tokens of one line of rule text, ending with an ``eol`` token.

    Args:
        text: the line, without its line break.
        line: its 1-based number, for error messages.

    Raises:
        RuleSyntaxError: an unknown operator or character, a bad number, an unterminated string, or
            unbalanced parentheses or brackets.
    """
    tokens: list[Token] = []
    brackets: list[Token] = []
    pos = 0
    while pos < len(text):
        if text[pos] in "\"'":
            token, pos = _scan_string(text, pos, line)
        else:
            match = _SCANNER.match(text, pos)
            if match is None:
                raise RuleSyntaxError(line, f"unexpected character {text[pos]!r}", token=text[pos])
            pos = match.end()
            if match.lastgroup in ("space", "comment"):
                continue
            token = _make_token(match.lastgroup or "", match.group(), line, match.start())
        _track_brackets(token, brackets)
        tokens.append(token)
    if brackets:
        opener = brackets[-1]
        raise RuleSyntaxError(line, f"unbalanced {_BRACKET_NAMES[opener.text]}: '{opener.text}' at column "
                              f"{opener.column + 1} is never closed", token=opener.text)
    tokens.append(Token("eol", "", None, line, len(text)))
    return tokens
