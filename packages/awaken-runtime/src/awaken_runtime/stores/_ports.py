"""The store ports beyond the loop's ``ThreadStore`` (SPEC 3.11); their records: ``_records``.

A backend implements the ports it needs; the built-in backends implement all
of them (:class:`FullStore`). Each port is a separate ``Protocol`` so a
third-party backend can offer, say, only commits and loads.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict

from ..messages._message import Message
from ..state._engine import Command, CommittedBatch, Scope
from ._thread_store import RunRecord, ThreadStore

if TYPE_CHECKING:
    from ._records import ConfigVersion, Page, PruneReport, StreamEvent, ThreadInfo

__all__ = [
    "CheckpointReader",
    "ConfigRegistry",
    "FullStore",
    "Lease",
    "LeaseStore",
    "ProfileStore",
    "Retention",
    "RunStore",
    "StreamCheckpointStore",
    "ThreadAdmin",
    "cutoff",
]


class Lease(BaseModel):
    """A time-bounded claim on a thread: one active run per thread."""

    model_config = ConfigDict(frozen=True, defer_build=True)
    thread_id: str
    holder: str
    token: str
    """Changes on every acquire: a stolen lease cannot be renewed by its old holder."""
    expires_at: float
    """Wall-clock expiry (``time.time()`` seconds)."""


@runtime_checkable
class CheckpointReader(Protocol):
    """Committed messages and state batches of a thread after a cursor, paginated."""

    async def read_messages(
        self, thread_id: str, after: int = 0, limit: int = 100
    ) -> Page[Message]:
        """Messages with seq > ``after`` (seq is the 1-based position in the thread)."""
        ...

    async def read_batches(
        self, thread_id: str, after: int = 0, limit: int = 100
    ) -> Page[CommittedBatch]:
        """Persisted state batches with seq > ``after``, in commit order."""
        ...


@runtime_checkable
class RunStore(Protocol):
    """Run records (status, end cause, usage, cost, timestamps)."""

    async def get_run(self, run_id: str) -> RunRecord | None:
        """The latest record of ``run_id``, or ``None``."""
        ...

    async def list_runs(self, thread_id: str) -> list[RunRecord]:
        """Records of a thread's runs, oldest first."""
        ...


@runtime_checkable
class ThreadAdmin(Protocol):
    """Listing, filtering and deleting threads."""

    async def list_threads(
        self,
        *,
        after: str | None = None,
        limit: int = 100,
        parked: bool | None = None,
        updated_after: datetime | None = None,
    ) -> list[ThreadInfo]:
        """Threads ordered by id, starting after id ``after``; filters are ANDed."""
        ...

    async def delete_thread(self, thread_id: str) -> bool:
        """Remove a thread with its messages, state, runs and events; ``False`` if absent."""
        ...


@runtime_checkable
class StreamCheckpointStore(Protocol):
    """A per-run event log with sequence numbers, for resumable streams."""

    async def append_events(self, run_id: str, events: Sequence[StreamEvent]) -> None:
        """Append events; each seq must be greater than every stored seq of the run."""
        ...

    async def read_events(
        self, run_id: str, after: int = 0, limit: int = 1000
    ) -> list[StreamEvent]:
        """Events of ``run_id`` with seq > ``after``."""
        ...


@runtime_checkable
class ProfileStore(Protocol):
    """Profile- and shared-scope state outside of a thread commit."""

    async def read_scope(self, scope: Scope, owner: str) -> dict[str, Any]:
        """Every key of ``scope`` owned by ``owner`` (a profile id or a namespace)."""
        ...

    async def write_scope(self, scope: Scope, owner: str, commands: Sequence[Command]) -> None:
        """Apply commands (their own ``scope`` is ignored) atomically."""
        ...


@runtime_checkable
class ConfigRegistry(Protocol):
    """Versioned agent configs: publish, get, history, roll back."""

    async def publish_config(
        self, config: Mapping[str, Any] | BaseModel, *, note: str = ""
    ) -> ConfigVersion:
        """Store a new version of the config's agent (``config["id"]``)."""
        ...

    async def get_config(self, agent_id: str, version: int | None = None) -> ConfigVersion:
        """The latest (or a given) version; raises ``ConfigNotFound``."""
        ...

    async def config_history(self, agent_id: str) -> list[ConfigVersion]:
        """Every kept version, oldest first."""
        ...

    async def rollback_config(self, agent_id: str, version: int) -> ConfigVersion:
        """Publish a copy of ``version`` as the newest version."""
        ...


@runtime_checkable
class LeaseStore(Protocol):
    """One active run per thread, with leases that expire."""

    async def acquire_lease(self, thread_id: str, holder: str, ttl: float) -> Lease:
        """Take the thread, or raise ``ThreadBusy`` if another holder's lease is live."""
        ...

    async def renew_lease(self, lease: Lease, ttl: float) -> Lease:
        """Extend a lease; raises ``LeaseLost`` if it expired and was taken."""
        ...

    async def release_lease(self, lease: Lease) -> None:
        """Give the thread up (a no-op if the lease is no longer held)."""
        ...


@runtime_checkable
class Retention(Protocol):
    """Bounded storage: prune what is superseded, never the transcript or live state."""

    async def prune(self, older_than: datetime | timedelta) -> PruneReport:
        """Remove event logs of ended runs, superseded run records and config versions."""
        ...


@runtime_checkable
class FullStore(
    ThreadStore,
    CheckpointReader,
    RunStore,
    ThreadAdmin,
    StreamCheckpointStore,
    ProfileStore,
    ConfigRegistry,
    LeaseStore,
    Retention,
    Protocol,
):
    """Every port: what the built-in backends implement and the conformance suite tests."""

    async def close(self) -> None:
        """Release files and connections."""
        ...


def cutoff(older_than: datetime | timedelta) -> datetime:
    """The absolute time a retention bound stands for."""
    return datetime.now(UTC) - older_than if isinstance(older_than, timedelta) else older_than
