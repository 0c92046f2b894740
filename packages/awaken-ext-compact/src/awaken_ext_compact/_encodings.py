"""Which tiktoken encoding a model uses, and loading it without the network.

tiktoken downloads encoding files on first use and caches them under the
SHA-1 of their URL. This module looks for those files itself, in order: the
configured ``tiktoken_cache_dir``, ``$TIKTOKEN_CACHE_DIR``,
``$DATA_GYM_CACHE_DIR``, tiktoken's default temp cache, and the copies litellm
ships inside its package. A file is accepted only if its SHA-256 matches the
one tiktoken pins; the encoding is then built with ``tiktoken.Encoding`` from
the file's ranks and tiktoken's own pattern and special tokens. tiktoken is
imported only here, on first use.

:func:`counting_encoding` is what the plugin uses: the real encoding when one
is available, otherwise (no file, no download allowed or possible, or no
tiktoken at all) an :class:`EstimatedEncoding`, with one warning per
encoding and process. Counting never fails a run.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import logging
import os
import re
import tempfile
import threading
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ._estimate import EstimatedEncoding

if TYPE_CHECKING:
    from tiktoken import Encoding

__all__ = [
    "CompactWarning",
    "EncodingUnavailable",
    "counting_encoding",
    "encoding_for_model",
    "load_encoding",
    "search_dirs",
]

log = logging.getLogger("awaken_ext_compact")

_O200K = re.compile(r"^(gpt-4o|chatgpt-4o|gpt-4\.1|gpt-4\.5|gpt-5|gpt-oss|o\d+)(\b|[-_.:]|$)")
_BASE_URL = "https://openaipublic.blob.core.windows.net/encodings/"
_R50K_PAT = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s"""
_CL100K_PAT = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+"""
    r"""|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)
_O200K_PAT = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)


@dataclass(frozen=True)
class _Spec:
    """What tiktoken_ext.openai_public pins for one encoding."""

    sha256: str
    pat_str: str
    special_tokens: dict[str, int]
    explicit_n_vocab: int | None = None

    def url(self, name: str) -> str:
        return f"{_BASE_URL}{name}.tiktoken"


_SPECS: dict[str, _Spec] = {
    "o200k_base": _Spec(
        "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
        _O200K_PAT,
        {"<|endoftext|>": 199999, "<|endofprompt|>": 200018},
    ),
    "cl100k_base": _Spec(
        "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
        _CL100K_PAT,
        {
            "<|endoftext|>": 100257,
            "<|fim_prefix|>": 100258,
            "<|fim_middle|>": 100259,
            "<|fim_suffix|>": 100260,
            "<|endofprompt|>": 100276,
        },
    ),
    "p50k_base": _Spec(
        "94b5ca7dff4d00767bc256fdd1b27e5b17361d7b8a5f968547f9f23eb70d2069",
        _R50K_PAT,
        {"<|endoftext|>": 50256},
        50281,
    ),
    "r50k_base": _Spec(
        "306cd27f03c1a714eca7108e03d66b7dc042abe8c258b44c199a7ed9838dd930",
        _R50K_PAT,
        {"<|endoftext|>": 50256},
        50257,
    ),
}

_lock = threading.Lock()
_loaded: dict[str, Encoding] = {}
_warned: set[str] = set()


class EncodingUnavailable(RuntimeError):
    """No local file provides the encoding and downloading is off."""


class CompactWarning(UserWarning):
    """Issued once per encoding when token counts fall back to an estimate."""


def encoding_for_model(model: str) -> str:
    """``o200k_base`` for the gpt-4o/4.1/4.5/5, gpt-oss and o-series families, else
    ``cl100k_base``. A provider prefix (``openai/gpt-4o``) is ignored."""
    name = model.rsplit("/", 1)[-1].strip().lower()
    return "o200k_base" if _O200K.match(name) else "cl100k_base"


def _litellm_dir() -> Path | None:
    """litellm's bundled tiktoken cache, located without importing litellm."""
    try:
        spec = importlib.util.find_spec("litellm")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for root in spec.submodule_search_locations:
        path = Path(root) / "litellm_core_utils" / "tokenizers"
        if path.is_dir():
            return path
    return None


