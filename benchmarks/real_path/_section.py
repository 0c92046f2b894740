"""What every section script shares: its command line and how it hands its table back."""

from __future__ import annotations

import argparse
import json
import resource
import time
from pathlib import Path
from typing import Any


def parse(doc: str | None) -> argparse.Namespace:
    """The arguments every section takes: ``--json-out FILE`` and ``--quick``."""
    parser = argparse.ArgumentParser(description=(doc or "").splitlines()[0])
    parser.add_argument("--json-out", required=True, help="where to write the section's JSON")
    parser.add_argument("--quick", action="store_true", help="a fast smoke run")
    return parser.parse_args()


def emit(
    args: argparse.Namespace,
    *,
    title: str,
    columns: list[str],
    rows: list[list[Any]],
    checks: list[tuple[str, bool]] = (),  # type: ignore[assignment]
    notes: list[str] = (),  # type: ignore[assignment]
    extra: dict[str, Any] | None = None,
) -> None:
    """Write the section's result for the driver (``__main__.py``) to print and store."""
    payload = {
        "title": title,
        "columns": columns,
        "rows": rows,
        "checks": [[text, bool(ok)] for text, ok in checks],
        "notes": list(notes),
        **(extra or {}),
    }
    Path(args.json_out).write_text(json.dumps(payload, indent=1))


def cpu_seconds() -> float:
    """CPU time (user + system) of this process so far; the shared machines make wall time noisy."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def now() -> float:
    """A monotonic wall clock in seconds."""
    return time.perf_counter()
