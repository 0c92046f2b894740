"""Inference alone: the request plugins shaped, streamed deltas, typed provider failures."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from awaken_runtime import (
    ContextMessage,
    InferenceResponse,
    Message,
    StreamDelta,
    ToolFilter,
    inject,
    tool,
)
from awaken_runtime.plugins._context import TOOL_FILTER
from awaken_runtime.run._signals import End
from awaken_runtime.state._engine import Command, MergePolicy, Scope, StagedCommand


@tool
def alpha() -> str:
    """A."""
    return "a"


@tool
def beta() -> str:
    """B."""
    return "b"


def test_plain_request_is_the_system_prompt_and_the_transcript(make_parts):
    run = make_parts(tools=[alpha, beta])
    run.leg.transcript.append(Message.user("hi"))
    request = run.inference.request()
    assert [(m.role, m.text) for m in request.messages] == [
        ("system", run.deps.config.instructions),
        ("user", "hi"),
    ]
    assert [d.id for d in request.tools] == ["alpha", "beta"]
    assert run.leg.visible is None
    assert request.run_id == "run_1"


def test_tool_filter_narrows_the_request_and_what_is_visible(make_parts):
    run = make_parts(tools=[alpha, beta])
    run.leg.transcript.append(Message.user("hi"))
    only_beta = ToolFilter(only=frozenset({"beta"})).model_dump(mode="json")
    command = Command.set(
        TOOL_FILTER, {"p": only_beta}, scope=Scope.RUN, merge=MergePolicy.COMMUTATIVE
    )
    run.leg.engine.commit("test", [StagedCommand("p", command)])
    request = run.inference.request()
    assert [d.id for d in request.tools] == ["beta"]
    assert run.leg.visible == {"beta"}


def test_context_entries_reach_this_request_only_in_their_band(make_parts):
    run = make_parts()
    run.leg.transcript.append(Message.user("question"))
    entry = ContextMessage(key="note", band="suffix", content="remember X")
    run.leg.engine.commit("test", [StagedCommand("p", inject(entry))])
    request = run.inference.request()
    assert [m.text for m in request.messages][-1] == "remember X"
    assert [m.text for m in run.leg.transcript.view()] == ["question"]  # never in the transcript


def test_a_re_staged_entry_shows_what_was_staged_last(make_parts):
    """Entries are parsed once per staged value: a changed value is what the next request shows."""
    run = make_parts()
    run.leg.transcript.append(Message.user("question"))
    inference = run.inference
    seen = []
    for content in ("catalog v1", "catalog v1", "catalog v2"):
        entry = ContextMessage(key="catalog", band="system", content=content)
        run.leg.engine.commit("test", [StagedCommand("p", inject(entry))])
        seen.append(inference.request().messages[0].text)
    base = run.deps.config.instructions
    assert seen == [f"{base}\n\ncatalog v1", f"{base}\n\ncatalog v1", f"{base}\n\ncatalog v2"]


class Executor:
    def __init__(self, items: list[Any] | Exception) -> None:
        self.items = items

    async def stream(self, request: Any) -> AsyncIterator[Any]:
        if isinstance(self.items, Exception):
            raise self.items
        for item in self.items:
            yield item


async def test_deltas_become_events_in_order_and_the_response_is_returned(make_parts):
    run = make_parts()
    events: list[Any] = []
    run.deps.emit = events.append
    final = InferenceResponse(text="Hello there")
    run.deps.executor = Executor(
        [StreamDelta(text="Hel"), StreamDelta(text="lo", channel="reasoning"), final]
    )
    response = await run.inference.infer(run.inference.request())
    assert response is final
    assert [(e.seq, e.channel, e.delta) for e in events] == [
        (1, "text", "Hel"),
        (2, "reasoning", "lo"),
    ]


@pytest.mark.parametrize(
    "items, message",
    [
        (ConnectionError("reset by peer"), "ConnectionError: reset by peer"),
        ([StreamDelta(text="partial")], "ended without a final response"),
        ([], "ended without a final response"),
    ],
)
async def test_provider_failures_are_typed_and_name_the_model(make_parts, items, message):
    run = make_parts()
    run.deps.executor = Executor(items)
    with pytest.raises(End) as ended:
        await run.inference.infer(run.inference.request())
    failure = ended.value.cause.failure
    assert failure.kind == "provider" and message in failure.message
    assert (failure.provider, failure.model) == (run.deps.model.provider, run.deps.model.model)
    assert not run.leg.cancel._armed  # disarmed even on failure
