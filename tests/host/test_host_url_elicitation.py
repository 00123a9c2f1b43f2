"""URL elicitation in the web host: a server sends the person to a page (2025-11-25
``elicitation/create`` in URL mode); the page shows the link with Open and Decline, then a
card that waits until the server reports the page done
(``notifications/elicitation/complete``), and the audit trail records both steps.  The
server is a real process; the sign-in page is a real socket the browser opens."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from hostkit import PAGE_TIMEOUT_MS, SERVER_START_MS, SERVERS, web_host
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse
from starlette.routing import Route

from support.servers import ThreadServer


def sign_in_page(folder: Path) -> Starlette:
    """The page a server sends the person to: opening it leaves ``visited-<id>``."""

    async def connect(request: Request) -> HTMLResponse:
        (folder / f"visited-{request.path_params['eid']}").touch()
        return HTMLResponse("<p>Your account is connected. You can close this tab.</p>")

    return Starlette(routes=[Route("/connect/{eid}", connect)])


def test_a_url_elicitation_shows_the_link_and_waits_for_the_completion(
    browser: Any, tmp_path: Path
) -> None:
    with ThreadServer(sign_in_page(tmp_path)) as sign_in:
        config = {
            "mcpServers": {
                "connect": {
                    "command": sys.executable,
                    "args": [str(SERVERS / "connect.py")],
                    "env": {"HOST_TEST_DIR": str(tmp_path), "CONNECT_PAGE": sign_in.base},
                    "era": "legacy",
                }
            }
        }
        with web_host(config, tmp_path) as url:
            page = browser.new_page()
            page.set_default_timeout(PAGE_TIMEOUT_MS)
            page.goto(url)
            # The first wait covers the server's process starting and listing its tools.
            tool = "li.tool[data-tool='connect__connect_account']"
            page.wait_for_selector(tool, timeout=SERVER_START_MS)
            page.click(tool)
            page.click("#call-button")
            dialog = page.wait_for_selector(".dialog[data-kind='elicit_url']")
            link = dialog.query_selector("[data-testid=elicit-url]").inner_text()
            assert link.startswith(f"{sign_in.base}/connect/")
            assert [b.inner_text() for b in dialog.query_selector_all(".actions button")] == [
                "Decline",
                "Open",
            ]
            with page.context.expect_page() as opened:
                page.click("#elicit-open")
            assert opened.value.url == link  # the person's browser went to the page
            card = page.wait_for_selector("[data-testid=url-elicitation]:has-text('completed')")
            assert link in card.inner_text()
            page.wait_for_selector("#result pre.text")
            assert page.inner_text("#result pre.text") == "connected"
            page.click(".tabs button[data-tab='audit']")
            page.wait_for_selector("li.audit:has-text('completed by server')")
            page.wait_for_selector("li.audit:has-text('accept by user')")
            opened.value.close()
            page.close()
    assert len(list(tmp_path.glob("visited-*"))) == 1
