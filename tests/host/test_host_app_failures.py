"""An App view that cannot be opened says so, in real Chromium: in the view's place the page
names the server and the reason the host got (as text, never as markup), and a later open
that works (the server is back) puts the view there instead.  The page's ``apps/open``
route answers a failed read with a JSON error and a status that fits the failure.
Screenshots go to ``test-artifacts/host/``."""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hostkit import (
    ARTIFACTS,
    SERVER_START_MS,
    SERVERS,
    inner_view,
    page_post,
    playwright,
    say,
    web_host,
)

playwright()  # skips the module without Playwright or Chromium

VIEW = "ui://probe/view.html"
#: What the "broken" server answers when its view is read: markup the page must show as text.
REFUSAL = "<img src=x onerror=document.title='owned'> the view is being rebuilt"


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("app-failures")


def probe(folder: Path, **env: str) -> dict[str, Any]:
    return {
        "command": sys.executable,
        "args": [str(SERVERS / "probe.py")],
        "env": {"HOST_TEST_DIR": str(folder), **env},
        "tools": {"show_probe": "allow", "note": "allow"},
    }


@pytest.fixture(scope="module")
def host_url(folder: Path) -> Iterator[str]:
    config = {
        "mcpServers": {
            "probe": probe(folder),
            "broken": probe(folder, PROBE_VIEW_ERROR=REFUSAL),
            # never comes up: its gate file is never made
            "late": probe(folder, PROBE_GATE=str(folder / "never")),
            "mute": {**probe(folder, PROBE_VIEW_HANG="1"), "timeout": 5},
        },
        "permissions": {"default": "ask"},
        "model": {
            "provider": "scripted",
            "script": [
                {"tool_calls": [{"name": "broken__show_probe", "arguments": {"topic": "tea"}}]},
                {"text": "The broken one."},
                {"tool_calls": [{"name": "probe__show_probe", "arguments": {"topic": "coffee"}}]},
                {"text": "The working one."},
            ],
        },
    }
    with web_host(config, folder) as url:
        yield url


@pytest.fixture(scope="module")
def page(probe_page: Any) -> Any:
    """The page, once the servers that answer (if badly) are up too."""
    for server in ("broken", "mute"):
        ready = f"li.server[data-server='{server}'] .state-ready"
        probe_page.wait_for_selector(ready, timeout=SERVER_START_MS)
    return probe_page


def open_app(host_url: str, body: dict[str, Any]) -> Any:
    return page_post(host_url, "/api/apps/open", body)


def chat_entry(server: str) -> str:
    """The chat's place for the view of ``server``'s ``show_probe`` call."""
    return f"[data-testid=chat] .msg.app[data-tool='{server}:show_probe']"


def test_open_app_answers_each_failure_with_a_json_error_and_a_fitting_status(
    page: Any, host_url: str
) -> None:
    refused = open_app(host_url, {"server": "broken", "uri": VIEW})
    assert refused.status_code == 502  # the server answered with an error
    assert refused.json() == {
        "error": REFUSAL,
        "code": -32603,
        "server": "broken",
        "uri": VIEW,
    }
    unknown = open_app(host_url, {"server": "nowhere", "uri": VIEW})
    assert unknown.status_code == 404
    assert unknown.json()["error"] == "no server named 'nowhere'"
    connecting = open_app(host_url, {"server": "late", "uri": VIEW})
    assert connecting.status_code == 503
    # (connecting, or once its start timed out, restarting: either way not up)
    assert re.match(r"server 'late' is (connecting|restarting)\b", connecting.json()["error"])
    assert connecting.json()["server"] == "late"
    plain = open_app(host_url, {"server": "probe", "uri": "ui://probe/plain.txt"})
    assert plain.status_code == 502  # the server's document is not a view
    assert plain.json()["error"] == (
        "ui://probe/plain.txt: mimeType 'text/plain' is not 'text/html;profile=mcp-app'"
    )
    missing = open_app(host_url, {"server": "probe", "uri": "ui://probe/gone.html"})
    assert missing.status_code == 502
    assert missing.json() == {  # the server's own error, passed on with its code
        "error": "Resource not found: ui://probe/gone.html",
        "code": -32602,
        "server": "probe",
        "uri": "ui://probe/gone.html",
    }
    hung = open_app(host_url, {"server": "mute", "uri": VIEW})
    assert hung.status_code == 504
    assert "resources/read got no answer" in hung.json()["error"]
    for body in (
        {"uri": VIEW},
        {"server": "probe"},
        {"server": "probe", "uri": 7},
        {"server": "probe", "uri": "note://probe/today"},
    ):
        bad = open_app(host_url, body)
        assert bad.status_code == 400, body
        assert bad.json()["error"] == "apps/open needs a server's name and a view's ui:// uri"
    assert open_app(host_url, {"server": "probe", "uri": VIEW}).status_code == 200


