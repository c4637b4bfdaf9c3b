"""Reading a scenario file, and one line for one that cannot be used: the file, the line, the field and what
is wrong.

YAML's and pydantic's own messages run to several lines (a snippet with a caret, one block per error, a URL
per error); a person editing a scenario needs ``goals.yaml:14: scenario s3: turns.0.expect.tools: Input
should be a valid list (and 1 more problem)``. Lines come from the YAML node tree (``yaml.compose`` keeps
where each value starts), the row of a .jsonl file, or the position JSON reports.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from lg_harness.errors import HarnessError


def read_rows(path: Path) -> tuple[str, list[Any]]:
    """The file's text and its scenarios as plain data (.jsonl: one a line; .json and .yaml: one or a list);
    ``HarnessError`` in one line when it cannot be read or parsed."""
    try:
        text = path.read_text(encoding="utf-8")
        if path.suffix == ".jsonl":
            return text, _jsonl_rows(text)
        data = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except (OSError, ValueError, yaml.YAMLError) as err:
        raise HarnessError(unreadable(path, err)) from err
    return text, data if isinstance(data, list) else [data]


def _jsonl_rows(text: str) -> list[Any]:
    rows, at = [], 0
    for line in text.splitlines(keepends=True):
        if line.strip():
            try:
                rows.append(json.loads(line.rstrip("\r\n")))
            except json.JSONDecodeError as err:  # where in the file, not in the line
                raise json.JSONDecodeError(err.msg, text, at + err.pos) from None
        at += len(line)
    return rows


def _yaml_line(text: str, index: int, loc: tuple[Any, ...]) -> int | None:
    """The line (1-based) where the value at ``loc`` of row ``index`` starts, as deep as the path goes."""
    try:
        node = yaml.compose(text)
    except yaml.YAMLError:
        return None
    if isinstance(node, yaml.SequenceNode):
        node = node.value[index] if index < len(node.value) else None
    line = node.start_mark.line + 1 if node is not None else None
    for part in loc:
        if isinstance(node, yaml.MappingNode):
            node = next((v for k, v in node.value if getattr(k, "value", None) == str(part)), None)
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value):
            node = node.value[part]
        else:
            break
        if node is None:
            break
        line = node.start_mark.line + 1
    return line


def _json_line(text: str, suffix: str, index: int, loc: tuple[Any, ...]) -> int | None:
    if suffix == ".jsonl":  # one scenario a line: the row's own line
        rows = [n for n, line in enumerate(text.splitlines(), 1) if line.strip()]
        return rows[index] if index < len(rows) else None
    keys = [p for p in loc if isinstance(p, str)]  # a .json file: where the innermost field's key first appears
    at = text.find(json.dumps(keys[-1])) if keys else -1
    return text.count("\n", 0, at) + 1 if at >= 0 else None


def invalid_scenario(path: Path, text: str, index: int, row: Any, err: ValidationError) -> str:
    """A scenario that does not fit the format: where, which field, what is wrong, in one line."""
    first = err.errors()[0]
    loc = tuple(first.get("loc") or ())
    line = _yaml_line(text, index, loc) if path.suffix in (".yaml", ".yml") else _json_line(text, path.suffix, index, loc)
    name = row.get("id") if isinstance(row, dict) else None
    field = ".".join(str(p) for p in loc) or "(the scenario)"
    more = f" (and {err.error_count() - 1} more problem{'s' if err.error_count() > 2 else ''})" \
        if err.error_count() > 1 else ""
    message = str(first.get("msg") or "invalid").removeprefix("Value error, ")
    return " ".join(f"{path}:{line or '?'}: scenario {name or f'#{index + 1}'}: {field}: {message}{more}".split())


def unreadable(path: Path, err: BaseException) -> str:
    """A file that does not parse, or cannot be read: where, in one line."""
    mark = getattr(err, "problem_mark", None)
    if isinstance(err, yaml.YAMLError) and mark is not None:
        problem = getattr(err, "problem", None) or "not valid YAML"
        context = getattr(err, "context", None)
        return " ".join(f"{path}:{mark.line + 1}: {problem}{f' ({context})' if context else ''}".split())
    if isinstance(err, json.JSONDecodeError):
        return f"{path}:{err.lineno}: not valid JSON: {err.msg} (column {err.colno})"
    return " ".join(f"cannot read scenarios from {path}: {err}".split())
