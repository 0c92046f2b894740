"""``ANSWER_TO_TOOL``: a Respond that runs the suspended tool again with the answer."""

from __future__ import annotations

from typing import Any

from awaken_runtime import (
    AgentConfig,
    AgentRuntimeBuilder,
    AwaitReason,
    ModelSpec,
    ScriptedExecutor,
    ScriptedTurn,
    ToolCallContext,
    ToolDescriptor,
    ToolOutput,
)


async def test_respond_on_an_answer_to_tool_ticket_runs_the_tool_with_the_answer() -> None:
    from awaken_runtime import ANSWER_TO_TOOL, Respond, SuspendCall

    seen: list[Any] = []

    class Form:
        descriptor = ToolDescriptor(id="form")

        async def call(self, args: dict[str, Any], ctx: ToolCallContext) -> ToolOutput:
            seen.append(ctx.decision)
            if isinstance(ctx.decision, Respond):
                return ToolOutput.ok(f"got {ctx.decision.value['n']}")
            raise SuspendCall(AwaitReason.USER_INPUT, {ANSWER_TO_TOOL: True, "q": "n?"})

    class Plain:
        descriptor = ToolDescriptor(id="plain")

        async def call(self, args: dict[str, Any], ctx: ToolCallContext) -> ToolOutput:
            seen.append("plain ran")
            raise SuspendCall(AwaitReason.USER_INPUT, {"q": "?"})

    rt = (
        AgentRuntimeBuilder(discover=False)
        .with_tool(Form())
        .with_tool(Plain())
        .with_model(ModelSpec(id="m", provider="s", model="m"))
        .with_provider(
            "s",
            ScriptedExecutor(
                [ScriptedTurn.call("form", {}), "one", ScriptedTurn.call("plain", {}), "two"]
            ),
        )
        .with_agent_spec(AgentConfig(id="a", model_binding="m", tool_ids=["form", "plain"]))
        .build()
    )
    parked = await rt.run("a", "go", thread_id="t")
    done = await rt.resume(parked.tickets[0], Respond(value={"n": 7}))
    (out,) = [m for m in done.new_messages if m.role == "tool"]
    assert out.text == "got 7" and seen == [None, Respond(value={"n": 7})]
    # Without the key, Respond stays the result and the tool does not run again.
    parked = await rt.run("a", "again", thread_id="t")
    done = await rt.resume(parked.tickets[0], Respond(value="typed by a human"))
    (out,) = [m for m in done.new_messages if m.role == "tool"]
    assert out.text == "typed by a human" and seen.count("plain ran") == 1
