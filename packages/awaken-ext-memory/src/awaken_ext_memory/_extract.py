"""Automatic extraction at RUN_END: the ``MemoryExtractor`` protocol.

Off by default. When ``MemoryConfig.extractor`` names one, the plugin's
RUN_END hook hands the run's new messages (and the memories most related to
them) to the extractor, and writes what it proposes through the same path as
``remember`` (deduplicated, staged as commands, committed with the run's end).

:class:`AgentExtractor` is the extractor agent: it runs a configured agent id
as a child run of the finished run (through ``PhaseContext.children``, the
runtime's sub-run handle) and turns its answer (a JSON array) into memories.
Any other object with ``async extract(request)`` works too.
"""

from __future__ import annotations

import importlib
import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from awaken_runtime import Message, RunInfo

from ._records import MemoryRecord

__all__ = [
    "AgentExtractor",
    "ExtractionRequest",
    "MemoryExtractor",
    "ProposedMemory",
    "parse_proposals",
    "resolve_extractor",
]

log = logging.getLogger("awaken_ext_memory")


class ProposedMemory(BaseModel):
    """A memory an extractor suggests keeping."""

    model_config = ConfigDict(frozen=True)
    text: str = Field(min_length=1)
    kind: str | None = None
    tags: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ExtractionRequest:
    """What an extractor sees: the run, its new messages, and related memories."""

    run: RunInfo
    messages: Sequence[Message]
    existing: Sequence[MemoryRecord]
    children: Any = None
    """The run's sub-agent runner (``PhaseContext.children``), when the runtime has one."""


@runtime_checkable
class MemoryExtractor(Protocol):
    """Proposes memories from a finished run's new messages."""

    async def extract(self, request: ExtractionRequest) -> Sequence[ProposedMemory]:
        """Memories worth keeping (may be empty)."""
        ...


EXTRACTION_PROMPT = """\
Read the conversation below and list the facts worth remembering about the user
for future conversations (stable preferences, personal facts, plans, events).
Skip small talk and anything already in the known memories. Answer with a JSON
array only, each item {{"text": "...", "kind": "fact|preference|event", "tags": [...]}};
answer [] when there is nothing new.

Known memories:
{existing}

Conversation:
{conversation}
"""


def parse_proposals(text: str) -> list[ProposedMemory]:
    """Proposals from an extractor agent's answer: the first JSON array in ``text``.

    Items may be strings or objects with ``text``/``kind``/``tags``; anything
    else is skipped. No array: no proposals.
    """
    start, end = text.find("["), text.rfind("]")
    if start < 0 or end <= start:
        return []
    try:
        items = json.loads(text[start : end + 1])
    except ValueError:
        return []
    out: list[ProposedMemory] = []
    for item in items if isinstance(items, list) else []:
        data = {"text": item} if isinstance(item, str) else item
        try:
            out.append(ProposedMemory.model_validate(data))
        except ValueError:
            continue
    return out


class AgentExtractor:
    """Runs agent ``agent_id`` as a child run and keeps what it proposes.

    The child gets :data:`EXTRACTION_PROMPT` filled with the run's new
    messages (at most ``max_chars`` of them, newest kept) and the related
    known memories; its final answer is parsed with :func:`parse_proposals`.
    Without a sub-run handle, or when the child does not complete, nothing is
    proposed (and a warning is logged).
    """

    def __init__(self, agent_id: str, *, max_chars: int = 12_000) -> None:
        self.agent_id = agent_id
        self.max_chars = max_chars

    def __repr__(self) -> str:
        return f"AgentExtractor({self.agent_id!r})"

    def prompt(self, request: ExtractionRequest) -> str:
        """The child's input for ``request``."""
        lines = [f"{m.role}: {m.text}" for m in request.messages if m.text]
        conversation = "\n".join(lines)[-self.max_chars :]
        existing = "\n".join(f"- {r.text}" for r in request.existing) or "(none)"
        return EXTRACTION_PROMPT.format(existing=existing, conversation=conversation)

    async def extract(self, request: ExtractionRequest) -> Sequence[ProposedMemory]:
        """Run the extractor agent and parse its answer."""
        if request.children is None:
            log.warning(
                "memory extractor agent %r: this runtime cannot start sub-runs", self.agent_id
            )
            return []
        outcome = await request.children.run(
            self.agent_id, self.prompt(request), key=f"memory-extract-{request.run.run_id}"
        )
        status = getattr(outcome, "status", "completed")
        if status != "completed":
            log.warning("memory extractor agent %r ended %s", self.agent_id, status)
            return []
        return parse_proposals(str(getattr(outcome, "text", "")))


def resolve_extractor(name: str, registered: Mapping[str, Any]) -> MemoryExtractor:
    """The extractor called ``name``: registered on the plugin, or ``"module:attribute"``.

    An attribute that is a class or zero-argument factory (not itself an
    extractor) is called once to make one.
    """
    found = registered.get(name)
    if found is None:
        module_name, sep, attr = name.partition(":")
        if not sep or not module_name or not attr:
            known = ", ".join(sorted(registered)) or "none registered"
            raise ValueError(
                f"unknown memory extractor {name!r}: give a name passed to "
                f"MemoryPlugin(extractors=...) ({known}) or an import path 'module:attribute'"
            )
        try:
            found = getattr(importlib.import_module(module_name), attr)
        except (ImportError, AttributeError) as exc:
            raise ValueError(f"memory extractor {name!r} cannot be imported: {exc}") from None
    if not isinstance(found, MemoryExtractor) and callable(found):
        found = found()
    if not isinstance(found, MemoryExtractor):
        raise ValueError(
            f"memory extractor {name!r} is {type(found).__name__}; it needs an async "
            f"extract(request) method"
        )
    return found
