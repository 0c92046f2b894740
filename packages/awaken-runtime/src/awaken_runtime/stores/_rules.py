"""The port rules every built-in backend applies the same way.

A commit's messages (no repeated id, no tool result without its call), a run
record's life (it belongs to its thread, is final once ended, keeps its
start), stream event seqs (strictly increasing), the batches a store keeps
(run scope is never stored), published configs (an ``id`` each; a missing
version is ``ConfigNotFound``) and pages (1-based seqs). The memory, file and
SQLite backends call these so that they agree; the conformance suite checks
that they (and any third-party backend) do.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from ..lifecycle._failures import Phase
from ..messages._message import Message
from ..state._engine import CommittedBatch
from ._errors import ConfigNotFound, DuplicateMessageId, RunRecordError, UnmatchedToolResult
from ._thread_store import RunRecord, persistent_batch

if TYPE_CHECKING:
    from ._records import ConfigVersion, Page, StreamEvent

__all__ = [
    "check_event_seqs",
    "check_messages",
    "config_dict",
    "find_config",
    "merge_run",
    "page",
    "persistent",
]


def check_messages(
    thread_id: str,
    messages: Sequence[Message],
    has_id: Any,
    has_call: Any,
) -> None:
    """Raise if a message id repeats or a tool message answers an unknown call.

    ``has_id(id)`` and ``has_call(call_id)`` answer for the stored thread.
    """
    ids: set[str] = set()  # of this commit's earlier messages
    calls: set[str] = set()
    for message in messages:
        mid = message.id
        if mid in ids or has_id(mid):
            raise DuplicateMessageId(thread_id, mid)
        ids.add(mid)
        if message.role == "tool":
            cid = message.tool_call_id
            if cid is None or (cid not in calls and not has_call(cid)):
                raise UnmatchedToolResult(thread_id, cid)
        tool_calls = message.tool_calls
        if tool_calls:
            for call in tool_calls:
                calls.add(call.id)


def check_event_seqs(run_id: str, last: int, events: Sequence[StreamEvent]) -> None:
    """Raise ``ValueError`` unless the seqs of ``events`` strictly increase past ``last``."""
    for event in events:
        if event.seq <= last:
            raise ValueError(
                f"run {run_id!r}: event seq {event.seq} is not after seq {last}; "
                f"stream event seqs must strictly increase"
            )
        last = event.seq


def merge_run(thread_id: str, old: RunRecord | None, new: RunRecord) -> RunRecord:
    """The record to store for ``new`` given the stored ``old`` one.

    A record belongs to its thread; an ended run is final; ``started_at`` is kept.
    """
    if new.thread_id != thread_id:
        raise RunRecordError(
            f"run record {new.run_id!r} names thread {new.thread_id!r} but is committed to "
            f"thread {thread_id!r}; commit a run's record to its own thread"
        )
    if old is None:
        return new
    if old.thread_id != thread_id:
        raise RunRecordError(
            f"run {new.run_id!r} belongs to thread {old.thread_id!r}, not {thread_id!r}"
        )
    if old.phase is Phase.ENDED:
        raise RunRecordError(
            f"run {new.run_id!r} already ended ({old.end_cause.kind if old.end_cause else '?'})"
            f"; a run record is final once ENDED - start a new run instead"
        )
    if new.started_at == old.started_at:
        return new
    return new.model_copy(update={"started_at": old.started_at})


def persistent(batches: Iterable[CommittedBatch]) -> list[CommittedBatch]:
    """The batches without run-scope entries (empty batches dropped)."""
    return [kept for b in batches if (kept := persistent_batch(b)) is not None]


def page(items: Sequence[Any], after: int, limit: int) -> Page[Any]:
    """The page of ``items`` (1-based seqs) after ``after``."""
    from ._records import Page  # a run never pages: the records load with the first read

    after = max(after, 0)
    chunk = list(items[after : after + max(limit, 0)])
    return Page(chunk, after + len(chunk), after + len(chunk) < len(items))


def config_dict(config: Mapping[str, Any] | BaseModel) -> tuple[str, dict[str, Any]]:
    """``(agent_id, JSON data)`` of a config to publish."""
    data = config.model_dump(mode="json") if isinstance(config, BaseModel) else dict(config)
    agent_id = data.get("id")
    if not isinstance(agent_id, str) or not agent_id:
        raise ValueError("a published config needs a non-empty string 'id' (the agent id)")
    return agent_id, data


def find_config(
    versions: list[ConfigVersion] | None, agent_id: str, version: int | None
) -> ConfigVersion:
    """The wanted version out of ``versions`` or ``ConfigNotFound``."""
    if not versions:
        raise ConfigNotFound(f"no config published for agent {agent_id!r}; publish one first")
    if version is None:
        return versions[-1]
    for item in versions:
        if item.version == version:
            return item
    known = ", ".join(str(v.version) for v in versions)
    raise ConfigNotFound(f"agent {agent_id!r} has no config version {version} (kept: {known})")
