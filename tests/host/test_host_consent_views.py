"""What an MCP App view may do, and when it appears, in real Chromium: a view shows only once
its call may run (never for a call the person denied); ``ui/open-link`` asks, showing the
address, and is audited; a custom method of the server's extension is asked and
audited like a tool call; a view declaring ``connect-src`` to this machine or a private
address gets it only after a question naming the address.  Screenshots go to
``test-artifacts/host/``."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from hostkit import ARTIFACTS, SERVERS, playwright, say, web_host

playwright()  # skips the module without Playwright or Chromium

METADATA = "http://169.254.169.254"


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("consent-views")


@pytest.fixture(scope="module")
def host_url(folder: Path) -> Iterator[str]:
    config = {
        "mcpServers": {
            "probe": {
                "command": sys.executable,
                "args": [str(SERVERS / "probe.py")],
                "env": {"HOST_TEST_DIR": str(folder), "PROBE_CONNECT": METADATA},
                "tools": {"note": "allow"},
            }
        },
        "permissions": {"default": "ask"},
        "model": {
            "provider": "scripted",
            "script": [
                {"tool_calls": [{"name": "probe__show_probe", "arguments": {"topic": "denied"}}]},
                {"text": "It was refused."},
                {"tool_calls": [{"name": "probe__show_probe", "arguments": {"topic": "kept"}}]},
                {"text": "Here it is."},
            ],
        },
    }
    with web_host(config, folder) as url:
        yield url


@pytest.fixture(scope="module")
def page(probe_page: Any) -> Any:
    return probe_page


def audit(host_url: str) -> list[dict[str, Any]]:
    base, token = host_url.split("/?token=")
    entries: list[dict[str, Any]] = httpx.get(
        f"{base}/api/audit", headers={"Authorization": f"Bearer {token}"}
    ).json()
    return entries


def consent(page: Any) -> Any:
    return page.wait_for_selector(".dialog[data-kind='consent']")


def test_a_view_appears_only_after_consent_and_never_for_a_denied_call(page: Any) -> None:
    chat_views = "[data-testid=chat] [data-testid=app-view]"
    say(page, "Show the probe.")
    assert "wants to run show_probe" in consent(page).inner_text()
    page.wait_for_selector(".msg.tool[data-call]")  # the call is shown...
    assert page.query_selector(chat_views) is None  # ...its view is not
    page.click("#deny")
    page.wait_for_selector(".msg.assistant:has-text('It was refused.')")
    assert page.query_selector(chat_views) is None

    say(page, "Again.")
    consent(page)
    assert page.query_selector(chat_views) is None
    page.click("#approve")
    page.wait_for_selector(".dialog[data-kind='consent']:has-text('wants to connect to')")
    page.click("#approve")  # the view's connect-src (the last test asks about it)
    proxy_el = page.wait_for_selector(chat_views)
    view = proxy_el.content_frame().wait_for_selector("iframe").content_frame()
    view.wait_for_selector("#result:has-text('probe ready: kept')")
    # under its own call, with a title bar naming the server and tool
    entry = page.wait_for_selector(".msg.app[data-tool='probe:show_probe']")
    before = entry.evaluate("e => e.previousElementSibling.dataset.call || ''")
    assert before, "the view is not right under its call"
    title = entry.query_selector(".app-title").inner_text()
    assert "show_probe" in title and "probe" in title and "127.0.0.1" not in title


def test_open_link_asks_with_the_address_and_is_audited(page: Any, host_url: str) -> None:
    proxy_el = page.wait_for_selector("[data-testid=chat] [data-testid=app-view]")
    view = proxy_el.content_frame().wait_for_selector("iframe").content_frame()
    url = "http://127.0.0.1:9/probe-link?topic=kept"
    view.click("#link")
    dialog = consent(page)
    assert "The probe app wants to open a link" in dialog.inner_text()
    assert page.inner_text("[data-testid=consent-subject]") == url
    pages_before = len(page.context.pages)
    page.click("#deny")
    view.wait_for_selector("#status:has-text('refused')")
    assert len(page.context.pages) == pages_before  # nothing opened
    view.click("#link")
    consent(page)
    with page.context.expect_page() as opened:
        page.click("#approve")
    view.wait_for_selector("#status:has-text('link opened')")
    opened.value.close()
    links = [e for e in audit(host_url) if e["kind"] == "open-link"]
    assert [(e["decision"], e["arguments"]["url"]) for e in links] == [
        ("declined", url),
        ("approved", url),
    ]


def test_a_view_calls_its_servers_extension_method_only_after_consent(
    page: Any, host_url: str
) -> None:
    """A custom method of an extension the server declares goes through the host like a
    tool call (asked, audited); a method of an undeclared one is -32601 and reaches no
    server."""
    proxy_el = page.wait_for_selector("[data-testid=chat] [data-testid=app-view]")
    view = proxy_el.content_frame().wait_for_selector("iframe").content_frame()
    view.click("#ext")
    dialog = consent(page)
    assert "The probe app wants to run com.example/probe/echo" in dialog.inner_text()
    assert "echo kept" in dialog.inner_text()  # the params are shown
    page.click("#deny")
    view.wait_for_selector("#status:has-text('refused')")
    view.click("#ext")
    consent(page)
    page.click("#approve")
    view.wait_for_selector("#status:has-text('ext: echo kept')")
    view.click("#ext-other")
    view.wait_for_selector("#status:has-text('code -32601')")
    calls = [e for e in audit(host_url) if e["kind"] == "extension"]
    assert [(e["decision"], e["name"], e["arguments"]) for e in calls] == [
        ("declined", "probe:com.example/probe/echo", {"text": "echo kept"}),
        ("approved", "probe:com.example/probe/echo", {"text": "echo kept"}),
    ]


def test_connect_src_to_a_private_address_only_after_consent_naming_it(
    page: Any, host_url: str
) -> None:
    """The probe's view declares ``connectDomains: [169.254.169.254]`` (the cloud metadata
    address); each opening asks, naming it; refused, the view runs without it."""

    def open_view() -> tuple[str, Any]:
        page.click("[data-testid='tool:probe:show_probe']")
        page.fill("#f-topic", "metadata")
        page.click("[data-testid=call-tool]")
        dialog = consent(page)
        text = dialog.inner_text()
        return text, dialog

    text, _ = open_view()
    assert f"The probe app wants to connect to {METADATA}" in text
    page.screenshot(path=str(ARTIFACTS / "consent-connect-src.png"))
    page.click("#deny")
    view = (
        page.wait_for_selector("#detail [data-testid=app-view]")
        .content_frame()
        .wait_for_selector("iframe")
        .content_frame()
    )
    view.wait_for_selector("#caps:has-text('sandbox')")
    assert json.loads(view.inner_text("#caps"))["sandbox"]["csp"] == {}

    open_view()
    page.click("#approve")
    page.wait_for_selector("#detail [data-testid=app-view]", state="detached")
    view = (
        page.wait_for_selector("#detail [data-testid=app-view]")
        .content_frame()
        .wait_for_selector("iframe")
        .content_frame()
    )
    view.wait_for_selector("#caps:has-text('sandbox')")
    granted = json.loads(view.inner_text("#caps"))["sandbox"]["csp"]
    assert granted == {"connectDomains": [METADATA]}
    decisions = [e["decision"] for e in audit(host_url) if e["kind"] == "app-connect"]
    assert decisions == ["approved", "declined", "approved"]  # the chat's view, then these
