"""``awaken mcp serve --setup mcp_setup:setup``: the tools the served agent lists."""

from __future__ import annotations

from awaken_runtime import AgentRuntimeBuilder, tool


@tool
def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: The first number.
        b: The second number.
    """
    return a + b


@tool
def shout(text: str) -> str:
    """Upper-case a text.

    Args:
        text: What to shout.
    """
    if text == "boom":
        raise RuntimeError("the tool broke")
    return text.upper() + "!"


def setup(builder: AgentRuntimeBuilder) -> None:
    """Register the tools."""
    builder.with_tool(add).with_tool(shout)
