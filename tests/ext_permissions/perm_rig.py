"""A scripted agent with the permissions plugin (loaded by the tests, or run as a script).

``python perm_rig.py park URL THREAD`` runs the ``coder`` agent on a store
until its ``write_file`` call asks for permission and prints the ticket JSON.
``python perm_rig.py again URL THREAD`` runs it once more and prints the phase
and tool results as JSON (to check what a remembered decision did).
``python perm_rig.py cli URL THREAD`` runs the ``coder`` agent and hands the
waiting run to ``drive_with_terminal`` on this process's stdin/stdout, then
prints ``RESULT <json>`` and exits with ``exit_status``.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Sequence
from typing import Any

from awaken_ext_permissions import PermissionsPlugin
from awaken_runtime import (
    AgentConfig,
    AgentRuntimeBuilder,
    InferenceRequest,
    InMemoryStore,
    ModelSpec,
    Runtime,
    ScriptedExecutor,
    ScriptedTurn,
    ToolCall,
    tool,
)

EXECUTED: list[tuple[str, dict[str, Any]]] = []
"""Every call a guarded rig tool actually ran (tests clear it and count)."""


@tool
def write_file(path: str, content: str = "") -> str:
    """Write a file.

    Args:
        path: Where.
        content: What.
    """
    EXECUTED.append(("write_file", {"path": path, "content": content}))
    return f"wrote {path}"


@tool
def transfer(amount: int, to: str = "acct") -> str:
    """Move money.

    Args:
        amount: How much.
        to: Where to.
    """
    EXECUTED.append(("transfer", {"amount": amount, "to": to}))
    return f"sent {amount}"


@tool
def delete_repo(repo: str, force: bool = False) -> str:
    """Delete a repository.

    Args:
        repo: Which.
        force: Without confirmation.
    """
    EXECUTED.append(("delete_repo", {"repo": repo, "force": force}))
    return f"deleted {repo}"


@tool
def read_file(path: str) -> str:
    """Read a file.

    Args:
        path: Where.
    """
    return f"contents of {path}"


@tool
def shell(command: str) -> str:
    """Run a shell command.

    Args:
        command: The command line.
    """
    EXECUTED.append(("shell", {"command": command}))
    return f"ran {command}"


@tool
def delete_all() -> str:
    """Delete everything."""
    return "deleted"


@tool
def edit(files: list[str]) -> str:
    """Edit several files.

    Args:
        files: Paths.
    """
    return f"edited {len(files)}"


ALL_TOOLS = [write_file, read_file, shell, delete_all, edit, transfer, delete_repo]
TOOL_IDS = [t.descriptor.id for t in ALL_TOOLS]


def call(name: str, call_id: str | None = None, **arguments: Any) -> ScriptedTurn:
    """A turn calling one tool (with a fixed id when given)."""
    if call_id is None:
        return ScriptedTurn.call(name, arguments)
    return ScriptedTurn(tool_calls=[ToolCall(id=call_id, name=name, arguments=arguments)])


def calls(*items: tuple[str, dict[str, Any]]) -> ScriptedTurn:
    """A turn calling several tools at once."""
    return ScriptedTurn(
        tool_calls=[ToolCall(id=f"c{i}", name=n, arguments=a) for i, (n, a) in enumerate(items)]
    )


def build(
    turns: Sequence[Any],
    config: dict[str, Any] | None = None,
    *,
    store: Any = None,
    worker_turns: Sequence[Any] | None = None,
    repeat: bool = False,
    agent_id: str = "agent",
    worker_config: dict[str, Any] | None = None,
) -> Runtime:
    """``agent`` with every test tool and the permissions plugin; ``worker`` as its delegate."""
    builder = (
        AgentRuntimeBuilder(discover=False)
        .with_store(store if store is not None else InMemoryStore())
        .with_plugin(PermissionsPlugin())
        .with_model(ModelSpec(id="m", provider="p", model="scripted"))
        .with_provider("p", ScriptedExecutor(list(turns), repeat=repeat))
    )
    for t in ALL_TOOLS:
        builder.with_tool(t)
    delegates: list[str] = []
    if worker_turns is not None:
        builder.with_model(ModelSpec(id="m-worker", provider="p-worker", model="scripted"))
        builder.with_provider("p-worker", ScriptedExecutor(list(worker_turns)))
        builder.with_agent_spec(
            AgentConfig(
                id="worker",
                model_binding="m-worker",
                tool_ids=TOOL_IDS,
                plugin_ids=["permissions"] if worker_config is not None else [],
                plugin_config={} if worker_config is None else {"permissions": worker_config},
            )
        )
        delegates = ["worker"]
    builder.with_agent_spec(
        AgentConfig(
            id=agent_id,
            model_binding="m",
            tool_ids=TOOL_IDS,
            plugin_ids=["permissions"],
            plugin_config={"permissions": config or {}},
            delegates=delegates,
        )
    )
    return builder.build()


def chain(configs: Sequence[dict[str, Any] | None], last_turn: ScriptedTurn) -> Runtime:
    """Agents ``a0 -> a1 -> ...`` each delegating once; the last plays ``last_turn``.

    A ``None`` config is an agent without the permissions plugin.
    """
    builder = AgentRuntimeBuilder(discover=False).with_store(InMemoryStore())
    builder.with_plugin(PermissionsPlugin())
    for t in ALL_TOOLS:
        builder.with_tool(t)
    last = len(configs) - 1
    for level, config in enumerate(configs):
        first = last_turn
        if level < last:
            first = ScriptedTurn.call("agent_run", {"agent_id": f"a{level + 1}", "prompt": "go"})
        builder.with_model(ModelSpec(id=f"m{level}", provider=f"p{level}", model="scripted"))
        builder.with_provider(f"p{level}", ScriptedExecutor([first, f"done {level}"]))
        builder.with_agent_spec(
            AgentConfig(
                id=f"a{level}",
                model_binding=f"m{level}",
                tool_ids=TOOL_IDS,
                plugin_ids=[] if config is None else ["permissions"],
                plugin_config={} if config is None else {"permissions": config},
                delegates=[f"a{level + 1}"] if level < last else [],
            )
        )
    return builder.build()


def tool_count(request: InferenceRequest) -> int:
    """How many tool results the request carries."""
    return sum(1 for m in request.messages if m.role == "tool")


def _coder_turn(request: InferenceRequest) -> ScriptedTurn | str:
    """write_file(a) -> write_file(a) again -> shell(rm -rf build) -> text."""
    n = tool_count(request)
    if n == 0:
        return call("write_file", f"w{len(request.messages)}", path="src/a.py", content="x")
    if n == 1:
        return call("write_file", f"w{len(request.messages)}", path="src/a.py", content="x")
    if n == 2:
        return call("shell", f"s{len(request.messages)}", command="rm -rf build")
    return "finished"


def _park_turn(request: InferenceRequest) -> ScriptedTurn | str:
    last = request.messages[-1]
    if last.role == "tool":
        return "done"
    return call("write_file", f"w{len(request.messages)}", path="src/a.py", content="x")


CODER_CONFIG: dict[str, Any] = {"allow": ["read_file"], "deny": ["delete_all"]}


def coder(store: Any, turn: Any = _coder_turn) -> Runtime:
    """The agent both processes build (same fingerprint)."""
    return build([turn], CODER_CONFIG, store=store, repeat=True, agent_id="coder")


def _results(state: Any) -> list[str]:
    return [m.text for m in state.new_messages if m.role == "tool"]


async def _main(mode: str, url: str, thread_id: str) -> int:
    from awaken_runtime.stores import open_store

    store = open_store(url)
    try:
        if mode == "park":
            state = await coder(store, _park_turn).run("coder", "write it", thread_id=thread_id)
            print(state.tickets[0].model_dump_json(), flush=True)
            return 0
        if mode == "again":
            state = await coder(store, _park_turn).run("coder", "again", thread_id=thread_id)
            print(json.dumps({"phase": state.phase.value, "results": _results(state)}), flush=True)
            return 0
        from awaken_runtime.cli._approve import drive_with_terminal, exit_status

        runtime = coder(store)
        state = await runtime.run("coder", "build it", thread_id=thread_id)
        state = await drive_with_terminal(runtime, state, stdin=sys.stdin, stdout=sys.stdout)
        summary = {
            "phase": state.phase.value,
            "final": state.final_text,
            "results": [m.text for m in await _thread_tools(store, thread_id)],
        }
        print("RESULT " + json.dumps(summary), flush=True)
        return exit_status(state)
    finally:
        close = getattr(store, "close", None)
        if close is not None:
            await close()


async def _thread_tools(store: Any, thread_id: str) -> list[Any]:
    from awaken_runtime import ScopeBinding

    snapshot = await store.load(ScopeBinding(thread_id, "default", "default"))
    return [m for m in snapshot.messages if m.role == "tool"]


if __name__ == "__main__":
    mode, url, tid = sys.argv[1:4]
    raise SystemExit(asyncio.run(_main(mode, url, tid)))
