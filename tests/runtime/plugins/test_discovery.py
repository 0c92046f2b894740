"""Discovery of third-party plugins through real installed distributions (SPEC 3.4).

Distributions are written as ``<name>-<version>.dist-info`` folders (METADATA +
entry_points.txt) next to their hook modules in ``tmp_path``, which is put on
``sys.path``; ``importlib.metadata`` then sees them exactly like pip-installed
ones. One slower test pip-installs a real package into a fresh venv.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import os
import subprocess
import sys
import sysconfig
import textwrap
from pathlib import Path

import pytest

import awaken_runtime
from awaken_runtime import (
    AgentRuntimeBuilder,
    DuplicateIdError,
    NaturalEnd,
    PluginLoadError,
    ResolutionError,
    ScriptedExecutor,
)

DISABLE_ENV = "AWAKEN_DISABLE_PLUGINS"

GOOD_MODULE = '''
from awaken_runtime import (
    Band, CapabilityBound, ContextMessage, Contributions, HookReaction, PhaseHookPoint,
    PluginManifest, ScriptedExecutor, inject, tool,
)
from awaken_runtime.hookspecs import hookimpl


@tool
def good_lookup(query: str) -> str:
    """Look something up.

    Args:
        query: what to look up
    """
    return f"found {query}"


@tool
def good_standalone(x: int) -> int:
    """Double a number.

    Args:
        x: the number
    """
    return 2 * x


class GoodPlugin:
    manifest = PluginManifest(
        id="good-plugin",
        version="1.2.3",
        bound=CapabilityBound(
            tool_ids={"good_lookup"},
            phase_hooks={PhaseHookPoint.BEFORE_INFERENCE},
            context_bands={Band.SYSTEM},
        ),
    )

    def resolve(self, config):
        async def hook(ctx):
            note = ContextMessage(key="good", band=Band.SYSTEM, content="GOOD PLUGIN ACTIVE")
            return HookReaction(commands=[inject(note)])

        return Contributions(
            tools=[good_lookup], phase_hooks={PhaseHookPoint.BEFORE_INFERENCE: hook}
        )


@hookimpl
def register_plugins(register):
    register(GoodPlugin())


@hookimpl
def register_tools(register):
    register(good_standalone)


@hookimpl
def register_providers(register):
    register("good-provider", ScriptedExecutor(["from the good provider"], repeat=True))
'''

BROKEN_IMPORT_MODULE = """
raise RuntimeError("boom at import")
"""

BROKEN_HOOK_MODULE = """
from awaken_runtime import Contributions, PluginManifest
from awaken_runtime.hookspecs import hookimpl


class HalfPlugin:
    manifest = PluginManifest(id="broken-hook")

    def resolve(self, config):
        return Contributions()


@hookimpl
def register_plugins(register):
    register(HalfPlugin())
    raise ValueError("registration exploded")
"""

DUP_MODULE = """
from awaken_runtime import Contributions, PluginManifest
from awaken_runtime.hookspecs import hookimpl


class Dup:
    manifest = PluginManifest(id="dup-plugin", version="{version}")

    def resolve(self, config):
        return Contributions()


@hookimpl
def register_plugins(register):
    register(Dup())
"""

WRONG_HOOK_MODULE = """
from awaken_runtime.hookspecs import hookimpl


@hookimpl
def register_widgets(register):
    register("a widget")
