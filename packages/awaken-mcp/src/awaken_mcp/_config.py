"""How an agent or a builder declares MCP servers: ``McpServerConfig`` and ``McpConfig``."""

from __future__ import annotations

from fnmatch import fnmatchcase
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = ["McpConfig", "McpServerConfig"]


class McpServerConfig(BaseModel):
    """One MCP server: how to reach it, which of its tools to offer, how long to wait.

    ``transport="stdio"`` starts ``command`` with ``args`` (``env`` is added to
    the environment the SDK passes on, ``cwd`` is its folder); ``"http"`` talks
    streamable HTTP to ``url`` with ``headers`` (e.g. ``Authorization``).
    ``allow`` and ``deny`` are globs on the server's own tool names: a tool is
    offered when it matches an ``allow`` pattern (default ``*``) and no ``deny``
    one. ``timeout`` bounds one tool call, in seconds.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")
    id: str = Field(pattern=r"^[A-Za-z0-9_-]{1,32}$")
    """Namespace of the server's tools (``<id>__<tool>``)."""
    transport: Literal["stdio", "http"]
    command: str | None = None
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    allow: list[str] = Field(default_factory=lambda: ["*"])
    deny: list[str] = Field(default_factory=list)
    timeout: float = Field(default=60.0, gt=0)
    connect_timeout: float = Field(default=30.0, gt=0)
    """How long starting the server and listing its tools may take, in seconds."""
    max_result_bytes: int = Field(default=16 * 1024 * 1024, ge=1024)
    """stdio: the largest message (one line) taken from the server; a larger tool
    result is refused with an error the model reads, and the connection goes on."""
    stop_grace: float = Field(default=2.0, gt=0, le=60)
    """stdio: seconds a server gets to exit after its stdin closes, then after SIGTERM,
    before SIGKILL."""
    elicit_timeout: float = Field(default=600.0, gt=0)
    """How long a call stays open while its server waits for the user's answer
    (handshake era); then the question is answered ``cancel``."""
    protocol: Literal["auto", "handshake"] = "auto"
    """``auto`` lets the SDK pick (2026-07-28 when the server speaks it, else the
    handshake era); ``handshake`` always uses the ``initialize`` handshake, which
    stock ``ctx.elicit`` tools need (see the README). An ``auto`` connection whose
    tool asked that way switches to ``handshake`` and calls again once."""

    @model_validator(mode="after")
    def _transport_fields(self) -> McpServerConfig:
        if self.transport == "stdio":
            if not self.command:
                raise ValueError(f"MCP server {self.id!r} uses stdio: set `command` (and `args`)")
            if self.url or self.headers:
                raise ValueError(f"MCP server {self.id!r} uses stdio: `url`/`headers` are for http")
        else:
            if not self.url or not self.url.startswith(("http://", "https://")):
                raise ValueError(
                    f"MCP server {self.id!r} uses http: set `url` to its http(s):// endpoint"
                )
            if self.command or self.args or self.env or self.cwd:
                raise ValueError(
                    f"MCP server {self.id!r} uses http: `command`/`args`/`env`/`cwd` are for stdio"
                )
        return self

    def offers(self, tool_name: str) -> bool:
        """Whether the allow/deny filter lets ``tool_name`` through (case-sensitive globs)."""
        return any(fnmatchcase(tool_name, p) for p in self.allow) and not any(
            fnmatchcase(tool_name, p) for p in self.deny
        )


class McpConfig(BaseModel):
    """The ``mcp`` plugin's config in an agent file: ``plugin_config.mcp.servers``."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    servers: list[McpServerConfig] = Field(default_factory=list)

    @model_validator(mode="after")
    def _unique(self) -> McpConfig:
        seen: set[str] = set()
        for server in self.servers:
            if server.id in seen:
                raise ValueError(f"MCP server id {server.id!r} appears twice; ids must be unique")
            seen.add(server.id)
        return self
