"""Server declarations: typed errors that name the server and the fix; the allow/deny filter."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from awaken_mcp import McpConfig, McpPlugin, McpServerConfig
from awaken_runtime import AgentConfigError


def test_stdio_needs_a_command_and_http_a_url() -> None:
    with pytest.raises(ValidationError, match="'a' uses stdio: set `command`"):
        McpServerConfig(id="a", transport="stdio")
    with pytest.raises(ValidationError, match="'b' uses http: set `url`"):
        McpServerConfig(id="b", transport="http", url="ftp://x")
    with pytest.raises(ValidationError, match="`command`/`args`/`env`/`cwd` are for stdio"):
        McpServerConfig(id="c", transport="http", url="http://x/mcp", command="x")
    with pytest.raises(ValidationError, match="`url`/`headers` are for http"):
        McpServerConfig(id="d", transport="stdio", command="x", url="http://x")
    with pytest.raises(ValidationError, match="id"):
        McpServerConfig(id="has.dot", transport="stdio", command="x")
    with pytest.raises(ValidationError, match="transport"):
        McpServerConfig(id="e", transport="sse", command="x")  # type: ignore[arg-type]


def test_duplicate_ids_are_refused_in_a_config_and_across_builder_and_agent() -> None:
    one = {"id": "s", "transport": "stdio", "command": "x"}
    with pytest.raises(ValidationError, match="'s' appears twice"):
        McpConfig.model_validate({"servers": [one, one]})
    plugin = McpPlugin([one])
    with pytest.raises(AgentConfigError, match="'s' is declared by the builder and by the agent"):
        plugin.servers_for(McpConfig.model_validate({"servers": [one]}))


def test_allow_and_deny_globs() -> None:
    s = McpServerConfig(
        id="fs", transport="stdio", command="x", allow=["read_*", "list"], deny=["read_secret*"]
    )
    assert s.offers("read_file") and s.offers("list")
    assert not s.offers("read_secrets") and not s.offers("write_file")
    assert not s.offers("READ_file"), "globs are case-sensitive"
    assert McpServerConfig(id="all", transport="stdio", command="x").offers("anything")
