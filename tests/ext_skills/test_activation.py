"""Activation through the `skill` tool: arguments, substitution, thread persistence,
deactivation by tool and by a change on disk."""

from __future__ import annotations

import json

from awaken_ext_skills import ACTIVE_KEY_PREFIX, ACTIVE_SKILLS, NOTICE_KEY
from awaken_runtime import NaturalEnd, Scope

KEY = ACTIVE_KEY_PREFIX + "greeter"
GREETER = dict(
    description="Greets people.",
    body="Greet ${who} warmly in ${lang}.",
    frontmatter=(
        "arguments:\n"
        "  - name: who\n    description: Who to greet.\n    required: true\n"
        "  - name: lang\n    description: Language.\n"
    ),
    files={"references/style.md": "be kind", "assets/logo.png": b"\x89PNG"},
)


def _payload(message) -> dict:
    return json.loads(message.text)


async def test_activate_injects_rendered_instructions(
    tmp_path, skill_factory, skills_rig, call_turn, inspect_request
) -> None:
    skill_factory(tmp_path, "greeter", **GREETER)
    rig = skills_rig(
        [call_turn("skill", name="greeter", arguments={"who": "Ada", "lang": "Latin"}), "ok"],
        paths=[tmp_path],
    )
    state = await rig.run(thread_id="t1")
    assert isinstance(state.end_cause, NaturalEnd)
    first, second = rig.requests
    assert KEY not in inspect_request.context(first)
    instructions = inspect_request.context(second)[KEY]
    assert "Greet Ada warmly in Latin." in instructions
    assert instructions.startswith('<skill_instructions name="greeter">')
    (result,) = rig.tool_results("t1")
    data = _payload(result)
    assert data["active"] is True and data["arguments"] == {"who": "Ada", "lang": "Latin"}
    assert data["files"] == ["references/style.md", "assets/logo.png"]
    stored = state.state[(Scope.THREAD, ACTIVE_SKILLS.key)]
    assert stored["greeter"]["arguments"] == {"who": "Ada", "lang": "Latin"}


async def test_invalid_arguments_are_an_error_and_nothing_activates(
    tmp_path, skill_factory, skills_rig, call_turn, inspect_request
) -> None:
    skill_factory(tmp_path, "greeter", **GREETER)
    rig = skills_rig(
        [call_turn("skill", name="greeter", arguments={"lang": "fr", "x": 1}), "ok"],
        paths=[tmp_path],
    )
    await rig.run(thread_id="t")
    (result,) = rig.tool_results("t")
    assert result.metadata.get("is_error") is True
    data = _payload(result)
    assert data["error"] == "invalid_arguments"
    assert "missing required argument 'who'" in data["message"]
    assert "unknown argument(s) 'x'" in data["message"]
    assert [a["name"] for a in data["declared"]] == ["who", "lang"]
    assert KEY not in inspect_request.context(rig.requests[1])


async def test_wrong_argument_type_is_reported_by_schema(
    tmp_path, skill_factory, skills_rig, call_turn
) -> None:
    skill_factory(tmp_path, "greeter", **GREETER)
    rig = skills_rig(
        [call_turn("skill", name="greeter", arguments={"who": ["a"]}), "ok"], paths=[tmp_path]
    )
    await rig.run(thread_id="t")
    (result,) = rig.tool_results("t")
    assert result.metadata.get("is_error") is True


async def test_unknown_skill(tmp_path, skill_factory, skills_rig, call_turn) -> None:
    skill_factory(tmp_path, "greeter", **GREETER)
    rig = skills_rig([call_turn("skill", name="nope"), "ok"], paths=[tmp_path])
    await rig.run(thread_id="t")
    data = _payload(rig.tool_results("t")[0])
    assert data["error"] == "unknown_skill" and "greeter" in data["message"]


async def test_activation_persists_across_runs_of_a_thread(
    tmp_path, skill_factory, skills_rig, call_turn, inspect_request
) -> None:
    skill_factory(tmp_path, "greeter", **GREETER)
    rig = skills_rig(
        [call_turn("skill", name="greeter", arguments={"who": "Bo"}), "ok", "again", "other"],
        paths=[tmp_path],
    )
    await rig.run(thread_id="t1")
    await rig.run("second run", thread_id="t1")
    assert "Greet Bo warmly in ." in inspect_request.context(rig.requests[2])[KEY]
    await rig.run("other thread", thread_id="t2")
    assert KEY not in inspect_request.context(rig.requests[3])


