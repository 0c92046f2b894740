"""Agent files: both layouts with [[models]], tools and plugins by import path, their errors,
and the README section that documents every key."""

from __future__ import annotations

import re
import sys
import textwrap
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from awaken_runtime import (
    AgentConfig,
    AgentConfigError,
    AgentFile,
    AgentRuntimeBuilder,
    InferenceParams,
    LoopDetection,
    ModelSpec,
    Pricing,
    StopConfig,
)

README = Path(__file__).resolve().parents[3] / "packages" / "awaken-runtime" / "README.md"

TOP_LEVEL = """
id = "helper"
model_binding = "local"
instructions = "Be brief."

[[models]]
id = "local"
provider = "echo"
model = "echo"
"""

TOOLS = '''
from awaken_runtime import CapabilityBound, Contributions, PluginManifest, tool


def get_time(zone: str) -> str:
    """The time in a zone.

    Args:
        zone: An IANA zone name.
    """
    return f"12:00 in {zone}"


@tool(name="add_numbers")
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


class Audit:
    manifest = PluginManifest(id="audit", version="1.0.0", bound=CapabilityBound())

    def resolve(self, config):
        return Contributions()


class NeedsArgs:
    manifest = PluginManifest(id="needs-args", version="1.0.0", bound=CapabilityBound())

    def __init__(self, level):
        self.level = level

    def resolve(self, config):
        return Contributions()


audit = Audit()
NUMBER = 42


from pydantic import BaseModel


class City(BaseModel):
    name: str
    population: int
'''


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


