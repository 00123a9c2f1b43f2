"""MCP Apps in the conversation, in real Chromium: the scripted model calls a tool that has a
view, and the view renders inline in the chat; ``ui/message`` (after consent) and
``ui/update-model-context`` reach the model; ``ui/resource-teardown`` reaches a living view
before it is removed.  The scripted model's ``echo`` step answers with what it was sent, so
the transcript shows what reached the model.  Screenshots go to /tmp/host-shots/.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hostkit import (
    PAGE_TIMEOUT_MS,
    REPO,
    SERVER_START_MS,
    SERVERS,
    SHOTS,
    inner_view,
    playwright,
    say,
    web_host,
)

playwright()  # skips the module without Playwright or Chromium


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("chat-apps")


@pytest.fixture(scope="module")
def host_url(folder: Path) -> Iterator[str]:
    config = {
        "mcpServers": {
            "probe": {
                "command": sys.executable,
                "args": [str(SERVERS / "probe.py")],
                "env": {"HOST_TEST_DIR": str(folder)},
                "tools": {"note": "allow", "show_probe": "allow", "wait_probe": "allow"},
            }
        },
        "permissions": {"default": "ask"},
        "model": {
            "provider": "scripted",
            "script": [
                {
                    "text": "Let me show it.",
                    "tool_calls": [{"name": "probe__show_probe", "arguments": {"topic": "tea"}}],
                },
                {"text": "Here is the probe."},
                {"echo": True},
                {"tool_calls": [{"name": "probe__show_probe", "arguments": {"topic": "coffee"}}]},
                {"text": "Another probe."},
                {"tool_calls": [{"name": "probe__wait_probe", "arguments": {"topic": "slow"}}]},
                {"text": "Cancelled, fine."},
            ],
        },
    }
    with web_host(config, folder) as url:
        yield url


@pytest.fixture(scope="module")
def page(browser: Any, host_url: str) -> Iterator[Any]:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page = browser.new_page()
    page.set_default_timeout(PAGE_TIMEOUT_MS)
    page.goto(host_url)
    # The first page of a module waits for its server's process to start and list its
    # tools: on a loaded machine that takes longer than a page action.
    page.wait_for_selector("[data-testid='tool:probe:show_probe']", timeout=SERVER_START_MS)
    yield page
    page.close()


#: The scripted model's echo, once streamed to the end.
FINAL_ECHO = ".msg.assistant:not(.streaming):has-text('You said:')"


def events(folder: Path) -> list[str]:
    path = folder / "probe.events"
    return path.read_text().split() if path.exists() else []


def test_the_models_app_call_renders_in_the_chat_and_talks_back(page: Any, folder: Path) -> None:
    say(page, "Show me the probe.")
    proxy_el = page.wait_for_selector("[data-testid=chat] [data-testid=app-view]")
    view = inner_view(proxy_el)
    view.wait_for_selector("#result:has-text('probe ready: tea')")
    assert view.inner_text("#input") == "topic: tea"
    context = json.loads(view.inner_text("#context"))
    assert context["platform"] == "web" and context["timeZone"] and context["locale"]
    assert context["theme"] in ("light", "dark") and context["displayMode"] == "inline"
    assert context["toolInfo"]["tool"]["name"] == "show_probe"
    assert context["styles"]["variables"]["--color-text-primary"]
    assert context["containerDimensions"]["maxHeight"] == 2000
    caps = json.loads(view.inner_text("#caps"))
    assert caps["sandbox"] == {"csp": {}, "permissions": {}}  # nothing declared, none given
    # partials (if the view was up in time) stop at the full input, which precedes the result
    assert re.fullmatch(r"(partial,)*input,result", view.inner_text("#events"))
    page.wait_for_selector(".msg.assistant:not(.streaming):has-text('Here is the probe.')")
    # streamed word by word into one line, which the final event completes
    assert [e.inner_text() for e in page.query_selector_all(".msg.assistant")] == [
        "Let me show it.",
        "Here is the probe.",
    ]
    page.screenshot(path=str(SHOTS / "chat-01-app-inline.png"))

    view.click("#ctx")  # ui/update-model-context: kept for the next turn
    view.wait_for_selector("#status:has-text('context set')")
    view.click("#say")  # ui/message: the server's permission is ask
    dialog = page.wait_for_selector(".dialog[data-kind='consent']")
    assert "The probe app wants to add a message to the chat" in dialog.inner_text()
    assert "Tell me more about tea" in dialog.inner_text()
    page.screenshot(path=str(SHOTS / "chat-02-ui-message-consent.png"))
    page.click("#approve")
    view.wait_for_selector("#status:has-text('message sent')")
    page.wait_for_selector("[data-testid=chat] .msg.app:has-text('Tell me more about tea')")
    reply = page.wait_for_selector(FINAL_ECHO).inner_text()
    assert "The user picked blue." in reply and "Tell me more about tea" in reply
    page.screenshot(path=str(SHOTS / "chat-03-model-saw-message-and-context.png"))

    assert events(folder) == []
    page.click("[data-testid=chat] .close-app")
    page.wait_for_selector("[data-testid=chat] [data-testid=app-view]", state="detached")
    # the view called a tool while handling the teardown: it was alive when it arrived
    assert events(folder) == ["teardown"]


def test_a_declined_ui_message_never_reaches_the_chat(page: Any, folder: Path) -> None:
    say(page, "Another one.")
    page.wait_for_selector(".msg.assistant:has-text('Another probe.')")
    view = inner_view(page.wait_for_selector("[data-testid=chat] [data-testid=app-view]"))
    view.wait_for_selector("#input:has-text('topic: coffee')")
    before = page.inner_text("[data-testid=chat]")
    view.click("#say")
    page.wait_for_selector(".dialog[data-kind='consent'] #deny")
    page.click("#deny")
    view.wait_for_selector("#status:has-text('refused')")
    assert page.inner_text("[data-testid=chat]") == before


def test_replacing_a_view_in_the_tools_tab_tears_the_old_one_down(page: Any, folder: Path) -> None:
    already = events(folder).count("teardown")
    page.click("[data-testid='tool:probe:show_probe']")
    page.fill("#f-topic", "first")
    page.click("[data-testid=call-tool]")
    first_el = page.wait_for_selector("#detail [data-testid=app-view]")
    inner_view(first_el).wait_for_selector("#input:has-text('topic: first')")
    page.fill("#f-topic", "second")
    page.click("[data-testid=call-tool]")
    page.wait_for_function("el => !el.isConnected", arg=first_el)
    second = inner_view(page.wait_for_selector("#detail [data-testid=app-view]"))
    second.wait_for_selector("#input:has-text('topic: second')")
    assert events(folder).count("teardown") == already + 1
    assert len(page.query_selector_all("#detail [data-testid=app-view]")) == 1


def test_a_view_shows_from_the_start_of_the_call_and_hears_it_was_cancelled(page: Any) -> None:
    say(page, "Wait for it.")
    entry = page.wait_for_selector("[data-testid=chat] .msg.app[data-tool='probe:wait_probe']")
    view = inner_view(entry.wait_for_selector("[data-testid=app-view]"))
    view.wait_for_selector("#input:has-text('topic: slow')")  # the tool input, no result yet
    assert view.inner_text("#result") == ""
    page.emulate_media(color_scheme="dark")  # the person's theme changes
    view.wait_for_selector("#theme:has-text('theme: dark')")
    page.emulate_media(color_scheme="light")
    page.click(".msg.tool .cancel-chat-call")
    view.wait_for_selector("#result:has-text('cancelled: The user cancelled this tool call')")
    assert re.fullmatch(r"(partial,)*input,cancelled", view.inner_text("#events"))
    page.wait_for_selector(".msg.assistant:has-text('Cancelled, fine.')")
    page.screenshot(path=str(SHOTS / "chat-04-view-told-cancelled.png"))


def test_full_screen_and_app_logs(page: Any) -> None:
    page.click(".tabs button[data-tab='tools']")
    page.click("[data-testid='tool:probe:show_probe']")
    page.wait_for_selector("#detail [data-testid=app-view]", state="detached")  # torn down
    page.fill("#f-topic", "screens")
    page.click("[data-testid=call-tool]")
    proxy_el = page.wait_for_selector("#detail [data-testid=app-view]")
    view = inner_view(proxy_el)
    view.wait_for_selector("#input:has-text('topic: screens')")
    view.click("#full")
    view.wait_for_selector("#status:has-text('display mode fullscreen')")
    view.wait_for_selector("#mode:has-text('mode: fullscreen')")
    box = proxy_el.bounding_box()
    assert box["height"] > 800  # the whole 900px window, not the 240px inline frame
    page.screenshot(path=str(SHOTS / "chat-05-fullscreen.png"))
    page.click("#detail .app-title .app-full")
    view.wait_for_selector("#mode:has-text('mode: inline')")
    assert proxy_el.bounding_box()["height"] < 800
    view.click("#log")
    view.wait_for_selector("#status:has-text('logged')")
    page.click(".tabs button[data-tab='logs']")
    entry = page.wait_for_selector("li.log[data-from='app']:has-text('probe says hi')")
    assert "app · warning" in entry.inner_text()


def test_the_readme_demo_shows_the_dice_in_the_chat(browser: Any, tmp_path: Path) -> None:
    """``mcpkit host --web --config examples/host.json``, as the README runs it."""
    with web_host(REPO / "examples" / "host.json", tmp_path, cwd=REPO) as url:
        page = browser.new_page()
        page.set_default_timeout(PAGE_TIMEOUT_MS)
        page.goto(url)
        page.wait_for_selector("[data-testid='tool:dice:roll_dice']")
        say(page, "Roll three dice.")
        page.wait_for_selector(".dialog[data-kind='consent'] #approve")
        page.click("#approve")
        view = inner_view(page.wait_for_selector("[data-testid=chat] [data-testid=app-view]"))
        view.wait_for_selector("#total:has-text('Total:')")
        assert len(view.query_selector_all(".die")) == 3
        total = view.inner_text("#total").split()[-1]
        page.wait_for_selector(".msg.assistant:has-text('Rolled.')")
        page.screenshot(path=str(SHOTS / "demo-01-dice-in-chat.png"))
        view.click("#ask")  # ui/message; the dice server's permission is ask
        page.wait_for_selector(".dialog[data-kind='consent'] #approve")
        page.click("#approve")
        reply = page.wait_for_selector(FINAL_ECHO).inner_text()
        # the view's ui/update-model-context and its ui/message both reached the model
        assert f"(total {total})" in reply and f"I rolled a total of {total}" in reply
        page.screenshot(path=str(SHOTS / "demo-02-dice-asked-the-model.png"))
        page.close()
