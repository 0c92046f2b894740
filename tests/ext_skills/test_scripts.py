"""skill_script: off by default; success, failure, timeout kill, cancellation, caps."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
import time
from pathlib import Path

import pytest

from awaken_ext_skills import (
    MANIFEST,
    SCRIPT_TOOL,
    PathRefused,
    ScriptLimits,
    SkillRegistry,
    run_script,
)
from awaken_runtime import CancellationToken

ECHO = """
import os, sys
data = sys.stdin.read()
print("args=" + "|".join(sys.argv[1:]))
print("cwd=" + os.getcwd())
print("stdin=" + repr(data))
print("skill=" + os.environ["SKILL_NAME"])
print("oops", file=sys.stderr)
"""
SLEEPER = """
import os, sys, time
with open(sys.argv[1], "w") as f:
    f.write(str(os.getpid()))
time.sleep(60)
"""
FAIL = "import sys\nprint('bad input', file=sys.stderr)\nsys.exit(3)\n"
SPAM = "import sys\nsys.stdout.write('o' * 200000)\nsys.stderr.write('e' * 200000)\n"


@pytest.fixture
def skill(tmp_path: Path, skill_factory):
    skill_factory(
        tmp_path / "skills",
        "tooling",
        files={
            "scripts/echo.py": ECHO,
            "scripts/sleep.py": SLEEPER,
            "scripts/fail.py": FAIL,
            "scripts/spam.py": SPAM,
            "scripts/hello.sh": 'echo "sh:$1:$(pwd)"\n',
            "scripts/tool.rb": "puts 1",
            "references/not-a-script.py": "print('no')",
        },
    )
    return SkillRegistry([tmp_path / "skills"], packs=False).get("tooling")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def _pid_from(path: Path) -> int:
    for _ in range(200):
        if path.exists() and path.read_text():
            return int(path.read_text())
        await asyncio.sleep(0.02)
    raise AssertionError("the script did not start")


async def test_success(skill) -> None:
    result = await run_script(skill, "scripts/echo.py", ["a b", "--x=1"], limits=ScriptLimits())
    assert result.ok and result.exit_code == 0
    lines = result.stdout.splitlines()
    assert lines[0] == "args=a b|--x=1"  # no shell: one argument each, spaces kept
    assert lines[1] == f"cwd={skill.root}"
    assert lines[2] == "stdin=''"
    assert lines[3] == "skill=tooling"
    assert result.stderr.strip() == "oops"
    assert not result.stdout_truncated and not result.timed_out
    assert result.script == "scripts/echo.py"


async def test_path_without_scripts_prefix(skill) -> None:
    result = await run_script(skill, "echo.py", [], limits=ScriptLimits())
    assert result.ok and result.script == "scripts/echo.py"


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
async def test_shell_script_runs_with_bash(skill) -> None:
    result = await run_script(skill, "scripts/hello.sh", ["$HOME;rm"], limits=ScriptLimits())
    assert result.ok
    assert result.stdout.strip() == f"sh:$HOME;rm:{skill.root}"


async def test_non_zero_exit(skill) -> None:
    result = await run_script(skill, "scripts/fail.py", [], limits=ScriptLimits())
    assert result.exit_code == 3 and not result.ok
    assert result.stderr.strip() == "bad input"


async def test_timeout_kills_the_process(skill, tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    started = time.monotonic()
    result = await run_script(
        skill, "scripts/sleep.py", [str(pid_file)], limits=ScriptLimits(timeout=0.5)
    )
    assert time.monotonic() - started < 10
    assert result.timed_out and not result.ok
    assert result.exit_code is not None and result.exit_code < 0
    assert not _alive(int(pid_file.read_text()))


async def test_cancellation_kills_the_process(skill, tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    token = CancellationToken()
    task = asyncio.ensure_future(
        run_script(skill, "scripts/sleep.py", [str(pid_file)], limits=ScriptLimits(), cancel=token)
    )
    pid = await _pid_from(pid_file)
    token.cancel("user pressed stop")
    result = await asyncio.wait_for(task, 10)
    assert result.cancelled and not result.timed_out and not result.ok
    assert not _alive(pid)


async def test_task_cancellation_kills_the_process(skill, tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    task = asyncio.ensure_future(
        run_script(skill, "scripts/sleep.py", [str(pid_file)], limits=ScriptLimits())
    )
    pid = await _pid_from(pid_file)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    for _ in range(100):
        if not _alive(pid):
            break
        await asyncio.sleep(0.02)
    assert not _alive(pid)


async def test_output_is_capped(skill) -> None:
    result = await run_script(
        skill, "scripts/spam.py", [], limits=ScriptLimits(max_output_bytes=1000)
    )
    assert result.ok
    assert result.stdout == "o" * 1000 and result.stdout_truncated
    assert result.stderr == "e" * 1000 and result.stderr_truncated


@pytest.mark.parametrize(
    ("script", "args", "code"),
    [
        ("scripts/tool.rb", [], "unsupported_script"),
        ("scripts/missing.py", [], "not_found"),
        ("references/not-a-script.py", [], "not_allowed"),
        ("../../../../bin/sh", [], "path_escapes_root"),
        ("/bin/sh", [], "path_escapes_root"),
        ("scripts/%2e%2e/SKILL.md", [], "path_escapes_root"),
        ("scripts/echo.py", ["a"] * 5, "invalid_arguments"),
        ("scripts/echo.py", ["x" * 20], "invalid_arguments"),
        ("scripts/echo.py", ["a\x00b"], "invalid_arguments"),
    ],
)
async def test_refusals(skill, script: str, args: list[str], code: str) -> None:
    limits = ScriptLimits(max_args=4, max_arg_bytes=16)
    with pytest.raises(PathRefused) as info:
        await run_script(skill, script, args, limits=limits)
    assert info.value.code == code


# -- through the runtime ---------------------------------------------------------


async def test_disabled_by_default(
    tmp_path, skill_factory, skills_rig, call_turn, inspect_request
) -> None:
    skill_factory(tmp_path, "tooling", files={"scripts/echo.py": ECHO})
    rig = skills_rig(
        [
            call_turn("skill", name="tooling"),
            call_turn(SCRIPT_TOOL, skill="tooling", script="echo.py"),
            "x",
        ],
        paths=[tmp_path],
    )
    await rig.run(thread_id="t")
    assert SCRIPT_TOOL not in inspect_request.tools(rig.requests[0])
    assert SCRIPT_TOOL in MANIFEST.bound.tool_ids  # the static bound still names it
    blocked = rig.tool_results("t")[1]
    assert blocked.metadata.get("is_error") is True and "Unknown tool" in blocked.text
    files = json.loads(rig.tool_results("t")[0].text)["files"]
    assert files == []  # scripts are not listed while scripts are off


async def test_enabled_through_config(
    tmp_path, skill_factory, skills_rig, call_turn, inspect_request
) -> None:
    skill_factory(tmp_path, "tooling", files={"scripts/echo.py": ECHO, "scripts/fail.py": FAIL})
    rig = skills_rig(
        [
            call_turn(SCRIPT_TOOL, skill="tooling", script="echo.py"),
            call_turn("skill", name="tooling"),
            call_turn(SCRIPT_TOOL, skill="tooling", script="echo.py", args=["hi"]),
            call_turn(SCRIPT_TOOL, skill="tooling", script="scripts/fail.py"),
            call_turn(SCRIPT_TOOL, skill="tooling", script="../SKILL.md"),
            "done",
        ],
        paths=[tmp_path],
        config={"enable_scripts": True, "script_timeout_seconds": 20},
    )
    await rig.run(thread_id="t")
    assert SCRIPT_TOOL in inspect_request.tools(rig.requests[0])
    results = rig.tool_results("t")
    assert json.loads(results[0].text)["error"] == "skill_not_active"
    assert json.loads(results[1].text)["files"] == ["scripts/echo.py", "scripts/fail.py"]
    ok = json.loads(results[2].text)
    assert ok["exit_code"] == 0 and ok["stdout"].startswith("args=hi\n")
    assert results[2].metadata.get("is_error") is not True
    failed = json.loads(results[3].text)
    assert failed["exit_code"] == 3 and results[3].metadata.get("is_error") is True
    assert json.loads(results[4].text)["error"] == "path_escapes_root"


def test_python_is_the_current_interpreter(skill) -> None:
    # .py scripts run with sys.executable: the same environment as the agent.
    assert Path(sys.executable).exists()
