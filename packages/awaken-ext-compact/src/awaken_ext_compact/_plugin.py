"""``CompactPlugin``: the ``compact`` plugin (manifest, capability bound, resolve)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from awaken_runtime import (
    CapabilityBound,
    Contributions,
    PhaseHookPoint,
    PluginManifest,
    StateKeyDecl,
)

from ._caches import Caches
from ._config import CompactConfig
from ._hook import CompactHook
from ._plan import SUMMARY_BAND
from ._state import BACKOFF, COUNTS, STATS, SUMMARY
from ._window import window_bound_fields

__all__ = ["PLUGIN_ID", "CompactPlugin", "compact_bound"]

PLUGIN_ID = "compact"
"""The plugin id agents list in ``plugin_ids``."""


def compact_bound() -> CapabilityBound:
    """Exactly what the plugin uses: one BEFORE_INFERENCE hook, the THREAD summary,
    back-off and token checkpoint and RUN stats keys, the session band, and the request window."""
    fields = window_bound_fields()
    keys: set[StateKeyDecl] = {
        SUMMARY.decl,
        BACKOFF.decl,
        COUNTS.decl,
        STATS.decl,
        *fields.pop("state_keys", ()),
    }
    return CapabilityBound(
        state_keys=frozenset(keys),
        phase_hooks=frozenset({PhaseHookPoint.BEFORE_INFERENCE}),
        context_bands=frozenset({SUMMARY_BAND}),
        **fields,
    )


class CompactPlugin:
    """Summarizing compaction before every inference.

    One plugin object serves every agent that enables it; token counters
    (per encoding) and per-thread token indexes are shared, so a thread's
    counts are computed once per process. ``clock`` (Unix seconds) times the
    compactor back-off; tests pass a fake one.
    """

    manifest = PluginManifest(
        id=PLUGIN_ID,
        version="0.1.0",
        description="Token-counted summarizing compaction: the request carries a cumulative "
        "summary plus the recent messages once it nears the model's context window.",
        config_model=CompactConfig,
        bound=compact_bound(),
    )

    def __init__(self, *, clock: Callable[[], float] = time.time) -> None:
        self.caches = Caches(clock=clock)

    def __repr__(self) -> str:
        return "CompactPlugin()"

    def resolve(self, config: Any) -> Contributions:
        """One BEFORE_INFERENCE hook for ``config`` (a :class:`CompactConfig` or ``None``)."""
        if config is None:
            config = CompactConfig()
        elif not isinstance(config, CompactConfig):
            config = CompactConfig.model_validate(config)
        hook = CompactHook(PLUGIN_ID, config, self.caches)
        return Contributions(
            state_keys=[SUMMARY, BACKOFF, COUNTS, STATS],
            phase_hooks={PhaseHookPoint.BEFORE_INFERENCE: hook},
        )
