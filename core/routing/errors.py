"""The rule language's errors: one for rules that do not compile, one for rules that cannot decide."""

from __future__ import annotations

from lg_harness.errors import HarnessError


class RuleSyntaxError(HarnessError):
    """Rules that do not compile: the message names the line and the offending token.

    Attributes:
        line: 1-based line number in the rule text.
        token: the offending token's text, or None at the end of a line.
    """

    def __init__(self, line: int, message: str, token: str | None = None) -> None:
        super().__init__(f"line {line}: {message}")
        self.line = line
        self.token = token


class RuleRuntimeError(HarnessError):
    """Rules that compiled but cannot decide: no rule matched, or a comparison of incompatible values."""


class EvalError(Exception):
    """Raised inside the evaluator; ``RuleSet`` adds the rule's line before it reaches the user."""
