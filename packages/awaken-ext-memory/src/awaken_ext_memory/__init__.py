"""awaken-ext-memory: long-term memory for Awaken agents.

Enable it on an agent with ``plugin_ids=["memory"]`` (it is discovered through
the ``awaken`` entry-point group) or register :class:`MemoryPlugin` yourself.
Memories are records in PROFILE (default), THREAD or SHARED state; they are
retrieved by embedding similarity with numpy and injected as one
``ContextMessage`` before each inference. The model gets ``remember``,
``recall`` and ``forget`` tools.

Importing this package imports numpy lazily and never imports litellm,
safetensors or tokenizers; embedders load what they need on first use.
"""

from ._bank import MemoryBank, OwnerKey
from ._cache import EmbeddingCache, default_cache_dir, text_digest
from ._config import MemoryConfig
from ._embedder import (
    UNCALIBRATED_MIN_SCORE,
    Embedder,
    EmbedderUnavailable,
    default_min_score,
    normalize_rows,
)
from ._extract import (
    AgentExtractor,
    ExtractionRequest,
    MemoryExtractor,
    ProposedMemory,
    parse_proposals,
    resolve_extractor,
)
from ._hashing import HashingEmbedder
from ._index import VectorIndex
from ._litellm import LiteLLMEmbedder
from ._minilm import MiniLMEmbedder, blas_threads, bundled_minilm_path, minilm_available
from ._ops import MemoryOps, Remembered, render_memories
from ._plugin import (
    CONTEXT_KEY,
    MEMORY_BAND,
    PLUGIN_ID,
    MemoryPlugin,
    MemoryWarning,
    memory_bound,
)
from ._records import (
    RECORDS_KEY,
    MemoryKind,
    MemoryRecord,
    MemorySource,
    Tombstone,
    new_memory_id,
    parse_entry,
)
from ._tools import TOOL_IDS, memory_tools

__version__ = "0.1.0"

__all__ = [
    "CONTEXT_KEY",
    "MEMORY_BAND",
    "PLUGIN_ID",
    "RECORDS_KEY",
    "TOOL_IDS",
    "UNCALIBRATED_MIN_SCORE",
    "AgentExtractor",
    "Embedder",
    "EmbedderUnavailable",
    "EmbeddingCache",
    "ExtractionRequest",
    "HashingEmbedder",
    "LiteLLMEmbedder",
    "MemoryBank",
    "MemoryConfig",
    "MemoryExtractor",
    "MemoryKind",
    "MemoryOps",
    "MemoryPlugin",
    "MemoryRecord",
    "MemorySource",
    "MemoryWarning",
    "MiniLMEmbedder",
    "OwnerKey",
    "ProposedMemory",
    "Remembered",
    "Tombstone",
    "VectorIndex",
    "__version__",
    "blas_threads",
    "bundled_minilm_path",
    "default_cache_dir",
    "default_min_score",
    "memory_bound",
    "memory_tools",
    "minilm_available",
    "new_memory_id",
    "normalize_rows",
    "parse_entry",
    "parse_proposals",
    "render_memories",
    "resolve_extractor",
    "text_digest",
]
