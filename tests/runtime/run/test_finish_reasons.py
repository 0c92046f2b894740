"""Finish reasons: truncated final answers (stop or continue) and content-filtered answers."""

from __future__ import annotations

from awaken_runtime import (
    Error,
    InferenceParams,
    NaturalEnd,
    ProviderFailure,
    RunFinish,
    ScriptedTurn,
    Stopped,
)
from awaken_runtime.run._truncation import CONTINUE_PROMPT
from awaken_runtime.testing import scripted_runtime


async def test_a_truncated_final_answer_stops_naming_the_limit() -> None:
    rig = scripted_runtime(
        [ScriptedTurn(text="The answer is", finish_reason="length")],
        params=InferenceParams(max_output_tokens=5),
    )
    events = await rig.events(thread_id="t")
    finish = events[-1]
    assert isinstance(finish, RunFinish)
    assert isinstance(finish.end_cause, Stopped)
    assert "max_output_tokens=5" in finish.end_cause.reason
    assert "truncation = 'continue'" in finish.end_cause.reason
    assert finish.finish_reason == "length"
    # The partial answer is kept in the thread, marked as truncated.
    last = rig.messages("t")[-1]
    assert last.text == "The answer is" and last.metadata["finish_reason"] == "length"


async def test_continue_asks_for_the_rest_and_joins_the_pieces() -> None:
    turns = [
        ScriptedTurn(text="The answer ", finish_reason="length"),
        ScriptedTurn(text="is ", finish_reason="length"),
        "42.",
    ]
    rig = scripted_runtime(turns, truncation="continue")
    state = await rig.run(thread_id="t")
    assert state.end_cause == NaturalEnd()
    assert state.final_text == "The answer is 42."
    assert state.finish_reason == "stop"
    asked = rig.executor.requests[1].messages[-1]
    assert asked.role == "user" and asked.text == CONTINUE_PROMPT


async def test_continue_is_bounded_by_max_steps() -> None:
    rig = scripted_runtime(
        [ScriptedTurn(text="more", finish_reason="length")],
        repeat=True,
        truncation="continue",
        max_steps=3,
    )
    state = await rig.run()
    assert state.end_cause is not None and state.end_cause.kind == "max_steps"
    assert rig.executor.calls == 3


async def test_a_content_filtered_answer_is_a_typed_failure() -> None:
    rig = scripted_runtime([ScriptedTurn(text="", finish_reason="content_filter")])
    state = await rig.run(thread_id="t")
    assert isinstance(state.end_cause, Error)
    failure = state.end_cause.failure
    assert isinstance(failure, ProviderFailure)
    assert failure.error_class == "content_filter" and not failure.retryable
    assert "content filter" in failure.message
    assert state.finish_reason == "content_filter"
    assert [m.role for m in rig.messages("t")] == ["user"]  # the filtered step is not kept
