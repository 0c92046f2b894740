"""Plugins built as real distributions and installed into fresh venvs, offline.

* A third-party plugin in the declarative style (at most 20 lines of Python,
  12 of pyproject) is installed with the wheels of awaken-runtime and
  awaken-testing: it is discovered, enabled only by ``plugin_ids``, its bound
  is enforced at commit, ``awaken plugins --check`` passes, and its own test,
  written with the shipped ``awaken`` fixture, passes under pytest.
* ``awaken new plugin demo-plugin`` writes a distribution that installs into a
  fresh venv and passes its generated test as is.

Installs use pip ``--no-index`` with ``AWAKEN_TEST_WHEELHOUSE`` (the dependency
wheels and hatchling, filled by ``.ci/run`` with ``pip download``); scripts and
pytest run in a network namespace of their own where ``unshare`` allows it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
WHEELHOUSE = os.environ.get("AWAKEN_TEST_WHEELHOUSE")

pytestmark = pytest.mark.skipif(
    not WHEELHOUSE and not os.environ.get("CI"),  # CI never skips: it fails without one
    reason="AWAKEN_TEST_WHEELHOUSE is unset: point it at a folder of the dependency wheels "
    "(.ci/run makes one with pip download)",
)

PYPROJECT = """\
[build-system]
requires = ["hatchling"]
build-backend = "hatchling.build"

[project]
name = "awaken-tally"
version = "1.0.0"
dependencies = ["awaken-runtime"]

[project.entry-points.awaken]
tally = "awaken_tally:Tally"
"""

PLUGIN = '''\
from pydantic import BaseModel
from awaken_runtime import Command, PluginBase, StateKey, phase_hook


class Config(BaseModel):
    key: str = "tally.steps"  # any other key is outside the bound


class Tally(PluginBase, id="tally", version="1.0.0"):
    """Counts the steps of each thread."""

    config_model = Config
    steps = StateKey("tally.steps", int, default=0)

    @phase_hook("step_end")
    def count(self, ctx):
        return Command.set(self.config.key, self.steps.get(ctx.store) + 1)
'''

PLUGIN_TEST = """\
from awaken_runtime import ScriptedTurn


def test_counts_steps(awaken):
    rig = awaken.rig("tally", turns=[ScriptedTurn.call("nope"), "done", "again"])
    rig.run_sync("one").assert_committed("thread:tally.steps", 2, by="tally")
    assert rig.run_sync("two").value("tally.steps") == 3
    assert len(rig.requests) == 3


def test_bound_enforced_at_commit(awaken):
    rig = awaken.rig("tally", config={"key": "elsewhere"})
    rig.assert_bound_violation("hi", "tally", match="writes thread:'elsewhere'")
"""

PROBE = """
import json
import awaken_runtime as aw

found = aw.discover()
item = found.plugins["tally"]

def run(plugin_ids, config=None):
    rt = (
        aw.AgentRuntimeBuilder()  # discovery on
        .with_model(aw.ModelSpec(id="m", provider="s", model="s"))
        .with_provider("s", aw.ScriptedExecutor(["ok"], repeat=True))
        .with_agent_spec(aw.AgentConfig(id="a", model_binding="m", plugin_ids=plugin_ids,
                                        plugin_config=config or {}))
        .build()
    )
    return rt.run_sync("a", "hi")

enabled, installed_only = run(["tally"]), run([])
outside = run(["tally"], {"tally": {"key": "elsewhere"}})
print(json.dumps({
    "distribution": item.distribution,
    "bound": item.value.manifest.bound.model_dump(mode="json"),
    "enabled": enabled.value("tally.steps"),
    "installed_only": installed_only.value("tally.steps"),
    "outside": outside.end_cause.model_dump(mode="json"),
    "outside_committed": outside.value("elsewhere"),
}))
"""


def _env(tmp: Path) -> dict[str, str]:
    drop = ("PIP_", "PYTEST_", "AWAKEN_", "COV_")
    env = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
    env.update(
        PIP_CONFIG_FILE=os.devnull,
        PIP_NO_INDEX="1",
        PIP_DISABLE_PIP_VERSION_CHECK="1",
        PIP_FIND_LINKS=str(WHEELHOUSE),
        PYTHONNOUSERSITE="1",
        TMPDIR=str(tmp),
    )
    env.pop("PYTHONPATH", None)
    return env


def _offline() -> list[str]:
    unshare = shutil.which("unshare")
    if unshare is None:
        return []
    probe = subprocess.run([unshare, "-n", "true"], capture_output=True, check=False)
    return [unshare, "-n"] if probe.returncode == 0 else []


def _run(cmd: list[str], env: dict[str, str], cwd: Path | None = None, code: int = 0) -> str:
    done = subprocess.run(
        cmd, env=env, cwd=cwd, capture_output=True, text=True, check=False, timeout=600
    )
    assert done.returncode == code, f"{cmd} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    return done.stdout


@pytest.fixture(scope="module")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Wheels of awaken-runtime and awaken-testing, built once for the module."""
    assert WHEELHOUSE, "AWAKEN_TEST_WHEELHOUSE must name the dependency wheelhouse"
    dist = tmp_path_factory.mktemp("wheels")
    env = _env(dist)
    for package in ("awaken-runtime", "awaken-testing"):
        _run(
            [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(dist),
             str(ROOT / "packages" / package)],
            env,
        )  # fmt: skip
    return dist


