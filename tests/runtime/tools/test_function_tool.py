"""@tool: schema from hints and docstrings, argument validation, calling, results."""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Literal

import pytest
from pydantic import BaseModel, ValidationError

from awaken_runtime import (
    CancellationToken,
    Command,
    FunctionTool,
    StateEngine,
    Tool,
    ToolCallContext,
    ToolDescriptor,
    ToolOutput,
    tool,
)
from awaken_runtime.state._engine import StagedCommand


def make_ctx(call_id: str = "call_1", tool_id: str = "t") -> ToolCallContext:
    return ToolCallContext(
        store=StateEngine().store,
        run_id="run_1",
        thread_id="thread_1",
        call_id=call_id,
        tool_id=tool_id,
        cancel=CancellationToken(),
    )


class Point(BaseModel):
    x: int
    y: int


@tool
def add(a: int, b: int = 2) -> int:
    """Add two numbers.

    Works for negative numbers too.

    Args:
        a: The first addend.
        b: The second addend.
    """
    return a + b


# --- schema ----------------------------------------------------------------


def test_schema_from_type_hints_and_google_docstring() -> None:
    d = add.descriptor
    assert isinstance(add, FunctionTool)
    assert isinstance(add, Tool)
    assert d.id == "add"
    assert d.description == "Add two numbers.\n\nWorks for negative numbers too."
    assert "Args" not in d.description
    assert d.parameters["type"] == "object"
    assert d.parameters["required"] == ["a"]
    assert d.parameters["properties"]["a"] == {
        "type": "integer",
        "description": "The first addend.",
    }
    assert d.parameters["properties"]["b"]["default"] == 2
    assert d.parameters["properties"]["b"]["description"] == "The second addend."
    assert d.parameters.get("additionalProperties") is False


def test_schema_for_richer_types() -> None:
    @tool
    def search(query: str, mode: Literal["fast", "deep"], where: Point, tags: list[str]) -> str:
        """Search.

        Args:
            query: What to look for.
        """
        return ""

    params = search.descriptor.parameters
    props = params["properties"]
    assert props["query"] == {"type": "string", "description": "What to look for."}
    assert props["mode"]["enum"] == ["fast", "deep"]
    assert props["tags"] == {"type": "array", "items": {"type": "string"}}
    assert "description" not in props["tags"]
    # The nested model is described in the schema (via $defs).
    assert "Point" in json.dumps(params)
    assert set(params["required"]) == {"query", "mode", "where", "tags"}


def test_name_and_description_overrides() -> None:
    @tool(name="sum-two", description="Custom.")
    def whatever(a: int) -> int:
        """Ignored."""
        return a

    assert whatever.descriptor.id == "sum-two"
    assert whatever.descriptor.description == "Custom."


def test_function_without_docstring_has_empty_description() -> None:
    @tool
    def bare(a: int) -> int:
        return a

    assert bare.descriptor.description == ""
    assert "description" not in bare.descriptor.parameters["properties"]["a"]


def test_var_args_are_rejected_at_decoration() -> None:
    with pytest.raises(TypeError, match="args"):

        @tool
        def bad(*args: int) -> int:
            return 0


def test_descriptor_to_openai() -> None:
    entry = add.descriptor.to_openai()
    assert entry["type"] == "function"
    assert entry["function"]["name"] == "add"
    assert entry["function"]["parameters"] == add.descriptor.parameters


def test_decorated_function_is_still_directly_callable() -> None:
    assert add(1, 2) == 3


# --- calling: sync, async, threaded ------------------------------------------


async def test_sync_tool_runs_inline_on_the_loop_thread() -> None:
    seen: list[int] = []

    @tool
    def where() -> str:
        seen.append(threading.get_ident())
        return "ok"

    out = await where.call({}, make_ctx())
    assert out == ToolOutput.ok("ok")
    assert seen == [threading.get_ident()]


async def test_call_validates_and_passes_arguments() -> None:
    out = await add.call({"a": 40}, make_ctx())
    assert out.is_error is False
    assert out.content == "42"


