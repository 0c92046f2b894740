"""The file backend's retention pass: ``FileStore.prune`` under the store's lock.

It loads every thread and event log into the mirror, lets ``Core.prune`` decide
what goes, deletes the emptied event logs and rewrites (compacts) each touched
thread file and the global log.
"""

from __future__ import annotations

from datetime import datetime

from .._records import PruneReport
from ._mirror import FileMirror, read_event_log

__all__ = ["prune_files"]


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
