"""The plugin in real runs: block, ask/approve/deny, remember, hide, delegate, audit."""

from __future__ import annotations

from typing import Any

import pytest

from awaken_ext_permissions import AUDIT_KEY, PLUGIN_ID, REMEMBERED_KEY, PermissionsPlugin
from awaken_runtime import (
    Approve,
    AwaitReason,
    Deny,
    InferenceRequest,
    InMemoryStore,
    Phase,
    PhaseHookPoint,
    Respond,
    RunState,
    Scope,
    ScriptedTurn,
    discover,
)


def tool_messages(state: RunState) -> list[Any]:
    return [m for m in state.new_messages if m.role == "tool"]


def audit(state: RunState) -> dict[str, Any]:
    """Every audit entry the run committed, read from its log (not from final state)."""
    entries: dict[str, Any] = {}
    for batch in state.log:
        for producer, command in batch.entries:
            if command.key == AUDIT_KEY:
                assert producer == PLUGIN_ID
                entries.update(command.action.value)
    return entries


async def test_deny_blocks_with_a_model_visible_message_and_the_run_continues(rig: Any) -> None:
    runtime = rig.build(
        [rig.call("shell", "c1", command="rm -rf /"), rig.call("shell", "c2", command="ls"), "ok"],
        {"deny": ['shell(command ~ "rm *")'], "allow": ["shell"]},
    )
    state = await runtime.run("agent", "clean up")
    blocked, ran = tool_messages(state)
    assert blocked.metadata.get("is_error") is True
    assert "Permission denied" in blocked.text
    assert "rule 'deny shell(command ~ \"rm *\")'" in blocked.text
    assert ran.text == "ran ls"
    assert state.end_cause.kind == "natural_end" and state.final_text == "ok"
    entries = audit(state)
    assert entries["c1"]["decision"] == "deny" and entries["c1"]["by"] == "policy"
    assert entries["c1"]["rule"] == 'deny shell(command ~ "rm *")'
    assert entries["c2"]["decision"] == "allow" and entries["c2"]["rule"] == "allow shell"
    assert {"at", "run_id", "step", "tool", "source"} <= set(entries["c1"])


async def test_on_deny_stop_ends_the_run_stopped(rig: Any) -> None:
    runtime = rig.build(
        [rig.call("shell", "c1", command="rm -r x"), "unreachable"],
        {"deny": ['shell(command ~ "rm *")'], "on_deny": "stop"},
    )
    state = await runtime.run("agent", "go")
    assert state.end_cause.kind == "stopped"
    assert "'shell' was denied by rule 'deny shell(command ~" in state.end_cause.reason
    assert audit(state)["c1"]["decision"] == "deny"


async def test_ask_suspends_with_the_call_and_rule_then_approve_runs_it(rig: Any) -> None:
    runtime = rig.build(
        [rig.call("write_file", "w1", path="src/a.py", content="x"), "written"],
        {"ask": ['write_file(path ~ "src/**")']},
    )
    parked = await runtime.run("agent", "write", thread_id="t")
    assert parked.phase is Phase.WAITING
    ticket = parked.ticket
    assert ticket.await_reason is AwaitReason.TOOL_PERMISSION
    assert ticket.payload["tool"] == "write_file"
    assert ticket.payload["arguments"] == {"path": "src/a.py", "content": "x"}
    assert ticket.payload["rule"] == 'ask write_file(path ~ "src/**")'
    state = await runtime.resume(ticket, Approve())
    assert state.end_cause.kind == "natural_end" and state.final_text == "written"
    assert [m.text for m in tool_messages(state)] == ["wrote src/a.py"]
    entry = audit(state)["w1"]
    assert entry["decision"] == "approve" and entry["by"] == "user" and entry["remember"] == "once"
    assert entry["policy"] == "ask" and entry["rule"] == 'ask write_file(path ~ "src/**")'
    # "once" remembers nothing
    assert state.value(REMEMBERED_KEY, Scope.THREAD) is None


async def test_deny_decision_reaches_the_model_and_the_run_continues(rig: Any) -> None:
    runtime = rig.build([rig.call("shell", "s1", command="make"), "fine"], {})
    parked = await runtime.run("agent", "build")
    state = await runtime.resume(parked.ticket, Deny(reason="not now"))
    (result,) = tool_messages(state)
    assert "not now" in result.text and result.metadata.get("is_error") is True
    assert state.final_text == "fine"
    assert audit(state)["s1"]["decision"] == "deny"