async def test_async_tool() -> None:
    @tool
    async def slow_echo(text: str) -> str:
        """Echo.

        Args:
            text: what to echo
        """
        await asyncio.sleep(0)
        return text.upper()

    assert slow_echo.descriptor.parameters["properties"]["text"]["description"] == "what to echo"
    out = await slow_echo.call({"text": "hi"}, make_ctx())
    assert out.content == "HI"
    assert not out.is_error


async def test_threaded_tool_runs_in_a_worker_thread() -> None:
    @tool(threaded=True)
    def blocking() -> int:
        return threading.get_ident()

    out = await blocking.call({}, make_ctx())
    assert int(out.content) != threading.get_ident()


async def test_threaded_tool_does_not_block_the_event_loop() -> None:
    release = threading.Event()

    @tool(threaded=True)
    def wait_for_release() -> str:
        assert release.wait(timeout=5)
        return "released"

    task = asyncio.create_task(wait_for_release.call({}, make_ctx()))
    await asyncio.sleep(0.01)  # the loop is free while the tool blocks
    assert not task.done()
    release.set()
    out = await asyncio.wait_for(task, timeout=5)
    assert out.content == "released"


# --- context injection -----------------------------------------------------


async def test_context_parameter_is_injected_and_not_in_schema() -> None:
    engine = StateEngine()
    engine.commit("p", [StagedCommand("x", Command.set("greeting", "hello"))])

    @tool
    def greet(name: str, ctx: ToolCallContext) -> str:
        """Greet.

        Args:
            name: who
        """
        return f"{ctx.store.get_value('greeting')} {name} ({ctx.call_id}, {ctx.thread_id})"

    params = greet.descriptor.parameters
    assert list(params["properties"]) == ["name"]
    assert params["required"] == ["name"]
    ctx = make_ctx(call_id="call_9")
    ctx.store = engine.store
    out = await greet.call({"name": "ann"}, ctx)
    assert out.content == "hello ann (call_9, thread_1)"


async def test_model_cannot_supply_the_context_parameter() -> None:
    @tool
    def uses_ctx(ctx: ToolCallContext) -> str:
        return ctx.run_id

    out = await uses_ctx.call({"ctx": "forged"}, make_ctx())
    assert out.is_error
    assert "ctx" in out.content


# --- invalid arguments -----------------------------------------------------


async def test_invalid_argument_type_is_a_model_visible_error_naming_field() -> None:
    out = await add.call({"a": "forty"}, make_ctx())
    assert isinstance(out, ToolOutput)
    assert out.is_error is True
    assert "'add'" in out.content
    assert "'a'" in out.content
    assert "integer" in out.content


async def test_missing_required_argument_names_field() -> None:
    out = await add.call({"b": 1}, make_ctx())
    assert out.is_error
    assert "'a'" in out.content
    assert "required" in out.content.lower()


async def test_nested_invalid_field_is_named_with_its_path() -> None:
    @tool
    def move(to: Point) -> str:
        return "ok"

    out = await move.call({"to": {"x": 1, "y": "up"}}, make_ctx())
    assert out.is_error
    assert "to.y" in out.content


async def test_extra_arguments_are_rejected() -> None:
    calls: list[int] = []

    @tool
    def once(a: int) -> int:
        calls.append(a)
        return a

    out = await once.call({"a": 1, "bogus": True}, make_ctx())
    assert out.is_error
    assert "bogus" in out.content
    assert calls == []  # the function never ran


# --- return conversions ----------------------------------------------------


async def test_str_result_is_content_as_is() -> None:
    @tool
    def s() -> str:
        return '{"not": "re-encoded"}'

    assert (await s.call({}, make_ctx())).content == '{"not": "re-encoded"}'


async def test_dict_result_becomes_json() -> None:
    @tool
    def d() -> dict[str, object]:
        return {"a": 1, "b": [True, None], "c": "ü"}

    out = await d.call({}, make_ctx())
    assert not out.is_error
    assert json.loads(out.content) == {"a": 1, "b": [True, None], "c": "ü"}