@pytest.fixture
def module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A fresh tool module next to the agent files; sys.path and sys.modules restored after."""
    name = f"usertools_{uuid.uuid4().hex[:8]}"
    write(tmp_path, f"{name}.py", TOOLS)
    monkeypatch.setattr(sys, "path", list(sys.path))
    yield name
    sys.modules.pop(name, None)


# --- layouts ------------------------------------------------------------------


def test_top_level_agent_with_models(tmp_path: Path) -> None:
    loaded = AgentFile.load(write(tmp_path, "a.toml", TOP_LEVEL))
    assert loaded.config == AgentConfig(
        id="helper", model_binding="local", instructions="Be brief."
    )
    assert loaded.models == (ModelSpec(id="local", provider="echo", model="echo"),)
    # AgentConfig.from_file reads the same file (it used to reject `models`).
    assert AgentConfig.from_file(tmp_path / "a.toml") == loaded.config


def test_agent_table_with_models_in_json_and_yaml(tmp_path: Path) -> None:
    json_text = (
        '{"agent": {"id": "a", "model_binding": "m"},'
        ' "models": [{"id": "m", "provider": "echo", "model": "echo"}]}'
    )
    yaml_text = "agent: {id: a, model_binding: m}\nmodels:\n  - {id: m, provider: echo, model: e}\n"
    for loaded in (
        AgentFile.load(write(tmp_path, "a.json", json_text)),
        AgentFile.load(write(tmp_path, "a.yml", yaml_text)),
    ):
        assert loaded.config.id == "a" and [m.id for m in loaded.models] == ["m"]


def test_key_beside_the_agent_table_is_named(tmp_path: Path) -> None:
    text = '[agent]\nid = "a"\nmodel_binding = "m"\n\n[params]\ntemperature = 0.1\n'
    with pytest.raises(AgentConfigError, match=r"'params' next to \[agent\]; move them into"):
        AgentFile.load(write(tmp_path, "a.toml", text))


@pytest.mark.parametrize(
    ("models", "named"),
    [
        ('models = "local"\n', "models: must be a list"),
        ('[[models]]\nid = "m"\nprovider = "echo"\n', r"models\[0\]\.model: Field required"),
        ('[[models]]\nid = "m"\nprovider = "p"\nmodel = "x"\ncolour = 1\n', r"models\[0\]\.colour"),
    ],
)
def test_bad_models_name_the_entry(tmp_path: Path, models: str, named: str) -> None:
    path = write(tmp_path, "a.toml", 'id = "a"\nmodel_binding = "m"\n' + models)
    with pytest.raises(AgentConfigError, match=named) as info:
        AgentFile.load(path)
    assert str(path) in str(info.value)


# --- import paths ---------------------------------------------------------------


def test_tools_and_plugins_by_import_path(tmp_path: Path, module: str) -> None:
    text = f"""
    id = "helper"
    model_binding = "local"
    tool_ids = ["{module}:get_time", "{module}:add", "search"]
    plugin_ids = ["{module}:Audit"]

    [plugin_config."{module}:Audit"]
    level = 2
    """
    loaded = AgentFile.load(write(tmp_path, "agent.toml", text))
    # Ids replace the paths; a function becomes a tool under its name, @tool keeps its own.
    assert loaded.config.tool_ids == ["get_time", "add_numbers", "search"]
    assert loaded.config.plugin_ids == ["audit"]
    assert loaded.config.plugin_config == {"audit": {"level": 2}}
    assert [t.descriptor.id for t in loaded.tools] == ["get_time", "add_numbers"]
    assert loaded.tools[0].descriptor.parameters["properties"]["zone"]["type"] == "string"
    assert [p.manifest.id for p in loaded.plugins] == ["audit"]
    assert loaded.imported == {
        f"{module}:get_time": "get_time",
        f"{module}:add": "add_numbers",
        f"{module}:Audit": "audit",
    }


async def test_an_imported_tool_runs_in_an_agent(tmp_path: Path, module: str) -> None:
    from awaken_runtime import ScriptedExecutor, ScriptedTurn

    text = f'id = "a"\nmodel_binding = "m"\ntool_ids = ["{module}:get_time"]\n'
    loaded = AgentFile.load(write(tmp_path, "agent.toml", text))
    turns = [ScriptedTurn.call("get_time", {"zone": "Europe/Lisbon"}), "done"]
    builder = AgentRuntimeBuilder(discover=False).with_agent_spec(loaded.config)
    for found in loaded.tools:
        builder.with_tool(found)
    executor = ScriptedExecutor(turns)
    runtime = (
        builder.with_model(ModelSpec(id="m", provider="s", model="s"))
        .with_provider("s", executor)
        .build()
    )
    state = await runtime.run("a", "what time is it?")
    assert state.final_text == "done"
    tool_results = [m.text for m in executor.requests[-1].messages if m.role == "tool"]
    assert tool_results == ["12:00 in Europe/Lisbon"]


def test_an_instance_and_a_dotted_attribute(tmp_path: Path, module: str) -> None:
    text = f'id = "a"\nmodel_binding = "m"\nplugin_ids = ["{module}:audit"]\n'
    loaded = AgentFile.load(write(tmp_path, "agent.toml", text))
    assert loaded.config.plugin_ids == ["audit"]
    text = f'id = "a"\nmodel_binding = "m"\ntool_ids = ["{module}:Audit.resolve"]\n'
    assert AgentFile.load(write(tmp_path, "b.toml", text)).config.tool_ids == ["resolve"]


def test_the_file_folder_is_importable_from_anywhere(
    tmp_path: Path, module: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    text = f'id = "a"\nmodel_binding = "m"\ntool_ids = ["{module}:get_time"]\n'
    assert AgentFile.load(write(tmp_path, "agent.toml", text)).config.tool_ids == ["get_time"]
    assert str(tmp_path.resolve()) == sys.path[0]


@pytest.mark.parametrize(
    ("ref", "message"),
    [
        ("{m}:", r"write it as 'module:attribute'"),
        (":get_time", r"write it as 'module:attribute'"),
        ("{m}:get_time:x", r"write it as 'module:attribute'"),
        ("no_such_module_xyz:thing", r"no module named 'no_such_module_xyz'"),
        ("{m}:get_tim", r"has no attribute 'get_tim' \(it has: .*get_time"),
        ("{m}:NUMBER", r"found int object 42, expected a tool"),
        ("{m}:Audit", r"found class 'Audit', expected a tool"),
        ("{m}:Audit.nope", r"'{m}.Audit' has no attribute 'nope'"),
    ],
)
def test_bad_tool_paths_name_the_path_and_what_is_there(
    tmp_path: Path, module: str, ref: str, message: str
) -> None:
    ref = ref.format(m=module)
    path = write(tmp_path, "agent.toml", f'id = "a"\nmodel_binding = "m"\ntool_ids = ["{ref}"]\n')
    with pytest.raises(AgentConfigError, match=message.format(m=module)) as info:
        AgentFile.load(path)
    assert f"import path {ref!r}" in str(info.value) and str(path) in str(info.value)


@pytest.mark.parametrize(
    ("attr", "message"),
    [
        ("get_time", r"found function 'get_time', expected a plugin"),
        ("NeedsArgs", r"class 'NeedsArgs' could not be created without arguments \(TypeError"),
        ("NUMBER", r"found int object 42, expected a plugin"),
    ],
)
def test_bad_plugin_paths(tmp_path: Path, module: str, attr: str, message: str) -> None:
    text = f'id = "a"\nmodel_binding = "m"\nplugin_ids = ["{module}:{attr}"]\n'
    with pytest.raises(AgentConfigError, match=message):
        AgentFile.load(write(tmp_path, "agent.toml", text))


def test_a_module_that_fails_to_import(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "path", list(sys.path))
    name = f"broken_{uuid.uuid4().hex[:8]}"
    write(tmp_path, f"{name}.py", "import not_installed_dep_xyz\n")
    write(tmp_path, f"{name}_raises.py", "raise RuntimeError('no config')\n")
    for ref, message in (
        (f"{name}:x", rf"importing '{name}' failed: No module named 'not_installed_dep_xyz'"),
        (f"{name}_raises:x", rf"importing '{name}_raises' raised RuntimeError: no config"),
    ):
        text = f'id = "a"\nmodel_binding = "m"\ntool_ids = ["{ref}"]\n'
        with pytest.raises(AgentConfigError, match=message):
            AgentFile.load(write(tmp_path, "agent.toml", text))


def test_a_function_that_cannot_be_a_tool(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "path", list(sys.path))
    name = f"odd_{uuid.uuid4().hex[:8]}"
    write(tmp_path, f"{name}.py", "def f(x: 'Undefined') -> str:\n    return ''\n")
    text = f'id = "a"\nmodel_binding = "m"\ntool_ids = ["{name}:f"]\n'
    with pytest.raises(AgentConfigError, match=r"function 'f' cannot be a tool: .*Undefined"):
        AgentFile.load(write(tmp_path, "agent.toml", text))


def test_plain_ids_import_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "path", list(sys.path))
    before = list(sys.path)
    text = 'id = "a"\nmodel_binding = "m"\ntool_ids = ["add"]\nplugin_ids = ["memory"]\n'
    loaded = AgentFile.load(write(tmp_path, "agent.toml", text))
    assert (loaded.tools, loaded.plugins, loaded.imported) == ((), (), {})
    assert sys.path == before


# --- the documented format -----------------------------------------------------


@pytest.mark.parametrize("form", ["string", "table"])
def test_an_output_type_by_import_path(tmp_path: Path, module: str, form: str) -> None:
    output = (
        f'output = "{module}:City"'
        if form == "string"
        else f'[output]\ntype = "{module}:City"\nretries = 4\nmode = "tool"'
    )
    text = f"""id = "geo"\nmodel_binding = "m"\n{output}\n"""
    loaded = AgentFile.load(write(tmp_path, "agent.toml", text))
    spec = loaded.config.output
    assert spec is not None
    assert spec.json_schema["required"] == ["name", "population"]
    if form == "table":
        assert spec.retries == 4 and spec.mode == "tool"


def test_an_output_path_that_is_no_type_is_named(tmp_path: Path, module: str) -> None:
    text = f'''id = "geo"\nmodel_binding = "m"\noutput = "{module}:audit"\n'''
    with pytest.raises(AgentConfigError) as info:
        AgentFile.load(write(tmp_path, "agent.toml", text))
    assert f"{module}:audit" in str(info.value) and "not an output type" in str(info.value)


def test_readme_section_names_every_key() -> None:
    """The "Agent files" section of the runtime README documents every key there is."""
    section = README.read_text(encoding="utf-8").split("## Agent files", 1)[1].split("\n## ")[0]
    section = re.sub(r"```.*?```", "", section, flags=re.S)  # only the prose and tables count
    documented = {
        word for span in re.findall(r"`([^`]+)`", section) for word in re.findall(r"\w+", span)
    }
    keys = {"agent", "models"}
    for model in (AgentConfig, ModelSpec, Pricing, StopConfig, InferenceParams, LoopDetection):
        keys |= set(model.model_fields)
    missing = sorted(keys - documented)
    assert not missing, f"README 'Agent files' does not document: {missing}"
