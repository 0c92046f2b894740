"""``@tool``: turn a typed function into a :class:`Tool`.

The parameter schema comes from the type hints (through a pydantic model) and
the parameter descriptions from the docstring (Google, NumPy or reST style,
parsed by ``docstring_parser``). The model's arguments are validated with the
same pydantic model before the function runs; invalid arguments become an
error result the model sees, naming the field.

Sync functions run inline on the event loop, which is the fastest path for the
short functions most tools are. A function that blocks (network, disk, CPU)
should be ``async`` or be declared ``@tool(threaded=True)`` so it runs in a
worker thread and the loop stays responsive.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable
from typing import Any, get_type_hints, overload

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model
from pydantic_core import to_json

from ._tool import ToolCallContext, ToolDescriptor, ToolOutput

__all__ = ["FunctionTool", "tool"]


def format_validation_error(tool_id: str, exc: ValidationError) -> str:
    """A model-facing message naming each invalid field and why."""
    problems = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err["loc"]) or "arguments"
        problems.append(f"field '{where}': {err['msg']}")
    return f"Invalid arguments for tool '{tool_id}': " + "; ".join(problems)


def _parse_doc(text: str) -> tuple[str, Any]:
    """A tool's description and its parsed docstring (``None`` for one line).

    One line that is not a reST/epydoc field (``:param x:``, ``@param x:``)
    holds no parameters: it is the description as written, and
    ``docstring_parser`` (milliseconds to import) loads only for the rest.
    """
    if not text.strip():
        return "", None
    if "\n" not in text and not text.lstrip().startswith((":", "@")):
        return text, None
    import docstring_parser

    doc = docstring_parser.parse(text)
    parts = [doc.short_description or "", doc.long_description or ""]
    return "\n\n".join(p for p in parts if p), doc


def _to_content(value: Any) -> ToolOutput:
    if type(value) is str:  # the usual result, first
        return ToolOutput(content=value)
    if isinstance(value, ToolOutput):
        return value
    if value is None:
        return ToolOutput.ok("")
    if isinstance(value, str):
        return ToolOutput.ok(value)
    return ToolOutput.ok(to_json(value).decode())


class FunctionTool:
    """A :class:`Tool` backed by a Python function; built by :func:`tool`."""

    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        threaded: bool = False,
    ) -> None:
        self.fn = fn
        self.threaded = threaded
        self._is_async = inspect.iscoroutinefunction(fn)
        tool_id = name or fn.__name__
        summary, doc = _parse_doc(inspect.getdoc(fn) or "")
        param_docs = {p.arg_name: p.description for p in doc.params} if doc is not None else {}
        hints = get_type_hints(fn, include_extras=True)
        self._ctx_param: str | None = None
        fields: dict[str, Any] = {}
        for param in inspect.signature(fn).parameters.values():
            annotation = hints.get(param.name, Any)
            if annotation is ToolCallContext:
                self._ctx_param = param.name
                continue
            if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
                raise TypeError(
                    f"tool {tool_id!r}: parameter *{param.name} is not supported; "
                    f"declare every argument explicitly"
                )
            default = ... if param.default is param.empty else param.default
            fields[param.name] = (
                annotation,
                Field(default, description=param_docs.get(param.name)),
            )
        self.args_model: type[BaseModel] = create_model(
            f"{tool_id}_args",
            __config__=ConfigDict(extra="forbid"),
            **fields,
        )
        # The validator itself, not ``model_validate``: its Python wrapper costs more than
        # validating a small argument dict. Fields are exactly the parameters (extra is
        # forbidden), so the validated instance's ``__dict__`` is the keyword arguments.
        self._validate = self.args_model.__pydantic_validator__.validate_python
        self._dump = self.args_model.__pydantic_serializer__.to_python
        schema = self.args_model.model_json_schema()
        schema.pop("title", None)
        for prop in schema.get("properties", {}).values():
            prop.pop("title", None)
        text = description
        if text is None:
            text = summary
        self._descriptor = ToolDescriptor(id=tool_id, description=text, parameters=schema)

    @property
    def descriptor(self) -> ToolDescriptor:
        """The model-visible descriptor."""
        return self._descriptor

    def __repr__(self) -> str:
        return f"<FunctionTool {self._descriptor.id!r}>"

    def coerce_arguments(self, args: dict[str, Any]) -> dict[str, Any]:
        """``args`` validated and coerced by the parameter model, as JSON values.

        The executor calls this before the tool gates, so gates, observers and
        the function all see ``"5000"`` as ``5000`` and ``"yes"`` as ``True``.
        Validating the result again yields the same arguments (the JSON form
        round-trips). Raises ``pydantic.ValidationError`` on invalid arguments.
        """
        return self._dump(self._validate(args), mode="json")  # type: ignore[no-any-return]

    def invalid_arguments(self, exc: ValidationError) -> str:
        """The model-visible message for arguments :meth:`coerce_arguments` rejected."""
        return format_validation_error(self._descriptor.id, exc)

    async def call(self, args: dict[str, Any], ctx: ToolCallContext) -> ToolOutput:
        """Validate ``args`` and run the function."""
        try:
            kwargs = dict(self._validate(args).__dict__)
        except ValidationError as exc:
            return ToolOutput.error(format_validation_error(self._descriptor.id, exc))
        if self._ctx_param is not None:
            kwargs[self._ctx_param] = ctx
        if self._is_async:
            result = await self.fn(**kwargs)
        elif self.threaded:
            result = await asyncio.to_thread(self.fn, **kwargs)
        else:
            result = self.fn(**kwargs)
        return _to_content(result)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Call the wrapped function directly (handy in tests)."""
        return self.fn(*args, **kwargs)


@overload
def tool(fn: Callable[..., Any], /) -> FunctionTool: ...
@overload
def tool(
    *, name: str | None = None, description: str | None = None, threaded: bool = False
) -> Callable[[Callable[..., Any]], FunctionTool]: ...
def tool(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    threaded: bool = False,
) -> FunctionTool | Callable[[Callable[..., Any]], FunctionTool]:
    """Decorate a typed function (sync or async) to make it a tool.

    A parameter annotated ``ToolCallContext`` receives the call context and is
    not part of the schema. ``name`` defaults to the function name,
    ``description`` to its docstring (without the parameter section).
    """

    def wrap(func: Callable[..., Any]) -> FunctionTool:
        return FunctionTool(func, name=name, description=description, threaded=threaded)

    return wrap(fn) if fn is not None else wrap
