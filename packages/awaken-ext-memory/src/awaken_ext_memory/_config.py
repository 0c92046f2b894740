"""``MemoryConfig``: the per-agent configuration of the ``memory`` plugin."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from awaken_runtime import Scope

__all__ = ["MemoryConfig"]


class MemoryConfig(BaseModel):
    """Validated from ``AgentConfig.plugin_config["memory"]``.

    Every field has a default, so enabling the plugin with no table works:
    profile-scope memories, the MiniLM embedder when its weights are
    installed (else the hashing one, with a warning), injection of the top 5
    memories before each inference, and the three tools.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    scope: Literal["profile", "thread", "shared"] = "profile"
    """Where memories live: one user's (profile), one thread's, or a shared namespace's."""

    embedder: Literal["auto", "hashing", "minilm", "litellm"] = "auto"
    """Which embedder to build (an embedder passed to ``MemoryPlugin(embedder=...)`` wins).
    ``auto``: MiniLM if its bundled weights and packages are installed, else hashing
    (warned once: paraphrase recall will be poor)."""
    dim: int = Field(default=384, ge=8)
    """``hashing``: number of buckets."""
    model_path: str | None = None
    """``minilm``: a sentence-transformers model directory (default: bundled weights)."""
    model: str | None = None
    """``litellm``: the embedding model, e.g. ``"openai/text-embedding-3-small"``."""
    litellm_options: dict[str, Any] = Field(default_factory=dict)
    """``litellm``: extra ``litellm.embedding`` arguments (``api_base``, ``dimensions``, ...)."""

    top_k: int = Field(default=5, ge=1, le=100)
    """How many memories the injection lists at most."""
    min_score: float | None = Field(default=None, ge=-1.0, le=1.0)
    """Cosine similarity a memory needs to be injected or recalled. ``None``: the
    embedder's calibrated threshold (MiniLM 0.22, hashing 0.09, others 0.25)."""
    dedupe_threshold: float = Field(default=0.9, gt=0.0, le=1.0)
    """A new memory at least this similar to an existing one updates it instead."""
    inject: bool = True
    """Inject relevant memories before each inference."""
    priority: int = 0
    """Priority of the injected ContextMessage within its band."""
    tools: bool = True
    """Offer ``remember``, ``recall`` and ``forget`` to the model."""
    max_text_chars: int = Field(default=2000, ge=1)
    """Longest memory text ``remember`` accepts."""

    cache: bool = True
    """Keep embeddings on disk so a restart does not re-embed every memory (only for
    embedders that need it: never for the hashing embedder)."""
    cache_dir: str | None = None
    """Cache directory (default ``$AWAKEN_MEMORY_CACHE``, else
    ``$XDG_CACHE_HOME/awaken/memory``, else ``~/.cache/awaken/memory``)."""

    extractor: str | None = None
    """Automatic extraction at RUN_END (off by default): the name of an extractor given to
    ``MemoryPlugin(extractors=...)``, or an import path ``"package.module:attribute"``."""
    extractor_agent: str | None = None
    """Automatic extraction at RUN_END by an agent: the id of an agent (registered with the
    runtime) that reads the run's new messages and answers with a JSON array of memories.
    Runs as a child run of the finished run."""
    extract_kind: str = "fact"
    """Kind of extracted memories when the extractor does not say."""

    @model_validator(mode="after")
    def _check_embedder(self) -> MemoryConfig:
        if self.extractor and self.extractor_agent:
            raise ValueError("set extractor or extractor_agent, not both")
        if self.embedder == "litellm" and not self.model:
            raise ValueError(
                "embedder 'litellm' needs model (e.g. 'openai/text-embedding-3-small')"
            )
        return self

    @property
    def state_scope(self) -> Scope:
        """``scope`` as the runtime's :class:`Scope`."""
        return Scope(self.scope)
