"""The package README's code blocks run as written, and show what they print."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from awaken_ext_permissions import PermissionsConfig, PermissionsPlugin
from awaken_runtime import (
    AgentConfig,
    AgentConfigError,
    AgentRuntimeBuilder,
    ModelSpec,
    ScriptedExecutor,
)

README = Path(__file__).resolve().parents[2] / "packages/awaken-ext-permissions/README.md"
BLOCKS = re.findall(r"^```(\w*)\n(.*?)^```\n", README.read_text(encoding="utf-8"), re.S | re.M)


def _blocks(kind: str) -> list[tuple[int, str]]:
    return [(i, body) for i, (k, body) in enumerate(BLOCKS) if k == kind]


def test_every_block_says_its_language() -> None:
    assert BLOCKS and all(kind in {"python", "toml", "json", "text"} for kind, _ in BLOCKS)


@pytest.mark.parametrize(("index", "code"), _blocks("python"))
def test_python_blocks_run_and_print_the_text_after_them(
    index: int, code: str, tmp_path: Path
) -> None:
    script = tmp_path / "example.py"
    script.write_text(code, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    following = BLOCKS[index + 1] if index + 1 < len(BLOCKS) else ("", "")
    if following[0] == "text":
        assert done.stdout == following[1]
    else:
        assert done.stdout == ""


@pytest.mark.parametrize(("index", "text"), _blocks("toml"))
def test_toml_blocks_are_agent_files_with_a_valid_policy(
    index: int, text: str, tmp_path: Path
) -> None:
    path = tmp_path / "coder.toml"
    path.write_text(text, encoding="utf-8")
    agent = AgentConfig.from_file(path)
    config = PermissionsConfig.model_validate(agent.plugin_config["permissions"])
    assert config.compiled_rules()
    assert tomllib.loads(text)["agent"]["id"] == agent.id


@pytest.mark.parametrize(("index", "text"), _blocks("json"))
def test_json_blocks_parse_and_policies_validate(index: int, text: str) -> None:
    value = json.loads(text)
    if "rules" in value or "allow" in value:
        assert PermissionsConfig.model_validate(value).compiled_rules()


def test_the_error_shown_is_the_error_raised() -> None:
    (shown,) = [t for _, t in _blocks("text") if t.startswith("agent 'coder': invalid config")]
    runtime = (
        AgentRuntimeBuilder(discover=False)
        .with_plugin(PermissionsPlugin())
        .with_model(ModelSpec(id="m", provider="p", model="scripted"))
        .with_provider("p", ScriptedExecutor(["hi"]))
        .with_agent_spec(
            AgentConfig(
                id="coder",
                model_binding="m",
                plugin_ids=["permissions"],
                plugin_config={"permissions": {"deny": ["x", 'shell(command ~~ "x")']}},
            )
        )
    )
    with pytest.raises(AgentConfigError) as caught:
        runtime.build().resolve("coder")
    assert " ".join(shown.split()) in " ".join(str(caught.value).split())
