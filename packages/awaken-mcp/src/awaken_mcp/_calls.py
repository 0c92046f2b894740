"""``tools/call`` over MCP: direct tools and agents, with their gates and their tickets.

Both kinds are runs (a direct tool's run has its one turn given, see
``_direct``), so a call may park on a ticket. What happens then depends on
what the client can do:

- **It can be asked now** (stdio, or session-ful HTTP: a back-channel; and it
  declared the ``elicitation`` capability): each ticket becomes an
  ``elicitation/create`` form (``_asking``), the answers resume the run, and
  the loop goes on until the run ends, all inside this one ``tools/call``.
- **A 2026-07-28 client that elicits**: the call answers ``InputRequiredResult``
  with the forms and a signed ``request_state`` (``_request_state``); the
  client's retry of the same call carries the answers and resumes the run.
- **Neither**: a direct tool's run is cancelled and the refusal says how to
  enable asking; an agent's run stays parked and the error names the thread,
  the run, the ticket(s) and the REST route that answers them
  (``POST /v1/runs/{run_id}/resume`` of ``awaken serve`` on the same store and
  keys: MCP-created agent threads are owned by the key's profile as REST's are).

Errors never escape as JSON-RPC errors with code 0 (what the SDK sends for an
uncaught exception): awaken's own errors are tool errors the client reads,
anything else is an ``INTERNAL_ERROR`` with the details in the server's log.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass
from typing import Any

import mcp_types as types
from mcp.shared.exceptions import MCPError, NoBackChannelError
from pydantic import ValidationError

from awaken_runtime import (
    AwakenError,
    Decision,
    Message,
    Phase,
    ResumeRejected,
    ResumeTicket,
    RunState,
    Runtime,
    ScopeBinding,
    ToolCall,
    ToolOutput,
)

from ._asking import Form, decide, forms
from ._content import to_result
from ._direct import DirectCall, given, new_call_id, new_ids, run_direct
from ._policy_view import denied_by
from ._request_state import BadState, Pending, open_state, seal_state

__all__ = ["Caller", "Calls", "error"]

log = logging.getLogger("awaken_mcp")

MAX_ROUNDS = 32
"""Tickets answered in one ``tools/call`` before it gives up (a run that keeps asking)."""


def error(text: str) -> types.CallToolResult:
    """A tool error the client reads."""
    return to_result(ToolOutput.error(text))


@dataclass(frozen=True)
class Caller:
    """Who calls and what their connection can do."""

    profile: str
    session: Any = None
    """The SDK's ``ServerSession`` of this request (for ``elicitation/create``)."""
    request_id: Any = None
    can_request: bool = False
    """The connection has a back-channel (stdio, session-ful HTTP)."""
    elicits: bool = False
    """The client declared form elicitation."""
    modern: bool = False
    """A 2026-07-28 connection (asked through ``InputRequiredResult``)."""

    @property
    def by(self) -> str:
        """Who decided, for audit trails."""
        return f"mcp:profile:{self.profile}"


@dataclass(frozen=True)
class Target:
    """What a served tool name runs: a direct tool of an agent, or the agent itself."""

    agent: str
    tool: str | None
    """The tool id for a direct tool; ``None`` for an agent-as-tool."""


