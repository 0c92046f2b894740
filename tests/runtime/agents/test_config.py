"""AgentConfig: loading from TOML / JSON / YAML files and error reporting."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from awaken_runtime import AgentConfig, AgentConfigError, AwakenError, KeepAll, KeepLast

EXPECTED = AgentConfig(
    id="helper",
    instructions="Be helpful.",
    model_binding="gpt",
    tool_ids=["add", "search"],
    plugin_ids=["memory"],
    plugin_config={"memory": {"max_items": 5}},
    context_policy=KeepLast(keep_last=20),
    max_steps=8,
    delegates=["researcher"],
)

TOML = """
id = "helper"
instructions = "Be helpful."
model_binding = "gpt"
tool_ids = ["add", "search"]
plugin_ids = ["memory"]
context_policy = {keep_last = 20}
max_steps = 8
delegates = ["researcher"]

[plugin_config.memory]
max_items = 5
"""

YAML = """
id: helper
instructions: Be helpful.
model_binding: gpt
tool_ids: [add, search]
plugin_ids: [memory]
plugin_config:
  memory:
    max_items: 5
context_policy:
  keep_last: 20
max_steps: 8
delegates: [researcher]
"""


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


# --- formats ---------------------------------------------------------------


def test_from_toml(tmp_path: Path) -> None:
    assert AgentConfig.from_file(write(tmp_path, "a.toml", TOML)) == EXPECTED


def test_from_json(tmp_path: Path) -> None:
    text = json.dumps(EXPECTED.model_dump(mode="json"))
    assert AgentConfig.from_file(write(tmp_path, "a.json", text)) == EXPECTED


def test_from_json_with_config_file_policy_shorthand(tmp_path: Path) -> None:
    data = {"id": "a", "model_binding": "m", "context_policy": "keep_all"}
    cfg = AgentConfig.from_file(write(tmp_path, "a.json", json.dumps(data)))
    assert cfg.context_policy == KeepAll()


@pytest.mark.parametrize("suffix", [".yaml", ".yml", ".YAML"])
def test_from_yaml(tmp_path: Path, suffix: str) -> None:
    assert AgentConfig.from_file(write(tmp_path, "a" + suffix, YAML)) == EXPECTED


def test_accepts_str_path(tmp_path: Path) -> None:
    assert AgentConfig.from_file(str(write(tmp_path, "a.toml", TOML))) == EXPECTED


def test_toml_agent_table_form(tmp_path: Path) -> None:
    text = """
[agent]
id = "helper"
instructions = "Be helpful."
model_binding = "gpt"
tool_ids = ["add", "search"]
plugin_ids = ["memory"]
context_policy = {keep_last = 20}
max_steps = 8
delegates = ["researcher"]

