"""``awaken plugins --check``: resolve every installed plugin with its default config.

Problems (exit status 1): an entry point that failed to import or register, a
duplicate id, a manifest or config model that cannot be built, a ``resolve``
that raises or returns something other than ``Contributions``, and
contributions outside the plugin's ``CapabilityBound`` (what an agent would
meet at resolve). Notes (exit status 0): the config model's fields, warnings the plugin gives
when resolved, a config model with required fields
(the plugin is then resolved only if defaults suffice) and bound entries the
default config does not contribute (a bound wider than needed is allowed, but
worth knowing).
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from dataclasses import asdict, dataclass, field
from typing import Any

from pydantic import BaseModel, ValidationError

from .._errors import AwakenError
from ..agents._resolve import check_contributions
from ..plugins._discovery import Discovery, discover
from ..plugins._plugin import Contributions, PhaseHookPoint

__all__ = ["PluginCheck", "check_discovery", "cmd_check"]


@dataclass
class PluginCheck:
    """The verdict on one plugin or entry point."""

    name: str
    source: str
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Whether nothing is wrong."""
        return not self.problems


def _default_config(model: Any, check: PluginCheck) -> tuple[bool, Any]:
    """``(usable, config)``: the validated empty table, or why there is none."""
    if model is None:
        return True, None
    if not (isinstance(model, type) and issubclass(model, BaseModel)):
        check.problems.append(f"config_model {model!r} is not a pydantic BaseModel subclass")
        return False, None
    try:
        model.model_json_schema()
        return True, model.model_validate({})
    except ValidationError as exc:
        missing = [".".join(map(str, e["loc"])) for e in exc.errors() if e["type"] == "missing"]
        if len(missing) == len(exc.errors()):
            check.notes.append(
                f"needs plugin_config (required: {', '.join(missing)}); not resolved with defaults"
            )
        else:
            problems = "; ".join(
                f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()
            )
            check.problems.append(f"config model {model.__name__} rejects its defaults: {problems}")
        return False, None
    except Exception as exc:  # a broken model class: its schema cannot be built
        check.problems.append(
            f"config model {model.__name__} is broken: {type(exc).__name__}: {exc}"
        )
        return False, None


def _unused(bound: Any, c: Contributions) -> list[str]:
    unused = []
    tools = {t.descriptor.id for t in c.tools}
    unused += [f"tool {t!r}" for t in sorted(bound.tool_ids - tools)]
    points = {PhaseHookPoint(p) for p in c.phase_hooks if c.hooks_at(PhaseHookPoint(p))}
    unused += [
        f"{p.name} hook" for p in sorted(bound.phase_hooks - points, key=list(PhaseHookPoint).index)
    ]
    for flag in (
        "tool_gates",
        "tool_observers",
        "run_end_guards",
        "dynamic_tools",
        "stop_conditions",
    ):
        if getattr(bound, flag) and not getattr(c, flag):
            unused.append(flag)
    return unused


def _check_plugin(plugin_id: str, plugin: Any, source: str) -> PluginCheck:
    check = PluginCheck(plugin_id, source)
    try:
        manifest = plugin.manifest
        bound = manifest.bound
    except Exception as exc:
        check.problems.append(f"manifest raised {type(exc).__name__}: {exc}")
        return check
    model = manifest.config_model
    if model is None:
        check.notes.append("config: none (an agent's plugin_config table for it is refused)")
    elif isinstance(model, type) and issubclass(model, BaseModel):
        check.notes.append(
            f"config: {model.__name__} ({', '.join(model.model_fields) or 'no fields'})"
        )
    usable, config = _default_config(model, check)
    if not usable:
        return check
    try:
        # Warnings a plugin gives when resolved (a missing optional extra, ...) are notes.
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            contributions = plugin.resolve(config)
    except Exception as exc:
        check.problems.append(f"resolve(default config) raised {type(exc).__name__}: {exc}")
        return check
    check.notes.extend(f"warned: {w.message}" for w in caught)
    if not isinstance(contributions, Contributions):
        check.problems.append(
            f"resolve returned {type(contributions).__name__}, not awaken_runtime.Contributions"
        )
        return check
    try:
        check_contributions(plugin_id, bound, contributions)
    except AwakenError as exc:
        check.problems.append(str(exc))
        return check
    for point in PhaseHookPoint:
        if any(not callable(h) for h in contributions.hooks_at(point)):
            check.problems.append(f"a {point.name} hook is not callable")
    unused = _unused(bound, contributions)
    if unused:
        check.notes.append("declared but not contributed with defaults: " + ", ".join(unused))
    return check


def check_discovery(found: Discovery) -> list[PluginCheck]:
    """Check every discovered plugin and every load failure, sorted by name."""
    checks = [
        _check_plugin(pid, item.value, item.distribution or item.source)
        for pid, item in found.plugins.items()
    ]
    for failure in found.failures:
        name = failure.distribution or failure.source
        checks.append(PluginCheck(name, failure.source, problems=[str(failure)]))
    for (_kind, item_id), dup in found.duplicates.items():
        checks.append(PluginCheck(item_id, " and ".join(dup.sources), problems=[str(dup)]))
    return sorted(checks, key=lambda c: c.name)


def cmd_check(args: argparse.Namespace) -> int:
    """Print the checks (text or ``--json``); 1 when any has a problem."""
    found = discover()
    checks = check_discovery(found)
    failed = any(not c.ok for c in checks)
    if getattr(args, "json", False):
        data = [{**asdict(c), "ok": c.ok} for c in checks]
        sys.stdout.write(json.dumps({"ok": not failed, "plugins": data}, indent=2) + "\n")
        return 1 if failed else 0
    if found.disabled:
        sys.stdout.write("plugin discovery is off (AWAKEN_DISABLE_PLUGINS is set)\n")
    for c in checks:
        sys.stdout.write(f"{'ok  ' if c.ok else 'FAIL'} {c.name}  [{c.source}]\n")
        for problem in c.problems:
            sys.stdout.write(f"     ! {problem}\n")
        for note in c.notes:
            sys.stdout.write(f"     - {note}\n")
    bad = sum(not c.ok for c in checks)
    sys.stdout.write(f"\n{len(checks)} checked, {bad} with problems\n")
    return 1 if failed else 0
