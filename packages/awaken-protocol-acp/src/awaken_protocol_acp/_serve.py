"""Serve an agent over ACP on this process's stdin/stdout."""

from __future__ import annotations

from typing import IO, cast

from acp import Agent, run_agent

from awaken_runtime import Runtime

from ._agent import AwakenAcpAgent
from ._channel import claim_stdout, stdio_streams

__all__ = ["serve_stdio"]


async def serve_stdio(runtime: Runtime, agent_id: str, *, frames: IO[bytes] | None = None) -> None:
    """Serve ``agent_id`` to the ACP client on stdin/stdout until it closes stdin.

    stdout carries only protocol frames: unless ``frames`` (the protocol's output,
    from :func:`claim_stdout`) is given, this claims stdout first, so anything else
    printed in this process goes to stderr.
    """
    agent = AwakenAcpAgent(runtime, agent_id)
    writer, reader = await stdio_streams(frames if frames is not None else claim_stdout())
    # acp.Agent lists every method of the protocol; acp answers the ones this agent leaves
    # out (session/list, modes, config options) with "method not found".
    await run_agent(cast(Agent, agent), writer, reader)