async def test_respond_is_audited(rig: Any) -> None:
    runtime = rig.build([rig.call("shell", "s1", command="date"), "ok"], {})
    parked = await runtime.run("agent", "x")
    state = await runtime.resume(parked.ticket, Respond(value="Mon"))
    assert audit(state)["s1"]["decision"] == "respond"


@pytest.mark.parametrize("answer", ["approve", "deny"])
async def test_remembered_for_the_thread(rig: Any, answer: str) -> None:
    store = InMemoryStore()
    write = {"path": "src/a.py", "content": "x"}
    turns = [
        rig.call("write_file", "w1", **write),
        "one",
        rig.call("write_file", "w2", **write),
        "two",
        rig.call("write_file", "w3", **write),
        "three",
    ]
    runtime = rig.build(turns, {}, store=store)
    parked = await runtime.run("agent", "first", thread_id="t1")
    decision = Approve(remember="thread") if answer == "approve" else Deny(remember="thread")
    state = await runtime.resume(parked.ticket, decision)
    entry = next(iter(state.value(REMEMBERED_KEY, Scope.THREAD).values()))
    assert entry["behavior"] == ("allow" if answer == "approve" else "deny")
    assert entry["tool"] == "write_file" and entry["arguments"] == write
    # The same call in the same thread does not ask again.
    again = await runtime.run("agent", "second", thread_id="t1")
    assert again.phase is Phase.ENDED
    (result,) = tool_messages(again)
    if answer == "approve":
        assert result.text == "wrote src/a.py"
        assert audit(again)["w2"]["source"] == "thread"
    else:
        assert "Permission denied" in result.text and "remembered for this thread" in result.text
    # Another thread asks.
    other = await runtime.run("agent", "third", thread_id="t2")
    assert other.phase is Phase.WAITING


async def test_remembered_for_the_profile(rig: Any) -> None:
    store = InMemoryStore()
    turns = [
        rig.call("shell", "a", command="make"),
        "one",
        rig.call("shell", "b", command="make"),
        "two",
        rig.call("shell", "c", command="make"),
        "three",
    ]
    runtime = rig.build(turns, {}, store=store)
    parked = await runtime.run("agent", "x", thread_id="t1", profile_id="ann")
    await runtime.resume(parked.ticket, Approve(remember="profile"))
    # Another thread of the same profile: no ask.
    state = await runtime.run("agent", "y", thread_id="t2", profile_id="ann")
    assert state.phase is Phase.ENDED and tool_messages(state)[0].text == "ran make"
    assert audit(state)["b"]["source"] == "profile"
    # Another profile: asks.
    other = await runtime.run("agent", "z", thread_id="t3", profile_id="bob")
    assert other.phase is Phase.WAITING


async def test_unconditionally_denied_tools_are_hidden(rig: Any) -> None:
    seen: list[list[str]] = []

    def turn(answer: Any) -> Any:
        def reply(request: InferenceRequest) -> Any:
            seen.append([t.id for t in request.tools])
            return answer

        return reply

    runtime = rig.build(
        [turn(rig.call("delete_all", "d1")), turn("ok")],
        {"deny": ["delete_all", 'shell(command ~ "rm *")'], "default": "allow"},
    )
    state = await runtime.run("agent", "x")
    assert all("delete_all" not in tools and "shell" in tools for tools in seen)
    (blocked,) = tool_messages(state)
    assert blocked.metadata.get("is_error") is True and blocked.text != "deleted"
    assert audit(state)["d1"]["decision"] == "deny"
    # hide_denied=false keeps it listed (the gate still blocks it).
    seen.clear()
    runtime = rig.build(
        [turn(rig.call("delete_all", "d1")), turn("ok")],
        {"deny": ["delete_all"], "hide_denied": False},
    )
    state = await runtime.run("agent", "x")
    assert "delete_all" in seen[0]
    assert "Permission denied" in tool_messages(state)[0].text


def test_the_hide_hook_runs_only_when_a_deny_rule_can_hide_a_tool() -> None:
    def hooks(config: dict[str, Any]) -> set[Any]:
        return set(PermissionsPlugin().resolve(config).phase_hooks)

    hide, audit_hook = PhaseHookPoint.BEFORE_INFERENCE, PhaseHookPoint.AFTER_TOOL
    # a default deny, an allow and a conditional deny never hide a tool by name
    quiet = {"allow": ["noop"], "default": "deny", "deny": ['shell(command ~ "rm *")']}
    assert hooks(quiet) == {audit_hook}
    assert PermissionsPlugin().resolve(quiet).tool_gates
    assert hooks({"deny": ["delete_*"]}) == {hide, audit_hook}
    assert hooks({"deny": ["delete_*"], "hide_denied": False}) == {audit_hook}


