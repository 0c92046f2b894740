"""Suspend in one OS process, resume in another (issue #3): the ticket and a store file
are all that cross the process boundary.

Both processes open the same SQLite database (``procs/suspension_proc.py``).
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from awaken_runtime import ScopeBinding, ThreadSnapshot
from awaken_runtime.stores import SQLiteStore

HELPER = Path(__file__).parent / "procs" / "suspension_proc.py"
THREAD = "t-xproc"


def load(store_file: Path) -> ThreadSnapshot:
    return asyncio.run(SQLiteStore(store_file).load(ScopeBinding(THREAD, "default", "default")))


def fingerprint_of(store_file: Path) -> tuple[Any, ...]:
    """Everything a resume could change: version, messages, parked record."""
    snap = load(store_file)
    parked = snap.parked.model_dump(mode="json") if snap.parked else None
    return snap.version, [m.model_dump(mode="json") for m in snap.messages], parked


def run_helper(*args: str | Path) -> dict[str, Any]:
    out = Path(args[2])
    done = subprocess.run(
        [sys.executable, str(HELPER), *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(out.read_text())


def test_suspend_in_one_process_and_resume_in_another(tmp_path: Path) -> None:
    store_file = tmp_path / "awaken.db"
    ticket_file = tmp_path / "ticket.json"

    # Process 1: run until the transfer parks; nothing but the files survive it.
    parked = run_helper("park", store_file, tmp_path / "park.json")
    assert parked["phase"] == "waiting"
    assert parked["executed"] == ["call_balance"]
    (ticket_json,) = parked["tickets"]
    ticket = json.loads(ticket_json)
    assert ticket["call"] == {
        "id": "call_transfer",
        "name": "transfer",
        "arguments": {"amount": 25},
        "parse_error": None,
        "raw_arguments": None,
    }
    assert ticket["await_reason"] == "tool_permission"
    assert ticket["payload"] == {"amount": 25}
    assert ticket["run_id"] == parked["run_id"] and ticket["thread_id"] == THREAD
    assert ticket["fingerprint"] == parked["fingerprint"]
    assert ticket["signature"]
    ticket_file.write_text(ticket_json)

    # The database holds the parked run and everything up to the park.
    stored = load(store_file)
    assert [t.ticket_id for t in stored.parked.tickets] == [ticket["ticket_id"]]
    assert [m.role for m in stored.messages] == ["user", "assistant", "tool"]

    # Process 2: a fresh runtime over the same store file resumes with Approve.
    resumed = run_helper("resume", store_file, tmp_path / "resume.json", ticket_file)
    assert "rejected" not in resumed, resumed
    assert resumed["pid"] != parked["pid"] != os.getpid()
    assert resumed["fingerprint"] == parked["fingerprint"]
    assert resumed["phase"] == "ended" and resumed["end_cause"] == "natural_end"
    assert resumed["run_id"] == parked["run_id"]
    assert resumed["executed"] == ["call_transfer"]
    assert resumed["parked"] is False
    transferred = f"transferred 25 in pid {resumed['pid']}"
    assert resumed["transcript"] == [
        ["user", None, "pay acme 25", []],
        ["assistant", None, "", ["call_balance", "call_transfer"]],
        ["tool", "call_balance", "acme has 100", []],
        ["tool", "call_transfer", transferred, []],
        ["assistant", None, f"done: call_balance=acme has 100 | call_transfer={transferred}", []],
    ]
    assert resumed["final_text"] == resumed["transcript"][-1][2]
    assert asyncio.run(SQLiteStore(store_file).get_run(parked["run_id"])).phase.value == "ended"

    # Process 3: the same ticket again is rejected and changes nothing.
    before = fingerprint_of(store_file)
    again = run_helper("resume", store_file, tmp_path / "again.json", ticket_file)
    assert "no waiting run" in again["rejected"]
    assert again["executed"] == []
    assert fingerprint_of(store_file) == before


def test_tampered_ticket_rejected_in_another_process(tmp_path: Path) -> None:
    store_file = tmp_path / "awaken.db"
    parked = run_helper("park", store_file, tmp_path / "park.json")
    ticket = json.loads(parked["tickets"][0])
    ticket["call"]["arguments"]["amount"] = 25_000
    ticket_file = tmp_path / "ticket.json"
    ticket_file.write_text(json.dumps(ticket))
    before = fingerprint_of(store_file)
    resumed = run_helper("resume", store_file, tmp_path / "resume.json", ticket_file)
    assert "signature" in resumed["rejected"]
    assert resumed["executed"] == []
    assert fingerprint_of(store_file) == before
