"""Remote delegates: ``with_remote_delegate`` routes ``agent_run`` by agent id (SPEC 3.12)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from awaken_runtime import (
    AGENT_RUN,
    AgentConfig,
    AgentRuntimeBuilder,
    Approve,
    AwaitReason,
    ChildOutcome,
    Decision,
    DelegationRequest,
    InMemoryStore,
    ModelSpec,
    Phase,
    ResolutionError,
    ResumeTicket,
    RunStart,
    ScriptedExecutor,
    ScriptedTurn,
    TokenUsage,
    ToolCall,
    ToolCallDone,
)


class FakeRemote:
    """A remote peer that records what it was asked and parks on "ask"."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []

    def tool_id(self) -> str:
        return AGENT_RUN

    def supports_parallel(self) -> bool:
        return True

    def _outcome(self, request: DelegationRequest, status: str, text: str) -> ChildOutcome:
        return ChildOutcome(
            agent_id=request.agent_id,
            run_id="remote-task",
            thread_id="remote-context",
            status=status,  # type: ignore[arg-type]
            text=text,
            usage=TokenUsage(prompt_tokens=7, completion_tokens=3),
            tickets=[self.ticket()] if status == "waiting" else [],
        )

    def ticket(self) -> ResumeTicket:
        return ResumeTicket(
            ticket_id="remote-ticket",
            run_id="remote-task",
            thread_id="remote-context",
            snapshot_id="",
            fingerprint="",
            await_reason=AwaitReason.TOOL_PERMISSION,
            call=ToolCall(id="c1", name="rm", arguments={}),
        )

    async def delegate(self, request: DelegationRequest) -> ChildOutcome:
        self.calls.append(("delegate", request.prompt))
        if request.on_event is not None:  # set when the parent streams or has a sink
            request.on_event(
                RunStart(
                    seq=1,
                    run_id="remote-task",
                    thread_id="remote-context",
                    agent_id=request.agent_id,
                    parent_run_id=request.parent_run_id,
                )
            )
        if "ask" in request.prompt:
            return self._outcome(request, "waiting", "")
        return self._outcome(request, "completed", f"remote says {request.prompt}")

    async def resume(
        self, request: DelegationRequest, ticket: ResumeTicket, decision: Decision
    ) -> ChildOutcome:
        self.calls.append(("resume", (ticket.ticket_id, decision.kind)))
        return self._outcome(request, "completed", "remote resumed")

    async def cancel_waiting_child(self, payload: dict[str, Any]) -> None:
        self.calls.append(("cancel", payload["child_run_id"]))


def build(remote: FakeRemote, prompt: str, *, delegates: list[str]) -> Any:
    turns = [
        ScriptedTurn.call(AGENT_RUN, {"agent_id": "far", "prompt": prompt}),
        "parent done",
    ]
    return (
        AgentRuntimeBuilder(discover=False)
        .with_store(InMemoryStore())
        .with_model(ModelSpec(id="m", provider="p", model="s"))
        .with_provider("p", ScriptedExecutor(turns))
        .with_agent_spec(AgentConfig(id="parent", model_binding="m", delegates=delegates))
        .with_remote_delegate("far", remote)
        .build()
    )


async def test_agent_run_to_a_remote_id_goes_to_its_service() -> None:
    remote = FakeRemote()
    runtime = build(remote, "hello", delegates=["far"])
    events: list[Any] = []
    state = await runtime.run("parent", "go", on_event=events.append)
    assert state.final_text == "parent done"
    assert remote.calls == [("delegate", "hello")]
    start = next(e for e in events if isinstance(e, RunStart) and e.agent_id == "far")
    assert start.parent_run_id == state.run_id
    assert state.usage.prompt_tokens >= 7  # the remote's usage rolled up
    done = next(e for e in events if isinstance(e, ToolCallDone))
    assert json.loads(done.output)["result"] == "remote says hello"


async def test_a_waiting_remote_parks_the_parent_and_resume_reaches_it() -> None:
    remote = FakeRemote()
    runtime = build(remote, "ask first", delegates=["far"])
    state = await runtime.run("parent", "go")
    assert state.phase is Phase.WAITING
    (ticket,) = state.tickets
    assert ticket.await_reason is AwaitReason.DELEGATION
    assert ticket.payload["child_ticket"]["ticket_id"] == "remote-ticket"
    done = await runtime.resume(ticket, Approve())
    assert done.final_text == "parent done"
    assert remote.calls[-1] == ("resume", ("remote-ticket", "approve"))


async def test_cancelling_a_parked_parent_cancels_the_remote_child() -> None:
    remote = FakeRemote()
    runtime = build(remote, "ask first", delegates=["far"])
    state = await runtime.run("parent", "go")
    await runtime.cancel_waiting(state.thread_id)
    assert remote.calls[-1] == ("cancel", "remote-task")


def test_an_unknown_delegate_names_local_and_remote_agents() -> None:
    runtime = build(FakeRemote(), "x", delegates=["nowhere"])
    with pytest.raises(ResolutionError, match="registered delegate agents: 'far', 'parent'"):
        runtime.resolve("parent")


def test_a_remote_delegate_must_be_a_delegation_service() -> None:
    with pytest.raises(TypeError, match="is not a RunDelegationService"):
        AgentRuntimeBuilder(discover=False).with_remote_delegate("far", object())  # type: ignore[arg-type]
