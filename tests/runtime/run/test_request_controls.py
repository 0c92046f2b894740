"""Request controls (tool_choice, parallel_tool_calls, response_format): on the agent and
per request from a plugin, through the bound-checked parameter override."""

from __future__ import annotations

from typing import Any

import pytest

from awaken_runtime import (
    Contributions,
    Error,
    InferenceParams,
    PhaseHookPoint,
    override_params,
)


def _plugin(make_plugin: Any, hook: Any, allowed: set[str], **fields: Any) -> Any:
    return make_plugin(
        "controls",
        {
            "inference_params": frozenset(allowed),
            "phase_hooks": frozenset({PhaseHookPoint.BEFORE_INFERENCE}),
        },
        Contributions(
            phase_hooks={
                PhaseHookPoint.BEFORE_INFERENCE: hook(lambda ctx: [override_params(**fields)])
            }
        ),
    )


async def test_agent_params_carry_the_controls(make_runtime: Any) -> None:
    params = InferenceParams(tool_choice="required", parallel_tool_calls=False)
    rig = make_runtime(["done"], params=params)
    await rig.run()
    sent = rig.executor.requests[0].params
    assert sent.tool_choice == "required" and sent.parallel_tool_calls is False


async def test_a_plugin_sets_them_per_request(
    make_runtime: Any, make_plugin: Any, hook: Any
) -> None:
    fields = {"tool_choice": "none", "response_format": {"type": "json_object"}}
    plugin = _plugin(make_plugin, hook, set(fields), **fields)
    rig = make_runtime(["done"], plugins=[plugin])
    await rig.run()
    sent = rig.executor.requests[0].params
    assert sent.tool_choice == "none" and sent.response_format == {"type": "json_object"}


async def test_a_control_beyond_the_bound_fails_the_run(
    make_runtime: Any, make_plugin: Any, hook: Any
) -> None:
    plugin = _plugin(make_plugin, hook, {"temperature"}, parallel_tool_calls=True)
    state = await make_runtime(["done"], plugins=[plugin]).run()
    assert isinstance(state.end_cause, Error)
    assert state.end_cause.failure.kind == "capability_bound"
    assert "parallel_tool_calls" in state.end_cause.failure.message


def test_unknown_control_names_the_known_ones() -> None:
    with pytest.raises(ValueError, match=r"valid: .*tool_choice, parallel_tool_calls"):
        override_params(tool_chioce="auto")


def test_the_assembled_context_segments_follow_every_change_of_entries() -> None:
    """Segments are reused for the very same entries, rebuilt as soon as one differs."""
    from awaken_runtime import Band, ContextMessage, Message
    from awaken_runtime.messages._transcript import Transcript
    from awaken_runtime.run._request import RequestAssembler

    assembler = RequestAssembler("base")
    transcript = Transcript([Message.user("q")])
    window = transcript.view()

    def texts(entries: list[ContextMessage]) -> list[str]:
        return [m.text for m in assembler.messages(window, 0, entries)]

    a = ContextMessage(key="k", band=Band.SYSTEM, content="one")
    s = ContextMessage(key="s", band=Band.SUFFIX, content="tail")
    assert texts([a]) == ["base\n\none", "q"]
    assert texts([a]) == ["base\n\none", "q"]
    # An equal-keyed entry with new content, another band, or one entry fewer: rebuilt.
    assert texts([ContextMessage(key="k", band=Band.SYSTEM, content="two")]) == ["base\n\ntwo", "q"]
    assert texts([a, s]) == ["base\n\none", "q", "tail"]
    assert texts([s]) == ["base", "q", "tail"]
    assert texts([]) == ["base", "q"]
