"""The ``agent_run`` tool and ``run_child_agent``: a parent's calls that start children."""

from __future__ import annotations

from typing import Any

from ..tools._tool import ToolCallContext, ToolDescriptor, ToolOutput
from ._delegation import ChildOutcome
from ._service import AGENT_RUN, ChildRunner

__all__ = ["run_child_agent"]


async def run_child_agent(
    ctx: ToolCallContext,
    agent_id: str,
    prompt: str,
    *,
    context: dict[str, Any] | None = None,
) -> ChildOutcome:
    """Run another agent from inside a tool; the child is linked to the calling run.

    Use it for typed parent/child state, your own status policy or streaming;
    ``outcome.to_output()`` gives the default tool result (and parks the call
    when the child waits).
    """
    children = ctx.children
    if not isinstance(children, ChildRunner):
        raise RuntimeError("run_child_agent needs a tool call made by an awaken run")
    return await children.run(agent_id, prompt, key=ctx.call_id, context=context)


class DelegationTool:
    """The ``agent_run`` tool of an agent with ``delegates``: its schema lists them."""

    def __init__(self, delegates: list[str], service_tool_id: str = AGENT_RUN) -> None:
        self.delegates = list(delegates)
        self._descriptor = ToolDescriptor(
            id=service_tool_id,
            description=(
                "Delegate a task to another agent and get its final answer. "
                "Available agents: " + ", ".join(self.delegates) + "."
            ),
            parameters={
                "type": "object",
                "properties": {
                    "agent_id": {"type": "string", "enum": self.delegates},
                    "prompt": {"type": "string", "minLength": 1},
                    "context": {"type": "object"},
                },
                "required": ["agent_id", "prompt"],
                "additionalProperties": False,
            },
        )

    @property
    def descriptor(self) -> ToolDescriptor:
        """The model-visible descriptor."""
        return self._descriptor

    async def call(self, args: dict[str, Any], ctx: ToolCallContext) -> ToolOutput:
        """Validate the arguments and run the child."""
        agent_id, prompt = args.get("agent_id"), args.get("prompt")
        if agent_id not in self.delegates:
            return ToolOutput.error(
                f"Invalid arguments for tool '{self._descriptor.id}': field 'agent_id': "
                f"{agent_id!r} is not one of the delegates ({', '.join(self.delegates)})"
            )
        if not isinstance(prompt, str) or not prompt.strip():
            return ToolOutput.error(
                f"Invalid arguments for tool '{self._descriptor.id}': field 'prompt' must be "
                f"a non-blank string"
            )
        context = args.get("context")
        extra = set(args) - {"agent_id", "prompt", "context"}
        if extra or (context is not None and not isinstance(context, dict)):
            return ToolOutput.error(
                f"Invalid arguments for tool '{self._descriptor.id}': only agent_id, prompt "
                f"and an object 'context' are accepted"
            )
        outcome = await run_child_agent(ctx, agent_id, prompt, context=context)
        return outcome.to_output()
