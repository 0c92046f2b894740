"""Running a skill's scripts: no shell, confined, time- and size-limited.

``scripts/<file>.py`` runs with the current Python (``sys.executable``),
``scripts/<file>.sh`` with ``bash``; nothing else runs. The process gets the
arguments as a list (never a shell command line), the skill folder as its
working directory, an empty stdin and a minimal environment (``PATH``,
``HOME``, locale and temp variables, plus ``SKILL_NAME`` and ``SKILL_DIR``).
It runs in its own process group; on timeout or cancellation the whole group
is killed. stdout and stderr are captured up to a cap each (the rest is read
and dropped so the process never blocks on a full pipe).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from awaken_runtime import CancellationToken

from ._paths import PathRefused, confine
from ._skill import Skill

__all__ = ["ScriptLimits", "ScriptResult", "run_script"]

_ENV_KEEP = ("PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR", "TEMP", "TMP", "SYSTEMROOT")
_GRACE = 2.0  # seconds to collect output after the process is gone


@dataclass(frozen=True, slots=True)
class ScriptLimits:
    """Bounds of one script run."""

    timeout: float = 30.0
    """Seconds before the process group is killed."""
    max_output_bytes: int = 16 * 1024
    """Bytes of stdout and of stderr kept (each)."""
    max_args: int = 32
    """Most arguments accepted."""
    max_arg_bytes: int = 4096
    """Largest single argument (UTF-8 bytes)."""


@dataclass(frozen=True, slots=True)
class ScriptResult:
    """What a script run produced."""

    skill: str
    script: str
    exit_code: int | None
    """The exit status; negative is the signal that ended it (``-9`` after a kill)."""
    stdout: str
    stderr: str
    stdout_truncated: bool
    stderr_truncated: bool
    timed_out: bool
    cancelled: bool
    duration_ms: int

    @property
    def ok(self) -> bool:
        """Exit status 0 and neither timed out nor cancelled."""
        return self.exit_code == 0 and not self.timed_out and not self.cancelled

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready fields."""
        return asdict(self)


class _Capture:
    __slots__ = ("buf", "cap", "truncated")

    def __init__(self, cap: int) -> None:
        self.buf = bytearray()
        self.cap = cap
        self.truncated = False

    async def drain(self, stream: asyncio.StreamReader | None) -> None:
        if stream is None:
            return
        while chunk := await stream.read(65536):
            room = self.cap - len(self.buf)
            if room > 0:
                self.buf += chunk[:room]
            if len(chunk) > room:
                self.truncated = True

    def text(self) -> str:
        return self.buf.decode("utf-8", errors="replace")


def _interpreter(suffix: str) -> str:
    if suffix == ".py":
        return sys.executable
    if suffix == ".sh":
        bash = shutil.which("bash")
        if bash is None:
            raise PathRefused("unsupported_script", "bash is not installed on this machine")
        return bash
    raise PathRefused(
        "unsupported_script",
        f"cannot run {suffix or 'extensionless'} files; scripts must end in .py or .sh",
    )


def check_args(args: Sequence[str], limits: ScriptLimits) -> None:
    """Raise :class:`PathRefused` (``invalid_arguments``) when ``args`` break a limit."""
    if len(args) > limits.max_args:
        raise PathRefused(
            "invalid_arguments", f"{len(args)} arguments given; at most {limits.max_args}"
        )
    for i, arg in enumerate(args):
        if "\x00" in arg:
            raise PathRefused("invalid_arguments", f"argument {i} contains a NUL character")
        if len(arg.encode()) > limits.max_arg_bytes:
            raise PathRefused(
                "invalid_arguments", f"argument {i} is over {limits.max_arg_bytes} bytes"
            )


def _kill(proc: asyncio.subprocess.Process) -> None:
    try:
        if os.name == "posix":
            os.killpg(proc.pid, signal.SIGKILL)
        else:  # pragma: no cover - no process groups
            proc.kill()
    except (ProcessLookupError, PermissionError):
        pass


async def run_script(
    skill: Skill,
    script: str,
    args: Sequence[str],
    *,
    limits: ScriptLimits,
    cancel: CancellationToken | None = None,
) -> ScriptResult:
    """Run ``scripts/<script>`` of ``skill`` with ``args``; see the module docstring.

    Raises :class:`PathRefused` when the script path or the arguments are
    refused; a script that fails, times out or is cancelled is a result.
    """
    target = confine(skill.root, script, ("scripts",), default_area="scripts")
    interpreter = _interpreter(target.suffix)
    check_args(args, limits)
    env = {k: v for k in _ENV_KEEP if (v := os.environ.get(k)) is not None}
    env.update(SKILL_NAME=skill.name, SKILL_DIR=str(skill.root), PYTHONIOENCODING="utf-8")
    started = time.monotonic()
    proc = await asyncio.create_subprocess_exec(
        interpreter,
        str(target),
        *args,
        cwd=skill.root,
        env=env,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        start_new_session=os.name == "posix",
    )
    out, err = _Capture(limits.max_output_bytes), _Capture(limits.max_output_bytes)
    readers = asyncio.gather(out.drain(proc.stdout), err.drain(proc.stderr))
    waiter = asyncio.ensure_future(proc.wait())
    watched: set[asyncio.Future[Any]] = {waiter}
    canceller = asyncio.ensure_future(cancel.wait()) if cancel is not None else None
    if canceller is not None:
        watched.add(canceller)
    timed_out = cancelled = False
    try:
        done, _ = await asyncio.wait(
            watched, timeout=limits.timeout, return_when=asyncio.FIRST_COMPLETED
        )
        if waiter not in done:
            cancelled = canceller is not None and canceller in done
            timed_out = not cancelled
        _kill(proc)  # also reaps children left behind by a script that exited
        await proc.wait()
        try:
            await asyncio.wait_for(asyncio.shield(readers), timeout=_GRACE)
        except TimeoutError:
            readers.cancel()
    finally:
        if proc.returncode is None:
            _kill(proc)
        waiter.cancel()
        if canceller is not None:
            canceller.cancel()
        if not readers.done():
            readers.cancel()
    return ScriptResult(
        skill=skill.name,
        script=target.relative_to(skill.root).as_posix(),
        exit_code=proc.returncode,
        stdout=out.text(),
        stderr=err.text(),
        stdout_truncated=out.truncated,
        stderr_truncated=err.truncated,
        timed_out=timed_out,
        cancelled=cancelled,
        duration_ms=int((time.monotonic() - started) * 1000),
    )
