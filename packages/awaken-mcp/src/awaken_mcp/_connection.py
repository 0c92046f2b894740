"""One MCP server for one runtime: a lazy, shared, restartable connection.

The SDK's ``Client`` must be entered and left in one task (its transports
hold anyio task groups), so each connection lives in a runner task of its
own that opens the client, then waits until it is closed or dies. Runs call
through it from their own tasks. A call whose transport breaks (the server
process exited, the HTTP peer went away) ends the connection; the next call
or listing starts a new one. Tool-list changes arrive as the handshake-era
``notifications/tools/list_changed`` or, on 2026-07-28 connections, as a
``subscriptions/listen`` event; either marks the listing stale, and the next
run lists again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from typing import Any

import anyio
import httpx2
import mcp_types as types
from mcp.client.streamable_http import streamable_http_client
from mcp.client.subscriptions import ListenNotSupportedError

from awaken_runtime import AwakenError, ToolOutput
from mcp import Client, MCPError

from ._config import McpServerConfig
from ._elicit import ask, held_form, suspend_for
from ._held import Backchannel, HeldCall
from ._results import to_output
from ._stdio import RESULT_TOO_LARGE, ServerProcess

__all__ = ["McpConnection", "McpUnavailable"]

log = logging.getLogger("awaken_mcp")

_MAX_ROUNDS = 8


class McpUnavailable(AwakenError):
    """An MCP server could not be started or listed (names the server and the fix)."""


def _describe(config: McpServerConfig) -> str:
    if config.transport == "stdio":
        return " ".join([config.command or "", *config.args])
    return config.url or ""


def _is_list_changed(message: Any) -> bool:
    return isinstance(message, types.ToolListChangedNotification)


def _leaf(exc: BaseException) -> BaseException:
    """The first real error inside (nested) exception groups: what the user needs to see."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


async def _cancel_when(event: anyio.Event, scope: anyio.CancelScope) -> None:
    await event.wait()
    scope.cancel()


def _needs_backchannel(exc: MCPError) -> bool:
    """The server's tool asked (``ctx.elicit``) on a 2026-07-28 connection, which has no way to."""
    return exc.code == types.INVALID_REQUEST and "no back-channel" in str(exc)


