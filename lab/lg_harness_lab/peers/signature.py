"""A domain tool as a plain Python function with a typed signature, for frameworks that read one.

Pydantic AI and the OpenAI Agents SDK build a tool's JSON schema and its argument validator from the
function's signature (and docstring). Giving them a function whose parameters are the tool's own argument
fields, each ``Annotated`` with the field's type, constraints and description, lets each framework
validate the model's arguments its own way against the same constraints our registry states.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Annotated, Any

from pydantic import Field

from lg_harness.tools.registry import ToolSpec


def tool_parameters(spec: ToolSpec) -> list[inspect.Parameter]:
    """The tool's arguments as keyword-only parameters (so optional ones may come in any order)."""
    params = []
    for name, info in spec.args_model.model_fields.items():
        extra = Field(description=info.description) if info.description else Field()
        annotation = Annotated[(info.annotation, *info.metadata, extra)] if info.metadata or info.description \
            else info.annotation
        default = inspect.Parameter.empty if info.is_required() else info.get_default(call_default_factory=True)
        params.append(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation))
    return params


def typed_function(spec: ToolSpec, body: Callable[..., Any], context: tuple[str, Any] | None = None,
                   is_async: bool = False) -> Callable[..., Any]:
    """``body(ctx, **arguments)`` (or ``body(**arguments)``) behind the tool's own signature and name."""
    params = tool_parameters(spec)
    if context is not None:
        params.insert(0, inspect.Parameter(context[0], inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                           annotation=context[1]))

    async def async_function(*args: Any, **kwargs: Any) -> Any:
        return await body(*args, **kwargs)

    def sync_function(*args: Any, **kwargs: Any) -> Any:
        return body(*args, **kwargs)

    function = async_function if is_async else sync_function
    function.__name__ = function.__qualname__ = spec.name
    function.__doc__ = spec.description
    function.__signature__ = inspect.Signature(params, return_annotation=Any)  # type: ignore[attr-defined]
    function.__annotations__ = {p.name: p.annotation for p in params} | {"return": Any}
    return function
