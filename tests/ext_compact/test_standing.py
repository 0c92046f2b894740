"""Standing context entries (``inject(..., standing=True)``) count like request-only ones."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from awaken_runtime import (
    Band,
    CapabilityBound,
    ContextMessage,
    Contributions,
    HookReaction,
    PhaseContext,
    PhaseHookPoint,
    PluginManifest,
    inject,
)

QUESTION = "Please look into topic {i}. " + "Here are many details about it. " * 12
ANSWER = "Answer about the topic with plenty of words. " * 10
PAD = ContextMessage(key="pad.notes", band=Band.SESSION, content="note on the plan " * 300)
SS = PhaseHookPoint.STEP_START


def pad_plugin(mode: str) -> Any:
    """Injects PAD at every run's first step: standing, request-only, or standing and
    withdrawn again at once (a withdrawn entry is in no request)."""

    async def hook(ctx: PhaseContext) -> HookReaction | None:
        if ctx.run.step != 1:
            return None
        if mode == "standing":
            return HookReaction(commands=[inject(PAD, standing=True)])
        if mode == "withdrawn":
            return HookReaction(commands=[inject(standing=True, withdraw=[PAD.key])])
        return HookReaction(commands=[inject(PAD)])

    class Pad:
        manifest = PluginManifest(
            id="pad",
            bound=CapabilityBound(
                phase_hooks=frozenset({SS}), context_bands=frozenset({Band.SESSION})
            ),
        )

        def resolve(self, config: Any) -> Contributions:
            return Contributions(phase_hooks={SS: hook})

    return Pad()


async def first_compaction(rig: Callable[..., Any], mode: str | None) -> int:
    extra = [pad_plugin(mode)] if mode else []
    ids = ("compact", "pad") if mode else ("compact",)
    r = rig([ANSWER], extra_plugins=extra, plugin_ids=ids)
    for i in range(60):
        await r.run(QUESTION.format(i=i))
        if r.compactor.calls:
            return i
    pytest.fail(f"never compacted ({mode})")


async def test_a_standing_entry_counts_toward_the_trigger_like_a_request_only_one(
    rig: Callable[..., Any],
) -> None:
    alone = await first_compaction(rig, None)
    standing = await first_compaction(rig, "standing")
    once = await first_compaction(rig, "request-only")
    withdrawn = await first_compaction(rig, "withdrawn")
    assert standing == once < alone  # ~1,500 tokens of context bring the trigger forward
    assert withdrawn == alone