async def test_pydantic_model_result_becomes_json() -> None:
    @tool
    def p() -> Point:
        return Point(x=1, y=2)

    out = await p.call({}, make_ctx())
    assert json.loads(out.content) == {"x": 1, "y": 2}


async def test_none_result_is_empty_content() -> None:
    @tool
    def nothing() -> None:
        return None

    out = await nothing.call({}, make_ctx())
    assert out.content == ""
    assert not out.is_error


async def test_tool_output_is_passed_through_with_state() -> None:
    command = Command.set("seen", True)
    expected = ToolOutput.error("try again", state=[command])

    @tool
    def passthrough() -> ToolOutput:
        return expected

    out = await passthrough.call({}, make_ctx())
    assert out is expected
    assert out.is_error
    assert out.state == [command]


async def test_async_tool_result_conversion() -> None:
    @tool
    async def listing() -> list[int]:
        return [1, 2, 3]

    assert json.loads((await listing.call({}, make_ctx())).content) == [1, 2, 3]


# --- descriptors and content hash ------------------------------------------


def test_content_hash_is_stable() -> None:
    params = {"type": "object", "properties": {"a": {"type": "integer"}}}
    one = ToolDescriptor(id="t", description="d", parameters=params)
    two = ToolDescriptor(id="t", description="d", parameters=json.loads(json.dumps(params)))
    assert one.content_hash
    assert one.content_hash == two.content_hash


def test_content_hash_ignores_parameter_key_order() -> None:
    a = ToolDescriptor(id="t", parameters={"type": "object", "properties": {}})
    b = ToolDescriptor(id="t", parameters={"properties": {}, "type": "object"})
    assert a.content_hash == b.content_hash


def test_content_hash_of_decorated_tool_is_stable_across_decorations() -> None:
    def f(a: int) -> int:
        """F.

        Args:
            a: x
        """
        return a

    assert tool(f).descriptor.content_hash == tool(f).descriptor.content_hash


@pytest.mark.parametrize(
    "change",
    [
        {"id": "other"},
        {"description": "different"},
        {"parameters": {"type": "object", "properties": {"b": {"type": "integer"}}}},
        {"parameters": {"type": "object", "properties": {"a": {"type": "string"}}}},
    ],
)
def test_content_hash_changes_with_id_description_and_params(change: dict[str, object]) -> None:
    base = {
        "id": "t",
        "description": "d",
        "parameters": {"type": "object", "properties": {"a": {"type": "integer"}}},
    }
    original = ToolDescriptor.model_validate(base)
    changed = ToolDescriptor.model_validate({**base, **change})
    assert changed.content_hash != original.content_hash


def test_content_hash_changes_when_docstring_changes() -> None:
    def v1(a: int) -> int:
        """Version one.

        Args:
            a: x
        """
        return a

    def v2(a: int) -> int:
        """Version one.

        Args:
            a: y
        """
        return a

    h1 = tool(name="same")(v1).descriptor.content_hash
    h2 = tool(name="same")(v2).descriptor.content_hash
    assert h1 != h2


def test_descriptor_json_round_trip_keeps_hash() -> None:
    d = add.descriptor
    assert ToolDescriptor.model_validate_json(d.model_dump_json()) == d


def test_tampered_content_hash_is_rejected() -> None:
    data = add.descriptor.model_dump()
    with pytest.raises(ValidationError, match="content_hash"):
        ToolDescriptor.model_validate({**data, "content_hash": "0" * 32})


def test_changed_description_with_stale_hash_is_rejected() -> None:
    data = add.descriptor.model_dump()
    with pytest.raises(ValidationError, match="content_hash"):
        ToolDescriptor.model_validate({**data, "description": "Now deletes files."})


@pytest.mark.parametrize("bad_id", ["", "has space", "x" * 129, "semi;colon"])
def test_descriptor_rejects_bad_ids(bad_id: str) -> None:
    with pytest.raises(ValidationError):
        ToolDescriptor(id=bad_id)


def test_descriptor_is_immutable() -> None:
    with pytest.raises(ValidationError):
        add.descriptor.description = "changed"  # type: ignore[misc]
