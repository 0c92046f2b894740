"""The tool contract: Tool, ToolOutput, ToolCallContext, @tool, cancellation (private)."""
