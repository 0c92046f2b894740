"""Awaken's own models on the A2A wire: camelCase keys, as every A2A field is named.

A2A's JSON is camelCase (the TCK's serialization test rejects any snake_case
key in a response), so the events, usage and tickets awaken puts into task
metadata are written with their field names in camelCase. Only the models'
own field names change: a value the model holds as free JSON (a tool call's
``arguments``, a ticket's ``payload``, a structured ``output``) is the
caller's data and passes unchanged, and so does every string value.
:func:`from_wire` reverses :func:`to_wire` by walking the target type, so a
key is renamed only where that type has a field of that name. Numbers read
back from a protobuf ``Struct`` (every number a double) are whole numbers
again where they were whole.
"""

from __future__ import annotations

import types
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel
from pydantic.alias_generators import to_camel

__all__ = ["from_wire", "to_wire", "whole_numbers"]

_DEPTH = 64
"""Models nest a few levels (a ticket's child ticket inside a delegation payload is
free data, not a model); a deeper walk is malformed input, left as it is."""


def whole_numbers(value: Any) -> Any:
    """JSON read from a protobuf ``Struct`` with whole-number floats as ints."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: whole_numbers(v) for k, v in value.items()}
    if isinstance(value, list):
        return [whole_numbers(v) for v in value]
    return value


def _camel(model: Any, dumped: Any, depth: int) -> Any:
    if depth > _DEPTH:
        return dumped
    if isinstance(model, BaseModel) and isinstance(dumped, dict):
        return {
            to_camel(name): _camel(getattr(model, name, None), value, depth + 1)
            for name, value in dumped.items()
        }
    if isinstance(model, (list, tuple)) and isinstance(dumped, list) and len(model) == len(dumped):
        return [_camel(m, d, depth + 1) for m, d in zip(model, dumped, strict=True)]
    return dumped


def to_wire(model: BaseModel) -> dict[str, Any]:
    """``model`` as JSON data with its (and its nested models') field names in camelCase."""
    out: dict[str, Any] = _camel(model, model.model_dump(mode="json"), 0)
    return out


def _models(tp: Any) -> list[type[BaseModel]]:
    """The model classes a field's annotation may hold (unwrapping Optional, Annotated)."""
    origin = get_origin(tp)
    if origin is Annotated:
        return _models(get_args(tp)[0])
    if origin is Union or origin is types.UnionType:
        return [m for arg in get_args(tp) for m in _models(arg)]
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        return [tp]
    return []


def _item_type(tp: Any) -> Any:
    """The element type of a list/tuple annotation, else ``None``."""
    origin = get_origin(tp)
    if origin is Annotated:
        return _item_type(get_args(tp)[0])
    if origin is Union or origin is types.UnionType:
        items = [t for t in map(_item_type, get_args(tp)) if t is not None]
        return items[0] if items else None
    if origin in (list, tuple, set, frozenset):
        args = [a for a in get_args(tp) if a is not Ellipsis]
        return args[0] if args else None
    return None


def _tags(model: type[BaseModel]) -> dict[str, tuple[Any, ...]]:
    """The model's literal fields (its discriminators: ``type``, ``kind``) by wire name."""
    return {
        to_camel(name): get_args(field.annotation)
        for name, field in model.model_fields.items()
        if get_origin(field.annotation) is Literal
    }


def _pick(models: list[type[BaseModel]], data: dict[str, Any]) -> type[BaseModel] | None:
    """The model a dict is: the only one, or the one whose literal fields it matches."""
    if len(models) == 1:
        return models[0]
    for model in models:
        tags = _tags(model)
        if tags and all(data.get(key) in allowed for key, allowed in tags.items()):
            return model
    return None


def _snake(tp: Any, data: Any, depth: int) -> Any:
    if depth > _DEPTH:
        return data
    if isinstance(data, dict):
        model = _pick(_models(tp), data)
        if model is None:
            return data  # free JSON: the caller's keys, as they were
        fields = model.model_fields
        names = {to_camel(name): name for name in fields}
        out: dict[str, Any] = {}
        for key, value in data.items():
            name = names.get(str(key), str(key))  # JSON keys are strings
            field = fields.get(name)
            out[name] = _snake(field.annotation if field is not None else Any, value, depth + 1)
        return out
    if isinstance(data, list):
        item = _item_type(tp)
        return [_snake(item, v, depth + 1) for v in data] if item is not None else data
    return data


def from_wire(tp: Any, data: Any) -> Any:
    """JSON data of type ``tp`` (a model, or a union of them) with snake_case field names
    and whole numbers as ints, ready for ``model_validate``; unknown keys stay as given."""
    return _snake(tp, whole_numbers(data), 0)