class McpConnection:
    """The connection, tool listing and status of one configured server."""

    def __init__(self, config: McpServerConfig) -> None:
        self.config = config
        self.status = "not started"
        """``not started``, ``connected``, ``crashed: ...``, ``failed: ...`` or ``closed``."""
        self.restarts = 0
        self.changes = 0
        """How many tool-list changes the server announced."""
        self.tools: list[types.Tool] | None = None
        """The server's tools as last listed (before the allow/deny filter)."""
        self._client: Client | None = None
        self._runner: asyncio.Task[None] | None = None
        self._stop: asyncio.Event | None = None
        self._lock = asyncio.Lock()
        self._stale = True
        self._closed = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._process: ServerProcess | None = None
        self._handshake = config.protocol == "handshake"
        self.held = Backchannel(config.id, config.elicit_timeout)
        """The calls in flight, each held open while its server waits for an answer."""

    # -- lifecycle ---------------------------------------------------------------

    def _make_client(self, stack: contextlib.AsyncExitStack) -> Client:
        c = self.config
        mode = "legacy" if self._handshake else "auto"
        if c.transport == "stdio":
            process = self._process = ServerProcess(c)
            transport: Any = process.open()
        else:
            http = httpx2.AsyncClient(headers=c.headers, timeout=httpx2.Timeout(30.0, read=300.0))
            stack.push_async_callback(http.aclose)  # the transport leaves a given client open
            transport = streamable_http_client(c.url or "", http_client=http)
        return Client(
            transport,
            mode=mode,
            message_handler=self._on_message,
            elicitation_callback=self.held.on_elicit,
        )

    async def _on_message(self, message: Any) -> None:
        if _is_list_changed(message):
            self._changed()

    def _changed(self) -> None:
        self._stale = True
        self.changes += 1

    async def _run(self, ready: asyncio.Future[Client], stop: asyncio.Event) -> None:
        opened: Client | None = None
        try:
            async with (
                contextlib.AsyncExitStack() as stack,
                self._make_client(stack) as client,
                anyio.create_task_group() as tg,
            ):
                opened = client
                if not ready.done():
                    ready.set_result(client)
                tg.start_soon(self._listen, client)
                if self._process is not None:
                    # A server that dies between calls ends the connection now, not
                    # at the next call (which would be lost on the dead client).
                    tg.start_soon(_cancel_when, self._process.ended, tg.cancel_scope)
                await stop.wait()
                tg.cancel_scope.cancel()
        except BaseException as exc:  # the runner must record every end, then stop quietly
            if not ready.done():
                ready.set_exception(exc if isinstance(exc, Exception) else RuntimeError(str(exc)))
            elif not stop.is_set():
                log.warning("MCP server %r: connection ended: %r", self.config.id, exc)
            if isinstance(exc, asyncio.CancelledError):
                raise
        finally:
            # Only this runner's client: a newer connection may already be up.
            if opened is not None and self._client is opened:
                self._client = None
                if not stop.is_set():  # it ended on its own: the server went away
                    self.status = "crashed: the connection ended"

    async def _listen(self, client: Client) -> None:
        caps = client.server_capabilities.tools
        if caps is None or not caps.list_changed:
            return
        try:
            async with client.listen(tools_list_changed=True) as sub:
                async for _event in sub:
                    self._changed()
        except ListenNotSupportedError:
            return  # a handshake-era connection: notifications reach _on_message
        except Exception as exc:  # a lost subscription: list afresh at the next run
            log.info("MCP server %r: change subscription ended: %r", self.config.id, exc)
            self._stale = True

    async def _connected(self) -> Client:
        client = self._client
        if client is not None:
            return client
        async with self._lock:
            if self._client is not None:
                return self._client
            if self._closed:
                raise McpUnavailable(f"MCP server {self.config.id!r} is closed (runtime shut down)")
            if self.status.startswith("crashed"):
                self.restarts += 1
            loop = self._loop = asyncio.get_running_loop()
            ready: asyncio.Future[Client] = loop.create_future()
            stop = asyncio.Event()
            self._stop = stop
            self._runner = loop.create_task(self._run(ready, stop), name=f"mcp:{self.config.id}")
            try:
                client = await asyncio.wait_for(
                    asyncio.shield(ready), timeout=self.config.connect_timeout
                )
            except Exception as exc:
                cause = await self._failure(exc)
                await self._end(f"failed: {cause}")
                raise McpUnavailable(
                    f"MCP server {self.config.id!r} ({self.config.transport}: "
                    f"{_describe(self.config)}) did not start: {cause}; "
                    f"check the command or url and that it speaks MCP"
                ) from None
            except BaseException:  # cancelled while starting: stop the runner, leave no orphan
                stop.set()
                self._runner = self._stop = None
                self.status = "not started"
                raise
            self._client = client
            self._stale = True
            self.status = "connected"
            return client

    async def _failure(self, exc: BaseException) -> str:
        """Why a start or a call failed: the error, and how the server process ended."""
        leaf = _leaf(exc)
        if isinstance(leaf, TimeoutError):
            text = f"no answer within {self.config.connect_timeout:g} s"
        else:
            text = f"{type(leaf).__name__}: {leaf}" if str(leaf) else type(leaf).__name__
        process = self._process
        if process is not None:
            await process.settle(0.5 if process.fault is None else 0.0)
            ended = process.describe()
            if ended:
                text = f"{text}; {ended}"
        return text

    async def _end(self, status: str) -> None:
        runner, stop = self._runner, self._stop
        self._runner = self._stop = None
        self._client = None
        self.status = status
        if stop is not None:
            stop.set()
        if runner is not None and runner is not asyncio.current_task():
            # wait(), not wait_for(): the runner's own end (even a cancellation) must not
            # raise here, while a cancellation of this task still does. A runner still
            # starting (a server that never answers the handshake) never sees `stop`:
            # it is cancelled, and the transport ends the process on the way out.
            grace = 3 * self.config.stop_grace + 5
            await asyncio.wait({runner}, timeout=grace if status == "closed" else 0.5)
            if not runner.done():
                runner.cancel()
                await asyncio.wait({runner}, timeout=grace)

    async def aclose(self) -> None:
        """Close the connection and end its server process (held calls are cancelled)."""
        self._closed = True
        self.held.cancel_all()
        await self._end("closed")

    def close_soon(self) -> None:
        """Close from anywhere (a finalizer, another thread) on the connection's own loop."""
        self._closed = True
        loop, stop = self._loop, self._stop
        if loop is not None and stop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(stop.set)  # the runner leaves the client and exits

    # -- listing and calling -----------------------------------------------------

    async def list_tools(self) -> list[types.Tool]:
        """The server's tools; listed again only after a change or a new connection."""
        client = await self._connected()
        if self.tools is not None and not self._stale:
            return self.tools
        self._stale = False  # cleared first: a change announced while listing lists again
        try:
            with anyio.fail_after(self.config.connect_timeout):
                tools: list[types.Tool] = []
                cursor: str | None = None
                while True:
                    page = await client.list_tools(cursor=cursor, cache_mode="refresh")
                    tools.extend(page.tools)
                    cursor = page.next_cursor
                    if cursor is None:
                        break
        except Exception as exc:
            self._stale = True
            await self._end(f"failed: listing tools: {type(exc).__name__}: {exc}")
            raise McpUnavailable(
                f"MCP server {self.config.id!r} did not list its tools: {type(exc).__name__}: {exc}"
            ) from None
        self.tools = tools
        return tools

    async def call(
        self, name: str, arguments: dict[str, Any], answer: Any = None, key: str | None = None
    ) -> ToolOutput:
        """Call ``name``; every failure but cancellation is a model-visible error.

        A server that asks for input suspends the call: ``SuspendCall(UserInput)``
        with the server's form as payload, whether it asked with an
        ``InputRequiredResult`` (2026-07-28: nothing stays open) or with
        ``elicitation/create`` on an open call (handshake era: the call is held,
        ``_held``). ``answer`` is the human's reply when the tool runs again under
        the same ``key`` (``ToolCallContext.idempotency_key``): it goes back on the
        held call, or the call is made anew and the same question answered with it.
        """
        key = key or uuid.uuid4().hex
        held = self.held.calls.get(key)
        if held is not None and held.answer is not None and answer is not None:
            self.held.give(held, answer)
        elif held is None:
            try:
                client = await self._connected()
            except McpUnavailable as exc:
                return ToolOutput.error(str(exc))
            work = self._rounds(client, name, arguments, answer)
            held = self.held.start(key, name, work, prefilled=answer, owner=client)
        try:
            result = await self._wait(held)
        except MCPError as exc:
            if _needs_backchannel(exc) and not self._handshake:
                # A stock ctx.elicit tool: only the handshake era lets the server ask.
                log.info("MCP server %r: switching to the handshake era", self.config.id)
                self._handshake = True
                await self._end("not started")
                if self.held.calls.get(key) is held:
                    del self.held.calls[key]
                return await self.call(name, arguments, answer, key)
            return await self._refused(name, exc, held)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError) as exc:
            return await self._crashed(name, exc, held)
        except ValueError as exc:  # input awaken cannot give (sampling, roots)
            return ToolOutput.error(str(exc))
        return to_output(result)

    async def _wait(self, held: HeldCall) -> types.CallToolResult:
        """The call's result; raises ``SuspendCall`` while its server waits for an answer.

        ``timeout`` counts the server's time only: not the time a question waits
        for a human (that is ``elicit_timeout``, on the held call).
        """
        loop = asyncio.get_running_loop()
        remaining = self.config.timeout
        while True:
            asked = loop.create_task(held.asked.wait())
            started = loop.time()
            try:
                done, _ = await asyncio.wait(
                    {held.task, asked}, timeout=remaining, return_when=asyncio.FIRST_COMPLETED
                )
            except BaseException:  # cancelled: the request is cancelled on the server too
                if held.question is None:
                    held.task.cancel()
                raise
            finally:
                asked.cancel()
            if held.task in done:
                if held.task.cancelled():  # by aclose(), not by this caller
                    raise anyio.ClosedResourceError("the connection was closed")
                return held.task.result()
            if held.question is not None:
                raise suspend_for(self.config.id, held.tool, held_form(held.question))
            remaining -= loop.time() - started
            if remaining <= 0:
                held.task.cancel()  # the SDK sends the cancellation to the server
                raise MCPError(code=types.REQUEST_TIMEOUT, message="timed out")

    async def _rounds(
        self, client: Client, name: str, arguments: dict[str, Any], answer: Any
    ) -> types.CallToolResult:
        responses: types.InputResponses | None = None
        state: str | None = None
        for _ in range(_MAX_ROUNDS):
            result = await client.session.call_tool(
                name,
                arguments,
                input_responses=responses,
                request_state=state,
                allow_input_required=True,
            )
            if not isinstance(result, types.InputRequiredResult):
                return result
            state = result.request_state
            responses, answer = ask(self.config.id, name, result, answer)
            if responses is None:
                await asyncio.sleep(0.05)  # state only: the server is still working
        raise MCPError(code=types.INTERNAL_ERROR, message=f"more than {_MAX_ROUNDS} input rounds")

    async def _refused(self, name: str, exc: MCPError, held: HeldCall) -> ToolOutput:
        server = self.config.id
        if exc.code == types.REQUEST_TIMEOUT:
            return ToolOutput.error(
                f"MCP tool {name!r} on server {server!r} timed out after "
                f"{self.config.timeout:g} s (it was asked to stop)"
            )
        if exc.code == RESULT_TOO_LARGE:
            return ToolOutput.error(
                f"MCP tool {name!r} on server {server!r} returned too much: {exc}; the result "
                f"was dropped (raise the server's `max_result_bytes` to accept it)"
            )
        if exc.code == types.CONNECTION_CLOSED:
            return await self._crashed(name, exc, held)
        if exc.code == types.HEADER_MISMATCH:
            self._changed()  # its tools changed under us: the next run lists again
        return ToolOutput.error(f"MCP server {server!r} rejected the call to {name!r}: {exc}")

    async def _crashed(self, name: str, exc: BaseException, held: HeldCall) -> ToolOutput:
        cause = await self._failure(exc)
        if self._client is None or self._client is held.owner:  # not a newer connection
            await self._end(f"crashed: {cause}")
        return ToolOutput.error(
            f"MCP server {self.config.id!r} failed during the call to {name!r} "
            f"({cause}); the call's outcome is unknown. The server is "
            f"restarted for the next call"
        )
