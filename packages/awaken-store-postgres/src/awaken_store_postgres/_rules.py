"""The store contract's rules on commits, checked in Python before anything is written.

These mirror what every backend enforces (the conformance suite checks
them): message ids unique per thread, tool results answer a known call,
run records belong to their thread and are final once ENDED, run-scope
state is never persisted, published configs name their agent.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel

from awaken_runtime import Command, CommittedBatch, Message, Phase, RunRecord, Scope, Set
from awaken_runtime.stores import (
    ConfigNotFound,
    ConfigVersion,
    DuplicateMessageId,
    RunRecordError,
    UnmatchedToolResult,
)

__all__ = ["config_data", "kept_batches", "merged_run", "pick_config", "unresolved_calls"]


def unresolved_calls(thread_id: str, messages: Sequence[Message]) -> list[str]:
    """Check ids within the commit; return the call ids tool messages answer from earlier commits.

    Raises ``DuplicateMessageId`` for an id given twice, ``UnmatchedToolResult``
    for a tool message without a call id. The caller checks the returned ids
    against the stored thread (and stored ids against the new ones).
    """
    seen: set[str] = set()
    calls: set[str] = set()
    earlier: list[str] = []
    for message in messages:
        if message.id in seen:
            raise DuplicateMessageId(thread_id, message.id)
        seen.add(message.id)
        if message.role == "tool":
            cid = message.tool_call_id
            if cid is None:
                raise UnmatchedToolResult(thread_id, cid)
            if cid not in calls:
                earlier.append(cid)
        for call in message.tool_calls or ():
            calls.add(call.id)
    return earlier


def merged_run(thread_id: str, stored: RunRecord | None, new: RunRecord) -> RunRecord:
    """The record to write for ``new`` given the ``stored`` one; raises ``RunRecordError``."""
    if new.thread_id != thread_id or (stored is not None and stored.thread_id != thread_id):
        owner = stored.thread_id if stored is not None else new.thread_id
        raise RunRecordError(
            f"run {new.run_id!r} belongs to thread {owner!r}, not {thread_id!r}; commit a "
            f"run's record to its own thread"
        )
    if stored is None:
        return new
    if stored.phase is Phase.ENDED:
        cause = stored.end_cause.kind if stored.end_cause is not None else "?"
        raise RunRecordError(
            f"run {new.run_id!r} already ended ({cause}); a run record is final once ENDED - "
            f"start a new run instead"
        )
    if stored.started_at == new.started_at:
        return new
    return new.model_copy(update={"started_at": stored.started_at})


def kept_batches(batches: Sequence[CommittedBatch]) -> list[CommittedBatch]:
    """The batches as persisted: run-scope entries dropped, then empty batches dropped.

    Raises ``StateValueError`` (naming the key) for a value no store reads back as
    written (too deep, not JSON, a lone surrogate): the check ``Command.set`` makes.
    """
    kept: list[CommittedBatch] = []
    for item in batches:
        entries = [(p, c) for p, c in item.entries if c.scope is not Scope.RUN]
        for _producer, command in entries:
            action = command.action
            if isinstance(action, Set):
                Command.set(command.key, action.value)
        if len(entries) == len(item.entries):
            kept.append(item)
        elif entries:
            kept.append(item.model_copy(update={"entries": entries}))
    return kept


def config_data(config: Mapping[str, Any] | BaseModel) -> tuple[str, dict[str, Any]]:
    """``(agent id, JSON data)`` of a config to publish; ``ValueError`` without an id."""
    data = config.model_dump(mode="json") if isinstance(config, BaseModel) else dict(config)
    agent_id = data.get("id")
    if not isinstance(agent_id, str) or not agent_id:
        raise ValueError("a published config needs a non-empty string 'id' (the agent id); add one")
    return agent_id, data


def pick_config(
    versions: Sequence[ConfigVersion], agent_id: str, version: int | None
) -> ConfigVersion:
    """The latest (or the given) version; raises ``ConfigNotFound``."""
    if not versions:
        raise ConfigNotFound(f"no config published for agent {agent_id!r}; publish one first")
    if version is None:
        return versions[-1]
    for item in versions:
        if item.version == version:
            return item
    kept = ", ".join(str(v.version) for v in versions)
    raise ConfigNotFound(f"agent {agent_id!r} has no config version {version} (kept: {kept})")
