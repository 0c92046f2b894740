"""``awaken plugins --check``: every installed plugin resolved with its default config."""

from __future__ import annotations

import json

import pytest

from awaken_runtime.cli._main import main

GOOD = '''
from awaken_runtime import PluginBase, StateKey, phase_hook


class Good(PluginBase, id="chk-good"):
    """Fine."""

    steps = StateKey("chk.steps", int, default=0)

    @phase_hook("step_end")
    def count(self, ctx):
        return None
'''

PROBLEMS = '''
from pydantic import BaseModel, Field, field_validator
from awaken_runtime import CapabilityBound, Contributions, PluginManifest, tool


@tool
def stray() -> str:
    """A tool the bound does not list."""
    return "x"


class Exceeds:
    manifest = PluginManifest(id="chk-exceeds", bound=CapabilityBound(tool_gates=True))

    def resolve(self, config):
        return Contributions(tools=[stray])


class Raises:
    manifest = PluginManifest(id="chk-raises")

    def resolve(self, config):
        raise RuntimeError("resolve exploded")


class NotContributions:
    manifest = PluginManifest(id="chk-wrong-type")

    def resolve(self, config):
        return {"tools": []}


class Strict(BaseModel):
    level: int = Field(default=0, validate_default=True)

    @field_validator("level")
    @classmethod
    def positive(cls, v):
        if v <= 0:
            raise ValueError("must be positive")
        return v


class BadDefaults:
    manifest = PluginManifest(id="chk-bad-defaults", config_model=Strict)

    def resolve(self, config):
        return Contributions()


class Needs(BaseModel):
    api_url: str


class NeedsConfig:
    manifest = PluginManifest(id="chk-needs-config", config_model=Needs)

    def resolve(self, config):
        raise AssertionError("never resolved without its config")


class Wide:
    manifest = PluginManifest(
        id="chk-wide", bound=CapabilityBound(tool_ids={"never"}, run_end_guards=True)
    )

    def resolve(self, config):
        return Contributions()


exceeds, raises, wrong, bad, needs, wide = (
    Exceeds(), Raises(), NotContributions(), BadDefaults(), NeedsConfig(), Wide()
)
'''


def _check(capsys, *extra):
    code = main(["plugins", "--check", *extra])
    return code, capsys.readouterr().out


def _only(text: str, prefix: str = "chk") -> str:
    """The lines about this test's plugins (first-party ones are installed too)."""
    keep, on = [], False
    for line in text.splitlines():
        if line.startswith(("ok ", "FAIL")):
            on = f" {prefix}" in line
        if on:
            keep.append(line)
    return "\n".join(keep)


def test_good_plugins_pass(installed, capsys):
    installed.add("awaken-chk-good", {"chk-good": "awk_chk_good:Good"}, {"awk_chk_good": GOOD})
    installed.scan()
    code, out = _check(capsys)
    assert code == 0, out
    assert "ok   chk-good  [awaken-chk-good]" in out
    assert "config: none (an agent's plugin_config table for it is refused)" in _only(out)
    assert "0 with problems" in out


def test_warnings_while_resolving_are_notes(installed, capsys):
    source = """
import warnings
from pydantic import BaseModel
from awaken_runtime import PluginBase


class Cfg(BaseModel):
    level: int = 1
    mode: str = "fast"


class Warns(PluginBase, id="chk-warns"):
    config_model = Cfg

    def resolve(self, config):
        warnings.warn("an optional extra is missing")
        return super().resolve(config)
"""
    installed.add(
        "awaken-chk-warns", {"chk-warns": "awk_chk_warns:Warns"}, {"awk_chk_warns": source}
    )
    installed.scan()
    code, out = _check(capsys)
    assert code == 0, out
    section = _only(out)
    assert "warned: an optional extra is missing" in section
    assert "config: Cfg (level, mode)" in section


@pytest.mark.parametrize(
    ("plugin_id", "expected"),
    [
        ("chk-exceeds", "exceeded its capability bound: contributes tool 'stray'"),
        ("chk-raises", "resolve(default config) raised RuntimeError: resolve exploded"),
        ("chk-wrong-type", "resolve returned dict, not awaken_runtime.Contributions"),
        ("chk-bad-defaults", "config model Strict rejects its defaults: level: Value error"),
    ],
)
def test_each_problem_is_reported_with_exit_status_1(installed, capsys, plugin_id, expected):
    name = plugin_id.removeprefix("chk-").replace("-defaults", "").replace("-type", "")
    installed.add(
        f"awaken-{plugin_id}",
        {plugin_id: f"awk_chk_problems:{name}"},
        {"awk_chk_problems": PROBLEMS},
    )
    installed.scan()
    code, out = _check(capsys)
    assert code == 1
    section = _only(out)
    assert section.startswith(f"FAIL {plugin_id}"), out
    assert expected in section


def test_notes_do_not_fail(installed, capsys):
    installed.add(
        "awaken-chk-notes",
        {"chk-needs-config": "awk_chk_notes:needs", "chk-wide": "awk_chk_notes:wide"},
        {"awk_chk_notes": PROBLEMS},
    )
    installed.scan()
    code, out = _check(capsys)
    assert code == 0, out
    assert "needs plugin_config (required: api_url); not resolved with defaults" in out
    assert "declared but not contributed with defaults: tool 'never', run_end_guards" in out


def test_import_errors_and_duplicates_fail(installed, capsys):
    installed.add("awaken-chk-broken", {"chk-broken": "awk_chk_broken"}, {"awk_chk_broken": "1/0"})
    installed.add("awaken-chk-one", {"chk-good": "awk_chk_good:Good"}, {"awk_chk_good": GOOD})
    installed.add("awaken-chk-two", {"chk-good": "awk_chk_good:Good"}, {})
    installed.scan()
    code, out = _check(capsys)
    assert code == 1
    assert "FAIL awaken-chk-broken" in out and "ZeroDivisionError" in out
    assert "FAIL chk-good  [awaken-chk-one and awaken-chk-two]" in out


def test_json_output(installed, capsys):
    installed.add(
        "awaken-chk-exceeds",
        {"chk-exceeds": "awk_chk_problems:exceeds"},
        {"awk_chk_problems": PROBLEMS},
    )
    installed.scan()
    code, out = _check(capsys, "--json")
    assert code == 1
    data = json.loads(out)
    assert data["ok"] is False
    (entry,) = [p for p in data["plugins"] if p["name"] == "chk-exceeds"]
    assert entry["ok"] is False and "stray" in entry["problems"][0]
    assert entry["source"] == "awaken-chk-exceeds"


def test_direct_entry_points_that_are_not_plugins_fail(installed, capsys):
    source = """
class NeedsArgs:
    manifest = None

    def __init__(self, x):
        pass

    def resolve(self, config):
        pass


not_a_plugin = 42
"""
    installed.add(
        "awaken-chk-direct",
        {"chk-args": "awk_chk_direct:NeedsArgs", "chk-int": "awk_chk_direct:not_a_plugin"},
        {"awk_chk_direct": source},
    )
    found = installed.scan()
    errors = {f.source: f.error for f in found.failures}
    assert "cannot be created without arguments" in errors["chk-args"]
    assert "names 42, which is neither a hooks module nor a plugin" in errors["chk-int"]
    code, out = _check(capsys)
    assert code == 1 and out.count("FAIL awaken-chk-direct") == 2
