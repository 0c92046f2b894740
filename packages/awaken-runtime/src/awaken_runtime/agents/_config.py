"""``AgentConfig``: the serializable definition of an agent, loadable from files."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .._errors import AgentConfigError
from ..messages._transcript import ContextPolicy, KeepAll
from ..models._model import InferenceParams
from ..models._output import OutputSpec
from ._stop import StopConfig

if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["AgentConfig"]


class AgentConfig(BaseModel):
    """An agent: instructions, a model binding, and the ids of what it may use.

    Everything is referenced by id and resolved against the runtime's
    registries; nothing is callable until it is registered.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)
    id: str = Field(min_length=1)
    instructions: str = ""
    model_binding: str = Field(min_length=1, description="A ModelSpec id.")
    tool_ids: list[str] = Field(default_factory=list)
    plugin_ids: list[str] = Field(default_factory=list)
    plugin_config: dict[str, dict[str, Any]] = Field(default_factory=dict)
    context_policy: ContextPolicy = Field(default_factory=KeepAll)
    max_steps: int = Field(default=32, ge=1)
    delegates: list[str] = Field(default_factory=list)
    params: InferenceParams = Field(default_factory=InferenceParams)
    stop: StopConfig = Field(default_factory=StopConfig)
    """Stop conditions evaluated at every StepEnd."""
    output: OutputSpec | None = None
    """The structured result the run must end with (``OutputSpec.of(MyModel)``)."""
    truncation: Literal["stop", "continue"] = "stop"
    """A final answer cut off by the output limit (``finish_reason=length``): ``stop``
    ends the run ``Stopped``; ``continue`` asks the model to go on (within max_steps)
    and joins the pieces."""

    @classmethod
    def from_dict(cls, data: dict[str, Any], *, source: str = "agent config") -> AgentConfig:
        """Validate ``data``; errors name the source, field and reason."""
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in err['loc']) or '(root)'}: {err['msg']}"
                for err in exc.errors()
            )
            raise AgentConfigError(f"invalid {source}: {problems}") from None

    @classmethod
    def from_file(cls, path: str | Path) -> AgentConfig:
        """Load a ``.toml``, ``.json``, ``.yaml`` or ``.yml`` file.

        A TOML or YAML file may hold the agent at the top level or under an
        ``[agent]`` table.
        """
        from pathlib import Path  # imported here: `import awaken_runtime` stays lean

        p = Path(path)
        try:
            text = p.read_text(encoding="utf-8")
        except OSError as exc:
            raise AgentConfigError(f"cannot read agent file {str(p)!r}: {exc.strerror}") from None
        except UnicodeDecodeError as exc:
            raise AgentConfigError(
                f"cannot read agent file {str(p)!r}: not UTF-8 text ({exc.reason} at byte "
                f"{exc.start}); save it as UTF-8"
            ) from None
        suffix = p.suffix.lower()
        try:
            if suffix == ".toml":
                import tomllib

                data: Any = tomllib.loads(text)
            elif suffix == ".json":
                data = json.loads(text)
            elif suffix in (".yaml", ".yml"):
                try:
                    import yaml
                except ImportError:
                    raise AgentConfigError(
                        f"reading {str(p)!r} needs PyYAML: pip install 'awaken-runtime[yaml]'"
                    ) from None
                data = yaml.safe_load(text)
            else:
                raise AgentConfigError(
                    f"agent file {str(p)!r} has unknown extension {suffix!r}; "
                    f"use .toml, .json, .yaml or .yml"
                )
        except AgentConfigError:
            raise
        except Exception as exc:  # every parser has its own error type
            raise AgentConfigError(f"cannot parse agent file {str(p)!r}: {exc}") from None
        if not isinstance(data, dict):
            raise AgentConfigError(f"agent file {str(p)!r} must hold a table/object at the top")
        if isinstance(data.get("agent"), dict):
            data = data["agent"]
        return cls.from_dict(data, source=f"agent file {str(p)!r}")
