"""Design-file mistakes as one line: the file, the field, what is wrong and the valid choices."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError


def _field(loc: tuple[Any, ...]) -> str:
    return ".".join(str(p) for p in loc) or "(top level)"


def _one(err: dict[str, Any], model: type[BaseModel]) -> str:
    loc: tuple[Any, ...] = tuple(err.get("loc") or ())
    where = _field(loc)
    if err.get("type") == "extra_forbidden":
        owner: Any = model
        for part in loc[:-1]:  # walk to the model that owns the unknown key
            owner = getattr(owner.model_fields.get(str(part)), "annotation", None)
        valid = list(owner.model_fields) if isinstance(owner, type) and issubclass(owner, BaseModel) else []
        kind = "knob" if loc[:1] == ("knobs",) else "field"
        return f"unknown {kind} '{loc[-1]}'" + (f" (valid {kind}s: {', '.join(valid)})" if valid else "")
    got = err.get("input")
    shown = f" (got {got!r})" if got is not None and not isinstance(got, dict | list) else ""
    return f"{where}: {err.get('msg', 'invalid')}{shown}"


def design_file_error(path: Path, err: Exception, model: type[BaseModel]) -> str:
    """``err`` raised reading ``path`` into ``model``, as one line naming the file and the field."""
    if isinstance(err, ValidationError):
        details = "; ".join(_one(e, model) for e in err.errors())  # type: ignore[arg-type]
    elif isinstance(err, yaml.MarkedYAMLError) and err.problem_mark is not None:
        mark = err.problem_mark
        details = f"YAML syntax at line {mark.line + 1}, column {mark.column + 1}: {err.problem or err}"
    else:
        details = " ".join(str(err).split())
    return f"design file {path}: {details}"
