"""MCP App views on their own origin, with their CSP as a response header: hostile documents
in real Chromium (Debian's ``/usr/bin/chromium`` through Playwright) try to reach a local
HTTP listener their policy does not allow, and the listener must receive nothing.

Each test opens one hostile view the way a person would (the Tools tab), waits until its
script ran (or it navigated away), then opens the *control* view, whose CSP does allow the
listener.  The control's request arriving is the barrier: by then every hostile attempt
had its chance, and the listener demonstrably works.  Screenshots go to /tmp/host-shots/.
"""

from __future__ import annotations

import hashlib
import http.server
import sys
import threading
from collections.abc import Iterator
from typing import Any, cast

import httpx
import pytest
from hostkit import PAGE_TIMEOUT_MS, SERVER_START_MS, SERVERS, SHOTS, playwright, web_host

playwright_api = playwright()


class Listener:
    """A plain HTTP server on 127.0.0.1 that records every request it gets."""

    def __init__(self) -> None:
        self.paths: list[str] = []
        self.arrived = threading.Condition()
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def _any(self) -> None:
                with outer.arrived:
                    outer.paths.append(self.path)
                    outer.arrived.notify_all()
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            do_GET = do_POST = do_HEAD = _any

            def log_message(self, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.origin = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def wait_for(self, path: str, timeout: float = 15) -> None:
        with self.arrived:
            if not self.arrived.wait_for(lambda: path in self.paths, timeout):
                raise AssertionError(f"{path} never arrived; got {self.paths}")

    def take(self) -> list[str]:
        with self.arrived:
            taken, self.paths[:] = list(self.paths), []
            return taken


@pytest.fixture(scope="module")
def listener() -> Iterator[Listener]:
    found = Listener()
    yield found
    found.server.shutdown()


@pytest.fixture(scope="module")
def host_url(tmp_path_factory: pytest.TempPathFactory, listener: Listener) -> Iterator[str]:
    folder = tmp_path_factory.mktemp("sandbox-host")
    config = {
        "mcpServers": {
            "hostile": {
                "command": sys.executable,
                "args": [str(SERVERS / "hostile.py")],
                "env": {"LISTENER": listener.origin},
                "permission": "allow",
            }
        }
    }
    with web_host(config, folder) as url:
        yield url


@pytest.fixture
def page(browser: Any, host_url: str, listener: Listener) -> Iterator[Any]:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page = browser.new_page()
    page.set_default_timeout(PAGE_TIMEOUT_MS)
    page.goto(host_url)
    # The first page of a module waits for its server's process to start and list its
    # tools: on a loaded machine that takes longer than a page action.
    page.wait_for_selector("[data-testid='tool:hostile:show_control']", timeout=SERVER_START_MS)
    listener.take()
    yield page
    page.close()


def open_view(page: Any, name: str) -> tuple[Any, Any]:
    """Call ``show_<name>`` in the Tools tab; returns (proxy element, the view's frame)."""
    page.click(f"[data-testid='tool:hostile:show_{name}']")
    page.click("[data-testid=call-tool]")
    if name == "control":  # its connect-src is this machine: the person grants it by name
        dialog = page.wait_for_selector(".dialog[data-kind='consent']")
        assert "wants to connect to http://127.0.0.1:" in dialog.inner_text()
        page.click("#approve")
    proxy_el = page.wait_for_selector(f"[data-testid=app-view][data-uri$='/{name}.html']")
    inner = proxy_el.content_frame().wait_for_selector("iframe").content_frame()
    return proxy_el, inner


def wait_ran(page: Any, frame: Any) -> str:
    """Until the view's script ran, or the frame left the view (a navigation, blocked or not)."""
    for _ in range(300):
        if "/view/" not in frame.url:
            return cast(str, frame.url)
        try:
            if frame.evaluate("document.documentElement.dataset.ran") == "1":
                return "ran"
        except playwright_api.Error:
            pass  # mid-navigation
        page.wait_for_timeout(50)
    raise AssertionError(f"the view never ran ({frame.url})")


HOSTILE = ["comment", "early", "base", "refresh", "data_iframe", "navigate", "domain"]


@pytest.mark.parametrize("name", HOSTILE)
def test_a_hostile_view_reaches_nothing(page: Any, listener: Listener, name: str) -> None:
    pages_before = len(page.context.pages)
    url_before = page.url
    _, frame = open_view(page, name)
    outcome = wait_ran(page, frame)
    if name not in ("refresh", "navigate"):
        assert outcome == "ran", outcome  # the attempts were really made
    page.screenshot(path=str(SHOTS / f"hostile-{name}.png"))
    open_view(page, "control")
    listener.wait_for("/control")
    assert listener.take() == ["/control"]
    assert page.url == url_before  # window.top was not navigated
    assert len(page.context.pages) == pages_before  # no popup


def test_a_dedicated_domain_is_a_real_origin_of_its_own(page: Any) -> None:
    proxy_el, frame = open_view(page, "domain")
    assert wait_ran(page, frame) == "ran"
    sandbox_port = proxy_el.get_attribute("src").split(":")[2].split("/")[0]
    label = hashlib.sha256(b"hostile\0views.example").hexdigest()[:16]
    expected = f"http://{label}.localhost:{sandbox_port}"
    assert frame.evaluate("document.documentElement.dataset.origin") == expected
    inner_el = proxy_el.content_frame().query_selector("iframe")
    assert inner_el.get_attribute("sandbox") == "allow-scripts allow-same-origin"
    _, control = open_view(page, "control")
    assert control.evaluate("origin") == "null"  # no domain: an opaque origin


def test_the_sandbox_server_serves_each_view_once_with_its_csp_header(host_url: str) -> None:
    base, token = host_url.split("/?")[0], host_url.split("token=")[1]
    auth = {"Authorization": f"Bearer {token}"}
    opened = httpx.post(
        base + "/api/apps/open",
        headers=auth,
        json={"server": "hostile", "uri": "ui://hostile/comment.html"},
    ).json()
    src = opened["view"]["src"]
    assert src.startswith(opened["sandboxOrigin"] + "/view/")
    assert opened["sandboxOrigin"] != base
    wrong = httpx.get(src, headers={"Host": "evil.example"})
    assert wrong.status_code == 403
    served = httpx.get(src)
    assert served.status_code == 200
    assert served.text.startswith("<!-- <head> --><html><head><link")  # not edited
    csp = served.headers["content-security-policy"]
    assert "connect-src 'none'" in csp and "default-src 'none'" in csp
    assert "sandbox allow-scripts" in csp and "frame-ancestors " + base in csp
    assert httpx.get(src).status_code == 404  # one load only
    proxy = httpx.get(opened["proxy"])
    assert proxy.status_code == 200
    assert f"frame-ancestors {base}" in proxy.headers["content-security-policy"]
    foreign = opened["proxy"].split("?")[0] + "?origin=http://evil.example"
    assert httpx.get(foreign).status_code == 403