class Calls:
    """Serves ``tools/call`` for one MCP server."""

    def __init__(
        self,
        runtime: Runtime,
        targets: dict[str, Target],
        ungated: dict[str, Any],
        owners: Any,
        secret: bytes,
    ) -> None:
        self.runtime = runtime
        self.targets = targets
        self.ungated = ungated
        """Tools served without any agent's gates (``--tools-ungated``): name -> tool."""
        self.owners = owners
        self.secret = secret

    async def call(self, caller: Caller, params: types.CallToolRequestParams) -> Any:
        """The result of one ``tools/call`` (never raises but ``MCPError``)."""
        try:
            return await self._call(caller, params)
        except MCPError:
            raise
        except (AwakenError, BadState) as exc:
            return error(str(exc))
        except Exception as exc:
            log.exception("tools/call %r failed", params.name)
            raise MCPError(
                types.INTERNAL_ERROR,
                f"internal error in tool {params.name!r} ({type(exc).__name__}); "
                f"the server's log has the details",
            ) from None

    async def _call(self, caller: Caller, params: types.CallToolRequestParams) -> Any:
        name, args = params.name, dict(params.arguments or {})
        if params.request_state is not None:
            pending = open_state(
                params.request_state, self.secret, tool=name, profile=caller.profile
            )
            return await self._answered(caller, pending, params.input_responses or {})
        if name in self.ungated:
            from ._ungated import call_ungated

            return await call_ungated(self.ungated[name], name, args)
        target = self.targets.get(name)
        if target is None:
            return error(f"unknown tool {name!r}; tools/list names the tools this server offers")
        if target.tool is not None:
            return await self._direct(caller, name, target, args)
        return await self._agent(caller, name, target, args)

    # -- starting ------------------------------------------------------------------

    async def _direct(self, caller: Caller, name: str, target: Target, args: dict[str, Any]) -> Any:
        assert target.tool is not None
        direct = DirectCall(ToolCall(id=new_call_id(), name=target.tool, arguments=args))
        thread, run = new_ids()
        state = await run_direct(
            self.runtime, target.agent, direct, profile=caller.profile, thread_id=thread, run_id=run
        )
        return await self._settle(caller, name, target, state, direct)

    async def _agent(self, caller: Caller, name: str, target: Target, args: dict[str, Any]) -> Any:
        prompt, thread = args.get("prompt"), args.get("thread_id")
        if not isinstance(prompt, str) or not prompt.strip():
            return error("`prompt` must be a non-empty string")
        if thread is not None and not isinstance(thread, str):
            return error("`thread_id` must be a string")
        if thread is None:
            thread = new_ids()[0]
            await self.owners.add_thread(thread, caller.profile, target.agent)
        elif not await self.owners.owns_thread(thread, caller.profile):
            # Another profile's thread and one that never existed get the same words.
            return error(f"thread {thread!r} does not exist")
        run = new_ids()[1]
        await self.owners.add_run(run, thread, caller.profile, target.agent)
        state = await self.runtime.run(
            target.agent, prompt, thread_id=thread, run_id=run, profile_id=caller.profile
        )
        return await self._settle(caller, name, target, state, None)

    # -- parked runs -------------------------------------------------------------------

    async def _settle(
        self,
        caller: Caller,
        name: str,
        target: Target,
        state: RunState,
        direct: DirectCall | None,
    ) -> Any:
        """Ask for every ticket the run parks on until it ends; or hand them to the client.

        A direct tool's run never outlives its call parked (but for a 2026-07-28 client,
        whose retry answers it): a call that fails or is cancelled while it waits
        cancels the run, so nothing is left that a later answer could start.
        """
        handed_over = False
        try:
            for _ in range(MAX_ROUNDS):
                if state.phase is not Phase.WAITING:
                    return _outcome(self.runtime, state, target, direct)
                asked = [(t, forms(t, target.agent)) for t in state.tickets]
                askable = all(f for _, f in asked)
                if askable and caller.elicits and caller.can_request:
                    try:
                        decisions = [(t, await self._ask(caller, t, f)) for t, f in asked]
                    except (MCPError, ValidationError, NoBackChannelError) as exc:
                        why = f"the client did not answer the elicitation ({exc})"
                        return await self._cannot_ask(caller, target, state, direct, True, why)
                    state = await self._resume(decisions, direct)
                elif askable and caller.elicits and caller.modern:
                    handed_over = True
                    return _input_required(name, target, state, asked, caller, self.secret, direct)
                else:
                    return await self._cannot_ask(caller, target, state, direct, askable)
            return await self._cannot_ask(
                caller,
                target,
                state,
                direct,
                True,
                f"it asked for more than {MAX_ROUNDS} decisions in one call",
            )
        finally:
            if direct is not None and not handed_over and state.phase is Phase.WAITING:
                await self._drop(state.thread_id)

    async def _drop(self, thread_id: str) -> None:
        """Cancel a direct call's run if it still waits (shielded: also on cancellation)."""
        with contextlib.suppress(ResumeRejected):
            await asyncio.shield(self.runtime.cancel_waiting(thread_id))

    async def _ask(self, caller: Caller, ticket: ResumeTicket, asked: list[Form]) -> Decision:
        answers = []
        for form in asked:
            result = await caller.session.elicit_form(
                form.message, form.schema, related_request_id=caller.request_id
            )
            answers.append((form, result))
        return decide(ticket, answers, caller.by)

    async def _resume(
        self, decisions: list[tuple[ResumeTicket, Decision]], direct: DirectCall | None
    ) -> RunState:
        if direct is None:
            return await self.runtime.resume_many(decisions)
        with given(direct):
            return await self.runtime.resume_many(decisions)

    async def _answered(self, caller: Caller, pending: Pending, responses: dict[str, Any]) -> Any:
        """A 2026-07-28 retry: the answers to the forms an ``InputRequiredResult`` sent."""
        target = self.targets.get(pending.tool)
        if target is None or target.agent != pending.agent:
            raise BadState(f"tool {pending.tool!r} is not served here any more")
        snapshot = await self.runtime.store.load(
            ScopeBinding(pending.thread, pending.profile, "default")
        )
        parked = snapshot.parked
        tickets = {t.ticket_id: t for t in parked.tickets} if parked is not None else {}
        if parked is None or parked.run_id != pending.run:
            raise ResumeRejected(
                f"run {pending.run!r} on thread {pending.thread!r} is not waiting any more "
                f"(answered elsewhere, cancelled or finished)"
            )
        decisions: list[tuple[ResumeTicket, Decision]] = []
        for ticket_id in pending.tickets:
            ticket = tickets.get(ticket_id)
            if ticket is None:
                raise ResumeRejected(f"ticket {ticket_id!r} is not pending any more")
            asked = forms(ticket, target.agent)
            answers = []
            for form in asked:
                key = _input_key(ticket_id, form)
                result = responses.get(key)
                if not isinstance(result, types.ElicitResult):
                    raise MCPError(
                        types.INVALID_PARAMS,
                        f"input_responses has no elicitation answer for {key!r}; answer "
                        f"every input request of the InputRequiredResult",
                    )
                answers.append((form, result))
            decisions.append((ticket, decide(ticket, answers, caller.by)))
        direct = None
        if pending.direct:
            call = decisions[0][0].call
            direct = DirectCall(call, visible=True)
        state = await self._resume(decisions, direct)
        return await self._settle(caller, pending.tool, target, state, direct)

    async def _cannot_ask(
        self,
        caller: Caller,
        target: Target,
        state: RunState,
        direct: DirectCall | None,
        askable: bool,
        failed: str | None = None,
    ) -> types.CallToolResult:
        reasons = ", ".join(sorted({t.await_reason.value for t in state.tickets}))
        if direct is not None:  # _settle cancels its run on the way out
            why = "; ".join(
                str(t.payload.get("reason") or t.await_reason.value) for t in state.tickets
            )
            if failed is not None:
                how = failed
            elif not askable:
                how = "it cannot be asked over MCP; call it through the agent instead"
            elif not caller.elicits:
                how = (
                    "this client did not declare the `elicitation` capability (form mode); "
                    "connect with a client that does, and the call is shown to its user to "
                    "approve or deny"
                )
            else:
                how = (
                    "this connection cannot send requests to the client (stateless HTTP "
                    "before 2026-07-28); use stdio, `awaken mcp serve --http --sessions`, or "
                    "a 2026-07-28 client, and the call is shown to its user to approve or deny"
                )
            return error(
                f"tool {target.tool!r} needs a decision ({reasons}: {why}) that nobody can "
                f"give here: {how}. Nothing ran."
            )
        ids = ", ".join(repr(t.ticket_id) for t in state.tickets)
        cannot = failed or "this client cannot be asked (no elicitation here)"
        return error(
            f"agent {target.agent!r} is waiting for a decision ({reasons}) on thread "
            f"{state.thread_id!r}, run {state.run_id!r}, ticket(s) {ids}; {cannot}. Answer "
            f"through awaken's REST API with this key: POST /v1/runs/{state.run_id}/resume "
            f'with {{"decisions": [{{"ticket_id": "<ticket>", "decision": {{"kind": '
            f'"approve"}}}}]}} (GET /v1/runs/{state.run_id} shows the tickets), then call '
            f"{target.agent!r} again with thread_id {state.thread_id!r}."
        )


