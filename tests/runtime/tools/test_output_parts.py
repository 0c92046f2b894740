"""``ToolOutput.parts``: non-text content reaches the tool message after the text."""

from __future__ import annotations

from typing import Any

from awaken_runtime import (
    AgentConfig,
    AgentRuntimeBuilder,
    ModelSpec,
    ScriptedExecutor,
    ScriptedTurn,
    ToolCallContext,
    ToolDescriptor,
    ToolOutput,
)


async def test_parts_of_a_tool_output_reach_the_tool_message() -> None:
    from awaken_runtime import ContentPart

    class Picture:
        descriptor = ToolDescriptor(id="picture")

        async def call(self, args: dict[str, Any], ctx: ToolCallContext) -> ToolOutput:
            part = ContentPart(type="image_url", image_url={"url": "data:image/png;base64,AA=="})
            return ToolOutput(content="a dot", parts=[part])

    rt = (
        AgentRuntimeBuilder(discover=False)
        .with_tool(Picture())
        .with_model(ModelSpec(id="m", provider="s", model="m"))
        .with_provider("s", ScriptedExecutor([ScriptedTurn.call("picture", {}), "seen"]))
        .with_agent_spec(AgentConfig(id="a", model_binding="m", tool_ids=["picture"]))
        .build()
    )
    state = await rt.run("a", "look")
    (message,) = [m for m in state.new_messages if m.role == "tool"]
    assert isinstance(message.content, list)
    assert [p.type for p in message.content] == ["text", "image_url"]
    assert message.text == "a dot"
