"""``LiteLLMEmbedder``: provider embeddings through litellm (imported lazily).

Any embedding model litellm supports: OpenAI, Azure, Cohere, Gemini, Voyage,
Mistral, Ollama, or any OpenAI-compatible server (``api_base=...``). litellm
is imported on the first ``embed`` call, never at import time, and with
``LITELLM_LOCAL_MODEL_COST_MAP=True`` so importing it fetches nothing (the
runtime's ``LiteLLMExecutor`` does both).
"""

from __future__ import annotations

import importlib.util
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from awaken_runtime import LiteLLMExecutor, RetryPolicy

from ._embedder import EmbedderUnavailable

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

__all__ = ["LiteLLMEmbedder"]


class LiteLLMEmbedder:
    """Embeddings from a provider model via ``litellm.embedding``.

    ``model`` is litellm's model name (``"openai/text-embedding-3-small"``,
    ``"ollama/nomic-embed-text"``, ...). ``dim`` is the vector length; when
    omitted it is learned from the first response (reading ``dim`` before any
    ``embed`` call sends one probe request). Other keyword arguments
    (``api_base``, ``api_key``, ``dimensions``, ...) go to every
    ``litellm.embedding`` call. ``batch_size`` bounds the inputs per request.

    Calls go through awaken_runtime's ``LiteLLMExecutor.embed``: its
    ``RetryPolicy`` (``retry``) and timeout (``timeout_s``) apply, the SDK's
    hidden retries are off, litellm's help banner is silenced, and failures
    raise the runtime's typed ``ProviderError`` subclasses.

    ``deadline_s`` (default 30 s) bounds each request in total, over every
    attempt and backoff wait (``timeout_s``, default 15 s, bounds one attempt):
    against a silent endpoint ``embed`` raises ``ProviderTimeout`` naming the
    deadline once it passes, so a memory recall never stalls a run for long.
    """

    blocking = True
    """Network calls run in a worker thread."""

    def __init__(
        self,
        model: str,
        *,
        dim: int | None = None,
        batch_size: int = 128,
        retry: RetryPolicy | None = None,
        timeout_s: float = 15.0,
        deadline_s: float | None = 30.0,
        **options: Any,
    ) -> None:
        if not model:
            raise ValueError("LiteLLMEmbedder needs a model name")
        self.model = model
        self.options = options
        self.batch_size = batch_size
        self._dim = dim
        self._lock = threading.Lock()
        self._executor = LiteLLMExecutor(retry=retry, timeout_s=timeout_s, deadline_s=deadline_s)

    @property
    def id(self) -> str:
        """``litellm:<model>`` (plus ``:<dimensions>`` when that option is set)."""
        dims = self.options.get("dimensions")
        return f"litellm:{self.model}" + (f":{dims}" if dims else "")

    @property
    def dim(self) -> int:
        """Vector length (from ``dim=``, or learned from the provider's first answer)."""
        if self._dim is None:
            self.embed(["dimension probe"])
        assert self._dim is not None
        return self._dim

    def __repr__(self) -> str:
        return f"LiteLLMEmbedder(model={self.model!r})"

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Embed ``texts`` with one request per ``batch_size`` inputs."""
        import numpy as np

        if importlib.util.find_spec("litellm") is None:
            raise EmbedderUnavailable(
                "LiteLLMEmbedder needs litellm: pip install 'awaken-ext-memory[litellm]'"
            )
        rows: list[list[float]] = []
        for start in range(0, len(texts), self.batch_size):
            batch = list(texts[start : start + self.batch_size])
            vectors = self._executor.embed(self.model, batch, **self.options)
            if len(vectors) != len(batch):
                raise RuntimeError(
                    f"embedding model {self.model!r} returned {len(vectors)} vectors "
                    f"for {len(batch)} inputs"
                )
            rows.extend(vectors)
        if not rows:
            return np.zeros((0, self._dim or 0), dtype=np.float32)
        out = np.asarray(rows, dtype=np.float32)
        with self._lock:
            if self._dim is None:
                self._dim = int(out.shape[1])
        if out.shape[1] != self._dim:
            raise RuntimeError(
                f"embedding model {self.model!r} returned vectors of length {out.shape[1]}, "
                f"expected {self._dim}"
            )
        return out