def test_every_page_route_answers_a_missing_or_absent_server_alike(
    page: Any, host_url: str
) -> None:
    # The page's other routes share the one mapping: an unknown server is 404, one not up
    # 503, a server's error 502 with its own words and code.
    def read(server: str, uri: str) -> Any:
        return page_post(host_url, "/api/resources/read", {"server": server, "uri": uri})

    unknown = read("nowhere", "note://x")
    assert (unknown.status_code, unknown.json()) == (404, {"error": "no server named 'nowhere'"})
    assert read("late", "note://x").status_code == 503
    missing = read("probe", "ui://probe/gone.html")
    assert missing.status_code == 502
    assert missing.json() == {"error": "Resource not found: ui://probe/gone.html", "code": -32602}


def test_a_view_whose_read_fails_shows_the_server_and_the_reason_in_its_place(
    page: Any,
) -> None:
    say(page, "Show me the broken one.")
    page.wait_for_selector(".msg.assistant:has-text('The broken one.')")
    entry = page.wait_for_selector(f"{chat_entry('broken')}:has(.error)")
    said = entry.inner_text()
    assert "broken" in said  # the server
    assert REFUSAL in said  # the reason, word for word: text, not markup
    assert entry.query_selector("img") is None
    assert page.evaluate("document.title") == "mcpkit host"
    assert entry.query_selector("[data-testid=app-view]") is None
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    entry.screenshot(path=str(ARTIFACTS / "app-view-failed.png"))


def test_a_view_that_cannot_be_opened_again_says_so_until_its_server_is_back(
    page: Any, folder: Path
) -> None:
    """The view's frame loads again while its server is gone: the page cannot open it
    again, says why in its place, and opens it there once the server is connected again."""
    say(page, "Show me the working one.")
    entry = chat_entry("probe")
    proxy_el = page.wait_for_selector(f"{entry} [data-testid=app-view]")
    inner_view(proxy_el).wait_for_selector("#result:has-text('probe ready: coffee')")

    page.click("li.server[data-server='probe'] button.danger")  # Remove
    page.wait_for_selector("li.server[data-server='probe']", state="detached")
    proxy_el.content_frame().evaluate("() => location.reload()")
    failed = page.wait_for_selector(f"{entry} .error")
    said = failed.inner_text()
    assert "probe" in said and "no server named 'probe'" in said
    assert page.query_selector(f"{entry} [data-testid=app-view]") is None

    page.click("#add-server summary")
    page.fill("#srv-name", "probe")
    page.fill("#srv-target", f"{sys.executable} {SERVERS / 'probe.py'}")
    page.fill("#srv-env", f"HOST_TEST_DIR={folder}")
    page.click("#srv-connect")
    back = inner_view(page.wait_for_selector(f"{entry} [data-testid=app-view]"))
    back.wait_for_selector("#result:has-text('probe ready: coffee')")
    assert back.inner_text("#input") == "topic: coffee"  # told its input and result again
    assert page.query_selector(f"{entry} .error") is None
