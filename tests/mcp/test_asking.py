"""Tickets as elicitation forms, and any answer a client sends as a decision (hostile too)."""

from __future__ import annotations

from typing import Any

import mcp_types as types
from hypothesis import given
from hypothesis import strategies as st

from awaken_mcp._asking import decide, forms
from awaken_runtime import Approve, AwaitReason, Deny, Respond, ResumeTicket, ToolCall


def ticket(
    reason: AwaitReason, payload: dict[str, Any], args: dict[str, Any] | None = None
) -> ResumeTicket:
    return ResumeTicket(
        ticket_id="tkt_1",
        run_id="run_1",
        thread_id="thread_1",
        snapshot_id="s",
        fingerprint="f",
        await_reason=reason,
        call=ToolCall(id="c1", name="shell", arguments=args or {"command": "ls"}),
        payload=payload,
    )


PERMISSION = ticket(
    AwaitReason.TOOL_PERMISSION,
    {"reason": "no rule matched; the default is ask", "remember": ["once", "thread", "profile"]},
)
_VALUES = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=12),
    st.lists(st.text(max_size=5), max_size=3),
)  # fmt: skip
_CONTENT = st.one_of(
    st.none(),
    st.dictionaries(
        st.sampled_from(["decision", "reason", "remember", "name", "answer", "x"]), _VALUES
    ),
)


@given(action=st.sampled_from(["accept", "decline", "cancel"]), content=_CONTENT)
def test_only_an_accepted_approve_approves(action: str, content: dict[str, Any] | None) -> None:
    (form,) = forms(PERMISSION, "coder")
    result = types.ElicitResult(action=action, content=content)  # type: ignore[arg-type]
    decision = decide(PERMISSION, [(form, result)], "mcp:profile:alice")
    approved = action == "accept" and (content or {}).get("decision") == "approve"
    assert isinstance(decision, Approve) is approved
    if not approved:
        assert isinstance(decision, Deny) and decision.reason
    assert decision.remember in ("once", "thread", "profile")
    assert decision.by == "mcp:profile:alice"  # never what the client's content claims


def test_the_approval_form_shows_the_call_and_offers_the_scopes() -> None:
    (form,) = forms(
        ticket(AwaitReason.TOOL_PERMISSION, {"reason": "r"}, {"command": "rm -rf /"}), "a"
    )
    assert (
        "'shell'" in form.message and '"rm -rf /"' in form.message and "because r" in form.message
    )
    assert "remember" not in form.schema["properties"]  # the gate offered no wider scope
    (scoped,) = forms(PERMISSION, "a")
    assert scoped.schema["properties"]["remember"]["enum"] == ["once", "thread", "profile"]
    long = forms(ticket(AwaitReason.TOOL_PERMISSION, {}, {"blob": "x" * 10_000}), "a")[0]
    assert len(long.message) < 3000  # a huge argument is elided, not sent whole


def test_a_question_uses_its_schema_or_a_free_text_answer() -> None:
    schema = {"type": "object", "properties": {"name": {"type": "string"}}}
    asked = ticket(AwaitReason.USER_INPUT, {"question": "Name?", "schema": schema})
    (form,) = forms(asked, "a")
    assert form.message == "Name?" and form.schema == schema
    got = decide(asked, [(form, types.ElicitResult(action="accept", content={"name": "Ada"}))], "x")
    assert got == Respond(value={"name": "Ada"})
    nested = {"type": "object", "properties": {"deep": {"type": "object"}}}  # not a flat form
    free = ticket(AwaitReason.USER_INPUT, {"message": "Say?", "schema": nested})
    (plain,) = forms(free, "a")
    assert list(plain.schema["properties"]) == ["answer"]
    said = decide(
        free, [(plain, types.ElicitResult(action="accept", content={"answer": "hi"}))], "x"
    )
    assert said == Respond(value="hi")
    declined = decide(free, [(plain, types.ElicitResult(action="decline"))], "x")
    assert isinstance(declined, Deny) and "declined" in declined.reason


def test_relayed_mcp_forms_are_asked_one_by_one_and_answered_by_key() -> None:
    form_a = {
        "message": "A?",
        "mode": "form",
        "requested_schema": {"type": "object", "properties": {"a": {"type": "string"}}},
    }
    form_b = {
        "message": "B?",
        "mode": "form",
        "requested_schema": {"type": "object", "properties": {"b": {"type": "integer"}}},
    }
    relayed = ticket(AwaitReason.USER_INPUT, {"requests": {"ka": form_a, "kb": form_b}})
    asked = forms(relayed, "a")
    assert [f.key for f in asked] == ["ka", "kb"]
    answers = [
        (asked[0], types.ElicitResult(action="accept", content={"a": "x"})),
        (asked[1], types.ElicitResult(action="accept", content={"b": 2})),
    ]
    assert decide(relayed, answers, "x") == Respond(value={"ka": {"a": "x"}, "kb": {"b": 2}})
    url = ticket(AwaitReason.USER_INPUT, {"requests": {"k": {**form_a, "mode": "url"}}})
    assert forms(url, "a") == []  # a URL-mode request cannot be relayed as a form
    assert forms(ticket(AwaitReason.SCHEDULED_ACTION, {}), "a") == []