def _what(target: Target) -> str:
    return f"tool {target.tool!r}" if target.tool is not None else f"agent {target.agent!r}"


def _input_key(ticket_id: str, form: Form) -> str:
    return ticket_id if form.key is None else f"{ticket_id}:{form.key}"


def _input_required(
    name: str,
    target: Target,
    state: RunState,
    asked: list[tuple[ResumeTicket, list[Form]]],
    caller: Caller,
    secret: bytes,
    direct: DirectCall | None,
) -> types.InputRequiredResult:
    requests: dict[str, Any] = {}
    for ticket, ticket_forms in asked:
        for form in ticket_forms:
            requests[_input_key(ticket.ticket_id, form)] = types.ElicitRequest(
                params=form.request()
            )
    pending = Pending(
        tool=name,
        agent=target.agent,
        thread=state.thread_id,
        run=state.run_id,
        tickets=tuple(t.ticket_id for t, _ in asked),
        profile=caller.profile,
        direct=direct is not None,
    )
    return types.InputRequiredResult(
        input_requests=requests, request_state=seal_state(pending, secret)
    )


def _tool_message(state: RunState, call_id: str) -> Message | None:
    for message in reversed(state.new_messages):
        if message.role == "tool" and message.tool_call_id == call_id:
            return message
    return None


def _outcome(
    runtime: Runtime, state: RunState, target: Target, direct: DirectCall | None
) -> types.CallToolResult:
    failure = getattr(state.end_cause, "failure", None)
    if direct is None:
        if failure is not None:
            return error(f"agent {target.agent!r} failed: {failure}")
        return to_result(ToolOutput.ok(state.final_text or ""))
    message = _tool_message(state, direct.call.id)
    if message is None:
        cause = failure if failure is not None else type(state.end_cause).__name__
        return error(f"tool {target.tool!r} did not run: the run ended ({cause})")
    output = _as_output(message)
    if direct.visible is False and output.is_error:
        rule = denied_by(runtime, target.agent, direct.call.name, direct.call.arguments)
        why = f"its policy denies it: {rule}" if rule else "a plugin of the agent hides it"
        output = ToolOutput.error(
            f"Permission denied: agent {target.agent!r} does not offer tool {target.tool!r} "
            f"({why}). Nothing ran."
        )
    return to_result(output)


def _as_output(message: Message) -> ToolOutput:
    is_error = bool(message.metadata.get("is_error"))
    content = message.content
    if isinstance(content, list):
        text = content[0].text if content and content[0].type == "text" else ""
        parts = content[1:] if content and content[0].type == "text" else content
        return ToolOutput(content=text or "", parts=list(parts), is_error=is_error)
    return ToolOutput(content=content or "", is_error=is_error)
