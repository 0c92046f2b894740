"""``AgentConfig``: the serializable definition of an agent, loadable from files."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .._defaults import new_list
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
    tool_ids: list[str] = Field(default_factory=new_list)
    plugin_ids: list[str] = Field(default_factory=new_list)
    plugin_config: dict[str, dict[str, Any]] = Field(default_factory=dict)
    context_policy: ContextPolicy = Field(default_factory=KeepAll)
    max_steps: int = Field(default=32, ge=1)
    delegates: list[str] = Field(default_factory=new_list)
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
        """The agent of a ``.toml``, ``.json``, ``.yaml`` or ``.yml`` agent file.

        The agent sits at the top level or under ``[agent]``, next to optional
        ``[[models]]``; see :class:`AgentFile` for the models and the tools and
        plugins a file names by import path.
        """
        from ._file import AgentFile  # the loader imports this module

        return AgentFile.load(path).config
