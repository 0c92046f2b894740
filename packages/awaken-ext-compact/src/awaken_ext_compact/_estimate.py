"""``EstimatedEncoding``: token counts without any encoding file, as a last resort.

Used when no local file provides the tiktoken encoding and downloading is
off (or tiktoken itself is missing), so that compaction keeps working on a
plain offline install instead of failing the run. The estimate of a text is
the larger of two lower-bound-ish measures:

* its UTF-8 size divided by ``BYTES_PER_TOKEN`` (3): BPE tokens of ordinary
  text average 3.5-4.5 bytes, and a CJK character (3 bytes) is about one token;
* the number of pieces it splits into: runs of up to 4 letters, runs of up to
  2 digits, and every other non-space character.

On this project's sample texts (source, READMEs, JSON, CJK and Cyrillic
prose) it over-counts cl100k_base / o200k_base by 1.0-1.7x, which errs on
the side of compacting early; random base64 is under-counted by up to 40%,
which the headroom of ``trigger_ratio`` and the emergency drop absorb. The
duck-typed surface is what :class:`TokenCounter` needs: ``name``,
``encode_ordinary`` and ``truncate``.
"""

from __future__ import annotations

import math
import re

__all__ = ["BYTES_PER_TOKEN", "EstimatedEncoding"]

BYTES_PER_TOKEN = 3
"""UTF-8 bytes per token the size estimate assumes."""
_PIECE = re.compile(r"[^\W\d_]{1,4}|\d{1,2}|\S")


class EstimatedEncoding:
    """Estimated counts standing in for tiktoken encoding ``name`` (see the module doc)."""

    def __init__(self, name: str) -> None:
        self.name = f"estimate:{name}"
        """``estimate:<encoding>``, so caches never mix estimates with real counts."""

    def count(self, text: str) -> int:
        """Estimated tokens of ``text``."""
        if not text:
            return 0
        by_size = math.ceil(len(text.encode("utf-8", "surrogatepass")) / BYTES_PER_TOKEN)
        return max(by_size, sum(1 for _ in _PIECE.finditer(text)))

    def encode_ordinary(self, text: str) -> list[int]:
        """Placeholder ids, one per estimated token (only their number is meaningful)."""
        return [0] * self.count(text)

    def truncate(self, text: str, limit: int) -> tuple[str, int]:
        """The longest prefix of ``text`` estimated at most ``limit`` tokens, and the full count."""
        full = self.count(text)
        if full <= limit:
            return text, full
        lo, hi = 0, len(text)
        while lo < hi:  # binary search on the prefix length: counts grow with it
            mid = (lo + hi + 1) // 2
            if self.count(text[:mid]) <= limit:
                lo = mid
            else:
                hi = mid - 1
        return text[:lo], full
