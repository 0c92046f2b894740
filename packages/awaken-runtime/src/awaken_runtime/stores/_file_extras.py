"""The file backend's per-run event logs and its retention pass.

Each run's stream events are one JSONL file, read whole (they are short and
pruned).
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from pydantic import ValidationError

from ._errors import StoreCorrupt
from ._file_mirror import FileMirror
from ._jsonl import read_lines
from ._records import PruneReport, StreamEvent

__all__ = ["prune_files", "read_event_log"]


def read_event_log(path: Path) -> list[StreamEvent]:
    """Every event in a run's log ([] if there is none)."""
    records, _end, _lines = read_lines(path, 0, 0)
    try:
        return [StreamEvent.model_validate(r) for _o, r in records]
    except ValidationError as exc:
        raise StoreCorrupt(str(path), f"an entry is not a stream event ({exc})") from None


def prune_files(files: FileMirror, cut: datetime) -> PruneReport:
    """Retention for the file store (under its lock): see ``FileStore.prune``."""
    core = files.core
    files.all_threads()
    for run_id in files.event_runs():
        events = read_event_log(files.event_path(run_id))
        if events:
            core.events[run_id] = events
    had_events = set(core.events)
    report, touched = core.prune(cut)
    for run_id in had_events - set(core.events):
        files.event_path(run_id).unlink(missing_ok=True)
    for tid in touched:
        files.compact(tid)
    if report.configs:
        files.compact_global()
    return report
