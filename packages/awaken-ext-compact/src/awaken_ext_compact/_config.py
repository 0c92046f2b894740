"""``CompactConfig``: the ``[plugin_config.compact]`` table, validated at resolution."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["CompactConfig"]


class CompactConfig(BaseModel):
    """Settings of the ``compact`` plugin; every field has a documented default."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    trigger_ratio: float = Field(default=0.8, gt=0.0, le=1.0)
    """Compact when the request reaches this fraction of the usable input
    (context window minus max output tokens)."""
    trigger_messages: int = Field(default=200, ge=1)
    """Without a known context window: compact when the request carries more
    messages than this."""
    keep_recent_messages: int = Field(default=10, ge=0)
    """The raw tail keeps at least this many messages (and always reaches back to
    the newest user message)."""
    min_gain_tokens: int = Field(default=1000, ge=0)
    """Skip compaction when the span to summarize is smaller than this."""
    compactor_agent: str | None = None
    """Agent id that writes the summary (a sub-run with the agent's own tools and
    instructions). ``None``: the built-in summarizer on the agent's own model."""
    summary_max_tokens: int = Field(default=2000, ge=64)
    """Output budget asked of the built-in summarizer (and stated in the prompt)."""
    max_compactor_input_tokens: int = Field(default=24_000, ge=256)
    """A span larger than this is summarized in several chunks, each folded
    into the summary in turn."""
    max_failures_per_run: int = Field(default=3, ge=1)
    """After this many compactor failures in one run, stop trying until the next run."""
    failure_backoff_seconds: float = Field(default=60.0, ge=0.0)
    """After a compactor failure, wait this long before the next attempt; the wait
    doubles with each further consecutive failure (persisted in thread state, so
    it holds across runs and processes)."""
    max_backoff_seconds: float = Field(default=3600.0, ge=0.0)
    """The longest wait between two attempts of a failing compactor."""
    max_tool_result_tokens: int | None = Field(default=None, ge=16)
    """Tool results longer than this are cut for the request (with a marker); the
    transcript keeps them whole. ``None``: ``max_tool_result_ratio`` of the usable
    input."""
    max_tool_result_ratio: float | None = Field(default=0.25, gt=0.0, le=1.0)
    """Default cap of one tool result as a fraction of the usable input (used when
    ``max_tool_result_tokens`` is unset and the window is known); ``None``: no cap."""
    context_window: int | None = Field(default=None, ge=1)
    """Overrides the model's ``context_window`` (e.g. when the ModelSpec has none)."""
    encoding: str | None = None
    """tiktoken encoding name; ``None`` picks one from the model name."""
    tiktoken_cache_dir: str | None = None
    """An extra directory searched first for encoding files (tiktoken cache layout
    or ``<encoding>.tiktoken``)."""
    allow_download: bool = False
    """Let tiktoken download an encoding no local file provides (off: never network)."""
