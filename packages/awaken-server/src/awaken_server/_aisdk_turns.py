"""The AI SDK's user turns: a new message (with the history policy) and a regenerate.

A regenerate (``trigger: "regenerate-message"``) answers the chat's last user
turn again on a new revision of the chat: a thread holding everything before
the withdrawn answer. The old thread keeps that answer and stays listed in the
chat's revisions (``GET /v1/threads/{id}``), so nothing is destroyed.
"""

from __future__ import annotations

from typing import Any

from awaken_runtime import Message

from ._history import missing_turns, ui_text, ui_to_messages
from ._hub import LiveRun
from ._keys import Principal
from ._problems import Problem
from ._service import Service

__all__ = ["new_turn", "regenerate", "user_turn"]


def _new_text(messages: list[dict[str, Any]]) -> str:
    text = ui_text(messages[-1])
    if not text:
        raise Problem(
            422,
            "invalid-request",
            "the last user message has no text part",
            field="/messages/-1/parts",
            fix="send a text part",
        )
    return text


async def user_turn(
    service: Service,
    principal: Principal,
    agent_id: str,
    chat_key: str,
    messages: list[dict[str, Any]],
) -> LiveRun:
    """Run the chat on the client's new user message (``messages[-1]``)."""
    return await new_turn(
        service, principal, agent_id, chat_key, _new_text(messages), messages[:-1]
    )


async def new_turn(
    service: Service,
    principal: Principal,
    agent_id: str,
    chat_key: str,
    text: str,
    prior: list[dict[str, Any]],
) -> LiveRun:
    """Run the chat on ``text``, after the client's history ``prior`` (UI messages), under
    the server's history policy."""
    if service.history == "client":
        # The client's list is authoritative: a revision holding exactly that list.
        seeded = [*ui_to_messages(prior), Message.user(text)]
        return await service.fork(principal, chat_key, agent_id, seeded)
    thread_id = await service.chat_thread(chat_key)
    new = [Message.user(text)]
    if prior:  # a client that sends only its new message leaves the history to the server
        snap = await service.snapshot(thread_id, principal.profile_id)
        first = missing_turns(prior, snap.messages)
        if first is not None:
            new = [*ui_to_messages(prior[first:], first), *new]
    return await service.start_run(principal, agent_id=agent_id, thread_id=thread_id, messages=new)


def _nothing(chat_id: str, why: str) -> Problem:
    return Problem(
        409,
        "nothing-to-regenerate",
        f"chat {chat_id!r} {why}",
        field="/trigger",
        fix="send trigger 'submit-message' with a user message",
    )


async def regenerate(
    service: Service,
    principal: Principal,
    agent_id: str,
    chat_key: str,
    chat_id: str,
    messages: list[dict[str, Any]],
) -> LiveRun:
    """Answer the chat's last user turn again, on a new revision of the chat."""
    if not await service.owns_thread(chat_key, principal):
        raise _nothing(chat_id, "has no user message to answer again")
    thread_id = await service.chat_thread(chat_key)
    snap = await service.snapshot(thread_id, principal.profile_id)
    turns = [i for i, m in enumerate(snap.messages) if m.role == "user"]
    if not turns:
        raise _nothing(chat_id, "has no user message to answer again")
    if snap.parked is not None:
        raise Problem(
            409,
            "thread-busy",
            f"chat {chat_id!r} has a run waiting for decisions",
            field="/trigger",
            fix="answer or cancel the pending approvals first",
        )
    last = snap.messages[turns[-1]]
    sent = messages[-1]
    if sent.get("role") == "user" and ui_text(sent) != last.text:
        raise Problem(
            409,
            "history-diverged",
            f"the chat's last user turn is {last.text[:60]!r}, the client regenerates "
            f"{ui_text(sent)[:60]!r}",
            field="/messages/-1",
            fix="reload the chat's messages (GET /v1/threads/{thread_id}) and regenerate again",
        )
    return await service.fork(principal, chat_key, agent_id, list(snap.messages[: turns[-1] + 1]))
