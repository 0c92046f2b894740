"""The resolved snapshot: the validated model of its parts, however resolution builds it."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from awaken_runtime import ExecutableAgentSnapshot, ToolDescriptor
from awaken_runtime.agents._resolve import Registries, resolve_agent


def _fields(snapshot: ExecutableAgentSnapshot) -> dict[str, Any]:
    return {name: getattr(snapshot, name) for name in type(snapshot).model_fields}


def echo(text: str) -> str:
    """Echo the text."""
    return text


def test_the_snapshot_equals_validating_its_parts(make_runtime, make_plugin):
    rig = make_runtime(tools=[echo], plugins=[make_plugin("audit")])
    snapshot = rig.runtime._agent(rig.agent_id).snapshot
    validated = ExecutableAgentSnapshot(**_fields(snapshot))
    assert snapshot == validated
    assert snapshot.model_dump(mode="json") == validated.model_dump(mode="json")
    assert snapshot.model_fields_set == validated.model_fields_set
    assert [t.id for t in snapshot.tools] == ["echo"]
    assert [p.manifest.id for p in snapshot.plugins] == ["audit"]
    assert snapshot.fingerprint == ExecutableAgentSnapshot.compute_fingerprint(
        snapshot.config, snapshot.tools, snapshot.model, snapshot.plugins
    )


class _Descriptor:
    """Quacks like a model for the fingerprint but is no ToolDescriptor."""

    id = "odd"

    def model_dump(self, mode: str = "python") -> dict[str, Any]:
        return {"id": self.id}


class _OddTool:
    descriptor = _Descriptor()


def test_a_descriptor_of_another_type_is_still_validated(make_runtime):
    rig = make_runtime()
    registries: Registries = rig.runtime.registries
    config = registries.agents[rig.agent_id].model_copy(update={"tool_ids": ["odd"]})
    odd = Registries(
        agents={"a": config},
        tools={"odd": _OddTool()},  # type: ignore[dict-item]
        models=registries.models,
        providers=registries.providers,
    )
    with pytest.raises(ValidationError, match="ToolDescriptor"):
        resolve_agent(odd, "a")
    tools = resolve_agent(registries, rig.agent_id).snapshot.tools  # the usual parts still pass
    assert all(isinstance(t, ToolDescriptor) for t in tools)
