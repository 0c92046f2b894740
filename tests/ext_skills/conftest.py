"""Shared factories for the awaken_ext_skills tests.

Test modules run under ``--import-mode=importlib`` and cannot import this
file, so helpers are handed out through fixtures:

* ``write_skill(base, name, description=..., body=..., frontmatter=..., files=...)``
  writes ``base/name/SKILL.md`` (plus ``files``, relative path -> str/bytes)
  and returns the skill folder. ``frontmatter`` is extra YAML text appended
  to the header; ``raw`` replaces the whole SKILL.md.
* ``skills_rig(turns, paths=..., config=..., tools=..., plugin=...)``: a
  discovery-free runtime with :class:`SkillsPlugin` enabled on agent
  ``agent`` and a :class:`ScriptedExecutor`; returns a :class:`Rig`.
* ``call_turn``: ``call_turn(tool_id, **arguments)`` -> a ScriptedTurn calling one tool.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from awaken_ext_skills import SkillsPlugin
from awaken_runtime import (
    InferenceRequest,
    InMemoryStore,
    Message,
    RunState,
    Runtime,
    ScriptedExecutor,
    ScriptedTurn,
    Tool,
)
from awaken_runtime.testing import scripted_runtime


def write_skill(
    base: Path,
    name: str,
    *,
    description: str = "Does a thing.",
    body: str = "Follow these steps.",
    frontmatter: str = "",
    raw: str | bytes | None = None,
    files: dict[str, str | bytes] | None = None,
) -> Path:
    folder = base / name
    folder.mkdir(parents=True, exist_ok=True)
    skill_md = folder / "SKILL.md"
    if raw is None:
        text = (
            f"---\nname: {name}\ndescription: {json.dumps(description)}\n{frontmatter}---\n{body}\n"
        )
        skill_md.write_text(text, encoding="utf-8")
    elif isinstance(raw, bytes):
        skill_md.write_bytes(raw)
    else:
        skill_md.write_text(raw, encoding="utf-8")
    for rel, content in (files or {}).items():
        target = folder / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            target.write_bytes(content)
        else:
            target.write_text(content, encoding="utf-8")
    return folder


def call(tool_id: str, /, **arguments: Any) -> ScriptedTurn:
    return ScriptedTurn.call(tool_id, arguments)


@dataclass
class Rig:
    runtime: Runtime
    executor: ScriptedExecutor
    store: InMemoryStore
    plugin: SkillsPlugin

    async def run(self, text: str = "hello", **kwargs: Any) -> RunState:
        return await self.runtime.run("agent", text, **kwargs)

    @property
    def requests(self) -> list[InferenceRequest]:
        return self.executor.requests

    def tool_results(self, thread_id: str) -> list[Message]:
        return [m for m in self.store.messages(thread_id) if m.role == "tool"]


def context_entries(request: InferenceRequest) -> dict[str, str]:
    """Context messages of a request (session/conversation/suffix bands) by key."""
    return {
        m.metadata["context_key"]: m.text for m in request.messages if m.metadata.get("context_key")
    }


def system_prompt(request: InferenceRequest) -> str:
    return request.messages[0].text if request.messages[0].role == "system" else ""


def tool_ids(request: InferenceRequest) -> set[str]:
    return {t.id for t in request.tools}


def build_rig(
    turns: Sequence[ScriptedTurn | str | Callable[..., Any]] = ("done",),
    *,
    paths: Iterable[str | Path] = (),
    config: dict[str, Any] | None = None,
    tools: Iterable[Tool | Callable[..., Any]] = (),
    plugin: SkillsPlugin | None = None,
    repeat: bool = False,
) -> Rig:
    plugin = plugin or SkillsPlugin()
    cfg = dict(config or {})
    if paths:
        cfg.setdefault("paths", [str(p) for p in paths])
    cfg.setdefault("packs", False)
    rig = scripted_runtime(
        turns,
        tools=tools,
        plugins=[plugin],
        repeat=repeat,
        instructions="You are a test agent.",
        plugin_config={"skills": cfg},
    )
    return Rig(rig.runtime, rig.executor, rig.store, plugin)


@pytest.fixture
def skill_factory() -> Callable[..., Path]:
    return write_skill


@pytest.fixture
def skills_rig() -> Callable[..., Rig]:
    return build_rig


@pytest.fixture
def call_turn() -> Callable[..., ScriptedTurn]:
    return call


@pytest.fixture
def inspect_request() -> Any:
    """Helpers reading a request: ``.context(req)``, ``.system(req)``, ``.tools(req)``."""

    class _Inspect:
        context = staticmethod(context_entries)
        system = staticmethod(system_prompt)
        tools = staticmethod(tool_ids)

    return _Inspect()