"""


class FakeSite:
    """A directory of installed distributions, put on ``sys.path``."""

    def __init__(self, root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.root = root
        self.monkeypatch = monkeypatch
        self.modules: list[str] = []
        self.dists: set[str] = set()
        root.mkdir(parents=True, exist_ok=True)
        monkeypatch.syspath_prepend(str(root))

    def add(
        self, dist: str, version: str, entry_points: dict[str, str], modules: dict[str, str]
    ) -> None:
        self.dists.add(dist)
        _TEST_DISTS.add(dist)
        info = self.root / f"{dist.replace('-', '_')}-{version}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(
            f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n", encoding="utf-8"
        )
        lines = ["[awaken]", *(f"{name} = {target}" for name, target in entry_points.items())]
        (info / "entry_points.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
        for module, source in modules.items():
            (self.root / f"{module}.py").write_text(textwrap.dedent(source), encoding="utf-8")
            self.modules.append(module)
        importlib.invalidate_caches()

    def scan(self) -> awaken_runtime.Discovery:
        return awaken_runtime.discover(refresh=True)

    def close(self) -> None:
        self.monkeypatch.undo()  # sys.path and env back first, then rescan
        for module in self.modules:
            sys.modules.pop(module, None)
        importlib.invalidate_caches()
        awaken_runtime.discover(refresh=True)


@pytest.fixture
def site(tmp_path, monkeypatch):
    monkeypatch.delenv(DISABLE_ENV, raising=False)
    fake = FakeSite(tmp_path / "site", monkeypatch)
    fake.add(
        "awaken-good-plugin", "1.2.3", {"good-plugin": "awk_t_good"}, {"awk_t_good": GOOD_MODULE}
    )
    fake.add(
        "awaken-broken-import",
        "0.1.0",
        {"broken-import": "awk_t_broken_import"},
        {"awk_t_broken_import": BROKEN_IMPORT_MODULE},
    )
    fake.add(
        "awaken-broken-hook",
        "0.2.0",
        {"broken-hook": "awk_t_broken_hook"},
        {"awk_t_broken_hook": BROKEN_HOOK_MODULE},
    )
    for n in ("one", "two"):
        fake.add(
            f"awaken-dup-{n}",
            "1.0.0",
            {f"dup-{n}": f"awk_t_dup_{n}"},
            {f"awk_t_dup_{n}": DUP_MODULE.replace("{version}", f"1.0.{len(n)}")},
        )
    yield fake
    fake.close()


_TEST_DISTS: set[str] = set()


def _ours(failures):
    """Failures of the distributions these tests wrote (the environment may have others)."""
    return {f.distribution: f for f in failures if f.distribution in _TEST_DISTS}


def _runtime(model_spec, agent_config, *agents, discover=True, executor=None):
    executor = executor or ScriptedExecutor(["ok"], repeat=True)
    builder = (
        AgentRuntimeBuilder(discover=discover)
        .with_model(model_spec)
        .with_provider("scripted", executor)
    )
    for agent in agents:
        builder.with_agent_spec(agent)
    return builder.build(), executor


# -- discovery --------------------------------------------------------------------------


def test_plugin_listed_with_distribution(site):
    found = site.scan()
    plugin = found.plugins["good-plugin"]
    assert (plugin.distribution, plugin.dist_version, plugin.source) == (
        "awaken-good-plugin",
        "1.2.3",
        "good-plugin",
    )
    assert plugin.value.manifest.id == "good-plugin"
    assert found.tools["good_standalone"].distribution == "awaken-good-plugin"
    assert found.providers["good-provider"].dist_version == "1.2.3"
    assert not found.disabled


def test_installed_is_not_enabled(site, model_spec, agent_config):
    site.scan()
    rt, executor = _runtime(
        model_spec,
        agent_config,
        agent_config("with", plugin_ids=["good-plugin"]),
        agent_config("without", tool_ids=["good_standalone"]),
    )
    with_state = rt.run_sync("with", "hi")
    without_state = rt.run_sync("without", "hi")
    assert with_state.end_cause == without_state.end_cause == NaturalEnd()

    with_req, without_req = executor.requests
    assert [t.id for t in with_req.tools] == ["good_lookup"]
    assert "GOOD PLUGIN ACTIVE" in with_req.messages[0].text
    # the agent that does not name the plugin gets none of its contributions
    assert [t.id for t in without_req.tools] == ["good_standalone"]
    assert all("GOOD PLUGIN" not in m.text for m in without_req.messages)
    assert [p.manifest.id for p in rt.resolve("without").plugins] == []
    assert [p.manifest.id for p in rt.resolve("with").plugins] == ["good-plugin"]


def test_discovered_tool_and_provider_work(site, agent_config):
    site.scan()
    from awaken_runtime import ModelSpec

    rt = (
        AgentRuntimeBuilder()
        .with_model(ModelSpec(id="m", provider="good-provider", model="x"))
        .with_agent_spec(
            agent_config(model_binding="m", tool_ids=["good_standalone"], plugin_ids=[])
        )
        .build()
    )
    state = rt.run_sync("agent", "hi")
    assert state.final_text == "from the good provider"


def test_broken_distributions_are_listed_and_isolated(site, model_spec, agent_config):
    found = site.scan()
    failures = _ours(found.failures)
    assert set(failures) == {"awaken-broken-import", "awaken-broken-hook"}
    imp, hook = failures["awaken-broken-import"], failures["awaken-broken-hook"]
    assert imp.source == "broken-import"
    assert imp.error == "RuntimeError: boom at import"
    assert hook.source == "broken-hook"
    assert hook.error == "ValueError: registration exploded"
    assert "awaken-broken-hook" in str(hook) and "registration exploded" in str(hook)
    assert found.failure_for("broken-import") is imp
    # what the failing hook registered before raising is dropped
    assert "broken-hook" not in found.plugins
    # ... and the good distribution is unaffected
    assert "good-plugin" in found.plugins
    rt, executor = _runtime(model_spec, agent_config, agent_config(plugin_ids=["good-plugin"]))
    assert rt.run_sync("agent", "hi").end_cause == NaturalEnd()
    assert [t.id for t in executor.requests[0].tools] == ["good_lookup"]


@pytest.mark.parametrize(
    ("plugin_id", "error"),
    [
        ("broken-import", "RuntimeError: boom at import"),
        ("awaken-broken-import", "RuntimeError: boom at import"),
        ("broken-hook", "ValueError: registration exploded"),
    ],
)
async def test_agent_naming_broken_plugin_fails_to_resolve(
    site, model_spec, agent_config, plugin_id, error
):
    site.scan()
    rt, executor = _runtime(
        model_spec,
        agent_config,
        agent_config("bad", plugin_ids=["good-plugin", plugin_id]),
        agent_config("fine", plugin_ids=["good-plugin"]),
    )
    with pytest.raises(PluginLoadError) as info:
        rt.resolve("bad")
    assert info.value.error == error
    with pytest.raises(PluginLoadError):
        await rt.run("bad", "hi")
    assert executor.calls == 0
    assert (await rt.run("fine", "hi")).end_cause == NaturalEnd()


def test_duplicate_plugin_ids_name_both_distributions(site, model_spec, agent_config):
    found = site.scan()
    assert "dup-plugin" not in found.plugins
    err = found.duplicates[("plugins", "dup-plugin")]
    assert isinstance(err, DuplicateIdError)
    assert set(err.sources) == {"awaken-dup-one", "awaken-dup-two"}
    assert "awaken-dup-one" in str(err) and "awaken-dup-two" in str(err)
    assert "dup-plugin" in str(err)

    rt, _ = _runtime(
        model_spec,
        agent_config,
        agent_config("dup", plugin_ids=["dup-plugin"]),
        agent_config("fine", plugin_ids=["good-plugin"]),
    )
    with pytest.raises(DuplicateIdError) as info:
        rt.resolve("dup")
    assert set(info.value.sources) == {"awaken-dup-one", "awaken-dup-two"}
    rt.resolve("fine")


def test_explicit_registration_wins_over_duplicate(site, model_spec, agent_config, make_plugin):
    site.scan()
    mine = make_plugin("dup-plugin")
    rt = (
        AgentRuntimeBuilder()
        .with_model(model_spec)
        .with_provider("scripted", ScriptedExecutor(["ok"]))
        .with_plugin(mine)
        .with_agent_spec(agent_config(plugin_ids=["dup-plugin"]))
        .build()
    )
    rt.resolve("agent")
    assert mine.configs == [None]


def test_module_implementing_unknown_hook_is_a_load_failure(site):
    site.add(
        "awaken-wrong-hook",
        "0.0.1",
        {"wrong-hook": "awk_t_wrong_hook"},
        {"awk_t_wrong_hook": WRONG_HOOK_MODULE},
    )
    found = site.scan()
    failure = _ours(found.failures)["awaken-wrong-hook"]
    assert failure.source == "wrong-hook"
    assert "register_widgets" in failure.error and "not an awaken hook" in failure.error
    assert "good-plugin" in found.plugins


def test_entry_point_to_missing_module_is_a_load_failure(site):
    site.add("awaken-missing-module", "0.0.1", {"missing": "awk_t_does_not_exist"}, {})
    found = site.scan()
    failure = _ours(found.failures)["awaken-missing-module"]
    assert "ModuleNotFoundError" in failure.error
    assert "good-plugin" in found.plugins


# -- turning discovery off -------------------------------------------------------------


@pytest.mark.parametrize("name", ["good-plugin", "awaken-good-plugin"])
def test_disable_one_by_name(site, monkeypatch, model_spec, agent_config, name):
    monkeypatch.setenv(DISABLE_ENV, f"something-else, {name}")
    found = site.scan()
    assert "good-plugin" not in found.plugins
    assert "good_standalone" not in found.tools
    assert not found.disabled
    # the rest is still scanned
    assert set(_ours(found.failures)) == {"awaken-broken-import", "awaken-broken-hook"}
    rt, _ = _runtime(model_spec, agent_config, agent_config(plugin_ids=["good-plugin"]))
    with pytest.raises(ResolutionError) as info:
        rt.resolve("agent")
    assert info.value.missing == "good-plugin"


def test_disable_broken_ones_by_name(site, monkeypatch):
    monkeypatch.setenv(DISABLE_ENV, "broken-import,awaken-broken-hook")
    found = site.scan()
    assert _ours(found.failures) == {}
    assert "good-plugin" in found.plugins


@pytest.mark.parametrize("value", ["*", "all"])
def test_disable_all(site, monkeypatch, model_spec, agent_config, value):
    monkeypatch.setenv(DISABLE_ENV, value)
    found = site.scan()
    assert found.disabled
    assert found.plugins == found.tools == found.providers == {}
    assert found.failures == [] and found.duplicates == {}
    rt, _ = _runtime(model_spec, agent_config, agent_config(plugin_ids=["good-plugin"]))
    with pytest.raises(ResolutionError):
        rt.resolve("agent")


def test_builder_discover_false(site, model_spec, agent_config):
    assert "good-plugin" in site.scan().plugins
    rt, _ = _runtime(
        model_spec,
        agent_config,
        agent_config("plug", plugin_ids=["good-plugin"]),
        agent_config("broken", plugin_ids=["broken-import"]),
        agent_config("tool", tool_ids=["good_standalone"]),
        discover=False,
    )
    assert rt.discovery is None
    for agent_id, missing in (
        ("plug", "good-plugin"),
        ("broken", "broken-import"),
        ("tool", "good_standalone"),
    ):
        with pytest.raises(ResolutionError) as info:
            rt.resolve(agent_id)
        assert info.value.missing == missing


def test_discovery_is_cached_until_refresh(site):
    first = site.scan()
    assert awaken_runtime.discover() is first
    site.add("awaken-late", "0.0.1", {"late": "awk_t_late"}, {"awk_t_late": BROKEN_IMPORT_MODULE})
    assert awaken_runtime.discover() is first
    assert "awaken-late" not in _ours(first.failures)
    again = awaken_runtime.discover(refresh=True)
    assert again is not first
    assert "awaken-late" in _ours(again.failures)


# -- a real pip install into a fresh venv ------------------------------------------------

PKG_HOOKS = '''
from awaken_runtime import CapabilityBound, Contributions, PluginManifest, tool
from awaken_runtime.hookspecs import hookimpl


@tool
def venv_ping() -> str:
    """Answer pong."""
    return "pong"


class VenvPlugin:
    manifest = PluginManifest(
        id="venv-demo", version="0.3.0", bound=CapabilityBound(tool_ids={"venv_ping"})
    )

    def resolve(self, config):
        return Contributions(tools=[venv_ping])


@hookimpl
def register_plugins(register):
    register(VenvPlugin())
'''

PROBE = """
import json
import awaken_runtime as aw

