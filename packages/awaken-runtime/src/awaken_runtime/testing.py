"""Helpers for testing tools and plugins without a real model.

``scripted_runtime`` builds a discovery-free runtime with one agent on a
:class:`ScriptedExecutor`, which is what most plugin tests need::

    from awaken_runtime.testing import scripted_runtime

    rig = scripted_runtime(
        [ScriptedTurn.call("remember", {"text": "likes tea"}), "Noted."],
        plugins=[MemoryPlugin()],
        plugin_config={"memory": {...}},
    )
    state = await rig.run("I like tea", thread_id="t")
    assert rig.executor.requests[0].messages[-1].text == "I like tea"
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from .agents._config import AgentConfig
from .lifecycle._run_state import RunState
from .messages._message import Message
from .models._model import ModelSpec
from .models._scripted import ScriptedExecutor, TurnSource
from .plugins._plugin import Plugin
from .runtime._builder import AgentRuntimeBuilder
from .runtime._runtime import Runtime
from .stores.memory import InMemoryStore
from .tools._function_tool import tool as make_tool
from .tools._tool import Tool

__all__ = ["AGENT_ID", "MODEL_ID", "PROVIDER_ID", "ScriptedRig", "scripted_runtime"]

AGENT_ID = "agent"
"""The id of the agent ``scripted_runtime`` registers."""
MODEL_ID = "scripted-model"
"""The id of its model spec."""
PROVIDER_ID = "scripted"
"""The id of its scripted provider."""


@dataclass
class ScriptedRig:
    """A built runtime, its scripted model and its store."""

    runtime: Runtime
    executor: ScriptedExecutor
    store: InMemoryStore
    agent_id: str = AGENT_ID

    async def run(self, text: str = "hello", **kwargs: Any) -> RunState:
        """Run the agent on ``text`` (keyword arguments go to ``Runtime.run``)."""
        return await self.runtime.run(kwargs.pop("agent", self.agent_id), text, **kwargs)

    async def events(self, text: str = "hello", **kwargs: Any) -> list[Any]:
        """Every event of one streamed run."""
        agent = kwargs.pop("agent", self.agent_id)
        return [event async for event in self.runtime.stream(agent, text, **kwargs)]

    def messages(self, thread_id: str) -> list[Message]:
        """The committed transcript of a thread."""
        return self.store.messages(thread_id)


def scripted_runtime(
    turns: Sequence[TurnSource] = ("done",),
    *,
    tools: Iterable[Tool | Callable[..., Any]] = (),
    plugins: Iterable[Plugin] = (),
    agents: Iterable[AgentConfig] | None = None,
    executor: ScriptedExecutor | None = None,
    model: ModelSpec | None = None,
    store: InMemoryStore | None = None,
    chunk_size: int = 0,
    repeat: bool = False,
    **agent_fields: Any,
) -> ScriptedRig:
    """A discovery-free runtime with one scripted provider and (by default) one agent.

    Without ``agents``, the agent ``"agent"`` gets every given tool and plugin;
    ``agent_fields`` (``instructions``, ``plugin_config``, ``max_steps``,
    ``tool_ids``, ...) override its config. Plain functions in ``tools`` are
    wrapped with ``@tool``.
    """
    built = [t if isinstance(t, Tool) else make_tool(t) for t in tools]
    plugin_list = list(plugins)
    executor = executor or ScriptedExecutor(list(turns), chunk_size=chunk_size, repeat=repeat)
    store = store or InMemoryStore()
    builder = (
        AgentRuntimeBuilder(discover=False)
        .with_model(model or ModelSpec(id=MODEL_ID, provider=PROVIDER_ID, model="scripted-1"))
        .with_provider(PROVIDER_ID, executor)
        .with_store(store)
    )
    for t in built:
        builder.with_tool(t)
    for p in plugin_list:
        builder.with_plugin(p)
    if agents is None:
        fields: dict[str, Any] = {
            "id": AGENT_ID,
            "model_binding": model.id if model is not None else MODEL_ID,
            "tool_ids": [t.descriptor.id for t in built],
            "plugin_ids": [p.manifest.id for p in plugin_list],
        }
        fields.update(agent_fields)
        agents = [AgentConfig(**fields)]
    for agent in agents:
        builder.with_agent_spec(agent)
    return ScriptedRig(builder.build(), executor, store)