async def test_deactivate_with_the_tool(
    tmp_path, skill_factory, skills_rig, call_turn, inspect_request
) -> None:
    skill_factory(tmp_path, "greeter", **GREETER)
    rig = skills_rig(
        [
            call_turn("skill", name="greeter", arguments={"who": "Bo"}),
            call_turn("skill", name="greeter", deactivate=True),
            call_turn("skill", name="greeter", deactivate=True),
            "done",
        ],
        paths=[tmp_path],
    )
    state = await rig.run(thread_id="t")
    assert KEY in inspect_request.context(rig.requests[1])
    assert KEY not in inspect_request.context(rig.requests[2])
    results = [_payload(m) for m in rig.tool_results("t")]
    assert results[1] == {"skill": "greeter", "active": False, "changed": True}
    assert results[2] == {"skill": "greeter", "active": False, "changed": False}
    assert state.state[(Scope.THREAD, ACTIVE_SKILLS.key)] == {}


async def test_reactivation_replaces_arguments(
    tmp_path, skill_factory, skills_rig, call_turn, inspect_request
) -> None:
    skill_factory(tmp_path, "greeter", **GREETER)
    rig = skills_rig(
        [
            call_turn("skill", name="greeter", arguments={"who": "A"}),
            call_turn("skill", name="greeter", arguments={"who": "B"}),
            "done",
        ],
        paths=[tmp_path],
    )
    await rig.run(thread_id="t")
    assert "Greet B" in inspect_request.context(rig.requests[2])[KEY]


async def test_change_on_disk_deactivates(
    tmp_path, skill_factory, skills_rig, call_turn, inspect_request
) -> None:
    folder = skill_factory(tmp_path, "greeter", **GREETER)
    rig = skills_rig(
        [call_turn("skill", name="greeter", arguments={"who": "Bo"}), "ok", "after change", "x"],
        paths=[tmp_path],
    )
    await rig.run(thread_id="t")
    text = (folder / "SKILL.md").read_text()
    (folder / "SKILL.md").write_text(text.replace("warmly", "very warmly indeed"))
    state = await rig.run("next", thread_id="t")
    context = inspect_request.context(rig.requests[2])
    assert KEY not in context
    assert "'greeter' changed on disk" in context[NOTICE_KEY]
    assert state.state[(Scope.THREAD, ACTIVE_SKILLS.key)] == {}
    # The catalog follows the new content; the notice is shown once.
    await rig.run("later", thread_id="t")
    assert NOTICE_KEY not in inspect_request.context(rig.requests[3])


async def test_removed_skill_deactivates(
    tmp_path, skill_factory, skills_rig, call_turn, inspect_request
) -> None:
    import pytest

    from awaken_ext_skills import SkillWarning

    folder = skill_factory(tmp_path, "greeter", **GREETER)
    skill_factory(tmp_path, "other")
    rig = skills_rig(
        [call_turn("skill", name="greeter", arguments={"who": "Bo"}), "ok", "x"],
        paths=[tmp_path],
    )
    await rig.run(thread_id="t")
    (folder / "SKILL.md").unlink()
    with pytest.warns(SkillWarning):
        await rig.run("next", thread_id="t")
    context = inspect_request.context(rig.requests[2])
    assert KEY not in context and NOTICE_KEY in context
    assert 'name="greeter"' not in inspect_request.system(rig.requests[2])


async def test_two_skills_active_at_once(
    tmp_path, skill_factory, skills_rig, call_turn, inspect_request
) -> None:
    skill_factory(tmp_path, "greeter", **GREETER)
    skill_factory(tmp_path, "helper", body="Help.")
    rig = skills_rig(
        [
            call_turn("skill", name="greeter", arguments={"who": "A"}),
            call_turn("skill", name="helper"),
            "done",
        ],
        paths=[tmp_path],
    )
    await rig.run(thread_id="t")
    context = inspect_request.context(rig.requests[2])
    assert KEY in context and ACTIVE_KEY_PREFIX + "helper" in context
