"""An arguments model for a tool that comes with a JSON schema instead of Python types (MCP tools, LangChain
tools whose ``args_schema`` is a dict).

The registry works on pydantic models (``ToolSpec.args_model``): they give the schema the model reads, the
fields peers and entity alignment look at, and the validation before every call. For a JSON-schema tool the
model is built here: one field per property (types, ``Literal`` enums, lists, optional members, defaults,
descriptions), the schema the model reads is the tool's own, exactly, and validation runs the schema itself
(``jsonschema``, draft 2020-12 with format checks) before pydantic, so types, enums, patterns, lengths,
ranges, required and unknown keys are checked on our side before the server is called, with one error per
argument that names it. The arguments handed to the tool are the ones the model sent, as sent.
"""

from __future__ import annotations

import copy
from typing import Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, create_model
from pydantic_core import InitErrorDetails, PydanticCustomError, ValidationError

from lg_harness.errors import UsageError

_TYPES: dict[str, Any] = {"string": str, "integer": int, "number": float, "boolean": bool, "null": type(None)}


def _annotation(schema: dict[str, Any]) -> Any:
    """The Python type of one JSON-schema node (loose: the schema itself does the strict check)."""
    if "enum" in schema and schema["enum"]:
        return Literal[tuple(schema["enum"])]  # type: ignore[misc]
    if "const" in schema:
        return Literal[schema["const"]]  # type: ignore[misc]
    members = schema.get("anyOf") or schema.get("oneOf")
    if members:
        return Union[tuple(_annotation(m) for m in members)]  # noqa: UP007 - built from a tuple at run time
    kind = schema.get("type")
    if isinstance(kind, list):
        return Union[tuple(_annotation({**schema, "type": k}) for k in kind)]  # noqa: UP007
    if kind == "array":
        return list[_annotation(schema.get("items") or {})]  # type: ignore[misc]
    if kind == "object":
        return dict[str, Any]
    return _TYPES.get(str(kind), Any)


def _checker(schema: dict[str, Any]) -> Any:
    from jsonschema import Draft202012Validator, validators

    cls = validators.validator_for(schema, default=Draft202012Validator)
    return cls(schema, format_checker=cls.FORMAT_CHECKER)


class JsonSchemaArgs(BaseModel):
    """Base of the arguments models built from a JSON schema (``model_for``)."""

    # the schema decides about unknown keys (``additionalProperties``); pydantic keeps what it let through
    model_config = ConfigDict(extra="allow", populate_by_name=True)
    __json_schema__: dict[str, Any] = {}
    __validator__: Any = None

    @classmethod
    def model_json_schema(cls, *args: Any, **kwargs: Any) -> dict[str, Any]:  # type: ignore[override]
        """The tool's own schema, not one pydantic would write from the fields."""
        return copy.deepcopy(cls.__json_schema__)

    @classmethod
    def model_validate(cls, obj: Any, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        """The schema's verdict first (every error, located), then pydantic's."""
        errors = sorted(cls.__validator__.iter_errors(obj), key=lambda e: list(e.absolute_path))
        if errors:
            raise ValidationError.from_exception_data(cls.__name__, [
                InitErrorDetails(type=PydanticCustomError("missing" if e.validator == "required" else "json_schema",
                                                          "{detail}", {"detail": e.message}),
                                 loc=_loc(e), input=_input(e)) for e in errors])
        return super().model_validate(obj, *args, **kwargs)

    def arguments(self) -> dict[str, Any]:
        """The arguments as the model sent them (only those it set), JSON as the server expects."""
        return self.model_dump(mode="json", exclude_unset=True, by_alias=True)


def _loc(error: Any) -> tuple[str | int, ...]:
    """Where the error is: the argument's path, and for a missing or unknown key that key."""
    path = tuple(error.absolute_path)
    if error.validator in ("required", "additionalProperties"):
        missing = [p for p in error.validator_value if p not in error.instance] if error.validator == "required" \
            else sorted(set(error.instance) - set(error.schema.get("properties") or {}))
        return (*path, *missing[:1])
    return path


def _input(error: Any) -> Any:
    """What was sent where the error is (an unknown key's value, not the whole arguments object)."""
    loc = _loc(error)
    if error.validator == "additionalProperties" and loc and isinstance(error.instance, dict):
        return error.instance.get(loc[-1])
    return error.instance


def model_for(name: str, schema: dict[str, Any]) -> type[JsonSchemaArgs]:
    """The arguments model of the tool ``name`` whose parameters are the JSON schema ``schema``.

    Raises:
        TypeError: The schema is not a valid JSON schema of an object.
    """
    from jsonschema.exceptions import SchemaError

    schema = dict(schema or {"type": "object", "properties": {}})
    if schema.get("type", "object") != "object":
        raise UsageError(f"the arguments of tool {name!r} must be a JSON object schema, got type {schema.get('type')!r}")
    try:
        validator = _checker(schema)
        validator.check_schema(schema)
    except SchemaError as err:
        raise UsageError(f"tool {name!r} has an invalid JSON schema: {err.message}") from err
    required = set(schema.get("required") or ())
    fields: dict[str, Any] = {}
    for index, (prop, sub) in enumerate((schema.get("properties") or {}).items()):
        sub = sub if isinstance(sub, dict) else {}
        default = ... if prop in required else copy.deepcopy(sub.get("default"))
        annotation = _annotation(sub) if prop in required else _annotation(sub) | None
        # a property called "json" or "model_config" (or "2fa") keeps its name as the alias of a safe field
        safe = prop.isidentifier() and not prop.startswith("_") and not hasattr(BaseModel, prop)
        fields[prop if safe else f"arg_{index}"] = (annotation, Field(default, description=sub.get("description"),
                                                                      alias=None if safe else prop))
    model = create_model(f"{name}_args", __base__=JsonSchemaArgs, **fields)  # type: ignore[call-overload]
    model.__json_schema__ = copy.deepcopy(schema)
    model.__validator__ = validator
    return model


__all__ = ["JsonSchemaArgs", "model_for"]
