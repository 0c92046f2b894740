"""The add-ons the ``awaken`` command and plugin discovery import load their names lazily.

Each package's public names resolve to the objects of the modules that define
them, and importing the package (as adding its subcommand or registering its
plugin does) imports none of the libraries behind it: the MCP SDK, the A2A
SDK, pgqueuer, the web stack, the ACP schema.
"""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys

import pytest

PACKAGES = [
    "awaken_mcp",
    "awaken_protocol_a2a",
    "awaken_protocol_acp",
    "awaken_run_ingress",
    "awaken_server",
]


@pytest.mark.parametrize("name", PACKAGES)
def test_every_public_name_resolves_to_its_home_modules_object(name: str) -> None:
    package = importlib.import_module(name)
    homes = package._HOMES
    assert set(homes) == set(package.__all__)
    for attr in package.__all__:
        home = importlib.import_module(homes[attr], name)
        assert getattr(package, attr) is getattr(home, attr), attr
    assert set(package.__all__) <= set(dir(package))
    with pytest.raises(AttributeError, match=f"module '{name}' has no attribute 'nope'"):
        package.nope  # noqa: B018


# What the add-ons and extensions are built on; none of it may load before it is used.
HEAVY = {
    "a2a",
    "acp",
    "httpx",
    "litellm",
    "mcp",
    "mcp_types",
    "numpy",
    "opentelemetry",
    "pgqueuer",
    "psycopg",
    "sse_starlette",
    "starlette",
    "tiktoken",
    "uvicorn",
}


def _added_by(code: str) -> list[str]:
    probe = (
        "import sys\n"
        "before = {m.split('.')[0] for m in sys.modules}\n"
        f"{code}\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} - before))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True
    )
    return ast.literal_eval(done.stdout)


def test_every_add_on_command_loads_with_the_standard_library_alone() -> None:
    code = "from awaken_runtime.cli._main import build_parser; build_parser(['--help'])"
    added = _added_by(code)
    assert {"awaken_mcp", "awaken_server", "awaken_run_ingress"} <= set(added)  # they loaded
    third_party = [m for m in added if m not in sys.stdlib_module_names]
    assert [m for m in third_party if not m.startswith(("awaken", "_"))] == []


def test_discovery_registers_every_installed_plugin_without_their_libraries() -> None:
    code = (
        "from awaken_runtime import AgentRuntimeBuilder\n"
        "runtime = AgentRuntimeBuilder().build()\n"
        "assert {'mcp', 'memory', 'compact'} <= set(runtime.discovery.plugins)"
    )
    assert HEAVY.isdisjoint(_added_by(code))
