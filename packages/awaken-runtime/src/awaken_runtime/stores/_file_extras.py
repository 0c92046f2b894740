"""The file backend's per-run event logs and its lease table.

Each run's stream events are one JSONL file, read whole (they are short and
pruned); the live leases are one JSON object, read under the store's lock
before every lease operation and rewritten atomically only if it changed.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from pydantic import ValidationError

from ._core import Core
from ._errors import StoreCorrupt
from ._jsonl import atomic_write, read_lines
from ._ports import Lease, StreamEvent

__all__ = ["lease_table", "read_event_log"]


def read_event_log(path: Path) -> list[StreamEvent]:
    """Every event in a run's log ([] if there is none)."""
    records, _end, _lines = read_lines(path, 0, 0)
    try:
        return [StreamEvent.model_validate(r) for _o, r in records]
    except ValidationError as exc:
        raise StoreCorrupt(str(path), f"an entry is not a stream event ({exc})") from None


@contextmanager
def lease_table(core: Core, path: Path) -> Iterator[None]:
    """Load the lease table at ``path`` into ``core.leases``; write it back if changed.

    Nothing is written when the body raises (e.g. ``ThreadBusy``). Call it
    under the store's lock.
    """
    try:
        raw = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
        core.leases = {k: Lease.model_validate(v) for k, v in raw.items()}
    except (ValueError, ValidationError) as exc:
        raise StoreCorrupt(str(path), f"not a valid lease table ({exc})") from None
    before = dict(core.leases)
    yield
    if core.leases != before:
        data = {k: v.model_dump(mode="json") for k, v in core.leases.items()}
        atomic_write(path, json.dumps(data).encode())
