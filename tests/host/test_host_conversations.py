"""Conversations kept, in real Chromium: the chat is the page's main column, each call a
card; a reload draws the same transcript again (cards, the model's Markdown, App views
re-initialized with their input and result) and brings back the question still waiting;
conversations are listed, renamed, deleted, and outlive the host process (SQLite in
``$MCPKIT_HOST_DATA``).  Screenshots go to ``test-artifacts/host/``."""

from __future__ import annotations

import signal
import sqlite3
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hostkit import (
    ARTIFACTS,
    PAGE_TIMEOUT_MS,
    SERVER_START_MS,
    SERVERS,
    playwright,
    say,
    web_host,
    web_host_process,
)

from support.servers import kill_group

playwright()  # skips the module without Playwright or Chromium


def config(folder: Path) -> dict[str, Any]:
    return {
        "mcpServers": {
            "probe": {
                "command": sys.executable,
                "args": [str(SERVERS / "probe.py")],
                "env": {"HOST_TEST_DIR": str(folder)},
                "tools": {"show_probe": "allow", "note": "allow"},
            }
        },
        "permissions": {"default": "ask"},
        "model": {
            "provider": "scripted",
            "script": [
                {
                    "text": "Let me look.",
                    "tool_calls": [{"name": "probe__show_probe", "arguments": {"topic": "tea"}}],
                },
                {"text": "Here is **the probe**, and `code`."},
                {
                    "tool_calls": [
                        {"name": "probe__wait_probe", "arguments": {"topic": "slow", "steps": 4}}
                    ]
                },
                {"text": "Waited."},
            ],
        },
    }


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("conversations")


@pytest.fixture(scope="module")
def host_url(folder: Path) -> Iterator[str]:
    with web_host(config(folder), folder) as url:
        yield url


@pytest.fixture(scope="module")
def page(probe_page: Any) -> Any:
    return probe_page


#: An App view in the chat (the sandbox proxy's frame, holding the view's own).
KEPT_VIEW = "[data-testid=chat] [data-testid=app-view]"


def view_of(page: Any, tool: str = "show_probe") -> Any:
    """The view of the probe's ``tool`` call in the chat, found under its own call: views
    are drawn as their opens answer, not in the transcript's order."""
    entry = f"[data-testid=chat] .msg.app[data-tool='probe:{tool}']"
    proxy_el = page.wait_for_selector(f"{entry} [data-testid=app-view]")
    return proxy_el.content_frame().wait_for_selector("iframe").content_frame()


def test_the_chat_is_the_main_column_with_a_card_per_call(page: Any) -> None:
    chat, side = page.query_selector("#chat"), page.query_selector("#side")
    assert chat.bounding_box()["width"] > 2 * side.bounding_box()["width"]
    say(page, "Show me the probe.")
    view = view_of(page)
    view.wait_for_selector("#result:has-text('probe ready: tea')")
    card = page.wait_for_selector(
        "[data-testid=tool-card]:has([data-testid=call-status]:text('done'))"
    )
    head = card.inner_text()
    assert "show_probe" in head and "probe" in head and "allowed by policy" in head
    assert card.query_selector("[data-testid=call-duration]").inner_text().endswith(("ms", "s"))
    assert card.query_selector(".card-result").inner_text().strip() == "probe ready: tea"
    # the view sits under its card, at the chat's width
    entry = page.query_selector(".msg.app[data-tool='probe:show_probe']")
    assert entry.evaluate("e => e.previousElementSibling.dataset.testid") == "tool-card"
    assert entry.bounding_box()["width"] > 0.9 * card.bounding_box()["width"]
    reply = page.wait_for_selector(".msg.assistant:has-text('Here is')")
    assert reply.inner_html().count("<strong>the probe</strong>") == 1
    assert reply.query_selector("code").inner_text() == "code"
    page.screenshot(path=str(ARTIFACTS / "chat-with-cards.png"))
    view.evaluate("() => 0")  # the view is alive
    entry.screenshot(path=str(ARTIFACTS / "app-inline.png"))


def test_a_view_whose_frame_loads_again_is_shown_again(page: Any) -> None:
    """The sandbox proxy's frame loads again (the browser reloads it): the page hands it a
    fresh view URL (each loads once) and initializes the view again with its input and
    result."""
    proxy_el = page.wait_for_selector(
        "[data-testid=chat] .msg.app[data-tool='probe:show_probe'] [data-testid=app-view]"
    )
    proxy_el.content_frame().evaluate("() => location.reload()")
    view = view_of(page)
    view.wait_for_selector("#result:has-text('probe ready: tea')")
    assert view.inner_text("#input") == "topic: tea"


