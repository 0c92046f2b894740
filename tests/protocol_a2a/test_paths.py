"""Every spelling of an agent's URL, the cards' caching, and the index of the cards.

Against the real ``awaken a2a serve`` child (one agent, keys on), with the
``a2a-sdk`` client and httpx; the multi-agent index in-process.
"""

from __future__ import annotations

import email.utils
from datetime import timedelta

import httpx
import pytest
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.types import a2a_pb2 as pb
from a2a_rig import CHILD_KEY, Served, collect, final_task, streamed_text, user_message

from awaken_protocol_a2a import create_a2a_app
from awaken_runtime import AgentConfig, AgentRuntimeBuilder, ModelSpec, Runtime, ScriptedExecutor

AUTH = {"Authorization": f"Bearer {CHILD_KEY}"}


async def test_the_sdk_client_works_with_a_trailing_slash_on_every_url(child: Served) -> None:
    async with httpx.AsyncClient(headers=AUTH, timeout=30) as http:
        resolver = A2ACardResolver(http, f"{child.url}/a2a/child/")
        card = await resolver.get_agent_card()
        assert card.name == "child"
        card.supported_interfaces[0].url += "/"  # every JSON-RPC call goes to /a2a/child/
        client = ClientFactory(ClientConfig(httpx_client=http, streaming=True)).create(card)
        responses = await collect(client.send_message(user_message("weather please")))
        task = final_task(responses)
        assert task.status.state == pb.TASK_STATE_COMPLETED
        assert streamed_text(responses) == "Let me check.Result: sunny in Paris. All done."
        fetched = await client.get_task(pb.GetTaskRequest(id=task.id))
        assert fetched.status.state == pb.TASK_STATE_COMPLETED
        # Non-streaming too (a plain JSON response, not SSE).
        plain = ClientFactory(ClientConfig(httpx_client=http, streaming=False)).create(card)
        answered = final_task(await collect(plain.send_message(user_message("hi"))))
        assert answered.status.state == pb.TASK_STATE_COMPLETED


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("POST", "/a2a/child"),
        ("POST", "/a2a/child/"),
        ("POST", "/a2a/child/.well-known/agent-card.json"),  # public for GET only
        ("GET", "/a2a/child/tasks"),
    ],
)
def test_no_spelling_of_a_path_skips_the_key(child: Served, method: str, path: str) -> None:
    response = httpx.request(method, child.url + path, json={}, follow_redirects=False)
    assert response.status_code == 401, (path, response.status_code, response.text)


@pytest.mark.parametrize(
    "path",
    [
        "/a2a/child/.well-known/agent-card.json",
        "/a2a/child/.well-known/agent-card.json/",
        "/a2a/child",
        "/a2a/child/",
        "/.well-known/agent-card.json",  # the server's only agent
        "/a2a/.well-known/agent-card.json",  # where createFromUrl(".../a2a/child") looks
    ],
)
def test_every_card_path_answers_the_card_without_a_redirect(child: Served, path: str) -> None:
    response = httpx.get(child.url + path, follow_redirects=False)
    assert response.status_code == 200, (path, response.status_code)
    assert response.json()["name"] == "child"
    assert response.json()["supportedInterfaces"][0]["url"] == f"{child.url}/a2a/child"
    assert response.headers["cache-control"] == "public, max-age=300"
    canonical = httpx.get(child.card_url("child"))
    assert response.headers["etag"] == canonical.headers["etag"]


def test_the_card_answers_conditional_requests(child: Served) -> None:
    url = child.card_url("child")
    first = httpx.get(url)
    etag, modified = first.headers["etag"], first.headers["last-modified"]
    assert etag.startswith('"') and len(etag) > 10
    when = email.utils.parsedate_to_datetime(modified)
    earlier = email.utils.format_datetime(when - timedelta(seconds=1), usegmt=True)
    later = email.utils.format_datetime(when + timedelta(days=1), usegmt=True)

    def status(**headers: str) -> int:
        response = httpx.get(url, headers=headers)
        if response.status_code == 304:
            assert response.content == b""  # no body, the validators again
            assert response.headers["etag"] == etag
            assert response.headers["cache-control"] == "public, max-age=300"
        else:
            assert response.json() == first.json()
        return response.status_code

    assert status(**{"If-None-Match": etag}) == 304
    assert status(**{"If-None-Match": f"W/{etag}"}) == 304  # weak comparison for GET
    assert status(**{"If-None-Match": f'"other", {etag}'}) == 304
    assert status(**{"If-None-Match": "*"}) == 304
    assert status(**{"If-None-Match": '"other"'}) == 200
    assert status(**{"If-Modified-Since": modified}) == 304
    assert status(**{"If-Modified-Since": later}) == 304
    assert status(**{"If-Modified-Since": earlier}) == 200
    assert status(**{"If-Modified-Since": "not a date"}) == 200
    # If-None-Match decides alone when both are sent (RFC 9110 13.2.2).
    assert status(**{"If-None-Match": '"other"', "If-Modified-Since": modified}) == 200
    # HEAD: the headers without the body.
    head = httpx.head(url)
    assert head.status_code == 200 and head.headers["etag"] == etag and head.content == b""


def _two_agents() -> Runtime:
    builder = (
        AgentRuntimeBuilder(discover=False)
        .with_model(ModelSpec(id="m", provider="scripted", model="s"))
        .with_provider("scripted", ScriptedExecutor(["hi"], repeat=True))
    )
    for agent_id in ("alpha", "beta"):
        builder = builder.with_agent_spec(AgentConfig(id=agent_id, model_binding="m"))
    return builder.build()


async def test_a_server_of_several_agents_lists_their_cards() -> None:
    runtime = _two_agents()
    app = create_a2a_app(runtime, ["alpha", "beta"], base_url="http://agents.test/")
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://agents.test") as http:
        for path in ("/a2a", "/a2a/"):
            listing = await http.get(path)
            assert listing.status_code == 200
            assert listing.json()["agents"] == [
                {
                    "id": agent_id,
                    "name": agent_id,
                    "description": f"awaken agent {agent_id}",
                    "url": f"http://agents.test/a2a/{agent_id}",
                    "card": f"http://agents.test/a2a/{agent_id}/.well-known/agent-card.json",
                }
                for agent_id in ("alpha", "beta")
            ]
        for path in ("/.well-known/agent-card.json", "/a2a/.well-known/agent-card.json"):
            missing = await http.get(path)
            assert missing.status_code == 404
            assert missing.headers["content-type"] == "application/problem+json"
            problem = missing.json()
            assert "serves 2 agents" in problem["detail"]
            assert "http://agents.test/a2a/beta/.well-known/agent-card.json" in problem["detail"]
            assert "GET /a2a" in problem["fix"]
        card = await http.get("/a2a/beta/.well-known/agent-card.json")
        assert card.json()["name"] == "beta"
    await runtime.aclose()


def test_a_negative_card_max_age_is_refused() -> None:
    runtime = _two_agents()
    with pytest.raises(ValueError, match="card_max_age is -1; give 0 or more seconds"):
        create_a2a_app(runtime, ["alpha"], base_url="http://x", card_max_age=-1)
