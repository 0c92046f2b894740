"""``awaken new plugin``: names, refusals and the files it writes.

The test that installs the result into a fresh venv and runs its generated
test is ``tests/testing/test_installed.py``.
"""

from __future__ import annotations

import ast

import pytest

from awaken_runtime.cli._main import main
from awaken_runtime.cli._new import names_for


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("demo-plugin", ("demo-plugin", "demo_plugin", "DemoPlugin", "DemoConfig")),
        ("awaken-weather", ("weather", "awaken_weather", "WeatherPlugin", "WeatherConfig")),
        ("notes2", ("notes2", "notes2", "Notes2Plugin", "Notes2Config")),
    ],
)
def test_names(name, expected):
    names = names_for(name)
    assert (names["plugin_id"], names["module"], names["cls"], names["config"]) == expected
    assert names["dist"] == name


@pytest.mark.parametrize("bad", ["Demo", "demo_plugin", "-demo", "demo--x", "9lives", "", "dé"])
def test_bad_names_are_refused(tmp_path, capsys, bad):
    assert main(["new", "plugin", "--dir", str(tmp_path), "--", bad]) == 2
    assert "is not lowercase kebab-case" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_writes_a_valid_distribution(tmp_path, capsys):
    assert main(["new", "plugin", "demo-plugin", "--dir", str(tmp_path)]) == 0
    root = tmp_path / "demo-plugin"
    assert f"wrote {root}" in capsys.readouterr().out
    import tomllib

    meta = tomllib.loads((root / "pyproject.toml").read_text())
    assert meta["project"]["entry-points"]["awaken"] == {"demo-plugin": "demo_plugin"}
    assert "awaken-testing>=0.1,<0.2" in meta["project"]["optional-dependencies"]["test"]
    for path in (
        root / "src" / "demo_plugin" / "__init__.py",
        root / "tests" / "test_demo_plugin.py",
    ):
        ast.parse(path.read_text())  # valid Python, no placeholder left
        assert "$" not in path.read_text()


def test_the_generated_module_defines_a_working_plugin(tmp_path, monkeypatch):
    main(["new", "plugin", "scaf-check", "--dir", str(tmp_path)])
    monkeypatch.syspath_prepend(str(tmp_path / "scaf-check" / "src"))
    import scaf_check

    bound = scaf_check.ScafCheckPlugin.manifest.bound
    assert {p.value for p in bound.phase_hooks} == {"before_inference", "step_end"}
    assert bound.tool_ids == {"scaf_check_echo"}


def test_a_non_empty_target_is_refused(tmp_path, capsys):
    (tmp_path / "demo-plugin").mkdir()
    (tmp_path / "demo-plugin" / "keep.txt").write_text("mine")
    assert main(["new", "plugin", "demo-plugin", "--dir", str(tmp_path)]) == 2
    assert "exists and is not empty" in capsys.readouterr().err
    assert [p.name for p in (tmp_path / "demo-plugin").iterdir()] == ["keep.txt"]