def test_a_reload_restores_the_transcript_the_views_and_the_pending_question(
    page: Any,
) -> None:
    say(page, "Wait a little.")
    page.wait_for_selector(".dialog[data-kind='consent']:has-text('wait_probe')")
    page.reload()
    page.wait_for_selector(".msg.user:has-text('Show me the probe.')")
    view = view_of(page)  # drawn again, and told its input and result again
    view.wait_for_selector("#result:has-text('probe ready: tea')")
    assert view.inner_text("#input") == "topic: tea"
    assert page.query_selector(".msg.assistant strong").inner_text() == "the probe"
    cards = page.query_selector_all("[data-testid=tool-card]")
    assert [c.query_selector("[data-testid=call-status]").inner_text() for c in cards] == [
        "done",
        "waiting",
    ]
    page.wait_for_selector(".dialog[data-kind='consent']:has-text('wait_probe')")  # still asked
    page.screenshot(path=str(ARTIFACTS / "reload-restores.png"))
    page.click("#approve")
    waited = view_of(page, "wait_probe")
    waited.wait_for_selector("#result:has-text('probe waited: slow')")
    page.wait_for_selector(".msg.assistant:has-text('Waited.')")
    status = cards[1].query_selector("[data-testid=call-status]")
    assert status.inner_text() == "done"


def test_conversations_are_listed_renamed_deleted_and_kept(
    page: Any, browser: Any, folder: Path
) -> None:
    first = page.wait_for_selector("li.conversation.sel")
    assert first.query_selector(".conv-title").inner_text() == "Show me the probe."
    # Locators, not element handles: the list is redrawn when a chat answer lands.
    page.locator("li.conversation.sel button.rename").click()
    page.fill("li.conversation .rename-input", "Probe day")
    page.press("li.conversation .rename-input", "Enter")
    page.wait_for_selector("li.conversation.sel:has-text('Probe day')")
    assert page.inner_text("#chat-title") == "Probe day"

    page.click("#new-conversation")
    page.wait_for_selector("li.conversation >> nth=1")
    page.wait_for_function("!document.querySelector('[data-testid=chat] .msg')")
    page.click("li.conversation:has-text('Probe day') .conv-title")
    page.wait_for_selector(".msg.user:has-text('Show me the probe.')")

    empty = page.locator("li.conversation:has-text('New conversation') button.delete")
    empty.click()
    empty.click()  # "Delete?": the second click deletes
    page.wait_for_selector("li.conversation:has-text('New conversation')", state="detached")
    assert len(page.query_selector_all("li.conversation")) == 1

    database = folder / "host-data" / "conversations.db"
    assert database.stat().st_mode & 0o777 == 0o600
    assert database.parent.stat().st_mode & 0o777 == 0o700
    with sqlite3.connect(database) as db:
        assert db.execute("SELECT title FROM conversations").fetchall() == [("Probe day",)]


def test_conversations_outlive_the_host(browser: Any, folder: Path, host_url: str) -> None:
    """Another host process on the same data directory shows the kept conversation, each
    kept view under its own call and told its own result, whichever is drawn first: the
    first view the host opens is answered to the page only once the other one is drawn."""
    other = folder / "second-run"
    other.mkdir()
    env = {"MCPKIT_HOST_DATA": str(folder / "host-data")}
    with web_host(config(other), other, env=env) as url:
        page = browser.new_page()
        page.set_default_timeout(PAGE_TIMEOUT_MS)
        held: list[Any] = []

        def answer_the_first_view_late(route: Any) -> None:
            if held:  # one open is held (or on its way): the others go through
                route.continue_()
                return
            held.append(route)
            answer = route.fetch()
            if answer.status != 200:  # the server is still connecting: no view yet
                held.clear()
                route.fulfill(response=answer)
                return
            try:
                page.wait_for_selector(KEPT_VIEW, state="attached", timeout=SERVER_START_MS)
            finally:
                route.fulfill(response=answer)

        page.route("**/api/apps/open", answer_the_first_view_late)
        page.goto(url)
        page.wait_for_selector("li.conversation.sel:has-text('Probe day')")
        page.wait_for_selector(".msg.assistant:has-text('Waited.')")
        # The kept views are drawn once this host's server process is up (it starts first).
        page.wait_for_selector(KEPT_VIEW, timeout=SERVER_START_MS)
        view_of(page).wait_for_selector("#result:has-text('probe ready: tea')")
        waited = view_of(page, "wait_probe")
        waited.wait_for_selector("#result:has-text('probe waited: slow')")
        page.close()


