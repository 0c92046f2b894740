"""The CLI's newcomer surface: the demo reads its prompt and paces only a terminal, every
run ends with where its state lives, and expected failures are one line with the fix."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from awaken_runtime.cli import _demo, _main
from awaken_runtime.cli._demo import build_demo_runtime, city_in

BOOM = '''
from awaken_runtime import CapabilityBound, Contributions, PhaseHookPoint, PluginManifest


def get_time(zone: str) -> str:
    """The time in a zone."""
    return f"12:00 in {zone}"


class Boom:
    manifest = PluginManifest(
        id="boom",
        version="0.1.0",
        bound=CapabilityBound(phase_hooks=frozenset({PhaseHookPoint.BEFORE_INFERENCE})),
    )

    def resolve(self, config):
        async def hook(ctx):
            raise ValueError("the plugin broke")

        return Contributions(phase_hooks={PhaseHookPoint.BEFORE_INFERENCE: hook})
'''

AGENT = """
id = "helper"
model_binding = "local"
tool_ids = ["localtools:get_time"]
{plugins}

[[models]]
id = "local"
provider = "echo"
model = "echo"
"""


def awaken(*args: str, cwd: Path | None = None, **env: str) -> subprocess.CompletedProcess[str]:
    code = "import sys; from awaken_runtime.cli._main import main; sys.exit(main(sys.argv[1:]))"
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=cwd,
        env={"PATH": "/usr/bin:/bin", "AWAKEN_DISABLE_PLUGINS": "*", **env},
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "localtools.py").write_text(textwrap.dedent(BOOM), encoding="utf-8")
    (tmp_path / "agent.toml").write_text(AGENT.format(plugins=""), encoding="utf-8")
    boom = AGENT.format(plugins='plugin_ids = ["localtools:Boom"]')
    (tmp_path / "boom.toml").write_text(boom, encoding="utf-8")
    return tmp_path


# --- the demo ---------------------------------------------------------------------


def test_demo_answers_about_the_city_in_its_prompt() -> None:
    done = awaken("demo", "What's the weather in Paris?", AWAKEN_STORE="memory://")
    assert done.returncode == 0, done.stderr
    assert '-> lookup_weather({"city": "Paris"})' in done.stdout
    assert '-> celsius_to_fahrenheit({"celsius": 17.0})' in done.stdout
    assert "In Paris it is 62.6°F (17°C) with light rain." in done.stdout
    assert "Lisbon" not in done.stdout
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("state: thread thread_") and "in memory://" in last


@pytest.mark.parametrize(
    ("prompt", "city"),
    [
        ("What's the weather in Paris?", "Paris"),
        ("how about OSLO", "Oslo"),
        ("Weather in Rio de Janeiro tomorrow?", "Rio de Janeiro"),
        ("Is it cold in the morning in Reykjavik", "Reykjavik"),
        ("in Fahrenheit please, for São Paulo", "São Paulo"),
        ("weather at de", "Lisbon"),
        ("", "Lisbon"),
        ("Lisbon or Oslo?", "Lisbon"),
        ("Cairo vs new york", "Cairo"),
        ("temperature in 42", "Lisbon"),
    ],
)
def test_the_scripted_model_picks_the_city_out(prompt: str, city: str) -> None:
    assert city_in(prompt) == city


def test_an_unknown_city_gets_made_up_weather_not_lisbon() -> None:
    done = awaken("demo", "How warm is it in Reykjavik today?", AWAKEN_STORE="memory://")
    assert "In Reykjavik it is 59.0°F (15°C) with overcast." in done.stdout


def test_paced_executor_waits_before_each_chunk(monkeypatch: pytest.MonkeyPatch) -> None:
    waits: list[float] = []
    real_sleep = asyncio.sleep

    async def sleep(delay: float) -> None:
        waits.append(delay)
        await real_sleep(0)

    monkeypatch.setattr(_demo.asyncio, "sleep", sleep)
    runtime = build_demo_runtime(chunk_size=4, delay=0.5)
    state = asyncio.run(runtime.run("weather", "weather in Oslo"))
    assert state.final_text == "In Oslo it is 26.6°F (-3°C) with light snow."
    chunks = -(-len("The user asks about Oslo; I need its current weather first.") // 4)
    chunks += -(-len(state.final_text or "") // 4)
    assert waits == [0.5] * chunks
    waits.clear()
    asyncio.run(build_demo_runtime(chunk_size=4).run("weather", "weather in Oslo"))
    assert waits == []


@pytest.mark.parametrize(("tty", "delay"), [(True, 0.04), (False, 0.0)])
def test_demo_paces_only_a_terminal(
    monkeypatch: pytest.MonkeyPatch, capsys: Any, tty: bool, delay: float
) -> None:
    seen: list[float] = []

    def build(*, delay: float = 0.0) -> Any:
        seen.append(delay)
        return build_demo_runtime()

    monkeypatch.setattr(_demo, "build_demo_runtime", build)
    monkeypatch.setattr(sys.stdout, "isatty", lambda: tty)
    monkeypatch.setenv("AWAKEN_STORE", "memory://")
    assert _main.main(["demo"]) == 0
    assert _main.main(["demo", "--delay", "0.2"]) == 0
    assert seen == [delay, 0.2]
    capsys.readouterr()


# --- awaken run: the store line and import-path tools --------------------------------


def test_run_uses_a_local_tool_module_and_names_its_store(project: Path, tmp_path: Path) -> None:
    db = tmp_path / "state.db"
    done = awaken("run", "--agent", "agent.toml", "--store", f"sqlite:///{db}", "hi", cwd=project)
    assert done.returncode == 0, done.stderr
    assert "(echo) hi" in done.stdout
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("state: thread thread_") and f"saved in sqlite:///{db}" in last
    assert "continue it with --thread thread_" in last


def test_run_default_store_is_named_on_the_last_line(project: Path, tmp_path: Path) -> None:
    data = tmp_path / "xdg"
    done = awaken("run", "--agent", str(project / "agent.toml"), "hi", XDG_DATA_HOME=str(data))
    assert done.returncode == 0, done.stderr
    assert (
        done.stderr.strip()
        .splitlines()[-1]
        .split(" saved in ")[1]
        .startswith(f"sqlite:///{data}/awaken/awaken.db ")
    )
    assert (data / "awaken" / "awaken.db").exists()


# --- one line per expected failure ------------------------------------------------------


def test_a_failing_plugin_is_one_line_with_the_fix(project: Path) -> None:
    done = awaken("run", "--agent", "boom.toml", "--store", "memory://", "hi", cwd=project)
    assert done.returncode == 1
    assert "Traceback" not in done.stdout + done.stderr
    errors = [line for line in done.stdout.splitlines() if line.startswith("error:")]
    assert errors == [
        "error: plugin 'boom' failed in BEFORE_INFERENCE: ValueError: the plugin broke; fix the "
        "plugin or remove 'boom' from the agent's plugin_ids (--verbose shows the traceback)"
    ]
    assert not [line for line in done.stderr.splitlines() if not line.startswith("state:")]


@pytest.mark.parametrize("flag", [["--verbose", "run"], ["run", "-v"]])
def test_verbose_shows_the_traceback(project: Path, flag: list[str]) -> None:
    done = awaken(*flag, "--agent", "boom.toml", "--store", "memory://", "hi", cwd=project)
    assert done.returncode == 1
    assert "Traceback (most recent call last)" in done.stderr
    assert 'raise ValueError("the plugin broke")' in done.stderr
    assert "(--verbose shows the traceback)" not in done.stdout


def test_a_bad_import_path_is_one_line(project: Path) -> None:
    (project / "bad.toml").write_text(
        AGENT.format(plugins="").replace("localtools:get_time", "localtools:get_tme")
    )
    done = awaken("run", "--agent", "bad.toml", "hi", cwd=project)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.splitlines() == [
        "awaken run: import path 'localtools:get_tme' in agent file 'bad.toml': 'localtools' "
        "has no attribute 'get_tme' (it has: Boom, CapabilityBound, Contributions, "
        "PhaseHookPoint, PluginManifest, get_time)"
    ]
    verbose = awaken("-v", "run", "--agent", "bad.toml", "hi", cwd=project)
    assert "Traceback" in verbose.stderr and verbose.returncode == 2


def test_an_unexpected_error_is_one_line_too(monkeypatch: pytest.MonkeyPatch, capsys: Any) -> None:
    def broken(args: Any) -> int:
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(_main, "_cmd_plugins", broken)
    assert _main.main(["plugins"]) == 1
    err = capsys.readouterr().err
    assert err == "awaken plugins: RuntimeError: disk on fire (--verbose shows the traceback)\n"
    assert _main.main(["plugins", "--verbose"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("Traceback") and err.endswith(
        "awaken plugins: RuntimeError: disk on fire\n"
    )


def test_a_bad_store_url_is_one_line(capsys: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AWAKEN_STORE", raising=False)
    assert _main.main(["demo", "--store", "bogus://"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith("awaken demo: ") and "bogus://" in err[0]
    assert os.environ.get("AWAKEN_STORE") is None