[agent.plugin_config.memory]
max_items = 5
"""
    assert AgentConfig.from_file(write(tmp_path, "a.toml", text)) == EXPECTED


def test_yaml_agent_table_form(tmp_path: Path) -> None:
    nested = "agent:\n" + "\n".join("  " + line for line in YAML.strip().splitlines())
    assert AgentConfig.from_file(write(tmp_path, "a.yaml", nested)) == EXPECTED


def test_minimal_config_gets_defaults(tmp_path: Path) -> None:
    cfg = AgentConfig.from_file(write(tmp_path, "a.toml", 'id = "a"\nmodel_binding = "m"\n'))
    assert cfg.tool_ids == []
    assert cfg.plugin_ids == []
    assert cfg.context_policy == KeepAll()
    assert cfg.max_steps >= 1
    assert cfg.instructions == ""


def test_inference_params_table(tmp_path: Path) -> None:
    text = 'id = "a"\nmodel_binding = "m"\n[params]\ntemperature = 0.2\nstop = ["END"]\n'
    cfg = AgentConfig.from_file(write(tmp_path, "a.toml", text))
    assert cfg.params.temperature == 0.2
    assert cfg.params.stop == ("END",)


def test_config_round_trips_through_json() -> None:
    assert AgentConfig.model_validate_json(EXPECTED.model_dump_json()) == EXPECTED


# --- bad values ------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ('id = "a"\nmodel_binding = "m"\nmax_steps = 0\n', "max_steps"),
        ('id = "a"\nmodel_binding = "m"\nmax_steps = "lots"\n', "max_steps"),
        ('id = "a"\nmodel_binding = "m"\ntool_ids = "add"\n', "tool_ids"),
        ('id = "a"\nmodel_binding = "m"\ncontext_policy = {keep_last = 0}\n', "context_policy"),
        ('id = ""\nmodel_binding = "m"\n', "id"),
        ('id = "a"\n', "model_binding"),
        ('id = "a"\nmodel_binding = "m"\n[params]\ntemperature = "hot"\n', "params.temperature"),
    ],
)
def test_bad_values_raise_agent_config_error_naming_field(
    tmp_path: Path, body: str, field: str
) -> None:
    path = write(tmp_path, "bad.toml", body)
    with pytest.raises(AgentConfigError) as info:
        AgentConfig.from_file(path)
    message = str(info.value)
    assert field in message
    assert str(path) in message  # names the file, too


def test_unknown_key_is_rejected(tmp_path: Path) -> None:
    path = write(tmp_path, "a.toml", 'id = "a"\nmodel_binding = "m"\ntools = ["add"]\n')
    with pytest.raises(AgentConfigError) as info:
        AgentConfig.from_file(path)
    assert "tools: Extra inputs are not permitted" in str(info.value)


def test_unknown_key_rejected_in_from_dict() -> None:
    with pytest.raises(AgentConfigError, match="temprature"):
        AgentConfig.from_dict({"id": "a", "model_binding": "m", "temprature": 1})


def test_from_dict_names_source() -> None:
    with pytest.raises(AgentConfigError, match=r"my-agents\.toml"):
        AgentConfig.from_dict({"id": "a"}, source="my-agents.toml")


def test_agent_config_error_is_an_awaken_error() -> None:
    assert issubclass(AgentConfigError, AwakenError)


# --- bad files -------------------------------------------------------------


def test_unknown_extension(tmp_path: Path) -> None:
    path = write(tmp_path, "agent.ini", "id = a\n")
    with pytest.raises(AgentConfigError, match=r"unknown extension '\.ini'") as info:
        AgentConfig.from_file(path)
    assert ".toml" in str(info.value)


def test_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "nope.toml"
    with pytest.raises(AgentConfigError, match="cannot read") as info:
        AgentConfig.from_file(path)
    assert "nope.toml" in str(info.value)


def test_directory_instead_of_file(tmp_path: Path) -> None:
    path = tmp_path / "dir.toml"
    path.mkdir()
    with pytest.raises(AgentConfigError, match="cannot read"):
        AgentConfig.from_file(path)


def test_file_that_is_not_utf8_text(tmp_path: Path) -> None:
    path = tmp_path / "binary.toml"
    path.write_bytes(b"\xff\xfe\x00id = \x80\x81\n")
    with pytest.raises(AgentConfigError, match=r"binary\.toml"):
        AgentConfig.from_file(path)


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("a.toml", 'id = "a\nmodel_binding = \n'),
        ("a.json", '{"id": "a",'),
        ("a.yaml", "id: [unclosed\n"),
    ],
)
def test_syntax_errors(tmp_path: Path, name: str, text: str) -> None:
    with pytest.raises(AgentConfigError, match="cannot parse"):
        AgentConfig.from_file(write(tmp_path, name, text))


@pytest.mark.parametrize(("name", "text"), [("a.json", "[1, 2]"), ("a.yaml", ""), ("a.yml", "- x")])
def test_top_level_must_be_a_table(tmp_path: Path, name: str, text: str) -> None:
    with pytest.raises(AgentConfigError, match="table/object"):
        AgentConfig.from_file(write(tmp_path, name, text))
