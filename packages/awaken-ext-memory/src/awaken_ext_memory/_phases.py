"""The plugin's phase hooks: context injection, run bookkeeping, RUN_END extraction."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from awaken_runtime import (
    Band,
    Command,
    ContextMessage,
    HookReaction,
    PhaseContext,
    PhaseHook,
    RunInfo,
    inject,
)

from ._bank import OwnerKey
from ._extract import ExtractionRequest, MemoryExtractor
from ._ops import MemoryOps, render_memories
from ._records import RECORDS_KEY, MemorySource, records_command

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

__all__ = [
    "CONTEXT_KEY",
    "MEMORY_BAND",
    "QueryCache",
    "RunStarts",
    "extract_hook",
    "injector",
    "run_start_hook",
]

CONTEXT_KEY = "memory.recall"
"""Key of the injected ContextMessage (one entry, replaced every request)."""
MEMORY_BAND = Band.CONVERSATION
"""The band memories are injected into: just before the newest user turn, so the
request prefix (system prompt and older turns) stays stable for prompt caching."""

LIMIT = 4096
"""Entries kept in the per-process query and run caches (least recently used go)."""

RunStarts = OrderedDict[str, tuple[RunInfo, int]]
"""run id -> (run info, index of the run's first input message)."""


@dataclass(slots=True)
class _Query:
    text: str
    vector: NDArray[np.float32]
    records: object
    version: int
    content: str
    command: Command | None = None
    """The inject command of ``content``: built once per content (``None`` when it changed),
    staged again every step (context entries last one request)."""


QueryCache = OrderedDict[tuple[OwnerKey, str], _Query]
"""(owner, thread id) -> the last query, its vector and the rendered injection."""


def _newest_user(ctx: PhaseContext) -> str:
    messages = ctx.messages
    for i in range(len(messages) - 1, -1, -1):
        message = messages[i]
        if message.role == "user":
            return message.text.strip()
    return ""


def injector(
    ops: MemoryOps, owner_of: Callable[[PhaseContext], OwnerKey], queries: QueryCache
) -> PhaseHook:
    """The BEFORE_INFERENCE hook: inject the top-k memories for the newest user turn.

    The user turn is embedded once (re-embedded only when it changes); the
    search reruns only when the index changed; otherwise the cached text is
    injected again (context entries last one request).
    """
    config = ops.config
    scope = config.state_scope

    async def before_inference(ctx: PhaseContext) -> HookReaction | None:
        records = ctx.store.get_value(RECORDS_KEY, scope)
        if not records:
            return None
        text = _newest_user(ctx)
        if not text:
            return None
        key = owner_of(ctx)
        slot = (key, ctx.run.thread_id)
        cached = queries.get(slot)
        index = await ops.bank.sync(key, records)
        if cached is not None and cached.text == text:
            queries.move_to_end(slot)
            if cached.records is not records or cached.version != index.version:
                hits = await ops.recall(key, records, cached.vector, config.top_k)
                cached.content = render_memories(hits, with_tools=config.tools)
                cached.records, cached.version = records, index.version
                cached.command = None
            query = cached
        else:
            vector = (await ops.bank.embed([text]))[0]
            hits = await ops.recall(key, records, vector, config.top_k)
            content = render_memories(hits, with_tools=config.tools)
            query = queries[slot] = _Query(text, vector, records, index.version, content)
            while len(queries) > LIMIT:
                queries.popitem(last=False)
        if not query.content:
            return None
        command = query.command
        if command is None:
            message = ContextMessage(
                key=CONTEXT_KEY, band=MEMORY_BAND, content=query.content, priority=config.priority
            )
            command = query.command = inject(message)
        return HookReaction(commands=[command])

    return before_inference


def run_start_hook(runs: RunStarts) -> PhaseHook:
    """The RUN_START hook: remember the run's namespace and where its input starts."""

    async def run_start(ctx: PhaseContext) -> None:
        messages = ctx.messages
        start = len(messages)
        while start > 0 and messages[start - 1].role == "user":
            start -= 1
        runs[ctx.run.run_id] = (ctx.run, start)
        while len(runs) > LIMIT:
            runs.popitem(last=False)

    return run_start


def extract_hook(
    ops: MemoryOps,
    extractor: MemoryExtractor,
    owner_of: Callable[[PhaseContext], OwnerKey],
    runs: RunStarts,
) -> PhaseHook:
    """The RUN_END hook: stage what ``extractor`` proposes from the run's new messages."""
    config = ops.config
    scope = config.state_scope

    async def run_end(ctx: PhaseContext) -> HookReaction | None:
        known = runs.pop(ctx.run.run_id, None)
        start = known[1] if known is not None else 0
        new = list(ctx.messages[start:])
        if not new:
            return None
        key = owner_of(ctx)
        records = ctx.store.get_value(RECORDS_KEY, scope)
        about = "\n".join(m.text for m in new if m.role == "user" and m.text)
        related = await ops.recall(key, records, about, 10) if about else []
        request = ExtractionRequest(
            run=ctx.run,
            messages=new,
            existing=[record for record, _ in related],
            children=getattr(ctx, "children", None),
        )
        proposals = await extractor.extract(request)
        source = MemorySource(thread_id=ctx.run.thread_id, run_id=ctx.run.run_id, via="extractor")
        entries: dict[str, Any] = {}
        for proposal in proposals:
            done = await ops.remember(
                key,
                records,
                proposal.text[: config.max_text_chars],
                kind=proposal.kind or config.extract_kind,
                tags=proposal.tags,
                source=source,
            )
            entries[done.record.id] = done.record.to_state()
        if not entries:
            return None
        return HookReaction(commands=[records_command(scope, entries)])

    return run_end
