"""Ask in one process, answer from the SQLite store in another, remember across processes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from awaken_ext_permissions import AUDIT_KEY, REMEMBERED_KEY
from awaken_runtime import Approve, AwaitReason, Deny, Phase, ResumeTicket, Scope, ScopeBinding
from awaken_runtime.stores import open_store


def run_rig(rig_path: Path, mode: str, url: str, thread: str) -> str:
    out = subprocess.run(
        [sys.executable, str(rig_path), mode, url, thread],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    return out.strip().splitlines()[-1]


async def _close(store: Any) -> None:
    close = getattr(store, "close", None)
    if close is not None:
        await close()


async def test_approve_from_another_process_and_remember_it(
    rig: Any, rig_path: Path, tmp_path: Path
) -> None:
    url = f"sqlite:///{tmp_path}/awaken.db"
    ticket = ResumeTicket.model_validate_json(run_rig(rig_path, "park", url, "t1"))
    assert ticket.await_reason is AwaitReason.TOOL_PERMISSION
    assert ticket.payload["tool"] == "write_file" and ticket.payload["rule"] == "default: ask"
    store = open_store(url)
    try:
        runtime = rig.coder(store, rig._park_turn)
        state = await runtime.resume(ticket.model_dump_json(), Approve(remember="thread"))
        assert state.phase is Phase.ENDED and state.final_text == "done"
        assert [m.text for m in state.new_messages if m.role == "tool"] == ["wrote src/a.py"]
        entries = [c.action.value for b in state.log for _p, c in b.entries if c.key == AUDIT_KEY]
        assert entries[0][ticket.call.id]["decision"] == "approve"
        snapshot = await store.load(ScopeBinding("t1", "default", "default"))
        assert snapshot.parked is None
        remembered = snapshot.state[(Scope.THREAD, REMEMBERED_KEY)]
        assert [e["behavior"] for e in remembered.values()] == ["allow"]
    finally:
        await _close(store)
    # A third process: the same call in the same thread runs without asking.
    again = json.loads(run_rig(rig_path, "again", url, "t1"))
    assert again == {"phase": "ended", "results": ["wrote src/a.py"]}


async def test_deny_from_another_process(rig: Any, rig_path: Path, tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/awaken.db"
    ticket = run_rig(rig_path, "park", url, "t2")
    store = open_store(url)
    try:
        state = await rig.coder(store, rig._park_turn).resume(ticket, Deny(reason="no writes"))
        (result,) = [m for m in state.new_messages if m.role == "tool"]
        assert "no writes" in result.text and result.metadata.get("is_error") is True
        assert state.phase is Phase.ENDED and state.final_text == "done"
    finally:
        await _close(store)
