"""Commands other distributions add (entry points ``awaken.commands``) load only when needed.

``awaken run`` or ``awaken demo`` must not import every add-on's libraries (the
MCP SDK, the A2A SDK, pgqueuer: over a second together); ``awaken serve`` loads
only ``serve``; help, no command or an unknown one load them all, so the
listing and argparse's error name every command.
"""

from __future__ import annotations

import argparse
import ast
import subprocess
import sys
from typing import Any

import pytest

from awaken_runtime.cli import _main
from awaken_runtime.cli._main import _command_of, _installed_commands

ADD_ONS = ("awaken_mcp", "awaken_server", "awaken_protocol_a2a", "awaken_run_ingress")


def _loaded_after(argv: list[str]) -> list[str]:
    code = (
        "import sys; from awaken_runtime.cli._main import build_parser\n"
        f"parser = build_parser({argv!r})\n"
        f"print(sorted(m for m in sys.modules if m.split('.')[0] in {ADD_ONS!r}))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    return ast.literal_eval(done.stdout)  # a printed list of module names


@pytest.mark.parametrize(
    "argv", [["demo"], ["-v", "run", "--agent", "serve", "hi"], ["plugins", "--json"], ["new"]]
)
def test_a_built_in_command_loads_no_add_on(argv: list[str]) -> None:
    assert _loaded_after(argv) == []


def test_an_installed_command_loads_only_its_own_distribution() -> None:
    loaded = _loaded_after(["serve", "--help"])
    assert "awaken_server._cli" in loaded
    assert not [m for m in loaded if m.split(".")[0] != "awaken_server"]


@pytest.mark.parametrize("argv", [[], ["--help"], ["-h", "demo"], ["frobnicate"]])
def test_help_and_unknown_commands_load_every_add_on(argv: list[str]) -> None:
    loaded = {m.split(".")[0] for m in _loaded_after(argv)}
    assert loaded == set(ADD_ONS)


def test_the_command_word_skips_options_and_stops_at_help() -> None:
    assert _command_of(["-v", "--verbose", "serve", "--port", "1"]) == "serve"
    assert _command_of(["--help", "serve"]) is None
    assert _command_of(["-v"]) is None
    assert _command_of(None) is None


class _EntryPoint:
    def __init__(self, name: str, adds: str | None, loaded: list[str]) -> None:
        self.name, self.value = name, f"tests:{name}"
        self._adds, self._loaded = adds, loaded

    def load(self) -> Any:
        self._loaded.append(self.name)
        if self._adds is None:
            raise ImportError("no module named 'broken_addon'")
        adds = self._adds
        return lambda sub: sub.add_parser(adds).set_defaults(func=lambda args: 0)


@pytest.fixture
def installed(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Three add-ons: ``alpha`` adds ``alpha``, ``beta-ep`` adds ``beta``, ``gamma`` is broken."""
    loaded: list[str] = []
    found = [
        _EntryPoint("alpha", "alpha", loaded),
        _EntryPoint("beta-ep", "beta", loaded),
        _EntryPoint("gamma", None, loaded),
    ]
    import importlib.metadata

    monkeypatch.setattr(importlib.metadata, "entry_points", lambda group: found)
    return loaded


def _subparsers() -> Any:
    sub = argparse.ArgumentParser().add_subparsers(dest="command")
    sub.add_parser("demo")
    return sub


def test_a_named_add_on_is_the_only_one_loaded(installed: list[str]) -> None:
    sub = _subparsers()
    _installed_commands(sub, "alpha")
    assert installed == ["alpha"] and "alpha" in sub.choices


def test_a_command_named_unlike_its_entry_point_is_still_found(
    installed: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    sub = _subparsers()
    _installed_commands(sub, "beta")  # no entry point is named "beta": all of them load
    assert installed == ["alpha", "beta-ep", "gamma"] and "beta" in sub.choices
    assert "command 'gamma' from tests:gamma failed to load" in capsys.readouterr().err


def test_a_broken_add_on_named_by_the_command_is_reported_and_not_added(
    installed: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    sub = _subparsers()
    _installed_commands(sub, "gamma")  # only the broken one is named: nothing else loads
    assert installed == ["gamma"] and "gamma" not in sub.choices
    assert "command 'gamma' from tests:gamma failed to load" in capsys.readouterr().err


def test_a_built_in_command_loads_no_entry_point(installed: list[str]) -> None:
    _installed_commands(_subparsers(), "demo")
    assert installed == []


def test_main_parses_with_only_the_named_command_loaded(
    installed: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # main() configures the root logger for a terminal; not this test process's
    monkeypatch.setattr("awaken_runtime.cli._report.setup_logging", lambda verbose: None)
    assert _main.main(["alpha"]) == 0
    assert installed == ["alpha"]