def test_a_call_cut_off_by_a_host_restart_is_shown_interrupted(
    browser: Any, tmp_path: Path
) -> None:
    """The host dies (SIGKILL) while the model's call runs; the next host's page shows the
    kept call as interrupted, not waiting, and its view is told the call was cancelled."""
    slow = config(tmp_path)
    slow["mcpServers"]["probe"]["tools"]["wait_probe"] = "allow"
    slow["model"]["script"] = [
        {"tool_calls": [{"name": "probe__wait_probe", "arguments": {"topic": "cut"}}]}
    ]
    with web_host_process(slow, tmp_path) as (process, url):
        page = browser.new_page()
        page.set_default_timeout(PAGE_TIMEOUT_MS)
        page.goto(url)
        page.wait_for_selector("[data-testid='tool:probe:wait_probe']")
        say(page, "Wait for ever.")
        page.wait_for_selector("[data-testid=call-status]:text('running')")
        kill_group(process, signal.SIGKILL)
        page.close()
    again = tmp_path / "again"
    again.mkdir()
    env = {"MCPKIT_HOST_DATA": str(tmp_path / "host-data")}
    with web_host(config(again), again, env=env) as url:
        page = browser.new_page()
        page.set_default_timeout(PAGE_TIMEOUT_MS)
        page.goto(url)
        card = page.wait_for_selector("[data-testid=tool-card]:has-text('wait_probe')")
        status = card.query_selector("[data-testid=call-status]")
        page.wait_for_function("s => s.textContent === 'interrupted'", arg=status)
        assert "the host stopped before this call ended" in card.inner_text()
        assert card.query_selector(".cancel-chat-call") is None
        page.wait_for_selector(KEPT_VIEW, timeout=SERVER_START_MS)  # as above
        view = view_of(page, "wait_probe")
        view.wait_for_selector("#result:has-text('cancelled: Interrupted: the host stopped')")
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "interrupted-call.png"))
        page.close()


def test_a_kept_view_drawn_before_its_server_is_up_is_drawn_when_it_is(
    browser: Any, tmp_path: Path
) -> None:
    """A second host's page draws a kept App view while that host's server is still
    connecting: the view is drawn once the server is up.  The race made certain: the page's
    first try to open the view fails (the server is held back by ``PROBE_GATE``), and that
    answer reaches the page only after the page has shown the server ready."""
    with web_host(config(tmp_path), tmp_path) as url:
        page = browser.new_page()
        page.set_default_timeout(PAGE_TIMEOUT_MS)
        page.goto(url)
        page.wait_for_selector("[data-testid='tool:probe:show_probe']", timeout=SERVER_START_MS)
        say(page, "Show me the probe.")
        view_of(page).wait_for_selector("#result:has-text('probe ready: tea')")
        page.close()
    later = tmp_path / "later"
    later.mkdir()
    gate = later / "gate"
    gated = config(later)
    gated["mcpServers"]["probe"]["env"]["PROBE_GATE"] = str(gate)
    env = {"MCPKIT_HOST_DATA": str(tmp_path / "host-data")}
    with web_host(gated, later, env=env) as url:
        page = browser.new_page()
        page.set_default_timeout(PAGE_TIMEOUT_MS)
        first_answers: list[tuple[int, str]] = []

        def answer_the_first_open_late(route: Any) -> None:
            if first_answers:
                route.continue_()
                return
            answer = route.fetch()  # the host's answer while its server is connecting
            first_answers.append((answer.status, answer.text()))
            try:  # the server comes up once the page listens to the host's events
                page.wait_for_selector("#conn-pill:text('live')")
                gate.touch()
                page.wait_for_selector(
                    "li.server[data-server='probe'] .state-ready", timeout=SERVER_START_MS
                )
            finally:
                route.fulfill(response=answer)

        page.route("**/api/apps/open", answer_the_first_open_late)
        page.goto(url)
        page.wait_for_selector(".msg.assistant:has-text('Here is')")
        view_of(page).wait_for_selector("#result:has-text('probe ready: tea')")
        assert first_answers[0][0] == 503 and "is connecting" in first_answers[0][1]
        page.close()
