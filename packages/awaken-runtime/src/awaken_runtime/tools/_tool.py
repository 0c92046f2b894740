"""The tool contract: ``Tool``, ``ToolDescriptor``, ``ToolOutput``, ``ToolCallContext``."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, model_validator

from .._defaults import new_list
from ..messages._message import ContentPart
from ..state._effects import Effect
from ..state._engine import Command, Store
from ._cancel import CancellationToken

if TYPE_CHECKING:
    from ._children import ChildRuns

__all__ = ["Tool", "ToolCallContext", "ToolDescriptor", "ToolOutput"]


def _content_hash(tool_id: str, description: str, parameters: dict[str, Any]) -> str:
    canonical = json.dumps(
        [tool_id, description, parameters], sort_keys=True, separators=(",", ":")
    )
    return hashlib.sha256(canonical.encode()).hexdigest()[:32]


class ToolDescriptor(BaseModel):
    """Model-visible metadata of a tool. It carries no executable handle."""

    model_config = ConfigDict(frozen=True, defer_build=True)
    id: str = Field(pattern=r"^[A-Za-z0-9_-]{1,64}$")
    """Letters, digits, ``_`` and ``-``, at most 64 (what provider function names allow)."""
    description: str = ""
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})
    content_hash: str = ""

    @model_validator(mode="after")
    def _fill_hash(self) -> ToolDescriptor:
        expected = _content_hash(self.id, self.description, self.parameters)
        if not self.content_hash:
            object.__setattr__(self, "content_hash", expected)
        elif self.content_hash != expected:
            raise ValueError(
                f"content_hash of tool {self.id!r} does not match its id, description and "
                f"parameters; omit content_hash to have it computed"
            )
        return self

    def to_openai(self) -> dict[str, Any]:
        """The OpenAI ``tools`` entry for this descriptor."""
        return {
            "type": "function",
            "function": {
                "name": self.id,
                "description": self.description,
                "parameters": self.parameters,
            },
        }


class ToolOutput(BaseModel):
    """The result of one tool call: content for the model plus staged state commands."""

    model_config = ConfigDict(frozen=True, defer_build=True)
    call_id: str = ""
    content: str = ""
    is_error: bool = False
    parts: list[ContentPart] = Field(default_factory=new_list)
    """Non-text content (images, audio, files) for the model, after ``content``, in
    OpenAI's part shapes; the tool message then carries ``content`` as its first part."""
    state: list[Command] = Field(default_factory=new_list)
    effects: list[Effect] = Field(default_factory=new_list)
    """Side effects to run after the call's batch commits."""

    @classmethod
    def ok(cls, content: str, *, state: list[Command] | None = None) -> ToolOutput:
        """A successful result."""
        # Passing only what differs from the defaults keeps validation cheap.
        return cls(content=content) if state is None else cls(content=content, state=state)

    @classmethod
    def error(cls, message: str, *, state: list[Command] | None = None) -> ToolOutput:
        """An error the model sees and can react to; the run continues."""
        if state is None:
            return cls(content=message, is_error=True)
        return cls(content=message, is_error=True, state=state)


def ignore_progress(_text: str) -> None:
    """The default ``emit_progress``: progress goes nowhere."""


@dataclass(slots=True)
class ToolCallContext:
    """What a tool may see while it runs: read-only state and run identity."""

    store: Store
    run_id: str
    thread_id: str
    call_id: str
    tool_id: str
    cancel: CancellationToken
    emit_progress: Callable[[str], None] = ignore_progress
    profile_id: str = "default"
    namespace: str = "default"
    """The shared-scope namespace the run is bound to."""
    children: ChildRuns | None = None
    """Starts sub-agent runs linked to this run (see ``run_child_agent``)."""
    decision: Any = None
    """On a call resumed by ``Approve``: that decision (a tool that suspended
    for permission proceeds instead of asking again)."""

    @property
    def idempotency_key(self) -> str:
        """A stable key for this one call, to make external side effects safe to repeat.

        Pass it to the external system's idempotency mechanism (a payment
        API's ``Idempotency-Key`` header, a unique column, an upsert key):
        every execution of this same call gets the same key (a call that
        suspended and runs again once approved; a parked call resumed in
        another process or after an earlier resume attempt died), so the
        external system applies the effect once. Another call, even one the
        provider sent with the same id, gets another key; so does a call the
        model makes anew after a crash (a new call id).

        It is 64 lowercase hex digits (SHA-256 of the run id and the call id),
        safe in any header or column. Unique per call while run ids are
        unique: the runtime's are; a caller-chosen ``run_id`` must not be
        reused on a thread.
        """
        raw = f"{self.run_id}\x00{self.call_id}".encode("utf-8", "surrogatepass")
        return hashlib.sha256(raw).hexdigest()


@runtime_checkable
class Tool(Protocol):
    """A model-callable capability.

    ``call`` receives the model's arguments (a dict) and returns a
    :class:`ToolOutput`. Return ``ToolOutput.error(...)`` for a failure the
    model should see; raise ``ToolError`` to end the run.

    A tool may also offer ``coerce_arguments(args) -> dict`` (raising
    ``ValueError`` for invalid arguments; ``@tool`` tools do). When the agent
    has tool gates or observers, the loop calls it *before* the gates and
    hands the coerced arguments to the gates, the observers and ``call``: a
    gate decides on exactly what will run, and invalid arguments become a
    model-visible error that reaches no gate. A tool without it receives the
    model's arguments as they are, and so do its gates.
    """

    @property
    def descriptor(self) -> ToolDescriptor:
        """The model-visible descriptor."""
        ...

    async def call(self, args: dict[str, Any], ctx: ToolCallContext) -> ToolOutput:
        """Run the tool."""
        ...
