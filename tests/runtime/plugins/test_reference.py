"""PLUGIN_REFERENCE.md has an entry for everything a plugin author can use.

Adding a hook point, a ``CapabilityBound`` field, an entry-point hookspec, a
``PluginBase`` decorator or a ``Contributions`` field without documenting it
fails here, naming what is missing.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from awaken_runtime import CapabilityBound, Contributions, PhaseHookPoint, hookspecs
from awaken_runtime.plugins import _declarative

PACKAGE = Path(__file__).resolve().parents[3] / "packages" / "awaken-runtime"
REFERENCE = (PACKAGE / "PLUGIN_REFERENCE.md").read_text(encoding="utf-8")


def _section(title: str) -> str:
    """The text of the ``## title`` section."""
    match = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", REFERENCE, re.M | re.S)
    assert match, f"PLUGIN_REFERENCE.md has no '## {title}' section"
    return match.group(1)


def _headings(section: str) -> set[str]:
    return set(re.findall(r"^### `([^`(]+)", section, re.M))


def _bullets(section: str) -> set[str]:
    return set(re.findall(r"^- `@?([A-Za-z_]+)", section, re.M))


def test_every_hook_point_has_a_heading():
    documented = _headings(_section("Hook points (`PhaseHookPoint`)"))
    assert documented == {p.name for p in PhaseHookPoint}


def test_every_hook_point_says_when_context_and_returns():
    section = _section("Hook points (`PhaseHookPoint`)")
    for point in PhaseHookPoint:
        body = re.search(rf"^### `{point.name}`\n(.*?)(?=^### |\Z)", section, re.M | re.S)
        assert body, point.name
        text = body.group(1)
        assert "Context:" in text and "Returns:" in text, f"{point.name} lacks context/returns"


def test_every_bound_field_is_listed():
    documented = _bullets(_section("`CapabilityBound` fields"))
    assert documented == set(CapabilityBound.model_fields)


def test_every_contributions_field_is_listed():
    documented = _bullets(_section("`Contributions` fields (the hand-written form)"))
    assert documented == {f.name for f in dataclasses.fields(Contributions)}


def test_every_hookspec_has_a_heading():
    specs = {
        name
        for name in hookspecs.__all__
        if hasattr(getattr(hookspecs, name), "awaken_spec")  # set by the HookspecMarker
    }
    assert specs, "no hookspecs found: the marker attribute changed"
    assert _headings(_section("Entry-point hookspecs (group `awaken`)")) == specs


def test_every_declarative_decorator_is_listed():
    decorators = {n for n in _declarative.__all__ if n[0].islower()}
    section = _section("Writing a plugin: `PluginBase`")
    assert decorators <= _bullets(section), decorators - _bullets(section)


@pytest.mark.parametrize(
    "rule",
    [
        "Installed is not enabled",
        "Gates only restrict",
        "Context is request-only",
        "The bound is static",
    ],
)
def test_the_rules_are_stated(rule):
    assert f"**{rule}" in _section("The rules")


def test_the_readme_names_the_reference():
    # Named, not linked: a package index renders the README without its folder.
    readme = (PACKAGE / "README.md").read_text(encoding="utf-8")
    assert "`PLUGIN_REFERENCE.md`" in readme
