"""Terminal approval: a real pty drives approve-always and deny; no tty writes a ticket file."""

from __future__ import annotations

import io
import json
import os
import select
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from awaken_runtime import Phase, ResumeRejected
from awaken_runtime.cli._approve import (
    EXIT_AWAITING,
    PROMPT,
    drive_with_terminal,
    exit_status,
    permission_asks,
    read_ticket_file,
    resume_from_file,
)
from awaken_runtime.stores import open_store

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pty")


class Pty:
    """A child process on a pseudo-terminal; ``expect`` returns output since the last call."""

    def __init__(self, argv: list[str]) -> None:
        self.master, slave = os.openpty()
        self.proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, close_fds=True)
        os.close(slave)
        self.buffer = ""

    def expect(self, needle: str, limit: float = 120.0) -> str:
        """Read until ``needle`` appears (``limit`` only guards against a hang)."""
        while needle not in self.buffer:
            ready, _, _ = select.select([self.master], [], [], limit)
            if not ready:
                raise AssertionError(f"no {needle!r} in output:\n{self.buffer}")
            try:
                chunk = os.read(self.master, 4096).decode(errors="replace")
            except OSError:  # EIO: the child closed the terminal
                chunk = ""
            if not chunk:
                raise AssertionError(f"process ended before {needle!r}:\n{self.buffer}")
            self.buffer += chunk.replace("\r\n", "\n")
        head, _, rest = self.buffer.partition(needle)
        self.buffer = rest
        return head + needle

    def send(self, line: str) -> None:
        os.write(self.master, (line + "\n").encode())

    def close(self) -> int:
        code = self.proc.wait(timeout=120)
        os.close(self.master)
        return code


def test_interactive_prompt_approve_always_then_deny(rig_path: Path, tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/cli.db"
    term = Pty([sys.executable, str(rig_path), "cli", url, "t-cli"])
    try:
        first = term.expect(PROMPT)
        assert "permission needed: write_file" in first and '"path": "src/a.py"' in first
        assert "no rule matched; the default is ask" in first
        term.send("maybe")
        assert "please answer o (once), a (always for this thread) or d (deny)" in term.expect(
            PROMPT
        )
        term.send("a")  # always for this thread
        # The second, identical write_file is remembered: the next prompt is for shell.
        second = term.expect(PROMPT)
        assert "permission needed: shell" in second and "write_file" not in second
        term.send("d")
        result = json.loads(term.expect("}").split("RESULT ", 1)[1])
    finally:
        code = term.close()
    assert code == 0
    assert result["phase"] == "ended" and result["final"] == "finished"
    wrote, wrote_again, denied = result["results"]
    assert wrote == wrote_again == "wrote src/a.py"
    assert "denied in the terminal" in denied


async def test_without_a_terminal_tickets_go_to_a_file(rig: Any, tmp_path: Path) -> None:
    store = open_store("memory://")
    runtime = rig.coder(store)
    state = await runtime.run("coder", "build it", thread_id="t")
    out = io.StringIO()
    ticket_file = tmp_path / "ticket.json"
    waiting = await drive_with_terminal(
        runtime,
        state,
        stdin=io.StringIO(""),
        stdout=out,
        ticket_path=ticket_file,
        context={"agent_file": "coder.toml", "store": "memory://"},
    )
    assert waiting.phase is Phase.WAITING and exit_status(waiting) == EXIT_AWAITING == 3
    assert f"awaken resume {ticket_file} --approve" in out.getvalue()
    saved = read_ticket_file(ticket_file)
    assert saved.context["agent_file"] == "coder.toml"
    assert [t.call.name for t in saved.tickets] == ["write_file"]
    # A script approves for the thread: the identical second write runs, shell asks next.
    state = await resume_from_file(runtime, ticket_file, "approve-thread")
    assert [t.call.name for t in permission_asks(state)] == ["shell"]
    with pytest.raises(ResumeRejected):  # the file's ticket was answered already
        await resume_from_file(runtime, ticket_file, "approve")
    await drive_with_terminal(
        runtime, state, stdin=io.StringIO(""), stdout=out, ticket_path=ticket_file
    )
    state = await resume_from_file(runtime, ticket_file, "deny")
    assert state.phase is Phase.ENDED and state.final_text == "finished"
    assert exit_status(state) == 0
    with pytest.raises(ValueError, match="unknown decision"):
        await resume_from_file(runtime, ticket_file, "perhaps")


async def test_a_bare_ticket_json_file_is_accepted(rig: Any, tmp_path: Path) -> None:
    runtime = rig.coder(open_store("memory://"))
    state = await runtime.run("coder", "build it", thread_id="t")
    path = tmp_path / "bare.json"
    path.write_text(state.tickets[0].model_dump_json())
    state = await resume_from_file(runtime, path, "approve")
    assert [t.call.name for t in state.tickets] == ["write_file"]  # the second write asks again


async def test_end_of_input_leaves_the_run_waiting(rig: Any) -> None:
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    runtime = rig.coder(open_store("memory://"))
    state = await runtime.run("coder", "build it", thread_id="t")
    out = io.StringIO()
    after = await drive_with_terminal(runtime, state, stdin=Tty(""), stdout=out)
    assert after.phase is Phase.WAITING and PROMPT in out.getvalue()
