"""What the store ports beyond commits and loads exchange: pages, listings, logs, configs.

Apart from the ports (``_ports``): a run commits and loads through ``ThreadStore``
and holds a ``Lease``; these load with the first listing, event log, published
config or prune.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["ConfigVersion", "Page", "PruneReport", "StreamEvent", "ThreadInfo", "utcnow"]

T = TypeVar("T")


def utcnow() -> datetime:
    """The current time, timezone-aware (UTC)."""
    return datetime.now(UTC)


@dataclass(slots=True)
class Page(Generic[T]):
    """One page of a cursor read: items with their 1-based sequence numbers."""

    items: list[T]
    cursor: int
    """Pass as ``after`` to read the next page (the seq of the last item)."""
    more: bool
    """Whether items after ``cursor`` exist."""


class ThreadInfo(BaseModel):
    """A listed thread: identity, size and status, without its messages."""

    model_config = ConfigDict(frozen=True, defer_build=True)
    thread_id: str
    version: int
    messages: int
    updated_at: datetime
    parked: bool = False
    latest_run_id: str | None = None


class StreamEvent(BaseModel):
    """One entry of a run's event log (an ``AgentEvent`` as JSON data)."""

    model_config = ConfigDict(frozen=True, defer_build=True)
    seq: int = Field(ge=1)
    data: dict[str, Any]
    at: datetime = Field(default_factory=utcnow)


class ConfigVersion(BaseModel):
    """One published version of an agent config."""

    model_config = ConfigDict(frozen=True, defer_build=True)
    agent_id: str
    version: int
    config: dict[str, Any]
    published_at: datetime = Field(default_factory=utcnow)
    note: str = ""


@dataclass(slots=True)
class PruneReport:
    """What :meth:`Retention.prune` removed."""

    events: int = 0
    """Stream events removed."""
    runs: int = 0
    """Superseded run records removed."""
    configs: int = 0
    """Superseded config versions removed."""
    details: list[str] = field(default_factory=list)
