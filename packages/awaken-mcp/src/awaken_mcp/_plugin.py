"""The ``mcp`` plugin: the tools of configured MCP servers, for the agents that enable it.

An agent enables it with ``plugin_ids = ["mcp"]`` and lists servers under
``plugin_config.mcp.servers``; a builder may register ``McpPlugin(servers=[...])``
instead (it replaces the discovered one), whose servers every agent that
enables ``mcp`` gets in addition to its own. The tools come from the
runtime's ``ToolCatalog`` hook: listed before each run from a cache that a
server's change notification clears, so they are in the agent's snapshot
and fingerprint. Connections are per runtime (the ``owner``), shared by its
runs, opened at the first run that needs them and closed by
``Runtime.aclose()``.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from awaken_runtime import (
    AgentConfigError,
    CapabilityBound,
    Contributions,
    PluginManifest,
    Tool,
)

from ._config import McpConfig, McpServerConfig

if TYPE_CHECKING:
    # The MCP SDK loads with the first connection: discovery registers this plugin in
    # every runtime, and most agents never enable it.
    import mcp_types as types

    from ._connection import McpConnection
    from ._tool import McpTool

__all__ = ["PLUGIN_ID", "McpPlugin"]

PLUGIN_ID = "mcp"

_MANIFEST = PluginManifest(
    id=PLUGIN_ID,
    version="0.1.0",
    description="tools of MCP servers (stdio or streamable HTTP), namespaced <server>__<tool>",
    config_model=McpConfig,
    bound=CapabilityBound(dynamic_tools=True),
)


def _key(config: McpServerConfig) -> str:
    return config.model_dump_json()


class McpPlugin:
    """MCP servers as a tool source (``ToolCatalog``), with connections per runtime."""

    def __init__(self, servers: Iterable[McpServerConfig | dict[str, Any]] = ()) -> None:
        self.servers = McpConfig.model_validate({"servers": list(servers)}).servers
        # By id, with a finalizer: a runtime dropped without aclose() (awaken serve
        # builds a new one per publish) must not leave its server processes behind.
        self._pools: dict[int, dict[str, McpConnection]] = {}
        # Per connection: the listing last wrapped, and its tools (a run whose
        # listing did not change reuses them, and resolves to the same snapshot).
        self._tools: weakref.WeakKeyDictionary[
            McpConnection, tuple[list[types.Tool], list[McpTool]]
        ] = weakref.WeakKeyDictionary()

    @property
    def manifest(self) -> PluginManifest:
        """Id ``mcp``; config :class:`McpConfig`; may contribute dynamic (catalog) tools."""
        return _MANIFEST

    def resolve(self, config: McpConfig | None) -> Contributions:
        """Nothing static: the tools come from :meth:`catalog`."""
        return Contributions()

    def servers_for(self, config: McpConfig | None) -> list[McpServerConfig]:
        """The builder's servers plus the agent's; an id declared by both is an error."""
        own = list(config.servers) if config is not None else []
        mine = {s.id for s in self.servers}
        clash = sorted(mine & {s.id for s in own})
        if clash:
            raise AgentConfigError(
                f"MCP server id {clash[0]!r} is declared by the builder and by the agent's "
                f"plugin_config.mcp; rename one of them"
            )
        return [*self.servers, *own]

    def connection(self, owner: object, server: McpServerConfig) -> McpConnection:
        """The owner's connection to ``server`` (created, not started, on first use)."""
        pool = self._pools.get(id(owner))
        if pool is None:
            pool = self._pools[id(owner)] = {}
            weakref.finalize(owner, self._orphaned, id(owner))
        key = _key(server)
        found = pool.get(key)
        if found is None:
            from ._connection import McpConnection

            found = pool[key] = McpConnection(server)
        return found

    def connections(self, owner: object) -> list[McpConnection]:
        """Every connection the owner has made so far (for listings)."""
        return list(self._pools.get(id(owner), {}).values())

    async def catalog(self, config: McpConfig | None, owner: object) -> Sequence[Tool]:
        """The filtered tools of every server the agent uses, listing where stale."""
        out: list[Tool] = []
        for server in self.servers_for(config):
            conn = self.connection(owner, server)
            listed = await conn.list_tools()
            known = self._tools.get(conn)
            if known is None or known[0] is not listed:
                known = self._tools[conn] = (listed, self._wrap(conn, listed, known))
            out.extend(known[1])
        return out

    @staticmethod
    def _wrap(
        conn: McpConnection,
        listed: list[types.Tool],
        before: tuple[list[types.Tool], list[McpTool]] | None,
    ) -> list[McpTool]:
        from ._tool import McpTool

        old = {t.name: t for t in before[1]} if before is not None else {}
        out: list[McpTool] = []
        for spec in listed:
            if not conn.config.offers(spec.name):
                continue
            tool = McpTool(conn, spec)
            same = old.get(spec.name)
            # An unchanged descriptor keeps its object: the catalog stays the same.
            out.append(same if same is not None and same.descriptor == tool.descriptor else tool)
        return out

    async def release(self, owner: object) -> None:
        """Close the owner's connections (stdio servers exit)."""
        pool = self._pools.pop(id(owner), {})
        for conn in pool.values():
            await conn.aclose()

    def _orphaned(self, owner_id: int) -> None:
        for conn in self._pools.pop(owner_id, {}).values():
            conn.close_soon()