def search_dirs(cache_dir: str | None = None) -> list[Path]:
    """Directories searched for encoding files, in order."""
    found: list[Path] = []
    for raw in (
        cache_dir,
        os.environ.get("TIKTOKEN_CACHE_DIR"),
        os.environ.get("DATA_GYM_CACHE_DIR"),
        os.path.join(tempfile.gettempdir(), "data-gym-cache"),
    ):
        if raw:
            found.append(Path(raw).expanduser())
    bundled = _litellm_dir()
    if bundled is not None:
        found.append(bundled)
    return found


def _read_ranks(path: Path, spec: _Spec) -> dict[bytes, int] | None:
    try:
        data = path.read_bytes()
    except OSError:
        return None
    if hashlib.sha256(data).hexdigest() != spec.sha256:
        log.debug("ignoring %s: its SHA-256 does not match the pinned encoding file", path)
        return None
    ranks: dict[bytes, int] = {}
    for line in data.splitlines():
        if line:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    return ranks


def _from_files(name: str, cache_dir: str | None) -> Encoding | None:
    spec = _SPECS.get(name)
    if spec is None:
        return None
    cache_name = hashlib.sha1(spec.url(name).encode()).hexdigest()
    for directory in search_dirs(cache_dir):
        for candidate in (directory / cache_name, directory / f"{name}.tiktoken"):
            if not candidate.is_file():
                continue
            ranks = _read_ranks(candidate, spec)
            if ranks is None:
                continue
            import tiktoken

            log.debug("loaded tiktoken encoding %s from %s", name, candidate)
            return tiktoken.Encoding(
                name,
                pat_str=spec.pat_str,
                mergeable_ranks=ranks,
                special_tokens=dict(spec.special_tokens),
                explicit_n_vocab=spec.explicit_n_vocab,
            )
    return None


def _unavailable(name: str, cache_dir: str | None) -> EncodingUnavailable:
    dirs = ", ".join(str(d) for d in search_dirs(cache_dir)) or "none"
    known = name in _SPECS
    file_hint = (
        f"put {name}.tiktoken (from {_SPECS[name].url(name)}) in one of those directories or "
        f"in `tiktoken_cache_dir`, "
        if known
        else f"{name!r} is not one of {', '.join(sorted(_SPECS))}; "
    )
    return EncodingUnavailable(
        f"tiktoken encoding {name!r} is not available offline (searched: {dirs}). "
        f"Fix: pip install litellm (it ships cl100k_base/o200k_base/p50k_base), or "
        f"{file_hint}or set allow_download = true in [plugin_config.compact] to let "
        f"tiktoken download it once"
    )


def load_encoding(
    name: str, *, cache_dir: str | None = None, allow_download: bool = False
) -> Encoding:
    """The encoding ``name``, from memory, local files, or (if allowed) tiktoken's download.

    Raises :class:`EncodingUnavailable` naming the encoding and the fix.
    """
    found = _loaded.get(name)
    if found is not None:
        return found
    with _lock:
        found = _loaded.get(name)
        if found is None:
            found = _from_files(name, cache_dir)
        if found is None and allow_download:
            import tiktoken

            try:
                found = tiktoken.get_encoding(name)
            except Exception as exc:
                raise EncodingUnavailable(
                    f"tiktoken could not provide encoding {name!r}: {exc}"
                ) from exc
        if found is None:
            raise _unavailable(name, cache_dir)
        _loaded[name] = found
        return found


def counting_encoding(
    name: str, *, cache_dir: str | None = None, allow_download: bool = False
) -> Encoding | EstimatedEncoding:
    """The encoding ``name`` if it can be had, else an :class:`EstimatedEncoding`.

    The fallback is announced once per encoding and process, as a
    :class:`CompactWarning` and on logger ``awaken_ext_compact``, with the
    reason and the fixes.
    """
    try:
        return load_encoding(name, cache_dir=cache_dir, allow_download=allow_download)
    except ImportError as exc:  # tiktoken itself is not installed
        reason = f"tiktoken is not importable ({exc}); pip install tiktoken"
    except EncodingUnavailable as exc:
        reason = str(exc)
    if name not in _warned:
        _warned.add(name)
        message = (
            f"compact: counting tokens with an estimate instead of {name!r} (compaction "
            f"still works, a little earlier than needed): {reason}"
        )
        log.warning("%s", message)
        warnings.warn(CompactWarning(message), stacklevel=2)
    return EstimatedEncoding(name)
