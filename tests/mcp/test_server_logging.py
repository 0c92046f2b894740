"""The ``logging`` capability of ``awaken mcp serve``: a call's records reach its client only."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import mcp_types as types
import pytest

from awaken_ext_permissions import PermissionsPlugin
from awaken_mcp import build_server
from awaken_runtime import AgentConfig, AgentRuntimeBuilder, ModelSpec, ScriptedExecutor, tool
from mcp import Client

log = logging.getLogger("chatty")


@tool
async def chatty(word: str) -> str:
    """Log about ``word`` at three levels, yielding in between.

    Args:
        word: What to log about.
    """
    log.setLevel(logging.DEBUG)
    for level in (logging.DEBUG, logging.INFO, logging.WARNING):
        log.log(level, "%s at %s", word, logging.getLevelName(level))
        await asyncio.sleep(0.01)
    return word


def server(forward_logs: bool) -> Any:
    runtime = (
        AgentRuntimeBuilder(discover=False)
        .with_plugin(PermissionsPlugin())
        .with_tool(chatty)
        .with_model(ModelSpec(id="m", provider="s", model="m"))
        .with_provider("s", ScriptedExecutor(["unused"], repeat=True))
        .with_agent_spec(
            AgentConfig(
                id="a",
                model_binding="m",
                tool_ids=["chatty"],
                plugin_ids=["permissions"],
                plugin_config={"permissions": {"default": "allow"}},
            )
        )
        .build()
    )
    return build_server(runtime, ["a"], forward_logs=forward_logs)


class Seen:
    def __init__(self) -> None:
        self.records: list[types.LoggingMessageNotificationParams] = []

    async def __call__(self, params: types.LoggingMessageNotificationParams) -> None:
        self.records.append(params)


async def test_logging_is_advertised_only_when_on() -> None:
    async with Client(server(False), mode="legacy") as off:
        assert off.server_capabilities.logging is None
    async with Client(server(True), mode="legacy") as on:
        assert on.server_capabilities.logging is not None


@pytest.mark.filterwarnings("ignore:The logging capability is deprecated")
async def test_each_call_gets_its_own_records_at_its_level() -> None:
    mcp = server(True)
    first, second = Seen(), Seen()
    async with (
        Client(mcp, mode="legacy", logging_callback=first) as one,
        Client(mcp, mode="legacy", logging_callback=second) as two,
    ):
        await two.set_logging_level("warning")
        await asyncio.gather(
            one.call_tool("chatty", {"word": "one"}), two.call_tool("chatty", {"word": "two"})
        )
    mine = [r.data["message"] for r in first.records if r.logger == "chatty"]
    assert mine == ["one at INFO", "one at WARNING"]  # the default level is info
    theirs = [r.data["message"] for r in second.records if r.logger == "chatty"]
    assert theirs == ["two at WARNING"]
    assert {r.level for r in first.records if r.logger == "chatty"} == {"info", "warning"}
