"""``OutputSpec``: the typed result an agent must end with, and its validation.

The spec is serializable (a JSON Schema plus options), so it lives in
``AgentConfig`` and is part of the agent's fingerprint. ``OutputSpec.of``
builds one from a Python type (pydantic model, dataclass, TypedDict, ...);
``RunState.output_as`` turns the validated JSON back into that type.

How the model is asked for it is the executor's choice, under ``mode``:
``native`` uses the provider's JSON-schema response format (the answer's text
is the JSON), ``tool`` offers a final-result tool whose arguments are the
result, ``auto`` picks native where the model supports it. The loop accepts
either shape of answer, so an executor that knows neither still works when
the model answers with the JSON as text.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from ..tools._tool import ToolDescriptor

__all__ = ["OutputSpec"]

OutputMode = Literal["auto", "native", "tool"]

_validators: dict[str, Any] = {}  # canonical schema JSON -> jsonschema validator


class OutputSpec(BaseModel):
    """The structured result of an agent: a JSON Schema and how to obtain it."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)
    json_schema: dict[str, Any]
    """The JSON Schema the final result must satisfy."""
    name: str = Field(default="final_result", pattern=r"^[A-Za-z0-9_-]{1,64}$")
    """The response-format name, and the final-result tool's name on the tool path."""
    description: str = "Give the final result. Call this exactly once, when done."
    mode: OutputMode = "auto"
    retries: int = Field(default=2, ge=0)
    """How many invalid results the model may fix before the run fails."""
    strict: bool = False
    """Ask the provider to enforce the schema (OpenAI's strict mode needs every
    property required and ``additionalProperties: false``)."""

    @classmethod
    def of(cls, output_type: Any, **options: Any) -> OutputSpec:
        """A spec whose schema is ``output_type``'s (any type pydantic can validate)."""
        schema = TypeAdapter(output_type).json_schema()
        if schema.get("type") != "object":
            # Providers (and tool arguments) want an object: wrap anything else.
            schema = {
                "type": "object",
                "properties": {"result": schema},
                "required": ["result"],
                "$defs": schema.pop("$defs", {}),
            }
            if not schema["$defs"]:
                del schema["$defs"]
        return cls(json_schema=schema, **options)

    @property
    def wrapped(self) -> bool:
        """Whether the schema wraps a non-object type under ``result`` (see :meth:`of`)."""
        props = self.json_schema.get("properties")
        return self.json_schema.get("required") == ["result"] and list(props or ()) == ["result"]

    def tool_descriptor(self) -> ToolDescriptor:
        """The final-result tool offered on the tool path."""
        return ToolDescriptor(
            id=self.name,
            description=self.description,
            parameters=self.json_schema,
        )

    def response_format(self) -> dict[str, Any]:
        """OpenAI's ``response_format`` asking for this schema."""
        body: dict[str, Any] = {"name": self.name, "schema": self.json_schema}
        if self.strict:
            body["strict"] = True
        return {"type": "json_schema", "json_schema": body}

    def errors(self, value: Any) -> list[str]:
        """What is wrong with ``value`` under the schema (empty: it is valid)."""
        key = json.dumps(self.json_schema, sort_keys=True)
        validator = _validators.get(key)
        if validator is None:
            # Imported on first use: `import awaken_runtime` stays light (no stubs installed).
            import jsonschema  # type: ignore[import-untyped]

            cls = jsonschema.validators.validator_for(self.json_schema)
            cls.check_schema(self.json_schema)
            validator = _validators[key] = cls(self.json_schema)
        found = sorted(validator.iter_errors(value), key=lambda e: list(e.absolute_path))
        return [
            f"{'/'.join(str(p) for p in e.absolute_path) or '(root)'}: {e.message}"
            for e in found[:10]
        ]
