"""``awaken new plugin NAME``: write a complete plugin distribution that passes its own test.

The result is an ordinary project: ``pyproject.toml`` (hatchling, the
``awaken`` entry point, a ``test`` extra with awaken-testing), one module with
a :class:`PluginBase` plugin, a test using the ``awaken`` fixture and a README.
``pip install -e ".[test]" && pytest`` passes as generated.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from string import Template

__all__ = ["add_new_command", "names_for", "write_plugin"]

_NAME = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")

PYPROJECT = """\
[build-system]
requires = ["hatchling>=1.24"]
build-backend = "hatchling.build"

[project]
name = "$dist"
version = "0.1.0"
description = "An Awaken plugin: $plugin_id"
readme = "README.md"
requires-python = ">=3.11"
dependencies = ["awaken-runtime>=0.1,<0.2"]

[project.optional-dependencies]
test = ["awaken-testing>=0.1,<0.2", "pytest>=8"]

[project.entry-points.awaken]
$plugin_id = "$module"
"""

MODULE = '''\
"""The $plugin_id plugin: greets in the system prompt, counts steps, offers an echo tool."""

from pydantic import BaseModel

from awaken_runtime import Band, ContextMessage, PluginBase, StateKey, inject, phase_hook, tool
from awaken_runtime.hookspecs import hookimpl


@tool(name="${module}_echo")
def echo(text: str) -> str:
    """Repeat the text back.

    Args:
        text: what to repeat
    """
    return text


class ${config}(BaseModel):
    """``plugin_config.$plugin_id`` of an agent."""

    greeting: str = "Hello from $plugin_id."


class $cls(PluginBase, id="$plugin_id", version="0.1.0"):
    """Greets in the system prompt, counts the steps of each thread, offers an echo tool."""

    config_model = ${config}
    steps = StateKey("$plugin_id.steps", int, default=0)
    tools = (echo,)
    context_bands = (Band.SYSTEM,)

    @phase_hook("before_inference")
    def greet(self, ctx):
        greeting = self.config.greeting
        return inject(ContextMessage(key="$plugin_id.greeting", band=Band.SYSTEM, content=greeting))

    @phase_hook("step_end")
    def count(self, ctx):
        return self.steps.set(self.steps.get(ctx.store) + 1)


@hookimpl
def register_plugins(register):
    register($cls())
'''

TEST = '''\
"""Tests of $plugin_id with the ``awaken`` fixture (from awaken-testing)."""

from awaken_runtime import ScriptedTurn

from $module import $cls


def test_installed_greets_counts_and_echoes(awaken):
    # By id: the plugin comes from the installed entry point, enabled through plugin_ids.
    turns = [ScriptedTurn.call("${module}_echo", {"text": "ping"}), "done"]
    rig = awaken.rig("$plugin_id", turns=turns, config={"greeting": "Hi there."})
    result = rig.run_sync("hello")
    result.assert_natural_end()
    result.assert_committed($cls.steps, 2, by="$plugin_id")
    assert "Hi there." in result.requests[0].messages[0].text
    assert result.last_request.messages[-1].text == "ping"


def test_steps_accumulate_per_thread(awaken):
    rig = awaken.rig($cls())
    rig.run_sync("one")
    assert rig.run_sync("two").value($cls.steps) == 2
    assert rig.run_sync("other", thread_id="t2").value($cls.steps) == 1
'''

README = """\
# $dist

An [Awaken](https://pypi.org/project/awaken-runtime/) plugin (id `$plugin_id`):
greets in the system prompt, counts the steps of each thread, offers the
`${module}_echo` tool.

```sh
pip install -e ".[test]"
pytest
awaken plugins --check
```

Enable it for an agent (installed is not enabled):

```toml
[agent]
plugin_ids = ["$plugin_id"]

[agent.plugin_config.$plugin_id]
greeting = "Hello!"
```
"""


def names_for(name: str) -> dict[str, str]:
    """Distribution, plugin id, module and class names for ``name`` (``awaken-`` is dropped)."""
    if not _NAME.match(name):
        raise ValueError(
            f"plugin name {name!r} is not lowercase kebab-case; use letters, digits and "
            f"single hyphens, starting with a letter (for example 'weather-notes')"
        )
    plugin_id = name.removeprefix("awaken-") or name
    module = name.replace("-", "_")
    cls = "".join(part.capitalize() for part in plugin_id.split("-"))
    cls = cls if cls.endswith("Plugin") else cls + "Plugin"
    config = cls.removesuffix("Plugin") + "Config"
    return {"dist": name, "plugin_id": plugin_id, "module": module, "cls": cls, "config": config}


def write_plugin(name: str, parent: Path) -> Path:
    """Write the distribution ``name`` into ``parent / name``; return its folder."""
    names = names_for(name)
    root = parent / name
    if root.exists() and any(root.iterdir()):
        raise FileExistsError(f"{root} exists and is not empty; choose another name or --dir")
    files = {
        "pyproject.toml": PYPROJECT,
        "README.md": README,
        f"src/{names['module']}/__init__.py": MODULE,
        f"tests/test_{names['module']}.py": TEST,
    }
    for relative, template in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(Template(template).substitute(names), encoding="utf-8")
    return root


def _cmd_new(args: argparse.Namespace) -> int:
    try:
        root = write_plugin(args.name, Path(args.dir))
    except (ValueError, OSError) as exc:
        sys.stderr.write(f"awaken new plugin: {exc}\n")
        return 2
    sys.stdout.write(
        f"wrote {root}\n  cd {root}\n  pip install -e '.[test]'\n  pytest\n"
        f"  awaken plugins --check\n"
    )
    return 0


def add_new_command(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``awaken new plugin NAME [--dir DIR]`` to the ``awaken`` subcommands."""
    new = sub.add_parser("new", help="create a new project (a plugin distribution)")
    kinds = new.add_subparsers(dest="kind", required=True)
    plugin = kinds.add_parser("plugin", help="a plugin distribution that passes its own test")
    plugin.add_argument("name", help="distribution name, kebab-case (e.g. weather-notes)")
    plugin.add_argument("--dir", default=".", help="where to create it (default: here)")
    plugin.set_defaults(func=_cmd_new)
