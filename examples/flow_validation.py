"""Flow validation: "issue_refund needs lookup_order first", enforced by state.

Typed state records where the workflow is; a ToolGate rejects an
out-of-order call with a reason the model sees; an AFTER_TOOL hook records
the transition once the prerequisite tool succeeded. The prompt can suggest
an order, but only this plugin guarantees it.

The gate checks state, not execution order: a response holding both
``[lookup_order, issue_refund]`` runs the lookup first, but the refund was
decided before the model saw the lookup's result, so it is blocked until a
later step; and the amount must not exceed the total the lookup found.

Run it offline:  python examples/flow_validation.py
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from awaken_runtime import (
    AgentConfig,
    AgentRuntimeBuilder,
    Block,
    CapabilityBound,
    Contributions,
    HookReaction,
    ModelSpec,
    PhaseContext,
    PhaseHookPoint,
    PluginManifest,
    Runtime,
    Scope,
    ScriptedExecutor,
    ScriptedTurn,
    StateKey,
    ToolCall,
    tool,
)

# Which orders were looked up in this thread, with the total found and when
# (run id and step): the workflow's state.
LOOKED_UP = StateKey(
    "refund_flow.looked_up", dict[str, dict[str, Any]], default={}, scope=Scope.THREAD
)


@tool
def lookup_order(order_id: str) -> dict[str, Any]:
    """Look an order up.

    Args:
        order_id: The order number.
    """
    return {"order_id": order_id, "total": 42.0, "status": "delivered"}


@tool
def issue_refund(order_id: str, amount: float) -> str:
    """Refund an order.

    Args:
        order_id: The order number.
        amount: Amount to refund.
    """
    return f"refunded {amount:.2f} on {order_id}"


class RefundFlowPlugin:
    """Blocks ``issue_refund`` for an order until ``lookup_order`` succeeded for it."""

    manifest = PluginManifest(
        id="refund-flow",
        version="0.1.0",
        description="issue_refund requires a successful lookup_order of the same order first.",
        bound=CapabilityBound(
            tool_gates=True,
            phase_hooks=frozenset({PhaseHookPoint.AFTER_TOOL}),
            state_keys=frozenset({LOOKED_UP.decl}),
        ),
    )

    def resolve(self, config: Any) -> Contributions:
        """A gate for the rule and an AFTER_TOOL hook for the transition."""

        def gate(ctx: PhaseContext, call: ToolCall) -> Block | None:
            if call.name != "issue_refund":
                return None
            order = str(call.arguments.get("order_id"))
            seen = LOOKED_UP.get(ctx.store).get(order)
            if seen is None:
                return Block(
                    reason=f"issue_refund needs lookup_order first: call lookup_order "
                    f"for order {order!r}, then retry the refund."
                )
            if (seen["run_id"], seen["step"]) == (ctx.run.run_id, ctx.run.step):
                # Looked up in this same response: the model chose the amount blind.
                return Block(
                    reason=f"issue_refund needs lookup_order first: read the lookup of "
                    f"order {order!r} (total {seen['total']:.2f}), then retry the refund."
                )
            amount = call.arguments.get("amount")
            if not isinstance(amount, (int, float)) or not 0 < amount <= seen["total"]:
                return Block(
                    reason=f"refund amount {amount!r} must be positive and at most the "
                    f"order total {seen['total']:.2f}."
                )
            return None

        async def record(ctx: PhaseContext) -> HookReaction | None:
            call, output = ctx.tool_call, ctx.tool_output
            if call is None or output is None or call.name != "lookup_order" or output.is_error:
                return None
            done = LOOKED_UP.get(ctx.store)
            order = str(call.arguments["order_id"])
            found = json.loads(output.content)
            entry = {"total": float(found["total"]), "run_id": ctx.run.run_id, "step": ctx.run.step}
            return HookReaction(commands=[LOOKED_UP.set({**done, order: entry})])

        return Contributions(tool_gates=[gate], phase_hooks={PhaseHookPoint.AFTER_TOOL: record})


def build_runtime(turns: list[Any]) -> Runtime:
    """A runtime with the refund agent on a scripted model."""
    return (
        AgentRuntimeBuilder(discover=False)
        .with_model(ModelSpec(id="scripted", provider="scripted", model="scripted"))
        .with_provider("scripted", ScriptedExecutor(turns))
        .with_tool(lookup_order)
        .with_tool(issue_refund)
        .with_plugin(RefundFlowPlugin())
        .with_agent_spec(
            AgentConfig(
                id="support",
                instructions="You handle refunds.",
                model_binding="scripted",
                tool_ids=["lookup_order", "issue_refund"],
                plugin_ids=["refund-flow"],
            )
        )
        .build()
    )


DEMO_TURNS: list[Any] = [
    # The model tries to skip a step...
    ScriptedTurn.call("issue_refund", {"order_id": "A-1", "amount": 42.0}),
    # ...is told why, looks the order up, and retries.
    ScriptedTurn.call("lookup_order", {"order_id": "A-1"}),
    ScriptedTurn.call("issue_refund", {"order_id": "A-1", "amount": 42.0}),
    "Refunded order A-1.",
]


async def main() -> None:
    """Run the scripted conversation and print each tool result."""
    runtime = build_runtime(DEMO_TURNS)
    state = await runtime.run("support", "Refund order A-1 please.", thread_id="demo")
    for message in state.new_messages:
        if message.role == "tool":
            print(f"{message.name}: {message.text}")
    print(state.final_text)


if __name__ == "__main__":
    asyncio.run(main())