found = aw.discover()
item = found.plugins["venv-demo"]
ex = aw.ScriptedExecutor([aw.ScriptedTurn.call("venv_ping"), "done"])
rt = (
    aw.AgentRuntimeBuilder()
    .with_model(aw.ModelSpec(id="m", provider="s", model="s"))
    .with_provider("s", ex)
    .with_agent_spec(aw.AgentConfig(id="a", model_binding="m", plugin_ids=["venv-demo"]))
    .build()
)
state = rt.run_sync("a", "ping?")
tool_msgs = [m.text for m in state.new_messages if m.role == "tool"]
print(json.dumps({
    "distribution": item.distribution,
    "version": item.dist_version,
    "source": item.source,
    "end": state.end_cause.kind,
    "tool_results": tool_msgs,
}))
"""


def _backend() -> tuple[str, str] | None:
    """A build backend importable offline: (requires, build-backend)."""
    if importlib.util.find_spec("hatchling") is not None:
        return "hatchling", "hatchling.build"
    if importlib.util.find_spec("setuptools") is not None:
        version = importlib.metadata.version("setuptools")
        major_minor = tuple(int(p) for p in version.split(".")[:2])
        if major_minor >= (70, 1) or importlib.util.find_spec("wheel") is not None:
            return "setuptools>=61", "setuptools.build_meta"
    return None


@pytest.mark.slow
def test_pip_installed_distribution_is_discovered(tmp_path):
    backend = _backend()
    if backend is None:
        pytest.skip(
            "no build backend importable offline (neither hatchling nor setuptools with "
            "bdist_wheel); a --no-build-isolation install cannot build the package"
        )
    if importlib.util.find_spec("pip") is None:
        pytest.skip("pip is not importable in the test environment")
    requires, build_backend = backend
    pkg = tmp_path / "awaken-venv-demo"
    pkg.mkdir()
    (pkg / "awaken_venv_demo_hooks.py").write_text(PKG_HOOKS, encoding="utf-8")
    if build_backend == "hatchling.build":
        layout = '[tool.hatch.build.targets.wheel]\nonly-include = ["awaken_venv_demo_hooks.py"]\n'
    else:
        layout = '[tool.setuptools]\npy-modules = ["awaken_venv_demo_hooks"]\n'
    (pkg / "pyproject.toml").write_text(
        textwrap.dedent(
            f"""\
            [build-system]
            requires = ["{requires}"]
            build-backend = "{build_backend}"

            [project]
            name = "awaken-venv-demo"
            version = "0.3.0"

            [project.entry-points.awaken]
            venv-demo = "awaken_venv_demo_hooks"
            """
        )
        + layout,
        encoding="utf-8",
    )

    venv = tmp_path / "venv"
    subprocess.run(
        [sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(venv)],
        check=True,
        capture_output=True,
    )
    python = venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    # The venv's "system" site is the base interpreter's; make this test environment's
    # packages (awaken_runtime, pydantic, pluggy, pip, the build backend) visible too.
    ours = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    (Path(purelib) / "_awaken_test_env.pth").write_text(
        "import site; " + "; ".join(f"site.addsitedir({p!r})" for p in sorted(ours)) + "\n",
        encoding="utf-8",
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "AWAKEN_"))}
    env.update(PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1", PYTHONWARNINGS="ignore")
    install = subprocess.run(
        [
            str(python),
            *("-m", "pip", "install", "--no-deps", "--no-build-isolation", "--no-index"),
            str(pkg),
        ],
        capture_output=True,
        text=True,
        env=env,
    )
    assert install.returncode == 0, install.stdout + install.stderr
    # installed into the venv, not into the test environment
    assert list(Path(purelib).glob("awaken_venv_demo-0.3.0.dist-info"))
    assert importlib.util.find_spec("awaken_venv_demo_hooks") is None

    probe = subprocess.run(
        [str(python), "-c", PROBE], capture_output=True, text=True, env=env, cwd=tmp_path
    )
    assert probe.returncode == 0, probe.stderr
    result = json.loads(probe.stdout.strip().splitlines()[-1])
    assert result == {
        "distribution": "awaken-venv-demo",
        "version": "0.3.0",
        "source": "venv-demo",
        "end": "natural_end",
        "tool_results": ["pong"],
    }