def _delegate(prompt: str = "clean up") -> ScriptedTurn:
    return ScriptedTurn.call("agent_run", {"agent_id": "worker", "prompt": prompt})


@pytest.mark.parametrize("inherit", [True, False])
async def test_a_delegated_sub_agent_is_blocked_by_the_parents_deny(
    rig: Any, inherit: bool
) -> None:
    store = InMemoryStore()
    runtime = rig.build(
        [_delegate(), "parent done"],
        {"deny": ['shell(command ~ "rm *")'], "allow": ["agent_run", "shell"], "inherit": inherit},
        store=store,
        worker_turns=[rig.call("shell", "k1", command="rm -rf /"), "worker done"],
    )
    state = await runtime.run("agent", "go", thread_id="t")
    assert state.end_cause.kind == "natural_end"
    child = [
        m for m in store.messages("t/" + state.new_messages[1].tool_calls[0].id) if m.role == "tool"
    ]
    if inherit:
        assert "Permission denied" in child[0].text
    else:
        assert child[0].text == "ran rm -rf /"


async def test_a_sub_agents_ask_parks_the_parent_and_resumes(rig: Any) -> None:
    store = InMemoryStore()
    runtime = rig.build(
        [_delegate(), "parent done"],
        {"allow": ["agent_run"]},
        store=store,
        worker_turns=[rig.call("shell", "k1", command="make"), "worker done"],
    )
    parked = await runtime.run("agent", "go", thread_id="t")
    assert parked.ticket.await_reason is AwaitReason.DELEGATION
    assert parked.ticket.payload["child_ticket"]["payload"]["tool"] == "shell"
    state = await runtime.resume(parked.ticket, Approve())
    assert state.final_text == "parent done"
    child_thread = parked.ticket.payload["child_thread_id"]
    assert [m.text for m in store.messages(child_thread) if m.role == "tool"] == ["ran make"]


async def test_three_asks_in_one_step_are_resolved_independently(rig: Any) -> None:
    runtime = rig.build(
        [
            rig.calls(
                ("write_file", {"path": "a"}),
                ("write_file", {"path": "b"}),
                ("shell", {"command": "x"}),
            ),
            "all answered",
        ],
        {},
    )
    parked = await runtime.run("agent", "go", thread_id="t")
    assert len(parked.tickets) == 3
    by_call = {t.call.id: t for t in parked.tickets}
    step = await runtime.resume(by_call["c1"], Deny(reason="not b"))
    assert step.phase is Phase.WAITING and {t.call.id for t in step.tickets} == {"c0", "c2"}
    step = await runtime.resume(by_call["c2"], Approve(remember="thread"))
    assert step.phase is Phase.WAITING and [t.call.id for t in step.tickets] == ["c0"]
    state = await runtime.resume(by_call["c0"], Approve())
    assert state.phase is Phase.ENDED and state.final_text == "all answered"
    results = {m.tool_call_id: m.text for m in runtime.store.messages("t") if m.role == "tool"}
    assert results["c0"] == "wrote a" and "not b" in results["c1"] and results["c2"] == "ran x"
    remembered = state.value(REMEMBERED_KEY, Scope.THREAD)
    assert [e["tool"] for e in remembered.values()] == ["shell"]


async def test_thread_audit_scope_persists_with_the_thread(rig: Any) -> None:
    runtime = rig.build(
        [rig.call("read_file", "r1", path="x"), "ok"], {"allow": ["read_file"], "audit": "thread"}
    )
    state = await runtime.run("agent", "go")
    assert state.value(AUDIT_KEY, Scope.THREAD)["r1"]["decision"] == "allow"
    runtime = rig.build(
        [rig.call("read_file", "r1", path="x"), "ok"], {"allow": ["read_file"], "audit": "off"}
    )
    assert audit(await runtime.run("agent", "go")) == {}


def test_the_plugin_is_published_through_the_awaken_entry_point() -> None:
    found = discover()
    assert "permissions" in found.plugins
    assert isinstance(found.plugins["permissions"].value, PermissionsPlugin)
