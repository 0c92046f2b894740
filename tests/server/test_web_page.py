"""The web chat page at ``/`` in a real browser: Playwright driving Debian's Chromium.

.ci/run installs ``chromium`` with apt-get (never ``playwright install``). The
screenshot lands in ``$AWAKEN_TEST_ARTIFACTS`` (default ``test-artifacts/``).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from srv_util import ALICE, Served

CHROMIUM = os.environ.get("AWAKEN_TEST_CHROMIUM", "/usr/bin/chromium")


def _artifacts() -> Path:
    root = Path(os.environ.get("AWAKEN_TEST_ARTIFACTS", "test-artifacts"))
    root.mkdir(parents=True, exist_ok=True)
    return root


@pytest.fixture
def page(server: Served):  # type: ignore[no-untyped-def]
    if shutil.which(CHROMIUM) is None:
        if os.environ.get("CI"):
            pytest.fail(f"{CHROMIUM} missing: .ci/run must apt-get install chromium")
        pytest.skip(f"no browser at {CHROMIUM}: apt-get install -y chromium")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"], headless=True)
        try:
            yield browser.new_page()
        finally:
            browser.close()


def test_chat_page_streams_text_and_approves_a_call(page, server: Served) -> None:  # type: ignore[no-untyped-def]
    from playwright.sync_api import expect

    page.goto(server.url + "/")
    page.fill("#key", ALICE)
    page.dispatch_event("#key", "change")
    expect(page.locator('#agent option[value="assistant"]')).to_have_count(1)
    page.select_option("#agent", "assistant")
    # Record every length the streamed text goes through.
    page.evaluate(
        """() => { window.lengths = new Set();
        new MutationObserver(() => { for (const t of document.querySelectorAll('.assistant .text'))
          window.lengths.add(t.textContent.length); })
        .observe(document.getElementById('log'),
                 {subtree: true, childList: true, characterData: true}); }"""
    )
    page.fill("#input", "slow please")
    page.click("#submit")
    expect(page.locator(".assistant .text").last).to_contain_text("word79")
    assert page.evaluate("window.lengths.size") > 2, "the text streamed in several pieces"

    page.fill("#input", "what is the weather")
    page.click("#submit")
    expect(page.locator('.tool[data-tool="get_weather"] .output')).to_have_text("→ sunny in Paris")

    page.fill("#input", "delete the file")
    page.click("#submit")
    asked = page.locator('.tool[data-tool="delete_file"]').last
    expect(asked).to_have_attribute("data-state", "approval-requested")
    asked.locator("button.approve").click()
    done = page.locator('.tool[data-tool="delete_file"]').last
    expect(done).to_have_attribute("data-state", "output-available")
    expect(done.locator(".output")).to_have_text("→ deleted /tmp/x.txt")
    expect(page.locator(".assistant").last).to_contain_text("Result: deleted /tmp/x.txt. All done.")

    page.fill("#input", "think first")
    page.click("#submit")
    reasoning = page.locator("details.reasoning").last
    expect(reasoning).to_contain_text("Pondering")
    assert reasoning.get_attribute("open") is None, "reasoning is collapsed"
    shot = _artifacts() / "awaken-server-chat.png"
    page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 10_000
