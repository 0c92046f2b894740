"""The chat page at ``/`` in a real browser: Playwright driving Debian's Chromium.

.ci/run installs ``chromium`` with apt-get (never ``playwright install``). The page
runs against its own ``awaken serve`` with a scripted model (``page_setup.py``).
Screenshots (desktop and phone width) land in ``$AWAKEN_TEST_ARTIFACTS`` (default
``test-artifacts/``); the README links the copies committed under ``docs/``.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from srv_util import ALICE, BOB, HERE, Served, start_server, stop_server

CHROMIUM = os.environ.get("AWAKEN_TEST_CHROMIUM", "/usr/bin/chromium")
PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1280, "height": 860}


def _artifacts() -> Path:
    root = Path(os.environ.get("AWAKEN_TEST_ARTIFACTS", "test-artifacts"))
    root.mkdir(parents=True, exist_ok=True)
    return root


def _page_server(tmp: Path, *extra: str, keys: str | None = None) -> Served:
    return start_server(
        tmp, "--setup", "page_setup:setup", *extra, keys=keys, agents=HERE / "page_agents"
    )


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    server = _page_server(tmp_path_factory.mktemp("page"))
    yield server
    stop_server(server)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if shutil.which(CHROMIUM) is None:
        if os.environ.get("CI"):
            pytest.fail(f"{CHROMIUM} missing: .ci/run must apt-get install chromium")
        pytest.skip(f"no browser at {CHROMIUM}: apt-get install -y chromium")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        chromium = pw.chromium.launch(
            executable_path=CHROMIUM, args=["--no-sandbox"], headless=True
        )
        try:
            yield chromium
        finally:
            chromium.close()


class Tab:
    """A page in a fresh browser context that records every console error."""

    def __init__(self, browser: Any, viewport: dict[str, int]) -> None:
        self.context = browser.new_context(viewport=viewport)
        self.page = self.context.new_page()
        self.errors: list[str] = []
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))

    def sign_in(self, url: str, key: str = ALICE, path: str = "/") -> None:
        from playwright.sync_api import expect

        self.page.goto(url + path)
        expect(self.page.locator("#keybox")).to_be_visible()
        self.page.fill("#key", key)
        self.page.dispatch_event("#key", "change")
        expect(self.page.locator('#agent option[value="helper"]')).to_have_count(1)

    def say(self, text: str) -> None:
        self.page.fill("#input", text)
        self.page.press("#input", "Enter")

    def thread_id(self) -> str:
        found = re.search(r"[?&]thread=([^&]+)", self.page.url)
        assert found, f"no thread id in {self.page.url}"
        return found.group(1)


@pytest.fixture
def tab(browser: Any) -> Iterator[Tab]:
    opened = Tab(browser, DESKTOP)
    yield opened
    opened.context.close()


def _shot(tab: Tab, name: str) -> Path:
    path = _artifacts() / name
    # The viewport as a person sees it (the composer sticks to the bottom of the window).
    tab.page.evaluate("document.getElementById('main').scrollTop = 1e9")
    tab.page.screenshot(path=str(path))
    assert path.stat().st_size > 10_000
    return path


def test_chat_page_keeps_chats_renders_safely_and_answers_tickets(
    tab: Tab, served: Served, browser: Any
) -> None:
    from playwright.sync_api import expect

    page = tab.page
    tab.sign_in(served.url)
    assert "thread=" not in page.url, "a new chat has no thread until its first message"

    # Markdown renders as elements; the model's <script>, onerror and javascript: stay inert.
    tab.say("markdown please")
    answer = page.locator(".assistant .markdown").last
    expect(answer.locator("h1")).to_have_text("Report")
    expect(answer.locator("strong")).to_have_text("bold")
    expect(answer.locator("li")).to_have_count(2)
    expect(page.locator("#submit")).to_be_enabled()
    assert page.locator("#log script, #log img, #log [onerror]").count() == 0
    assert page.evaluate("window.pwned") is None, "model text ran code in the page"
    bad = answer.locator("a", has_text="a bad link")
    assert (bad.get_attribute("href") or "").startswith("javascript") is False
    good = answer.locator("a", has_text="a good one")
    assert good.get_attribute("rel") == "noopener noreferrer nofollow"
    first = tab.thread_id()

    # Reload restores the conversation from the thread id in the URL.
    page.reload()
    expect(page.locator(".assistant .markdown h1")).to_have_text("Report")
    expect(page.locator(".msg.user")).to_have_text(["markdown please"])
    assert tab.thread_id() == first

    # Shift+Enter is a newline, Enter sends.
    page.fill("#input", "line one")
    page.press("#input", "Shift+Enter")
    page.type("#input", "line two")
    page.press("#input", "Enter")
    expect(page.locator(".msg.user").last).to_have_text("line one\nline two")
    expect(page.locator(".assistant").last).to_contain_text("You said: line one")

    # An approval, answered with its button; the card speaks in words.
    tab.say("remove the file")
    card = page.locator('.tool[data-tool="remove_file"]').last
    expect(card).to_have_attribute("data-status", "approval")
    expect(card.locator(".status")).to_have_text("Waiting for your approval")
    expect(card.locator("button.approve")).to_be_focused()
    card.locator("button.approve").click()
    expect(card).to_have_attribute("data-status", "done")
    expect(card.locator(".result pre")).to_have_text("removed /tmp/x.txt")
    expect(card.locator(".status")).to_have_text("Done")
    expect(page.locator(".assistant").last).to_contain_text("Result: removed /tmp/x.txt.")

    # A question (a USER_INPUT ticket), answered with a value.
    tab.say("which city?")
    asked = page.locator('.tool[data-tool="ask_city"]').last
    expect(asked).to_have_attribute("data-status", "question")
    expect(asked.locator("form p")).to_have_text("Which city do you mean?")
    asked.get_by_label("Which city do you mean?").fill("Lyon")
    asked.get_by_role("button", name="Send answer").click()
    expect(asked).to_have_attribute("data-status", "done")
    expect(page.locator(".assistant").last).to_contain_text("Result: Lyon. All done.")

    tab.say("think first")
    expect(page.locator(".assistant").last).to_contain_text("I thought about it.")
    expect(page.locator("#submit")).to_be_enabled()  # the run ended: the stored thread shows
    expect(page.locator("details.reasoning").last).to_contain_text("Pondering")
    assert page.locator("details.reasoning").last.get_attribute("open") is None
    _shot(tab, "chat-page-desktop.png")

    # Stop cancels the run: the thread keeps no more than the page showed.
    page.click("#new")
    expect(page.locator("#log > *")).to_have_count(0)
    assert "thread=" not in page.url
    tab.say("hold on")
    expect(page.locator(".assistant").last).to_contain_text("held0")
    expect(page.locator("#stop")).to_be_visible()
    shown = page.locator(".assistant").last.inner_text()
    page.click("#stop")
    expect(page.locator(".note").last).to_contain_text("Stopped")
    expect(page.locator("#stop")).to_be_hidden()
    second = tab.thread_id()
    with served.client() as http:
        thread = http.get(f"/v1/threads/{second}").json()
        stored = " ".join(
            m["content"] or "" for m in thread["messages"] if m["role"] == "assistant"
        )
        assert "held29" not in stored and all(w in shown for w in stored.split())
        record = http.get(f"/v1/runs/{thread['runs'][-1]}").json()["record"]
        assert record["end_cause"]["kind"] == "cancelled", record

    # The thread list switches chats (title and last activity per chat).
    links = page.locator("#thread-list a")
    expect(links).to_have_count(2)
    expect(links.first.locator(".title")).to_have_text("hold on")
    expect(links.first).to_have_attribute("aria-current", "page")
    assert links.nth(1).locator("time").get_attribute("datetime")
    links.nth(1).click()
    expect(page.locator(".assistant .markdown h1")).to_have_text("Report")
    assert tab.thread_id() == first
    page.go_back()
    expect(page.locator(".msg.user")).to_have_text(["hold on"])

    # Phone width: the same chat, the list behind a button.
    phone = Tab(browser, PHONE)
    try:
        phone.sign_in(served.url, path=f"/?thread={first}")
        expect(phone.page.locator(".assistant .markdown h1")).to_have_text("Report")
        expect(phone.page.locator("#threads")).to_be_hidden()
        width = phone.page.evaluate(
            "Math.max(document.documentElement.scrollWidth,"
            " document.getElementById('main').scrollWidth)"
        )
        assert width <= PHONE["width"], f"the page scrolls sideways at phone width ({width}px)"
        phone.say("remove it again")
        card = phone.page.locator('.tool[data-tool="remove_file"]').last
        expect(card.locator("button.deny")).to_be_visible()
        _shot(phone, "chat-page-phone.png")
        card.locator("button.deny").click()
        expect(card.locator("button")).to_have_count(0)
        expect(phone.page.locator("#submit")).to_be_enabled()
        assert card.get_attribute("data-status") not in ("approval", "running")
        phone.page.click("#chats-toggle")
        expect(phone.page.locator("#thread-list a")).to_have_count(2)
        assert phone.errors == []
    finally:
        phone.context.close()
    assert tab.errors == []


def test_another_key_sees_neither_the_chats_nor_the_thread(tab: Tab, served: Served) -> None:
    from playwright.sync_api import expect

    with served.client() as http:
        alices = http.get("/v1/threads").json()["threads"]
    assert alices, "the first test made chats"
    tab.sign_in(served.url, key=BOB, path=f"/?thread={alices[0]['thread_id']}")
    expect(tab.page.locator(".note.error")).to_contain_text("cannot be opened")
    expect(tab.page.locator("#thread-list a")).to_have_count(0)


def test_open_server_lists_agents_at_once_without_a_key_box(browser: Any, tmp_path: Path) -> None:
    from playwright.sync_api import expect

    server = _page_server(tmp_path, "--no-auth", keys="")
    opened = Tab(browser, DESKTOP)
    try:
        opened.page.goto(server.url + "/")
        expect(opened.page.locator('#agent option[value="helper"]')).to_have_count(1)
        expect(opened.page.locator("#keybox")).to_be_hidden()
        opened.say("hello")
        expect(opened.page.locator(".assistant").last).to_contain_text("You said: hello")
        assert opened.errors == []
    finally:
        opened.context.close()
        stop_server(server)


def test_page_files_and_icon_need_no_key_and_nothing_else_leaks(served: Served) -> None:
    with httpx.Client(base_url=served.url, timeout=10) as http:
        assert http.get("/favicon.ico").status_code == 204
        for path in ("/", "/static/chat.js", "/static/vendor/purify.min.js", "/static/icon.svg"):
            assert http.get(path).status_code == 200, path
        assert 'data-auth="key"' in http.get("/").text
        for path in (
            "/static/../_app.py",
            "/static/%2e%2e/_app.py",
            "/static/vendor/../../_keys.py",
        ):
            answer = http.get(path)
            assert answer.status_code in (401, 404) and "import" not in answer.text, path
        assert http.get("/v1/threads").status_code == 401
        assert http.get("/static").status_code in (401, 404)


HOSTILE = [
    "<script>window.pwned = 1</script>",
    '<img src=x onerror="window.pwned = 2">',
    '<svg onload="window.pwned = 3"><circle r=1></circle></svg>',
    '<iframe src="javascript:parent.pwned = 4"></iframe>',
    "[x](javascript:window.pwned=5)",
    "[x](JaVaScRiPt:window.pwned=6)",
    '<a href="javascript:window.pwned=7">x</a>',
    '<details open ontoggle="window.pwned = 8">x</details>',
    '<form action="javascript:window.pwned=9"><button>go</button></form>',
    "![x](https://example.org/leak?q=secret)",
    '<math><mtext><table><mglyph><style><img src=x onerror="window.pwned=10">',
    '<p style="background:url(https://example.org/leak)">styled</p>',
    "`<script>` in code and\n\n```html\n<script>window.pwned = 11</script>\n```",
    '<div onmouseover="window.pwned = 12">hover</div>',
]


def test_markdown_keeps_no_active_content(tab: Tab, served: Served) -> None:
    """Each hostile payload, through the page's own marked + DOMPurify pipeline."""
    tab.page.goto(served.url + "/")
    found = tab.page.evaluate(
        """async (payloads) => {
          const { markdown } = await import("/static/view.js");
          const out = [];
          for (const text of payloads) {
            const box = document.createElement("div");
            box.append(markdown(text));
            document.body.append(box);  // live in the page: handlers would fire now
            for (const node of box.querySelectorAll("*")) {
              const bad = ["SCRIPT", "IMG", "SVG", "IFRAME", "FORM", "STYLE", "MATH"]
                .includes(node.tagName.toUpperCase());
              const attrs = [...node.attributes].filter((a) => /^on|^style$/i.test(a.name)
                || (/href|src|action/i.test(a.name) && /^\\s*javascript:/i.test(a.value)));
              if (bad || attrs.length) out.push(`${text} -> ${node.outerHTML}`);
            }
          }
          await new Promise((r) => setTimeout(r, 50));
          const code = document.querySelectorAll("pre code").length;
          return { out, pwned: window.pwned ?? null, code };
        }""",
        HOSTILE,
    )
    assert found["out"] == [] and found["pwned"] is None, found
    assert found["code"] >= 1, "a fenced block stays code (shown, not run)"
    assert tab.errors == []
