"""The rule language's errors: one for rules that do not compile, one for rules that cannot decide."""

from __future__ import annotations

from lg_harness.errors import RunError, UsageError


class RuleSyntaxError(UsageError):
    """Rules that do not compile: the message names the line and the offending token. A usage error: the rule
    text is the caller's input, and fixing it fixes the call.

    Attributes:
        line: 1-based line number in the rule text.
        token: the offending token's text, or None at the end of a line.
    """

    def __init__(self, line: int, message: str, token: str | None = None) -> None:
        super().__init__(f"line {line}: {message}")
        self.line = line
        self.token = token


class RuleRuntimeError(RunError):
    """Rules that compiled but cannot decide: no rule matched, or a comparison of incompatible values. A run
    error: it depends on the state the rules met while running, not on the call alone."""


class EvalError(Exception):
    """Raised inside the evaluator; ``RuleSet`` adds the rule's line before it reaches the user."""