def _venv(where: Path) -> Path:
    venv.create(where, with_pip=False)
    return where / "bin"


def _install(bin_dir: Path, wheels: Path, env: dict[str, str], *targets: str) -> None:
    pip = [sys.executable, "-m", "pip", "--python", str(bin_dir / "python")]
    _run([*pip, "install", "--quiet", "--find-links", str(wheels), *targets], env)


def test_third_party_plugin_in_twenty_lines(tmp_path: Path, wheels: Path) -> None:
    project = tmp_path / "awaken-tally"
    (project / "tests").mkdir(parents=True)
    (project / "pyproject.toml").write_text(PYPROJECT)
    (project / "awaken_tally.py").write_text(PLUGIN)
    (project / "tests" / "test_tally.py").write_text(PLUGIN_TEST)
    assert len(PLUGIN.splitlines()) <= 20 and len(PYPROJECT.splitlines()) <= 12
    env = _env(tmp_path)
    bin_dir = _venv(tmp_path / "venv")
    _install(bin_dir, wheels, env, str(project), "awaken-testing")

    probe = json.loads(_run([*_offline(), str(bin_dir / "python"), "-c", PROBE], env))
    assert probe["distribution"] == "awaken-tally"
    assert probe["bound"]["phase_hooks"] == ["step_end"]
    assert probe["bound"]["state_keys"] == [{"key": "tally.steps", "scope": "thread"}]
    assert (probe["enabled"], probe["installed_only"]) == (1, None)  # installed is not enabled
    failure = probe["outside"]["failure"]
    assert failure["kind"] == "capability_bound" and failure["plugin_id"] == "tally"
    assert "writes thread:'elsewhere'" in failure["message"]
    assert probe["outside_committed"] is None  # failed closed

    listing = _run([*_offline(), str(bin_dir / "awaken"), "plugins"], env)
    assert "tally 1.0.0  [awaken-tally 1.0.0]" in listing  # the bound, before any resolve:
    assert "bound: state=thread:tally.steps hooks=step_end" in listing
    check = _run([*_offline(), str(bin_dir / "awaken"), "plugins", "--check"], env)
    assert "ok   tally  [awaken-tally]" in check and "0 with problems" in check
    tests = _run(
        [*_offline(), str(bin_dir / "python"), "-m", "pytest", "-q", "-p", "no:cacheprovider"],
        env,
        cwd=project,
    )
    assert "2 passed" in tests


def test_scaffold_passes_its_own_test_in_a_fresh_venv(tmp_path: Path, wheels: Path) -> None:
    env = _env(tmp_path)
    tool_bin = _venv(tmp_path / "tool-venv")
    _install(tool_bin, wheels, env, "awaken-runtime")
    out = _run(
        [str(tool_bin / "awaken"), "new", "plugin", "demo-plugin", "--dir", str(tmp_path)], env
    )
    project = tmp_path / "demo-plugin"
    assert f"wrote {project}" in out
    files = sorted(str(p.relative_to(project)) for p in project.rglob("*") if p.is_file())
    assert files == [
        "README.md",
        "pyproject.toml",
        "src/demo_plugin/__init__.py",
        "tests/test_demo_plugin.py",
    ]
    # a second scaffold into the same place is refused, leaving the first untouched
    _run(
        [str(tool_bin / "awaken"), "new", "plugin", "demo-plugin", "--dir", str(tmp_path)],
        env,
        code=2,
    )

    bin_dir = _venv(tmp_path / "venv")
    _install(bin_dir, wheels, env, f"{project}[test]")
    tests = _run(
        [*_offline(), str(bin_dir / "python"), "-m", "pytest", "-q", "-p", "no:cacheprovider"],
        env,
        cwd=project,
    )
    assert "2 passed" in tests
    check = _run([*_offline(), str(bin_dir / "awaken"), "plugins", "--check"], env)
    assert "ok   demo-plugin  [demo-plugin]" in check
